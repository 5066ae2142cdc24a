// Progress of long work (verify, rewrite, convert, replay, the capture's final drain) on stderr:
//   trtrace verify big.trtrace: 3.20 GiB / 10.00 GiB (32%), 1.10 GiB/s, ETA 6 s
// Shown when stderr is a terminal (one line, rewritten in place), or on any stderr when
// TRTRACE_PROGRESS=1 (a line per report); TRTRACE_PROGRESS=0 hides it. A report is printed at most
// once per interval (1 s; TRTRACE_PROGRESS_INTERVAL_MS), and the first only after one interval, so
// short work prints nothing. update() is cheap (one clock read) and may be called per record.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace trtrace {

// "1.50 GiB", "512 B".
std::string humanBytes(double bytes);

class Progress {
 public:
  enum class Unit { Bytes, Calls };
  Progress(std::string label, uint64_t total, Unit unit = Unit::Bytes);
  ~Progress();  // ends the in-place line, if one was drawn
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void update(uint64_t done);
  void update(uint64_t done, uint64_t total) {  // the total known only once the work started
    total_ = total;
    update(done);
  }
  bool enabled() const { return enabled_; }

 private:
  void print(uint64_t done, double seconds);

  std::string label_;
  uint64_t total_;
  Unit unit_;
  bool enabled_ = false, tty_ = false, drawn_ = false;
  std::chrono::steady_clock::time_point start_, next_;
  std::chrono::milliseconds interval_{1000};
};

}  // namespace trtrace
