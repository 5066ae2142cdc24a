// The process's one live session, as NVIDIA's shim C interface (trtShimSetOutputJsonFile /
// trtShimGetOutputJsonFile: Session::setOutputJson, Session::outputJson) and the process-end hooks
// (process_end.cpp) find it. A JSON path set before the session starts is kept here and applied
// when it starts (the environment is read then, not at load).
#pragma once
#include "config.h"

namespace trtrace::capture {

class Session;

namespace live {

// `s` starts: the JSON path set before (if any) replaces c.outputJson, and `s` becomes this
// process's live session. Ordered against the C interface's setter by one lock.
void start(Session* s, Config& c);
// A forked child: the session in its memory is now its own.
void ownedByThisProcess();
// The live session when the running process owns it; nullptr where none started, or in a vfork
// child (it shares the parent's memory, and so a session that is not its own: it sees another pid).
Session* own();

}  // namespace live
}  // namespace trtrace::capture
