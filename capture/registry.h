// The registry of our stand-in objects, keyed by the real library's object, and the numbers a trace
// names them by: handles 1, 2, ... in order of first appearance (0 = null), network ids 1, 2, ...
// A template over the object type so that it is testable without the generated wrappers; T has
// `real`, `handle`, `network`, `owner` (T*), `owned` (std::vector<T*>) and `ownedAt` (its index
// in its owner's `owned`): capture::Object.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "pointer_map.h"
#include "trtrace/spin_lock.h"

namespace trtrace::capture {

template <class T>
class Registry {
 public:
  // The object of `real`, or one made by `make(real)` on first sight: numbered, in `network`, and
  // owned by `owner` when given (its lifetime ends with the owner's). nullptr for a null `real`.
  template <class Make>
  T* wrap(const void* real, Make&& make, T* owner, uint32_t network) {
    if (!real) return nullptr;
    std::lock_guard<SpinLock> lk(mu_);
    return byReal_.findOrAdd(real, [&] {
      T* o = make(const_cast<void*>(real));
      o->handle = ++nextHandle_;
      o->network = network;
      if (owner) {
        o->owner = owner;
        o->ownedAt = owner->owned.size();
        owner->owned.push_back(o);
      }
      return o;
    });
  }

  T* find(const void* real) {
    std::lock_guard<SpinLock> lk(mu_);
    T** known = byReal_.find(real);
    return known ? *known : nullptr;
  }

  // `o`'s real object may be gone: its mapping (if still its own) is dropped; it stays owned.
  void unmap(T* o) {
    std::lock_guard<SpinLock> lk(mu_);
    forgetLocked(o);
  }

  // `o` is going away: its mapping (if still its own) and its owner's link to it are dropped.
  void unregister(T* o) {
    std::lock_guard<SpinLock> lk(mu_);
    forgetLocked(o);
    if (o->owner) {  // one of tens of thousands a network owns: its slot takes the last one
      auto& v = o->owner->owned;
      T* last = v.back();
      last->ownedAt = o->ownedAt;
      v[o->ownedAt] = last;
      v.pop_back();
      o->owner = nullptr;
    }
  }

  // The objects `owner` owns, unregistered and unlinked from it under one lock (a network's
  // deletion lets go of every layer and tensor at once); the caller frees them.
  std::vector<T*> releaseOwned(T* owner) {
    std::vector<T*> owned;
    std::lock_guard<SpinLock> lk(mu_);
    owned.swap(owner->owned);
    // Tens of thousands of objects at a network's deletion, each and its slot a cache miss: the
    // objects kAhead on, then their slots, are asked for early, so that the misses overlap.
    constexpr size_t kAhead = 8;
    const size_t n = owned.size();
    for (size_t i = 0; i < n; ++i) {
      if (i + 2 * kAhead < n) __builtin_prefetch(owned[i + 2 * kAhead]);
      if (i + kAhead < n) byReal_.prefetch(owned[i + kAhead]->real);
      forgetLocked(owned[i]);
      owned[i]->owner = nullptr;
    }
    return owned;
  }

  uint32_t newNetworkId() { return ++networks_; }
  uint32_t networks() const { return networks_.load(); }

  // In a forked child: the lock may have been held by a thread that did not survive the fork.
  // The objects and numbers go on (the child's trace starts after them).
  void afterFork() { mu_.reset(); }

 private:
  void forgetLocked(T* o) {  // o's mapping, if still its own
    byReal_.eraseIfHolds(o->real, o);
  }

  SpinLock mu_;
  PointerMap<T*> byReal_;
  uint64_t nextHandle_ = 0;
  std::atomic<uint32_t> networks_{0};
};

}  // namespace trtrace::capture
