// A map from non-null pointers to small values, in one flat array (open addressing, linear
// probing, deletion by backward shift: no tombstones). The registry looks up every object a call
// passes or returns: with a node per entry (std::unordered_map) each lookup is two or three cache
// misses on a network of tens of thousands of layers and tensors; here it is one, and an insert
// allocates nothing until the table doubles. The table is not made large up front: a large table
// of untouched lines costs a miss to memory per insert (cachegrind, calls-20k: 17,700 more
// last-level misses), where each doubling's refill leaves much of the new table in the cache. Each
// table is fresh pages (fresh_pages.h) mapped when the one before it is a quarter full, so that a
// helper thread has made them present by the time it doubles (calls-20k: ~500 page faults of the
// application's thread, 2.4-3.9 us each on our VM). Nor has it a tag byte per slot (SwissTable's
// control bytes) with the slot written at the next operation: a new key's probe then read a line
// of a table 1/16 the size, but under the library's traffic that line missed as the slot's had,
// plus one more line asked for per insert (calls-20k: no change in network construction time, ~35
// more instructions per call).
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

#include "fresh_pages.h"

namespace trtrace::capture {

template <class V>
class PointerMap {
  static_assert(std::is_trivially_copyable_v<V>, "a value is its bytes: a fresh table's zeros are empty slots");

 public:
  PointerMap() = default;
  PointerMap(const PointerMap&) = delete;
  PointerMap& operator=(const PointerMap&) = delete;
  ~PointerMap() {
    unmapFreshPages(table_);
    unmapFreshPages(ahead_);
  }

  // The value of `key`, or nullptr; whether `key` is present.
  V* find(const void* key) {
    const size_t i = slotOf(key);
    return i == kNone ? nullptr : &slots()[i].value;
  }
  bool contains(const void* key) const { return slotOf(key) != kNone; }

  // The value held for key; when key is absent, `make()` inserted under it first, in the slot the
  // lookup ended on (one probe for both). Nothing is inserted if make throws.
  template <class Make>
  V& findOrAdd(const void* key, Make&& make) {
    if ((size_ + 1) * 2 > capacity()) grow();
    if ((size_ + 1) * 4 > capacity() && !ahead_.at) mapAhead();
    Slot* const s = slots();
    size_t i = home(key);
    for (; s[i].key; i = next(i))
      if (s[i].key == key) return s[i].value;
    s[i] = {key, make()};
    ++size_;
    return s[i].value;
  }
  // Inserts key -> value unless key is present; returns the value held for key.
  V& emplace(const void* key, V value) {
    return findOrAdd(key, [&] { return value; });
  }

  // Removes key; false when it was not there.
  bool erase(const void* key) {
    const size_t i = slotOf(key);
    if (i == kNone) return false;
    eraseAt(i);
    return true;
  }
  // Removes key if it maps to `value` (one probe for the lookup and the removal).
  void eraseIfHolds(const void* key, const V& value) {
    if (const size_t i = slotOf(key); i != kNone && slots()[i].value == value) eraseAt(i);
  }

  size_t size() const { return size_; }
  // Asks for the line of key's home slot ahead of a find or erase.
  void prefetch(const void* key) const {
    if (capacity()) __builtin_prefetch(&slots()[home(key)]);
  }

 private:
  struct Slot {
    const void* key = nullptr;  // nullptr: empty
    V value{};
  };

  static_assert(sizeof(Slot) == 16, "a page holds a power of two of slots");
  static constexpr size_t kNone = SIZE_MAX;

  // Backward shift: each later entry of the run that may sit in the hole moves into it.
  void eraseAt(size_t i) {
    Slot* const s = slots();
    for (size_t j = next(i); s[j].key; j = next(j)) {
      const size_t h = home(s[j].key);
      if (((j - h) & mask()) >= ((j - i) & mask())) {  // j's home is at or before the hole
        s[i] = s[j];
        i = j;
      }
    }
    s[i] = {};
    --size_;
  }

  size_t slotOf(const void* key) const {  // key's slot, or kNone
    if (!capacity()) return kNone;
    const Slot* const s = slots();
    for (size_t i = home(key);; i = next(i)) {
      if (s[i].key == key) return i;
      if (!s[i].key) return kNone;
    }
  }

  // The table's slots (zero bytes are empty ones): a power of two of them, at most half full.
  Slot* slots() const { return reinterpret_cast<Slot*>(table_.at); }
  size_t capacity() const { return table_.bytes / sizeof(Slot); }
  size_t mask() const { return capacity() - 1; }
  size_t next(size_t i) const { return (i + 1) & mask(); }
  // Fibonacci hashing of the address (its low bits are alignment, the same for every object).
  size_t home(const void* key) const {
    const unsigned shift = 64 - static_cast<unsigned>(__builtin_ctzll(capacity()));  // 64 - log2
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(key) * 0x9E3779B97F4A7C15ull) >> shift);
  }

  static constexpr size_t kFirstBytes = 4096;  // a page: 256 slots of 16 bytes

  // The next table, twice this one, its pages made present off this thread (a failure leaves it
  // to grow). Both out of the lines of a lookup (cold: they run once per doubling).
  [[gnu::cold, gnu::noinline]] void mapAhead() noexcept {
    try {
      ahead_ = mapFreshPages(table_.bytes ? 2 * table_.bytes : kFirstBytes);
    } catch (const std::bad_alloc&) {}
  }

  // The table doubled (a page at first), its entries placed anew; the old one unmapped.
  [[gnu::cold, gnu::noinline]] void grow() {
    const size_t bytes = table_.bytes ? 2 * table_.bytes : kFirstBytes;
    const FreshPages fresh = ahead_.bytes == bytes ? ahead_ : mapFreshPages(bytes);
    if (ahead_.at && ahead_.at != fresh.at) unmapFreshPages(ahead_);
    ahead_ = {};
    const FreshPages old = table_;
    const Slot* from = slots();
    const size_t n = capacity();
    table_ = fresh;  // zero bytes: every slot empty
    Slot* const to = slots();
    for (size_t j = 0; j < n; ++j) {  // every key differs: each takes the first free slot from its home
      const Slot& s = from[j];
      if (!s.key) continue;
      size_t i = home(s.key);
      while (to[i].key) i = next(i);
      to[i] = s;
    }
    unmapFreshPages(old);
  }

  FreshPages table_;  // the slots; none before the first insert
  FreshPages ahead_;  // the next table, mapped when this one is a quarter full
  size_t size_ = 0;
};

}  // namespace trtrace::capture
