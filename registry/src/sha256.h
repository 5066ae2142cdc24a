// SHA-256, the registry's digest (OpenSSL's EVP), and the file ranges a layer is made of.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace trtrace::registry {

bool validDigest(std::string_view d);  // "sha256:" + 64 lowercase hex (reference.cpp)

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* data, size_t n);
  std::string digest();  // "sha256:<hex>"; once
 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

std::string sha256Digest(std::string_view bytes);

// A byte range of a file.
struct Range {
  uint64_t offset = 0, size = 0;
};

// Reads `n` bytes at `offset` of `fd` (pread until done); throws Error (Io) naming `name`.
void readAt(int fd, const std::string& name, uint64_t offset, void* buf, size_t n);

// Writes `n` bytes at `offset` of `fd` (pwrite until done); throws Error (Io) naming `name`.
void writeAt(int fd, const std::string& name, uint64_t offset, const void* buf, size_t n);

// A file descriptor, closed when it goes out of scope (-1: none).
class UniqueFd {
 public:
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// SHA-256 of the ranges of `fd`, in order, read 1 MiB at a time.
std::string sha256OfRanges(int fd, const std::string& name, const std::vector<Range>& ranges);

}  // namespace trtrace::registry
