// Block file: the container's framing (docs/format.md, "Blocks"), both ways. Writing: the one
// place that writes to a trace file (aligned appends, block header last so a torn block never
// looks complete, the first failed write stops the file, footer index and the closing header
// patch). Reading: the check of one block (header, checksum, zero padding, flags, then the
// per-type payload check of the call log or the blob decoder).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <sys/uio.h>

#include "internal.h"
#include "trtrace/writer.h"

namespace trtrace::detail {

// An open trace file being appended to. Appends (appendBlock, finishBlock, end, the index
// vectors) happen under `mu`; pwriteAll may be called by a holder of `mu` only.
class BlockFile {
 public:
  // Creates options.path (or duplicates options.fd) and writes the fixed header (not closed).
  explicit BlockFile(const WriterOptions& options);
  ~BlockFile();
  BlockFile(const BlockFile&) = delete;
  BlockFile& operator=(const BlockFile&) = delete;

  const std::string& path() const { return path_; }
  bool failed() const { return failed_; }
  int fd() const { return fd_; }
  [[noreturn]] void throwFailed();  // the first failed write's message, as an Io Error

  void pwriteAll(const void* p, uint64_t n, uint64_t off);
  // pwriteAll of bytes that may have been released (a finisher's view of the application's memory):
  // false when the kernel could not read them (EFAULT); what was written before then stays.
  bool pwriteReleasable(const void* p, uint64_t n, uint64_t off);
  // pwriteAll of ranges that lie back to back from `off` (at most IOV_MAX of them).
  void pwritevAll(std::span<const iovec> iov, uint64_t off);
  // n bytes at `off` of what was written (a finisher's blocks, read back at close): false if short.
  bool preadAll(void* p, uint64_t n, uint64_t off) const;
  void writeZeros(uint64_t off, uint64_t n);
  // A whole block whose payload is in memory, at `end`; returns its offset.
  uint64_t appendBlock(format::BlockType type, const void* payload, uint64_t n, uint16_t flags = 0);
  // The block header at `at` (written last) and the zero padding after its payload; moves `end`
  // unless told not to (a reserved range's block, blob_store.h).
  void finishBlock(uint64_t at, const format::BlockHeader& h, bool moveEnd = true);
  // A block at `at` whose payload is the pieces back to back (h.payloadSize bytes in all): the
  // payload and its padding in one system call, then the header, as finishBlock; moves `end`.
  // For small blocks, where a system call per piece costs more than the bytes.
  void writeBlock(uint64_t at, const format::BlockHeader& h, std::span<const std::span<const std::byte>> pieces,
                  bool moveEnd = true);
  // Footer index (blobs sorted for binary search), truncate, fdatasync if durable, then the file header
  // that says "complete"; closes the file.
  void finish(uint64_t calls, uint64_t blobPuts, uint64_t blobPutBytes);
  void afterForkInChild();  // a forked child's locks, made anew

  std::mutex mu;
  uint64_t end = 0;                          // next block offset (8-aligned)
  std::vector<fb::SegmentEntry> segEntries;  // footer index
  std::vector<fb::BlobEntry> blobEntries;    // footer index

 private:
  [[noreturn]] void failWrite(uint64_t off);
  bool pwriteFrom(const void* p, uint64_t n, uint64_t off, bool releasable);

  std::string path_;
  int fd_ = -1;
  std::function<int()> writeFault_;
  bool durable_ = false;             // WriterOptions::durable
  std::atomic<bool> failed_{false};  // a write failed: nothing more is written (writer.h, "Failure")
  std::mutex failMu_;
  std::string failure_;
};

// Result of checking one block's framing and contents.
struct BlockCheck {
  enum Status { Ok, Truncated, Corrupt } status = Ok;
  format::BlockHeader h{};
  bool headerValid = false;  // h can be trusted (framing known even if the payload is bad)
  uint64_t next = 0;         // offset of the following block
  std::string why;
  // Segment blocks: the verified FlatBuffer, in the mapping (raw) or in `inflated` (compressed).
  const std::byte* fbuf = nullptr;
  uint64_t fbufSize = 0;
  std::unique_ptr<std::byte[]> inflated;
};

bool allZero(const std::byte* p, uint64_t n);
// The block at `at` of the mapped file [base, base + size).
BlockCheck checkBlock(const std::byte* base, uint64_t size, uint64_t at);

}  // namespace trtrace::detail
