// convert::openCapture (convert.h): a trace, or NVIDIA's JSON+BIN read in place, as one Reader.
#include <unistd.h>

#include <memory>

#include "common.h"
#include "trtrace/convert.h"
#include "trtrace/files.h"

namespace trtrace::convert {

std::unique_ptr<Reader> openCapture(const std::string& path) {
  if (detect(path) != FileKind::Json) return Reader::open(path);
  const int fd = files::memoryFile("trtrace converted calls");
  try {
    auto weights = std::make_shared<ExternalBlobs>();
    JsonToTraceOptions o;
    o.traceFd = fd;
    o.inPlace = weights.get();
    jsonToTrace(path, path + " (converted)", o);
    auto reader = Reader::open(fd, path + " (converted)");
    reader->setExternalBlobs(std::move(weights));
    ::close(fd);
    return reader;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

bool fromNvidiaJson(const Reader& r) {
  for (const auto& [key, value] : r.header().settings)
    if (key == kSourceSetting) return value == kSourceNvidiaJson;
  return false;
}

}  // namespace trtrace::convert
