// The lock of our short critical sections on the application's thread: the capture's registry,
// object pool and weights' numbering, and the call log's appends (trace/src/call_log.h).
// std::mutex releases with a locked instruction, which waits until every store before it is in
// the cache: a new object's lines, a map slot at a random place, a call's draft. On a call-heavy
// capture those waits were the costliest instructions of a call's recording (perf annotate: half
// the samples of pthread_mutex_unlock). This lock releases with a plain store, which waits for
// nothing. Contended (rare: an application building from several threads, or a flush holding the
// call log's lock while it writes), it spins a little, then yields its CPU.
#pragma once
#include <sched.h>

#include <atomic>

namespace trtrace {

class SpinLock {
 public:
  void lock() noexcept {
    if (!locked_.exchange(true, std::memory_order_acquire)) [[likely]]
      return;
    lockContended();
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }
  // In a forked child: the lock may have been held by a thread that did not survive the fork.
  void reset() noexcept { locked_.store(false, std::memory_order_relaxed); }

 private:
  static constexpr unsigned kSpinsBeforeYield = 128;

  // Out of the lines of an uncontended lock.
  [[gnu::cold, gnu::noinline]] void lockContended() noexcept {
    for (unsigned spins = 0; locked_.exchange(true, std::memory_order_acquire);) {
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < kSpinsBeforeYield) {
#if defined(__x86_64__)
          __builtin_ia32_pause();
#endif
        } else {
          sched_yield();
        }
      }
    }
  }

  std::atomic<bool> locked_{false};
};

}  // namespace trtrace
