// Content hashes: XXH3-128 of a blob's bytes (blob key = hash + length).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace trtrace {

struct Hash128 {
  uint64_t lo = 0;  // XXH128_hash_t.low64
  uint64_t hi = 0;  // XXH128_hash_t.high64
  friend bool operator==(const Hash128&, const Hash128&) = default;
};

// XXH3-128 of `bytes` bytes at `data`.
Hash128 hash128(const void* data, uint64_t bytes);
// XXH3-128 of bytes that arrive in pieces (an engine the library streams through an IStreamWriter):
// the same hash as hash128 of all of them at once, with the count of bytes seen.
class StreamHash128 {
 public:
  StreamHash128();
  ~StreamHash128();
  StreamHash128(const StreamHash128&) = delete;
  StreamHash128& operator=(const StreamHash128&) = delete;
  void update(const void* data, uint64_t bytes);
  Hash128 digest() const;
  uint64_t bytes() const { return bytes_; }

 private:
  void* state_;  // XXH3_state_t (xxhash.h stays out of this header)
  uint64_t bytes_ = 0;
};

// 32 lowercase hex digits, high half first (the form used in CLI output and error messages).
std::string toHex(const Hash128& h);

// A blob reference: what the call log stores for weights kept in a blob block.
struct BlobRef {
  Hash128 hash;
  uint64_t length = 0;  // bytes
  friend bool operator==(const BlobRef&, const BlobRef&) = default;
};

// "blob <hex> (<n> B)": how messages name a blob.
std::string blobName(const BlobRef& r);

struct BlobRefHasher {
  size_t operator()(const BlobRef& r) const { return r.hash.lo ^ (r.hash.hi * 31) ^ r.length; }
};

}  // namespace trtrace
