// Progress of long work (verify, rewrite, convert, replay, the capture's final drain) on stderr,
// named by the phase it is in:
//   tensorrt_player big.trtrace: replaying calls: 1200 calls / 4000 calls (30%), 900 calls/s, ETA 3 s
//   tensorrt_player big.trtrace: building network 0: 42 s elapsed
// A counted phase (Progress) reports done / total, percent, rate and ETA, and ends at 100% when it
// ends without an exception; a phase that cannot be counted (the library's engine build: it says
// nothing until it returns) is an ElapsedPhase, whose line ticks with the seconds spent from a timer
// thread, then says "done in". Shown when stderr is a terminal (one line, rewritten in place), or
// on any stderr when TRTRACE_PROGRESS=1 (a line per report); TRTRACE_PROGRESS=0 hides it. A report
// is printed at most once per interval (1 s; TRTRACE_PROGRESS_INTERVAL_MS), and the first only after
// one interval, so short work prints nothing (with an interval of 0: every report, and an
// ElapsedPhase's line at its start). update() is cheap (one clock read) and may be called per record.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace trtrace {

// "1.50 GiB", "512 B".
std::string humanBytes(double bytes);

class Progress {
 public:
  enum class Unit { Bytes, Calls };
  // `label` names the work ("trtrace verify x.trtrace"); `phase` the part of it this counts
  // ("replaying calls"), "" when the work is one phase.
  Progress(std::string label, uint64_t total, Unit unit = Unit::Bytes) : Progress(std::move(label), "", total, unit) {}
  Progress(std::string label, std::string phase, uint64_t total, Unit unit = Unit::Bytes);
  ~Progress();  // without an exception in flight: finish(); then ends the in-place line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void update(uint64_t done);
  void update(uint64_t done, uint64_t total) {  // the total known only once the work started
    total_ = total;
    update(done);
  }
  // The phase is complete: when a report was shown, a last one at total / total (100%).
  void finish();
  bool enabled() const { return enabled_; }

 private:
  void print(uint64_t done, double seconds);

  std::string label_;
  uint64_t total_, last_ = 0, shown_ = 0;  // last_: the last done reported; shown_: the last printed
  Unit unit_;
  bool enabled_ = false, tty_ = false, drawn_ = false, finished_ = false;
  int exceptions_;  // in flight at construction: more at destruction means the work failed
  std::chrono::steady_clock::time_point start_, next_;
  std::chrono::milliseconds interval_{1000};
};

// A phase without a count: "<label>: <phase>: <n> s elapsed", from a timer thread once per interval
// while it lasts (started only when progress is shown), then "<label>: <phase>: done in <x> s" when a
// line was shown and it ended without an exception. The thread only prints.
class ElapsedPhase {
 public:
  ElapsedPhase(std::string label, std::string phase);
  ~ElapsedPhase();
  ElapsedPhase(const ElapsedPhase&) = delete;
  ElapsedPhase& operator=(const ElapsedPhase&) = delete;

 private:
  void tick();
  void print(const std::string& what);

  std::string line_;  // "<label>: <phase>"
  bool tty_ = false, drawn_ = false, stop_ = false;
  int exceptions_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::milliseconds interval_{1000};
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace trtrace
