// The converter's two lookup tables, one entry per object or call of a capture (millions of them):
// flat arrays instead of node-based hash maps, which cost one allocation per entry.
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace trtrace::convert {

// NVIDIA object id -> trace handle (never 0). NVIDIA numbers objects densely from 0, so ids below
// a bound that grows with the entries live in a vector; any other id (a hostile 2^40) costs one
// hash-map entry, not a table that size.
class IdMap {
 public:
  // 0 when absent.
  uint64_t find(int64_t id) const {
    if (id >= 0 && static_cast<uint64_t>(id) < dense_.size() && dense_[static_cast<size_t>(id)])
      return dense_[static_cast<size_t>(id)];
    if (sparse_.empty()) return 0;
    auto it = sparse_.find(id);
    return it == sparse_.end() ? 0 : it->second;
  }
  void set(int64_t id, uint64_t handle) {
    ++sets_;
    const uint64_t bound = std::max<uint64_t>(1u << 16, 4 * sets_);
    if (id >= 0 && static_cast<uint64_t>(id) < bound) {
      if (static_cast<uint64_t>(id) >= dense_.size())
        dense_.resize(static_cast<size_t>(std::min<uint64_t>(bound, std::max<uint64_t>(id + 1, 2 * dense_.size()))), 0);
      dense_[static_cast<size_t>(id)] = handle;
      if (!sparse_.empty()) sparse_.erase(id);
    } else {
      sparse_[id] = handle;
    }
  }
  // Every id bound to `from` is bound to `to` instead.
  void rebind(uint64_t from, uint64_t to) {
    for (uint64_t& h : dense_)
      if (h == from) h = to;
    for (auto& [id, h] : sparse_)
      if (h == from) h = to;
  }

 private:
  std::vector<uint64_t> dense_;
  std::unordered_map<int64_t, uint64_t> sparse_;
  uint64_t sets_ = 0;
};

// A 64-bit hash (already uniform: XXH3) -> a value that is never 0. Open addressing, linear
// probing, at most half full.
class HashMap64 {
 public:
  // 0 when absent.
  uint64_t find(uint64_t key) const {
    if (key == 0) return zero_;
    if (slots_.empty()) return 0;
    for (size_t i = key & mask_;; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return slots_[i].value;
      if (slots_[i].key == 0) return 0;
    }
  }
  // Starts fetching key's slot (a cache miss on big tables), for a find/set a little later.
  void prefetch(uint64_t key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[key & mask_]);
  }
  void set(uint64_t key, uint64_t value) {
    if (key == 0) {
      zero_ = value;
      return;
    }
    if (2 * (used_ + 1) > slots_.size()) grow();
    size_t i = key & mask_;
    while (slots_[i].key != 0 && slots_[i].key != key) i = (i + 1) & mask_;
    used_ += slots_[i].key == 0;
    slots_[i] = {key, value};
  }

 private:
  struct Slot {
    uint64_t key = 0, value = 0;
  };
  void grow() {
    std::vector<Slot> old(std::max<size_t>(1024, 2 * slots_.size()));
    old.swap(slots_);
    mask_ = slots_.size() - 1;
    used_ = 0;
    for (const Slot& s : old)
      if (s.key) set(s.key, s.value);
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0, used_ = 0;
  uint64_t zero_ = 0;
};

}  // namespace trtrace::convert
