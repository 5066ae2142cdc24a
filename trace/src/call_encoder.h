// Call encoder: one call record being built (CallEncoder::Impl, its own FlatBuffer) and the pool
// the writer hands encoders out of. The call log (call_log.h) appends a finished one to its segment.
#pragma once
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "internal.h"
#include "trtrace/writer.h"

namespace trtrace {

struct CallEncoder::Impl {
  Writer::Impl* w = nullptr;
  flatbuffers::FlatBufferBuilder b{1024};
  std::vector<flatbuffers::Offset<fb::Value>> args;
  flatbuffers::Offset<fb::Value> ret{0};
  flatbuffers::Offset<flatbuffers::String> unsupIface{0}, msg{0};
  flatbuffers::Offset<fb::BuildResult> build{0};
  uint32_t slot = 0, api = 0, network = 0;
  uint64_t receiver = 0;
  CallStatus status = CallStatus::Ok;
  bool synthesized = false;
  bool provisional =
      false;  // a weights blob under a provisional key (deferKeys): resolved before its segment is written

  void reset(uint32_t a, uint64_t r, uint32_t n);
  // One place that creates a Value; arguments in schema field order (defaults are not stored).
  flatbuffers::Offset<fb::Value> value(fb::ValueKind kind, int64_t i = 0, uint64_t u = 0, double f = 0,
                                       std::string_view str = {}, uint32_t typeId = 0,
                                       std::span<const int64_t> ints = {}, std::span<const float> floats = {},
                                       std::span<const uint64_t> handles = {}, std::span<const std::byte> bytes = {},
                                       uint32_t dtype = 0, uint64_t count = 0, const BlobRef* blob = nullptr,
                                       uint64_t seed = 0, uint64_t ptr = 0);
};

namespace detail {

// Every encoder handed out, owned here: one abandoned between beginCall and endCall (the caller
// threw) is freed with the writer instead of leaking. Free ones are reused.
class EncoderPool {
 public:
  CallEncoder& take(Writer* w);
  void giveBack(CallEncoder* e);

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<CallEncoder>> all_;
  std::vector<CallEncoder*> free_;
};

}  // namespace detail
}  // namespace trtrace
