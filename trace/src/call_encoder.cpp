// Call encoder: CallEncoder's setters writing a draft, the draft's encoding as a Call FlatBuffer,
// and the pool of encoders (see call_encoder.h).
#include "call_encoder.h"

#include "writer_impl.h"

namespace trtrace {

using detail::DraftHead;
using detail::DraftItem;
using detail::DraftRole;
using detail::DraftWide;
using detail::padded;
using flatbuffers::Offset;

CallEncoder::CallEncoder(Writer* w) : impl_(std::make_unique<Impl>()) { impl_->w = w->impl_.get(); }
CallEncoder::~CallEncoder() = default;

namespace {
std::span<const std::byte> text(std::string_view s) { return std::as_bytes(std::span<const char>(s)); }
// The address of a setter's DraftWide, valid until the setter's item() has copied it.
const DraftWide* in(const DraftWide& w) { return &w; }
DraftWide weights(uint64_t count, uint64_t ptr, const BlobRef& blob = {}, uint64_t seed = 0) {
  return {
      .count = count, .hashLo = blob.hash.lo, .hashHi = blob.hash.hi, .length = blob.length, .seed = seed, .ptr = ptr};
}
}  // namespace

using VK = fb::ValueKind;
// Each value setter, as an argument and as the result: ITEM is the DraftItem (role set by the
// pair), PAYLOAD its bytes, WIDE its DraftWide (a pointer, or nullptr).
#define TRT_VALUE_PAIR(NAME, PARAMS, ITEM, PAYLOAD, WIDE) \
  CallEncoder& CallEncoder::arg##NAME PARAMS {            \
    DraftItem it ITEM;                                    \
    impl_->item(it, PAYLOAD, WIDE);                       \
    return *this;                                         \
  }                                                       \
  CallEncoder& CallEncoder::ret##NAME PARAMS {            \
    DraftItem it ITEM;                                    \
    it.role = DraftRole::Ret;                             \
    impl_->item(it, PAYLOAD, WIDE);                       \
    return *this;                                         \
  }
#define NONE std::span<const std::byte>()
TRT_VALUE_PAIR(Null, (), {.kind = VK::Null}, NONE, nullptr)
TRT_VALUE_PAIR(Bool, (bool v), ({.kind = VK::Bool, .i = v ? 1 : 0}), NONE, nullptr)
TRT_VALUE_PAIR(I64, (int64_t v), ({.kind = VK::I64, .i = v}), NONE, nullptr)
TRT_VALUE_PAIR(U64, (uint64_t v), ({.kind = VK::U64, .u = v}), NONE, nullptr)
TRT_VALUE_PAIR(F32, (float v), ({.kind = VK::F32, .f = double(v)}), NONE, nullptr)
TRT_VALUE_PAIR(F64, (double v), ({.kind = VK::F64, .f = v}), NONE, nullptr)
TRT_VALUE_PAIR(String, (std::string_view v), {.kind = VK::String}, text(v), nullptr)
TRT_VALUE_PAIR(Enum, (uint32_t typeId, int64_t value), ({.kind = VK::Enum, .typeId = typeId, .i = value}), NONE,
               nullptr)
TRT_VALUE_PAIR(Dims, (std::span<const int64_t> d), {.kind = VK::Dims}, std::as_bytes(d), nullptr)
TRT_VALUE_PAIR(Handle, (uint64_t h, uint32_t typeId), ({.kind = VK::Handle, .typeId = typeId, .u = h}), NONE, nullptr)
TRT_VALUE_PAIR(HandleArray, (std::span<const uint64_t> h), {.kind = VK::HandleArray}, std::as_bytes(h), nullptr)
TRT_VALUE_PAIR(I64Array, (std::span<const int64_t> v), {.kind = VK::I64Array}, std::as_bytes(v), nullptr)
TRT_VALUE_PAIR(F32Array, (std::span<const float> v), {.kind = VK::F32Array}, std::as_bytes(v), nullptr)
TRT_VALUE_PAIR(Bytes, (std::span<const std::byte> v), {.kind = VK::Bytes}, v, nullptr)
TRT_VALUE_PAIR(WeightsInline, (uint32_t dtype, uint64_t count, std::span<const std::byte> bytes, uint64_t ptr),
               ({.kind = VK::WeightsInline, .dtype = dtype}), bytes, in(weights(count, ptr)))
TRT_VALUE_PAIR(WeightsBlob, (uint32_t dtype, uint64_t count, const BlobRef& blob, uint64_t ptr),
               ({.kind = VK::WeightsBlob, .dtype = dtype}), NONE, in(weights(count, ptr, blob)))
TRT_VALUE_PAIR(WeightsRandom, (uint32_t dtype, uint64_t count, uint64_t seed, uint64_t ptr),
               ({.kind = VK::WeightsRandom, .dtype = dtype}), NONE, in(weights(count, ptr, {}, seed)))
#undef NONE
#undef TRT_VALUE_PAIR

CallEncoder& CallEncoder::status(CallStatus s) {
  impl_->head().status = s;
  return *this;
}
CallEncoder& CallEncoder::unsupported(std::string_view iface, uint32_t slot) {
  impl_->head().status = CallStatus::Unsupported;
  impl_->head().slot = slot;
  impl_->item({.role = DraftRole::Unsupported}, text(iface));
  return *this;
}
CallEncoder& CallEncoder::message(std::string_view s) {
  impl_->item({.role = DraftRole::Message}, text(s));
  return *this;
}
CallEncoder& CallEncoder::synthesized() {
  impl_->head().synthesized = true;
  return *this;
}
CallEncoder& CallEncoder::buildResult(bool ok, uint64_t engineSize, const Hash128& h,
                                      std::span<const std::string> errors) {
  impl_->head().build = true;
  const DraftWide result{.count = engineSize, .hashLo = h.lo, .hashHi = h.hi};
  impl_->item({.role = DraftRole::Build, .i = ok ? 1 : 0, .u = errors.size()}, {}, &result);
  for (const std::string& e : errors) impl_->item({.role = DraftRole::BuildError}, text(e));
  return *this;
}

uint64_t CallEncoder::endCall() {
  Writer::Impl* w = impl_->w;
  struct BackToPool {  // returned whether the append succeeds or throws; owned by the writer again
    Writer::Impl* w;
    CallEncoder* e;
    ~BackToPool() { w->encoders.giveBack(e); }
  } back{w, this};
  return w->log.append(*impl_);
}

namespace detail {
namespace {

// Reads a draft's items in order and builds its FlatBuffer as the setters once built it directly.
class DraftEncoder {
 public:
  DraftEncoder(const std::byte* draft, flatbuffers::FlatBufferBuilder& b, EncodeScratch& args)
      : b_(b), at_(draft + sizeof(DraftHead)), end_(draft + head(draft).bytes), args_(args) {
    args_.clear();
  }
  static const DraftHead& head(const std::byte* d) { return *reinterpret_cast<const DraftHead*>(d); }

  void run(const DraftHead& h) {
    while (at_ < end_) {
      const DraftItem& it = next();
      switch (it.role) {
        case DraftRole::Arg: args_.push_back(value(it)); break;
        case DraftRole::Ret: ret_ = value(it); break;
        case DraftRole::Unsupported: unsup_ = string(); break;
        case DraftRole::Message: msg_ = string(); break;
        case DraftRole::Build: build_ = buildResult(it); break;
        case DraftRole::BuildError: break;  // read with its Build item
      }
    }
    auto args = b_.CreateVector(args_);
    b_.Finish(fb::CreateCall(b_, h.seq, h.thread, h.network, h.api, h.receiver, args, ret_,
                             static_cast<fb::CallStatus>(h.status), unsup_, h.slot, build_, msg_, h.synthesized));
  }

 private:
  const DraftItem& next() {
    item_ = reinterpret_cast<const DraftItem*>(at_);
    const std::byte* after = at_ + sizeof(DraftItem);
    wide_ = item_->wide ? *reinterpret_cast<const DraftWide*>(after) : DraftWide{};
    payload_ = after + (item_->wide ? sizeof(DraftWide) : 0);
    at_ = payload_ + padded(item_->payload);
    return *item_;
  }
  template <class T>
  std::span<const T> elements() const {
    return {reinterpret_cast<const T*>(payload_), item_->payload / sizeof(T)};
  }
  Offset<flatbuffers::String> string() {
    return b_.CreateString(reinterpret_cast<const char*>(payload_), item_->payload);
  }

  // One Value; its vectors first, in schema field order, as fb::CreateValue's callers build them.
  Offset<fb::Value> value(const DraftItem& it) {
    const bool ints = it.kind == VK::Dims || it.kind == VK::I64Array;
    auto s = it.kind == VK::String ? string() : Offset<flatbuffers::String>(0);
    auto iv = ints ? b_.CreateVector(elements<int64_t>().data(), elements<int64_t>().size())
                   : Offset<flatbuffers::Vector<int64_t>>(0);
    auto fv = it.kind == VK::F32Array ? b_.CreateVector(elements<float>().data(), elements<float>().size())
                                      : Offset<flatbuffers::Vector<float>>(0);
    auto hv = it.kind == VK::HandleArray ? b_.CreateVector(elements<uint64_t>().data(), elements<uint64_t>().size())
                                         : Offset<flatbuffers::Vector<uint64_t>>(0);
    auto bv = it.kind == VK::Bytes || it.kind == VK::WeightsInline
                  ? b_.CreateVector(reinterpret_cast<const uint8_t*>(payload_), it.payload)
                  : Offset<flatbuffers::Vector<uint8_t>>(0);
    const DraftWide& w = wide_;
    return fb::CreateValue(b_, it.kind, it.i, it.u, it.f, s, it.typeId, iv, fv, hv, bv, it.dtype, w.count, w.hashLo,
                           w.hashHi, w.length, w.seed, w.ptr);
  }

  Offset<fb::BuildResult> buildResult(const DraftItem& it) {
    const DraftWide result = wide_;
    std::vector<Offset<flatbuffers::String>> errs;
    for (uint64_t k = 0; k < it.u && at_ < end_; ++k) {
      next();
      errs.push_back(string());
    }
    return fb::CreateBuildResult(b_, it.i != 0, result.count, result.hashLo, result.hashHi, b_.CreateVector(errs));
  }

  flatbuffers::FlatBufferBuilder& b_;
  const std::byte* at_;
  const std::byte* end_;
  const DraftItem* item_ = nullptr;
  DraftWide wide_;  // item_'s, or zeros
  const std::byte* payload_ = nullptr;
  EncodeScratch& args_;  // the caller's, reused: no allocation per call
  Offset<fb::Value> ret_{0};
  Offset<flatbuffers::String> unsup_{0}, msg_{0};
  Offset<fb::BuildResult> build_{0};
};

}  // namespace

void encodeCall(const std::byte* draft, flatbuffers::FlatBufferBuilder& b, EncodeScratch& scratch) {
  b.Clear();
  DraftEncoder(draft, b, scratch).run(DraftEncoder::head(draft));
}

CallEncoder& EncoderPool::take(Writer* w) {
  if (CallEncoder* e = spare_.exchange(nullptr, std::memory_order_acquire)) [[likely]]
    return *e;
  return takeLocked(w);
}

CallEncoder& EncoderPool::takeLocked(Writer* w) {
  std::lock_guard g(mu_);
  if (!free_.empty()) {
    CallEncoder* e = free_.back();
    free_.pop_back();
    return *e;
  }
  all_.push_back(std::make_unique<CallEncoder>(w));
  return *all_.back();
}

void EncoderPool::giveBack(CallEncoder* e) {
  CallEncoder* none = nullptr;
  if (spare_.compare_exchange_strong(none, e, std::memory_order_release, std::memory_order_relaxed)) return;
  std::lock_guard g(mu_);
  free_.push_back(e);
}

}  // namespace detail
}  // namespace trtrace
