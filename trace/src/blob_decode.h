// Blob decode: reading a blob block back. The structural check of its record and chunk table
// (applied with the block check), the check that every chunk holds the size its record says
// (before a buffer is allocated), and the chunked decode (zstd, byte ungrouping) that hashes
// each chunk while it is decoded: one pass gives both the bytes and their XXH3-128.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "internal.h"
#include "trtrace/reader.h"

namespace trtrace::detail {

// The BlobRecord of the blob block at `at` (copied out: the mapping need not be aligned).
format::BlobRecord blobRecordAt(const std::byte* base, uint64_t at);
// Record, chunk table and raw-data alignment of a blob block whose framing is good; "" when fine.
std::string checkBlobPayload(const std::byte* base, uint64_t at, const format::BlockHeader& h);
using trtrace::blobName;  // trtrace/hash.h

// One stored blob of a mapped trace, as the decoder needs it (messages name `path`).
struct StoredBlob {
  const std::string& path;
  const std::byte* base;  // the mapping
  const BlobInfo& info;   // its block checked (checkBlock) before any decode
};

// Throws Error (Corrupt) unless every chunk of the compressed blob declares the size the record
// says, so an allocation of rawSize is what the stored data really decodes to.
void checkChunkSizes(const StoredBlob& b);
// Where decoded bytes go when there is no destination buffer: (bytes, offset in the blob, n), in
// order of offset.
using ChunkSink = std::function<void(const std::byte*, uint64_t, uint64_t)>;
// Decodes a compressed blob chunk by chunk into `dest` (rawSize bytes), or into scratch when `dest`
// is null, each chunk then handed to `sink`, if any (a byte-grouped one in pieces of 256 KiB: the
// scratch is one chunk and one piece); with `hash`, returns the XXH3-128 of the decoded bytes, each
// hashed right after it is decoded (else {}). Throws Error (Corrupt) naming the chunk that fails.
Hash128 decodeBlob(const StoredBlob& b, std::byte* dest, bool hash, const ChunkSink& sink = {});

}  // namespace trtrace::detail
