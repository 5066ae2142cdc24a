// The keys of weights handed to a finisher unread (key_board.h).
#include "key_board.h"

#include <linux/futex.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <new>

namespace trtrace::detail {

KeyBoard* KeyBoard::create(uint32_t count) {
  const uint64_t bytes = sizeof(KeyBoard) + uint64_t(count) * sizeof(Entry);
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  auto* b = new (m) KeyBoard(count);
  b->bytes_ = bytes;
  return b;
}

void KeyBoard::destroy(KeyBoard* b) {
  if (b) ::munmap(b, b->bytes_);
}

void KeyBoard::publish(uint32_t i, const Entry& e) {
  entries()[i] = e;
  published_.store(i + 1, std::memory_order_release);
  if ((i + 1) % 64 == 0) wakeAll();  // a wake-up per key would cost a system call per small blob
}

void KeyBoard::wakeAll() {
  // Not FUTEX_PRIVATE_FLAG: the word is shared with other processes.
  ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&published_), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

namespace {
bool ended(int pidfd, pid_t pid) {
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;  // readable once the process has ended
  }
  return pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH;  // (a zombie reads as alive until reaped)
}
}  // namespace

bool KeyBoard::wait(uint32_t seen, int pidfd, pid_t pid, int ms) {
  if (published() == seen) {
    const timespec t{ms / 1000, (ms % 1000) * 1000000L};
    ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&published_), FUTEX_WAIT, seen, &t, nullptr, 0);
  }
  return ended(pidfd, pid);
}

int processHandle(pid_t pid) {
#ifdef SYS_pidfd_open
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd >= 0) return static_cast<int>(fd);  // close-on-exec, as pidfd_open makes it
#endif
  return -1;
}

}  // namespace trtrace::detail
