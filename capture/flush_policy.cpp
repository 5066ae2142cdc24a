// Flush policy and writer options of a capture (flush_policy.h).
#include "flush_policy.h"

#include <cstdint>

#include "trtrace/quiet_thread.h"

namespace trtrace::capture {

FlushRules flushRules(const Config& c) {
  FlushRules r;
  if (c.flushEveryCall) {
    r.segments = FlushPolicy::EveryCall;
    r.blobsOnCallingThread = true;
    r.exportAfterCall = true;
  } else if (c.flushOnBuild) {
    r.segments = FlushPolicy::OnBuild;
  }
  // With every-call too: each build still flushes (nothing is left to write) and exports.
  r.flushAfterBuild = c.flushOnBuild;
  return r;
}

WriterOptions writerOptions(const Config& c, const std::string& path) {
  const FlushRules rules = flushRules(c);
  WriterOptions o;
  o.path = path;
  o.zstdLevel = c.zstdLevel;
  o.durable = c.durable;
  o.rawWhenWaitedOn = true;     // the application never waits for zstd (docs/design.md, "Capture cost")
  o.rawBacklogBytes = 4 << 20;  // nor for a backlog of small weights that zstd did not keep up with
  o.smallMinSaving = 0.10;      // and small weights are kept compressed only where that pays well
  o.workerThreads = rules.blobsOnCallingThread ? 0 : c.workers;
  o.workerNice = kGiveWayNice;  // the workers give way to the application (quiet_thread.h)
  // The log's thread compresses the segments while the application runs: level 1 (`trtrace
  // rewrite --compress` recompresses at 3).
  o.logZstdLevel = 1;
  o.deferKeys = true;  // no weight byte is read on the application's thread at the call (writer.h)
  o.queueBytes = c.queueMiB > 0 ? static_cast<uint64_t>(c.queueMiB) << 20 : UINT64_MAX;
  o.flush = rules.segments;
  return o;
}

}  // namespace trtrace::capture
