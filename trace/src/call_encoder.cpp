// Call encoder: CallEncoder's argument/return setters over one FlatBuffer per call, and the pool
// of encoders (see call_encoder.h).
#include "call_encoder.h"

#include "writer_impl.h"

namespace trtrace {

using flatbuffers::Offset;

void CallEncoder::Impl::reset(uint32_t a, uint64_t r, uint32_t n) {
  b.Clear();
  args.clear();
  ret = 0;
  unsupIface = 0;
  msg = 0;
  build = 0;
  slot = 0;
  api = a;
  receiver = r;
  network = n;
  status = CallStatus::Ok;
  synthesized = false;
  provisional = false;
}

Offset<fb::Value> CallEncoder::Impl::value(fb::ValueKind kind, int64_t i, uint64_t u, double f, std::string_view str,
                                           uint32_t typeId, std::span<const int64_t> ints,
                                           std::span<const float> floats, std::span<const uint64_t> handles,
                                           std::span<const std::byte> bytes, uint32_t dtype, uint64_t count,
                                           const BlobRef* blob, uint64_t seed, uint64_t ptr) {
  bool isStr = kind == fb::ValueKind::String;
  auto s = isStr ? b.CreateString(str.data(), str.size()) : Offset<flatbuffers::String>(0);
  auto iv = ints.empty() && kind != fb::ValueKind::Dims && kind != fb::ValueKind::I64Array
                ? Offset<flatbuffers::Vector<int64_t>>(0)
                : b.CreateVector(ints.data(), ints.size());
  auto fv = kind == fb::ValueKind::F32Array ? b.CreateVector(floats.data(), floats.size())
                                            : Offset<flatbuffers::Vector<float>>(0);
  auto hv = kind == fb::ValueKind::HandleArray ? b.CreateVector(handles.data(), handles.size())
                                               : Offset<flatbuffers::Vector<uint64_t>>(0);
  auto bv = kind == fb::ValueKind::Bytes || kind == fb::ValueKind::WeightsInline
                ? b.CreateVector(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())
                : Offset<flatbuffers::Vector<uint8_t>>(0);
  provisional = provisional || (blob && provisionalBlob(*blob));
  return fb::CreateValue(b, kind, i, u, f, s, typeId, iv, fv, hv, bv, dtype, count, blob ? blob->hash.lo : 0,
                         blob ? blob->hash.hi : 0, blob ? blob->length : 0, seed, ptr);
}

CallEncoder::CallEncoder(Writer* w) : impl_(std::make_unique<Impl>()) { impl_->w = w->impl_.get(); }
CallEncoder::~CallEncoder() = default;

using VK = fb::ValueKind;
#define TRT_VALUE_PAIR(NAME, PARAMS, ...)             \
  CallEncoder& CallEncoder::arg##NAME PARAMS {        \
    impl_->args.push_back(impl_->value(__VA_ARGS__)); \
    return *this;                                     \
  }                                                   \
  CallEncoder& CallEncoder::ret##NAME PARAMS {        \
    impl_->ret = impl_->value(__VA_ARGS__);           \
    return *this;                                     \
  }
TRT_VALUE_PAIR(Null, (), VK::Null)
TRT_VALUE_PAIR(Bool, (bool v), VK::Bool, v ? 1 : 0)
TRT_VALUE_PAIR(I64, (int64_t v), VK::I64, v)
TRT_VALUE_PAIR(U64, (uint64_t v), VK::U64, 0, v)
TRT_VALUE_PAIR(F32, (float v), VK::F32, 0, 0, double(v))
TRT_VALUE_PAIR(F64, (double v), VK::F64, 0, 0, v)
TRT_VALUE_PAIR(String, (std::string_view v), VK::String, 0, 0, 0, v)
TRT_VALUE_PAIR(Enum, (uint32_t typeId, int64_t value), VK::Enum, value, 0, 0, {}, typeId)
TRT_VALUE_PAIR(Dims, (std::span<const int64_t> d), VK::Dims, 0, 0, 0, {}, 0, d)
TRT_VALUE_PAIR(Handle, (uint64_t h, uint32_t typeId), VK::Handle, 0, h, 0, {}, typeId)
TRT_VALUE_PAIR(HandleArray, (std::span<const uint64_t> h), VK::HandleArray, 0, 0, 0, {}, 0, {}, {}, h)
TRT_VALUE_PAIR(I64Array, (std::span<const int64_t> v), VK::I64Array, 0, 0, 0, {}, 0, v)
TRT_VALUE_PAIR(F32Array, (std::span<const float> v), VK::F32Array, 0, 0, 0, {}, 0, {}, v)
TRT_VALUE_PAIR(Bytes, (std::span<const std::byte> v), VK::Bytes, 0, 0, 0, {}, 0, {}, {}, {}, v)
TRT_VALUE_PAIR(WeightsInline, (uint32_t dtype, uint64_t count, std::span<const std::byte> bytes, uint64_t ptr),
               VK::WeightsInline, 0, 0, 0, {}, 0, {}, {}, {}, bytes, dtype, count, nullptr, 0, ptr)
TRT_VALUE_PAIR(WeightsBlob, (uint32_t dtype, uint64_t count, const BlobRef& blob, uint64_t ptr), VK::WeightsBlob, 0, 0,
               0, {}, 0, {}, {}, {}, {}, dtype, count, &blob, 0, ptr)
TRT_VALUE_PAIR(WeightsRandom, (uint32_t dtype, uint64_t count, uint64_t seed, uint64_t ptr), VK::WeightsRandom, 0, 0, 0,
               {}, 0, {}, {}, {}, {}, dtype, count, nullptr, seed, ptr)
#undef TRT_VALUE_PAIR
CallEncoder& CallEncoder::status(CallStatus s) {
  impl_->status = s;
  return *this;
}
CallEncoder& CallEncoder::unsupported(std::string_view iface, uint32_t slot) {
  impl_->status = CallStatus::Unsupported;
  impl_->unsupIface = impl_->b.CreateString(iface.data(), iface.size());
  impl_->slot = slot;
  return *this;
}
CallEncoder& CallEncoder::message(std::string_view text) {
  impl_->msg = impl_->b.CreateString(text.data(), text.size());
  return *this;
}
CallEncoder& CallEncoder::synthesized() {
  impl_->synthesized = true;
  return *this;
}
CallEncoder& CallEncoder::buildResult(bool ok, uint64_t engineSize, const Hash128& h,
                                      std::span<const std::string> errors) {
  auto& b = impl_->b;
  std::vector<Offset<flatbuffers::String>> errs;
  for (auto& e : errors) errs.push_back(b.CreateString(e));
  impl_->build = fb::CreateBuildResult(b, ok, engineSize, h.lo, h.hi, b.CreateVector(errs));
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

CallEncoder& EncoderPool::take(Writer* w) {
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
  std::lock_guard g(mu_);
  free_.push_back(e);
}

}  // namespace detail
}  // namespace trtrace
