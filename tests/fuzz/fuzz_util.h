// Helpers for the fuzz targets: an in-memory file (memfd) the trace reader can open by path, and
// a walk over every view the reader hands out (what tensorrt_player and `trtrace` touch).
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "trtrace/error.h"
#include "trtrace/reader.h"

namespace fz {

// One memfd per process, rewritten for every input; Reader::open maps it via /proc/self/fd/N.
class MemFile {
 public:
  explicit MemFile(const char* name) {
    fd_ = ::memfd_create(name, MFD_CLOEXEC);
    if (fd_ < 0) std::abort();
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  const std::string& set(const void* data, size_t n) {
    if (::ftruncate(fd_, 0) != 0) std::abort();
    const char* p = static_cast<const char*>(data);
    size_t off = 0;
    while (off < n) {
      ssize_t w = ::pwrite(fd_, p + off, n - off, static_cast<off_t>(off));
      if (w <= 0) std::abort();
      off += static_cast<size_t>(w);
    }
    return path_;
  }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

inline volatile uint64_t sink;

// Every accessor of a value; results are folded into `sink` so nothing is optimised away.
inline void touch(const trtrace::ValueView& v) {
  uint64_t h = static_cast<uint64_t>(v.kind());
  double f = v.asF64();
  h += v.asBool() + static_cast<uint64_t>(v.asI64()) + v.asU64() + (f == f && f > 0);
  h += v.asString().size() + v.typeId() + v.ints().size() + v.floats().size() + v.handles().size();
  h += v.bytes().size() + v.dtype() + v.count() + v.blob().length + v.seed();
  for (auto x : v.ints()) h += static_cast<uint64_t>(x);
  for (auto x : v.handles()) h += x;
  for (auto b : v.bytes()) h += static_cast<uint8_t>(b);
  h += v.toString().size();
  sink = sink + h;
}

// The property shared by `trtrace verify` and the player (one validation): a trace that verifies
// OK decodes in full -- every call, every value, every weights blob a call names (hash-checked, as
// the player reads it). A throw here is a finding: verify passed what a reader then refuses.
inline void verifiedTraceDecodes(const trtrace::Reader& r, uint64_t verifiedCalls, size_t maxBlobBytes) {
  uint64_t n = 0;
  try {
    r.forEachCall([&](const trtrace::CallView& c) {
      for (size_t i = 0; i <= c.argCount(); ++i) {
        auto v = i < c.argCount() ? c.arg(i) : c.ret().value_or(trtrace::ValueView());
        touch(v);
        if (v.kind() == trtrace::ValueKind::WeightsBlob && v.blob().length <= maxBlobBytes)
          sink = sink + r.checkedBlob(v.blob()).size();
      }
      ++n;
      return true;
    });
  } catch (const trtrace::Error& e) {
    std::fprintf(stderr, "verify said OK, but a reader refused the trace: %s\n", e.what());
    std::abort();
  }
  if (n != verifiedCalls) {
    std::fprintf(stderr, "verify counted %llu calls, the reader walked %llu\n",
                 static_cast<unsigned long long>(verifiedCalls), static_cast<unsigned long long>(n));
    std::abort();
  }
}

// Reads everything a consumer of the trace can read. Only trtrace::Error may escape the reader.
inline void exercise(const trtrace::Reader& r, size_t maxBlobBytes = 64u << 20) {
  const auto& h = r.header();
  sink = sink + h.producer.size() + h.libraryName.size() + h.settings.size() + h.pid;
  sink = sink + r.callCount() + r.segmentCount() + r.closedCleanly() + r.truncationMessage().size();
  try {
    uint64_t n = 0;
    r.forEachCall([&](const trtrace::CallView& c) {
      sink = sink + c.seq() + c.thread() + c.networkId() + c.apiId() + c.receiver();
      for (size_t i = 0; i < c.argCount(); ++i) touch(c.arg(i));
      touch(c.arg(c.argCount()));  // out of range: a null view
      if (auto ret = c.ret()) touch(*ret);
      sink = sink + static_cast<uint64_t>(c.status()) + c.unsupportedInterface().size() + c.unsupportedSlot() +
             c.message().size();
      if (auto b = c.buildResult()) sink = sink + b->ok + b->engineSize + b->errors.size();
      if (const auto* a = r.api(c.apiId())) sink = sink + a->argNames.size() + a->methodName.size();
      return ++n < 100000;
    });
  } catch (const trtrace::Error&) {}
  for (size_t i = 0; i < r.segmentCount(); ++i) {
    try {
      sink = sink + r.segmentBytes(i).size();
    } catch (const trtrace::Error&) {}
  }
  for (const auto* a : r.apis()) sink = sink + a->id;
  size_t budget = maxBlobBytes;
  for (const auto& b : r.blobs()) {
    if (b.ref.length > budget) continue;
    budget -= b.ref.length;
    try {
      auto v = r.blob(b.ref);
      if (v.size() != b.ref.length) std::abort();  // a blob view always has the recorded length
      if (v.size()) sink = sink + static_cast<uint8_t>(v.bytes()[v.size() - 1]);
    } catch (const trtrace::Error&) {}
    sink = sink + r.hasBlob(b.ref);
  }
  auto rep = r.verify();
  sink = sink + rep.issues.size() + rep.calls + rep.ok() + rep.corrupt() + rep.truncated();
  for (auto& i : rep.issues) sink = sink + i.what.size();
  if (rep.ok()) verifiedTraceDecodes(r, rep.calls, maxBlobBytes);
}

}  // namespace fz

#include <vector>

#include "internal.h"
#include "trtrace/format.h"
#include "trtrace/writer.h"

namespace fz {

// File header + header block of an unclosed trace, written by the real writer with fixed header
// fields (so its size, and with it the 4 KiB alignment of raw blob data after it, is the same on
// every machine). fuzz_blob_decoder frames each input after it; fuzz_seedgen aligns seeds to it.
inline const std::vector<uint8_t>& blobPrefix() {
  static std::vector<uint8_t> p = [] {
    namespace F = trtrace::format;
    MemFile m("fuzz_blob_prefix");
    trtrace::WriterOptions o;
    o.path = m.path();
    o.workerThreads = 0;
    trtrace::HeaderInfo h;
    h.producer = "fuzz";
    h.producerVersion = "1";
    h.libraryName = "lib";
    h.libraryVersion = "1";
    h.host = "fuzz";
    h.pid = 1;
    h.startTimeNs = 1;
    auto w = trtrace::Writer::create(o, h);
    std::vector<uint8_t> v;
    {
      auto r = trtrace::Reader::open(m.path());  // not closed yet: header + header block only
      auto map = r->mapping();
      F::BlockHeader bh;
      std::memcpy(&bh, map.data() + sizeof(F::FileHeader), sizeof bh);
      size_t n = F::alignUp(sizeof(F::FileHeader) + sizeof bh + bh.payloadSize, F::kBlockAlign);
      v.assign(reinterpret_cast<const uint8_t*>(map.data()), reinterpret_cast<const uint8_t*>(map.data()) + n);
    }
    w.reset();
    return v;
  }();
  return p;
}

// Recomputes the file header check and every block's checks, so that mutations of a seed trace get
// past the checksums into the FlatBuffers Verifier, the footer index, the blobs and the calls.
inline void fixChecks(std::vector<uint8_t>& b) {
  namespace F = trtrace::format;
  if (b.size() < sizeof(F::FileHeader)) return;
  F::FileHeader fh;
  std::memcpy(&fh, b.data(), sizeof fh);
  fh.headerCheck = trtrace::detail::fileHeaderCheck(fh);
  std::memcpy(b.data(), &fh, sizeof fh);
  uint64_t pos = sizeof fh;
  while (pos + sizeof(F::BlockHeader) <= b.size()) {
    F::BlockHeader h;
    std::memcpy(&h, b.data() + pos, sizeof h);
    if (h.magic != F::kBlockMagic) break;
    uint64_t avail = b.size() - pos - sizeof h;
    if (h.payloadSize <= avail && h.checkedSize <= h.payloadSize)
      h.payloadCheck = trtrace::detail::check32(b.data() + pos + sizeof h, h.checkedSize);
    h.headerCheck = trtrace::detail::blockHeaderCheck(h);
    std::memcpy(b.data() + pos, &h, sizeof h);
    if (h.payloadSize > avail) break;
    pos = F::alignUp(pos + sizeof h + h.payloadSize, F::kBlockAlign);
  }
}

}  // namespace fz
