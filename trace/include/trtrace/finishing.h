// A trace being finished by another process (docs/design.md, "Finishing off the application's
// clock"). A capture whose application ends (or deletes a network, or builds) with weights still
// queued forks a finisher that writes them while the application goes on or exits. While one runs,
// `<trace>.finishing` exists and every finisher holds a shared flock(2) on it; the finisher that
// completes the trace removes it. A finisher that fails appends one line to it ("<pid>: failed: why")
// and leaves it, with the trace as its complete prefix: the marker is then the log that the next tool
// run reports.
//
// Tools read through Reader::open(path), which calls await(): it waits for a running finisher (one
// line on stderr, then progress), or, once told not to (setWait(false): the tools' --no-wait), throws
// Error::Kind::Finishing. The marker's contents are untrusted: shown escaped, numbers range-checked.
#pragma once
#include <sys/types.h>

#include <string>

namespace trtrace::finishing {

std::string markerOf(const std::string& trace);  // "<trace>.finishing"

// Capture side: the marker of `trace` on a new open file description, share-locked, O_CLOEXEC;
// created (a private temporary name linked into place, the lock taken first, so nobody sees it
// unlocked) when `create`, else opened only if it is still the file with inode `ino` (from the
// creation, *ino set then). -1 when it cannot be had (it exists and is not ours, a full disk): the
// capture then finishes in the application.
int lockMarker(const std::string& trace, bool create, ino_t* ino, pid_t capturePid);
// One line appended to the marker (its log): "<pid>: <line>\n". Best effort.
void logToMarker(int fd, const std::string& line);

// Tools: wait for a running finisher of `trace` (default), or refuse (setWait(false)).
void setWait(bool wait);
bool waits();
// Returns once no finisher runs on `trace`. Said on stderr: one line when it waits; one line when a
// finisher ended without completing the trace (its logged failure, or "ended without completing
// it": killed), the trace then being its complete prefix. Throws Error(Kind::Finishing) when a
// finisher runs and setWait(false) was called.
void await(const std::string& trace);

}  // namespace trtrace::finishing
