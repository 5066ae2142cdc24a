// The decode cache of one trace (trtrace/decode_cache.h; layout and rules in docs/design.md,
// "Decode cache"): a mapped file holding every compressed blob the calls use decoded, at offsets
// fixed by the reader's blob index, found in a folder (checked by hash) or built in parallel. Built
// on the reader's public container access only (Reader::blobs, Reader::streamBlob).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "trtrace/decode_cache.h"
#include "trtrace/reader.h"

namespace trtrace::detail {

struct Layout;  // decode_cache.cpp

class DecodeCache {
 public:
  // The cache for `r` under `o` (nullptr: no compressed blob, mode Off, or nothing usable: the
  // report says which). Never throws for a cache problem: it degrades (folder -> temp -> memory).
  // Only the blobs that calls hand to the library are decoded.
  static std::unique_ptr<DecodeCache> open(const Reader& r, const DecodeCacheOptions& o, DecodeCacheReport& rep);
  ~DecodeCache();
  DecodeCache(const DecodeCache&) = delete;
  DecodeCache& operator=(const DecodeCache&) = delete;

  // The decoded bytes of blob `index` of the reader's index; nullptr when it is not in the cache.
  const std::byte* find(size_t index) const;
  // The cache file's mapping and descriptor (WeightsSource::alias maps its pages again).
  std::span<const std::byte> mapping() const { return {map_, size_}; }
  int fd() const { return fd_; }

  static constexpr uint64_t kNone = ~uint64_t(0);

 private:
  DecodeCache() = default;
  static std::unique_ptr<DecodeCache> mapped(int fd, uint64_t length, std::vector<uint64_t> offsets);
  static std::unique_ptr<DecodeCache> build(const Reader& r, const struct Layout& L, int fd, unsigned threads,
                                            const std::string& what, DecodeCacheReport& rep);
  static std::unique_ptr<DecodeCache> reuse(const Reader& r, const Layout& L, int dfd, const std::string& name,
                                            const std::string& path, const DecodeCacheOptions& o,
                                            DecodeCacheReport& rep);
  static std::unique_ptr<DecodeCache> inFolder(const Reader& r, const Layout& L, const DecodeCacheOptions& o,
                                               DecodeCacheReport& rep);
  static std::unique_ptr<DecodeCache> inFolderAt(const Reader& r, const Layout& L, const DecodeCacheOptions& o, int dfd,
                                                 DecodeCacheReport& rep);

  const std::byte* map_ = nullptr;
  uint64_t size_ = 0;
  int fd_ = -1;
  std::vector<uint64_t> offsets_;  // per blob of the index: offset in the file, or kNone
};

}  // namespace trtrace::detail
