// Writer: see trtrace/writer.h for the contract and docs/format.md for the layout.
#include "trtrace/writer.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <zstd.h>

#include "internal.h"

namespace trtrace {
namespace {

using flatbuffers::FlatBufferBuilder;
using flatbuffers::Offset;
namespace F = format;

uint64_t osThreadId() {
  thread_local uint64_t tid = static_cast<uint64_t>(::syscall(SYS_gettid));
  return tid;
}

// One blob waiting for a worker: the caller's bytes (not copied) and its key.
struct BlobJob {
  const std::byte* data;
  uint64_t bytes;
  BlobHint hint;
  Hash128 hash;
};

// Compressed chunks of a small blob are buffered up to this many bytes before the file lock is
// taken; beyond it the worker streams the rest under the lock (memory stays bounded).
constexpr uint64_t kBlobBufferLimit = 16 << 20;
constexpr uint64_t kMinCompressBytes = 256;

F::BlobTransform transformFor(BlobHint hint, uint64_t bytes, const WriterOptions& o) {
  if (!o.byteGrouping) return F::BlobTransform::None;
  if ((hint == BlobHint::F16 || hint == BlobHint::BF16) && bytes % 2 == 0 && o.chunkBytes % 2 == 0)
    return F::BlobTransform::ByteGroup2;
  if (hint == BlobHint::F32 && bytes % 4 == 0 && o.chunkBytes % 4 == 0)
    return F::BlobTransform::ByteGroup4;
  return F::BlobTransform::None;
}

}  // namespace

struct CallEncoder::Impl {
  Writer::Impl* w = nullptr;
  FlatBufferBuilder b{1024};
  std::vector<Offset<fb::Value>> args;
  Offset<fb::Value> ret{0};
  Offset<flatbuffers::String> unsupIface{0}, msg{0};
  Offset<fb::BuildResult> build{0};
  uint32_t slot = 0, api = 0, network = 0;
  uint64_t receiver = 0;
  CallStatus status = CallStatus::Ok;

  void reset(uint32_t a, uint64_t r, uint32_t n) {
    b.Clear();
    args.clear();
    ret = 0; unsupIface = 0; msg = 0; build = 0;
    slot = 0; api = a; receiver = r; network = n;
    status = CallStatus::Ok;
  }
  // One place that creates a Value; arguments in schema field order (defaults are not stored).
  Offset<fb::Value> value(fb::ValueKind kind, int64_t i = 0, uint64_t u = 0, double f = 0,
                          std::string_view str = {}, uint32_t typeId = 0,
                          std::span<const int64_t> ints = {}, std::span<const float> floats = {},
                          std::span<const uint64_t> handles = {},
                          std::span<const std::byte> bytes = {}, uint32_t dtype = 0,
                          uint64_t count = 0, const BlobRef* blob = nullptr, uint64_t seed = 0,
                          uint64_t ptr = 0) {
    bool isStr = kind == fb::ValueKind::String;
    auto s = isStr ? b.CreateString(str.data(), str.size()) : Offset<flatbuffers::String>(0);
    auto iv = ints.empty() && kind != fb::ValueKind::Dims && kind != fb::ValueKind::I64Array
                  ? Offset<flatbuffers::Vector<int64_t>>(0) : b.CreateVector(ints.data(), ints.size());
    auto fv = kind == fb::ValueKind::F32Array ? b.CreateVector(floats.data(), floats.size())
                                              : Offset<flatbuffers::Vector<float>>(0);
    auto hv = kind == fb::ValueKind::HandleArray ? b.CreateVector(handles.data(), handles.size())
                                                 : Offset<flatbuffers::Vector<uint64_t>>(0);
    auto bv = kind == fb::ValueKind::Bytes || kind == fb::ValueKind::WeightsInline
                  ? b.CreateVector(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())
                  : Offset<flatbuffers::Vector<uint8_t>>(0);
    return fb::CreateValue(b, kind, i, u, f, s, typeId, iv, fv, hv, bv, dtype, count,
                           blob ? blob->hash.lo : 0, blob ? blob->hash.hi : 0,
                           blob ? blob->length : 0, seed, ptr);
  }
};

struct Writer::Impl {
  WriterOptions opt;
  int fd = -1;

  // File: appended by segment flushes and blob workers, one at a time.
  std::mutex fileMu;
  uint64_t end = 0;                           // next block offset (8-aligned)
  std::vector<fb::SegmentEntry> segEntries;   // footer index
  std::vector<fb::BlobEntry> blobEntries;     // footer index

  // Call log: the open segment.
  std::mutex segMu;
  ZSTD_CCtx* segCctx = nullptr;   // compresses segments (under segMu)
  std::vector<std::byte> segOut;  // SegmentZstdHeader + frame of the segment being written
  FlatBufferBuilder seg{64 << 10};
  std::vector<Offset<fb::CallRecord>> records;
  std::vector<Offset<fb::ApiDescriptor>> segApis;
  uint64_t nextSeq = 0, segFirstSeq = 0;
  uint32_t segIndex = 0;
  struct Descriptor { std::string iface, method; std::vector<std::string> args; };
  std::unordered_map<uint32_t, Descriptor> descriptors;
  std::unordered_set<uint32_t> described;  // ids whose descriptor is in a written/open segment
  bool segmentsCopied = false;             // appendSegment() used

  std::mutex encMu;
  // Every encoder handed out, owned here: one abandoned between beginCall and endCall (the caller
  // threw) is freed with the writer instead of leaking. freeEncoders: those ready for reuse.
  std::vector<std::unique_ptr<CallEncoder>> encoders;
  std::vector<CallEncoder*> freeEncoders;

  // Blobs: dedup set and the bounded queue.
  std::mutex blobMu;
  std::condition_variable blobCv;
  std::unordered_set<BlobRef, BlobRefHasher> seen;
  std::deque<BlobJob> queue;
  uint64_t pendingBytes = 0, pendingJobs = 0;  // enqueued and not yet consumed
  bool stopping = false;
  std::exception_ptr workerError;
  std::vector<std::thread> workers;

  mutable std::mutex statsMu;
  Stats stats;
  bool closed = false;
  std::atomic<bool> failed{false};  // a write failed: nothing more is written (writer.h, "Failure")
  std::mutex failMu;
  std::string failure;              // the first failed write's message, repeated by every later one
  [[noreturn]] void throwFailed() {
    std::lock_guard g(failMu);
    throw Error(Error::Kind::Io, failure);
  }

  // --- file output -------------------------------------------------------------------------
  // The one place that writes to the file.
  void pwriteAll(const void* p, uint64_t n, uint64_t off) {
    if (failed) throwFailed();
    auto* c = static_cast<const char*>(p);
    while (n > 0) {
      const int fault = opt.writeFault ? opt.writeFault() : 0;
      ssize_t k = fault ? (errno = fault, -1) : ::pwrite(fd, c, std::min<uint64_t>(n, 1u << 30), static_cast<off_t>(off));
      if (k < 0) {
        if (errno == EINTR) continue;
        const std::string what = opt.path + ": write at offset " + std::to_string(off) + " failed: " + detail::errnoText();
        {
          std::lock_guard g(failMu);
          if (failure.empty()) failure = what;
        }
        failed = true;
        throwFailed();
      }
      c += k; off += static_cast<uint64_t>(k); n -= static_cast<uint64_t>(k);
    }
  }
  void writeZeros(uint64_t off, uint64_t n) {
    static const std::byte zeros[F::kBlobAlign] = {};
    while (n > 0) {
      uint64_t k = std::min<uint64_t>(n, sizeof zeros);
      pwriteAll(zeros, k, off);
      off += k; n -= k;
    }
  }
  // Writes a whole block whose payload is in memory, at `end`. Caller holds fileMu.
  uint64_t appendBlock(F::BlockType type, const void* payload, uint64_t n, uint16_t flags = 0) {
    uint64_t at = end;
    auto h = detail::makeBlockHeader(type, n, n, detail::check32(payload, n), flags);
    pwriteAll(payload, n, at + sizeof h);
    finishBlock(at, h);
    return at;
  }
  // Writes the block header (last, so a torn block never looks complete) and the zero padding.
  void finishBlock(uint64_t at, const F::BlockHeader& h) {
    uint64_t payloadEnd = at + sizeof h + h.payloadSize;
    uint64_t next = F::alignUp(payloadEnd, F::kBlockAlign);
    writeZeros(payloadEnd, next - payloadEnd);
    pwriteAll(&h, sizeof h, at);
    end = next;
  }

  // --- blobs ---------------------------------------------------------------------------------
  struct WorkerScratch {
    ZSTD_CCtx* cctx = ZSTD_createCCtx();
    std::vector<std::byte> grouped, out, buffered;
    ~WorkerScratch() { ZSTD_freeCCtx(cctx); }
  };
  // One per worker thread, owned here rather than on the thread's stack, so it stays reachable from
  // the writer (a writer abandoned in a forked child, whose workers did not survive, leaks nothing).
  std::vector<std::unique_ptr<WorkerScratch>> scratch;

  // Raw blob at `end`: record, zero padding, data at the next 4 KiB boundary. Holds fileMu.
  void writeRawLocked(const BlobJob& j) {
    uint64_t at = end;
    uint64_t dataAt = F::alignUp(at + sizeof(F::BlockHeader) + sizeof(F::BlobRecord), F::kBlobAlign);
    F::BlobRecord r{};
    r.hashLo = j.hash.lo; r.hashHi = j.hash.hi;
    r.rawSize = r.storedSize = j.bytes;
    r.dataOffset = dataAt - at - sizeof(F::BlockHeader);
    r.encoding = static_cast<uint16_t>(F::BlobEncoding::Raw);
    r.elementHint = static_cast<uint32_t>(j.hint);
    uint64_t recAt = at + sizeof(F::BlockHeader);
    pwriteAll(&r, sizeof r, recAt);
    writeZeros(recAt + sizeof r, dataAt - recAt - sizeof r);
    pwriteAll(j.data, j.bytes, dataAt);
    finishBlock(at, detail::makeBlockHeader(F::BlockType::Blob, r.dataOffset + j.bytes, sizeof r,
                                            detail::check32(&r, sizeof r)));
    indexBlob(j, at, j.bytes, dataAt, r);
  }

  void indexBlob(const BlobJob& j, uint64_t at, uint64_t stored, uint64_t dataAt, const F::BlobRecord& r) {
    blobEntries.emplace_back(j.hash.lo, j.hash.hi, j.bytes, at, stored, dataAt, r.encoding, r.transform,
                             r.elementHint);
    std::lock_guard g(statsMu);
    stats.storedBytes += stored;
    if (r.encoding != uint16_t(F::BlobEncoding::Raw)) stats.compressedBlobs++;
  }

  void writeBlob(const BlobJob& j, WorkerScratch& s) {
    if (opt.zstdLevel <= 0 || j.bytes < kMinCompressBytes) {
      std::lock_guard g(fileMu);
      writeRawLocked(j);
      return;
    }
    const uint64_t chunk = opt.chunkBytes;
    const uint32_t nChunks = static_cast<uint32_t>((j.bytes + chunk - 1) / chunk);
    const F::BlobTransform tf = transformFor(j.hint, j.bytes, opt);
    const unsigned k = detail::transformElementSize(tf);
    std::vector<F::ChunkEntry> table(nChunks);
    const uint64_t dataOffset = sizeof(F::BlobRecord) + nChunks * sizeof(F::ChunkEntry);
    s.out.resize(ZSTD_compressBound(chunk));
    if (k > 1) s.grouped.resize(chunk);
    s.buffered.clear();

    std::unique_lock<std::mutex> lock(fileMu, std::defer_lock);
    uint64_t at = 0, written = 0;
    auto startStreaming = [&] {  // take the lock, flush what was buffered
      lock.lock();
      at = end;
      pwriteAll(s.buffered.data(), s.buffered.size(), at + sizeof(F::BlockHeader) + dataOffset);
      s.buffered.clear();
    };
    for (uint32_t c = 0; c < nChunks; ++c) {
      uint64_t off = uint64_t(c) * chunk, n = std::min<uint64_t>(chunk, j.bytes - off);
      const std::byte* src = j.data + off;
      if (k > 1) { detail::byteGroup(src, s.grouped.data(), n, k); src = s.grouped.data(); }
      size_t z = ZSTD_compressCCtx(s.cctx, s.out.data(), s.out.size(), src, n, opt.zstdLevel);
      if (ZSTD_isError(z)) throw Error(Error::Kind::Io, opt.path + ": zstd: " + ZSTD_getErrorName(z));
      bool keep = z < n;  // a chunk is stored compressed only when that is smaller
      const std::byte* out = keep ? s.out.data() : src;
      uint64_t outN = keep ? z : n;
      table[c] = {written, static_cast<uint32_t>(outN), keep ? 1u : 0u};
      if (!lock.owns_lock() && s.buffered.size() + outN > kBlobBufferLimit) startStreaming();
      if (lock.owns_lock())
        pwriteAll(out, outN, at + sizeof(F::BlockHeader) + dataOffset + written);
      else
        s.buffered.insert(s.buffered.end(), out, out + outN);
      written += outN;
    }
    // The blob stays compressed only if that saves at least minSaving.
    bool keep = double(written + dataOffset) <= double(j.bytes) * (1.0 - opt.minSaving);
    if (!lock.owns_lock()) {
      lock.lock();
      at = end;
      if (keep) pwriteAll(s.buffered.data(), s.buffered.size(), at + sizeof(F::BlockHeader) + dataOffset);
    }
    if (!keep) {
      end = at;  // overwrite any streamed attempt
      writeRawLocked(j);
      return;
    }
    F::BlobRecord r{};
    r.hashLo = j.hash.lo; r.hashHi = j.hash.hi;
    r.rawSize = j.bytes; r.storedSize = written; r.dataOffset = dataOffset;
    r.encoding = static_cast<uint16_t>(F::BlobEncoding::Zstd);
    r.transform = static_cast<uint16_t>(tf);
    r.elementHint = static_cast<uint32_t>(j.hint);
    r.chunkCount = nChunks;
    r.chunkRawSize = static_cast<uint32_t>(chunk);
    std::vector<std::byte> meta(dataOffset);
    std::memcpy(meta.data(), &r, sizeof r);
    std::memcpy(meta.data() + sizeof r, table.data(), nChunks * sizeof(F::ChunkEntry));
    pwriteAll(meta.data(), meta.size(), at + sizeof(F::BlockHeader));
    finishBlock(at, detail::makeBlockHeader(F::BlockType::Blob, dataOffset + written, dataOffset,
                                            detail::check32(meta.data(), meta.size())));
    indexBlob(j, at, written, at + sizeof(F::BlockHeader) + dataOffset, r);
  }

  void consume(const BlobJob& j, WorkerScratch& s) {
    try {
      // After a failed write the caller's bytes are not even read: the capture may have let the
      // application free them already (capture/session.cpp, Session::disable).
      if (failed) throwFailed();
      writeBlob(j, s);
    } catch (...) {
      std::lock_guard g(blobMu);
      if (!workerError) workerError = std::current_exception();
    }
    std::lock_guard g(blobMu);
    pendingBytes -= j.bytes;
    pendingJobs--;
    blobCv.notify_all();
  }

  void workerLoop(WorkerScratch& s) {
    for (;;) {
      BlobJob j;
      {
        std::unique_lock l(blobMu);
        blobCv.wait(l, [&] { return stopping || !queue.empty(); });
        if (queue.empty()) return;
        j = queue.front();
        queue.pop_front();
      }
      consume(j, s);
    }
  }

  void rethrowWorkerError() {
    std::lock_guard g(blobMu);
    if (workerError) std::rethrow_exception(workerError);
  }

  void drain(const std::function<void(uint64_t)>& onWait = {}) {
    {
      std::unique_lock l(blobMu);
      if (!onWait) {
        blobCv.wait(l, [&] { return pendingJobs == 0; });
      } else {
        while (pendingJobs != 0) {
          blobCv.wait_for(l, std::chrono::milliseconds(100));
          const uint64_t left = pendingBytes;
          l.unlock();
          onWait(left);
          l.lock();
        }
      }
    }
    rethrowWorkerError();
  }

  // --- call log ------------------------------------------------------------------------------
  // Writes one segment FlatBuffer as a block: zstd-compressed (SegmentZstdHeader + frame) when
  // that saves at least minSaving, else raw. Caller holds segMu (segOut, segCctx).
  void writeSegmentLocked(const void* fbuf, uint64_t n, uint64_t firstSeq, uint32_t calls, uint32_t index) {
    constexpr uint64_t kMinCompressSegment = 128;  // a frame's overhead outweighs any saving below
    const void* payload = fbuf;
    uint64_t payloadN = n;
    uint16_t flags = 0;
    if (opt.logZstdLevel > 0 && n >= kMinCompressSegment && n <= F::kMaxSegmentRawSize) {
      if (!segCctx) segCctx = ZSTD_createCCtx();
      if (!segCctx) throw Error(Error::Kind::Io, opt.path + ": zstd: cannot create a context");
      segOut.resize(sizeof(F::SegmentZstdHeader) + ZSTD_compressBound(n));
      size_t z = ZSTD_compressCCtx(segCctx, segOut.data() + sizeof(F::SegmentZstdHeader),
                                   segOut.size() - sizeof(F::SegmentZstdHeader), fbuf, n, opt.logZstdLevel);
      if (ZSTD_isError(z)) throw Error(Error::Kind::Io, opt.path + ": zstd: " + ZSTD_getErrorName(z));
      uint64_t stored = sizeof(F::SegmentZstdHeader) + z;
      if (double(stored) <= double(n) * (1.0 - opt.minSaving)) {  // kept only if it pays
        F::SegmentZstdHeader zh{};
        zh.rawSize = n;
        zh.rawCheck = detail::check32(fbuf, n);
        std::memcpy(segOut.data(), &zh, sizeof zh);
        payload = segOut.data();
        payloadN = stored;
        flags = F::kSegmentZstd;
      }
    }
    {
      std::lock_guard g(fileMu);
      uint64_t at = appendBlock(F::BlockType::Segment, payload, payloadN, flags);
      segEntries.emplace_back(at, firstSeq, calls, index);
    }
    if (segOut.capacity() > (uint64_t(1) << 20) && payloadN < segOut.size() / 4) segOut = {};  // no 8 MiB kept idle
    std::lock_guard g(statsMu);
    stats.segments++;
    stats.segmentRawBytes += n;
    stats.segmentStoredBytes += payloadN;
    if (flags) stats.compressedSegments++;
  }

  // Writes the open segment, if it holds calls. Caller holds segMu.
  void flushSegmentLocked() {
    if (records.empty()) return;
    auto calls = seg.CreateVector(records);
    auto apis = seg.CreateVector(segApis);
    seg.Finish(fb::CreateSegment(seg, segIndex, segFirstSeq, apis, calls));
    writeSegmentLocked(seg.GetBufferPointer(), seg.GetSize(), segFirstSeq, static_cast<uint32_t>(records.size()),
                       segIndex);
    segIndex++;
    segFirstSeq = nextSeq;
    records.clear();
    segApis.clear();
    seg.Clear();
  }

  void flushSegment(bool drainFirst) {
    if (drainFirst) drain();  // blobs referenced by the segment are on disk before it
    std::lock_guard g(segMu);
    flushSegmentLocked();
  }

  uint64_t endCall(CallEncoder::Impl& e) {
    auto args = e.b.CreateVector(e.args);
    uint64_t seq;
    bool flushNow;
    {
      std::lock_guard g(segMu);
      if (closed) throw Error(Error::Kind::Usage, opt.path + ": endCall after close");
      seq = nextSeq++;
      auto call = fb::CreateCall(e.b, seq, osThreadId(), e.network, e.api, e.receiver, args, e.ret,
                                 static_cast<fb::CallStatus>(e.status), e.unsupIface, e.slot,
                                 e.build, e.msg);
      e.b.Finish(call);
      if (!described.count(e.api)) {
        auto d = descriptors.find(e.api);
        if (d != descriptors.end()) {
          described.insert(e.api);
          std::vector<Offset<flatbuffers::String>> names;
          for (auto& a : d->second.args) names.push_back(seg.CreateString(a));
          auto nv = seg.CreateVector(names);
          segApis.push_back(fb::CreateApiDescriptor(seg, e.api, seg.CreateString(d->second.iface),
                                                    seg.CreateString(d->second.method), nv));
        }
      }
      // The call is its own FlatBuffer, nested: 8-byte aligned so its fields stay aligned.
      seg.ForceVectorAlignment(e.b.GetSize(), 1, 8);
      auto bytes = seg.CreateVector(e.b.GetBufferPointer(), e.b.GetSize());
      records.push_back(fb::CreateCallRecord(seg, bytes));
      {
        std::lock_guard s(statsMu);
        stats.calls++;
      }
      flushNow = opt.flush == FlushPolicy::EveryCall || seg.GetSize() >= opt.segmentBytes;
      // A flushed segment waits for the blobs its calls reference (workers never take segMu), so a
      // trace cut right after it never holds a call whose weights are missing. (With no workers,
      // as the shim runs FLUSH_AFTER_EVERY_CALL, there is nothing to wait for.)
      if (flushNow) {
        drain();
        flushSegmentLocked();
      }
    }
    if (!flushNow && opt.flush == FlushPolicy::OnBuild && !e.build.IsNull()) flushSegment(true);
    return seq;
  }
};

// ---- CallEncoder ------------------------------------------------------------------------------
CallEncoder::CallEncoder(Writer* w) : impl_(std::make_unique<Impl>()) { impl_->w = w->impl_.get(); }
CallEncoder::~CallEncoder() = default;

using VK = fb::ValueKind;
#define TRT_VALUE_PAIR(NAME, PARAMS, ...)                                   \
  CallEncoder& CallEncoder::arg##NAME PARAMS {                              \
    impl_->args.push_back(impl_->value(__VA_ARGS__));                       \
    return *this;                                                           \
  }                                                                         \
  CallEncoder& CallEncoder::ret##NAME PARAMS {                              \
    impl_->ret = impl_->value(__VA_ARGS__);                                 \
    return *this;                                                           \
  }
TRT_VALUE_PAIR(Null, (), VK::Null)
TRT_VALUE_PAIR(Bool, (bool v), VK::Bool, v ? 1 : 0)
TRT_VALUE_PAIR(I64, (int64_t v), VK::I64, v)
TRT_VALUE_PAIR(U64, (uint64_t v), VK::U64, 0, v)
TRT_VALUE_PAIR(F32, (float v), VK::F32, 0, 0, double(v))
TRT_VALUE_PAIR(F64, (double v), VK::F64, 0, 0, v)
TRT_VALUE_PAIR(String, (std::string_view v), VK::String, 0, 0, 0, v)
TRT_VALUE_PAIR(Enum, (uint32_t typeId, int64_t value), VK::Enum, value, 0, 0, {}, typeId)
TRT_VALUE_PAIR(Dims, (std::span<const int64_t> d), VK::Dims, 0, 0, 0, {}, 0, d)
TRT_VALUE_PAIR(Handle, (uint64_t h, uint32_t typeId), VK::Handle, 0, h, 0, {}, typeId)
TRT_VALUE_PAIR(HandleArray, (std::span<const uint64_t> h), VK::HandleArray, 0, 0, 0, {}, 0, {}, {}, h)
TRT_VALUE_PAIR(I64Array, (std::span<const int64_t> v), VK::I64Array, 0, 0, 0, {}, 0, v)
TRT_VALUE_PAIR(F32Array, (std::span<const float> v), VK::F32Array, 0, 0, 0, {}, 0, {}, v)
TRT_VALUE_PAIR(Bytes, (std::span<const std::byte> v), VK::Bytes, 0, 0, 0, {}, 0, {}, {}, {}, v)
TRT_VALUE_PAIR(WeightsInline, (uint32_t dtype, uint64_t count, std::span<const std::byte> bytes, uint64_t ptr),
               VK::WeightsInline, 0, 0, 0, {}, 0, {}, {}, {}, bytes, dtype, count, nullptr, 0, ptr)
TRT_VALUE_PAIR(WeightsBlob, (uint32_t dtype, uint64_t count, const BlobRef& blob, uint64_t ptr), VK::WeightsBlob,
               0, 0, 0, {}, 0, {}, {}, {}, {}, dtype, count, &blob, 0, ptr)
TRT_VALUE_PAIR(WeightsRandom, (uint32_t dtype, uint64_t count, uint64_t seed, uint64_t ptr), VK::WeightsRandom,
               0, 0, 0, {}, 0, {}, {}, {}, {}, dtype, count, nullptr, seed, ptr)
#undef TRT_VALUE_PAIR

CallEncoder& CallEncoder::status(CallStatus s) {
  impl_->status = s;
  return *this;
}
CallEncoder& CallEncoder::unsupported(std::string_view iface, uint32_t slot) {
  impl_->status = CallStatus::Unsupported;
  impl_->unsupIface = impl_->b.CreateString(iface.data(), iface.size());
  impl_->slot = slot;
  return *this;
}
CallEncoder& CallEncoder::message(std::string_view text) {
  impl_->msg = impl_->b.CreateString(text.data(), text.size());
  return *this;
}
CallEncoder& CallEncoder::buildResult(bool ok, uint64_t engineSize, const Hash128& h,
                                      std::span<const std::string> errors) {
  auto& b = impl_->b;
  std::vector<Offset<flatbuffers::String>> errs;
  for (auto& e : errors) errs.push_back(b.CreateString(e));
  impl_->build = fb::CreateBuildResult(b, ok, engineSize, h.lo, h.hi, b.CreateVector(errs));
  return *this;
}

uint64_t CallEncoder::endCall() {
  Writer::Impl* w = impl_->w;
  uint64_t seq;
  try {
    seq = w->endCall(*impl_);
  } catch (...) {
    std::lock_guard g(w->encMu);
    w->freeEncoders.emplace_back(this);
    throw;
  }
  std::lock_guard g(w->encMu);
  w->freeEncoders.emplace_back(this);  // back to the pool; owned by the writer again
  return seq;
}

// ---- Writer -----------------------------------------------------------------------------------
Writer::Writer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<Writer> Writer::create(const WriterOptions& options, const HeaderInfo& info) {
  auto impl = std::make_unique<Impl>();
  impl->opt = options;
  if (impl->opt.chunkBytes < 4096 || impl->opt.chunkBytes > (1u << 30))
    throw Error(Error::Kind::Usage, options.path + ": chunkBytes must be in [4 KiB, 1 GiB]");
  impl->fd = options.fd >= 0 ? ::fcntl(options.fd, F_DUPFD_CLOEXEC, 0)
                             : ::open(options.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (impl->fd < 0)
    throw Error(Error::Kind::Io, options.path + ": cannot create (" + detail::errnoText() + ")");

  // Fixed header (file_length 0 = not closed), then the header block.
  auto fh = detail::makeFileHeader(0, 0);
  impl->pwriteAll(&fh, sizeof fh, 0);
  impl->end = sizeof fh;
  FlatBufferBuilder b;
  std::vector<Offset<fb::Setting>> settings;
  for (auto& [k, v] : info.settings)
    settings.push_back(fb::CreateSetting(b, b.CreateString(k), b.CreateString(v)));
  std::string host = info.host;
  if (host.empty()) {
    char buf[256] = {};
    ::gethostname(buf, sizeof buf - 1);
    host = buf;
  }
  uint64_t now = info.startTimeNs ? info.startTimeNs
                                  : uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                 std::chrono::system_clock::now().time_since_epoch())
                                                 .count());
  b.Finish(fb::CreateHeader(b, F::kVersionMajor, F::kVersionMinor, b.CreateString(info.producer),
                            b.CreateString(info.producerVersion), b.CreateString(info.libraryName),
                            b.CreateString(info.libraryVersion), b.CreateVector(settings),
                            b.CreateString(host), info.pid ? info.pid : uint64_t(::getpid()), now,
                            info.libraryBuildId.empty() ? 0 : b.CreateString(info.libraryBuildId)));
  impl->appendBlock(F::BlockType::Header, b.GetBufferPointer(), b.GetSize());

  for (int i = 0; i < options.workerThreads; ++i) {
    impl->scratch.push_back(std::make_unique<Impl::WorkerScratch>());
    impl->workers.emplace_back([p = impl.get(), s = impl->scratch.back().get()] { p->workerLoop(*s); });
  }
  return std::unique_ptr<Writer>(new Writer(std::move(impl)));
}

Writer::~Writer() {
  try {
    close();
  } catch (...) {
  }
  // A failed close may leave workers running: stop them before the Impl goes away.
  {
    std::lock_guard g(impl_->blobMu);
    impl_->stopping = true;
  }
  impl_->blobCv.notify_all();
  for (auto& t : impl_->workers)
    if (t.joinable()) t.join();
  if (impl_->fd >= 0) ::close(impl_->fd);
  ZSTD_freeCCtx(impl_->segCctx);
  std::lock_guard g(impl_->encMu);
  impl_->freeEncoders.clear();
  impl_->encoders.clear();
}

void Writer::describeApi(uint32_t apiId, std::string_view iface, std::string_view method,
                         std::span<const std::string_view> argNames) {
  Impl::Descriptor d{std::string(iface), std::string(method), {}};
  for (auto a : argNames) d.args.emplace_back(a);
  std::lock_guard g(impl_->segMu);
  impl_->descriptors[apiId] = std::move(d);
}

BlobRef Writer::putBlob(const void* data, uint64_t bytes, BlobHint hint) {
  auto* p = impl_.get();
  BlobRef ref{hash128(data, bytes), bytes};  // hashed once, on the caller's thread
  {
    std::lock_guard g(p->statsMu);
    p->stats.blobPuts++;
    p->stats.blobPutBytes += bytes;
  }
  BlobJob job{static_cast<const std::byte*>(data), bytes, hint, ref.hash};
  {
    std::unique_lock l(p->blobMu);
    if (p->workerError) std::rethrow_exception(p->workerError);
    if (!p->seen.insert(ref).second) return ref;  // dedup hit: written once
    {
      std::lock_guard g(p->statsMu);
      p->stats.uniqueBlobs++;
      p->stats.uniqueBytes += bytes;
    }
    p->pendingJobs++;
    if (p->workers.empty()) {
      p->pendingBytes += bytes;
      l.unlock();
      static thread_local Impl::WorkerScratch scratch;
      p->consume(job, scratch);
      p->rethrowWorkerError();
      return ref;
    }
    // Bounded queue: wait while it is over budget (a single oversize blob still goes through).
    p->blobCv.wait(l, [&] { return p->pendingBytes == 0 || p->pendingBytes + bytes <= p->opt.queueBytes; });
    p->pendingBytes += bytes;
    p->queue.push_back(job);
  }
  p->blobCv.notify_all();
  return ref;
}

void Writer::drainBlobs(const std::function<void(uint64_t)>& onWait) { impl_->drain(onWait); }
uint64_t Writer::pendingBlobBytes() const {
  std::lock_guard g(impl_->blobMu);
  return impl_->pendingBytes;
}

CallEncoder& Writer::beginCall(uint32_t apiId, uint64_t receiver, uint32_t networkId) {
  CallEncoder* e = nullptr;
  {
    std::lock_guard g(impl_->encMu);
    if (!impl_->freeEncoders.empty()) {
      e = impl_->freeEncoders.back();
      impl_->freeEncoders.pop_back();
    } else {
      impl_->encoders.push_back(std::make_unique<CallEncoder>(this));
      e = impl_->encoders.back().get();
    }
  }
  e->impl_->reset(apiId, receiver, networkId);
  return *e;  // used by the caller until endCall() returns it to the pool
}

void Writer::appendSegment(std::span<const std::byte> bytes) {
  auto* p = impl_.get();
  flatbuffers::Verifier v(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (!v.VerifyBuffer<fb::Segment>(nullptr))
    throw Error(Error::Kind::Corrupt, p->opt.path + ": appendSegment: not a valid segment");
  auto* s = flatbuffers::GetRoot<fb::Segment>(bytes.data());
  uint32_t n = s->calls() ? s->calls()->size() : 0;
  std::lock_guard g(p->segMu);
  p->segmentsCopied = true;
  p->writeSegmentLocked(bytes.data(), bytes.size(), s->first_seq(), n, s->index());
  std::lock_guard st(p->statsMu);
  p->stats.calls += n;
}

void Writer::flush() {
  impl_->flushSegment(true);
}

void Writer::close() {
  auto* p = impl_.get();
  if (p->closed) return;
  p->flushSegment(true);
  {
    std::lock_guard g(p->blobMu);
    p->stopping = true;
  }
  p->blobCv.notify_all();
  for (auto& t : p->workers) t.join();
  p->workers.clear();
  p->rethrowWorkerError();
  std::lock_guard sg(p->segMu);
  p->closed = true;
  std::lock_guard g(p->fileMu);
  // Footer index: blobs sorted for binary search in place.
  std::sort(p->blobEntries.begin(), p->blobEntries.end(), [](auto& a, auto& b) {
    return std::make_tuple(a.hash_hi(), a.hash_lo(), a.length()) <
           std::make_tuple(b.hash_hi(), b.hash_lo(), b.length());
  });
  FlatBufferBuilder b;
  Stats st = stats();
  b.Finish(fb::CreateFooter(b, b.CreateVectorOfStructs(p->segEntries),
                            b.CreateVectorOfStructs(p->blobEntries), st.calls, st.blobPuts,
                            st.blobPutBytes));
  uint64_t footerAt = p->appendBlock(F::BlockType::Footer, b.GetBufferPointer(), b.GetSize());
  if (::ftruncate(p->fd, static_cast<off_t>(p->end)) != 0)
    throw Error(Error::Kind::Io, p->opt.path + ": truncate failed: " + detail::errnoText());
  if (::fdatasync(p->fd) != 0)
    throw Error(Error::Kind::Io, p->opt.path + ": fdatasync failed: " + detail::errnoText());
  // Only now does the header say "complete".
  auto fh = detail::makeFileHeader(p->end, footerAt);
  p->pwriteAll(&fh, sizeof fh, 0);
  ::close(p->fd);
  p->fd = -1;
}

Writer::Stats Writer::stats() const {
  std::lock_guard g(impl_->statsMu);
  return impl_->stats;
}

}  // namespace trtrace
