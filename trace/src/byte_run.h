// ByteRun: the bytes of a call's draft, and of a batch of drafts (call_encoder.h, call_log.h).
// Room is made at the end and handed back unwritten: the caller writes every byte of it at once,
// so zero-filling it first (std::vector's resize) is wasted work, and std::vector's out-of-line
// growth path (_M_default_append, _M_range_insert) ran on every argument of every call. Here the
// common case is one compare and one add, inline; growth (doubling, realloc) is out of line.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace trtrace::detail {

class ByteRun {
 public:
  ByteRun() = default;
  ByteRun(ByteRun&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), size_(std::exchange(o.size_, 0)), cap_(std::exchange(o.cap_, 0)) {}
  ByteRun& operator=(ByteRun&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(size_, o.size_);
    std::swap(cap_, o.cap_);
    return *this;
  }
  ByteRun(const ByteRun&) = delete;
  ByteRun& operator=(const ByteRun&) = delete;
  ~ByteRun() { std::free(p_); }

  std::byte* data() { return p_; }
  const std::byte* data() const { return p_; }
  size_t size() const { return size_; }
  size_t capacity() const { return cap_; }
  bool empty() const { return size_ == 0; }
  void clear() { size_ = 0; }
  void reserve(size_t n) {
    if (n > cap_) [[unlikely]]
      regrow(n);
  }
  // `n` more bytes at the end, unwritten: the caller writes them.
  std::byte* extend(size_t n) {
    if (n > cap_ - size_) [[unlikely]]
      regrow(size_ + n);
    std::byte* at = p_ + size_;
    size_ += n;
    return at;
  }
  void append(const std::byte* from, size_t n) { std::memcpy(extend(n), from, n); }

 private:
  // At least `n` bytes of room (and twice the old): the bytes so far kept. Throws std::bad_alloc.
  [[gnu::cold, gnu::noinline]] void regrow(size_t n) {
    const size_t cap = n > 2 * cap_ ? n : 2 * cap_;
    void* p = std::realloc(p_, cap);
    if (!p) throw std::bad_alloc();
    p_ = static_cast<std::byte*>(p);
    cap_ = cap;
  }

  std::byte* p_ = nullptr;  // malloc'd: aligned for every field of a draft
  size_t size_ = 0, cap_ = 0;
};

}  // namespace trtrace::detail
