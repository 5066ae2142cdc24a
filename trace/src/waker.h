// Waker: a condition variable (wait with a predicate under a std::mutex, notify_one, notify_all)
// whose notify never blocks the notifying thread. glibc's pthread_cond_signal and _broadcast can:
// when the group of waiters they signal must be switched, they wait until the waiters signalled
// before have woken (__condvar_quiesce_and_switch_g1). The blob workers are niced, so a worker
// signalled but not yet run held the application's thread in its put (calls-20k-h64: ~11 times a
// run, 0.4 ms each, perf's sched_switch). Here a notify is an increment and, only when a thread
// waits, one futex wake: an eventcount.
//
// As with a condition variable, every change a predicate reads is made under the waiters' mutex.
#pragma once
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <mutex>

namespace trtrace::detail {

class Waker {
 public:
  // Until pred() holds; l is held to call pred and released while asleep (spurious wake-ups re-check).
  template <class Pred>
  void wait(std::unique_lock<std::mutex>& l, Pred pred) {
    while (!pred()) {
      waiters_.fetch_add(1);  // before the count is read: a notify after it sees a waiter
      const uint32_t seen = count_.load();
      l.unlock();
      futex(FUTEX_WAIT_PRIVATE, seen);  // returns at once when count_ moved on since
      waiters_.fetch_sub(1);
      l.lock();
    }
  }
  void notify_one() { notify(1); }
  void notify_all() { notify(INT_MAX); }
  // In a forked child: no thread waits here.
  void reset() {
    count_.store(0);
    waiters_.store(0);
  }

 private:
  void notify(int threads) {
    count_.fetch_add(1);
    if (waiters_.load() != 0) futex(FUTEX_WAKE_PRIVATE, static_cast<uint32_t>(threads));
  }
  void futex(int op, uint32_t value) {
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&count_), op, value, nullptr, nullptr, 0);
  }

  std::atomic<uint32_t> count_{0};  // notifications so far (wraps)
  std::atomic<uint32_t> waiters_{0};
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
};

}  // namespace trtrace::detail
