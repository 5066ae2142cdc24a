// Blob store: the writer's content-addressed weights. putBlob hashes on the caller's thread and
// looks the key up in the dedup index (with deferKeys a worker does both, and the call records
// hold a provisional key until then: resolved); a new blob is queued zero-copy (bounded by
// queueBytes) for the worker threads, which encode it (chunked zstd after byte grouping, kept only when it pays)
// and append it as a blob block. Workers read the caller's bytes fault-safely and hash them again:
// bytes released or changed by then are read from another caller buffer that was passed with the
// same key while the blob was queued, else stored without bytes (format.h), never read past a crash:
// Replaced when the capture said the app changed them in place (supersede), else Lost. That choice
// waits for the next drain by a caller (a build's, or a network's deletion), which comes after the
// capture's check before a build; a put of the same bytes meanwhile stores them instead.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "block_file.h"
#include "compression_odds.h"
#include "key_board.h"
#include "waker.h"

namespace trtrace::detail {

class BlobStore {
 public:
  // Starts options.workerThreads workers (0: blobs are written on the caller's thread).
  BlobStore(BlockFile& file, const WriterOptions& options);
  ~BlobStore();  // stops and joins the workers (a failed close may have left them running)

  BlobRef put(const void* data, uint64_t bytes, BlobHint hint);
  std::optional<BlobRef> resolved(const BlobRef& ref) const;       // Writer::resolvedBlob
  BlobRef keyNow(const BlobRef& ref, bool* readHere = nullptr);    // Writer::blobKey
  void putLost(const BlobRef& ref, BlobHint hint, bool replaced);  // a Lost/Replaced record, written now
  void supersede(const BlobRef& ref);                              // Writer::supersedeBlob
  // Returns once every queued blob is consumed; rethrows a worker's error (writer.h, drainBlobs).
  void drain(const std::function<void(uint64_t)>& onWait = {});
  // The blobs queued so far: drainTo(ticket()) returns once each of them is consumed (or handed to
  // a finisher), whatever is queued after. The call log's own thread waits so for the blobs of the
  // segment it writes: nobody's time is lost, so no rawWhenWaitedOn.
  uint64_t ticket() const;
  void drainTo(uint64_t ticket);
  uint64_t pendingBytes() const;
  // Lets the workers finish the queue, joins them, rethrows a worker's error.
  void stop();
  Writer::Stats stats() const;  // its counters: blobPuts .. compressedBlobs (the others 0)

  // ---- finishing in another process (writer.h, "Finishing in another process") ----
  // The queued blobs leave the queue as a new batch, each given the file range of its raw block
  // (the writer goes on after them). Returns their bytes. Holds no lock on return. Deferred keys
  // not read yet are not read here: the batch is handed with them unread (blob_handoff.cpp,
  // "Handed batches"), and they come back from its finisher. `closing`: the finisher also closes
  // the trace, so this process need never learn them.
  uint64_t reserveQueued(bool closing = false);
  // The batch reserved since the last forked(): its keys read and its blocks written, on this
  // thread (in a forked child, alone in its process; or by the parent when the fork failed).
  void writeReserved();
  void forked(pid_t finisher = 0);  // that batch is process `finisher`'s now (mu_ and file_.mu held)
  // A blob queued or being written here (mu_ held); a handed one whose key is still to come is not.
  bool busyLocked() const { return undone_ > handedKeys_.load(std::memory_order_relaxed); }
  // Keys of handed blobs still to come (no lock: the call log's thread asks with its own held).
  bool keysPending() const { return handedKeys_.load(std::memory_order_acquire) > 0; }
  void awaitKeys();  // until every handed blob's key came in (or its finisher ended)
  // The call log's thread writes the segments of the calls before `ticket`: false when it must
  // wait for handed keys first (awaitKeys), outside its own lock, where a closing fork may take
  // it. A handoff never hands unread a blob that such a segment names (blob_handoff.cpp).
  bool beginEncoding(uint64_t ticket) {
    encodingTicket_.store(ticket);
    if (handedKeys_.load() == 0) return true;
    encodingTicket_.store(0);
    return false;
  }
  void endEncoding() { encodingTicket_.store(0); }
  // Every reserved range's record read back into the footer index (close): an unwritten one throws.
  void indexReserved();
  // In a forked child: its locks made anew, the workers (which did not survive) forgotten.
  void afterForkInChild();
  std::mutex& mutex() { return mu_; }

  // One blob waiting for a worker: the caller's bytes (not copied) and its key.
  struct Job {
    const std::byte* data;
    uint64_t bytes;
    BlobHint hint;
    Hash128 hash;
    uint64_t ordinal = 0;  // in order of queueing (ticket, drainTo)
    bool keyed = true;     // hash is the bytes' key (false: deferKeys, not read yet)
    bool keying = false;   // a worker reads its key ahead, the job staying queued (keyAheadLocked)
    bool skip = false;     // keyed ahead and nothing to write (claimLocked): finished when it is taken
    uint64_t sample = 0;   // deferred: the hash of the bytes' samples at the call (blob_store.cpp, sampleOf)
    // data cannot have changed since it was hashed into the key: a worker's own copy, or a
    // finisher's frozen view, keyed there (keyHanded). Written without hashing it again.
    bool ours = false;
    bool behind = false;  // taken with a backlog behind it: stored raw (WriterOptions::rawBacklogBytes)
  };
  struct Scratch;

 private:
  BlobRef putDeferred(const void* data, uint64_t bytes, BlobHint hint);
  // Queues j, waiting while the queue is over budget; true when a worker should be woken. Holds mu_.
  // Numbers j (its ordinal) once there is room. Holds mu_.
  bool enqueueLocked(std::unique_lock<std::mutex>& l, Job& j);
  // Reads the key of a queued job ahead of its write (mu_ released meanwhile); true when it did.
  bool keyAheadLocked(std::unique_lock<std::mutex>& l, Scratch& s);
  // Reads the key of the first queued job past the front (or the front too) whose key nobody read
  // or reads; false when there is none. Holds mu_ (released meanwhile).
  bool keyNextLocked(std::unique_lock<std::mutex>& l, bool front, std::vector<std::byte>& buf);
  // Reads the key of queue_[index] while it stays queued (mu_ released meanwhile); whether its bytes
  // were read whole and still gave the put's samples (else its key is a Lost one). Holds mu_.
  bool keyInPlaceLocked(std::unique_lock<std::mutex>& l, size_t index, std::vector<std::byte>& buf);
  void workerLoop(Scratch& s);
  void consume(Job j, Scratch& s);
  // Small deferred jobs from the front of the queue, taken and written together (takeSmallLocked,
  // consumeSmall): one read of the application's memory, one round of mu_, one write of the blocks.
  bool smallLocked(const Job& j) const;
  bool compressible(uint64_t bytes) const;
  bool smallFrontLocked() const { return !queue_.empty() && smallLocked(queue_.front()); }
  bool takeSmallLocked(std::vector<Job>& batch) const;
  void popSmallLocked(const std::vector<Job>& batch);
  void consumeSmall(std::vector<Job>& batch, Scratch& s);
  template <class F>
  void forEachHeld(size_t n, F&& f);  // f(0) .. f(n - 1), mu_ held for a few at a time
  void readSmall(const std::vector<Job>& batch, Scratch& s);
  void writeSmallLocked(const std::vector<Job>& batch, const std::vector<bool>& write, Scratch& s);
  // A deferred job's key (read off the caller's thread), recorded for the call log: false when
  // nothing is left to write (a dedup hit, or unreadable bytes: Lost under a key of their own at the
  // next settle(), docs/format.md). Holds mu_.
  bool claimLocked(Job& j, const std::optional<Hash128>& key);
  // Job j is consumed (written, deduplicated, failed or handed off): its bytes and ordinal
  // released, waiters woken. Holds mu_.
  void finishedLocked(const Job& j);
  void consumedLocked(const Job& j, bool stored);  // a claimed job's end: its key's sources dropped. Holds mu_.
  Hash128 lostKey(uint64_t ordinal) const;
  // `writeOne` from j's first source, else from each other one (nextSource); false: no source still
  // held the bytes (nothing written).
  bool fromAnySource(const Job& j, const std::function<bool(const Job&)>& writeOne);
  void settle();  // the byteless records of failed_, written now (Lost, or Replaced when superseded)
  // The writes from one source: false when its bytes changed or went away (nothing was kept).
  bool writeFrom(const Job& j, Scratch& s);
  bool writeCompressed(const Job& j, Scratch& s);
  bool writeRawLocked(const Job& j, Scratch& s);
  bool writeRaw(uint64_t at, const Job& j, Scratch& s, bool reserved);
  bool writeCopied(const Job& j, uint64_t dataAt, Scratch& s);
  bool writeInPlace(const Job& j, uint64_t dataAt);
  const std::byte* nextSource(const Job& j);  // another caller buffer with j's key, or nullptr
  void writeLostLocked(const Job& j, bool replaced);
  void indexLocked(const Job& j, uint64_t at, uint64_t stored, uint64_t dataAt, const format::BlobRecord& r);
  void rethrowWorkerError();
  void wakeOrderedLocked();  // wakes a drainTo() whose ticket is done. Holds mu_.
  // Waits (mu_ held in l) until `done` says so; byCaller: an application thread waits.
  void waitDrained(std::unique_lock<std::mutex>& l, bool byCaller, const std::function<bool()>& done,
                   const std::function<void(uint64_t)>& onWait);
  // Job `ordinal` is consumed or handed off; true when the oldest one outstanding moved on. Holds mu_.
  bool doneLocked(uint64_t ordinal);
  void signalStop();
  // Workers sleep until a batch is worth a wake-up (a context switch per small blob costs more
  // than compressing it), or until somebody waits for them. Holds mu_.
  bool batchReadyLocked() const;

  // One blob handed to another process: its job, the range [at, next) of its raw block, and the
  // other caller buffers passed with its key (others_).
  struct Reserved {
    Job job;
    uint64_t at, next;
    std::vector<const std::byte*> others;
    bool lost = false;  // handed unread, and its finisher found the bytes gone (a Lost record)
  };
  void writeLostInRange(const Reserved& r, bool replaced);
  void writeOneReserved(const Reserved& r, Scratch& s);
  void indexReservedOne(const Reserved& r);

  // ---- handed batches (blob_handoff.cpp) ----
  // Where a deferred job is sure to be no repeat it is handed unread; its key comes back on the
  // batch's board. Sure: no other job here or blob known has the same size and samples (bySample_;
  // the same bytes give the same samples). The others are read at the handoff.
  struct SampleKey {
    uint64_t bytes, sample;
    friend bool operator==(const SampleKey&, const SampleKey&) = default;
  };
  struct SampleKeyHasher {
    size_t operator()(const SampleKey& k) const { return k.sample ^ (k.bytes * 0x9E3779B97F4A7C15ull); }
  };
  struct Handed {
    KeyBoard* board;
    std::vector<size_t> reserved;    // board entry i is the key of reserved_[reserved[i]]
    std::vector<uint64_t> ordinals;  // and of the job with ordinals[i] (increasing)
    uint32_t taken = 0;              // entries taken in (takeKeysLocked)
    pid_t pid = 0;                   // its finisher (0: not forked yet, or this process)
    int pidfd = -1;
  };
  // Which of `taken` are handed unread (the rest are keyed at the handoff). Holds mu_.
  std::vector<bool> unreadLocked(const std::vector<Job>& taken);
  // The keys of `taken`'s suspects (neither keyed nor unread), read on this thread and on the idle
  // workers' (helpReadSuspectsLocked), each taking the next one.
  std::vector<std::optional<Hash128>> readSuspects(const std::vector<Job>& taken, const std::vector<bool>& unread);
  void helpReadSuspectsLocked(std::unique_lock<std::mutex>& l, std::vector<std::byte>& buf);  // a worker's part
  bool samplePendingLocked() const;  // a queued job may repeat one handed unread whose key is to come
  void handUnreadLocked(const std::vector<size_t>& unread);  // their board (file_.mu held)
  void keyUnforkedLocked(std::unique_lock<std::mutex>& l);   // a closing fork's second try
  KeyBoard::Entry readHandedKey(const Job& j, std::vector<std::byte>& buf) const;
  void keyHanded(Handed& h);                   // the finisher reads and publishes the batch's keys
  bool takeKeysLocked(Handed& h, bool final);  // true when all are in; final: the rest are Lost
  void applyKeyLocked(size_t reserved, const KeyBoard::Entry& e);
  void popHandedLocked();
  // Until no handed job below `below` waits for its key (a worker: or the store stops).
  void awaitKeysLocked(std::unique_lock<std::mutex>& l, bool worker = false, uint64_t below = UINT64_MAX);
  bool keysPendingLocked(uint64_t below) const;
  void noteSampleLocked(const Job& j);  // j's key is known: a later job with its samples is a suspect

  BlockFile& file_;
  const WriterOptions& opt_;
  mutable std::mutex mu_;
  Waker workCv_;                       // workers wait here for a batch (its notify never blocks: waker.h)
  std::condition_variable doneCv_;     // producers over the budget, and drain(), wait here: all done
  std::condition_variable orderedCv_;  // drainTo() waits here: the oldest job done
  static constexpr uint64_t kNoTicket = UINT64_MAX;
  uint64_t orderedWant_ = kNoTicket;  // the least ticket a drainTo() waits for: woken once, when it is done
  std::condition_variable keyCv_;     // keyNow() waits here: a deferred key read
  std::unordered_map<BlobRef, bool, BlobRefHasher> seen_;  // every key put -> still queued for a worker
  // Other caller buffers passed with a queued key (dedup hits): if the first buffer is released
  // before a worker reads it, the blob is read from one of these instead of being stored Lost.
  // Only keys that had such a hit are here, at most kMaxSources buffers each.
  std::unordered_map<BlobRef, std::vector<const std::byte*>, BlobRefHasher> others_;
  static constexpr size_t kMaxSources = 4;
  std::deque<Job> queue_;
  // deferKeys: the content key of each put, by ordinal ({} until read); its provisional key names
  // it by ordinal. nonce_ makes the keys of unreadable blobs this writer's own.
  std::vector<Hash128> keys_;
  Hash128 nonce_;
  uint64_t unkeyedBytes_ = 0;  // of queued jobs not keyed, nor being keyed
  uint64_t keyNext_ = 0;       // queued jobs past the front below this ordinal are keyed or being keyed
  unsigned keying_ = 0;        // key reads ahead under way
  bool reserving_ = false;     // a handoff waits for them to end
  // A handoff's suspects, whose keys its thread and the idle workers read together (blob_handoff.cpp).
  struct SuspectReads;
  SuspectReads* suspects_ = nullptr;  // while a handoff reads them
  unsigned helping_ = 0;              // workers reading some of them
  // Ordinals: every job below doneBefore_ is consumed; done_[i] says whether doneBefore_ + i is.
  uint64_t nextOrdinal_ = 0, doneBefore_ = 0;
  std::deque<bool> done_;
  uint64_t pendingBytes_ = 0;            // enqueued and not yet consumed
  uint64_t queuedBytes_ = 0;             // in queue_ (not yet taken by a worker)
  unsigned draining_ = 0, blocked_ = 0;  // waiting in drain()/drainTo(); in put(), over the budget
  unsigned callersDraining_ = 0;         // of draining_, those with byCaller
  std::atomic<bool> waitedOn_{false};    // draining_ or stopping_ (WriterOptions::rawWhenWaitedOn)
  bool stopping_ = false;
  std::exception_ptr workerError_;
  // One per worker, owned here rather than on the thread's stack, so it stays reachable from the
  // writer (a writer abandoned in a forked child, whose workers did not survive, leaks nothing).
  std::vector<std::unique_ptr<Scratch>> scratch_;
  std::vector<std::thread> workers_;
  mutable std::mutex statsMu_;
  Writer::Stats stats_;  // only the blob counters are used, but for the two below
  // Counted by every put, on the application's thread: atomics, not statsMu_ taken per put.
  std::atomic<uint64_t> puts_{0}, putBytes_{0};  // Writer::Stats::blobPuts, blobPutBytes
  CompressionOdds odds_;                         // whether zstd is worth trying on the next blob of a kind
  // Keys no source still held when a worker read them, waiting for settle() (mu_); their seen_
  // entry is gone, so the same bytes passed again are stored normally.
  std::unordered_map<BlobRef, BlobHint, BlobRefHasher> failed_;
  std::unordered_set<BlobRef, BlobRefHasher> superseded_;  // pending or failed keys the app changed (mu_)
  std::vector<Reserved> reserved_;  // every range handed off (file_.mu); the last batch from batchStart_
  size_t batchStart_ = 0;
  std::deque<Handed> handed_;                // batches whose keys are still to come, in order (mu_)
  std::atomic<uint64_t> handedKeys_{0};      // their jobs (written under mu_)
  std::atomic<uint64_t> encodingTicket_{0};  // of the segments the call log's thread writes (0: none)
  bool collecting_ = false;                  // a thread waits on the front board (awaitKeysLocked)
  uint64_t undone_ = 0;                      // jobs queued and not yet done (doneLocked)
  // The key of every deferred blob known by size and samples ({}: handed, key to come).
  std::unordered_map<SampleKey, Hash128, SampleKeyHasher> bySample_;
  bool frozen_ = false;  // in a forked finisher: the application's memory is a view nothing changes
};

}  // namespace trtrace::detail
