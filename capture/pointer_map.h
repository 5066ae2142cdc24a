// A map from non-null pointers to small values, in one flat array (open addressing, linear
// probing, deletion by backward shift: no tombstones). The registry looks up every object a call
// passes or returns: with a node per entry (std::unordered_map) each lookup is two or three cache
// misses on a network of tens of thousands of layers and tensors; here it is one, and an insert
// allocates nothing until the table doubles. The table is not made large up front: the doubling
// writes each table it makes (value-initialised, then refilled), so its lines are in the cache
// when the next inserts land on them, where a large table of untouched zero pages costs a miss
// to memory per insert (cachegrind, calls-20k: 17,700 more last-level misses). Nor has it a tag byte
// per slot (SwissTable's control bytes) with the slot written at the next operation: a new key's
// probe then read a line of a table 1/16 the size, but under the library's traffic that line
// missed as the slot's had, plus one more line asked for per insert (calls-20k: no change in
// network construction time, ~35 more instructions per call).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace trtrace::capture {

template <class V>
class PointerMap {
 public:
  // The value of `key`, or nullptr; whether `key` is present.
  V* find(const void* key) {
    const size_t i = slotOf(key);
    return i == kNone ? nullptr : &slots_[i].value;
  }
  bool contains(const void* key) const { return slotOf(key) != kNone; }

  // The value held for key; when key is absent, `make()` inserted under it first, in the slot the
  // lookup ended on (one probe for both). Nothing is inserted if make throws.
  template <class Make>
  V& findOrAdd(const void* key, Make&& make) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t i = home(key);
    for (; slots_[i].key; i = next(i))
      if (slots_[i].key == key) return slots_[i].value;
    slots_[i] = {key, make()};
    ++size_;
    return slots_[i].value;
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
    if (const size_t i = slotOf(key); i != kNone && slots_[i].value == value) eraseAt(i);
  }

  size_t size() const { return size_; }
  // Asks for the line of key's home slot ahead of a find or erase.
  void prefetch(const void* key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[home(key)]);
  }

 private:
  struct Slot {
    const void* key = nullptr;  // nullptr: empty
    V value{};
  };

  static constexpr size_t kNone = SIZE_MAX;

  // Backward shift: each later entry of the run that may sit in the hole moves into it.
  void eraseAt(size_t i) {
    for (size_t j = next(i); slots_[j].key; j = next(j)) {
      const size_t h = home(slots_[j].key);
      if (((j - h) & mask()) >= ((j - i) & mask())) {  // j's home is at or before the hole
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = {};
    --size_;
  }

  size_t slotOf(const void* key) const {  // key's slot, or kNone
    if (slots_.empty()) return kNone;
    for (size_t i = home(key);; i = next(i)) {
      if (slots_[i].key == key) return i;
      if (!slots_[i].key) return kNone;
    }
  }

  size_t mask() const { return slots_.size() - 1; }
  size_t next(size_t i) const { return (i + 1) & mask(); }
  // Fibonacci hashing of the address (its low bits are alignment, the same for every object).
  size_t home(const void* key) const {
    return static_cast<size_t>((reinterpret_cast<uintptr_t>(key) * 0x9E3779B97F4A7C15ull) >> shift_);
  }

  // The table doubled (64 slots at first), its entries placed anew.
  void grow() {
    const size_t n = slots_.empty() ? 64 : slots_.size() * 2;
    std::vector<Slot> old(n);
    old.swap(slots_);
    shift_ = 64;
    for (size_t k = n; k > 1; k >>= 1) --shift_;
    for (const Slot& s : old) {  // every key differs: each takes the first free slot from its home
      if (!s.key) continue;
      size_t i = home(s.key);
      while (slots_[i].key) i = next(i);
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;  // a power of two in size, at most half full
  size_t size_ = 0;
  unsigned shift_ = 64;  // 64 - log2(slots_.size())
};

}  // namespace trtrace::capture
