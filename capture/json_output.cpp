// The JSON+BIN export wired to one trace (json_output.h).
#include "json_output.h"

#include <cstdio>
#include <exception>

namespace trtrace::capture {

void JsonOutput::start(const std::string& tracePath, const std::string& libraryVersion, WriterOptions& o) {
  export_ = std::make_unique<JsonExport>(tracePath, libraryVersion);
  o.onCall = [json = export_.get()](const CallView& c) { json->add(c); };
  o.deferKeys = false;  // the export names each blob by its key as the call ends
}

void JsonOutput::flush(const std::string& jsonPath) noexcept {
  if (jsonPath.empty() || !export_ || failed_) return;
  try {
    export_->flush(jsonPath);
  } catch (const std::exception& e) {
    if (!failed_.exchange(true)) std::fprintf(stderr, "trtrace: %s; not writing the JSON+BIN export\n", e.what());
  } catch (...) {
    if (!failed_.exchange(true))
      std::fprintf(stderr, "trtrace: %s: error writing; not writing the JSON+BIN export\n", jsonPath.c_str());
  }
}

void JsonOutput::abandon() {
  [[maybe_unused]] static JsonExport* abandonedAtFork[64];
  static unsigned forks;
  abandonedAtFork[forks++ % 64] = export_.release();
}

}  // namespace trtrace::capture
