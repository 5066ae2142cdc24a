// Reader::Impl: a mapped trace and its index (segments, blobs), found from the footer of a closed
// file or by a forward scan of an open one (reader_open.cpp); segments and blobs are checked on
// use (reader.cpp).
#pragma once
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "internal.h"
#include "trtrace/reader.h"

namespace trtrace {
struct Reader::Impl {
  std::string path;
  const std::byte* base = nullptr;
  uint64_t size = 0;
  format::FileHeader fh{};
  HeaderView header;
  bool closed = false;
  std::optional<uint64_t> trunc;
  std::string truncWhy;
  struct Seg {
    uint64_t offset;
    uint64_t firstSeq;
    uint32_t calls;
  };
  std::vector<Seg> segs;
  std::unique_ptr<std::atomic<int8_t>[]> segState;  // 0 unchecked, 1 good, -1 bad
  std::vector<BlobInfo> blobs;
  uint64_t totalCalls = 0;
  mutable std::once_flag apisOnce;
  mutable std::map<uint32_t, ApiInfo> apiMap;
  mutable std::deque<std::string> apiStrings;     // owns apiMap's names (segments may be inflated copies)
  std::shared_ptr<const ExternalBlobs> external;  // blobs outside the file (Reader::setExternalBlobs), or none
  int fd = -1;                                    // the mapped file (Reader::mappedFd)

  ~Impl();

  // ---- opening (reader_open.cpp) ----
  void map(int fd);        // the mapping, or one line naming why not
  bool checkFileHeader();  // false: cut inside it (an empty prefix); throws when bad
  void index();            // footer, else scan; then the per-segment state and blob order
  void readHeaderBlock(uint64_t off);
  void addBlob(uint64_t off);
  bool openFromFooter();
  void scan();

  // ---- use (reader.cpp) ----
  // One segment's verified FlatBuffer: a view into the mapping (raw) or an owned buffer
  // (compressed: inflated and verified on every use, so only the segments in use are in memory).
  struct SegmentFb {
    BlobView bytes;
    const fb::Segment* root = nullptr;
  };
  SegmentFb segment(size_t i) const;
  const fb::Call* callOf(size_t segment, const fb::CallRecord* rec) const;  // throws on an empty record
  const BlobInfo* findBlob(const BlobRef& ref) const;
  // The blob's index entry, its block (framing, checksum, record) checked against `ref`.
  const BlobInfo& locate(const BlobRef& ref) const;
  // The blob's bytes; with `checked`, their XXH3-128 is compared with the key (computed while a
  // compressed blob decodes).
  BlobView blob(const BlobRef& ref, bool checked) const;
  [[noreturn]] void blobError(const BlobRef& ref, uint64_t offset, const std::string& what) const;
};

bool blobLess(const BlobInfo& a, const BlobInfo& b);

namespace detail {
// The footer's index against itself and the file (reader_open.cpp): entries inside the file, segments
// in file and seq order, total_calls their calls' sum. "" when fine. The reader's open and verify
// both apply it: a footer that fails it is corruption for every tool.
std::string checkFooterIndex(const fb::Footer& f, uint64_t footerOffset);
// A segment against its index entry (first seq, calls): checked wherever a segment is read, so a
// footer that lies about one segment fails as soon as that segment is used. "" when fine.
std::string checkSegmentEntry(uint64_t firstSeq, uint64_t calls, uint64_t heldFirstSeq, uint64_t heldCalls);
inline uint64_t callsIn(const fb::Segment& s) { return s.calls() ? s.calls()->size() : 0; }
}  // namespace detail

}  // namespace trtrace
