// Reader opening: the mapping, the fixed file header, and the index of segments and blobs, from
// the footer of a closed trace (O(1)) or by a forward scan up to the first bad block.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <tuple>

#include "blob_decode.h"
#include "block_file.h"
#include "reader_impl.h"
#include "trtrace/finishing.h"
#include "trtrace/files.h"

namespace trtrace {
namespace F = format;
using detail::BlockCheck;

bool blobLess(const BlobInfo& a, const BlobInfo& b) {
  return std::make_tuple(a.ref.hash.hi, a.ref.hash.lo, a.ref.length, a.lost) <
         std::make_tuple(b.ref.hash.hi, b.ref.hash.lo, b.ref.length, b.lost);
}

Reader::Impl::~Impl() {
  if (base) ::munmap(const_cast<std::byte*>(base), size);
  if (fd >= 0) ::close(fd);
}

void Reader::Impl::map(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(Error::Kind::Io, path + ": cannot stat: " + detail::errnoText());
  size = static_cast<uint64_t>(st.st_size);
  if (size > 0) {
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) throw Error(Error::Kind::Io, path + ": cannot map: " + detail::errnoText());
    base = static_cast<const std::byte*>(p);
  }
  this->fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);  // -1: mappedFd() has none to give
}

bool Reader::Impl::checkFileHeader() {
  const size_t magicN = std::min<uint64_t>(size, sizeof F::kFileMagic);
  if (std::memcmp(base ? (const void*)base : "", F::kFileMagic, magicN) != 0)
    throw Error(Error::Kind::Corrupt, path + ": offset 0: not a trtrace file (bad magic)");
  if (size < sizeof(F::FileHeader)) {  // a cut inside the fixed header: an empty prefix
    trunc = 0;
    truncWhy = "incomplete file header";
    return false;
  }
  std::memcpy(&fh, base, sizeof fh);
  if (fh.versionMajor < F::kOldestMajor || fh.versionMajor > F::kVersionMajor)
    throw Error(Error::Kind::Corrupt, path + ": offset 8: format version " + std::to_string(fh.versionMajor) + "." +
                                          std::to_string(fh.versionMinor) + " is not supported (this reader reads " +
                                          std::to_string(F::kOldestMajor) + ".x to " +
                                          std::to_string(F::kVersionMajor) + ".x)");
  if (fh.headerCheck != detail::fileHeaderCheck(fh))
    throw Error(Error::Kind::Corrupt, path + ": offset 60: file header check mismatch");
  if (fh.fileLength != 0 && fh.fileLength < size)  // closed, then something appended
    throw Error(Error::Kind::Corrupt, path + ": offset " + std::to_string(fh.fileLength) + ": " +
                                          std::to_string(size - fh.fileLength) +
                                          " bytes after the recorded file length " + std::to_string(fh.fileLength));
  return true;
}

void Reader::Impl::index() {
  // A newer minor version is read as far as this reader understands it (unknown fields and
  // block types are skipped).
  if (!openFromFooter()) {
    header = {};
    closed = false;
    scan();
  }
  segState.reset(new std::atomic<int8_t>[segs.size()]);
  for (size_t i = 0; i < segs.size(); ++i) segState[i] = closed ? 0 : 1;  // scan verified them
  std::sort(blobs.begin(), blobs.end(), blobLess);
}

void Reader::Impl::readHeaderBlock(uint64_t off) {
  auto* h = flatbuffers::GetRoot<fb::Header>(base + off + sizeof(F::BlockHeader));
  const auto s = detail::sv;
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

void Reader::Impl::addBlob(uint64_t off) {
  auto r = detail::blobRecordAt(base, off);
  BlobInfo bi;
  bi.ref = {{r.hashLo, r.hashHi}, r.rawSize};
  bi.offset = off;
  bi.storedSize = r.storedSize;
  bi.compressed = r.encoding == uint16_t(F::BlobEncoding::Zstd);
  bi.lost = F::isBytelessEncoding(r.encoding);
  bi.replaced = r.encoding == uint16_t(F::BlobEncoding::Replaced);
  bi.dataOffset = off + sizeof(F::BlockHeader) + r.dataOffset;
  bi.hint = static_cast<BlobHint>(r.elementHint);
  blobs.push_back(bi);
}

namespace detail {

std::string checkFooterIndex(const fb::Footer& f, uint64_t footerOffset) {
  auto inside = [&](uint64_t off) { return off >= sizeof(F::FileHeader) && off < footerOffset; };
  uint64_t calls = 0, lastOffset = 0, nextSeq = 0;
  const uint32_t ns = f.segments() ? f.segments()->size() : 0;
  for (uint32_t i = 0; i < ns; ++i) {
    const fb::SegmentEntry* e = f.segments()->Get(i);
    const std::string seg = "footer: segment entry " + std::to_string(i);
    if (!inside(e->offset()) || (i && e->offset() <= lastOffset))
      return seg + ": offset " + std::to_string(e->offset()) + " out of order or outside the file";
    if (e->first_seq() < nextSeq || e->first_seq() > UINT64_MAX - e->calls())
      return seg + ": first seq " + std::to_string(e->first_seq()) + " overlaps the segment before it";
    lastOffset = e->offset();
    nextSeq = e->first_seq() + e->calls();
    calls += e->calls();  // u32 each: no overflow
  }
  if (f.total_calls() != calls)
    return "footer: total_calls " + std::to_string(f.total_calls()) +
           " is not the sum of its segment entries' calls (" + std::to_string(calls) + ")";
  if (f.blobs())
    for (const fb::BlobEntry* e : *f.blobs())
      if (!inside(e->offset()) || e->data_offset() <= e->offset() || e->data_offset() > footerOffset ||
          e->stored() > footerOffset - e->data_offset())
        return "footer: blob entry at offset " + std::to_string(e->offset()) + " lies outside the file";
  return "";
}

std::string checkSegmentEntry(uint64_t firstSeq, uint64_t calls, uint64_t heldFirstSeq, uint64_t heldCalls) {
  if (heldFirstSeq == firstSeq && heldCalls == calls) return "";
  return "the index says " + std::to_string(calls) + " calls from seq " + std::to_string(firstSeq) +
         ", the segment holds " + std::to_string(heldCalls) + " from seq " + std::to_string(heldFirstSeq);
}

}  // namespace detail

// O(1) path: the footer of a cleanly closed file. False if the footer is not there (a cut file, or
// one whose close did not finish); a footer that is there but lies is corruption.
bool Reader::Impl::openFromFooter() {
  if (fh.fileLength != size || fh.footerOffset < sizeof fh || fh.footerOffset >= size) return false;
  auto fc = detail::checkBlock(base, size, fh.footerOffset);
  if (fc.status != BlockCheck::Ok || fc.h.type != uint16_t(F::BlockType::Footer) || fc.next != size) return false;
  auto hc = detail::checkBlock(base, size, sizeof fh);
  if (hc.status != BlockCheck::Ok || hc.h.type != uint16_t(F::BlockType::Header)) return false;
  readHeaderBlock(sizeof fh);
  auto* f = flatbuffers::GetRoot<fb::Footer>(base + fh.footerOffset + sizeof(F::BlockHeader));
  if (std::string why = detail::checkFooterIndex(*f, fh.footerOffset); !why.empty())
    throw Error(Error::Kind::Corrupt, path + ": offset " + std::to_string(fh.footerOffset) + ": " + why);
  if (f->segments())
    for (auto* e : *f->segments()) segs.push_back({e->offset(), e->first_seq(), e->calls()});
  if (f->blobs())
    for (auto* e : *f->blobs()) {
      BlobInfo bi;
      bi.ref = {{e->hash_lo(), e->hash_hi()}, e->length()};
      bi.offset = e->offset();
      bi.storedSize = e->stored();
      bi.dataOffset = e->data_offset();
      bi.compressed = e->encoding() == uint16_t(F::BlobEncoding::Zstd);
      bi.lost = F::isBytelessEncoding(e->encoding());
      bi.replaced = e->encoding() == uint16_t(F::BlobEncoding::Replaced);
      bi.hint = static_cast<BlobHint>(e->hint());
      blobs.push_back(bi);
    }
  totalCalls = f->total_calls();
  // Blob records are not touched here (O(1) open); each is checked when the blob is read.
  closed = true;
  return true;
}

// Forward scan: every complete, valid block up to the first bad one.
void Reader::Impl::scan() {
  segs.clear();
  blobs.clear();
  totalCalls = 0;
  uint64_t pos = sizeof fh;
  bool sawHeader = false;
  while (pos < size) {
    auto bc = detail::checkBlock(base, size, pos);
    if (bc.status != BlockCheck::Ok) {
      trunc = pos;
      truncWhy = bc.why;
      return;
    }
    auto type = static_cast<F::BlockType>(bc.h.type);
    if (type == F::BlockType::Header && !sawHeader) {
      readHeaderBlock(pos);
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

// ---- Reader::open -----------------------------------------------------------------------------
Reader::Reader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Reader::~Reader() = default;

std::unique_ptr<Reader> Reader::open(const std::string& path) {
  finishing::await(path);                 // a finisher still writing it: waited for (or refused with --no-wait)
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
  m->map(fd);
  m->segState.reset(new std::atomic<int8_t>[0]);
  if (m->checkFileHeader()) m->index();
  return std::unique_ptr<Reader>(new Reader(std::move(m)));
}

}  // namespace trtrace
