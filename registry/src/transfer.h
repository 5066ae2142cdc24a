// What push and pull share: running blob transfers on a few threads, and the byte count shown as
// progress (bytes, rate, ETA: trtrace::Progress) while they run.
#pragma once
#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "trtrace/progress.h"

namespace trtrace::registry {

// fn(0..n-1) on up to `jobs` threads; after the first exception no new index starts, and that
// exception is rethrown here once all threads stopped.
inline void forEachParallel(size_t n, unsigned jobs, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first;
  std::mutex mu;
  auto work = [&] {
    for (size_t i; !failed && (i = next++) < n;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu);
        if (!first) first = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < std::max(1u, jobs) && t < n; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

// Bytes moved by all threads, shown through one Progress.
class ByteCounter {
 public:
  ByteCounter(const std::string& label, const std::string& phase, uint64_t total) : p_(label, phase, total) {}
  void add(uint64_t n) {
    std::lock_guard<std::mutex> lk(mu_);
    done_ += n;
    p_.update(done_);
  }

 private:
  std::mutex mu_;
  uint64_t done_ = 0;
  Progress p_;
};

}  // namespace trtrace::registry
