// A map from non-null pointers to small values, in one flat array (open addressing, linear
// probing, deletion by backward shift: no tombstones). The registry looks up every object a call
// passes or returns: with a node per entry (std::unordered_map) each lookup is two or three cache
// misses on a network of tens of thousands of layers and tensors; here it is one, and an insert
// allocates nothing until the table doubles.
//
// A table of 64 KiB and more is bulk memory (bulk_memory.h): zero pages until an entry lands on
// them, one huge page per 2 MiB where the kernel gives them. A map made large up front (the
// registry's, sized for a network of tens of thousands of objects) rehashes no such network's
// objects.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>

#include "bulk_memory.h"

namespace trtrace::capture {

template <class V>
class PointerMap {
  static_assert(std::is_trivially_copyable_v<V>, "slots are moved as bytes and start as zero bytes");

 public:
  // Room for `entries` before the first doubling (none is allocated for 0).
  explicit PointerMap(size_t entries = 0) {
    if (entries) reallocate(capacityFor(entries));
  }
  ~PointerMap() { release(slots_, cap_); }
  PointerMap(PointerMap&& o) noexcept { swap(o); }
  PointerMap& operator=(PointerMap&& o) noexcept {
    PointerMap(std::move(o)).swap(*this);
    return *this;
  }

  // The value of `key`, or nullptr; whether `key` is present.
  V* find(const void* key) {
    const size_t i = slotOf(key);
    return i == kNone ? nullptr : &slots_[i].value;
  }
  bool contains(const void* key) const { return slotOf(key) != kNone; }

  // Inserts key -> value unless key is present; returns the value held for key.
  V& emplace(const void* key, V value) {
    if ((size_ + 1) * 2 > cap_) grow();
    size_t i = home(key);
    for (; slots_[i].key; i = next(i))
      if (slots_[i].key == key) return slots_[i].value;
    slots_[i] = {key, value};
    ++size_;
    return slots_[i].value;
  }

  // Removes key; false when it was not there.
  bool erase(const void* key) {
    if (!cap_) return false;
    size_t i = home(key);
    for (; slots_[i].key != key; i = next(i))
      if (!slots_[i].key) return false;
    // Backward shift: each later entry of the run that may sit in the hole moves into it.
    for (size_t j = next(i); slots_[j].key; j = next(j)) {
      const size_t h = home(slots_[j].key);
      if (((j - h) & mask()) >= ((j - i) & mask())) {  // j's home is at or before the hole
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = {};
    --size_;
    return true;
  }

  size_t size() const { return size_; }
  // Asks for the line of key's home slot ahead of a find or erase.
  void prefetch(const void* key) const {
    if (cap_) __builtin_prefetch(&slots_[home(key)]);
  }

 private:
  struct Slot {
    const void* key = nullptr;  // nullptr: empty
    V value{};
  };

  static constexpr size_t kNone = SIZE_MAX;
  size_t slotOf(const void* key) const {  // key's slot, or kNone
    if (!cap_) return kNone;
    for (size_t i = home(key);; i = next(i)) {
      if (slots_[i].key == key) return i;
      if (!slots_[i].key) return kNone;
    }
  }

  size_t mask() const { return cap_ - 1; }
  size_t next(size_t i) const { return (i + 1) & mask(); }
  // Fibonacci hashing of the address (its low bits are alignment, the same for every object).
  size_t home(const void* key) const {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(key) * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  // The table doubled (64 slots at first), its entries placed anew.
  void grow() {
    Slot* old = slots_;
    const size_t oldCap = cap_;
    reallocate(cap_ ? cap_ * 2 : 64);
    for (size_t i = 0; i < oldCap; ++i)
      if (old[i].key) emplace(old[i].key, old[i].value);
    release(old, oldCap);
  }

  static size_t capacityFor(size_t entries) {  // a power of two, at least twice `entries`
    size_t n = 64;
    while (n < entries * 2) n *= 2;
    return n;
  }
  static constexpr size_t kMappedBytes = 64 << 10;  // tables this large are bulk memory
  // A new, empty table of n slots (all-zero bytes are empty slots); throws std::bad_alloc.
  void reallocate(size_t n) {
    void* p = n * sizeof(Slot) >= kMappedBytes ? mapBulk(n * sizeof(Slot)) : std::calloc(n, sizeof(Slot));
    if (!p) throw std::bad_alloc();
    slots_ = static_cast<Slot*>(p);
    cap_ = n;
    size_ = 0;
    shift_ = 64;
    for (size_t k = n; k > 1; k >>= 1) --shift_;
  }
  static void release(Slot* slots, size_t n) {
    if (!slots) return;
    if (n * sizeof(Slot) >= kMappedBytes)
      unmapBulk(slots, n * sizeof(Slot));
    else
      std::free(slots);
  }
  void swap(PointerMap& o) noexcept {
    std::swap(slots_, o.slots_);
    std::swap(cap_, o.cap_);
    std::swap(size_, o.size_);
    std::swap(shift_, o.shift_);
  }

  Slot* slots_ = nullptr;  // cap_ slots, a power of two, at most half full
  size_t cap_ = 0;
  size_t size_ = 0;
  unsigned shift_ = 64;  // 64 - log2(cap_)
};

}  // namespace trtrace::capture
