// Our stand-in objects and the recording of one call (Call).
#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "session.h"
#include "shim.h"

namespace trtrace::capture {

extern const Iface* const kAllIfaces[];
extern const size_t kNumIfaces;

namespace {

// The vtable pointer of every Object class: a pointer is ours iff its first word is one of them.
const std::vector<const void*>& ourVtables() {
  static const std::vector<const void*> v = [] {
    std::vector<const void*> out;
    for (size_t i = 0; i < kNumIfaces; ++i) {
      Object* o = kAllIfaces[i]->make(nullptr);
      out.push_back(*reinterpret_cast<const void* const*>(o));
      o->disposing = true;
      delete o;
    }
    std::sort(out.begin(), out.end());
    return out;
  }();
  return v;
}

// Frees our objects owned by `o` (the real ones die with their owner inside the library).
void disposeOwned(Object* o) {
  std::vector<Object*> owned;
  owned.swap(o->owned);
  for (Object* c : owned) {
    c->owner = nullptr;
    c->disposing = true;
    Session::get().unregister(c);
    delete c;
  }
}

thread_local int tDepth = 0;  // DUMP_API indentation; also guards re-entrant recording

}  // namespace

Object::Object(void* realObject, const Iface* i) : real(realObject), iface(i) {}

Object::~Object() {
  disposeOwned(this);
  if (disposing || !real) return;
  // The application deleted the public object.
  {
    Call c(this, iface->destroyApi, false, network);
  }
  if (iface->destroyApi && std::string_view(iface->name) == "NetworkDefinition") Session::get().drain();
  Session::get().unregister(this);
  delete static_cast<abi::PublicRoot*>(real);
}

Object* ours(const void* pub) {
  if (!pub) return nullptr;
  const auto& v = ourVtables();
  const void* vptr = *static_cast<const void* const*>(pub);
  return std::binary_search(v.begin(), v.end(), vptr) ? static_cast<Object*>(const_cast<void*>(pub)) : nullptr;
}

void* unwrap(const void* pub) {
  if (Object* o = ours(pub)) return o->real;
  return const_cast<void*>(pub);
}

void forget(const void* pub) {
  if (Object* o = ours(pub)) {
    o->disposing = true;
    Session::get().unregister(o);
    delete o;
  }
}

Object* wrap(const void* real, const Iface& iface, Object* owner, uint32_t network) {
  return Session::get().wrap(real, iface, owner, network);
}

// ------------------------------------------------------------------------------------------------
// Call
// ------------------------------------------------------------------------------------------------
Call::Call(Object* self, uint32_t apiId, bool unsupported, uint32_t networkHint)
    : self_(self), api_(apiId), network_(self && self->network ? self->network : networkHint) {
  Session& s = Session::get();
  if (s.config().dumpApi) {
    const api::ApiDesc* d = api::find(apiId);
    std::fprintf(stderr, "trtrace: %*senter %.*s::%.*s\n", 2 * tDepth, "", d ? int(d->interface.size()) : 0,
                 d ? d->interface.data() : "", d ? int(d->method.size()) : 0, d ? d->method.data() : "");
  }
  ++tDepth;
  if (Writer* w = s.writer()) {
    s.callStarting();
    enc_ = &w->beginCall(apiId, self ? self->handle : 0, network_);
    if (unsupported) {
      const api::ApiDesc* d = api::find(apiId);
      enc_->unsupported(d ? d->interface : "?", d ? static_cast<uint32_t>(d->slot) : 0);
    }
  }
}

Call::~Call() {
  --tDepth;
  Session& s = Session::get();
  if (enc_) {
    try {
      enc_->endCall();
    } catch (const std::exception& e) {
      s.disable(e.what());
    }
    s.afterCall();
  }
  if (s.config().dumpApi) {
    const api::ApiDesc* d = api::find(api_);
    std::fprintf(stderr, "trtrace: %*sexit  %.*s::%.*s\n", 2 * tDepth, "", d ? int(d->interface.size()) : 0,
                 d ? d->interface.data() : "", d ? int(d->method.size()) : 0, d ? d->method.data() : "");
  }
}

void Call::argBool(bool v) { if (enc_) enc_->argBool(v); }
void Call::argI64(int64_t v) { if (enc_) enc_->argI64(v); }
void Call::argU64(uint64_t v) { if (enc_) enc_->argU64(v); }
void Call::argF32(float v) { if (enc_) enc_->argF32(v); }
void Call::argF64(double v) { if (enc_) enc_->argF64(v); }
void Call::argEnum(uint32_t t, int64_t v) { if (enc_) enc_->argEnum(t, v); }
void Call::argString(const char* s) {
  if (!enc_) return;
  if (s) enc_->argString(s); else enc_->argNull();
}
void Call::argDims(const abi::Dims64& d) {
  if (!enc_) return;
  // nbDims outside [0, 8] (e.g. -1 for "invalid") is kept as a one-element array holding nbDims
  // under the I64Array kind, so the exact value replays.
  if (d.nbDims < 0 || d.nbDims > 8) {
    int64_t n = d.nbDims;
    enc_->argI64Array({&n, 1});
    return;
  }
  enc_->argDims({d.d, static_cast<size_t>(d.nbDims)});
}

static BlobHint hintFor(abi::DataType t) {
  switch (t) {
    case abi::DataType::kFLOAT: return BlobHint::F32;
    case abi::DataType::kHALF: return BlobHint::F16;
    case abi::DataType::kBF16: return BlobHint::BF16;
    default: return BlobHint::None;
  }
}

void Call::argWeights(const abi::Weights& w) {
  if (!enc_) return;
  Session& s = Session::get();
  const uint32_t dtype = static_cast<uint32_t>(w.type);
  const uint64_t count = w.count > 0 ? static_cast<uint64_t>(w.count) : 0;
  const uint64_t bytes = abi::weightBytes(w.type, w.count);
  if (!w.values || count == 0) {
    enc_->argWeightsInline(dtype, count, {});
    return;
  }
  // The library tells weights apart by pointer (setWeightsName refuses one pointer with two counts
  // or types): the pointer's identity is recorded with the content, and replay reproduces it.
  const uint64_t ptr = s.weightsIdentity(w.values);
  if (w.count <= s.config().inlineMax) {
    enc_->argWeightsInline(dtype, count, {static_cast<const std::byte*>(w.values), bytes}, ptr);
  } else if (w.count >= s.config().randomMin) {
    enc_->argWeightsRandom(dtype, count, s.nextRandomSeed(), ptr);
  } else {
    // Hashed here, on the application's thread, at the call; written once, off this thread.
    BlobRef ref = s.writer() ? s.writer()->putBlob(w.values, bytes, hintFor(w.type)) : BlobRef{};
    enc_->argWeightsBlob(dtype, count, ref, ptr);
  }
}

void Call::argStruct(const void* p, size_t n) {
  if (enc_) enc_->argBytes({static_cast<const std::byte*>(p), n});
}
void Call::argHandle(const void* pub) {
  if (!enc_) return;
  if (!pub) { enc_->argNull(); return; }
  Object* o = ours(pub);
  enc_->argHandle(o ? o->handle : 0);
}
void Call::argHandleList(const void* const* a, int64_t n) {
  if (!enc_) return;
  if (!a || n < 0) { enc_->argNull(); return; }
  std::vector<uint64_t> h;
  h.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    Object* o = ours(a[i]);
    h.push_back(o ? o->handle : 0);
  }
  enc_->argHandleArray(h);
}
void Call::argBytes(const void* p, int64_t n) {
  if (!enc_) return;
  if (!p || n < 0) { enc_->argNull(); return; }
  enc_->argBytes({static_cast<const std::byte*>(p), static_cast<size_t>(n)});
}
void Call::argStrings(const char* const* s, int64_t n) {
  if (!enc_) return;
  if (!s || n < 0) { enc_->argNull(); return; }
  std::string joined;  // NUL-separated
  for (int64_t i = 0; i < n; ++i) {
    if (s[i]) joined += s[i];
    joined.push_back('\0');
  }
  enc_->argBytes({reinterpret_cast<const std::byte*>(joined.data()), joined.size()});
}
void Call::argOut() { if (enc_) enc_->argNull(); }
void Call::argForeign(bool nonNull) {
  // Application objects (loggers, recorders, allocators) cannot travel: recorded as present/absent.
  if (enc_) { if (nonNull) enc_->argBool(true); else enc_->argNull(); }
}

void Call::retBool(bool v) { if (enc_) enc_->retBool(v); }
void Call::retI64(int64_t v) { if (enc_) enc_->retI64(v); }
void Call::retU64(uint64_t v) { if (enc_) enc_->retU64(v); }
void Call::retF32(float v) { if (enc_) enc_->retF32(v); }
void Call::retF64(double v) { if (enc_) enc_->retF64(v); }
void Call::retEnum(uint32_t t, int64_t v) { if (enc_) enc_->retEnum(t, v); }
void Call::retString(const char* s) {
  if (!enc_) return;
  if (s) enc_->retString(s); else enc_->retNull();
}
void Call::retDims(const abi::Dims64& d) {
  if (!enc_) return;
  if (d.nbDims < 0 || d.nbDims > 8) {
    int64_t n = d.nbDims;
    enc_->retI64Array({&n, 1});
    return;
  }
  enc_->retDims({d.d, static_cast<size_t>(d.nbDims)});
}
void Call::retOther() {}

void* Call::retHandle(const void* real, const Iface& iface) {
  if (!real) {
    if (enc_) { enc_->retNull(); enc_->status(CallStatus::Failed); }
    return nullptr;
  }
  Session& s = Session::get();
  uint32_t net = network_;
  if (std::string_view(iface.name) == "NetworkDefinition" && !s.find(real)) net = s.newNetworkId();
  Object* o = s.wrap(real, iface, self_, net);
  if (enc_) enc_->retHandle(o->handle);
  return o;
}

}  // namespace trtrace::capture
