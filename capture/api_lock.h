// TRT_SHIM_FORCE_SINGLE_THREAD_API: the lock every recorded Call holds (objects.cpp), so that one
// recorded call runs at a time, process-wide. Recursive: calls nest (a logger callback, an override).
#pragma once
#include <mutex>

namespace trtrace::capture {

inline std::recursive_mutex& apiLock() {
  static std::recursive_mutex m;
  return m;
}

}  // namespace trtrace::capture
