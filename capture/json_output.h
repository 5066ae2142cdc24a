// The JSON+BIN export wired to one trace (TRT_SHIM_OUTPUT_JSON_FILE or trtShimSetOutputJsonFile):
// made when the writer opens, fed by the writer (WriterOptions::onCall), brought up to date at each
// flush point. A failure is said once and stops the export; the trace goes on. Which path it
// writes, and until when that may change, is the session's (session.h).
#pragma once
#include <atomic>
#include <memory>
#include <string>

#include "json_export.h"
#include "trtrace/writer.h"

namespace trtrace::capture {

class JsonOutput {
 public:
  // The export of the trace at `tracePath`, fed through `o.onCall` by the writer made with `o`.
  void start(const std::string& tracePath, const std::string& libraryVersion, WriterOptions& o);
  JsonExport* exporter() { return export_.get(); }
  // A flush point: the JSON at `jsonPath` and its BIN brought up to date. Nothing when not started,
  // when `jsonPath` is empty, or once failed.
  void flush(const std::string& jsonPath) noexcept;
  bool failed() const { return failed_; }
  void stop() { export_.reset(); }  // the writer did not open
  // A forked child: the parent's export is left untouched (its spools are the parent's), kept
  // reachable so that leak checkers see it as kept; the child's capture starts its own.
  void abandon();

 private:
  std::unique_ptr<JsonExport> export_;
  std::atomic<bool> failed_{false};
};

}  // namespace trtrace::capture
