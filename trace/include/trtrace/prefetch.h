// A cache hint for memory about to be written: the call log's batch, the capture's maps.
#pragma once

namespace trtrace {

// Asks for the line holding `p`, ready for writing; nothing waits for it. The line comes while
// other work runs, and the store that follows finds it in the cache. x86: `prefetchw`, which a CPU
// without it runs as a no-op, so the shim needs no newer target; elsewhere the compiler's hint.
inline void prefetchForWrite(const void* p) {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" ::"m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1);
#endif
}

}  // namespace trtrace
