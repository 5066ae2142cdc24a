// Progress reports on stderr (see trtrace/progress.h).
#include "trtrace/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace trtrace {

std::string humanBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) { b /= 1024; ++u; }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", b, units[u]);
  return buf;
}

Progress::Progress(std::string label, uint64_t total, Unit unit) : label_(std::move(label)), total_(total), unit_(unit) {
  const char* v = std::getenv("TRTRACE_PROGRESS");
  tty_ = ::isatty(STDERR_FILENO) == 1;
  enabled_ = v && *v ? std::atoi(v) != 0 : tty_;
  if (v && *v) tty_ = false;  // asked for explicitly: plain lines, e.g. into a log
  if (const char* ms = std::getenv("TRTRACE_PROGRESS_INTERVAL_MS"); ms && *ms)
    interval_ = std::chrono::milliseconds(std::max(0L, std::atol(ms)));
  start_ = std::chrono::steady_clock::now();
  next_ = start_ + interval_;
}

Progress::~Progress() {
  if (drawn_ && tty_) std::fputc('\n', stderr);
}

void Progress::update(uint64_t done) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (now < next_) return;
  next_ = now + interval_;
  print(done, std::chrono::duration<double>(now - start_).count());
}

void Progress::print(uint64_t done, double seconds) {
  auto amount = [&](double x) {
    return unit_ == Unit::Bytes ? humanBytes(x) : std::to_string(static_cast<unsigned long long>(x)) + " calls";
  };
  const double rate = seconds > 0 ? double(done) / seconds : 0;
  std::string eta = "ETA ?";
  if (rate > 0 && total_ >= done) eta = "ETA " + std::to_string(static_cast<long long>(double(total_ - done) / rate + 0.5)) + " s";
  const int pct = total_ ? static_cast<int>(100.0 * double(done) / double(total_)) : 100;
  std::fprintf(stderr, "%s%s: %s / %s (%d%%), %s/s, %s%s", tty_ ? "\r" : "", label_.c_str(), amount(double(done)).c_str(),
               amount(double(total_)).c_str(), pct, amount(rate).c_str(), eta.c_str(), tty_ ? "\x1b[K" : "\n");
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace trtrace
