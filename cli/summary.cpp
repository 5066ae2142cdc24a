// Counting what a trace holds (summary.h).
#include "summary.h"

#include "commands.h"
#include "trace_edit.h"

namespace trtrace::cli {

Summary summarise(const Reader& r) {
  Summary s;
  r.forEachCall([&](const CallView& c) {
    ++s.calls;
    ++s.perApi[c.apiId()];
    if (c.networkId()) ++s.perNet[c.networkId()];
    if (isBuild(c)) {
      ++s.builds;
      if (auto b = c.buildResult())
        s.buildsOk += b->ok;
      else
        ++s.buildsUnrecorded;
    }
    auto note = [&](ValueView v) {
      if (v.kind() == ValueKind::WeightsBlob) {
        ++s.refs;
        s.logical += v.blob().length;
      }
      if (v.kind() == ValueKind::WeightsInline) s.inlineBytes += v.bytes().size();
    };
    for (size_t i = 0; i < c.argCount(); ++i) note(c.arg(i));
    if (auto v = c.ret()) note(*v);
    return true;
  });
  for (auto& b : r.blobs()) {
    ++s.blobs;
    s.unique += b.ref.length;
    s.stored += b.storedSize;
    s.compressed += b.compressed;
  }
  if (const ExternalBlobs* ext = r.externalBlobs())  // not in the file: raw bytes in the capture's BIN
    for (auto& [ref, bytes] : ext->blobs) {
      ++s.blobs;
      s.unique += ref.length;
      s.stored += ref.length;
    }
  for (size_t i = 0; i < r.segmentCount(); ++i) {
    auto si = r.segmentInfo(i);
    s.logStored += si.storedSize;
    s.logCompressed += si.compressed;
  }
  return s;
}

std::string summaryLine(const Summary& s) {
  return std::to_string(s.calls) + " calls, " + std::to_string(s.perNet.size()) + " networks, " +
         std::to_string(s.builds) + " builds (" + std::to_string(s.buildsOk) + " ok" +
         (s.buildsUnrecorded ? ", " + std::to_string(s.buildsUnrecorded) + " not recorded" : "") + "), weights " +
         humanBytes(double(s.logical)) + " in " + std::to_string(s.refs) + " references (" +
         humanBytes(double(s.unique)) + " unique, " + humanBytes(double(s.stored)) + " stored)";
}

}  // namespace trtrace::cli
