// The threads the capture and the writer start inside an application: their signals, names and
// nice value. Each keeps every asynchronous signal blocked from its first instruction, so that an
// application's process-directed signal (SIGTERM, SIGHUP, SIGINT, ...) goes to one of the
// application's threads, never to ours: the capture's flush on a fatal signal
// (capture/fatal_signals.cpp) waits for our threads, and run on one of them it waited for itself
// until its watchdog ended the process (a SIGHUP taken by the log's thread as it started: `trtrace
// capture`'s app then died of SIGALRM).
// The signals a thread's own faults raise stay unblocked. A thread starts with its creator's
// mask: the creator blocks them around the creation.
#pragma once
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

#include <thread>
#include <utility>

namespace trtrace {

// While it lives, the calling thread blocks all signals but those its own faults raise.
class QuietSignals {
 public:
  QuietSignals() {
    sigset_t quiet;
    sigfillset(&quiet);
    for (int own : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGABRT}) sigdelset(&quiet, own);
    pthread_sigmask(SIG_BLOCK, &quiet, &old_);
  }
  ~QuietSignals() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  QuietSignals(const QuietSignals&) = delete;
  QuietSignals& operator=(const QuietSignals&) = delete;

 private:
  sigset_t old_;
};

// std::thread(f), quiet from its start.
template <class F>
std::thread quietThread(F&& f) {
  const QuietSignals quiet;
  return std::thread(std::forward<F>(f));
}

// The nice increment a capture's own threads take, so that they give way to the application where
// both want a CPU (docs/design.md, "Capture cost"); one the application waits for (a drain) has the
// CPU the application left.
inline constexpr int kGiveWayNice = 5;

// Names the calling thread (`top -H`, `ps -L`: "trtrace-blob", at most 15 characters) and raises
// its nice value by niceIncrement. Best effort: a failure changes nothing else.
inline void nameThisThread(const char* name, int niceIncrement = 0) noexcept {
  ::pthread_setname_np(::pthread_self(), name);
  if (niceIncrement == 0) return;
  const auto tid = static_cast<id_t>(::gettid());
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, tid);
  if (errno == 0) ::setpriority(PRIO_PROCESS, tid, now + niceIncrement);
}

}  // namespace trtrace
