// Fresh memory that the application's thread fills on a capture (our objects: object_pool.h),
// mapped at once and made present by a helper thread while the application goes on. A page the
// application's thread touches first costs it a fault: 2.4-3.9 us each on the VM we measure on
// (BENCHMARKS.md), ~600 of them for calls-20k's 17,600 objects. A region asked for one step ahead
// of its use is present by the time it is used; one used sooner faults where it is touched first.
#pragma once
#include <cstddef>

namespace trtrace::capture {

struct FreshPages {
  std::byte* at = nullptr;
  size_t bytes = 0;
};

// `bytes` of zeroed memory (a whole number of pages), mapped now; from 64 KiB on, a detached helper
// thread ("trtrace-pages") makes its pages present (where none can start, they fault as they are
// used, as a smaller region's do: a thread's start costs more than its few faults).
// Throws std::bad_alloc when nothing can be mapped. Under LeakSanitizer it is a root region: what
// the objects in it point to is reachable. Making pages present changes no byte: the caller may
// fill the region at once, and unmapping it while the helper runs only makes the helper's call fail.
FreshPages mapFreshPages(size_t bytes);
void unmapFreshPages(const FreshPages& p) noexcept;

}  // namespace trtrace::capture
