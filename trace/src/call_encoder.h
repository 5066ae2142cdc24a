// Call encoder: one call as its thread records it, a draft (CallEncoder::Impl), and the pool the
// writer hands encoders out of. A draft is a few plain structs and copied bytes: the recording
// thread (the application's, in a capture) does no FlatBuffers work. The call log (call_log.h)
// appends finished drafts to a batch, and encodes each into its FlatBuffer (encodeCall) on its own
// thread. Drafts live in memory only; nothing of their layout reaches a file.
#pragma once
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string_view>
#include <vector>

#include "byte_run.h"
#include "internal.h"
#include "trtrace/writer.h"

namespace trtrace {
namespace detail {

// What an item of a draft sets: a value of the call (argument, result) or one of its other fields.
enum class DraftRole : uint8_t { Arg, Ret, Unsupported, Message, Build, BuildError };

// A draft's first bytes. `bytes`, `seq` and `thread` are filled in when the call ends (CallLog::append).
struct DraftHead {
  uint32_t bytes = 0;  // the whole draft, this head included (a multiple of 8)
  uint32_t api = 0;
  uint64_t receiver = 0;
  uint64_t seq = 0;
  uint64_t thread = 0;
  uint32_t network = 0;
  uint32_t slot = 0;  // Unsupported: the vtable slot
  CallStatus status = CallStatus::Ok;
  bool synthesized = false;
  bool provisional = false;  // holds a blob under a provisional key (WriterOptions::deferKeys)
  bool build = false;        // holds a build result (a flush point under FlushPolicy::OnBuild)
};

// One item: fb::Value's scalar fields that any kind sets, then (`wide`) a DraftWide with those only
// weights and build results set, then `payload` bytes (padded to 8): the String's characters, the
// Dims/I64Array's or the HandleArray's 8-byte elements, the F32Array's floats, the Bytes. A Build
// item keeps ok in `i`, the number of BuildError items after it in `u`, and the engine's size in
// `count`, its hash in hashLo/hashHi; Unsupported and Message items hold their text as payload.
// Most calls' items are handles, integers and enums: 40 bytes each, not the 88 of every field.
struct DraftItem {
  DraftRole role = DraftRole::Arg;
  fb::ValueKind kind = fb::ValueKind::Null;
  bool wide = false;  // a DraftWide follows
  uint32_t payload = 0;
  uint32_t typeId = 0, dtype = 0;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
};
struct DraftWide {
  uint64_t count = 0, hashLo = 0, hashHi = 0, length = 0, seed = 0, ptr = 0;
};

constexpr size_t padded(size_t n) { return (n + 7) & ~size_t(7); }  // a payload's room in a draft

// What encodeCall keeps between calls so that it allocates nothing per call: one per builder.
using EncodeScratch = std::vector<flatbuffers::Offset<fb::Value>>;

// `draft` (one whole draft, its head filled in) encoded as a finished Call FlatBuffer in `b`
// (cleared first). Items are encoded in the order they were set, so the bytes are those the
// same calls made on a FlatBufferBuilder directly would give.
void encodeCall(const std::byte* draft, flatbuffers::FlatBufferBuilder& b, EncodeScratch& scratch);

}  // namespace detail

struct CallEncoder::Impl {
  Writer::Impl* w = nullptr;
  detail::ByteRun draft;  // DraftHead, then each item and its payload

  // A new draft: its head alone. Room for a call's usual draft is kept, so no call reallocates.
  void reset(uint32_t api, uint64_t receiver, uint32_t network) {
    draft.clear();
    draft.reserve(4096);
    new (draft.extend(sizeof(detail::DraftHead)))
        detail::DraftHead{.api = api, .receiver = receiver, .network = network};
  }
  detail::DraftHead& head() { return *reinterpret_cast<detail::DraftHead*>(draft.data()); }
  // Appends one item, its DraftWide where `wide` is given, and its payload. Inline: the setters'
  // items are built in place, not on the stack and copied (the copy's loads waited on the stores
  // that had just built it, on every argument of every call).
  void item(const detail::DraftItem& it, std::span<const std::byte> payload = {},
            const detail::DraftWide* wide = nullptr) {
    using detail::DraftItem, detail::DraftWide;
    const size_t room = detail::padded(payload.size()), extra = wide ? sizeof(DraftWide) : 0;
    std::byte* p = draft.extend(sizeof(DraftItem) + extra + room);  // every byte is written here
    DraftItem* written = new (p) DraftItem(it);
    written->payload = static_cast<uint32_t>(payload.size());
    written->wide = wide != nullptr;
    p += sizeof it;
    if (wide) std::memcpy(p, wide, sizeof *wide);
    p += extra;
    if (!payload.empty()) std::memcpy(p, payload.data(), payload.size());
    std::memset(p + payload.size(), 0, room - payload.size());  // the padding
    if (wide && it.kind == fb::ValueKind::WeightsBlob && provisionalBlob({{wide->hashLo, wide->hashHi}, wide->length}))
      head().provisional = true;
  }
};

namespace detail {

// Every encoder handed out, owned here: one abandoned between beginCall and endCall (the caller
// threw) is freed with the writer instead of leaking. Free ones are reused.
class EncoderPool {
 public:
  CallEncoder& take(Writer* w);
  void giveBack(CallEncoder* e);

 private:
  // Another thread holds the spare (calls recorded at once on several threads): one from the list,
  // or a new one.
  [[gnu::cold]] CallEncoder& takeLocked(Writer* w);
  // One free encoder kept beside the lock: calls recorded one at a time (the usual application
  // builds from one thread) take and give it back with one atomic exchange each, no lock.
  std::atomic<CallEncoder*> spare_{nullptr};
  std::mutex mu_;
  std::vector<std::unique_ptr<CallEncoder>> all_;
  std::vector<CallEncoder*> free_;
};

}  // namespace detail
}  // namespace trtrace
