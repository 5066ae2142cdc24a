// What trace_craft and trace_lies share: every crafted trace opens as a capture's does, with
// createInferBuilder (handle 1), so a reader or player gets as far as the part that is odd.
#pragma once

#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "trtrace/api_abi.h"
#include "trtrace/api_table.h"
#include "trtrace/writer.h"

namespace trtrace::craft {

inline std::unique_ptr<Writer> withBuilder(const std::string& out, const std::string& producer,
                                           const std::string& libraryName = abi::kLibraryName,
                                           const std::string& libraryVersion = abi::kLibraryVersion) {
  WriterOptions o;
  o.path = out;
  HeaderInfo h;
  h.producer = producer;
  h.libraryName = libraryName;
  h.libraryVersion = libraryVersion;
  auto w = Writer::create(o, h);
  w->beginCall(api::kentry_createInferBuilder_INTERNAL, 0, 0)
      .argBool(true)
      .argI64(abi::kLibraryVersionInt)
      .retHandle(1)
      .endCall();
  return w;
}

// Builder 1's createNetworkV2, returning network handle 2.
inline void addNetwork(Writer& w) { w.beginCall(api::kBuilder_createNetworkV2, 1, 0).argU64(0).retHandle(2).endCall(); }

inline std::vector<std::byte> readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  std::memcpy(b.data(), c.data(), c.size());
  return b;
}

inline void writeAll(const std::string& path, const std::vector<std::byte>& b) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
}

}  // namespace trtrace::craft
