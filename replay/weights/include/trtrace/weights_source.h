// WeightsSource: the player's weights over one reader (docs/design.md, "Decode cache"). The reader
// gives container access (a blob's bytes by key); this is the player's memory policy over it: the
// compressed blobs decoded once into a decode cache, the trace's pages each read brought in given
// back in batches, and a second address for bytes that a second owner needs. One thread uses it; the
// views it hands out live while it does (a decode cache's are views into its mapping).
#pragma once
#include <cstdint>
#include <memory>

#include "trtrace/decode_cache.h"
#include "trtrace/reader.h"

namespace trtrace {
namespace detail {
class DecodeCache;
}

namespace replay {

class WeightsSource {
 public:
  explicit WeightsSource(const Reader& reader);
  ~WeightsSource();
  WeightsSource(const WeightsSource&) = delete;
  WeightsSource& operator=(const WeightsSource&) = delete;

  // Decodes every compressed blob the calls use, in parallel, into a decode cache
  // (trtrace/decode_cache.h), or finds one already made and checks it; blob() then hands out views
  // into its read-only mapping (zero-copy). Call once, before blob(). Progress on stderr
  // (trtrace/progress.h). Throws Error only for bad options; an unusable cache degrades to a
  // temporary file, then to decoding in memory, as the report says.
  DecodeCacheReport useDecodeCache(const DecodeCacheOptions& options);

  // The bytes of `ref` for the library: a view into the decode cache, else the reader's
  // (Reader::checkedBlob, or Reader::blob when not `checked`). The trace's pages that reading them
  // brought in (its block, and the neighbours the kernel mapped around each fault) then leave the
  // resident set, so the player's memory stays bounded however big the trace: in batches of about
  // 4 MiB read (a madvise costs ~10 us), so up to that stays resident until releaseNow(). Reads
  // later fault the pages back from the page cache.
  BlobView blob(const BlobRef& ref, bool checked);
  void releaseNow();

  // The same bytes as `view` (a zero-copy view from blob(): the trace's or the decode cache's
  // mapping) at another address: a second read-only mapping of the same file pages, so a second
  // owner of the bytes costs no memory. Empty when `view` does not start on a page of a mapping.
  BlobView alias(const BlobView& view) const;

 private:
  void release(const BlobView& v);  // the batch step of blob()

  const Reader& reader_;
  std::unique_ptr<detail::DecodeCache> cache_;  // compressed blobs decoded, or none
  struct Unreleased {                           // trace pages read and not released yet
    uint64_t lo = 0, hi = 0, bytes = 0;
  } unreleased_;
};

}  // namespace replay
}  // namespace trtrace
