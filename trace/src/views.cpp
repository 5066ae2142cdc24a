// Views: ValueView and CallView over the FlatBuffers of the call log (zero-copy accessors and the
// one-line rendering dump uses), and the VerifyReport queries.
#include <algorithm>
#include <cinttypes>

#include "internal.h"
#include "trtrace/reader.h"

// The public enums copy the schema's numbering (trace.fbs): each value checked here, so a schema
// change that moves one fails the build instead of misreading traces.
#define TRTRACE_SAME_AS_SCHEMA(E, v) \
  static_assert(static_cast<int>(trtrace::E::v) == static_cast<int>(trtrace::fb::E::v), #E "::" #v)
TRTRACE_SAME_AS_SCHEMA(ValueKind, Null);
TRTRACE_SAME_AS_SCHEMA(ValueKind, Bool);
TRTRACE_SAME_AS_SCHEMA(ValueKind, I64);
TRTRACE_SAME_AS_SCHEMA(ValueKind, U64);
TRTRACE_SAME_AS_SCHEMA(ValueKind, F32);
TRTRACE_SAME_AS_SCHEMA(ValueKind, F64);
TRTRACE_SAME_AS_SCHEMA(ValueKind, String);
TRTRACE_SAME_AS_SCHEMA(ValueKind, Enum);
TRTRACE_SAME_AS_SCHEMA(ValueKind, Dims);
TRTRACE_SAME_AS_SCHEMA(ValueKind, Handle);
TRTRACE_SAME_AS_SCHEMA(ValueKind, HandleArray);
TRTRACE_SAME_AS_SCHEMA(ValueKind, I64Array);
TRTRACE_SAME_AS_SCHEMA(ValueKind, F32Array);
TRTRACE_SAME_AS_SCHEMA(ValueKind, Bytes);
TRTRACE_SAME_AS_SCHEMA(ValueKind, WeightsInline);
TRTRACE_SAME_AS_SCHEMA(ValueKind, WeightsBlob);
TRTRACE_SAME_AS_SCHEMA(ValueKind, WeightsRandom);
static_assert(static_cast<int>(trtrace::fb::ValueKind::MAX) == static_cast<int>(trtrace::ValueKind::WeightsRandom),
              "trace.fbs has a ValueKind reader.h lacks");
TRTRACE_SAME_AS_SCHEMA(CallStatus, Ok);
TRTRACE_SAME_AS_SCHEMA(CallStatus, Failed);
TRTRACE_SAME_AS_SCHEMA(CallStatus, Unsupported);
TRTRACE_SAME_AS_SCHEMA(CallStatus, Exception);
static_assert(static_cast<int>(trtrace::fb::CallStatus::MAX) == static_cast<int>(trtrace::CallStatus::Exception),
              "trace.fbs has a CallStatus writer.h lacks");
#undef TRTRACE_SAME_AS_SCHEMA

namespace trtrace {
using detail::sv;
namespace {
template <class T, class V>
std::span<const T> spanOf(const flatbuffers::Vector<V>* v) {
  // Empty arrays may lie 4-aligned (see checkCallRecord); non-empty ones were checked with their segment.
  if (!v || v->size() == 0) return {};
  return {reinterpret_cast<const T*>(v->data()), v->size()};
}
}  // namespace

std::string_view kindName(ValueKind k) { return fb::EnumNameValueKind(static_cast<fb::ValueKind>(k)); }

std::string_view statusName(CallStatus s) { return fb::EnumNameCallStatus(static_cast<fb::CallStatus>(s)); }

ValueKind ValueView::kind() const { return v_ ? static_cast<ValueKind>(v_->kind()) : ValueKind::Null; }
bool ValueView::asBool() const { return v_ && v_->i() != 0; }
int64_t ValueView::asI64() const { return v_ ? v_->i() : 0; }
uint64_t ValueView::asU64() const { return v_ ? v_->u() : 0; }
double ValueView::asF64() const { return v_ ? v_->f() : 0; }
std::string_view ValueView::asString() const { return v_ ? sv(v_->str()) : std::string_view(); }
uint32_t ValueView::typeId() const { return v_ ? v_->type_id() : 0; }
std::span<const int64_t> ValueView::ints() const {
  return v_ ? spanOf<int64_t>(v_->ints()) : std::span<const int64_t>();
}
std::span<const float> ValueView::floats() const { return v_ ? spanOf<float>(v_->floats()) : std::span<const float>(); }
std::span<const uint64_t> ValueView::handles() const {
  return v_ ? spanOf<uint64_t>(v_->handles()) : std::span<const uint64_t>();
}
std::span<const std::byte> ValueView::bytes() const {
  return v_ ? spanOf<std::byte>(v_->bytes()) : std::span<const std::byte>();
}
uint32_t ValueView::dtype() const { return v_ ? v_->dtype() : 0; }
uint64_t ValueView::count() const { return v_ ? v_->count() : 0; }
BlobRef ValueView::blob() const { return v_ ? BlobRef{{v_->hash_lo(), v_->hash_hi()}, v_->length()} : BlobRef{}; }
uint64_t ValueView::seed() const { return v_ ? v_->seed() : 0; }
uint64_t ValueView::weightsPtr() const { return v_ ? v_->ptr() : 0; }

std::string ValueView::toString() const {
  char buf[96];
  auto list = [](auto sp, auto fmt) {
    std::string s = "[";
    for (size_t i = 0; i < sp.size(); ++i) {
      if (i == 16) {
        s += ", ...(" + std::to_string(sp.size()) + ")";
        break;
      }
      if (i) s += ", ";
      s += fmt(sp[i]);
    }
    return s + "]";
  };
  auto num = [&](double d) {
    snprintf(buf, sizeof buf, "%.9g", d);
    return std::string(buf);
  };
  auto hex = [&](uint64_t h) {
    snprintf(buf, sizeof buf, "0x%" PRIx64, h);
    return std::string(buf);
  };
  switch (kind()) {
    case ValueKind::Null: return "null";
    case ValueKind::Bool: return asBool() ? "true" : "false";
    case ValueKind::I64: return std::to_string(asI64());
    case ValueKind::U64: return std::to_string(asU64());
    case ValueKind::F32:
    case ValueKind::F64: return num(asF64());
    case ValueKind::String: return "\"" + std::string(asString()) + "\"";
    case ValueKind::Enum: return "enum" + std::to_string(typeId()) + ":" + std::to_string(asI64());
    case ValueKind::Dims: return "dims" + list(ints(), [](int64_t x) { return std::to_string(x); });
    case ValueKind::Handle: return "@" + hex(asU64());
    case ValueKind::HandleArray: return list(handles(), [&](uint64_t x) { return "@" + hex(x); });
    case ValueKind::I64Array: return list(ints(), [](int64_t x) { return std::to_string(x); });
    case ValueKind::F32Array: return list(floats(), [&](float x) { return num(x); });
    case ValueKind::Bytes: return "bytes(" + std::to_string(bytes().size()) + ")";
    case ValueKind::WeightsInline:
      return "weights(dtype=" + std::to_string(dtype()) + ", count=" + std::to_string(count()) + ", inline " +
             std::to_string(bytes().size()) + " B)";
    case ValueKind::WeightsBlob:
      return "weights(dtype=" + std::to_string(dtype()) + ", count=" + std::to_string(count()) + ", blob " +
             toHex(blob().hash) + " " + std::to_string(blob().length) + " B)";
    case ValueKind::WeightsRandom:
      return "weights(dtype=" + std::to_string(dtype()) + ", count=" + std::to_string(count()) +
             ", random seed=" + std::to_string(seed()) + ")";
  }
  return "?";
}

uint64_t CallView::seq() const { return c_->seq(); }
uint64_t CallView::thread() const { return c_->thread(); }
uint32_t CallView::networkId() const { return c_->network(); }
uint32_t CallView::apiId() const { return c_->api(); }
uint64_t CallView::receiver() const { return c_->receiver(); }
size_t CallView::argCount() const { return c_->args() ? c_->args()->size() : 0; }
ValueView CallView::arg(size_t i) const { return ValueView(i < argCount() ? c_->args()->Get(i) : nullptr); }
std::optional<ValueView> CallView::ret() const {
  if (!c_->ret()) return std::nullopt;
  return ValueView(c_->ret());
}
CallStatus CallView::status() const { return static_cast<CallStatus>(c_->status()); }
std::string_view CallView::unsupportedInterface() const { return sv(c_->unsupported_interface()); }
uint32_t CallView::unsupportedSlot() const { return c_->unsupported_slot(); }
std::string_view CallView::message() const { return sv(c_->message()); }
bool CallView::synthesized() const { return c_->synthesized(); }
std::optional<BuildResultView> CallView::buildResult() const {
  auto* b = c_->build();
  if (!b) return std::nullopt;
  BuildResultView r;
  r.ok = b->ok();
  r.engineSize = b->engine_size();
  r.engineHash = {b->engine_hash_lo(), b->engine_hash_hi()};
  if (b->errors())
    for (auto* e : *b->errors()) r.errors.push_back(sv(e));
  return r;
}

bool VerifyReport::corrupt() const {
  return std::any_of(issues.begin(), issues.end(), [](auto& i) { return i.problem == Problem::Corrupt; });
}
bool VerifyReport::truncated() const {
  return !corrupt() &&
         std::any_of(issues.begin(), issues.end(), [](auto& i) { return i.problem == Problem::Truncated; });
}

}  // namespace trtrace
