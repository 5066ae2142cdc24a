// What the blob store's two halves share (blob_store.cpp: the queue and the encoder; blob_handoff.cpp:
// batches handed to a finisher): a blob's record, a raw block's layout, a deferred key's read.
#pragma once
#include <sys/uio.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "blob_store.h"

namespace trtrace::detail {

// A writing thread's buffers: a worker's, or the finisher's (writeReserved).
struct BlobStore::Scratch {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  std::vector<std::byte> in, grouped, out, buffered;
  std::vector<std::byte> read;               // a deferred key's read (hashCaller): a small blob's bytes, kept
  std::vector<Job> batch;                    // small jobs taken together (consumeSmall)
  std::vector<std::optional<Hash128>> keys;  // theirs, read
  std::vector<iovec> ranges;                 // where their bytes are, in the application
  pid_t pid = ::getpid();                    // a worker's process: workers do not survive a fork
  ~Scratch() { ZSTD_freeCCtx(cctx); }
};

format::BlobRecord recordFor(const BlobStore::Job& j, format::BlobEncoding enc, uint64_t stored, uint64_t dataOffset);

// Where a raw blob block at `at` puts its data, and where the next block starts: data at the next
// 4 KiB boundary after the record (a small blob: the next 64-byte one, RawSmall, so that small
// weights cost no page of padding each).
struct RawLayout {
  bool small;
  uint64_t dataAt, next;
};
RawLayout rawLayout(uint64_t at, uint64_t bytes);

// A deferred job's key: its bytes read now (fault-safely), and taken for the call's only if they
// still give the samples noted at the call; nullopt otherwise (Lost) or after a failed write (not
// read at all). `keep`: a blob of up to 4 MiB is left whole in buf, for its writer (consume).
std::optional<Hash128> readKey(const BlobStore::Job& j, const BlockFile& file, std::vector<std::byte>& buf,
                               bool keep = false);

}  // namespace trtrace::detail
