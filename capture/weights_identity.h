// The numbers a trace gives an application's weights: identity by pointer, and random stand-ins' seeds.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>

#include "pointer_map.h"
#include "trtrace/spin_lock.h"

namespace trtrace::capture {

class WeightsIdentity {
 public:
  // 1, 2, ... in order of first appearance of an application weights pointer (deterministic, no
  // addresses in the trace); the same pointer always gets the same number. The library tells
  // weights apart by pointer, and replay reproduces what these numbers say.
  uint64_t of(const void* values) {
    std::lock_guard<SpinLock> lk(mu_);
    return ids_.emplace(values, ids_.size() + 1);
  }
  // 1, 2, ...: the seed of the next weights recorded as random (TRT_SHIM_MARK_AS_RANDOM_WEIGHTS_*).
  uint64_t nextRandomSeed() { return ++randomSeeds_; }
  // In a forked child: the lock may have been held by a thread that did not survive the fork.
  void afterFork() { mu_.reset(); }

 private:
  SpinLock mu_;
  PointerMap<uint64_t> ids_;
  std::atomic<uint64_t> randomSeeds_{0};
};

}  // namespace trtrace::capture
