// Writer::Impl: the writer's four rooms wired together (declaration order = construction order):
// the block file, the blob store that appends to it, the call log that waits on the blob store
// before a segment, and the encoder pool.
#pragma once
#include "blob_store.h"
#include "block_file.h"
#include "call_encoder.h"
#include "call_log.h"

namespace trtrace {

struct Writer::Impl {
  explicit Impl(const WriterOptions& o) : opt(o), file(opt), blobs(file, opt), log(file, blobs, opt) {}
  WriterOptions opt;
  detail::BlockFile file;
  detail::BlobStore blobs;
  detail::CallLog log;
  detail::EncoderPool encoders;
  bool closed = false;
  std::mutex copiedMu;
  Writer::Stats copied;  // blobs written by copyEncodedBlob (its blob counters)
};

}  // namespace trtrace
