// Reader: see trtrace/reader.h for the contract and docs/format.md for the layout.
#include "trtrace/reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <tuple>

#include <xxhash.h>
#include <zstd.h>

#include "internal.h"
#include "trtrace/files.h"

namespace trtrace {
namespace F = format;

namespace {

// Result of checking one block's framing and contents.
struct BlockCheck {
  enum Status { Ok, Truncated, Corrupt } status = Ok;
  F::BlockHeader h{};
  bool headerValid = false;  // h can be trusted (framing known even if the payload is bad)
  uint64_t next = 0;         // offset of the following block
  std::string why;
  // Segment blocks: the verified FlatBuffer, in the mapping (raw) or in `inflated` (compressed).
  const std::byte* fbuf = nullptr;
  uint64_t fbufSize = 0;
  std::unique_ptr<std::byte[]> inflated;
};

bool allZero(const std::byte* p, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    if (p[i] != std::byte{0}) return false;
  return true;
}

// The writer's chunk size is at most 1 GiB (WriterOptions::chunkBytes); a larger one is damage
// (and would make the decoder allocate up to 4 GiB per chunk on the word of one record).
constexpr uint64_t kMaxChunkRawSize = uint64_t(1) << 30;

// Structural checks of a blob block (record, chunk table, raw alignment). "" when fine.
std::string checkBlobPayload(const std::byte* base, uint64_t at, const F::BlockHeader& h) {
  if (h.payloadSize < sizeof(F::BlobRecord) || h.checkedSize < sizeof(F::BlobRecord))
    return "blob record too short";
  F::BlobRecord r;
  std::memcpy(&r, base + at + sizeof h, sizeof r);
  if (h.checkedSize != sizeof r + uint64_t(r.chunkCount) * sizeof(F::ChunkEntry))
    return "blob record: chunk table size does not match";
  if (r.dataOffset < h.checkedSize || r.dataOffset > h.payloadSize ||
      h.payloadSize - r.dataOffset != r.storedSize)
    return "blob record: data region out of bounds";
  if (r.encoding == uint16_t(F::BlobEncoding::Raw)) {
    if (r.chunkCount != 0 || r.storedSize != r.rawSize) return "raw blob: sizes disagree";
    if ((at + sizeof h + r.dataOffset) % F::kBlobAlign != 0) return "raw blob data not 4 KiB aligned";
    if (!allZero(base + at + sizeof h + sizeof r, r.dataOffset - sizeof r))
      return "non-zero bytes in alignment padding";
    return "";
  }
  if (r.encoding != uint16_t(F::BlobEncoding::Zstd)) return "blob record: unknown encoding";
  if (r.transform > uint16_t(F::BlobTransform::ByteGroup4)) return "blob record: unknown transform";
  if (r.chunkRawSize == 0 || r.chunkRawSize > kMaxChunkRawSize)
    return "blob record: chunk size out of range";
  if (r.chunkCount != (r.rawSize + r.chunkRawSize - 1) / r.chunkRawSize)
    return "blob record: chunk count does not match";
  const auto* table = reinterpret_cast<const F::ChunkEntry*>(base + at + sizeof h + sizeof r);
  for (uint32_t c = 0; c < r.chunkCount; ++c) {
    F::ChunkEntry e;
    std::memcpy(&e, table + c, sizeof e);
    if (e.offset > r.storedSize || e.storedSize > r.storedSize - e.offset)
      return "chunk " + std::to_string(c) + " out of bounds";
  }
  return "";
}

std::string hex16(uint16_t v) {
  char buf[8];
  snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

// A compressed segment's payload (SegmentZstdHeader + one zstd frame), whose checksum already
// matched: decompressed into an owned buffer, at most kMaxSegmentRawSize bytes. "" when fine.
std::string inflateSegment(const std::byte* payload, uint64_t n, std::unique_ptr<std::byte[]>& out) {
  if (n < sizeof(F::SegmentZstdHeader)) return "compressed segment: header too short";
  F::SegmentZstdHeader zh;
  std::memcpy(&zh, payload, sizeof zh);
  if (zh.reserved != 0) return "compressed segment: reserved field not zero";
  if (zh.rawSize == 0 || zh.rawSize > F::kMaxSegmentRawSize)
    return "compressed segment: size " + std::to_string(zh.rawSize) + " out of range";
  const std::byte* frame = payload + sizeof zh;
  const size_t frameN = n - sizeof zh;
  // Exactly one frame, filling the payload, that declares the recorded size: checked before the
  // buffer is allocated.
  if (ZSTD_findFrameCompressedSize(frame, frameN) != frameN)
    return "compressed segment: not one zstd frame filling the payload";
  if (ZSTD_getFrameContentSize(frame, frameN) != zh.rawSize)
    return "compressed segment: frame does not declare the recorded size";
  try {
    out = std::make_unique_for_overwrite<std::byte[]>(zh.rawSize);
  } catch (const std::bad_alloc&) {
    return "compressed segment: cannot allocate " + std::to_string(zh.rawSize) + " bytes";
  }
  size_t z = ZSTD_decompress(out.get(), zh.rawSize, frame, frameN);
  if (ZSTD_isError(z) || z != zh.rawSize) return "compressed segment does not decompress";
  if (detail::check32(out.get(), zh.rawSize) != zh.rawCheck)
    return "compressed segment: decompressed bytes fail their check";
  return "";
}

// The one check of a call record beyond the FlatBuffers Verifier, applied wherever a segment is
// read (verify, the player, every CLI tool), so verify OK means every call decodes. The Verifier
// checks a vector's 4-byte length field, not the alignment of 8-byte elements, and alignment only
// relative to the nested Call buffer's start: the writer places those starts on 8-byte boundaries
// and aligns non-empty 8-byte arrays, so either off that boundary is damage (found by fuzzing).
// An EMPTY array is fine wherever it lies: FlatBuffers does not pre-align zero-length vectors (a
// scalar's Dims is a 4-aligned empty array), and no element of it is ever read.
std::string checkCallRecord(const fb::CallRecord* rec) {
  if (!rec->call()) return "";  // an empty record is reported by whoever walks the calls
  if ((reinterpret_cast<uintptr_t>(rec->call()->data()) & 7) != 0) return "call record not 8-byte aligned";
  const fb::Call* c = rec->call_nested_root();
  auto misaligned = [](const auto* v) {
    return v && v->size() != 0 && reinterpret_cast<uintptr_t>(v->data()) % 8 != 0;
  };
  auto bad = [&](const fb::Value* v) { return v && (misaligned(v->ints()) || misaligned(v->handles())); };
  bool any = bad(c->ret());
  if (c->args())
    for (auto* v : *c->args()) any = any || bad(v);
  return any ? "call " + std::to_string(c->seq()) + ": an array of 8-byte values is misaligned" : "";
}

BlockCheck checkBlock(const std::byte* base, uint64_t size, uint64_t at) {
  BlockCheck b;
  auto fail = [&](BlockCheck::Status s, std::string why) { b.status = s; b.why = std::move(why); return std::move(b); };
  if (size - at < sizeof(F::BlockHeader)) return fail(BlockCheck::Truncated, "incomplete block header");
  std::memcpy(&b.h, base + at, sizeof b.h);
  if (allZero(base + at, sizeof b.h)) return fail(BlockCheck::Truncated, "block never completed (zero header)");
  if (b.h.magic != F::kBlockMagic || b.h.headerCheck != detail::blockHeaderCheck(b.h))
    return fail(BlockCheck::Corrupt, "bad block header");
  b.headerValid = true;
  uint64_t payloadAt = at + sizeof b.h;
  if (b.h.payloadSize > size - payloadAt) return fail(BlockCheck::Truncated, "block runs past end of file");
  b.next = F::alignUp(payloadAt + b.h.payloadSize, F::kBlockAlign);
  if (b.h.checkedSize > b.h.payloadSize) return fail(BlockCheck::Corrupt, "bad block header");
  if (detail::check32(base + payloadAt, b.h.checkedSize) != b.h.payloadCheck)
    return fail(BlockCheck::Corrupt, "checksum mismatch");
  uint64_t padEnd = std::min(b.next, size);
  if (!allZero(base + payloadAt + b.h.payloadSize, padEnd - payloadAt - b.h.payloadSize))
    return fail(BlockCheck::Corrupt, "non-zero bytes in block padding");
  // Flags this reader does not know change how the payload reads: refused, never guessed.
  const auto type = static_cast<F::BlockType>(b.h.type);
  const bool knownType = type == F::BlockType::Header || type == F::BlockType::Segment ||
                         type == F::BlockType::Blob || type == F::BlockType::Footer;
  const uint16_t knownFlags = type == F::BlockType::Segment ? F::kKnownSegmentFlags : 0;
  if (knownType && (b.h.flags & ~knownFlags))
    return fail(BlockCheck::Corrupt, "unknown block flags " + hex16(b.h.flags) + " (written by a newer trtrace?)");
  const auto* p = reinterpret_cast<const uint8_t*>(base + payloadAt);
  flatbuffers::Verifier v(p, b.h.payloadSize);
  switch (type) {
    case F::BlockType::Header:
      if (!v.VerifyBuffer<fb::Header>(nullptr)) return fail(BlockCheck::Corrupt, "header FlatBuffer fails verification");
      break;
    case F::BlockType::Segment: {
      b.fbuf = base + payloadAt;
      b.fbufSize = b.h.payloadSize;
      if (b.h.flags & F::kSegmentZstd) {
        if (auto why = inflateSegment(base + payloadAt, b.h.payloadSize, b.inflated); !why.empty())
          return fail(BlockCheck::Corrupt, why);
        F::SegmentZstdHeader zh;
        std::memcpy(&zh, base + payloadAt, sizeof zh);
        b.fbuf = b.inflated.get();
        b.fbufSize = zh.rawSize;
      }
      flatbuffers::Verifier sv(reinterpret_cast<const uint8_t*>(b.fbuf), b.fbufSize);
      if (!sv.VerifyBuffer<fb::Segment>(nullptr)) return fail(BlockCheck::Corrupt, "segment FlatBuffer fails verification");
      if (auto* calls = flatbuffers::GetRoot<fb::Segment>(b.fbuf)->calls())
        for (auto* rec : *calls)
          if (auto why = checkCallRecord(rec); !why.empty()) return fail(BlockCheck::Corrupt, why);
      break;
    }
    case F::BlockType::Footer:
      if (!v.VerifyBuffer<fb::Footer>(nullptr)) return fail(BlockCheck::Corrupt, "footer FlatBuffer fails verification");
      break;
    case F::BlockType::Blob:
      if (auto why = checkBlobPayload(base, at, b.h); !why.empty()) return fail(BlockCheck::Corrupt, why);
      break;
  }
  return b;
}

F::BlobRecord blobRecordAt(const std::byte* base, uint64_t at) {
  F::BlobRecord r;
  std::memcpy(&r, base + at + sizeof(F::BlockHeader), sizeof r);
  return r;
}

bool blobLess(const BlobInfo& a, const BlobInfo& b) {
  return std::make_tuple(a.ref.hash.hi, a.ref.hash.lo, a.ref.length) <
         std::make_tuple(b.ref.hash.hi, b.ref.hash.lo, b.ref.length);
}

std::string blobName(const BlobRef& r) { return "blob " + toHex(r.hash) + " (" + std::to_string(r.length) + " B)"; }

}  // namespace

struct Reader::Impl {
  std::string path;
  const std::byte* base = nullptr;
  uint64_t size = 0;
  F::FileHeader fh{};
  HeaderView header;
  bool closed = false;
  std::optional<uint64_t> trunc;
  std::string truncWhy;
  struct Seg { uint64_t offset; uint64_t firstSeq; uint32_t calls; };
  std::vector<Seg> segs;
  std::unique_ptr<std::atomic<int8_t>[]> segState;  // 0 unchecked, 1 good, -1 bad
  std::vector<BlobInfo> blobs;
  uint64_t totalCalls = 0;
  mutable std::once_flag apisOnce;
  mutable std::map<uint32_t, ApiInfo> apiMap;
  mutable std::deque<std::string> apiStrings;  // owns apiMap's names (segments may be inflated copies)

  ~Impl() {
    if (base) ::munmap(const_cast<std::byte*>(base), size);
  }

  std::string at(uint64_t off) const { return path + ": offset " + std::to_string(off); }

  void readHeaderBlock(uint64_t off, uint64_t payloadSize) {
    auto* h = flatbuffers::GetRoot<fb::Header>(base + off + sizeof(F::BlockHeader));
    auto s = [](const flatbuffers::String* x) { return x ? std::string_view(x->c_str(), x->size()) : std::string_view(); };
    header.formatMajor = h->format_major();
    header.formatMinor = h->format_minor();
    header.producer = s(h->producer());
    header.producerVersion = s(h->producer_version());
    header.libraryName = s(h->library_name());
    header.libraryVersion = s(h->library_version());
    header.libraryBuildId = s(h->library_build_id());
    header.host = s(h->host());
    header.pid = h->pid();
    header.startTimeNs = h->start_time_ns();
    if (h->settings())
      for (auto* kv : *h->settings()) header.settings.emplace_back(s(kv->key()), s(kv->value()));
  }

  void addBlob(uint64_t off) {
    auto r = blobRecordAt(base, off);
    BlobInfo bi;
    bi.ref = {{r.hashLo, r.hashHi}, r.rawSize};
    bi.offset = off;
    bi.storedSize = r.storedSize;
    bi.compressed = r.encoding != uint16_t(F::BlobEncoding::Raw);
    bi.dataOffset = off + sizeof(F::BlockHeader) + r.dataOffset;
    bi.hint = static_cast<BlobHint>(r.elementHint);
    blobs.push_back(bi);
  }

  // O(1) path: the footer of a cleanly closed file. False if anything disagrees.
  bool openFromFooter() {
    if (fh.fileLength != size || fh.footerOffset < sizeof fh || fh.footerOffset >= size) return false;
    auto fc = checkBlock(base, size, fh.footerOffset);
    if (fc.status != BlockCheck::Ok || fc.h.type != uint16_t(F::BlockType::Footer) || fc.next != size)
      return false;
    auto hc = checkBlock(base, size, sizeof fh);
    if (hc.status != BlockCheck::Ok || hc.h.type != uint16_t(F::BlockType::Header)) return false;
    readHeaderBlock(sizeof fh, hc.h.payloadSize);
    auto* f = flatbuffers::GetRoot<fb::Footer>(base + fh.footerOffset + sizeof(F::BlockHeader));
    if (f->segments())
      for (auto* e : *f->segments()) {
        if (e->offset() < sizeof fh || e->offset() >= fh.footerOffset) return false;
        segs.push_back({e->offset(), e->first_seq(), e->calls()});
      }
    if (f->blobs())
      for (auto* e : *f->blobs()) {
        if (e->offset() < sizeof fh || e->offset() >= fh.footerOffset) return false;
        BlobInfo bi;
        bi.ref = {{e->hash_lo(), e->hash_hi()}, e->length()};
        bi.offset = e->offset();
        bi.storedSize = e->stored();
        bi.dataOffset = e->data_offset();
        bi.compressed = e->encoding() != uint16_t(F::BlobEncoding::Raw);
        bi.hint = static_cast<BlobHint>(e->hint());
        blobs.push_back(bi);
      }
    totalCalls = f->total_calls();
    // Blob records are not touched here (O(1) open); each is checked when the blob is read.
    closed = true;
    return true;
  }

  // Forward scan: every complete, valid block up to the first bad one.
  void scan() {
    segs.clear();
    blobs.clear();
    totalCalls = 0;
    uint64_t pos = sizeof fh;
    bool sawHeader = false;
    while (pos < size) {
      auto bc = checkBlock(base, size, pos);
      if (bc.status != BlockCheck::Ok) {
        trunc = pos;
        truncWhy = bc.why;
        return;
      }
      auto type = static_cast<F::BlockType>(bc.h.type);
      if (type == F::BlockType::Header && !sawHeader) {
        readHeaderBlock(pos, bc.h.payloadSize);
        sawHeader = true;
      } else if (type == F::BlockType::Segment) {  // inflated one at a time, then dropped
        auto* s = flatbuffers::GetRoot<fb::Segment>(bc.fbuf);
        uint32_t n = s->calls() ? s->calls()->size() : 0;
        segs.push_back({pos, s->first_seq(), n});
        totalCalls += n;
      } else if (type == F::BlockType::Blob) {
        addBlob(pos);
      } else if (type == F::BlockType::Footer) {
        return;  // a closed file whose header disagrees with its size: everything before counts
      }
      pos = bc.next;
    }
    if (fh.fileLength > size) {
      trunc = size;
      truncWhy = "file is shorter than its recorded length " + std::to_string(fh.fileLength);
    } else if (pos > size) {  // the last block is whole; the cut fell in its zero padding
      trunc = size;
      truncWhy = "file ends inside the padding of its last block";
    }
  }

  // One segment's verified FlatBuffer: a view into the mapping (raw) or an owned buffer
  // (compressed: inflated and verified on every use, so only the segments in use are in memory).
  struct SegmentFb {
    BlobView bytes;
    const fb::Segment* root = nullptr;
  };
  SegmentFb segment(size_t i) const {
    if (i >= segs.size()) throw Error(Error::Kind::Usage, path + ": no segment " + std::to_string(i));
    auto name = [&] { return path + ": segment " + std::to_string(i) + " at offset " + std::to_string(segs[i].offset); };
    int8_t st = segState[i].load(std::memory_order_acquire);
    if (st < 0) throw Error(Error::Kind::Corrupt, name() + " is damaged");
    F::BlockHeader h;
    std::memcpy(&h, base + segs[i].offset, sizeof h);  // within the file: checked at open
    if (st == 0 || (h.flags & F::kSegmentZstd)) {
      auto bc = checkBlock(base, size, segs[i].offset);
      bool good = bc.status == BlockCheck::Ok && bc.h.type == uint16_t(F::BlockType::Segment);
      if (!good) {
        segState[i].store(-1, std::memory_order_release);
        throw Error(Error::Kind::Corrupt, name() + ": " + (bc.why.empty() ? "not a segment block" : bc.why));
      }
      segState[i].store(1, std::memory_order_release);
      SegmentFb s;
      s.bytes = bc.inflated ? BlobView::owned(std::move(bc.inflated), bc.fbufSize)
                            : BlobView::mapped({bc.fbuf, bc.fbufSize});
      s.root = flatbuffers::GetRoot<fb::Segment>(s.bytes.data());
      return s;
    }
    SegmentFb s;  // a raw segment verified before
    s.bytes = BlobView::mapped({base + segs[i].offset + sizeof h, h.payloadSize});
    s.root = flatbuffers::GetRoot<fb::Segment>(s.bytes.data());
    return s;
  }

  const BlobInfo* findBlob(const BlobRef& ref) const {
    BlobInfo key;
    key.ref = ref;
    auto it = std::lower_bound(blobs.begin(), blobs.end(), key, blobLess);
    if (it == blobs.end() || !(it->ref == ref)) return nullptr;
    return &*it;
  }

  // Decodes a compressed blob chunk by chunk into dest (if given) and/or a hash state.
  void decode(const BlobInfo& bi, std::byte* dest, XXH3_state_t* hs) const {
    auto r = blobRecordAt(base, bi.offset);
    const std::byte* data = base + bi.offset + sizeof(F::BlockHeader) + r.dataOffset;
    const auto* table = reinterpret_cast<const F::ChunkEntry*>(base + bi.offset + sizeof(F::BlockHeader) + sizeof r);
    const unsigned k = detail::transformElementSize(static_cast<F::BlobTransform>(r.transform));
    // Scratch for one chunk, never larger than the blob (a tiny blob may declare a huge chunk size).
    const uint64_t chunkMax = std::min<uint64_t>(r.chunkRawSize, r.rawSize);
    std::unique_ptr<std::byte[]> out, grouped;
    if (!dest) out = std::make_unique_for_overwrite<std::byte[]>(chunkMax);
    if (k > 1) grouped = std::make_unique_for_overwrite<std::byte[]>(chunkMax);
    std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
    for (uint32_t c = 0; c < r.chunkCount; ++c) {
      F::ChunkEntry e;
      std::memcpy(&e, table + c, sizeof e);
      uint64_t off = uint64_t(c) * r.chunkRawSize, n = std::min<uint64_t>(r.chunkRawSize, r.rawSize - off);
      std::byte* dst = dest ? dest + off : out.get();
      std::byte* stage = k > 1 ? grouped.get() : dst;
      const std::byte* src = data + e.offset;
      if (e.flags & 1) {
        size_t z = ZSTD_decompressDCtx(dctx.get(), stage, n, src, e.storedSize);
        if (ZSTD_isError(z) || z != n)
          throw Error(Error::Kind::Corrupt, path + ": " + blobName(bi.ref) + " at offset " +
                                                std::to_string(bi.offset) + ": chunk " + std::to_string(c) +
                                                " does not decompress");
      } else {
        if (e.storedSize != n)
          throw Error(Error::Kind::Corrupt, path + ": " + blobName(bi.ref) + " at offset " +
                                                std::to_string(bi.offset) + ": chunk " + std::to_string(c) +
                                                " has the wrong size");
        if (k > 1 || dest) std::memcpy(stage, src, n);
        else stage = const_cast<std::byte*>(src), dst = stage;  // hash straight from the mapping
      }
      if (k > 1) detail::byteUngroup(stage, dst, n, k);
      if (hs) XXH3_128bits_update(hs, dst, n);
    }
  }

  BlobView blob(const BlobRef& ref) const {
    const BlobInfo* bi = findBlob(ref);
    if (!bi) throw Error(Error::Kind::Corrupt, path + ": " + blobName(ref) + " is not in the trace");
    auto bc = checkBlock(base, size, bi->offset);
    if (bc.status != BlockCheck::Ok || bc.h.type != uint16_t(F::BlockType::Blob))
      throw Error(Error::Kind::Corrupt, path + ": " + blobName(ref) + " at offset " +
                                            std::to_string(bi->offset) + ": " +
                                            (bc.why.empty() ? "not a blob block" : bc.why));
    auto r = blobRecordAt(base, bi->offset);
    if (r.hashLo != ref.hash.lo || r.hashHi != ref.hash.hi || r.rawSize != ref.length ||
        bi->dataOffset != bi->offset + sizeof(F::BlockHeader) + r.dataOffset)
      throw Error(Error::Kind::Corrupt, path + ": " + blobName(ref) + " at offset " +
                                            std::to_string(bi->offset) + ": index and record disagree");
    if (r.encoding == uint16_t(F::BlobEncoding::Raw))
      return BlobView::mapped({base + bi->dataOffset, r.rawSize});  // zero-copy into the mapping
    // Before allocating rawSize bytes: every chunk must declare the size the record says, so
    // the allocation is what the stored data really decodes to, not one record's say-so.
    const auto* table = reinterpret_cast<const F::ChunkEntry*>(base + bi->offset + sizeof(F::BlockHeader) + sizeof r);
    const std::byte* data = base + bi->dataOffset;
    for (uint32_t c = 0; c < r.chunkCount; ++c) {
      F::ChunkEntry e;
      std::memcpy(&e, table + c, sizeof e);
      uint64_t n = std::min<uint64_t>(r.chunkRawSize, r.rawSize - uint64_t(c) * r.chunkRawSize);
      bool fits = (e.flags & 1) ? [&] {
        unsigned long long z = ZSTD_getFrameContentSize(data + e.offset, e.storedSize);
        return z == ZSTD_CONTENTSIZE_UNKNOWN || z == n;
      }() : e.storedSize == n;
      if (!fits)
        throw Error(Error::Kind::Corrupt, path + ": " + blobName(ref) + " at offset " + std::to_string(bi->offset) +
                                              ": chunk " + std::to_string(c) + " does not hold the size the record says");
    }
    std::unique_ptr<std::byte[]> buf;
    try {
      buf = std::make_unique_for_overwrite<std::byte[]>(r.rawSize);
    } catch (const std::bad_alloc&) {
      throw Error(Error::Kind::Io, path + ": " + blobName(ref) + ": cannot allocate " + std::to_string(r.rawSize) + " bytes");
    }
    decode(*bi, buf.get(), nullptr);
    return BlobView::owned(std::move(buf), r.rawSize);
  }
};

// ---- views ------------------------------------------------------------------------------------
namespace {
template <class T, class V>
std::span<const T> spanOf(const flatbuffers::Vector<V>* v) {
  // Empty arrays may lie 4-aligned (see checkCallRecord); non-empty ones were checked with their segment.
  if (!v || v->size() == 0) return {};
  return {reinterpret_cast<const T*>(v->data()), v->size()};
}
std::string_view sv(const flatbuffers::String* s) { return s ? std::string_view(s->c_str(), s->size()) : std::string_view(); }
}  // namespace

std::string_view kindName(ValueKind k) {
  return fb::EnumNameValueKind(static_cast<fb::ValueKind>(k));
}

ValueKind ValueView::kind() const { return v_ ? static_cast<ValueKind>(v_->kind()) : ValueKind::Null; }
bool ValueView::asBool() const { return v_ && v_->i() != 0; }
int64_t ValueView::asI64() const { return v_ ? v_->i() : 0; }
uint64_t ValueView::asU64() const { return v_ ? v_->u() : 0; }
double ValueView::asF64() const { return v_ ? v_->f() : 0; }
std::string_view ValueView::asString() const { return v_ ? sv(v_->str()) : std::string_view(); }
uint32_t ValueView::typeId() const { return v_ ? v_->type_id() : 0; }
std::span<const int64_t> ValueView::ints() const { return v_ ? spanOf<int64_t>(v_->ints()) : std::span<const int64_t>(); }
std::span<const float> ValueView::floats() const { return v_ ? spanOf<float>(v_->floats()) : std::span<const float>(); }
std::span<const uint64_t> ValueView::handles() const { return v_ ? spanOf<uint64_t>(v_->handles()) : std::span<const uint64_t>(); }
std::span<const std::byte> ValueView::bytes() const { return v_ ? spanOf<std::byte>(v_->bytes()) : std::span<const std::byte>(); }
uint32_t ValueView::dtype() const { return v_ ? v_->dtype() : 0; }
uint64_t ValueView::count() const { return v_ ? v_->count() : 0; }
BlobRef ValueView::blob() const { return v_ ? BlobRef{{v_->hash_lo(), v_->hash_hi()}, v_->length()} : BlobRef{}; }
uint64_t ValueView::seed() const { return v_ ? v_->seed() : 0; }
uint64_t ValueView::weightsPtr() const { return v_ ? v_->ptr() : 0; }

std::string ValueView::toString() const {
  char buf[96];
  auto list = [](auto sp, auto fmt) {
    std::string s = "[";
    for (size_t i = 0; i < sp.size(); ++i) {
      if (i == 16) { s += ", ...(" + std::to_string(sp.size()) + ")"; break; }
      if (i) s += ", ";
      s += fmt(sp[i]);
    }
    return s + "]";
  };
  auto num = [&](double d) { snprintf(buf, sizeof buf, "%.9g", d); return std::string(buf); };
  auto hex = [&](uint64_t h) { snprintf(buf, sizeof buf, "0x%" PRIx64, h); return std::string(buf); };
  switch (kind()) {
    case ValueKind::Null: return "null";
    case ValueKind::Bool: return asBool() ? "true" : "false";
    case ValueKind::I64: return std::to_string(asI64());
    case ValueKind::U64: return std::to_string(asU64());
    case ValueKind::F32:
    case ValueKind::F64: return num(asF64());
    case ValueKind::String: return "\"" + std::string(asString()) + "\"";
    case ValueKind::Enum: return "enum" + std::to_string(typeId()) + ":" + std::to_string(asI64());
    case ValueKind::Dims: return "dims" + list(ints(), [](int64_t x) { return std::to_string(x); });
    case ValueKind::Handle: return "@" + hex(asU64());
    case ValueKind::HandleArray: return list(handles(), [&](uint64_t x) { return "@" + hex(x); });
    case ValueKind::I64Array: return list(ints(), [](int64_t x) { return std::to_string(x); });
    case ValueKind::F32Array: return list(floats(), [&](float x) { return num(x); });
    case ValueKind::Bytes: return "bytes(" + std::to_string(bytes().size()) + ")";
    case ValueKind::WeightsInline:
      return "weights(dtype=" + std::to_string(dtype()) + ", count=" + std::to_string(count()) +
             ", inline " + std::to_string(bytes().size()) + " B)";
    case ValueKind::WeightsBlob:
      return "weights(dtype=" + std::to_string(dtype()) + ", count=" + std::to_string(count()) +
             ", blob " + toHex(blob().hash) + " " + std::to_string(blob().length) + " B)";
    case ValueKind::WeightsRandom:
      return "weights(dtype=" + std::to_string(dtype()) + ", count=" + std::to_string(count()) +
             ", random seed=" + std::to_string(seed()) + ")";
  }
  return "?";
}

uint64_t CallView::seq() const { return c_->seq(); }
uint64_t CallView::thread() const { return c_->thread(); }
uint32_t CallView::networkId() const { return c_->network(); }
uint32_t CallView::apiId() const { return c_->api(); }
uint64_t CallView::receiver() const { return c_->receiver(); }
size_t CallView::argCount() const { return c_->args() ? c_->args()->size() : 0; }
ValueView CallView::arg(size_t i) const { return ValueView(i < argCount() ? c_->args()->Get(i) : nullptr); }
std::optional<ValueView> CallView::ret() const {
  if (!c_->ret()) return std::nullopt;
  return ValueView(c_->ret());
}
CallStatus CallView::status() const { return static_cast<CallStatus>(c_->status()); }
std::string_view CallView::unsupportedInterface() const { return sv(c_->unsupported_interface()); }
uint32_t CallView::unsupportedSlot() const { return c_->unsupported_slot(); }
std::string_view CallView::message() const { return sv(c_->message()); }
std::optional<BuildResultView> CallView::buildResult() const {
  auto* b = c_->build();
  if (!b) return std::nullopt;
  BuildResultView r;
  r.ok = b->ok();
  r.engineSize = b->engine_size();
  r.engineHash = {b->engine_hash_lo(), b->engine_hash_hi()};
  if (b->errors())
    for (auto* e : *b->errors()) r.errors.push_back(sv(e));
  return r;
}

bool VerifyReport::corrupt() const {
  return std::any_of(issues.begin(), issues.end(), [](auto& i) { return i.problem == Problem::Corrupt; });
}
bool VerifyReport::truncated() const {
  return !corrupt() && std::any_of(issues.begin(), issues.end(), [](auto& i) { return i.problem == Problem::Truncated; });
}

// ---- Reader -----------------------------------------------------------------------------------
Reader::Reader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Reader::~Reader() = default;

std::unique_ptr<Reader> Reader::open(const std::string& path) {
  const int fd = files::openInput(path);  // a regular file, or one line naming what it is
  try {
    auto r = open(fd, path);
    ::close(fd);  // the mapping stays valid
    return r;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

std::unique_ptr<Reader> Reader::open(int fd, const std::string& name) {
  auto m = std::make_unique<Impl>();
  m->path = name;
  const std::string& path = m->path;
  struct stat st{};
  if (::fstat(fd, &st) != 0) throw Error(Error::Kind::Io, path + ": cannot stat: " + detail::errnoText());
  m->size = static_cast<uint64_t>(st.st_size);
  if (m->size > 0) {
    void* p = ::mmap(nullptr, m->size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) throw Error(Error::Kind::Io, path + ": cannot map: " + detail::errnoText());
    m->base = static_cast<const std::byte*>(p);
  }

  const size_t magicN = std::min<uint64_t>(m->size, sizeof F::kFileMagic);
  if (std::memcmp(m->base ? (const void*)m->base : "", F::kFileMagic, magicN) != 0)
    throw Error(Error::Kind::Corrupt, path + ": offset 0: not a trtrace file (bad magic)");
  m->segState.reset(new std::atomic<int8_t>[0]);
  if (m->size < sizeof(F::FileHeader)) {  // a cut inside the fixed header: an empty prefix
    m->trunc = 0;
    m->truncWhy = "incomplete file header";
    return std::unique_ptr<Reader>(new Reader(std::move(m)));
  }
  std::memcpy(&m->fh, m->base, sizeof m->fh);
  if (m->fh.versionMajor < F::kOldestMajor || m->fh.versionMajor > F::kVersionMajor)
    throw Error(Error::Kind::Corrupt, path + ": offset 8: format version " + std::to_string(m->fh.versionMajor) +
                                          "." + std::to_string(m->fh.versionMinor) + " is not supported (this reader reads " +
                                          std::to_string(F::kOldestMajor) + ".x to " + std::to_string(F::kVersionMajor) + ".x)");
  if (m->fh.headerCheck != detail::fileHeaderCheck(m->fh))
    throw Error(Error::Kind::Corrupt, path + ": offset 60: file header check mismatch");
  if (m->fh.fileLength != 0 && m->fh.fileLength < m->size)  // closed, then something appended
    throw Error(Error::Kind::Corrupt, path + ": offset " + std::to_string(m->fh.fileLength) + ": " +
                                          std::to_string(m->size - m->fh.fileLength) +
                                          " bytes after the recorded file length " + std::to_string(m->fh.fileLength));
  // A newer minor version is read as far as this reader understands it (unknown fields and
  // block types are skipped).
  if (!m->openFromFooter()) {
    m->header = {};
    m->closed = false;
    m->scan();
  }
  m->segState.reset(new std::atomic<int8_t>[m->segs.size()]);
  for (size_t i = 0; i < m->segs.size(); ++i) m->segState[i] = m->closed ? 0 : 1;  // scan verified them
  std::sort(m->blobs.begin(), m->blobs.end(), blobLess);
  return std::unique_ptr<Reader>(new Reader(std::move(m)));
}

const std::string& Reader::path() const { return impl_->path; }
const HeaderView& Reader::header() const { return impl_->header; }
bool Reader::closedCleanly() const { return impl_->closed; }
std::optional<uint64_t> Reader::truncatedAt() const { return impl_->trunc; }
std::string Reader::truncationMessage() const {
  if (!impl_->trunc) return "";
  return impl_->path + ": truncated at offset " + std::to_string(*impl_->trunc) + " (" + impl_->truncWhy + ")";
}
uint64_t Reader::callCount() const { return impl_->totalCalls; }
size_t Reader::segmentCount() const { return impl_->segs.size(); }

void Reader::forEachCallInSegment(size_t i, const std::function<bool(const CallView&)>& fn) const {
  auto seg = impl_->segment(i);  // held (inflated, if compressed) for this segment's calls only
  auto* s = seg.root;
  if (!s->calls()) return;
  for (auto* rec : *s->calls()) {
    const fb::Call* c = rec->call() ? rec->call_nested_root() : nullptr;
    if (!c)
      throw Error(Error::Kind::Corrupt, impl_->path + ": segment " + std::to_string(i) + " at offset " +
                                            std::to_string(impl_->segs[i].offset) + ": empty call record");
    if (!fn(CallView(c))) return;
  }
}

void Reader::forEachCall(const std::function<bool(const CallView&)>& fn) const {
  bool go = true;
  for (size_t i = 0; i < impl_->segs.size() && go; ++i)
    forEachCallInSegment(i, [&](const CallView& c) { return go = fn(c); });
}

BlobView Reader::segmentBytes(size_t i) const { return impl_->segment(i).bytes; }

BlobView Reader::segmentPrefix(size_t i, uint32_t calls) const {
  Impl::SegmentFb seg = impl_->segment(i);
  const fb::Segment* s = seg.root;
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::ApiDescriptor>> apis;
  if (s->apis())
    for (auto* d : *s->apis()) {
      std::vector<flatbuffers::Offset<flatbuffers::String>> names;
      if (d->arg_names())
        for (auto* n : *d->arg_names()) names.push_back(b.CreateString(sv(n)));
      apis.push_back(fb::CreateApiDescriptor(b, d->id(), b.CreateString(sv(d->interface())), b.CreateString(sv(d->method())),
                                             b.CreateVector(names)));
    }
  std::vector<flatbuffers::Offset<fb::CallRecord>> records;
  const uint32_t n = s->calls() ? std::min<uint32_t>(calls, s->calls()->size()) : 0;
  for (uint32_t k = 0; k < n; ++k) {
    auto* c = s->calls()->Get(k)->call();
    b.ForceVectorAlignment(c ? c->size() : 0, 1, 8);  // nested calls stay 8-aligned (writer.cpp)
    records.push_back(fb::CreateCallRecord(b, b.CreateVector(c ? c->data() : nullptr, c ? c->size() : 0)));
  }
  b.Finish(fb::CreateSegment(b, s->index(), s->first_seq(), b.CreateVector(apis), b.CreateVector(records)));
  auto buf = std::make_unique<std::byte[]>(b.GetSize());
  std::memcpy(buf.get(), b.GetBufferPointer(), b.GetSize());
  return BlobView::owned(std::move(buf), b.GetSize());
}

SegmentInfo Reader::segmentInfo(size_t i) const {
  if (i >= impl_->segs.size()) throw Error(Error::Kind::Usage, impl_->path + ": no segment " + std::to_string(i));
  const auto& sg = impl_->segs[i];
  F::BlockHeader h;
  std::memcpy(&h, impl_->base + sg.offset, sizeof h);
  if (h.magic != F::kBlockMagic || h.headerCheck != detail::blockHeaderCheck(h) || h.type != uint16_t(F::BlockType::Segment))
    throw Error(Error::Kind::Corrupt, impl_->path + ": segment " + std::to_string(i) + " at offset " +
                                          std::to_string(sg.offset) + ": bad block header");
  SegmentInfo si;
  si.offset = sg.offset;
  si.firstSeq = sg.firstSeq;
  si.calls = sg.calls;
  si.storedSize = h.payloadSize;
  si.compressed = (h.flags & F::kSegmentZstd) != 0;
  return si;
}

// ---- CallCursor -------------------------------------------------------------------------------
struct CallCursor::State {
  const Reader* r;
  size_t seg = 0;
  uint32_t pos = 0;
  Reader::Impl::SegmentFb cur;  // the segment being walked (one inflated segment at most)
  CallView view{nullptr};
};

CallCursor::CallCursor(const Reader& r) : s_(std::make_unique<State>()) { s_->r = &r; }
CallCursor::~CallCursor() = default;

const CallView* CallCursor::next() {
  const Reader::Impl& m = *s_->r->impl_;
  for (;;) {
    if (s_->cur.root) {
      auto* calls = s_->cur.root->calls();
      if (calls && s_->pos < calls->size()) {
        auto* rec = calls->Get(s_->pos++);
        const fb::Call* c = rec->call() ? rec->call_nested_root() : nullptr;
        if (!c)
          throw Error(Error::Kind::Corrupt, m.path + ": segment " + std::to_string(s_->seg - 1) + " at offset " +
                                                std::to_string(m.segs[s_->seg - 1].offset) + ": empty call record");
        s_->view = CallView(c);
        return &s_->view;
      }
      s_->cur = {};  // done with it: freed before the next one is inflated
    }
    if (s_->seg >= m.segs.size()) return nullptr;
    s_->cur = m.segment(s_->seg++);
    s_->pos = 0;
  }
}

const ApiInfo* Reader::api(uint32_t id) const {
  std::call_once(impl_->apisOnce, [&] {
    for (size_t i = 0; i < impl_->segs.size(); ++i) {
      Impl::SegmentFb seg;
      try {
        seg = impl_->segment(i);  // one at a time: the names are copied out
      } catch (const Error&) {
        continue;  // a damaged segment's names are lost; verify() reports it
      }
      auto* s = seg.root;
      if (!s->apis()) continue;
      auto own = [&](const flatbuffers::String* x) -> std::string_view {
        return impl_->apiStrings.emplace_back(sv(x));
      };
      for (auto* d : *s->apis()) {
        if (impl_->apiMap.count(d->id())) continue;
        ApiInfo a;
        a.id = d->id();
        a.interfaceName = own(d->interface());
        a.methodName = own(d->method());
        if (d->arg_names())
          for (auto* n : *d->arg_names()) a.argNames.push_back(own(n));
        impl_->apiMap.emplace(a.id, std::move(a));
      }
    }
  });
  auto it = impl_->apiMap.find(id);
  return it == impl_->apiMap.end() ? nullptr : &it->second;
}

std::vector<const ApiInfo*> Reader::apis() const {
  api(0);
  std::vector<const ApiInfo*> v;
  for (auto& [id, a] : impl_->apiMap) v.push_back(&a);
  return v;
}

bool Reader::hasBlob(const BlobRef& ref) const { return impl_->findBlob(ref) != nullptr; }
BlobView Reader::blob(const Hash128& h, uint64_t len) const { return impl_->blob({h, len}); }
BlobView Reader::checkedBlob(const BlobRef& ref) const {
  BlobView b = impl_->blob(ref);  // throws if missing or undecodable (naming the blob and its offset)
  if (b.size() != ref.length || !(hash128(b.data(), b.size()) == ref.hash))
    throw Error(Error::Kind::Corrupt, impl_->path + ": " + blobName(ref) + " at offset " +
                                          std::to_string(impl_->findBlob(ref)->offset) +
                                          ": content does not match its hash (damaged weights)");
  return b;
}
const std::vector<BlobInfo>& Reader::blobs() const { return impl_->blobs; }
std::span<const std::byte> Reader::mapping() const { return {impl_->base, impl_->size}; }

VerifyReport Reader::verify(const std::function<void(uint64_t, uint64_t)>& progress) const {
  const Impl& m = *impl_;
  VerifyReport rep;
  using P = VerifyReport::Problem;
  auto issue = [&](P p, uint64_t off, std::string what) {
    rep.issues.push_back({p, off, m.path + ": offset " + std::to_string(off) + ": " + what});
  };
  if (m.size < sizeof(F::FileHeader)) {
    issue(P::Truncated, 0, "truncated inside the file header");
    return rep;
  }
  const bool closedHeader = m.fh.fileLength != 0;
  const bool cut = closedHeader && m.fh.fileLength > m.size;
  if (cut) issue(P::Truncated, m.size, "file is shorter than its recorded length " + std::to_string(m.fh.fileLength));
  if (closedHeader && m.fh.fileLength < m.size) issue(P::Corrupt, m.fh.fileLength, "bytes after the recorded file length");
  // A damaged block in a closed file is corruption; in an open one, an incomplete block is a cut.
  auto classify = [&](BlockCheck::Status s) { return s == BlockCheck::Truncated && (!closedHeader || cut) ? P::Truncated : P::Corrupt; };

  std::set<std::tuple<uint64_t, uint64_t, uint64_t>> blobKeys;
  std::set<uint64_t> segOffsets;
  std::map<uint64_t, std::tuple<uint64_t, uint16_t, uint16_t>> blobOffsets;  // data offset, encoding, transform
  std::vector<std::pair<uint64_t, BlobRef>> refs;  // (seq, blob) referenced by calls
  uint64_t pos = sizeof(F::FileHeader), expectSeq = 0, footerAt = 0;
  std::vector<std::byte> scratch;
  while (pos < m.size) {
    if (progress) progress(pos, m.size);
    auto bc = checkBlock(m.base, m.size, pos);
    std::string name = "block";
    if (bc.headerValid) {
      name = detail::blockTypeName(bc.h.type);
      if (bc.h.type == uint16_t(F::BlockType::Segment)) name += " " + std::to_string(rep.segments);
      if (bc.h.type == uint16_t(F::BlockType::Blob) && bc.h.payloadSize >= sizeof(F::BlobRecord) && bc.status != BlockCheck::Truncated) {
        auto r = blobRecordAt(m.base, pos);
        name = blobName({{r.hashLo, r.hashHi}, r.rawSize});
      }
    }
    if (bc.status != BlockCheck::Ok) {
      issue(classify(bc.status), pos, name + ": " + bc.why);
      if (bc.headerValid && bc.status == BlockCheck::Corrupt) {  // framing intact: go on
        if (bc.h.type == uint16_t(F::BlockType::Segment)) rep.segments++;
        pos = bc.next;
        continue;
      }
      break;
    }
    switch (static_cast<F::BlockType>(bc.h.type)) {
      case F::BlockType::Header:
        if (pos != sizeof(F::FileHeader)) issue(P::Corrupt, pos, "header block in the wrong place");
        break;
      case F::BlockType::Segment: {  // bc holds it (inflated if compressed) until the next block
        auto* s = flatbuffers::GetRoot<fb::Segment>(bc.fbuf);
        segOffsets.insert(pos);
        if (s->first_seq() != expectSeq)
          issue(P::Corrupt, pos, name + ": first seq " + std::to_string(s->first_seq()) + ", expected " + std::to_string(expectSeq));
        if (s->calls())
          for (auto* rec : *s->calls()) {
            const fb::Call* c = rec->call() ? rec->call_nested_root() : nullptr;
            if (!c) { issue(P::Corrupt, pos, name + ": empty call record"); break; }
            if (c->seq() != expectSeq) issue(P::Corrupt, pos, name + ": call seq " + std::to_string(c->seq()) + " out of order");
            expectSeq = c->seq() + 1;
            rep.calls++;
            auto note = [&](const fb::Value* v) {
              if (v && v->kind() == fb::ValueKind::WeightsBlob)
                refs.push_back({c->seq(), {{v->hash_lo(), v->hash_hi()}, v->length()}});
            };
            if (c->args()) for (auto* v : *c->args()) note(v);
            note(c->ret());
          }
        rep.segments++;
        break;
      }
      case F::BlockType::Blob: {
        auto r = blobRecordAt(m.base, pos);
        BlobInfo bi;
        bi.ref = {{r.hashLo, r.hashHi}, r.rawSize};
        bi.offset = pos;
        bi.dataOffset = pos + sizeof(F::BlockHeader) + r.dataOffset;
        Hash128 h;
        try {
          if (r.encoding == uint16_t(F::BlobEncoding::Raw)) {
            h = hash128(m.base + bi.dataOffset, r.rawSize);
          } else {
            std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> st(XXH3_createState(), XXH3_freeState);
            XXH3_128bits_reset(st.get());
            m.decode(bi, nullptr, st.get());
            auto d = XXH3_128bits_digest(st.get());
            h = {d.low64, d.high64};
          }
          if (!(h == bi.ref.hash)) issue(P::Corrupt, pos, name + ": content hash mismatch");
        } catch (const Error& e) {
          issue(P::Corrupt, pos, name + ": cannot decode");
        }
        if (!blobKeys.insert({r.hashHi, r.hashLo, r.rawSize}).second) issue(P::Corrupt, pos, name + ": stored twice");
        blobOffsets[pos] = {bi.dataOffset, r.encoding, r.transform};
        rep.blobs++;
        rep.blobBytes += r.rawSize;
        break;
      }
      case F::BlockType::Footer: {
        footerAt = pos;
        // An open file may end with its footer: the close stopped (crash, failed write) before the
        // file header was patched. Its blocks are whole: a clean prefix, as the reader treats it.
        if (closedHeader && m.fh.footerOffset != pos) issue(P::Corrupt, pos, "footer: not where the file header says");
        auto* f = flatbuffers::GetRoot<fb::Footer>(m.base + pos + sizeof(F::BlockHeader));
        size_t ns = f->segments() ? f->segments()->size() : 0, nb = f->blobs() ? f->blobs()->size() : 0;
        if (ns != segOffsets.size() || nb != blobOffsets.size() || f->total_calls() != rep.calls)
          issue(P::Corrupt, pos, "footer: index counts disagree with the blocks");
        if (f->segments()) for (auto* e : *f->segments()) if (!segOffsets.count(e->offset())) { issue(P::Corrupt, pos, "footer: segment entry points at no segment"); break; }
        if (f->blobs()) for (auto* e : *f->blobs()) if (!blobOffsets.count(e->offset()) || !blobKeys.count({e->hash_hi(), e->hash_lo(), e->length()}) ||
                blobOffsets[e->offset()] != std::make_tuple(e->data_offset(), e->encoding(), e->transform())) { issue(P::Corrupt, pos, "footer: blob entry points at no such blob"); break; }
        break;
      }
    }
    pos = bc.next;
    if (footerAt) break;
  }
  if (pos > m.size && !cut) issue(P::Truncated, m.size, "file ends inside the padding of its last block");
  if (footerAt && pos < m.size && pos < std::max<uint64_t>(m.fh.fileLength, 0))
    issue(P::Corrupt, pos, "blocks after the footer");
  if (closedHeader && !footerAt && !cut && rep.ok()) issue(P::Corrupt, m.fh.footerOffset, "footer missing");
  for (auto& [seq, ref] : refs)
    if (!blobKeys.count({ref.hash.hi, ref.hash.lo, ref.length})) {
      issue(closedHeader && !cut ? P::Corrupt : P::Truncated, 0,
            "call " + std::to_string(seq) + " references " + blobName(ref) + ", which is not in the trace");
      break;
    }
  return rep;
}

}  // namespace trtrace
