// When a capture's trace (and its JSON+BIN export) reach the disk, and how its writer is set up:
// TRT_SHIM_FLUSH_AFTER_EVERY_CALL, TRT_SHIM_FLUSH_ON_BUILD, else at exit (docs/design.md, "Capture cost").
#pragma once
#include <string>

#include "config.h"
#include "trtrace/writer.h"

namespace trtrace::capture {

struct FlushRules {
  FlushPolicy segments = FlushPolicy::AtClose;  // when the writer writes the call log
  // Flush after every call: a call's weights must be on disk before the segment naming them, so
  // blobs are written on the calling thread (a worker could still hold them when the app dies).
  bool blobsOnCallingThread = false;
  bool exportAfterCall = false;  // the JSON+BIN brought up to date after each call
  bool flushAfterBuild = false;  // the trace flushed, then the JSON+BIN brought up to date, after each build
};
FlushRules flushRules(const Config& c);  // every-call wins over on-build

// The trace writer's options for `path` under `c` (the fault hook and the file come from the session).
WriterOptions writerOptions(const Config& c, const std::string& path);

}  // namespace trtrace::capture
