// Helpers shared by the trace library's rooms and the tools (internal.h): XXH3-128 and its hex form,
// the 32-bit checks (XXH3 low bits) of headers and blocks, file/block header construction, byte grouping of blob
// chunks, block type names.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include <xxhash.h>

#include "internal.h"
#include "trtrace/hash.h"

namespace trtrace {

Hash128 hash128(const void* data, uint64_t bytes) {
  XXH128_hash_t h = XXH3_128bits(data, bytes);
  return {h.low64, h.high64};
}

StreamHash128::StreamHash128() : state_(XXH3_createState()) {
  if (!state_) throw std::bad_alloc();
  XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_));
}

StreamHash128::~StreamHash128() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void StreamHash128::update(const void* data, uint64_t bytes) {
  XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), data, bytes);
  bytes_ += bytes;
}

Hash128 StreamHash128::digest() const {
  XXH128_hash_t h = XXH3_128bits_digest(static_cast<const XXH3_state_t*>(state_));
  return {h.low64, h.high64};
}

std::string toHex(const Hash128& h) {
  char buf[33];
  snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.hi),
           static_cast<unsigned long long>(h.lo));
  return buf;
}

namespace detail {

uint32_t check32(const void* data, size_t bytes) { return static_cast<uint32_t>(XXH3_64bits(data, bytes)); }

uint32_t fileHeaderCheck(const format::FileHeader& h) { return check32(&h, offsetof(format::FileHeader, headerCheck)); }

format::FileHeader makeFileHeader(uint64_t fileLength, uint64_t footerOffset) {
  format::FileHeader h{};
  std::memcpy(h.magic, format::kFileMagic, sizeof h.magic);
  h.versionMajor = format::kVersionMajor;
  h.versionMinor = format::kVersionMinor;
  h.headerSize = sizeof(format::FileHeader);
  h.fileLength = fileLength;
  h.footerOffset = footerOffset;
  h.headerCheck = fileHeaderCheck(h);
  return h;
}

uint32_t blockHeaderCheck(const format::BlockHeader& h) {
  return check32(&h, offsetof(format::BlockHeader, headerCheck));
}

format::BlockHeader makeBlockHeader(format::BlockType type, uint64_t payloadSize, uint64_t checkedSize,
                                    uint32_t payloadCheck, uint16_t flags) {
  format::BlockHeader h{};
  h.magic = format::kBlockMagic;
  h.type = static_cast<uint16_t>(type);
  h.flags = flags;
  h.payloadSize = payloadSize;
  h.checkedSize = checkedSize;
  h.payloadCheck = payloadCheck;
  h.headerCheck = blockHeaderCheck(h);
  return h;
}

// Specialised per element size: one pass over the interleaved side with K output (input) streams,
// vectorised by the compiler (the generic loop with a run-time K ran at ~0.3x memcpy).
template <unsigned K>
__attribute__((optimize("O3"))) static void groupK(const std::byte* __restrict src, std::byte* __restrict dst,
                                                   size_t m) {
  for (size_t i = 0; i < m; ++i)
    for (unsigned b = 0; b < K; ++b) dst[b * m + i] = src[i * K + b];
}
// `count` elements from planes `stride` bytes apart.
template <unsigned K>
__attribute__((optimize("O3"))) static void ungroupK(const std::byte* __restrict src, std::byte* __restrict dst,
                                                     size_t count, size_t stride) {
  for (size_t i = 0; i < count; ++i)
    for (unsigned b = 0; b < K; ++b) dst[i * K + b] = src[b * stride + i];
}

void byteGroup(const std::byte* src, std::byte* dst, size_t n, unsigned k) {
  const size_t m = n / k;
  if (k == 2) return groupK<2>(src, dst, m);
  if (k == 4) return groupK<4>(src, dst, m);
  for (unsigned b = 0; b < k; ++b)
    for (size_t i = 0; i < m; ++i) dst[b * m + i] = src[i * k + b];
}

void byteUngroup(const std::byte* src, std::byte* dst, size_t n, unsigned k) {
  byteUngroupRange(src, dst, n / k, k, 0, n / k);
}

void byteUngroupRange(const std::byte* src, std::byte* dst, size_t m, unsigned k, size_t first, size_t count) {
  src += first;
  if (k == 2) return ungroupK<2>(src, dst, count, m);
  if (k == 4) return ungroupK<4>(src, dst, count, m);
  for (unsigned b = 0; b < k; ++b)
    for (size_t i = 0; i < count; ++i) dst[i * k + b] = src[b * m + i];
}

unsigned transformElementSize(format::BlobTransform t) {
  switch (t) {
    case format::BlobTransform::ByteGroup2: return 2;
    case format::BlobTransform::ByteGroup4: return 4;
    default: return 1;
  }
}

std::string errnoText() { return std::strerror(errno); }

const char* blockTypeName(uint16_t type) {
  switch (static_cast<format::BlockType>(type)) {
    case format::BlockType::Header: return "header";
    case format::BlockType::Segment: return "segment";
    case format::BlockType::Blob: return "blob";
    case format::BlockType::Footer: return "footer";
  }
  return "unknown";
}

}  // namespace detail
}  // namespace trtrace
