// Our stand-in objects and the recording of one call (Call).
#include <pthread.h>

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <vector>

#include "object_pool.h"
#include "session.h"
#include "shim.h"
#include "trt_values.h"

namespace trtrace::capture {

extern const Iface* const kAllIfaces[];
extern const size_t kNumIfaces;

namespace {

// Builds and publishes gOurVtables (shim.h) from one object of each class, made and freed here.
const VtableBits* makeVtableBits() {
  std::vector<uintptr_t> vptrs;
  for (size_t i = 0; i < kNumIfaces; ++i) {
    Object* o = kAllIfaces[i]->make(nullptr);
    vptrs.push_back(*reinterpret_cast<const uintptr_t*>(o));
    o->disposing = true;
    delete o;
  }
  constexpr uintptr_t kWord = sizeof(void*);
  auto* v = new VtableBits();  // lives for the process (read by inline ours(), on any thread)
  v->lo = *std::min_element(vptrs.begin(), vptrs.end());
  v->words = (*std::max_element(vptrs.begin(), vptrs.end()) - v->lo) / kWord / 64 + 1;
  auto* bits = new uint64_t[v->words]();
  for (uintptr_t p : vptrs) {
    const uintptr_t w = (p - v->lo) / kWord;
    bits[w / 64] |= uint64_t{1} << (w % 64);
  }
  v->bits = bits;
  gOurVtables.store(v, std::memory_order_release);
  return v;
}

// Before any object of ours exists, so that ours() knows every one.
void publishVtables() {
  static const VtableBits* v = makeVtableBits();
  (void)v;
}

// Frees our objects owned by `o` (the real ones die with their owner inside the library).
void disposeOwned(Object* o) {
  if (o->owned.empty()) return;
  const std::vector<Object*> owned = Session::get().objects().releaseOwned(o);
  for (size_t i = 0; i < owned.size(); ++i) {
    if (i + 8 < owned.size()) __builtin_prefetch(owned[i + 8]);  // misses overlap (registry.h)
    owned[i]->disposing = true;
    delete owned[i];
  }
}

[[gnu::always_inline]] inline ObjectPool& pool() {  // inline: asked for every object made and freed
  static ObjectPool* p = new ObjectPool();          // never destroyed: objects may outlive static destruction
  return *p;
}

// DUMP_API indentation; also guards re-entrant recording. Initial-exec: read twice per call without
// a call into the dynamic linker (4 bytes of the static TLS room a dlopen'ed library may use).
thread_local int tDepth __attribute__((tls_model("initial-exec"))) = 0;

}  // namespace

bool callInProgress() noexcept { return tDepth > 0; }

Object::Object(void* realObject, const Iface* i) : real(realObject), iface(i) {}

void* Object::operator new(size_t bytes) { return pool().take(bytes); }
void Object::operator delete(void* p, size_t bytes) noexcept { pool().give(p, bytes); }
void Object::afterFork() { pool().afterFork(); }

Object::~Object() {
  disposeOwned(this);
  if (disposing || !real) return;
  // The application deleted the public object.
  { Call c(this, iface->destroyApi, false, network); }
  if (iface == &kIfaceNetworkDefinition) {
    forgetWeights(network);
    Session::get().drain();
  }
  Session::get().objects().unregister(this);
  delete static_cast<abi::PublicRoot*>(real);
}

void forget(const void* pub) {
  if (Object* o = ours(pub)) Session::get().objects().unmap(o);
}

// Whose lifetime ends that of an object `returner`'s call returned: the nearest object up its chain
// that ends apart from its owner (Iface::diesAlone).
static Object* ownerFor(Object* returner) {
  while (returner && !returner->iface->diesAlone && returner->owner) returner = returner->owner;
  return returner;
}

Object* wrap(const void* real, const Iface& iface, Object* owner, uint32_t network) {
  publishVtables();
  return Session::get().objects().wrap(real, iface.make, iface.appOwned ? nullptr : ownerFor(owner), network);
}

// ------------------------------------------------------------------------------------------------
// Call
// ------------------------------------------------------------------------------------------------
namespace {
// TRT_SHIM_DUMP_API: one line as a call enters or leaves, indented by the thread's depth.
[[gnu::cold]] void dumpCall(const char* what, int depth, uint32_t apiId) {
  const api::ApiDesc* d = api::find(apiId);
  std::fprintf(stderr, "trtrace: %*s%s %.*s::%.*s\n", 2 * depth, "", what, d ? int(d->interface.size()) : 0,
               d ? d->interface.data() : "", d ? int(d->method.size()) : 0, d ? d->method.data() : "");
}
}  // namespace

Call::Call(Object* self, uint32_t apiId, bool unsupported, uint32_t networkHint)
    : self_(self), api_(apiId), network_(self && self->network ? self->network : networkHint) {
  Session& s = Session::get();
  if (s.config().singleThread || s.config().dumpApi) [[unlikely]]
    enterRarely();
  ++tDepth;
  s.guarded([&](Writer& w) {
    s.callStarting();
    enc_ = &w.beginCall(apiId, self ? self->handle : 0, network_);
  });
  if (unsupported) [[unlikely]]
    recordUnsupported();
}

// The settings few captures use, apart from the lines every call runs.
void Call::enterRarely() {
  const Config& c = Session::get().config();
  if (c.singleThread) {
    apiLock().lock();
    serialized_ = true;
  }
  if (c.dumpApi) dumpCall("enter", tDepth, api_);
}
void Call::leaveRarely(int depth) {
  if (Session::get().config().dumpApi) dumpCall("exit ", depth, api_);
  if (serialized_) apiLock().unlock();
}

void Call::recordUnsupported() {
  const api::ApiDesc* d = api::find(api_);
  record([&](CallEncoder& e) { e.unsupported(d ? d->interface : "?", d ? static_cast<uint32_t>(d->slot) : 0); });
}

void Call::fail(const char* why) noexcept {
  enc_ = nullptr;  // this call is not recorded (the writer frees the encoder with itself)
  Session::get().disable(why);
}

Call::~Call() {
  const int depth = --tDepth;
  Session& s = Session::get();
  if (enc_) {
    record([](CallEncoder& e) { e.endCall(); });
    s.afterCall();
    if (!passed_.empty()) weightsBound(api_, self_, created_, passed_.all());
  }
  if (depth == 0 && s.jsonExport()) JsonExport::forgetBlobs();  // the thread's outermost call is over
  if (s.config().dumpApi || serialized_) [[unlikely]]
    leaveRarely(depth);
}

void Call::argString(const char* s) {
  record([&](CallEncoder& e) { s ? e.argString(s) : e.argNull(); });
}
// One Dims64 (argument or result) as lib::travelsAsDims says: its extents, or its nbDims alone.
template <class AsDims, class AsNbDims>
void putDims(const abi::Dims64& d, AsDims asDims, AsNbDims asNbDims) {
  const int64_t n = d.nbDims;
  if (lib::travelsAsDims(n))
    asDims(std::span<const int64_t>(d.d, static_cast<size_t>(n)));
  else
    asNbDims(std::span<const int64_t>(&n, 1));
}

void Call::argDims(const abi::Dims64& d) {
  record([&](CallEncoder& e) {
    putDims(
        d, [&](auto s) { e.argDims(s); }, [&](auto s) { e.argI64Array(s); });
  });
}

void Call::synthesized() {
  record([](CallEncoder& e) {
    e.synthesized().message(
        "synthesized by the capture: the application changed these weights in place after "
        "passing them, and the library reads them at build");
  });
}

void Call::argWeights(const abi::Weights& w) {
  Session& s = Session::get();
  const uint32_t dtype = static_cast<uint32_t>(w.type);
  const uint64_t count = w.count > 0 ? static_cast<uint64_t>(w.count) : 0;
  const uint64_t bytes = abi::weightBytes(w.type, w.count);
  record([&](CallEncoder& e) {
    PassedWeights& passed = passed_.add(PassedWeights{w, bytes, {}, false, false});  // one per weights argument
    if (!w.values || count == 0) {
      e.argWeightsInline(dtype, count, {});
      return;
    }
    // The library tells weights apart by pointer (setWeightsName refuses one pointer with two counts
    // or types): the pointer's identity is recorded with the content, and replay reproduces it.
    const uint64_t ptr = s.weights().of(w.values);
    if (w.count <= s.config().inlineMax) {
      e.argWeightsInline(dtype, count, {static_cast<const std::byte*>(w.values), bytes}, ptr);
      passed.hash = hash128(w.values, bytes);
      passed.watched = true;
    } else if (w.count >= s.config().randomMin) {
      e.argWeightsRandom(dtype, count, s.weights().nextRandomSeed(), ptr);
    } else {
      // Read, hashed and written once, off this thread (WriterOptions::deferKeys: the call record
      // names the put until a worker has read the bytes; docs/design.md, "Capture cost").
      Writer* wr = s.writer();
      const BlobRef ref = wr ? wr->putBlob(w.values, bytes, lib::blobHint(w.type)) : BlobRef{};
      if (wr && s.jsonExport()) JsonExport::noteBlob(ref, w.values);  // its BIN bytes, when the call ends
      e.argWeightsBlob(dtype, count, ref, ptr);
      passed = {w, bytes, ref.hash, wr != nullptr, true};
    }
  });
}

void Call::argStruct(const void* p, size_t n) {
  record([&](CallEncoder& e) { e.argBytes({static_cast<const std::byte*>(p), n}); });
}
void Call::argHandleList(const void* const* a, int64_t n) {
  record([&](CallEncoder& e) {
    if (!a || n < 0) {
      e.argNull();
      return;
    }
    std::vector<uint64_t> h;
    h.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      Object* o = ours(a[i]);
      h.push_back(o ? o->handle : 0);
    }
    e.argHandleArray(h);
  });
}
void Call::argBytes(const void* p, int64_t n) {
  record([&](CallEncoder& e) {
    !p || n < 0 ? e.argNull() : e.argBytes({static_cast<const std::byte*>(p), static_cast<size_t>(n)});
  });
}
void Call::argStrings(const char* const* s, int64_t n) {
  record([&](CallEncoder& e) {
    if (!s || n < 0) {
      e.argNull();
      return;
    }
    std::string joined;  // NUL-separated
    for (int64_t i = 0; i < n; ++i) {
      if (s[i]) joined += s[i];
      joined.push_back('\0');
    }
    e.argBytes({reinterpret_cast<const std::byte*>(joined.data()), joined.size()});
  });
}
void Call::argOut() {
  record([](CallEncoder& e) { e.argNull(); });
}
void Call::argForeign(bool nonNull) {
  // Application objects (loggers, recorders, allocators) cannot travel: recorded as present/absent.
  record([&](CallEncoder& e) { nonNull ? e.argBool(true) : e.argNull(); });
}

void Call::retString(const char* s) {
  record([&](CallEncoder& e) { s ? e.retString(s) : e.retNull(); });
}
void Call::retDims(const abi::Dims64& d) {
  record([&](CallEncoder& e) {
    putDims(
        d, [&](auto s) { e.retDims(s); }, [&](auto s) { e.retI64Array(s); });
  });
}
void Call::retOther() {}

void* Call::retHandle(const void* real, const Iface& iface) {
  if (!real) {
    record([](CallEncoder& e) { e.retNull().status(CallStatus::Failed); });
    return nullptr;
  }
  Session& s = Session::get();
  void* result = const_cast<void*>(real);  // capture failed (out of memory): the real object, unrecorded
  auto wrapIt = [&] {
    uint32_t net = network_;
    if (&iface == &kIfaceNetworkDefinition && !s.objects().find(real)) net = s.objects().newNetworkId();
    Object* o = wrap(real, iface, self_, net);
    result = created_ = o;
    return o->handle;
  };
  if (enc_) {
    record([&](CallEncoder& e) { e.retHandle(wrapIt()); });
  } else {
    try {
      wrapIt();
    } catch (...) {}
  }
  return result;
}

}  // namespace trtrace::capture
