// Best-effort flush on a fatal signal (fatal_signals.h).
#include "fatal_signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <iterator>

namespace trtrace::capture {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGHUP, SIGINT, SIGQUIT};
struct sigaction gPrevious[std::size(kFatalSignals)];
std::atomic<bool> gInSignal{false};
void (*gFlush)() noexcept = nullptr;

void onFatalSignal(int sig) {
  if (!gInSignal.exchange(true) && gFlush) {
    // Not async-signal-safe; this is the documented best effort for a process that is dying.
    // A watchdog ends the process if the flush cannot finish (e.g. the signal arrived while this
    // thread held a writer lock): a dying application must never hang on our account.
    signal(SIGALRM, SIG_DFL);
    alarm(10);
    gFlush();
  }
  for (size_t i = 0; i < std::size(kFatalSignals); ++i)
    if (kFatalSignals[i] == sig) sigaction(sig, &gPrevious[i], nullptr);
  raise(sig);
}

}  // namespace

void flushOnFatalSignals(void (*flush)() noexcept) {
  gFlush = flush;
  for (size_t i = 0; i < std::size(kFatalSignals); ++i) {
    if (sigaction(kFatalSignals[i], nullptr, &gPrevious[i]) == 0 && gPrevious[i].sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = onFatalSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(kFatalSignals[i], &sa, &gPrevious[i]);
  }
}

}  // namespace trtrace::capture
