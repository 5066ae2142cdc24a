// Blob decode: checks and the one-pass decode + hash of a stored blob (see blob_decode.h).
#include "blob_decode.h"

#include <algorithm>
#include <cstring>
#include <memory>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack: no allocation per decode
#include <xxhash.h>
#include <zstd.h>

#include "block_file.h"

namespace trtrace::detail {
namespace F = format;

namespace {

// The most raw bytes a zstd frame yields per stored byte: a block of at most 128 KiB costs at least
// 4 bytes (an RLE block: 3 bytes of header, the byte repeated).
constexpr uint64_t kMaxZstdRatio = (128 << 10) / 4;

const F::ChunkEntry* chunkTable(const std::byte* base, uint64_t at) {
  return reinterpret_cast<const F::ChunkEntry*>(base + at + sizeof(F::BlockHeader) + sizeof(F::BlobRecord));
}

F::ChunkEntry chunkAt(const F::ChunkEntry* table, uint32_t c) {
  F::ChunkEntry e;
  std::memcpy(&e, table + c, sizeof e);
  return e;
}

std::string checkRawRecord(const std::byte* base, uint64_t at, const F::BlobRecord& r) {
  if (r.chunkCount != 0 || r.storedSize != r.rawSize) return "raw blob: sizes disagree";
  const bool small = r.encoding == uint16_t(F::BlobEncoding::RawSmall);
  if (small && r.rawSize >= F::kSmallBlobMax) return "small raw blob: too large";
  if ((at + sizeof(F::BlockHeader) + r.dataOffset) % (small ? F::kSmallBlobAlign : F::kBlobAlign) != 0)
    return small ? "raw blob data not 64-byte aligned" : "raw blob data not 4 KiB aligned";
  if (!allZero(base + at + sizeof(F::BlockHeader) + sizeof r, r.dataOffset - sizeof r))
    return "non-zero bytes in alignment padding";
  return "";
}

std::string checkZstdRecord(const std::byte* base, uint64_t at, const F::BlobRecord& r) {
  if (r.transform > uint16_t(F::BlobTransform::ByteGroup4)) return "blob record: unknown transform";
  const unsigned k = transformElementSize(static_cast<F::BlobTransform>(r.transform));
  if (r.rawSize % k != 0 || r.chunkRawSize % k != 0)
    return "blob record: sizes not whole elements of its byte grouping";
  // The bound sizes the decoder's scratch (format.h): checked before anything is allocated.
  if (r.chunkRawSize == 0 || r.chunkRawSize > F::kMaxChunkRawSize) return "blob record: chunk size out of range";
  if (r.chunkCount != (r.rawSize + r.chunkRawSize - 1) / r.chunkRawSize)
    return "blob record: chunk count does not match";
  // Chunks lie back to back and fill the data region, as the writer stores them: no two share
  // stored bytes, so each decoded byte is paid for by bytes of the file.
  const auto* table = chunkTable(base, at);
  uint64_t next = 0;
  for (uint32_t c = 0; c < r.chunkCount; ++c) {
    F::ChunkEntry e = chunkAt(table, c);
    if (e.offset != next || e.storedSize > r.storedSize - next) return "chunk " + std::to_string(c) + " out of bounds";
    next += e.storedSize;
  }
  return next == r.storedSize ? "" : "blob record: chunks do not fill the data region";
}

[[noreturn]] void chunkError(const StoredBlob& b, uint32_t c, const char* what) {
  throw Error(Error::Kind::Corrupt, b.path + ": " + blobName(b.info.ref) + " at offset " +
                                        std::to_string(b.info.offset) + ": chunk " + std::to_string(c) + " " + what);
}

// Chunk c's n bytes as stored (still byte-grouped when the blob is): decompressed into `into`, or,
// for a chunk stored as it is, the bytes in the mapping at src, copied into `into` only with `copy`.
const std::byte* unpackChunk(const StoredBlob& b, ZSTD_DCtx* dctx, const F::ChunkEntry& e, uint32_t c, uint64_t n,
                             const std::byte* src, std::byte* into, bool copy) {
  if (e.flags & 1) {
    size_t z = ZSTD_decompressDCtx(dctx, into, n, src, e.storedSize);
    if (ZSTD_isError(z) || z != n) chunkError(b, c, "does not decompress");
    return into;
  }
  if (e.storedSize != n) chunkError(b, c, "has the wrong size");
  if (!copy) return src;
  std::memcpy(into, src, n);
  return into;
}

// Raw bytes of chunk c (n of them) from its stored form at src into dst, via `stage` (the grouped
// bytes, unless the chunk is stored as it is: ungrouped from the mapping) when the blob is
// byte-grouped. Returns where the decoded bytes are: dst, or src itself for a stored, ungrouped
// chunk when the bytes are only hashed (`keep` false).
const std::byte* decodeChunk(const StoredBlob& b, ZSTD_DCtx* dctx, const F::ChunkEntry& e, uint32_t c, uint64_t n,
                             unsigned k, const std::byte* src, std::byte* stage, std::byte* dst, bool keep) {
  const std::byte* got = unpackChunk(b, dctx, e, c, n, src, k > 1 ? stage : dst, k == 1 && keep);
  if (k == 1) return got;
  byteUngroup(got, dst, n, k);
  return dst;
}

// A streamed byte-grouped blob's chunk goes to the hash and the sink a piece at a time, ungrouped
// into `piece` (kStreamPiece bytes): a decoding thread holds the grouped chunk and one piece, not a
// second whole chunk (the decode cache runs one such thread per core).
constexpr uint64_t kStreamPiece = 256 << 10;

void streamGroupedChunk(const std::byte* grouped, uint64_t n, unsigned k, uint64_t off, std::byte* piece,
                        XXH3_state_t* st, const ChunkSink& sink) {
  const uint64_t m = n / k, per = kStreamPiece / k;
  for (uint64_t i = 0; i < m; i += per) {
    const uint64_t count = std::min(per, m - i);
    byteUngroupRange(grouped, piece, m, k, i, count);
    if (st) XXH3_128bits_update(st, piece, count * k);
    if (sink) sink(piece, off + i * k, count * k);
  }
}

}  // namespace

F::BlobRecord blobRecordAt(const std::byte* base, uint64_t at) {
  F::BlobRecord r;
  std::memcpy(&r, base + at + sizeof(F::BlockHeader), sizeof r);
  return r;
}

std::string checkBlobPayload(const std::byte* base, uint64_t at, const F::BlockHeader& h) {
  if (h.payloadSize < sizeof(F::BlobRecord) || h.checkedSize < sizeof(F::BlobRecord)) return "blob record too short";
  F::BlobRecord r = blobRecordAt(base, at);
  if (h.checkedSize != sizeof r + uint64_t(r.chunkCount) * sizeof(F::ChunkEntry))
    return "blob record: chunk table size does not match";
  if (r.dataOffset < h.checkedSize || r.dataOffset > h.payloadSize || h.payloadSize - r.dataOffset != r.storedSize)
    return "blob record: data region out of bounds";
  if (F::isRawEncoding(r.encoding)) return checkRawRecord(base, at, r);
  if (F::isBytelessEncoding(r.encoding))
    return r.storedSize == 0 && r.chunkCount == 0 && r.transform == 0 ? "" : "lost blob: record holds data";
  if (r.encoding != uint16_t(F::BlobEncoding::Zstd)) return "blob record: unknown encoding";
  return checkZstdRecord(base, at, r);
}

void checkChunkSizes(const StoredBlob& b) {
  const F::BlobRecord r = blobRecordAt(b.base, b.info.offset);
  const auto* table = chunkTable(b.base, b.info.offset);
  const std::byte* data = b.base + b.info.dataOffset;
  for (uint32_t c = 0; c < r.chunkCount; ++c) {
    F::ChunkEntry e = chunkAt(table, c);
    uint64_t n = std::min<uint64_t>(r.chunkRawSize, r.rawSize - uint64_t(c) * r.chunkRawSize);
    bool fits = e.storedSize == n;
    if (e.flags & 1)  // the writer's frames declare their size; none decodes to more than its bytes allow
      fits = ZSTD_getFrameContentSize(data + e.offset, e.storedSize) == n && n / kMaxZstdRatio <= e.storedSize;
    if (!fits) chunkError(b, c, "does not hold the size the record says");
  }
}

Hash128 decodeBlob(const StoredBlob& b, std::byte* dest, bool hash, const ChunkSink& sink) {
  const F::BlobRecord r = blobRecordAt(b.base, b.info.offset);
  // The record's sizes bound the scratch below: checked here too, whoever checked the block.
  if (std::string why = checkZstdRecord(b.base, b.info.offset, r); !why.empty())
    throw Error(Error::Kind::Corrupt,
                b.path + ": " + blobName(b.info.ref) + " at offset " + std::to_string(b.info.offset) + ": " + why);
  const std::byte* data = b.base + b.info.offset + sizeof(F::BlockHeader) + r.dataOffset;
  const auto* table = chunkTable(b.base, b.info.offset);
  const unsigned k = transformElementSize(static_cast<F::BlobTransform>(r.transform));
  // Scratch for one chunk: at most kMaxChunkRawSize (the record passed checkZstdRecord), never
  // larger than the blob.
  const uint64_t chunkMax = std::min({uint64_t(r.chunkRawSize), r.rawSize, F::kMaxChunkRawSize});
  const bool pieces = !dest && k > 1;  // streamed a piece at a time (streamGroupedChunk)
  std::unique_ptr<std::byte[]> out, grouped;
  if (!dest) out = std::make_unique_for_overwrite<std::byte[]>(pieces ? std::min(chunkMax, kStreamPiece) : chunkMax);
  if (k > 1) grouped = std::make_unique_for_overwrite<std::byte[]>(chunkMax);
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  XXH3_state_t state;
  XXH3_INITSTATE(&state);
  XXH3_state_t* st = hash ? &state : nullptr;
  if (st) XXH3_128bits_reset(st);
  for (uint32_t c = 0; c < r.chunkCount; ++c) {
    F::ChunkEntry e = chunkAt(table, c);
    uint64_t off = uint64_t(c) * r.chunkRawSize, n = std::min<uint64_t>(r.chunkRawSize, r.rawSize - off);
    if (pieces) {
      const std::byte* g = unpackChunk(b, dctx.get(), e, c, n, data + e.offset, grouped.get(), false);
      streamGroupedChunk(g, n, k, off, out.get(), st, sink);
      continue;
    }
    std::byte* dst = dest ? dest + off : out.get();
    const std::byte* got = decodeChunk(b, dctx.get(), e, c, n, k, data + e.offset, grouped.get(), dst, dest != nullptr);
    if (st) XXH3_128bits_update(st, got, n);  // while the chunk is still in cache
    if (sink && !dest) sink(got, off, n);
  }
  if (!st) return {};
  auto d = XXH3_128bits_digest(st);
  return {d.low64, d.high64};
}

}  // namespace trtrace::detail

namespace trtrace {
std::string blobName(const BlobRef& r) { return "blob " + toHex(r.hash) + " (" + std::to_string(r.length) + " B)"; }
}  // namespace trtrace
