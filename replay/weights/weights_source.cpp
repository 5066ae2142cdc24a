// WeightsSource (weights_source.h): the decode cache, the release batching and the aliasing of the
// weights a replay hands to the library, over the reader's container access.
#include "trtrace/weights_source.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "decode_cache.h"
#include "trtrace/files.h"
#include "trtrace/format.h"

namespace trtrace::replay {
namespace F = format;

WeightsSource::WeightsSource(const Reader& reader) : reader_(reader) {}
WeightsSource::~WeightsSource() = default;

DecodeCacheReport WeightsSource::useDecodeCache(const DecodeCacheOptions& options) {
  DecodeCacheReport rep;
  cache_ = detail::DecodeCache::open(reader_, options, rep);
  return rep;
}

BlobView WeightsSource::blob(const BlobRef& ref, bool checked) {
  // In the decode cache (checked against its key when made or reused): a view into its mapping. The
  // trace's block is not read: its pages, and their neighbours, would join the resident set.
  if (cache_)
    if (const BlobInfo* in = reader_.blobInfo(ref))
      if (const std::byte* c = cache_->find(size_t(in - reader_.blobs().data())))
        return BlobView::mapped({c, ref.length});
  BlobView v = checked ? reader_.checkedBlob(ref) : reader_.blob(ref);
  release(v);
  return v;
}

// Nothing for a view outside the trace's mapping (a decode cache's, a lost blob's zeros, an owned
// buffer, a JSON+BIN capture's BIN).
void WeightsSource::release(const BlobView& v) {
  const std::span<const std::byte> map = reader_.mapping();
  const auto* p = static_cast<const std::byte*>(v.data());
  if (map.empty() || !v.size() || p < map.data() || p + v.size() > map.data() + map.size()) return;
  // A raw blob's header and record end at most one alignment step before its data (format.h: Raw
  // data starts on the next 4 KiB boundary after them, RawSmall on the next 64-byte one).
  constexpr uint64_t kFraming = sizeof(F::BlockHeader) + sizeof(F::BlobRecord) + F::kBlobAlign;
  const uint64_t at = static_cast<uint64_t>(p - map.data()), lo = at - std::min(at, kFraming), hi = at + v.size();
  constexpr uint64_t kBatch = 4 << 20;
  auto& u = unreleased_;
  u.lo = u.bytes ? std::min(u.lo, lo) : lo;
  u.hi = u.bytes ? std::max(u.hi, hi) : hi;
  u.bytes += hi - lo + 2 * files::kFaultAroundBytes;  // what reading it may have mapped
  if (u.bytes >= kBatch) releaseNow();
}

// One range over the batch (blobs are used in call order, which `trtrace rewrite` and the capture
// keep as file order; a madvise over pages that are not mapped costs little).
void WeightsSource::releaseNow() {
  if (unreleased_.bytes) files::releaseAround(reader_.mapping(), unreleased_.lo, unreleased_.hi);
  unreleased_ = {};
}

BlobView WeightsSource::alias(const BlobView& view) const {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto* p = static_cast<const std::byte*>(view.data());
  const std::pair<std::span<const std::byte>, int> maps[] = {
      {reader_.mapping(), reader_.mappedFd()},
      {cache_ ? cache_->mapping() : std::span<const std::byte>{}, cache_ ? cache_->fd() : -1}};
  for (const auto& [m, fd] : maps) {
    if (fd < 0 || !view.size() || p < m.data() || p + view.size() > m.data() + m.size() || (p - m.data()) % page)
      continue;
    void* q = ::mmap(nullptr, view.size(), PROT_READ, MAP_SHARED, fd, static_cast<off_t>(p - m.data()));
    if (q == MAP_FAILED) return {};
    const size_t n = view.size();
    std::shared_ptr<const void> keep(q, [n](const void* a) { ::munmap(const_cast<void*>(a), n); });
    return BlobView::kept({static_cast<const std::byte*>(q), n}, std::move(keep));
  }
  return {};
}

}  // namespace trtrace::replay
