// Test fault injectors (test-only; docs/design.md "Robustness"): faults at exact, reproducible points
// that a test cannot get on demand from a real process or filesystem. Unset (the default): no effect
// beyond reading two variables.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>

#include "config.h"

namespace trtrace::capture {

// TRTRACE_FAULT_WRITE_FAIL=N[:ENOSPC|:EIO]: write N (0-based) fails with that errno (ENOSPC when not named).
struct WriteFaultSpec {
  int64_t at = -1;
  int err = 0;
};
std::optional<WriteFaultSpec> parseWriteFault(const char* value);  // nullopt: not of that form

class Faults {
 public:
  // Bad values: one warning line each, that injector off.
  void configure(const EnvLookup& env);
  // TRTRACE_FAULT_KILL_AT_CALL=N: the process raises SIGKILL when the recording of call N (0-based,
  // in the order calls start being recorded) begins, so call N and everything after it never reach
  // the trace (the crash-safety tests).
  void callStarting() {
    if (killAtCall_.load(std::memory_order_relaxed) >= 0) [[unlikely]]
      countCall();  // off: no atomic write per call
  }
  // The writer's fault hook (WriterOptions::writeFault) for TRTRACE_FAULT_WRITE_FAIL: counts every
  // write the trace writer makes to the file, on any thread. Empty when that injector is off.
  std::function<int()> writeHook();
  // TRTRACE_FAULT_FINISHER_STALL_MS=N: a finisher sleeps N ms before it writes (so that a test can
  // kill it, or start a tool while it runs). 0 when unset.
  int64_t finisherStallMs() const { return finisherStallMs_; }
  // TRTRACE_FAULT_FINISHER_FAIL=1: in a finisher (called when it starts), its next write fails with
  // ENOSPC: a full disk under the finisher, which a test cannot have on demand.
  void finisherStarted();

 private:
  [[gnu::cold]] void countCall();
  std::atomic<int64_t> killAtCall_{-1};
  std::atomic<int64_t> callsStarted_{0};
  WriteFaultSpec writeFail_;
  std::atomic<int64_t> writes_{0};
  int64_t finisherStallMs_ = 0;
  bool finisherFail_ = false;
};

}  // namespace trtrace::capture
