// Progress reports on stderr (see trtrace/progress.h).
#include "trtrace/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>

namespace trtrace {

namespace {

// Whether and how reports are shown (the environment, read by each phase).
struct Display {
  bool enabled = false, tty = false;
  std::chrono::milliseconds interval{1000};
};

Display displayFromEnv() {
  Display d;
  const char* v = std::getenv("TRTRACE_PROGRESS");
  d.tty = ::isatty(STDERR_FILENO) == 1;
  d.enabled = v && *v ? std::atoi(v) != 0 : d.tty;
  if (v && *v) d.tty = false;  // asked for explicitly: plain lines, e.g. into a log
  if (const char* ms = std::getenv("TRTRACE_PROGRESS_INTERVAL_MS"); ms && *ms)
    d.interval = std::chrono::milliseconds(std::max(0L, std::atol(ms)));
  return d;
}

// One report: on a terminal it replaces the line before it; else it is a line of its own.
void emit(bool tty, const std::string& text) {
  std::fprintf(stderr, "%s%s%s", tty ? "\r" : "", text.c_str(), tty ? "\x1b[K" : "\n");
  std::fflush(stderr);
}

}  // namespace

std::string humanBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", b, units[u]);
  return buf;
}

Progress::Progress(std::string label, std::string phase, uint64_t total, Unit unit)
    : label_(phase.empty() ? std::move(label) : label + ": " + phase),
      total_(total),
      unit_(unit),
      exceptions_(std::uncaught_exceptions()) {
  const Display d = displayFromEnv();
  enabled_ = d.enabled, tty_ = d.tty, interval_ = d.interval;
  start_ = std::chrono::steady_clock::now();
  next_ = start_ + interval_;
}

Progress::~Progress() {
  if (std::uncaught_exceptions() == exceptions_) finish();
  if (drawn_ && tty_) std::fputc('\n', stderr);
}

void Progress::update(uint64_t done) {
  if (!enabled_) return;
  last_ = done;
  auto now = std::chrono::steady_clock::now();
  if (now < next_) return;
  next_ = now + interval_;
  print(done, std::chrono::duration<double>(now - start_).count());
}

void Progress::finish() {
  if (finished_ || !drawn_) return;  // nothing shown: the work was short, and stays silent
  finished_ = true;
  // The work is done: all of it, even where the count it was given ran short (a total known late).
  const uint64_t all = std::max(total_, last_);
  if (shown_ != all)  // not already said at 100%
    print(all, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
}

void Progress::print(uint64_t done, double seconds) {
  auto amount = [&](double x) {
    return unit_ == Unit::Bytes ? humanBytes(x) : std::to_string(static_cast<unsigned long long>(x)) + " calls";
  };
  const double rate = seconds > 0 ? double(done) / seconds : 0;
  std::string eta = "ETA ?";
  if (rate > 0 && total_ >= done)
    eta = "ETA " + std::to_string(static_cast<long long>(double(total_ - done) / rate + 0.5)) + " s";
  const uint64_t total = std::max(total_, done);
  const int pct = total ? static_cast<int>(100.0 * double(done) / double(total)) : 100;
  emit(tty_, label_ + ": " + amount(double(done)) + " / " + amount(double(total)) + " (" + std::to_string(pct) +
                 "%), " + amount(rate) + "/s, " + eta);
  drawn_ = true, shown_ = done;
}

ElapsedPhase::ElapsedPhase(std::string label, std::string phase)
    : line_(std::move(label) + ": " + phase),
      exceptions_(std::uncaught_exceptions()),
      start_(std::chrono::steady_clock::now()) {
  const Display d = displayFromEnv();
  if (!d.enabled) return;
  tty_ = d.tty, interval_ = d.interval;
  if (interval_.count() == 0) print("0 s elapsed");
  // At an interval of 0 (a report per record), the line still ticks at most 10 times a second.
  const auto step = std::max(interval_, std::chrono::milliseconds(100));
  thread_ = std::thread([this, step] {
    std::unique_lock<std::mutex> lk(mu_);
    while (!cv_.wait_for(lk, step, [&] { return stop_; })) tick();
  });
}

ElapsedPhase::~ElapsedPhase() {
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  if (!drawn_) return;
  if (std::uncaught_exceptions() == exceptions_) {
    char done[48];
    std::snprintf(done, sizeof done, "done in %.1f s",
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    print(done);
  }
  if (tty_) std::fputc('\n', stderr);  // the line stays: the counted phase goes on below it
}

void ElapsedPhase::tick() {
  const auto s = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start_).count();
  print(std::to_string(static_cast<long long>(s)) + " s elapsed");
}

void ElapsedPhase::print(const std::string& what) {
  emit(tty_, line_ + ": " + what);
  drawn_ = true;
}

}  // namespace trtrace
