// Call log: segment building, compression and writing; segment inflation and verification
// (see call_log.h).
#include "call_log.h"

#include <new>

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <zstd.h>

#include "call_encoder.h"

namespace trtrace::detail {
namespace F = format;
using flatbuffers::Offset;

namespace {

// Asked once per call appended: initial-exec and constant-initialised, so neither a call into the
// dynamic linker nor a guard (8 bytes of the static TLS room a dlopen'ed library may use).
uint64_t osThreadId() {
  thread_local uint64_t tid __attribute__((tls_model("initial-exec"))) = 0;
  if (tid == 0) tid = static_cast<uint64_t>(::syscall(SYS_gettid));
  return tid;
}

constexpr uint64_t kMinCompressSegment = 128;  // a frame's overhead outweighs any saving below

}  // namespace

namespace {
// A segment builder's first size: a full segment (segmentBytes, then the call that crossed it and
// the segment's vectors), bounded for a log configured with huge segments. Pages are touched only
// as the segment fills.
size_t segmentBuilderBytes(const WriterOptions& o) {
  return static_cast<size_t>(std::min<uint64_t>(o.segmentBytes + o.segmentBytes / 4 + (64 << 10), 64 << 20));
}
}  // namespace

CallLog::CallLog(BlockFile& file, BlobStore& blobs, const WriterOptions& options)
    : file_(file), blobs_(blobs), opt_(options), seg_(segmentBuilderBytes(options)) {}

CallLog::~CallLog() {
  if (bgThread_.joinable()) {
    {
      std::lock_guard g(bgMu_);
      bg_.stop = true;
    }
    bgCv_.notify_all();
    bgThread_.join();
  }
  ZSTD_freeCCtx(cctx_);
}

void CallLog::afterForkInChild() {
  mu_.reset();
  new (&bgMu_) std::mutex();
  new (&descMu_) std::mutex();
  new (&statsMu_) std::mutex();
  new (&bgCv_) std::condition_variable();
  new std::thread(std::move(bgThread_));  // names a thread that does not exist here: never joined
}

void CallLog::describe(uint32_t apiId, std::string_view iface, std::string_view method,
                       std::span<const std::string_view> argNames) {
  Descriptor d{std::string(iface), std::string(method), {}};
  for (auto a : argNames) d.args.emplace_back(a);
  std::lock_guard g(descMu_);
  descriptors_[apiId] = std::move(d);
}

Writer::Stats CallLog::stats() const {
  std::lock_guard g(statsMu_);
  Writer::Stats s = stats_;
  s.calls = calls_.load(std::memory_order_relaxed);
  return s;
}

// The batch's memory was last read by the log's thread, on another core: written cold, each line
// of a draft waits for that core to give it up, and the application's thread waits for all of
// them at the lock's release. Asked for here, they come while the application and the library
// run until its next call.
void CallLog::Batch::askRoom() {
  constexpr size_t kAhead = 512;  // the next two or three calls' drafts
  const size_t until = std::min(drafts.size() + kAhead, drafts.capacity());
  for (asked = std::max(asked, drafts.size()); asked < until; asked += 64) {
#if defined(__x86_64__)
    asm volatile("prefetchw %0" ::"m"(*(drafts.data() + asked)));  // a no-op on a CPU without it
#else
    __builtin_prefetch(drafts.data() + asked, 1);
#endif
  }
}

// ---- writing: the appending side --------------------------------------------------------------
uint64_t CallLog::append(CallEncoder::Impl& e) {
  uint64_t seq;
  const bool build = e.head().build;
  {
    std::lock_guard g(mu_);
    if (closed_) [[unlikely]]
      appendedAfterClose();
    seq = nextSeq_++;
    DraftHead& h = e.head();
    h.seq = seq;
    h.thread = osThreadId();
    h.bytes = static_cast<uint32_t>(e.draft.size());
    batch_.drafts.append(e.draft.data(), e.draft.size());
    batch_.askRoom();
    calls_.store(calls_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // appends hold mu_
    if (opt_.onCall) [[unlikely]]
      showAppended(e);
    // A flushed segment waits for the blobs its calls reference (workers never take mu_), so a
    // trace cut right after it never holds a call whose weights are missing: here for every-call
    // flushes (with no workers, as the shim runs FLUSH_AFTER_EVERY_CALL, nothing to wait for), on
    // the log's own thread for a full segment.
    if (opt_.flush == FlushPolicy::EveryCall) [[unlikely]] {
      blobs_.drain();
      flushLocked();
    } else if (batch_.drafts.size() >= kBatchBytes) [[unlikely]] {
      handOffLocked();
    }
  }
  if (opt_.flush == FlushPolicy::OnBuild && build) [[unlikely]]
    flush(true);
  return seq;
}

void CallLog::appendedAfterClose() { throw Error(Error::Kind::Usage, file_.path() + ": endCall after close"); }

void CallLog::showAppended(CallEncoder::Impl& e) {
  encodeCall(e.draft.data(), viewB_, viewScratch_);
  opt_.onCall(CallView(flatbuffers::GetRoot<fb::Call>(viewB_.GetBufferPointer())));
}

void CallLog::flushBehind() {
  std::lock_guard g(mu_);
  if (!closed_ && opt_.flush != FlushPolicy::EveryCall) handOffLocked(true);
}

void CallLog::handOffLocked(bool endSegment) {
  if (batch_.drafts.empty() && !endSegment) return;
  Batch next;
  {
    std::unique_lock l(bgMu_);
    bgCv_.wait(l, [&] { return bg_.error || bg_.pendingBytes < kMaxPendingBatchBytes; });
    if (bg_.error) std::rethrow_exception(bg_.error);
    if (!bg_.idle.empty()) {
      next = std::move(bg_.idle.back());
      bg_.idle.pop_back();
    }
    batch_.blobTicket = blobs_.ticket();  // every blob its calls reference is queued by now
    batch_.endSegment = endSegment;
    bg_.pendingBytes += batch_.drafts.size();
    bg_.pending.push_back(std::move(batch_));
  }
  batch_ = std::move(next);
  batch_.clear();
  if (batch_.drafts.capacity() < kBatchBytes + (4 << 10)) batch_.drafts.reserve(kBatchBytes + (4 << 10));
  if (!bgThread_.joinable()) bgThread_ = quietThread([this] { backgroundLoop(); });
  bgCv_.notify_all();
}

void CallLog::waitBackgroundLocked() {
  if (!bgThread_.joinable()) return encodePendingHere();
  std::unique_lock l(bgMu_);
  bgCv_.wait(l, [&] { return bg_.pending.empty(); });
  if (bg_.error) std::rethrow_exception(bg_.error);
}

// In a finisher that closes (no log thread here): the batches the application's log thread had
// not begun, parked for keys (backgroundLoop), encoded on this thread.
void CallLog::encodePendingHere() {
  std::lock_guard g(bgMu_);
  for (; !bg_.pending.empty(); bg_.pending.pop_front())
    if (!bg_.error) encodeBatch(bg_.pending.front());
  bg_.pendingBytes = 0;
  bg_.parked = false;
  if (bg_.error) std::rethrow_exception(bg_.error);
}

void CallLog::flushLocked() {
  waitBackgroundLocked();
  const uint64_t ticket = blobs_.ticket();  // drained by the caller, but for keys still to come
  batch_.blobTicket = ticket;
  batch_.endSegment = false;
  encodeBatch(batch_);
  batch_.clear();
  if (!records_.empty()) writeOpenSegment(ticket);
}

void CallLog::flush(bool drainFirst) {
  if (drainFirst) blobs_.drain();  // blobs referenced by the segment are on disk before it
  std::lock_guard g(mu_);
  flushLocked();
}

void CallLog::settle() {
  std::lock_guard g(mu_);
  if (!bgThread_.joinable()) return;
  std::unique_lock l(bgMu_);
  bgCv_.wait(l, [&] { return bg_.pending.empty() || bg_.parked; });
}

bool CallLog::busyLocked() const { return !bg_.pending.empty() && !bg_.parked; }

void CallLog::abandonLocked() { bg_.abandoned = true; }

void CallLog::appendSegment(std::span<const std::byte> bytes, std::span<const std::byte> stored, uint16_t storedFlags) {
  flatbuffers::Verifier v(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  if (!v.VerifyBuffer<fb::Segment>(nullptr))
    throw Error(Error::Kind::Corrupt, file_.path() + ": appendSegment: not a valid segment");
  auto* s = flatbuffers::GetRoot<fb::Segment>(bytes.data());
  uint32_t n = s->calls() ? s->calls()->size() : 0;
  std::lock_guard g(mu_);
  waitBackgroundLocked();
  writeSegment(bytes.data(), bytes.size(), s->first_seq(), n, s->index(), stored, storedFlags);
  calls_.fetch_add(n, std::memory_order_relaxed);
}

std::unique_lock<SpinLock> CallLog::seal() {
  std::unique_lock l(mu_);
  waitBackgroundLocked();
  closed_ = true;
  return l;
}

// ---- writing: the encoding side ---------------------------------------------------------------
// The log's thread: encodes each batch in order. The encoding side's state is its own while a
// batch is pending; every other user waits for it first (waitBackgroundLocked). After a failure
// nothing more is written: the file keeps its clean prefix.
void CallLog::backgroundLoop() {
  nameThisThread("trtrace-log", opt_.workerNice);  // gives way to the app, as the workers do
  std::unique_lock l(bgMu_);
  for (;;) {
    bgCv_.wait(l, [&] { return !bg_.pending.empty() || bg_.stop; });
    if (bg_.pending.empty()) return;
    Batch& b = bg_.pending.front();  // stays in place while others are queued behind it
    const bool failed = bg_.error != nullptr;
    if (!failed && !blobs_.beginEncoding(b.blobTicket)) {
      // Keys a finisher reads are still to come: waited for before the batch is touched, so that a
      // closing fork may take this state as it is (parked; the finisher encodes it, close).
      bg_.parked = true;
      bgCv_.notify_all();  // settle()
      l.unlock();
      blobs_.awaitKeys();
      l.lock();
      if (bg_.abandoned) return;  // a closing finisher encodes it: this process writes no more
      bg_.parked = false;
      continue;
    }
    l.unlock();
    std::exception_ptr error;
    try {
      if (!failed) encodeBatch(b);
    } catch (...) { error = std::current_exception(); }
    blobs_.endEncoding();
    l.lock();
    if (error && !bg_.error) bg_.error = error;
    bg_.pendingBytes -= b.drafts.size();
    if (bg_.idle.size() < 2) bg_.idle.push_back(std::move(b));
    bg_.pending.pop_front();
    bgCv_.notify_all();
  }
}

void CallLog::encodeBatch(const Batch& batch) {
  const std::byte* at = batch.drafts.data();
  const std::byte* end = at + batch.drafts.size();
  while (at < end) {
    addCall(at);
    at += reinterpret_cast<const DraftHead*>(at)->bytes;
    if (seg_.GetSize() >= opt_.segmentBytes) writeOpenSegment(batch.blobTicket);
  }
  if (batch.endSegment && !records_.empty()) writeOpenSegment(batch.blobTicket);
}

void CallLog::addCall(const std::byte* draft) {
  const DraftHead& h = *reinterpret_cast<const DraftHead*>(draft);
  encodeCall(draft, callB_, callScratch_);
  if (records_.empty()) segFirstSeq_ = h.seq;
  describeInSegment(h.api);
  // The call is its own FlatBuffer, nested: 8-byte aligned so its fields stay aligned.
  seg_.ForceVectorAlignment(callB_.GetSize(), 1, 8);
  auto bytes = seg_.CreateVector(callB_.GetBufferPointer(), callB_.GetSize());
  records_.push_back(fb::CreateCallRecord(seg_, bytes));
  segProvisional_ = segProvisional_ || h.provisional;
}

// Writes the open segment once the blobs its calls reference are: those queued by `blobTicket`
// (0: the caller drained them).
void CallLog::writeOpenSegment(uint64_t blobTicket) {
  if (blobTicket) blobs_.drainTo(blobTicket);
  finishSegment();
  if (segProvisional_) resolveKeys(seg_.GetBufferPointer());
  writeSegment(seg_.GetBufferPointer(), seg_.GetSize(), segFirstSeq_, static_cast<uint32_t>(records_.size()),
               segIndex_);
  nextSegment();
}

uint16_t CallLog::compress(const void* fbuf, uint64_t n, const void*& payload, uint64_t& payloadN) {
  payload = fbuf;
  payloadN = n;
  if (opt_.logZstdLevel <= 0 || n < kMinCompressSegment || n > F::kMaxSegmentRawSize) return 0;
  if (!cctx_) cctx_ = ZSTD_createCCtx();
  if (!cctx_) throw Error(Error::Kind::Io, file_.path() + ": zstd: cannot create a context");
  segOut_.resize(sizeof(F::SegmentZstdHeader) + ZSTD_compressBound(n));
  size_t z = ZSTD_compressCCtx(cctx_, segOut_.data() + sizeof(F::SegmentZstdHeader),
                               segOut_.size() - sizeof(F::SegmentZstdHeader), fbuf, n, opt_.logZstdLevel);
  if (ZSTD_isError(z)) throw Error(Error::Kind::Io, file_.path() + ": zstd: " + ZSTD_getErrorName(z));
  uint64_t stored = sizeof(F::SegmentZstdHeader) + z;
  if (double(stored) > double(n) * (1.0 - opt_.minSaving)) return 0;  // kept only if it pays
  F::SegmentZstdHeader zh{};
  zh.rawSize = n;
  zh.rawCheck = check32(fbuf, n);
  std::memcpy(segOut_.data(), &zh, sizeof zh);
  payload = segOut_.data();
  payloadN = stored;
  return F::kSegmentZstd;
}

// Writes one segment FlatBuffer as a block: zstd-compressed (SegmentZstdHeader + frame) when that
// saves at least minSaving, else raw.
void CallLog::writeSegment(const void* fbuf, uint64_t n, uint64_t firstSeq, uint32_t calls, uint32_t index,
                           std::span<const std::byte> stored, uint16_t storedFlags) {
  const void* payload;
  uint64_t payloadN;
  uint16_t flags = compress(fbuf, n, payload, payloadN);
  if (!stored.empty() && stored.size() < payloadN) {
    if (storedFlags & ~F::kKnownSegmentFlags)
      throw Error(Error::Kind::Usage, file_.path() + ": appendSegment: unknown flags");
    payload = stored.data(), payloadN = stored.size(), flags = storedFlags;
  }
  {
    std::lock_guard g(file_.mu);
    uint64_t at = file_.appendBlock(F::BlockType::Segment, payload, payloadN, flags);
    file_.segEntries.emplace_back(at, firstSeq, calls, index);
  }
  std::lock_guard g(statsMu_);
  stats_.segments++;
  stats_.segmentRawBytes += n;
  stats_.segmentStoredBytes += payloadN;
  if (flags) stats_.compressedSegments++;
}

void CallLog::finishSegment() {
  auto calls = seg_.CreateVector(records_);
  auto apis = seg_.CreateVector(segApis_);
  seg_.Finish(fb::CreateSegment(seg_, segIndex_, segFirstSeq_, apis, calls));
}

void CallLog::resolveKeys(uint8_t* segment) {
  auto* calls = flatbuffers::GetMutableRoot<fb::Segment>(segment)->mutable_calls();
  for (flatbuffers::uoffset_t i = 0; calls && i < calls->size(); ++i) {
    auto* call = flatbuffers::GetMutableRoot<fb::Call>(calls->GetMutableObject(i)->mutable_call()->Data());
    if (auto* args = call->mutable_args())
      for (flatbuffers::uoffset_t a = 0; a < args->size(); ++a) resolveKey(args->GetMutableObject(a));
    resolveKey(call->mutable_ret());
  }
}

void CallLog::resolveKey(fb::Value* v) {
  if (!v || v->kind() != fb::ValueKind::WeightsBlob) return;
  const BlobRef ref{{v->hash_lo(), v->hash_hi()}, v->length()};
  if (!provisionalBlob(ref)) return;
  const std::optional<BlobRef> key = blobs_.resolved(ref);
  if (!key)  // a segment written before its blobs were read: a bug of ours, never a wrong key on disk
    throw Error(Error::Kind::Io, file_.path() + ": a call's weights were not read before its segment");
  v->mutate_hash_lo(key->hash.lo);
  v->mutate_hash_hi(key->hash.hi);
}

// Opens the next segment (seg_ keeps its memory).
void CallLog::nextSegment() {
  segIndex_++;
  segProvisional_ = false;
  records_.clear();
  segApis_.clear();
  seg_.Clear();
}

// The descriptor of `api` into the open segment, the first time the id is used.
void CallLog::describeInSegment(uint32_t api) {
  if (api < described_.size() && described_[api]) return;
  std::lock_guard g(descMu_);
  auto d = descriptors_.find(api);
  if (d == descriptors_.end()) return;
  if (api >= described_.size()) described_.resize(api + 1);
  described_[api] = true;
  std::vector<Offset<flatbuffers::String>> names;
  for (auto& a : d->second.args) names.push_back(seg_.CreateString(a));
  auto nv = seg_.CreateVector(names);
  segApis_.push_back(
      fb::CreateApiDescriptor(seg_, api, seg_.CreateString(d->second.iface), seg_.CreateString(d->second.method), nv));
}

// ---- reading ----------------------------------------------------------------------------------
namespace {

// A compressed segment's payload (SegmentZstdHeader + one zstd frame), whose checksum already
// matched: decompressed into an owned buffer, at most kMaxSegmentRawSize bytes. "" when fine.
std::string inflateSegment(const std::byte* payload, uint64_t n, std::unique_ptr<std::byte[]>& out) {
  if (n < sizeof(F::SegmentZstdHeader)) return "compressed segment: header too short";
  F::SegmentZstdHeader zh;
  std::memcpy(&zh, payload, sizeof zh);
  if (zh.reserved != 0) return "compressed segment: reserved field not zero";
  if (zh.rawSize == 0 || zh.rawSize > F::kMaxSegmentRawSize)
    return "compressed segment: size " + std::to_string(zh.rawSize) + " out of range";
  const std::byte* frame = payload + sizeof zh;
  const size_t frameN = n - sizeof zh;
  // Exactly one frame, filling the payload, that declares the recorded size: checked before the
  // buffer is allocated.
  if (ZSTD_findFrameCompressedSize(frame, frameN) != frameN)
    return "compressed segment: not one zstd frame filling the payload";
  if (ZSTD_getFrameContentSize(frame, frameN) != zh.rawSize)
    return "compressed segment: frame does not declare the recorded size";
  try {
    out = std::make_unique_for_overwrite<std::byte[]>(zh.rawSize);
  } catch (const std::bad_alloc&) {
    return "compressed segment: cannot allocate " + std::to_string(zh.rawSize) + " bytes";
  }
  size_t z = ZSTD_decompress(out.get(), zh.rawSize, frame, frameN);
  if (ZSTD_isError(z) || z != zh.rawSize) return "compressed segment does not decompress";
  if (check32(out.get(), zh.rawSize) != zh.rawCheck) return "compressed segment: decompressed bytes fail their check";
  return "";
}

}  // namespace

// Applied wherever a segment is read (verify, the player, every CLI tool), so verify OK means
// every call decodes. The Verifier checks a vector's 4-byte length field, not the alignment of
// 8-byte elements, and alignment only relative to the nested Call buffer's start: the writer
// places those starts on 8-byte boundaries and aligns non-empty 8-byte arrays, so either off that
// boundary is damage (found by fuzzing). An EMPTY array is fine wherever it lies: FlatBuffers does
// not pre-align zero-length vectors (a scalar's Dims is a 4-aligned empty array), and no element
// of it is ever read.
std::string checkCallRecord(const fb::CallRecord* rec) {
  if (!rec->call()) return "";  // an empty record is reported by whoever walks the calls
  if ((reinterpret_cast<uintptr_t>(rec->call()->data()) & 7) != 0) return "call record not 8-byte aligned";
  const fb::Call* c = rec->call_nested_root();
  auto misaligned = [](const auto* v) {
    return v && v->size() != 0 && reinterpret_cast<uintptr_t>(v->data()) % 8 != 0;
  };
  auto bad = [&](const fb::Value* v) { return v && (misaligned(v->ints()) || misaligned(v->handles())); };
  bool any = bad(c->ret());
  if (c->args())
    for (auto* v : *c->args()) any = any || bad(v);
  return any ? "call " + std::to_string(c->seq()) + ": an array of 8-byte values is misaligned" : "";
}

std::string checkSegmentPayload(const std::byte* payload, BlockCheck& b) {
  b.fbuf = payload;
  b.fbufSize = b.h.payloadSize;
  if (b.h.flags & F::kSegmentZstd) {
    if (auto why = inflateSegment(payload, b.h.payloadSize, b.inflated); !why.empty()) return why;
    F::SegmentZstdHeader zh;
    std::memcpy(&zh, payload, sizeof zh);
    b.fbuf = b.inflated.get();
    b.fbufSize = zh.rawSize;
  }
  flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t*>(b.fbuf), b.fbufSize);
  if (!verifier.VerifyBuffer<fb::Segment>(nullptr)) return "segment FlatBuffer fails verification";
  if (auto* calls = flatbuffers::GetRoot<fb::Segment>(b.fbuf)->calls())
    for (auto* rec : *calls)
      if (auto why = checkCallRecord(rec); !why.empty()) return why;
  return "";
}

const fb::Call* callOf(const fb::CallRecord* rec, const std::string& path, size_t segment, uint64_t offset) {
  const fb::Call* c = rec->call() ? rec->call_nested_root() : nullptr;
  if (!c)
    throw Error(Error::Kind::Corrupt, path + ": segment " + std::to_string(segment) + " at offset " +
                                          std::to_string(offset) + ": empty call record");
  return c;
}

BlobView segmentPrefix(const fb::Segment* s, uint32_t calls) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<Offset<fb::ApiDescriptor>> apis;
  if (s->apis())
    for (auto* d : *s->apis()) {
      std::vector<Offset<flatbuffers::String>> names;
      if (d->arg_names())
        for (auto* n : *d->arg_names()) names.push_back(b.CreateString(sv(n)));
      apis.push_back(fb::CreateApiDescriptor(b, d->id(), b.CreateString(sv(d->interface())),
                                             b.CreateString(sv(d->method())), b.CreateVector(names)));
    }
  std::vector<Offset<fb::CallRecord>> records;
  const uint32_t n = s->calls() ? std::min<uint32_t>(calls, s->calls()->size()) : 0;
  for (uint32_t k = 0; k < n; ++k) {
    auto* c = s->calls()->Get(k)->call();
    b.ForceVectorAlignment(c ? c->size() : 0, 1, 8);  // nested calls stay 8-aligned (as append() writes them)
    records.push_back(fb::CreateCallRecord(b, b.CreateVector(c ? c->data() : nullptr, c ? c->size() : 0)));
  }
  b.Finish(fb::CreateSegment(b, s->index(), s->first_seq(), b.CreateVector(apis), b.CreateVector(records)));
  auto buf = std::make_unique<std::byte[]>(b.GetSize());
  std::memcpy(buf.get(), b.GetBufferPointer(), b.GetSize());
  return BlobView::owned(std::move(buf), b.GetSize());
}

}  // namespace trtrace::detail
