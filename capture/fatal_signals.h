// Best-effort flush when the application dies of a fatal signal, then the previous disposition.
#pragma once

namespace trtrace::capture {

// Installs the handlers once: the faults, abort, and the signals that end a process by default
// (SIGTERM, a closed terminal's SIGHUP, SIGINT, SIGQUIT). A signal the process ignores at start is
// left alone: it ends nothing. `flush` runs at most once, under a 10 s watchdog.
void flushOnFatalSignals(void (*flush)() noexcept);

}  // namespace trtrace::capture
