// Memory for our stand-in objects (capture::Object): one per layer and tensor the application
// makes, tens of thousands per network, all freed together when the network is deleted. Taken from
// the heap they cost a malloc and a free each on the application's thread, and they lie among the
// application's own allocations; here they come from chunks in 16-byte size classes with a free list
// each, reused by the next network and never given back (the peak of live objects stays). Chunks are
// fresh pages (fresh_pages.h): the first of 64 KiB, each next twice the last up to 1 MiB, and each
// mapped when the one before it starts to be used, so that a helper thread has made its pages
// present by the time objects are carved from it.
// Under AddressSanitizer a free object's bytes (its free-list link included) and a chunk's unused
// rest are poisoned, so a use of an object after its end is still caught until it is reused.
#pragma once
#include <sanitizer/asan_interface.h>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <new>
#include <vector>

#include "fresh_pages.h"
#include "trtrace/spin_lock.h"

namespace trtrace::capture {

class ObjectPool {
 public:
  static constexpr size_t kGrain = 16;          // size classes: 16, 32, ... bytes
  static constexpr size_t kMaxBytes = 512;      // larger ones come from the heap
  static constexpr size_t kChunk = 64 << 10;    // the first chunk: carved into objects as needed
  static constexpr size_t kMaxChunk = 1 << 20;  // the largest

  ObjectPool() = default;
  ObjectPool(const ObjectPool&) = delete;
  ObjectPool& operator=(const ObjectPool&) = delete;
  // The shim's pool is never destroyed (objects may outlive static destruction); a test's is.
  ~ObjectPool() {
    for (const FreshPages& c : chunks_) {
      ASAN_UNPOISON_MEMORY_REGION(c.at, c.bytes);
      unmapFreshPages(c);
    }
    unmapFreshPages(ahead_);
  }

  // Room for `bytes` bytes, aligned to kGrain; throws std::bad_alloc as operator new does.
  void* take(size_t bytes) {
    if (bytes > kMaxBytes) return ::operator new(bytes);
    const size_t c = classOf(bytes);
    std::lock_guard<SpinLock> g(mu_);
    const size_t size = (c + 1) * kGrain;
    if (Free* f = free_[c]) {
      ASAN_UNPOISON_MEMORY_REGION(f, size);
      free_[c] = f->next;
      return f;
    }
    if (static_cast<size_t>(end_ - next_) < size) newChunk();
    void* p = next_;
    next_ += size;
    ASAN_UNPOISON_MEMORY_REGION(p, size);
    return p;
  }

  // `p` (from take, with the same `bytes`) is free again.
  void give(void* p, size_t bytes) noexcept {
    if (!p) return;
    if (bytes > kMaxBytes) return ::operator delete(p);
    const size_t c = classOf(bytes);
    std::lock_guard<SpinLock> g(mu_);
    free_[c] = new (p) Free{free_[c]};
    ASAN_POISON_MEMORY_REGION(p, (c + 1) * kGrain);
  }

  // In a forked child: the lock may have been held by a thread that did not survive the fork.
  void afterFork() { mu_.reset(); }

 private:
  struct Free {
    Free* next;
  };
  static constexpr size_t kClasses = kMaxBytes / kGrain;
  static size_t classOf(size_t bytes) { return bytes ? (bytes - 1) / kGrain : 0; }

  // The rest of the current chunk (under kMaxBytes) is left unused: at most 1/128 of the memory.
  // The next chunk is mapped here too (a failure leaves it to the next call). Out of take's lines.
  [[gnu::cold, gnu::noinline]] void newChunk() {
    chunks_.reserve(chunks_.size() + 1);  // the chunk is never lost to a failed push_back
    const FreshPages c = ahead_.at ? ahead_ : mapFreshPages(kChunk);
    ahead_ = {};
    chunks_.push_back(c);
    next_ = c.at;
    end_ = c.at + c.bytes;
    ASAN_POISON_MEMORY_REGION(c.at, c.bytes);
    try {
      ahead_ = mapFreshPages(std::min(2 * c.bytes, kMaxChunk));
    } catch (const std::bad_alloc&) {}
  }

  SpinLock mu_;
  Free* free_[kClasses] = {};
  std::byte* next_ = nullptr;  // the current chunk's unused rest: [next_, end_)
  std::byte* end_ = nullptr;
  std::vector<FreshPages> chunks_;  // every chunk, kept reachable
  FreshPages ahead_;                // the next chunk, its pages being made present
};

}  // namespace trtrace::capture
