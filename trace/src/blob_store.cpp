// Blob store: dedup index, bounded queue, workers and the blob encoder (see blob_store.h).
#include "blob_store.h"

#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <optional>
#include <span>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>
#include <zstd.h>

#include "blob_decode.h"
#include "blob_reads.h"

namespace trtrace::detail {
namespace F = format;

namespace {

// Compressed chunks of a small blob are buffered up to this many bytes before the file lock is
// taken; beyond it the worker streams the rest under the lock (memory stays bounded).
constexpr uint64_t kBlobBufferLimit = 16 << 20;
constexpr uint64_t kMinCompressBytes = 256;      // a frame's overhead outweighs any saving below
constexpr uint64_t kSmallWeightBytes = 1 << 20;  // WriterOptions::rawBacklogBytes and smallMinSaving apply under this
// A batch of blobs: what wakes the workers, and what a worker takes of small blobs at once.
constexpr uint64_t kBatchBytes = 1 << 20;
constexpr size_t kBatchJobs = 64;
// Under this, a deferred blob is taken with its neighbours (and stored RawSmall).
constexpr uint64_t kSmallBlob = F::kSmallBlobMax;

F::BlobTransform transformFor(BlobHint hint, uint64_t bytes, const WriterOptions& o) {
  if (!o.byteGrouping) return F::BlobTransform::None;
  if ((hint == BlobHint::F16 || hint == BlobHint::BF16) && bytes % 2 == 0 && o.chunkBytes % 2 == 0)
    return F::BlobTransform::ByteGroup2;
  if (hint == BlobHint::F32 && bytes % 4 == 0 && o.chunkBytes % 4 == 0) return F::BlobTransform::ByteGroup4;
  return F::BlobTransform::None;
}

}  // namespace

F::BlobRecord recordFor(const BlobStore::Job& j, F::BlobEncoding enc, uint64_t stored, uint64_t dataOffset) {
  F::BlobRecord r{};
  r.hashLo = j.hash.lo;
  r.hashHi = j.hash.hi;
  r.rawSize = j.bytes;
  r.storedSize = stored;
  r.dataOffset = dataOffset;
  r.encoding = static_cast<uint16_t>(enc);
  r.elementHint = static_cast<uint32_t>(j.hint);
  return r;
}

namespace {

// process_vm_readv on this process works here (a seccomp profile may refuse it: then plain reads).
bool safeReadsWork() {
  char from = 1, to = 0;
  iovec local{&to, 1}, remote{&from, 1};
  return ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0) == 1 && to == 1;
}
bool safeReads() {
  static const bool safe = safeReadsWork();
  return safe;
}

// n of the caller's bytes at src into dst. A worker reads them after putBlob returned, and an app
// may have unmapped them by then (TensorRT reads weights only at build: those of a network never
// built may go at any time). process_vm_readv on ourselves fails with EFAULT where a plain read
// would crash the app; false then.
bool readCaller(const std::byte* src, uint64_t n, std::byte* dst) {
  if (!safeReads()) {
    std::memcpy(dst, src, n);
    return true;
  }
  for (uint64_t done = 0; done < n;) {
    iovec local{dst + done, n - done}, remote{const_cast<std::byte*>(src) + done, n - done};
    const ssize_t got = ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<uint64_t>(got);
  }
  return true;
}

// The caller's bytes of every range, back to back into dst, by one process_vm_readv of `self` (a
// worker's pid: this process's); false when it stopped short (a range gone: read each alone with
// readCaller to tell which) or safe reads cannot be had.
bool readCallerRanges(pid_t self, std::span<const iovec> from, std::byte* dst, uint64_t total) {
  if (!safeReads()) return false;
  iovec into{dst, total};
  for (;;) {
    const ssize_t got = ::process_vm_readv(self, &into, 1, from.data(), from.size(), 0);
    if (got < 0 && errno == EINTR) continue;
    return got == static_cast<ssize_t>(total);
  }
}

// The caller's bytes read chunk by chunk into a buffer of ours and hashed as they go: they are
// stored only if they are still the bytes putBlob hashed.
class CallerBytes {
 public:
  explicit CallerBytes(const BlobStore::Job& j) : j_(j) {
    XXH3_INITSTATE(&st_);
    XXH3_128bits_reset(&st_);
  }
  // Bytes [off, off + n) into buf; nullptr when they are gone. A worker's own copy is used in place.
  const std::byte* read(uint64_t off, uint64_t n, std::vector<std::byte>& buf) {
    if (j_.ours) return j_.data + off;
    if (buf.size() < n) buf.resize(n);
    if (!ok_ || !readCaller(j_.data + off, n, buf.data())) return ok_ = false, nullptr;
    XXH3_128bits_update(&st_, buf.data(), n);
    return buf.data();
  }
  // Every byte read and the same as putBlob hashed.
  bool intact() {
    if (j_.ours) return true;  // hashed into its key as it was read
    const XXH128_hash_t h = XXH3_128bits_digest(&st_);
    return ok_ && h.low64 == j_.hash.lo && h.high64 == j_.hash.hi;
  }

 private:
  const BlobStore::Job& j_;
  XXH3_state_t st_;
  bool ok_ = true;
};

// Raw bytes are read and written in pieces of this size.
constexpr uint64_t kRawPiece = 4 << 20;

}  // namespace

RawLayout rawLayout(uint64_t at, uint64_t bytes) {
  const bool small = bytes < F::kSmallBlobMax;
  const uint64_t dataAt =
      F::alignUp(at + sizeof(F::BlockHeader) + sizeof(F::BlobRecord), small ? F::kSmallBlobAlign : F::kBlobAlign);
  return {small, dataAt, F::alignUp(dataAt + bytes, F::kBlockAlign)};
}

namespace {

// What a deferred put notes of the bytes at the call, in O(1): kSamples pieces of kSampleBytes
// spread over them (the first and the last included), or all of them when they are as few. A
// worker that reads the bytes later checks them against it: bytes released and the memory used
// again, or changed where a sample lies, are not taken for the call's (docs/format.md, "Lost").
constexpr uint64_t kSamples = 16, kSampleBytes = 8, kSampled = kSamples * kSampleBytes;
uint64_t samplePos(uint64_t i, uint64_t bytes) { return i * (bytes - kSampleBytes) / (kSamples - 1); }
uint64_t sampleHash(const std::byte* samples, uint64_t bytes) {
  return XXH3_64bits(samples, std::min(bytes, kSampled));
}
// The samples' bytes that lie in [off, off + n) of the blob (`chunk`), copied to where they go.
void gatherSamples(std::byte* samples, uint64_t bytes, uint64_t off, uint64_t n, const std::byte* chunk) {
  if (bytes <= kSampled) {
    std::memcpy(samples + off, chunk, n);
    return;
  }
  if (off == 0 && n == bytes) {  // the whole run (at the call): fixed-size copies, no memcpy call each
    for (uint64_t i = 0; i < kSamples; ++i)
      std::memcpy(samples + i * kSampleBytes, chunk + samplePos(i, bytes), kSampleBytes);
    return;
  }
  for (uint64_t i = 0; i < kSamples; ++i) {
    const uint64_t lo = samplePos(i, bytes), from = std::max(lo, off), to = std::min(lo + kSampleBytes, off + n);
    if (from < to) std::memcpy(samples + i * kSampleBytes + (from - lo), chunk + (from - off), to - from);
  }
}
// At the call, on the application's thread. An application fills its weights long before it
// passes them, so each sample is a miss to memory: all their lines are asked for first, so that
// the misses overlap instead of following each other.
uint64_t sampleOf(const std::byte* data, uint64_t bytes) {
  std::byte samples[kSampled];
  for (uint64_t i = 0; bytes > kSampled && i < kSamples; ++i) {
    __builtin_prefetch(data + samplePos(i, bytes));
    __builtin_prefetch(data + samplePos(i, bytes) + kSampleBytes - 1);  // where a sample crosses a line
  }
  gatherSamples(samples, bytes, 0, bytes, data);
  return sampleHash(samples, bytes);
}

// Bytes that are only hashed, not kept, are read this many at a time: a piece that stays in the
// core's cache between the read's copy and the hash costs less than a 4 MiB one (micro_bench's
// BM_ReadAndHash: 1.56x the rate; BENCHMARKS.md).
constexpr uint64_t kHashPiece = 256 << 10;

// XXH3-128 of the caller's bytes, read as a worker reads them (readCaller, `piece` at a time through
// buf), and their samples gathered on the way where asked; nullopt when any of them is gone.
std::optional<Hash128> hashCaller(const std::byte* data, uint64_t bytes, std::vector<std::byte>& buf,
                                  std::byte* samples = nullptr, uint64_t piece = kHashPiece) {
  XXH3_state_t st;
  XXH3_INITSTATE(&st);
  XXH3_128bits_reset(&st);
  if (buf.size() < std::min(bytes, piece)) buf.resize(std::min(bytes, piece));
  for (uint64_t off = 0; off < bytes; off += piece) {
    const uint64_t n = std::min<uint64_t>(piece, bytes - off);
    if (!readCaller(data + off, n, buf.data())) return std::nullopt;
    XXH3_128bits_update(&st, buf.data(), n);
    if (samples) gatherSamples(samples, bytes, off, n, buf.data());
  }
  const XXH128_hash_t h = XXH3_128bits_digest(&st);
  return Hash128{h.low64, h.high64};
}

// A provisional key (deferKeys): the put's ordinal + 1 (never 0, so the call record stores the
// field and it can be resolved in place) under a high half no key of this writer's has.
constexpr uint64_t kProvisionalHi = 0x74727472'61636570ull;  // "trtrace" + 'p', never written to a file

}  // namespace
}  // namespace trtrace::detail

namespace trtrace {
std::optional<Hash128> hashReadable(const void* data, uint64_t bytes) {
  if (!detail::safeReads()) return std::nullopt;  // a plain read of released memory would crash
  std::vector<std::byte> buf;
  return detail::hashCaller(static_cast<const std::byte*>(data), bytes, buf);
}

bool provisionalBlob(const BlobRef& ref) { return ref.hash.hi == detail::kProvisionalHi && ref.hash.lo != 0; }
}  // namespace trtrace

namespace trtrace::detail {

std::optional<Hash128> readKey(const BlobStore::Job& j, const BlockFile& file, std::vector<std::byte>& buf, bool keep) {
  if (file.failed()) return std::nullopt;
  std::byte samples[kSampled];
  const uint64_t piece = keep && j.bytes <= kRawPiece ? kRawPiece : kHashPiece;
  const std::optional<Hash128> key = hashCaller(j.data, j.bytes, buf, samples, piece);
  if (!key || sampleHash(samples, j.bytes) != j.sample) return std::nullopt;
  return key;
}

BlobStore::BlobStore(BlockFile& file, const WriterOptions& options) : file_(file), opt_(options) {
  // Where the system gives no random bytes, nonce_ stays 0: Lost keys are then this trace's own only.
  uint64_t random[2] = {};
  if (options.deferKeys && ::getrandom(random, sizeof random, 0) == sizeof random) nonce_ = {random[0], random[1]};
  workers_.reserve(options.workerThreads);  // a started thread is never lost to a failed push_back
  for (int i = 0; i < options.workerThreads; ++i) {
    scratch_.push_back(std::make_unique<Scratch>());
    workers_.push_back(quietThread([this, s = scratch_.back().get()] { workerLoop(*s); }));
  }
}

BlobStore::~BlobStore() {
  signalStop();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
  while (!handed_.empty()) popHandedLocked();  // (no thread left to wait on them)
}

void BlobStore::signalStop() {
  {
    std::lock_guard g(mu_);
    stopping_ = true;
    waitedOn_ = true;
  }
  workCv_.notify_all();
}

bool BlobStore::batchReadyLocked() const {
  return !queue_.empty() &&
         (stopping_ || draining_ || blocked_ || queuedBytes_ >= kBatchBytes || queue_.size() >= kBatchJobs);
}

void BlobStore::stop() {
  awaitKeys();  // the workers claim what is left: not before the keys handed out are in
  signalStop();
  for (auto& t : workers_) t.join();
  workers_.clear();
  rethrowWorkerError();
  settle();
}

BlobRef BlobStore::put(const void* data, uint64_t bytes, BlobHint hint) {
  puts_.fetch_add(1, std::memory_order_relaxed);
  putBytes_.fetch_add(bytes, std::memory_order_relaxed);
  if (opt_.deferKeys && !workers_.empty() && opt_.storeBlobs) return putDeferred(data, bytes, hint);
  BlobRef ref{hash128(data, bytes), bytes};  // hashed once, on the caller's thread
  Job job{static_cast<const std::byte*>(data), bytes, hint, ref.hash};
  {
    std::unique_lock l(mu_, std::defer_lock);
    lockSoon(l);
    if (workerError_) std::rethrow_exception(workerError_);
    if (auto [it, fresh] = seen_.try_emplace(ref, opt_.storeBlobs); !fresh) {  // dedup hit: written once
      if (it->second)  // still queued: a second source, should the first go away before it is read
        if (auto& o = others_[ref]; o.size() < kMaxSources) o.push_back(job.data);
      return ref;
    }
    {
      std::lock_guard g(statsMu_);
      stats_.uniqueBlobs++;
      stats_.uniqueBytes += bytes;
    }
    if (!opt_.storeBlobs) return ref;  // the bytes stay where they are (WriterOptions::storeBlobs)
    if (workers_.empty()) {
      job.ordinal = nextOrdinal_++;
      done_.push_back(false);
      ++undone_;
      pendingBytes_ += bytes;
      l.unlock();
      static thread_local Scratch scratch;
      consume(job, scratch);
      rethrowWorkerError();
      settle();  // read on the caller's thread, at the call: nothing to wait for
      return ref;
    }
    if (!enqueueLocked(l, job)) return ref;
  }
  workCv_.notify_one();
  return ref;
}

// Nothing is read here: the job is queued under the next ordinal, and its provisional key names it.
BlobRef BlobStore::putDeferred(const void* data, uint64_t bytes, BlobHint hint) {
  Job job{static_cast<const std::byte*>(data), bytes, hint, {}, 0, false};
  // O(1), before the lock the workers take: the bytes are the app's, valid during its call.
  job.sample = sampleOf(job.data, bytes);
  std::unique_lock l(mu_, std::defer_lock);
  lockSoon(l);
  if (workerError_) std::rethrow_exception(workerError_);
  const bool wake = enqueueLocked(l, job);
  const BlobRef ref{{job.ordinal + 1, kProvisionalHi}, bytes};
  if (wake) {
    l.unlock();
    workCv_.notify_one();
  }
  return ref;
}

bool BlobStore::enqueueLocked(std::unique_lock<std::mutex>& l, Job& j) {
  // Bounded queue: wait while it is over budget (a single oversize blob still goes through).
  if (pendingBytes_ != 0 && pendingBytes_ + j.bytes > opt_.queueBytes) {
    ++blocked_;
    workCv_.notify_all();
    doneCv_.wait(l, [&] { return pendingBytes_ == 0 || pendingBytes_ + j.bytes <= opt_.queueBytes; });
    --blocked_;
  }
  j.ordinal = nextOrdinal_++;  // after the wait: the queue holds consecutive ordinals in order
  done_.push_back(false);
  ++undone_;
  if (!j.keyed) {
    keys_.push_back({});
    unkeyedBytes_ += j.bytes;
  }
  pendingBytes_ += j.bytes;
  queuedBytes_ += j.bytes;
  queue_.push_back(j);
  return batchReadyLocked();
}

std::optional<BlobRef> BlobStore::resolved(const BlobRef& ref) const {
  if (!provisionalBlob(ref)) return ref;
  std::lock_guard g(mu_);
  const uint64_t ordinal = ref.hash.lo - 1;
  if (ordinal >= keys_.size() || keys_[ordinal] == Hash128{}) return std::nullopt;
  return BlobRef{keys_[ordinal], ref.length};
}

Hash128 BlobStore::lostKey(uint64_t ordinal) const {
  const uint64_t in[3] = {nonce_.lo, nonce_.hi, ordinal};
  return hash128(in, sizeof in);
}

bool BlobStore::claimLocked(Job& j, const std::optional<Hash128>& key) {
  j.hash = key ? *key : lostKey(j.ordinal);
  j.keyed = true;
  keys_[j.ordinal] = j.hash;
  keyCv_.notify_all();  // keyNow
  const BlobRef ref{j.hash, j.bytes};
  if (!key) {
    failed_.try_emplace(ref, j.hint);
    return false;
  }
  noteSampleLocked(j);
  if (auto [it, fresh] = seen_.try_emplace(ref, true); !fresh) {  // dedup hit: written once
    if (it->second)  // still queued: a second source, should the first go away before it is read
      if (auto& o = others_[ref]; o.size() < kMaxSources) o.push_back(j.data);
    return false;
  }
  std::lock_guard g(statsMu_);
  stats_.uniqueBlobs++;
  stats_.uniqueBytes += j.bytes;
  return true;
}

void BlobStore::putLost(const BlobRef& ref, BlobHint hint, bool replaced) {
  rethrowWorkerError();
  std::lock_guard g(file_.mu);
  writeLostLocked({nullptr, ref.length, hint, ref.hash}, replaced);
}

void BlobStore::supersede(const BlobRef& ref) {
  std::lock_guard g(mu_);
  auto it = seen_.find(ref);
  if ((it != seen_.end() && it->second) || failed_.count(ref)) superseded_.insert(ref);  // still undecided
}

// The keys no source held any more get their record, now that the capture had its say (supersede).
void BlobStore::settle() {
  struct Todo {
    BlobRef key;
    BlobHint hint;
    bool replaced;
  };
  std::vector<Todo> todo;
  {
    std::lock_guard g(mu_);
    for (const auto& [key, hint] : failed_) {
      if (seen_.count(key)) continue;  // passed again since: that put stores it, or fails and comes back
      todo.push_back({key, hint, superseded_.erase(key) > 0});
    }
    failed_.clear();
  }
  if (todo.empty()) return;
  std::lock_guard g(file_.mu);
  for (const Todo& t : todo) writeLostLocked({nullptr, t.key.length, t.hint, t.key.hash}, t.replaced);
}

uint64_t BlobStore::pendingBytes() const {
  std::lock_guard g(mu_);
  return pendingBytes_;
}

Writer::Stats BlobStore::stats() const {
  std::lock_guard g(statsMu_);
  Writer::Stats s = stats_;
  s.blobPuts = puts_.load(std::memory_order_relaxed);
  s.blobPutBytes = putBytes_.load(std::memory_order_relaxed);
  return s;
}

// A worker takes jobs while there are any; once the queue is empty it sleeps until a batch is ready.
void BlobStore::workerLoop(Scratch& s) {
  nameThisThread("trtrace-blob", opt_.workerNice);
  // A worker takes jobs only within a batch (batchReadyLocked) and until the queue is empty, then
  // waits for the next one: one that starts late, with jobs already queued, waits too.
  bool inBatch = false;
  for (;;) {
    Job j;
    {
      std::unique_lock l(mu_);
      // Small blobs wait for a batch of them: taken one by one as the application queues them, each
      // cost a read, two writes and three rounds of mu_ (calls-20k: 5,327 futex calls, 611 so).
      if (queue_.empty() || !inBatch || (smallFrontLocked() && !batchReadyLocked()))
        workCv_.wait(l, [&] { return stopping_ || batchReadyLocked() || suspects_; });
      if (suspects_) {  // a handoff's, read with its thread (blob_handoff.cpp)
        helpReadSuspectsLocked(l, s.read);
        continue;
      }
      if (queue_.empty()) return;
      if (handedKeys_.load() > 0 && !stopping_) {  // no claim before the keys handed out come back
        awaitKeysLocked(l, true);
        continue;
      }
      inBatch = true;
      if (keyAheadLocked(l, s)) continue;
      if (reserving_) {  // a handoff takes the whole queue
        inBatch = false;
        workCv_.wait(l, [&] { return stopping_ || !reserving_; });
        continue;
      }
      if (queue_.front().keying) {  // became the front while another worker reads its key
        workCv_.wait(l, [&] { return queue_.empty() || !queue_.front().keying; });
        continue;
      }
      if (takeSmallLocked(s.batch)) {
        popSmallLocked(s.batch);
        l.unlock();
        consumeSmall(s.batch, s);
        continue;
      }
      j = queue_.front();
      queue_.pop_front();
      queuedBytes_ -= j.bytes;
      j.behind = opt_.rawBacklogBytes && j.bytes < kSmallWeightBytes && queuedBytes_ >= opt_.rawBacklogBytes;
      if (!j.keyed) unkeyedBytes_ -= j.bytes;
      if (j.skip) {
        finishedLocked(j);
        continue;
      }
    }
    consume(j, s);
  }
}

// Keys not read yet are read ahead of the writes, past the front (whose writer reads it once for
// both), while more than kKeyAheadBytes of them wait: a handoff reads on the application's thread
// those that may be repeats (blob_handoff.cpp), so they stay few however far the writes fall
// behind. Not once an application thread waits for every write (drain, stop): each key is then
// read by its writer, once.
bool BlobStore::keyAheadLocked(std::unique_lock<std::mutex>& l, Scratch& s) {
  constexpr uint64_t kKeyAheadBytes = 32 << 20;
  if (unkeyedBytes_ <= kKeyAheadBytes || reserving_ || callersDraining_ || stopping_) return false;
  return keyNextLocked(l, false, s.read);
}

bool BlobStore::keyNextLocked(std::unique_lock<std::mutex>& l, bool front, std::vector<std::byte>& buf) {
  if (queue_.empty()) return false;
  const auto open = [&](uint64_t k) { return !queue_[k].keyed && !queue_[k].keying; };
  uint64_t i = std::max(keyNext_, queue_.front().ordinal + 1) - queue_.front().ordinal;
  if (front && open(0)) i = 0;
  while (i < queue_.size() && !open(i)) ++i;  // keyNow reads out of order
  if (i >= queue_.size()) return false;
  keyNext_ = std::max(keyNext_, queue_[i].ordinal + 1);
  keyInPlaceLocked(l, i, buf);
  return true;
}

bool BlobStore::keyInPlaceLocked(std::unique_lock<std::mutex>& l, size_t index, std::vector<std::byte>& buf) {
  Job j = queue_[index];
  queue_[index].keying = true;
  unkeyedBytes_ -= j.bytes;
  ++keying_;
  l.unlock();
  const std::optional<Hash128> key = readKey(j, file_, buf);
  l.lock();
  --keying_;
  // Still queued, at the same place: a writer takes only the front when it is not being keyed, and
  // a handoff waits for keying_ to fall to 0 before it takes the queue.
  Job& q = queue_[j.ordinal - queue_.front().ordinal];
  q.keying = false;
  if (!claimLocked(q, key)) q.skip = true;  // nothing to write: finished when it reaches the front
  workCv_.notify_all();                     // a writer waiting for this front, a handoff for keying_
  return key.has_value();
}

BlobRef BlobStore::keyNow(const BlobRef& ref, bool* readHere) {
  if (readHere) *readHere = false;
  if (!provisionalBlob(ref)) return ref;
  const uint64_t ordinal = ref.hash.lo - 1;
  std::unique_lock l(mu_);
  if (ordinal >= keys_.size()) throw Error(Error::Kind::Usage, file_.path() + ": blobKey: not a key of this writer");
  if (handedKeys_.load() > 0) awaitKeysLocked(l);  // a key read here is claimed: not before those
  if (keys_[ordinal] == Hash128{} && !queue_.empty() && ordinal >= queue_.front().ordinal) {
    const uint64_t i = ordinal - queue_.front().ordinal;
    if (i < queue_.size() && !queue_[i].keyed && !queue_[i].keying) {
      std::vector<std::byte> buf;
      const bool whole = keyInPlaceLocked(l, i, buf);
      if (readHere) *readHere = whole;  // read just now, on this thread
    }
  }
  // Else a worker or a handoff reads it now (it left the queue, or is being keyed in it), or a
  // finisher (handed unread).
  while (keys_[ordinal] == Hash128{}) {
    if (handedKeys_.load() > 0)
      awaitKeysLocked(l);
    else
      keyCv_.wait(l);
  }
  return {keys_[ordinal], ref.length};
}

// The small deferred jobs at the front, in order, up to a batch (none keyed or being keyed ahead:
// those go one by one). A blob under the compression bound is stored raw: nothing else differs.
bool BlobStore::smallLocked(const Job& j) const {
  return !j.keyed && !j.keying && !j.skip && j.bytes != 0 && j.bytes < kSmallBlob && !compressible(j.bytes);
}

// Whether a blob of this size is ever tried with zstd (writeFrom); under it, it is stored raw.
bool BlobStore::compressible(uint64_t bytes) const {
  return opt_.zstdLevel > 0 && bytes >= std::max(kMinCompressBytes, opt_.minCompressBytes);
}

bool BlobStore::takeSmallLocked(std::vector<Job>& batch) const {
  batch.clear();
  uint64_t bytes = 0;
  for (const Job& j : queue_) {
    if (batch.size() == kBatchJobs || !smallLocked(j) || bytes + j.bytes > kBatchBytes) break;
    bytes += j.bytes;
    batch.push_back(j);
  }
  return batch.size() > 1;
}

void BlobStore::popSmallLocked(const std::vector<Job>& batch) {
  for (const Job& j : batch) {
    queue_.pop_front();
    queuedBytes_ -= j.bytes;
    unkeyedBytes_ -= j.bytes;
  }
}

// As consume, for each job of the batch: key read (or Lost), claimed, written from the bytes read.
void BlobStore::consumeSmall(std::vector<Job>& batch, Scratch& s) {
  readSmall(batch, s);
  std::vector<bool> write(batch.size());
  forEachHeld(batch.size(), [&](size_t i) { write[i] = claimLocked(batch[i], s.keys[i]); });
  try {
    if (file_.failed()) file_.throwFailed();
    std::lock_guard f(file_.mu);
    writeSmallLocked(batch, write, s);
  } catch (...) {
    std::lock_guard g(mu_);
    if (!workerError_) workerError_ = std::current_exception();
  }
  forEachHeld(batch.size(), [&](size_t i) {
    if (write[i])
      consumedLocked(batch[i], true);
    else
      finishedLocked(batch[i]);  // a repeat, or Lost (claimLocked): nothing to write
  });
}

// A batch's jobs under mu_ a few at a time: the application's put spins briefly for mu_ before it
// sleeps, and a whole batch (up to 64 claims, each with its map updates) under one hold outlasts
// that spin (calls-20k: the app's thread slept on mu_ 8 to 25 times a run, perf's sched_switch).
template <class F>
void BlobStore::forEachHeld(size_t n, F&& f) {
  constexpr size_t kJobsPerHold = 8;
  for (size_t i = 0; i < n;) {
    std::lock_guard g(mu_);
    for (const size_t end = std::min(n, i + kJobsPerHold); i < end; ++i) f(i);
  }
}

// Every job's bytes into s.read, one after another, by one process_vm_readv (a range gone makes it
// stop short: then each job is read alone), and their keys: nullopt where the bytes are gone or
// no longer give the call's samples (Lost), and for all after a failed write (not read at all).
void BlobStore::readSmall(const std::vector<Job>& batch, Scratch& s) {
  s.keys.assign(batch.size(), std::nullopt);
  if (file_.failed()) return;
  uint64_t total = 0;
  s.ranges.clear();
  for (const Job& j : batch) {
    s.ranges.push_back({const_cast<std::byte*>(j.data), j.bytes});
    total += j.bytes;
  }
  if (s.read.size() < total) s.read.resize(total);
  const bool all = readCallerRanges(s.pid, s.ranges, s.read.data(), total);
  std::byte* at = s.read.data();
  for (size_t i = 0; i < batch.size(); at += batch[i].bytes, ++i) {
    const Job& j = batch[i];
    if (!all && !readCaller(j.data, j.bytes, at)) continue;
    std::byte samples[kSampled];
    gatherSamples(samples, j.bytes, 0, j.bytes, at);
    if (sampleHash(samples, j.bytes) != j.sample) continue;
    const XXH128_hash_t h = XXH3_128bits(at, j.bytes);
    s.keys[i] = Hash128{h.low64, h.high64};
  }
}

// The blocks of the jobs to write, laid out from `end` as writeRaw lays out one, in one write: each
// block's header (zero for now), record and padding from s.buffered, its bytes from where they were
// read (s.read). Then each header, in order: a trace cut between the two ends before the first
// block with no header (docs/format.md), as with one block at a time.
void BlobStore::writeSmallLocked(const std::vector<Job>& batch, const std::vector<bool>& write, Scratch& s) {
  static const std::byte kZeros[F::kBlockAlign] = {};
  struct Placed {
    const Job* job;
    const std::byte* bytes;  // in s.read
    uint64_t at, dataAt;
    uint64_t lead;  // its bytes of s.buffered: the previous block's padding, its header, record, padding
    F::BlobRecord record;
  };
  std::vector<Placed> placed;
  const uint64_t start = file_.end;
  uint64_t at = start, leadAt = start;  // the next block's offset, and where its lead begins
  const std::byte* from = s.read.data();
  s.buffered.clear();
  for (size_t i = 0; i < batch.size(); from += batch[i].bytes, ++i) {
    if (!write[i]) continue;
    const Job& j = batch[i];
    const RawLayout layout = rawLayout(at, j.bytes);
    const F::BlobRecord r =
        recordFor(j, F::BlobEncoding::RawSmall, j.bytes, layout.dataAt - at - sizeof(F::BlockHeader));
    const size_t lead = s.buffered.size();
    s.buffered.resize(lead + (layout.dataAt - leadAt));  // zeros but for the record
    std::memcpy(s.buffered.data() + lead + (at - leadAt) + sizeof(F::BlockHeader), &r, sizeof r);
    placed.push_back({&j, from, at, layout.dataAt, layout.dataAt - leadAt, r});
    leadAt = layout.dataAt + j.bytes;
    at = layout.next;
  }
  if (placed.empty()) return;
  std::vector<iovec> iov;
  std::byte* lead = s.buffered.data();
  for (const Placed& p : placed) {
    iov.push_back({lead, p.lead});
    iov.push_back({const_cast<std::byte*>(p.bytes), p.job->bytes});
    lead += p.lead;
  }
  if (at > leadAt) iov.push_back({const_cast<std::byte*>(kZeros), at - leadAt});
  file_.pwritevAll(iov, start);
  for (const Placed& p : placed) {
    const auto h = makeBlockHeader(F::BlockType::Blob, p.record.dataOffset + p.job->bytes, sizeof p.record,
                                   check32(&p.record, sizeof p.record));
    file_.pwriteAll(&h, sizeof h, p.at);
  }
  for (const Placed& p : placed) indexLocked(*p.job, p.at, p.job->bytes, p.dataAt, p.record);
  file_.end = at;
}

void BlobStore::consume(Job j, Scratch& s) {
  if (!j.keyed) {
    const std::optional<Hash128> key = readKey(j, file_, s.read, true);
    std::lock_guard g(mu_);
    if (!claimLocked(j, key)) return finishedLocked(j);
    if (j.bytes <= kRawPiece) {  // all read and hashed just now: written from there, not read again
      j.data = s.read.data();
      j.ours = true;
    }
  }
  bool stored = true;
  try {
    // After a failed write the caller's bytes are not even read: the capture may have let the
    // application free them already (capture/session.cpp, Session::disable).
    if (file_.failed()) file_.throwFailed();
    stored = fromAnySource(j, [&](const Job& from) { return writeFrom(from, s); });
  } catch (...) {
    std::lock_guard g(mu_);
    if (!workerError_) workerError_ = std::current_exception();
  }
  std::lock_guard g(mu_);
  consumedLocked(j, stored);
}

// A claimed job's bytes are done with: stored, or forgotten (the same bytes passed again are
// stored normally; recorded Lost at settle()). Either way no other source of them is kept.
void BlobStore::consumedLocked(const Job& j, bool stored) {
  const BlobRef key{j.hash, j.bytes};
  if (!stored) {
    seen_.erase(key);
    failed_.try_emplace(key, j.hint);
  } else {
    if (auto it = seen_.find(key); it != seen_.end()) it->second = false;  // consumed: no more sources
    if (!superseded_.empty()) superseded_.erase(key);
  }
  if (!others_.empty()) others_.erase(key);
  finishedLocked(j);
}

void BlobStore::finishedLocked(const Job& j) {
  pendingBytes_ -= j.bytes;
  const bool moved = doneLocked(j.ordinal);
  // Waiters are woken when the queue is empty, the ticket of a drainTo is done or half the budget
  // is free, not per job (a small blob each would make a context switch each).
  if (moved) wakeOrderedLocked();
  if ((callersDraining_ && !busyLocked()) || (blocked_ && pendingBytes_ <= opt_.queueBytes / 2)) doneCv_.notify_all();
}

bool BlobStore::doneLocked(uint64_t ordinal) {
  done_[ordinal - doneBefore_] = true;
  --undone_;
  const uint64_t was = doneBefore_;
  for (; !done_.empty() && done_.front(); ++doneBefore_) done_.pop_front();
  return doneBefore_ != was;
}

void BlobStore::rethrowWorkerError() {
  std::lock_guard g(mu_);
  if (workerError_) std::rethrow_exception(workerError_);
}

void BlobStore::drain(const std::function<void(uint64_t)>& onWait) {
  {
    std::unique_lock l(mu_);
    waitDrained(
        l, true, [&] { return !busyLocked(); }, onWait);
  }
  rethrowWorkerError();
  settle();
}

uint64_t BlobStore::ticket() const {
  std::lock_guard g(mu_);
  return nextOrdinal_;
}

// The log's own thread waits to order a segment after its blobs, and leaves the choice between
// Lost and Replaced (settle) to a caller's drain (a build's, a network's deletion, close), which
// comes after the capture's check before a build (supersede).
void BlobStore::drainTo(uint64_t ticket) {
  const auto done = [&] {
    if (doneBefore_ >= ticket) return true;
    orderedWant_ = std::min(orderedWant_, ticket);  // before each wait: wakeOrderedLocked wakes it then
    return false;
  };
  {
    std::unique_lock l(mu_);
    if (doneBefore_ < ticket) awaitKeysLocked(l, false, ticket);  // a finisher has some of them
    waitDrained(l, false, done, {});
  }
  rethrowWorkerError();
}

// The log's thread was woken by every job done while it waited, and took mu_ each time beside the
// application's puts and the workers (a segment of calls-20k waits for ~600 small blobs: 2,900
// futex calls of that thread on mu_ per capture); now once, when its ticket is done.
void BlobStore::wakeOrderedLocked() {
  if (doneBefore_ < orderedWant_) return;
  orderedWant_ = kNoTicket;
  orderedCv_.notify_all();
}

void BlobStore::waitDrained(std::unique_lock<std::mutex>& l, bool byCaller, const std::function<bool()>& done,
                            const std::function<void(uint64_t)>& onWait) {
  struct Waiting {  // while it waits, every queued blob is worth a wake-up
    BlobStore& b;
    unsigned caller;
    Waiting(BlobStore& s, bool byCaller) : b(s), caller(byCaller) {
      ++b.draining_;
      b.callersDraining_ += caller;
      b.waitedOn_ = b.callersDraining_ > 0 || b.stopping_;
    }
    ~Waiting() {
      --b.draining_;
      b.callersDraining_ -= caller;
      b.waitedOn_ = b.callersDraining_ > 0 || b.stopping_;
    }
  } waiting(*this, byCaller);
  workCv_.notify_all();
  std::condition_variable& cv = byCaller ? doneCv_ : orderedCv_;
  if (!onWait) {
    cv.wait(l, done);
    return;
  }
  while (!done()) {
    cv.wait_for(l, std::chrono::milliseconds(100));
    const uint64_t left = pendingBytes_;
    l.unlock();
    onWait(left);
    l.lock();
  }
}

// ---- encoding ---------------------------------------------------------------------------------
// `writeOne` from the first caller's bytes, else from those of each later put with the same key;
// false when none held them.
bool BlobStore::fromAnySource(const Job& j, const std::function<bool(const Job&)>& writeOne) {
  Job from = j;
  do {
    if (writeOne(from)) return true;
  } while ((from.data = nextSource(j)) != nullptr);
  return false;
}

const std::byte* BlobStore::nextSource(const Job& j) {
  std::lock_guard g(mu_);
  auto it = others_.find({j.hash, j.bytes});
  if (it == others_.end() || it->second.empty()) return nullptr;
  const std::byte* p = it->second.front();
  it->second.erase(it->second.begin());
  return p;
}

bool BlobStore::writeFrom(const Job& j, Scratch& s) {
  const bool hurry = (opt_.rawWhenWaitedOn && waitedOn_.load(std::memory_order_relaxed)) || j.behind;
  if (!hurry && compressible(j.bytes) && (opt_.tryEveryBlob || odds_.worthTrying(j.hint, j.bytes < kSmallWeightBytes)))
    return writeCompressed(j, s);
  std::lock_guard g(file_.mu);
  return writeRawLocked(j, s);
}

// A Lost or Replaced blob at `end` (format.h): the record alone. Holds file_.mu.
void BlobStore::writeLostLocked(const Job& j, bool replaced) {
  const uint64_t at = file_.end;
  F::BlobRecord r =
      recordFor(j, replaced ? F::BlobEncoding::Replaced : F::BlobEncoding::Lost, 0, sizeof(F::BlobRecord));
  file_.pwriteAll(&r, sizeof r, at + sizeof(F::BlockHeader));
  file_.finishBlock(at, makeBlockHeader(F::BlockType::Blob, sizeof r, sizeof r, check32(&r, sizeof r)));
  indexLocked(j, at, 0, at + sizeof(F::BlockHeader) + sizeof r, r);
  std::lock_guard g(statsMu_);
  if (replaced) {
    stats_.replacedBlobs++;
    return;
  }
  stats_.lostBlobs++;
  stats_.lostBytes += j.bytes;
}

// Raw blob at `end`: record, zero padding, data (rawLayout). Holds file_.mu.
bool BlobStore::writeRawLocked(const Job& j, Scratch& s) { return writeRaw(file_.end, j, s, false); }

// Raw blob at `at`; a reserved range's (a finisher's, writeReserved) neither moves `end` nor is
// indexed, and needs no lock: the range is its own. Else holds file_.mu.
bool BlobStore::writeRaw(uint64_t at, const Job& j, Scratch& s, bool reserved) {
  static const std::byte kZeros[F::kBlobAlign] = {};
  const RawLayout layout = rawLayout(at, j.bytes);
  const bool small = layout.small;
  const uint64_t dataAt = layout.dataAt;
  F::BlobRecord r = recordFor(j, small ? F::BlobEncoding::RawSmall : F::BlobEncoding::Raw, j.bytes,
                              dataAt - at - sizeof(F::BlockHeader));
  const auto h = makeBlockHeader(F::BlockType::Blob, r.dataOffset + j.bytes, sizeof r, check32(&r, sizeof r));
  uint64_t recAt = at + sizeof(F::BlockHeader);
  const bool inPlace = frozen_ && reserved && !small;  // (a reserved job is never a worker's copy)
  if (!inPlace && j.bytes <= kRawPiece) {  // read whole, then the block in one write (a small blob's usual case)
    CallerBytes src(j);
    const std::byte* p = j.bytes ? src.read(0, j.bytes, s.in) : kZeros;
    if (!p || !src.intact()) return false;
    const std::span<const std::byte> pieces[] = {
        {reinterpret_cast<const std::byte*>(&r), sizeof r}, {kZeros, dataAt - recAt - sizeof r}, {p, j.bytes}};
    file_.writeBlock(at, h, pieces, !reserved);
    if (!reserved) indexLocked(j, at, j.bytes, dataAt, r);
    return true;
  }
  file_.pwriteAll(&r, sizeof r, recAt);
  file_.writeZeros(recAt + sizeof r, dataAt - recAt - sizeof r);
  // Not intact: file_.end is still `at`, or the range still reserved: the attempt is overwritten.
  if (!(inPlace ? writeInPlace(j, dataAt) : writeCopied(j, dataAt, s))) return false;
  file_.finishBlock(at, h, !reserved);
  if (!reserved) indexLocked(j, at, j.bytes, dataAt, r);
  return true;
}

// The caller's bytes through a buffer of ours (read fault-safely), piece by piece; false when they
// were not all read or not the bytes of j's key.
bool BlobStore::writeCopied(const Job& j, uint64_t dataAt, Scratch& s) {
  CallerBytes src(j);
  for (uint64_t off = 0; off < j.bytes; off += kRawPiece) {
    const uint64_t n = std::min(kRawPiece, j.bytes - off);
    const std::byte* p = src.read(off, n, s.in);
    if (!p) break;
    file_.pwriteAll(p, n, dataAt + off);
  }
  return src.intact();
}

// In a finisher (frozen_), the application's memory is this process's copy-on-write view, which
// nothing changes any more: its bytes go to the file from where they lie (the kernel's copy only;
// a range released before the fork fails it with EFAULT), then are hashed there while the core
// still holds them; false when they are gone or not the bytes of j's key.
bool BlobStore::writeInPlace(const Job& j, uint64_t dataAt) {
  constexpr uint64_t kPiece = 256 << 10;
  XXH3_state_t st;
  XXH3_INITSTATE(&st);
  XXH3_128bits_reset(&st);
  for (uint64_t off = 0; off < j.bytes; off += kPiece) {
    const uint64_t n = std::min(kPiece, j.bytes - off);
    if (!file_.pwriteReleasable(j.data + off, n, dataAt + off)) return false;
    if (!j.ours) XXH3_128bits_update(&st, j.data + off, n);
  }
  if (j.ours) return true;  // keyed from this same view just before (keyHanded)
  const XXH128_hash_t h = XXH3_128bits_digest(&st);
  return h.low64 == j.hash.lo && h.high64 == j.hash.hi;
}

void BlobStore::indexLocked(const Job& j, uint64_t at, uint64_t stored, uint64_t dataAt, const F::BlobRecord& r) {
  file_.blobEntries.emplace_back(j.hash.lo, j.hash.hi, j.bytes, at, stored, dataAt, r.encoding, r.transform,
                                 r.elementHint);
  std::lock_guard g(statsMu_);
  stats_.storedBytes += stored;
  if (r.encoding == uint16_t(F::BlobEncoding::Zstd)) stats_.compressedBlobs++;
}

// Chunked zstd (after byte grouping), buffered in memory up to kBlobBufferLimit, then streamed
// under the file lock; stored raw instead when compression does not save minSaving.
bool BlobStore::writeCompressed(const Job& j, Scratch& s) {
  const uint64_t chunk = opt_.chunkBytes;
  const uint32_t nChunks = static_cast<uint32_t>((j.bytes + chunk - 1) / chunk);
  const F::BlobTransform tf = transformFor(j.hint, j.bytes, opt_);
  const unsigned k = transformElementSize(tf);
  std::vector<F::ChunkEntry> table(nChunks);
  const uint64_t dataOffset = sizeof(F::BlobRecord) + nChunks * sizeof(F::ChunkEntry);
  s.out.resize(ZSTD_compressBound(chunk));
  if (k > 1) s.grouped.resize(chunk);
  s.buffered.clear();

  std::unique_lock<std::mutex> lock(file_.mu, std::defer_lock);
  uint64_t at = 0, written = 0;
  auto emit = [&](const std::byte* out, uint64_t outN) {  // buffered, or streamed under the lock
    if (!lock.owns_lock() && s.buffered.size() + outN > kBlobBufferLimit) {
      lock.lock();
      at = file_.end;
      file_.pwriteAll(s.buffered.data(), s.buffered.size(), at + sizeof(F::BlockHeader) + dataOffset);
      s.buffered.clear();
    }
    if (lock.owns_lock())
      file_.pwriteAll(out, outN, at + sizeof(F::BlockHeader) + dataOffset + written);
    else
      s.buffered.insert(s.buffered.end(), out, out + outN);
  };
  CallerBytes caller(j);
  for (uint32_t c = 0; c < nChunks; ++c) {
    uint64_t off = uint64_t(c) * chunk, n = std::min<uint64_t>(chunk, j.bytes - off);
    const std::byte* src = caller.read(off, n, s.in);
    if (!src) break;
    if (k > 1) {
      byteGroup(src, s.grouped.data(), n, k);
      src = s.grouped.data();
    }
    size_t z = ZSTD_compressCCtx(s.cctx, s.out.data(), s.out.size(), src, n, opt_.zstdLevel);
    if (ZSTD_isError(z)) throw Error(Error::Kind::Io, file_.path() + ": zstd: " + ZSTD_getErrorName(z));
    bool keep = z < n;  // a chunk is stored compressed only when that is smaller
    table[c] = {written, static_cast<uint32_t>(keep ? z : n), keep ? 1u : 0u};
    emit(keep ? s.out.data() : src, table[c].storedSize);
    written += table[c].storedSize;
  }
  // The blob stays compressed only if that saves at least minSaving (smallMinSaving under 1 MiB).
  const bool intact = caller.intact();
  const bool small = j.bytes < kSmallWeightBytes;
  bool keep = double(written + dataOffset) <= double(j.bytes) * (1.0 - (small ? opt_.smallMinSaving : opt_.minSaving));
  const bool streamed = lock.owns_lock();
  if (!streamed) {
    lock.lock();
    at = file_.end;
  }
  file_.end = at;  // a streamed attempt that is not kept is overwritten
  if (!intact) return false;
  odds_.tried(j.hint, small, keep);
  if (!keep) return writeRawLocked(j, s);
  F::BlobRecord r = recordFor(j, F::BlobEncoding::Zstd, written, dataOffset);
  r.transform = static_cast<uint16_t>(tf);
  r.chunkCount = nChunks;
  r.chunkRawSize = static_cast<uint32_t>(chunk);
  std::vector<std::byte> meta(dataOffset);
  std::memcpy(meta.data(), &r, sizeof r);
  std::memcpy(meta.data() + sizeof r, table.data(), nChunks * sizeof(F::ChunkEntry));
  const auto h =
      makeBlockHeader(F::BlockType::Blob, dataOffset + written, dataOffset, check32(meta.data(), meta.size()));
  if (streamed) {
    file_.pwriteAll(meta.data(), meta.size(), at + sizeof(F::BlockHeader));
    file_.finishBlock(at, h);
  } else {  // all in memory: the block in one write
    const std::span<const std::byte> pieces[] = {meta, s.buffered};
    file_.writeBlock(at, h, pieces);
  }
  indexLocked(j, at, written, at + sizeof(F::BlockHeader) + dataOffset, r);
  return true;
}

}  // namespace trtrace::detail
