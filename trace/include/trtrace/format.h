// On-disk container layout: the fixed-size structures that frame the FlatBuffers call log and the
// weight blobs. All fields are fixed-width little-endian. docs/format.md explains the layout.
//
//   FileHeader (64 B) | block | block | ... | footer block
//   block = BlockHeader (32 B) + payload, padded with zeros to the next 8-byte boundary.
#pragma once
#include <cstdint>
#include <string_view>

namespace trtrace::format {

inline constexpr char kFileMagic[8] = {'T', 'R', 'T', 'R', 'A', 'C', 'E', 0};
// The first bytes of a file are a trace's.
inline bool hasFileMagic(std::string_view head) { return head.substr(0, 8) == std::string_view(kFileMagic, 8); }
inline constexpr uint16_t kVersionMajor = 2;         // incompatible layout change: readers refuse others
inline constexpr uint16_t kVersionMinor = 5;         // compatible additions: readers accept newer minors
inline constexpr uint16_t kOldestMajor = 1;          // oldest major this reader still reads (1.x: no flags)
inline constexpr uint32_t kBlockMagic = 0x4B425254;  // "TRBK"
inline constexpr uint64_t kBlockAlign = 8;           // every block starts 8-byte aligned
inline constexpr uint64_t kBlobAlign = 4096;         // raw blob data starts 4 KiB aligned
inline constexpr uint64_t kSmallBlobAlign = 64;      // RawSmall blob data starts 64-byte aligned (2.3)
inline constexpr uint64_t kSmallBlobMax = 64 << 10;  // the writer stores raw blobs under this as RawSmall

struct FileHeader {
  char magic[8];          // kFileMagic
  uint16_t versionMajor;  // kVersionMajor of the writer
  uint16_t versionMinor;  // kVersionMinor of the writer
  uint32_t headerSize;    // sizeof(FileHeader) = 64; blocks start here
  uint64_t fileLength;    // total file bytes; 0 until close() (0 = not closed: scan the blocks)
  uint64_t footerOffset;  // offset of the footer block; 0 until close()
  uint8_t reserved[28];   // zero
  uint32_t headerCheck;   // low 32 bits of XXH3-64 over the 60 bytes before it
};
static_assert(sizeof(FileHeader) == 64);

enum class BlockType : uint16_t {  // append-only; readers skip types they do not know
  Header = 1,                      // payload: FlatBuffer trtrace.fb.Header
  Segment = 2,                     // payload: FlatBuffer trtrace.fb.Segment (call-log segment)
  Blob = 3,                        // payload: BlobRecord, ChunkEntry[chunkCount], zero padding, data
  Footer = 4,                      // payload: FlatBuffer trtrace.fb.Footer (index; last block of a closed file)
};

struct BlockHeader {
  uint32_t magic;         // kBlockMagic
  uint16_t type;          // BlockType
  uint16_t flags;         // BlockFlags bits (0 = plain payload); unknown bits: the block is refused
  uint64_t payloadSize;   // payload bytes after this header
  uint64_t checkedSize;   // leading payload bytes covered by payloadCheck (all of it, except for
                          // blobs: BlobRecord + chunk table; blob data is covered by its hash)
  uint32_t payloadCheck;  // low 32 bits of XXH3-64 over the checked payload bytes
  uint32_t headerCheck;   // low 32 bits of XXH3-64 over the 28 bytes before it
};
static_assert(sizeof(BlockHeader) == 32);

// BlockHeader::flags bits, append-only (since 2.0). A reader refuses a block carrying a bit it
// does not know (naming file and offset) rather than misreading its payload.
enum BlockFlags : uint16_t {
  kSegmentZstd = 1,  // Segment block: payload = SegmentZstdHeader + one zstd frame of the FlatBuffer
};
inline constexpr uint16_t kKnownSegmentFlags = kSegmentZstd;  // other block types: no flags

// Decompressed size cap of a compressed segment: a reader allocates no more than this for one
// segment, so a few KiB of zstd cannot make it hold more (the writer cuts segments at 1 MiB and
// stores a larger one raw: FlatBuffers' own limit is 2 GiB; a raw segment is read in place).
inline constexpr uint64_t kMaxSegmentRawSize = uint64_t(16) << 20;

// Leads the payload of a Segment block with kSegmentZstd; the zstd frame follows it directly.
// The block's payloadCheck covers this header and the compressed frame.
struct SegmentZstdHeader {
  uint64_t rawSize;   // FlatBuffer bytes after decompression, 1..kMaxSegmentRawSize; the
                      // frame must declare the same content size
  uint32_t rawCheck;  // low 32 bits of XXH3-64 over the decompressed FlatBuffer
  uint32_t reserved;  // zero
};
static_assert(sizeof(SegmentZstdHeader) == 16);

enum class BlobEncoding : uint16_t {
  Raw = 0,       // data = the blob's bytes, 4 KiB aligned in the file
  Zstd = 1,      // data = chunks, each zstd-compressed or stored raw (ChunkEntry::flags)
  RawSmall = 2,  // data = the blob's bytes, 64-byte aligned (blobs under kSmallBlobMax; since 2.3)
  // No data (storedSize 0, chunkCount 0, transform None): the app released or changed the bytes
  // after the call that passed them and before the capture read them (TensorRT reads weights only
  // at build, so an app may free those of a network it never builds). Readers hand rawSize zero
  // bytes. The same key may also be stored once more, normally, when the app passed those bytes
  // again later; readers prefer that copy. Since 2.4.
  Lost = 3,
  // No data, as Lost: the app changed the bytes in place after the call that passed them, before the
  // capture read them and before any build read them; the capture recorded the new bytes in a
  // synthesized setter call before the build (docs/design.md, "Weights"), so no build reads these.
  // Readers hand rawSize zero bytes and do not count it as lost. Since 2.5.
  Replaced = 4,
};
// A blob stored without its bytes (Lost or Replaced): readers hand rawSize zero bytes.
inline constexpr bool isBytelessEncoding(uint16_t e) {
  return e == uint16_t(BlobEncoding::Lost) || e == uint16_t(BlobEncoding::Replaced);
}
// The blob's bytes are stored as they are (a view into the mapping reads them).
inline constexpr bool isRawEncoding(uint16_t e) {
  return e == uint16_t(BlobEncoding::Raw) || e == uint16_t(BlobEncoding::RawSmall);
}
enum class BlobTransform : uint16_t {
  None = 0,
  ByteGroup2 = 1,  // each chunk's bytes regrouped by byte position of 2-byte elements (fp16/bf16)
  ByteGroup4 = 2,  // same for 4-byte elements (fp32)
};

struct BlobRecord {
  uint64_t hashLo;        // XXH3-128 of the raw bytes, low half
  uint64_t hashHi;        // high half
  uint64_t rawSize;       // raw (logical) bytes
  uint64_t storedSize;    // bytes of the data region
  uint64_t dataOffset;    // data region start, from the payload start
  uint16_t encoding;      // BlobEncoding
  uint16_t transform;     // BlobTransform (Zstd only)
  uint32_t elementHint;   // BlobHint given to putBlob (informational)
  uint32_t chunkCount;    // ChunkEntry records following this record (0 for Raw)
  uint32_t chunkRawSize;  // raw bytes per chunk (the last chunk holds the remainder)
  uint64_t reserved;      // zero
};
static_assert(sizeof(BlobRecord) == 64);

// Raw bytes per chunk of a Zstd blob, at most (the writer's WriterOptions::chunkBytes is 4 KiB ..
// this; 4 MiB is its default): a reader decodes one chunk at a time into scratch of this size, so
// a blob's declarations cannot make it allocate more per thread. Larger chunks are damage.
inline constexpr uint64_t kMaxChunkRawSize = uint64_t(4) << 20;

struct ChunkEntry {
  uint64_t offset;      // chunk start, from the data region start
  uint32_t storedSize;  // stored bytes
  uint32_t flags;       // bit 0: zstd-compressed (else stored raw, transform still applied)
};
static_assert(sizeof(ChunkEntry) == 16);

inline constexpr uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace trtrace::format
