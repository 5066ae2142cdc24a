// Block file: framing of the trace container (see block_file.h): the writer's appends and the
// reader's per-block check.
#include "block_file.h"

#include <sys/stat.h>
#include <sys/uio.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <tuple>

#include "blob_decode.h"
#include "call_log.h"

namespace trtrace::detail {
namespace F = format;

// ---- writing ----------------------------------------------------------------------------------
// Emptied without O_TRUNC when it has content, and then a second descriptor of it opened and closed
// at once: ext4 (auto_da_alloc) marks a file truncated to zero and, at its next close, forces the
// writeback of everything written since on the closing thread. Here that would be the application's
// exit waiting for the disk; with the mark spent on an empty file, the close only hands the data
// to the kernel (WriterOptions::durable asks for the disk explicitly).
static int createTruncated(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || st.st_size == 0) return fd;
  if (::ftruncate(fd, 0) != 0) {
    ::close(fd);
    return -1;
  }
  const int spent = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (spent >= 0) ::close(spent);
  return fd;
}

BlockFile::BlockFile(const WriterOptions& o) : path_(o.path), writeFault_(o.writeFault), durable_(o.durable) {
  fd_ = o.fd >= 0 ? ::fcntl(o.fd, F_DUPFD_CLOEXEC, 0) : createTruncated(o.path);
  if (fd_ < 0) throw Error(Error::Kind::Io, o.path + ": cannot create (" + errnoText() + ")");
  auto fh = makeFileHeader(0, 0);  // file_length 0 = not closed
  pwriteAll(&fh, sizeof fh, 0);
  end = sizeof fh;
}

BlockFile::~BlockFile() {
  if (fd_ >= 0) ::close(fd_);
}

void BlockFile::throwFailed() {
  std::lock_guard g(failMu_);
  throw Error(Error::Kind::Io, failure_);
}

// A write at `off` failed (errno): nothing more is written, and every later write says why.
void BlockFile::failWrite(uint64_t off) {
  const std::string what = path_ + ": write at offset " + std::to_string(off) + " failed: " + errnoText();
  {
    std::lock_guard g(failMu_);
    if (failure_.empty()) failure_ = what;
  }
  failed_ = true;
  throwFailed();
}

void BlockFile::pwriteAll(const void* p, uint64_t n, uint64_t off) { pwriteFrom(p, n, off, false); }

bool BlockFile::pwriteReleasable(const void* p, uint64_t n, uint64_t off) { return pwriteFrom(p, n, off, true); }

// The one place that writes to the file (pwritevAll's single call aside).
bool BlockFile::pwriteFrom(const void* p, uint64_t n, uint64_t off, bool releasable) {
  if (failed_) throwFailed();
  auto* c = static_cast<const char*>(p);
  while (n > 0) {
    const int fault = writeFault_ ? writeFault_() : 0;
    ssize_t k =
        fault ? (errno = fault, -1) : ::pwrite(fd_, c, std::min<uint64_t>(n, 1u << 30), static_cast<off_t>(off));
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EFAULT && releasable) return false;
      failWrite(off);
    }
    c += k;
    off += static_cast<uint64_t>(k);
    n -= static_cast<uint64_t>(k);
  }
  return true;
}

void BlockFile::afterForkInChild() {
  new (&mu) std::mutex();
  new (&failMu_) std::mutex();
}

bool BlockFile::preadAll(void* p, uint64_t n, uint64_t off) const {
  for (uint64_t done = 0; done < n;) {
    const ssize_t k = ::pread(fd_, static_cast<char*>(p) + done, n - done, static_cast<off_t>(off + done));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    done += static_cast<uint64_t>(k);
  }
  return true;
}

void BlockFile::writeZeros(uint64_t off, uint64_t n) {
  static const std::byte zeros[F::kBlobAlign] = {};
  while (n > 0) {
    uint64_t k = std::min<uint64_t>(n, sizeof zeros);
    pwriteAll(zeros, k, off);
    off += k;
    n -= k;
  }
}

uint64_t BlockFile::appendBlock(F::BlockType type, const void* payload, uint64_t n, uint16_t flags) {
  const uint64_t at = end;
  const std::span<const std::byte> piece[] = {{static_cast<const std::byte*>(payload), n}};
  writeBlock(at, makeBlockHeader(type, n, n, check32(payload, n), flags), piece);
  return at;
}

void BlockFile::finishBlock(uint64_t at, const F::BlockHeader& h, bool moveEnd) {
  uint64_t payloadEnd = at + sizeof h + h.payloadSize;
  uint64_t next = F::alignUp(payloadEnd, F::kBlockAlign);
  writeZeros(payloadEnd, next - payloadEnd);
  pwriteAll(&h, sizeof h, at);
  if (moveEnd) end = next;
}

void BlockFile::writeBlock(uint64_t at, const F::BlockHeader& h, std::span<const std::span<const std::byte>> pieces,
                           bool moveEnd) {
  static const std::byte zeros[F::kBlockAlign] = {};
  const uint64_t payloadEnd = at + sizeof h + h.payloadSize;
  const uint64_t next = F::alignUp(payloadEnd, F::kBlockAlign);
  std::vector<iovec> iov;
  iov.reserve(pieces.size() + 1);
  for (auto p : pieces)
    if (!p.empty()) iov.push_back({const_cast<std::byte*>(p.data()), p.size()});
  if (next > payloadEnd) iov.push_back({const_cast<std::byte*>(zeros), next - payloadEnd});
  pwritevAll(iov, at + sizeof h);
  pwriteAll(&h, sizeof h, at);
  if (moveEnd) end = next;
}

// The ranges back to back from `off` in one system call where the kernel takes them all; a short,
// interrupted or failed one goes on range by range through pwriteAll, which retries or fails.
void BlockFile::pwritevAll(std::span<const iovec> iov, uint64_t off) {
  uint64_t total = 0;
  for (const iovec& v : iov) total += v.iov_len;
  if (failed_) throwFailed();
  if (const int fault = writeFault_ ? writeFault_() : 0) {
    errno = fault;
    failWrite(off);
  }
  const ssize_t k = ::pwritev(fd_, iov.data(), static_cast<int>(iov.size()), static_cast<off_t>(off));
  if (k == static_cast<ssize_t>(total)) return;
  uint64_t done = k > 0 ? static_cast<uint64_t>(k) : 0;
  for (const iovec& v : iov) {
    const uint64_t skip = std::min<uint64_t>(done, v.iov_len);
    done -= skip;
    if (skip < v.iov_len) pwriteAll(static_cast<const char*>(v.iov_base) + skip, v.iov_len - skip, off + skip);
    off += v.iov_len;
  }
}

void BlockFile::finish(uint64_t calls, uint64_t blobPuts, uint64_t blobPutBytes) {
  std::sort(blobEntries.begin(), blobEntries.end(), [](auto& a, auto& b) {
    return std::make_tuple(a.hash_hi(), a.hash_lo(), a.length()) <
           std::make_tuple(b.hash_hi(), b.hash_lo(), b.length());
  });
  flatbuffers::FlatBufferBuilder b;
  b.Finish(fb::CreateFooter(b, b.CreateVectorOfStructs(segEntries), b.CreateVectorOfStructs(blobEntries), calls,
                            blobPuts, blobPutBytes));
  uint64_t footerAt = appendBlock(F::BlockType::Footer, b.GetBufferPointer(), b.GetSize());
  if (::ftruncate(fd_, static_cast<off_t>(end)) != 0)
    throw Error(Error::Kind::Io, path_ + ": truncate failed: " + errnoText());
  if (durable_ && ::fdatasync(fd_) != 0) throw Error(Error::Kind::Io, path_ + ": fdatasync failed: " + errnoText());
  // Only now does the header say "complete".
  auto fh = makeFileHeader(end, footerAt);
  pwriteAll(&fh, sizeof fh, 0);
  ::close(fd_);
  fd_ = -1;
}

// ---- reading ----------------------------------------------------------------------------------
namespace {

std::string hex16(uint16_t v) {
  char buf[8];
  snprintf(buf, sizeof buf, "0x%04x", v);
  return buf;
}

// Header, checksum, padding and flags of the block at `at`; "" when fine (b.status set otherwise).
std::string checkFraming(const std::byte* base, uint64_t size, uint64_t at, BlockCheck& b) {
  b.status = BlockCheck::Truncated;
  if (size - at < sizeof(F::BlockHeader)) return "incomplete block header";
  std::memcpy(&b.h, base + at, sizeof b.h);
  if (allZero(base + at, sizeof b.h)) return "block never completed (zero header)";
  b.status = BlockCheck::Corrupt;
  if (b.h.magic != F::kBlockMagic || b.h.headerCheck != blockHeaderCheck(b.h)) return "bad block header";
  b.headerValid = true;
  uint64_t payloadAt = at + sizeof b.h;
  if (b.h.payloadSize > size - payloadAt) return b.status = BlockCheck::Truncated, "block runs past end of file";
  b.next = F::alignUp(payloadAt + b.h.payloadSize, F::kBlockAlign);
  if (b.h.checkedSize > b.h.payloadSize) return "bad block header";
  if (check32(base + payloadAt, b.h.checkedSize) != b.h.payloadCheck) return "checksum mismatch";
  uint64_t padEnd = std::min(b.next, size);
  if (!allZero(base + payloadAt + b.h.payloadSize, padEnd - payloadAt - b.h.payloadSize))
    return "non-zero bytes in block padding";
  // Flags this reader does not know change how the payload reads: refused, never guessed.
  const auto type = static_cast<F::BlockType>(b.h.type);
  const bool knownType = type == F::BlockType::Header || type == F::BlockType::Segment || type == F::BlockType::Blob ||
                         type == F::BlockType::Footer;
  const uint16_t knownFlags = type == F::BlockType::Segment ? F::kKnownSegmentFlags : 0;
  if (knownType && (b.h.flags & ~knownFlags))
    return "unknown block flags " + hex16(b.h.flags) + " (written by a newer trtrace?)";
  b.status = BlockCheck::Ok;
  return "";
}

// The payload of a framed block, by type; "" when fine.
std::string checkPayload(const std::byte* base, uint64_t at, BlockCheck& b) {
  const std::byte* payload = base + at + sizeof b.h;
  flatbuffers::Verifier v(reinterpret_cast<const uint8_t*>(payload), b.h.payloadSize);
  switch (static_cast<F::BlockType>(b.h.type)) {
    case F::BlockType::Header: return v.VerifyBuffer<fb::Header>(nullptr) ? "" : "header FlatBuffer fails verification";
    case F::BlockType::Segment: return checkSegmentPayload(payload, b);
    case F::BlockType::Footer: return v.VerifyBuffer<fb::Footer>(nullptr) ? "" : "footer FlatBuffer fails verification";
    case F::BlockType::Blob: return checkBlobPayload(base, at, b.h);
  }
  return "";
}

}  // namespace

bool allZero(const std::byte* p, uint64_t n) {
  for (uint64_t i = 0; i < n; ++i)
    if (p[i] != std::byte{0}) return false;
  return true;
}

BlockCheck checkBlock(const std::byte* base, uint64_t size, uint64_t at) {
  BlockCheck b;
  b.why = checkFraming(base, size, at, b);
  if (b.why.empty()) b.why = checkPayload(base, at, b);
  if (!b.why.empty() && b.status == BlockCheck::Ok) b.status = BlockCheck::Corrupt;
  return b;
}

}  // namespace trtrace::detail
