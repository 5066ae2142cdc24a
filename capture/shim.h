// Capture runtime: the pieces the generated recording wrappers (capture_gen.inc) stand on.
//
// Every object the real library hands to the application is replaced by an Object of ours whose
// first bytes mirror the public class ({vptr, one V-pointer per chain level}); the V-pointers lead
// to generated Shim<Name> classes that record each call and forward it to the real object.
#pragma once
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <new>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "library.h"
#include "trtrace/api_abi.h"
#include "trtrace/api_table.h"
#include "trtrace/writer.h"

namespace trtrace::capture {

struct Object;

// What the generator knows about an interface: name, public chain length, destroy API id, factory.
struct Iface {
  const char* name;
  int levels;
  bool appOwned;  // the application deletes these (builder, network, config, host memory)
  // Ends apart from its owner: app-owned, or destroyed by a call (@destroys: a removed tensor). The
  // objects another one's calls return are owned by the nearest such object (a layer's outputs die
  // with the network, not with the layer), so that one network's deletion frees all its objects.
  bool diesAlone;
  uint32_t destroyApi;
  Object* (*make)(void* real);
};

// The network's descriptor (generated): a network opens a network scope, and its destruction lets
// its queued weights go.
extern const Iface kIfaceNetworkDefinition;

inline constexpr int kMaxLevels = 4;

// Our stand-in for one public object. Layout-compatible prefix: the vptr (its only virtual
// function is the destructor, as in the public classes) and impl[level] = V-pointer per level.
struct Object {
  explicit Object(void* realObject, const Iface* iface);
  // The application deleted the public object: record it, delete the real one, free ours.
  virtual ~Object();

  // What every call that passes this object reads (ours(), unwrap(), its handle and network) lies
  // in its first 60 bytes, right after the public layout (callgrind, calls-20k: ~28k fewer data
  // misses than with the network id past `iface`, at byte 64).
  void* impl[kMaxLevels] = {};  // public layout: impl[0..levels) are the V-pointers
  void* real;                   // the real library's public object
  uint64_t handle = 0;          // trace handle (1, 2, ...; 0 = null)
  uint32_t network = 0;         // network id (0 = not network-scoped)
  bool disposing = false;       // being freed by us, not deleted by the application
  const Iface* iface;
  Object* owner = nullptr;     // the one whose end is ours: see Iface::diesAlone
  std::vector<Object*> owned;  // objects whose lifetime ends with ours (layers, tensors, ...)
  size_t ownedAt = 0;          // our index in owner->owned

  // The real object's V-pointer at `level`.
  void* realImpl(int level) const { return abi::vpointer(real, level); }

  // Our objects' memory: a pool of their own, off the application's heap (object_pool.h).
  static void* operator new(size_t bytes);
  static void operator delete(void* p, size_t bytes) noexcept;
  static void afterFork();  // in a forked child: the pool's lock made anew
};

// The vtable pointers of every Object class: a pointer is ours iff its first word is one of them.
// Asked for nearly every object a call passes (its network hint, its argument, its unwrapped
// pointer), so it is a bitmap over the few KiB of the shim's data they lie in, one bit per
// pointer-aligned word: one load, from a few lines that stay in the cache; and inline.
struct VtableBits {
  uintptr_t lo = 0;
  size_t words = 0;  // of bits
  const uint64_t* bits = nullptr;
  bool contains(const void* p) const {
    const uintptr_t d = reinterpret_cast<uintptr_t>(p) - lo;  // wraps below lo: too far
    const uintptr_t w = d / sizeof(void*);
    return d % sizeof(void*) == 0 && w / 64 < words && (bits[w / 64] >> (w % 64) & 1);
  }
};
// Published (objects.cpp) before the first object is made: until then no pointer is ours.
inline std::atomic<const VtableBits*> gOurVtables{nullptr};

// Object (ours) behind a public pointer, or nullptr.
inline Object* ours(const void* pub) {
  const VtableBits* v = gOurVtables.load(std::memory_order_acquire);
  if (!pub || !v) return nullptr;
  const void* vptr = *static_cast<const void* const*>(pub);
  return v->contains(vptr) ? static_cast<Object*>(const_cast<void*>(pub)) : nullptr;
}
// Our object -> the real public object; any other pointer (or null) is returned unchanged.
inline void* unwrap(const void* pub) {
  Object* o = ours(pub);
  return o ? o->real : const_cast<void*>(pub);
}
// A call destroyed the real object (@destroys: removeTensor), or refused to (the tensor is still
// used), which the call does not say: our mapping goes (the address may come back as a new object),
// our object stays, still forwarding, until its owner's end.
void forget(const void* pub);
// Whether this thread is inside a recorded call (objects.cpp: Call).
bool callInProgress() noexcept;

// An array of public pointers, unwrapped for the real library.
template <class T>
class Unwrapped {
 public:
  Unwrapped(T* const* a, int64_t n) {
    if (a && n > 0) {
      v_.reserve(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v_.push_back(static_cast<T*>(unwrap(a[i])));
    }
  }
  T* const* data() const { return v_.empty() ? nullptr : v_.data(); }

 private:
  std::vector<T*> v_;
};

// First network id among the given public pointers (ours), else 0.
inline uint32_t netHint() { return 0; }
template <class... Rest>
uint32_t netHint(const void* p, Rest... rest) {
  if (Object* o = ours(p); o && o->network) return o->network;
  return netHint(rest...);
}

// One recorded call: constructed on entry (enter message, encoder), destroyed on exit (endCall).
// When capture is off (writer failed, or after close) every method is a cheap no-op. No method
// lets an exception out: a failure while recording (a failed write, out of memory) stops the
// capture with one line (Session::disable) and the application's call goes on unrecorded.
// One weights argument as a call passed it: where the application's bytes are, and what they held.
struct PassedWeights {
  abi::Weights w;
  uint64_t bytes = 0;
  Hash128 hash;          // of the bytes at the call (a blob's key: provisional until a worker read them)
  bool watched = false;  // recorded by content (inline or blob): compared again before the build
  bool blob = false;     // recorded as a blob (hash + bytes is its key)
};

// A call's weights arguments, in order (weightsBound), in the Call itself: room for the most any
// spec'd method passes (api::kMaxWeightsArgs, generated), so that no weights call allocates. The
// slots are raw bytes, written as arguments come: a call without weights initialises none of them.
class PassedList {
 public:
  PassedWeights& add(const PassedWeights& p) {
    if (n_ == api::kMaxWeightsArgs) [[unlikely]]
      throw std::length_error("more weights arguments than any spec'd method has");
    return *new (slots_ + n_++ * sizeof(PassedWeights)) PassedWeights(p);
  }
  std::span<const PassedWeights> all() const {
    return {std::launder(reinterpret_cast<const PassedWeights*>(slots_)), n_};
  }
  bool empty() const { return n_ == 0; }

 private:
  static_assert(std::is_trivially_destructible_v<PassedWeights>, "slots are never destroyed");
  alignas(PassedWeights) unsigned char slots_[api::kMaxWeightsArgs * sizeof(PassedWeights)];
  size_t n_ = 0;
};

// Weights a network's layers hold, watched until its build (capture/weights_watch.cpp; docs/design.md,
// "Weights"): TensorRT reads them at build, so an application may change them in place before.
// A recorded call passed `passed` (its weights arguments, in order) to `api` on `self`, returning `created`.
void weightsBound(uint32_t api, Object* self, Object* created, std::span<const PassedWeights> passed) noexcept;
// Before a build of `network`: for each weight whose bytes changed, a synthesized setter call.
void recheckWeights(uint32_t network) noexcept;
void forgetWeights(uint32_t network) noexcept;  // the network was deleted

class Call {
 public:
  Call(Object* self, uint32_t apiId, bool unsupported, uint32_t networkHint = 0);
  ~Call();
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // The scalar setters, each as an argument and as the result, and argHandle are inline: a
  // generated wrapper calls the encoder's setter directly, one function per argument instead of
  // two (BENCHMARKS.md, "Fewer instructions a call").
#define TRTRACE_CALL_SCALAR(NAME, PARAMS, ARGS)        \
  void arg##NAME PARAMS {                              \
    record([&](CallEncoder& e) { e.arg##NAME ARGS; }); \
  }                                                    \
  void ret##NAME PARAMS {                              \
    record([&](CallEncoder& e) { e.ret##NAME ARGS; }); \
  }
  TRTRACE_CALL_SCALAR(Bool, (bool v), (v))
  TRTRACE_CALL_SCALAR(I64, (int64_t v), (v))
  TRTRACE_CALL_SCALAR(U64, (uint64_t v), (v))
  TRTRACE_CALL_SCALAR(F32, (float v), (v))
  TRTRACE_CALL_SCALAR(F64, (double v), (v))
  TRTRACE_CALL_SCALAR(Enum, (uint32_t typeId, int64_t v), (typeId, v))
#undef TRTRACE_CALL_SCALAR
  void argString(const char* s);
  void argDims(const abi::Dims64& d);
  void argWeights(const abi::Weights& w);
  void argStruct(const void* p, size_t n);
  void argHandle(const void* pub) {
    record([&](CallEncoder& e) {
      Object* o = ours(pub);
      pub ? e.argHandle(o ? o->handle : 0) : e.argNull();
    });
  }
  template <class T>
  void argHandles(T* const* a, int64_t n) {
    argHandleList(reinterpret_cast<const void* const*>(a), n);
  }
  template <class T>
  void argArray(const T* p, int64_t n);
  void argBytes(const void* p, int64_t n);
  void argStrings(const char* const* s, int64_t n);
  void argOut();
  void argForeign(bool nonNull);

  void retString(const char* s);
  void retDims(const abi::Dims64& d);
  void retOther();
  // Wraps a real public object returned by the library (or finds its wrapper) and records it.
  void* retHandle(const void* real, const Iface& iface);
  template <class T>
  void* retHandle(T* real, const Iface& iface) {
    return retHandle(static_cast<const void*>(real), iface);
  }
  void done() {}

  // Runs `f` on this call's encoder, if it is being recorded; any exception stops the capture.
  template <class F>
  void record(F&& f) noexcept {
    if (!enc_) return;
    try {
      f(*enc_);
    } catch (const std::exception& e) { fail(e.what()); } catch (...) {
      fail("unknown error while recording");
    }
  }
  Object* self() { return self_; }
  uint32_t network() const { return network_; }
  // The capture makes this call, not the application (recorded as such; never forwarded).
  void synthesized();

 private:
  void argHandleList(const void* const* a, int64_t n);
  void fail(const char* why) noexcept;
  // Out of the lines every call runs: TRT_SHIM_FORCE_SINGLE_THREAD_API, TRT_SHIM_DUMP_API, and a
  // method the spec does not know.
  [[gnu::cold]] void enterRarely();
  [[gnu::cold]] void leaveRarely(int depth);
  [[gnu::cold]] void recordUnsupported();

  Object* self_;
  uint32_t api_;
  uint32_t network_;
  CallEncoder* enc_ = nullptr;
  bool serialized_ = false;    // holds apiLock() (TRT_SHIM_FORCE_SINGLE_THREAD_API)
  PassedList passed_;          // its weights arguments, in order (weightsBound)
  Object* created_ = nullptr;  // the object it returned, wrapped
};

template <class T>
void Call::argArray(const T* p, int64_t n) {
  record([&](CallEncoder& e) {
    if (!p || n < 0) {
      e.argNull();
    } else if constexpr (std::is_floating_point_v<T>) {
      e.argF32Array(std::vector<float>(p, p + n));
    } else {
      e.argI64Array(std::vector<int64_t>(p, p + n));
    }
  });
}

// The vtable a recording class's objects get in place of the compiler's (capture/unknown_slots.cpp):
// the same, with extra trailing slots that record UNSUPPORTED and pass through (methods the
// application knows but the spec does not). `since[i]` is the library version that has spec'd
// method i: methods newer than the loaded library are not the loaded library's (an app calling
// them gets that slot passed through too). Made once per class (the generated constructors keep
// it in a static); `shimObject` is any object of the class, still with the compiler's vtable.
void* extendedVtable(const void* shimObject, const char* iface, const int32_t* since, int methods, int level);

// The loaded real library: version, build id, path (library.h); code 0 while it is not loaded.
const lib::LibraryInfo& realLibrary();

// Wraps a real object returned outside a recorded call (entry points, overrides).
Object* wrap(const void* real, const Iface& iface, Object* owner, uint32_t network);

// The real library's symbol (loaded once, per TRT_SHIM_NVINFER_LIB_NAME); nullptr if unavailable.
void* realSymbol(const char* name);

using namespace trtrace::abi;  // generated signatures name ABI types unqualified
// Hand-written exceptions (the `override capture` lines of schema/api/90-overrides.api).
#include "capture_overrides.h"

}  // namespace trtrace::capture
