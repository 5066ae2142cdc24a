// Reader: maps a trace read-only and gives zero-copy views of its call log and raw blobs.
//
// open() is O(1) for a closed trace (fixed header -> footer index). A trace that was not closed
// (crash, or still being written) is opened by a forward scan over its blocks that stops at the
// first incomplete or bad block: everything before it is usable, truncatedAt() says where.
// Every call-log segment is checked by the FlatBuffers Verifier before it is used; a compressed
// segment is inflated (into its own buffer, one segment at a time) and verified on every use.
// Lifetime of views: CallView, ValueView and the string_views/spans they hand out point into the
// mapping or into the inflated segment, so they are valid during the forEachCall callback (for a
// CallCursor: until its next next()); copy what must outlive that. ApiInfo and HeaderView stay
// valid as long as the Reader.
// A Reader is safe to use from many threads once opened (segment verification is synchronised).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trtrace/hash.h"
#include "trtrace/writer.h"

namespace trtrace {
namespace fb {
struct Call;
struct Value;
struct BuildResult;
}  // namespace fb

enum class ValueKind : uint8_t {  // same numbering as trtrace.fb.ValueKind (static_asserts: views.cpp)
  Null = 0,
  Bool,
  I64,
  U64,
  F32,
  F64,
  String,
  Enum,
  Dims,
  Handle,
  HandleArray,
  I64Array,
  F32Array,
  Bytes,
  WeightsInline,
  WeightsBlob,
  WeightsRandom,
};
std::string_view kindName(ValueKind k);
std::string_view statusName(CallStatus s);  // the schema's name: "Ok", "Failed", "Unsupported", "Exception"

// A value inside the mapping. Getters return the field the kind uses (0/empty otherwise).
class ValueView {
 public:
  explicit ValueView(const fb::Value* v = nullptr) : v_(v) {}
  ValueKind kind() const;
  bool asBool() const;
  int64_t asI64() const;   // I64, Bool, Enum value
  uint64_t asU64() const;  // U64, Handle
  double asF64() const;    // F32, F64
  std::string_view asString() const;
  uint32_t typeId() const;                    // Enum type id, Handle object type
  std::span<const int64_t> ints() const;      // Dims, I64Array
  std::span<const float> floats() const;      // F32Array
  std::span<const uint64_t> handles() const;  // HandleArray
  std::span<const std::byte> bytes() const;   // Bytes, WeightsInline
  uint32_t dtype() const;                     // Weights*
  uint64_t count() const;                     // Weights*
  BlobRef blob() const;                       // WeightsBlob
  uint64_t seed() const;                      // WeightsRandom
  uint64_t weightsPtr() const;                // Weights*: identity of the app's values pointer (0 = unknown, since 2.1)
  std::string toString() const;               // one-line rendering for dump

 private:
  const fb::Value* v_;
};

struct BuildResultView {
  bool ok = false;
  uint64_t engineSize = 0;
  Hash128 engineHash;
  std::vector<std::string_view> errors;
};

class CallView {
 public:
  explicit CallView(const fb::Call* c) : c_(c) {}
  uint64_t seq() const;
  uint64_t thread() const;
  uint32_t networkId() const;
  uint32_t apiId() const;
  uint64_t receiver() const;
  size_t argCount() const;
  ValueView arg(size_t i) const;
  std::optional<ValueView> ret() const;  // nullopt = void
  CallStatus status() const;
  std::string_view unsupportedInterface() const;
  uint32_t unsupportedSlot() const;
  std::string_view message() const;
  bool synthesized() const;  // written by the capture, not made by the app (format 2.5)
  std::optional<BuildResultView> buildResult() const;

 private:
  const fb::Call* c_;
};

struct ApiInfo {
  uint32_t id = 0;
  std::string_view interfaceName, methodName;
  std::vector<std::string_view> argNames;
};

// Bytes of one blob: a span into the mapping (raw blobs) or an owned, decompressed buffer.
class BlobView {
 public:
  BlobView() = default;
  static BlobView mapped(std::span<const std::byte> bytes) {
    BlobView v;
    v.span_ = bytes;
    return v;
  }
  static BlobView owned(std::unique_ptr<std::byte[]> buf, size_t n) {
    BlobView v;
    v.span_ = {buf.get(), n};
    v.owned_ = std::move(buf);
    return v;
  }
  // A view into memory that `keep` holds (another mapping), released with the last copy of `keep`.
  static BlobView kept(std::span<const std::byte> bytes, std::shared_ptr<const void> keep) {
    BlobView v;
    v.span_ = bytes;
    v.keep_ = std::move(keep);
    return v;
  }
  std::span<const std::byte> bytes() const { return span_; }
  const void* data() const { return span_.data(); }
  size_t size() const { return span_.size(); }
  bool isZeroCopy() const { return !owned_; }

 private:
  std::span<const std::byte> span_;
  std::unique_ptr<std::byte[]> owned_;
  std::shared_ptr<const void> keep_;
};

struct BlobInfo {
  BlobRef ref;
  uint64_t offset = 0;      // block header offset
  uint64_t storedSize = 0;  // data region bytes
  bool compressed = false;
  bool lost = false;               // released by the app before the capture read it (format.h, Lost): reads as zeros
  bool replaced = false;           // lost is set too: changed in place and rebound before any build read it (Replaced)
  uint64_t dataOffset = 0;         // file offset of the data region
  BlobHint hint = BlobHint::None;  // element type given to putBlob
};

struct SegmentInfo {
  uint64_t offset = 0;  // block header offset
  uint64_t firstSeq = 0;
  uint32_t calls = 0;
  uint64_t storedSize = 0;  // payload bytes on disk
  bool compressed = false;  // zstd (block flag kSegmentZstd)
};

struct HeaderView {
  uint16_t formatMajor = 0, formatMinor = 0;
  std::string_view producer, producerVersion, libraryName, libraryVersion, host;
  std::string_view libraryBuildId;  // format 2.2; empty in older traces
  std::vector<std::pair<std::string_view, std::string_view>> settings;
  uint64_t pid = 0, startTimeNs = 0;
};

struct VerifyReport {
  enum class Problem { Corrupt, Truncated };
  struct Issue {
    Problem problem;
    uint64_t offset;   // file offset of the damaged block (or of the cut)
    std::string what;  // one line naming the segment/blob/field
  };
  std::vector<Issue> issues;
  uint64_t segments = 0, calls = 0, blobs = 0, blobBytes = 0;
  uint64_t lostBlobs = 0, lostBytes = 0;  // stored Lost (format.h): not damage, said beside the verdict
  uint64_t replacedBlobs = 0;             // stored Replaced (format.h): not damage, and not lost either
  bool ok() const { return issues.empty(); }
  bool corrupt() const;    // any Corrupt issue
  bool truncated() const;  // a Truncated issue and no Corrupt one
};

// Blobs a trace's calls refer to that lie outside it, each a view into memory that `keep` holds (the
// mapped BIN of a JSON+BIN capture converted with WriterOptions::storeBlobs false). The bytes were
// hashed into these keys when the calls were converted.
struct ExternalBlobs {
  std::shared_ptr<const void> keep;
  std::unordered_map<BlobRef, std::span<const std::byte>, BlobRefHasher> blobs;
};

class Reader {
 public:
  static std::unique_ptr<Reader> open(const std::string& path);  // a regular file (trtrace/files.h)
  // A trace in an open file (not closed here; the reader keeps its own mapping); `name` in messages.
  static std::unique_ptr<Reader> open(int fd, const std::string& name);
  ~Reader();

  const std::string& path() const;
  const HeaderView& header() const;
  bool closedCleanly() const;                   // footer present and file length matches
  std::optional<uint64_t> truncatedAt() const;  // offset of the first incomplete/bad block
  std::string truncationMessage() const;        // "<path>: truncated at offset N (...)" or ""

  uint64_t callCount() const;
  size_t segmentCount() const;
  // Calls in seq order; stops early when fn returns false. Throws Error on a bad segment
  // (only possible for a closed trace whose bytes changed after close).
  void forEachCall(const std::function<bool(const CallView&)>& fn) const;
  void forEachCallInSegment(size_t segment, const std::function<bool(const CallView&)>& fn) const;
  // A segment's FlatBuffer (verified), e.g. to copy it into another trace: a view into the
  // mapping (raw segment) or an owned, inflated buffer (compressed segment).
  BlobView segmentBytes(size_t segment) const;
  // The same segment holding only its first `calls` calls (and all its API descriptors), as an
  // owned FlatBuffer: what `trtrace rewrite --salvage` keeps of the segment where it cuts.
  BlobView segmentPrefix(size_t segment, uint32_t calls) const;
  // Where a segment is and how it is stored (its block header only; nothing inflated).
  SegmentInfo segmentInfo(size_t segment) const;

  const ApiInfo* api(uint32_t apiId) const;  // nullptr if the trace does not describe it
  std::vector<const ApiInfo*> apis() const;  // sorted by id

  bool hasBlob(const BlobRef& ref) const;
  // The index entry of `ref` in blobs() (its stored copy, where a Lost one is listed too); nullptr
  // when the file holds none.
  const BlobInfo* blobInfo(const BlobRef& ref) const;
  BlobView blob(const Hash128& hash, uint64_t length) const;  // throws Error if missing/bad
  BlobView blob(const BlobRef& ref) const { return blob(ref.hash, ref.length); }
  // blob(), then its XXH3-128 checked against its key before anything uses the bytes: throws
  // Error (Corrupt) "<file>: blob <hex> (<n> B) at offset <n>: content does not match its hash
  // (damaged weights)".
  BlobView checkedBlob(const BlobRef& ref) const;
  // The bytes the file stores for `ref`, handed to `sink` (bytes, offset in the blob, n) in pieces
  // without holding the blob whole: a raw blob's as views of the mapping (4 MiB each, its pages
  // released from the reader's resident set once the sink returned), a compressed one's as it
  // decodes (chunk by chunk; a byte-grouped one in 256 KiB pieces). Returns their XXH3-128, for
  // the caller to compare with the key. Throws Error (Corrupt) for a damaged block or chunk or a
  // blob the file holds no bytes of (absent, or Lost).
  using BlobSink = std::function<void(const std::byte* data, uint64_t offset, uint64_t n)>;
  Hash128 streamBlob(const BlobRef& ref, const BlobSink& sink) const;
  const std::vector<BlobInfo>& blobs() const;  // sorted by (hash.hi, hash.lo, length), a Lost copy last
  uint64_t lostBlobs() const;               // blobs stored Lost with no other copy (they read as zeros; not Replaced)
  bool blobLost(const BlobRef& ref) const;  // `ref` is stored Lost (or Replaced) only
  bool blobReplaced(const BlobRef& ref) const;  // `ref` is stored Replaced only

  std::span<const std::byte> mapping() const;  // the whole mapped file
  // The mapped file, open read-only while the reader lives, for a caller that maps part of it again
  // (a second address for the same pages); -1 when it could not be kept.
  int mappedFd() const;

  // A blob the trace does not hold is looked up here (zero-copy views, not hashed again).
  void setExternalBlobs(std::shared_ptr<const ExternalBlobs> blobs);
  // Those blobs (nullptr when none were set): blobs() lists only the ones the file stores, so a
  // count of a capture's weights (trtrace info, diff) adds these.
  const ExternalBlobs* externalBlobs() const;

  // Checks the file header, every block (framing, checksums, zero padding), every segment
  // (Verifier), every blob (decodes it, XXH3-128, raw data 4 KiB alignment) and the footer index.
  // `progress(bytesDone, fileBytes)` is called before each block (long work: every blob is hashed).
  VerifyReport verify(const std::function<void(uint64_t, uint64_t)>& progress = {}) const;

  struct Impl;

 private:
  friend class CallCursor;
  explicit Reader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// What `trtrace verify` reports (and the Python API's verify()): reader.verify(progress), plus a
// trace whose blocks are all sound but that was never closed, as a Truncated issue (a clean prefix).
VerifyReport verifyTrace(const Reader& reader, const std::function<void(uint64_t, uint64_t)>& progress = {});

// The blobs the calls hand to the library (weights arguments), by index of reader.blobs(). With
// `network` >= 0 (a trace network id), only those of that network's calls and of calls of no network:
// what a replay of that network alone reads (replay/, the player's --network). A bad segment ends the
// walk: a replay stops there too.
std::vector<bool> usedBlobs(const Reader& reader, int64_t network = -1);

// Pull-style walk over a reader's calls in seq order, one segment in memory at a time (for tools
// that walk two traces side by side). The view next() returns is valid until the next next().
class CallCursor {
 public:
  explicit CallCursor(const Reader& reader);
  ~CallCursor();
  const CallView* next();  // nullptr after the last call; throws Error on a bad segment

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace trtrace
