#include "fresh_pages.h"

#include <pthread.h>
#include <sanitizer/lsan_interface.h>
#include <sys/mman.h>
#include <new>

#include "trtrace/quiet_thread.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

namespace trtrace::capture {
namespace {

constexpr size_t kHelpedBytes = 64 << 10;  // under it, a thread's start costs more than the faults

// Each page made present for writing. MADV_POPULATE_WRITE changes no byte, so the application's
// thread may already be filling the region's start. A kernel without it (before 5.14) leaves the
// pages to fault as they are used.
void populate(std::byte* at, size_t bytes) noexcept { ::madvise(at, bytes, MADV_POPULATE_WRITE); }

void* populateThread(void* arg) {
  // Gives way to the application as the writer's threads do: on a CPU it shares with the
  // application's thread, its faults would be that thread's again.
  nameThisThread("trtrace-pages", kGiveWayNice);
  const auto* p = static_cast<FreshPages*>(arg);
  populate(p->at, p->bytes);
  delete p;
  return nullptr;
}

// A detached thread of a small stack; false where none could start.
bool populateBehind(const FreshPages& p) noexcept {
  auto* job = new (std::nothrow) FreshPages(p);
  if (!job) return false;
  pthread_attr_t attr;
  if (::pthread_attr_init(&attr) != 0) {
    delete job;
    return false;
  }
  ::pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  ::pthread_attr_setstacksize(&attr, 64 << 10);
  pthread_t t;
  bool started;
  {
    const QuietSignals quiet;  // the application's signals are not this thread's (quiet_thread.h)
    started = ::pthread_create(&t, &attr, populateThread, job) == 0;
  }
  ::pthread_attr_destroy(&attr);
  if (!started) delete job;
  return started;
}

}  // namespace

FreshPages mapFreshPages(size_t bytes) {
  void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const FreshPages p{static_cast<std::byte*>(m), bytes};
#if defined(__SANITIZE_ADDRESS__)
  __lsan_register_root_region(p.at, p.bytes);
#endif
  if (bytes >= kHelpedBytes) populateBehind(p);
  return p;
}

void unmapFreshPages(const FreshPages& p) noexcept {
  if (!p.at) return;
#if defined(__SANITIZE_ADDRESS__)
  __lsan_unregister_root_region(p.at, p.bytes);
#endif
  ::munmap(p.at, p.bytes);
}

}  // namespace trtrace::capture
