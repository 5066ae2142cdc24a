// Bulk memory of our own (the registry's table, our objects' chunks): anonymous mappings, whose
// pages are the kernel's zero pages until first written. A mapping of whole 2 MiB units is aligned
// to them and asked to be made of huge pages (madvise; a kernel whose transparent huge pages are
// off maps 4 KiB pages): tens of thousands of objects then cost the application's thread
// a page fault per 2 MiB instead of one per 4 KiB.
#pragma once
#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>

namespace trtrace::capture {

inline constexpr size_t kHugePage = size_t{2} << 20;

// `bytes` of zero bytes, page-aligned (2 MiB-aligned for a multiple of 2 MiB); throws std::bad_alloc.
inline void* mapBulk(size_t bytes) {
  const bool huge = bytes % kHugePage == 0;
  const size_t span = huge ? bytes + kHugePage : bytes;  // room to align within
  void* p = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  if (!huge) return p;
  const uintptr_t at = reinterpret_cast<uintptr_t>(p), aligned = (at + kHugePage - 1) & ~(kHugePage - 1);
  if (aligned > at) ::munmap(p, aligned - at);
  if (const size_t tail = at + span - (aligned + bytes)) ::munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  ::madvise(reinterpret_cast<void*>(aligned), bytes, MADV_HUGEPAGE);  // advice: refused, it changes nothing
  return reinterpret_cast<void*>(aligned);
}

inline void unmapBulk(void* p, size_t bytes) noexcept {
  if (p) ::munmap(p, bytes);
}

}  // namespace trtrace::capture
