// The decode cache of one Reader (trtrace/decode_cache.h; layout and rules in docs/design.md,
// "Decode cache"): a mapped file holding every compressed blob of the trace decoded, at offsets
// fixed by the blob index, found from a folder (checked by hash) or built in parallel.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
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
  // Only the blobs `used` marks (by index of the reader's blobs) are decoded.
  static std::unique_ptr<DecodeCache> open(const Reader::Impl& r, const std::vector<bool>& used, const DecodeCacheOptions& o,
                                           DecodeCacheReport& rep);
  ~DecodeCache();
  DecodeCache(const DecodeCache&) = delete;
  DecodeCache& operator=(const DecodeCache&) = delete;

  // The decoded bytes of blob `index` of the reader's index; nullptr when it is not in the cache.
  const std::byte* find(size_t index) const;
  // The cache file's mapping and descriptor (Reader::alias).
  std::span<const std::byte> mapping() const { return {map_, size_}; }
  int fd() const { return fd_; }

  static constexpr uint64_t kNone = ~uint64_t(0);

 private:
  DecodeCache() = default;
  static std::unique_ptr<DecodeCache> mapped(int fd, uint64_t length, std::vector<uint64_t> offsets);
  static std::unique_ptr<DecodeCache> build(const Reader::Impl& r, const struct Layout& L, int fd, unsigned threads,
                                            const std::string& what, DecodeCacheReport& rep);
  static std::unique_ptr<DecodeCache> reuse(const Reader::Impl& r, const Layout& L, int dfd, const std::string& name,
                                            const std::string& path, const DecodeCacheOptions& o, DecodeCacheReport& rep);
  static std::unique_ptr<DecodeCache> inFolder(const Reader::Impl& r, const Layout& L, const DecodeCacheOptions& o,
                                               DecodeCacheReport& rep);
  static std::unique_ptr<DecodeCache> inFolderAt(const Reader::Impl& r, const Layout& L, const DecodeCacheOptions& o,
                                                 int dfd, DecodeCacheReport& rep);

  const std::byte* map_ = nullptr;
  uint64_t size_ = 0;
  int fd_ = -1;
  std::vector<uint64_t> offsets_;  // per blob of the index: offset in the file, or kNone
};

}  // namespace trtrace::detail
