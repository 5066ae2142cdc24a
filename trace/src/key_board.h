// The keys of weights handed to a finisher unread (blob_store.h, "Handed batches"). A handoff
// gives the finisher the queued weights' file ranges without reading their content keys on the
// application's thread; the finisher reads them from its copy-on-write view and writes them here,
// in order. The board is a shared anonymous mapping made before the fork, so the application's
// process and any finisher forked later read what the finisher wrote, without consuming it.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstdint>

namespace trtrace::detail {

class KeyBoard {
 public:
  enum class State : uint64_t { Stored = 1, Lost = 2 };  // Lost: the bytes were gone, or not the call's
  struct Entry {
    uint64_t lo = 0, hi = 0;  // the content key (Stored)
    State state = State::Lost;
  };

  // A board for `count` keys; nullptr where the system gives no mapping (the handoff then reads
  // the keys itself).
  static KeyBoard* create(uint32_t count);
  static void destroy(KeyBoard* b);

  uint32_t count() const { return count_; }
  uint32_t published() const { return published_.load(std::memory_order_acquire); }
  const Entry& at(uint32_t i) const { return entries()[i]; }
  // By the board's one writer, in order (i == published()). Waiters are woken every few keys.
  void publish(uint32_t i, const Entry& e);
  void wakeAll();
  // Waits until more than `seen` keys are published, `ms` passed, or the writer ended (its process
  // handle `pidfd`, else `pid`; neither: it is not watched). True when the writer has ended.
  bool wait(uint32_t seen, int pidfd, pid_t pid, int ms);

 private:
  explicit KeyBoard(uint32_t count) : count_(count) {}
  Entry* entries() { return reinterpret_cast<Entry*>(this + 1); }
  const Entry* entries() const { return reinterpret_cast<const Entry*>(this + 1); }

  std::atomic<uint32_t> published_{0};  // a futex word, shared between processes
  uint32_t count_;
  uint64_t bytes_ = 0;  // of the mapping
};
static_assert(sizeof(KeyBoard) % alignof(KeyBoard::Entry) == 0);

// A handle on process `pid` that says when it ended (pidfd_open), or -1.
int processHandle(pid_t pid);

}  // namespace trtrace::detail
