// The generated recording wrappers (one per interface of schema/api/*.api).
#include "session.h"
#include "shim.h"

namespace trtrace::capture {
#include "capture_gen.inc"
}  // namespace trtrace::capture
