// Finishing off the application's clock (docs/design.md, "Finishing off the application's clock").
// At a drain point (a build returned, a network deleted, the process ending) the application would
// wait until every queued weight is written. From TRTRACE_FINISHER_MB queued on, the queued weights
// instead get their file ranges (Writer::reserveQueued) and a forked child, the finisher, writes
// them from its copy-on-write view of the application's memory, while the application goes on (or
// exits). At the end, either every finisher is done and the application closes the trace itself,
// or a last finisher is forked to close it once the others are done. The flush settings, a JSON+BIN
// export and TRTRACE_FINISHER=0 keep the synchronous behaviour.
//
// Processes: the finishers share the marker `<trace>.finishing` (trtrace/finishing.h: tools wait on
// it) and each tells the one that closes whether it succeeded through a pipe (a byte 'K', then
// EOF). A finisher never returns into the application: it ends with the exit_group system call (no
// atexit handler, no stdio flush of the application's buffers).
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "config.h"
#include "faults.h"
#include "trtrace/writer.h"

namespace trtrace::capture {

class Finishers {
 public:
  // Configured from the capture's settings (a flush setting or a JSON+BIN export: never used).
  void configure(const Config& c, bool jsonExport, Faults* faults);
  // At a drain point: whether the queued weights were handed to a new finisher (the caller still
  // drains: blobs a worker is writing stay its own). Throws only what the writer throws.
  bool handOff(Writer& w, const std::string& trace);
  // At close: the pid of the finisher that closes the trace, or 0 when the caller closes it (no
  // finisher runs, or one failed: the close then says so; or too little is queued).
  pid_t closing(Writer& w, const std::string& trace);
  // The caller closed the trace itself (closing() gave 0) and succeeded: the marker an earlier
  // finisher left, if any, goes (a failed close keeps it, with the failure it logged).
  void closed() noexcept;
  // In a child the application forked: the parent's finishers are not its own.
  void afterForkInApp() noexcept;
  // The fork in progress on this thread is a finisher's (Session's atfork handler does nothing).
  static bool forkingFinisher() noexcept;

 private:
  bool wanted(uint64_t queued) const;
  pid_t fork(Writer& w, const std::string& trace, bool closing);
  [[noreturn]] void runChild(Writer& w, const std::string& trace, bool closes, int status, int marker);
  bool earlierSucceeded();  // waits for every earlier finisher: each said 'K'
  void reap();              // finishers done: their pipe closed (non-blocking); failures kept

  bool enabled_ = false;
  uint64_t minBytes_ = 0;
  Faults* faults_ = nullptr;  // the test fault injectors (faults.h)
  std::string report_;        // Config::finisherReport
  ino_t marker_ = 0;          // the marker this capture created (0: none yet)
  std::string markerTrace_;   // the trace it lies beside (an absolute path where the system says)
  struct Child {
    pid_t pid;
    int status;  // read end of its pipe
  };
  std::vector<Child> running_;
  std::vector<pid_t> exiting_;  // finishers that said 'K', not reaped yet
  bool failed_ = false;         // a finisher ended without its 'K'
};

}  // namespace trtrace::capture
