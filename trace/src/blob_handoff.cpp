// Blob store: batches handed to another process, a finisher (blob_store.h; writer.h, "Finishing in
// another process"; docs/design.md, "Finishing off the application's clock").
//
// Handed batches. A handoff happens on the application's thread, at a drain point (a network's
// deletion, the process's exit), and the application waits for it. So it reads no weight: each
// queued blob gets the file range of its raw block, and the fork gives the finisher a view of the
// bytes. A deferred key that nobody read yet is read by the finisher, from that view, and comes
// back on the batch's KeyBoard; this process takes it in when it needs it (the call log's next
// segment names it; a later put of the same bytes is a repeat of it). Until then its workers
// claim no other blob, so every key is stored once.
//
// A range is reserved for every blob handed unread, so none of them may be a repeat: the same
// bytes give the same samples (blob_store.cpp, sampleOf), and a blob whose size and samples match
// another queued one, or a blob whose key is known (bySample_), is a suspect: its key is read at
// the handoff, by the application's thread and the idle workers together (readSuspects), and a
// repeat gets no range.
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <new>
#include <unordered_set>

#include "blob_decode.h"
#include "blob_reads.h"
#include "blob_store.h"
#include "internal.h"

namespace trtrace::detail {
namespace F = format;

uint64_t BlobStore::reserveQueued(bool closing) {
  std::vector<Job> taken;  // out of the queue, so that no worker reads them meanwhile
  std::vector<bool> unread;
  {
    std::unique_lock l(mu_);
    // A new finisher's suspects are checked against the keys an earlier one still reads: those
    // first. Not for the last finisher, which takes them in itself (writeReserved), unless a
    // queued blob may repeat one of them.
    if (!closing || samplePendingLocked()) {
      if (closing) keyUnforkedLocked(l);
      awaitKeysLocked(l);
    }
    reserving_ = true;  // no worker starts a key read ahead; those under way end first
    workCv_.wait(l, [&] { return keying_ == 0; });
    reserving_ = false;
    taken.assign(queue_.begin(), queue_.end());
    queue_.clear();
    queuedBytes_ = 0;
    unkeyedBytes_ = 0;
    unread = unreadLocked(taken);
  }
  workCv_.notify_all();  // the workers wait for the next batch again
  // The suspects' keys, read now: a repeat gets no range.
  const std::vector<std::optional<Hash128>> keys = readSuspects(taken, unread);
  std::vector<Reserved> batch;
  std::vector<size_t> handed;  // positions in batch
  uint64_t total = 0;
  std::lock_guard g(mu_);
  for (size_t i = 0; i < taken.size(); ++i) {
    Job& j = taken[i];
    if (!unread[i] && (j.skip || (!j.keyed && !claimLocked(j, keys[i])))) {
      finishedLocked(j);
      continue;
    }
    Reserved r{j, 0, 0, {}};
    if (unread[i]) {  // no repeat: unique, unless its finisher finds it gone (applyKeyLocked)
      handed.push_back(batch.size());
      std::lock_guard s(statsMu_);
      stats_.uniqueBlobs++;
      stats_.uniqueBytes += j.bytes;
    } else {
      const BlobRef key{j.hash, j.bytes};
      if (auto o = others_.find(key); o != others_.end()) {
        r.others = std::move(o->second);
        others_.erase(o);
      }
      if (auto it = seen_.find(key); it != seen_.end()) it->second = false;  // no longer queued here
      doneLocked(j.ordinal);  // for the call log, as good as written: the finisher writes it
    }
    pendingBytes_ -= j.bytes;
    total += j.bytes;
    batch.push_back(std::move(r));
  }
  if (blocked_ || draining_) doneCv_.notify_all();
  wakeOrderedLocked();
  std::lock_guard f(file_.mu);
  const size_t first = reserved_.size();
  for (Reserved& r : batch) {
    r.at = file_.end;
    r.next = file_.end = rawLayout(r.at, r.job.bytes).next;  // a hole until the child writes it
    reserved_.push_back(std::move(r));
  }
  for (size_t& h : handed) h += first;
  if (!handed.empty()) handUnreadLocked(handed);
  return total;
}

// A job is handed unread when its key is not read yet, it is sure to be no repeat (above), and
// the call log's thread is not writing a segment that names it: that thread then waits for its key
// and could not be forked in the middle (call_log.cpp, backgroundLoop). The keys still to come are
// counted before that thread's ticket is read, and it reads them after setting it: one of the two
// sees the other.
std::vector<bool> BlobStore::unreadLocked(const std::vector<Job>& taken) {
  std::vector<bool> unread(taken.size(), false);
  if (!opt_.deferKeys) return unread;
  std::unordered_map<SampleKey, unsigned, SampleKeyHasher> here;
  for (const Job& j : taken)
    if (!j.keyed) here[{j.bytes, j.sample}]++;
  uint64_t n = 0;
  for (size_t i = 0; i < taken.size(); ++i) {
    const SampleKey k{taken[i].bytes, taken[i].sample};
    unread[i] = !taken[i].keyed && here[k] == 1 && !bySample_.count(k);
    n += unread[i];
  }
  handedKeys_.fetch_add(n);
  const uint64_t writing = encodingTicket_.load();
  for (size_t i = 0; i < taken.size(); ++i)
    if (unread[i] && taken[i].ordinal < writing) {
      unread[i] = false;
      handedKeys_.fetch_sub(1);
    }
  return unread;
}

// The workers have nothing else to do meanwhile: the handoff took the queue, and the application's
// thread waits for it (a repeat-heavy model's suspects are most of its weights).
struct BlobStore::SuspectReads {
  const std::vector<Job>& jobs;
  std::vector<size_t> which;                 // positions in jobs
  std::vector<std::optional<Hash128>> keys;  // by position in jobs
  std::atomic<size_t> next{0};               // in which: the next one nobody took

  bool left() const { return next.load() < which.size(); }
  void readSome(const BlockFile& file, std::vector<std::byte>& buf) {
    for (size_t k; (k = next.fetch_add(1)) < which.size();) keys[which[k]] = readKey(jobs[which[k]], file, buf);
  }
};

std::vector<std::optional<Hash128>> BlobStore::readSuspects(const std::vector<Job>& taken,
                                                            const std::vector<bool>& unread) {
  SuspectReads r{taken, {}, std::vector<std::optional<Hash128>>(taken.size())};
  for (size_t i = 0; i < taken.size(); ++i)
    if (!taken[i].keyed && !unread[i]) r.which.push_back(i);
  const bool shared = r.which.size() > 1 && !workers_.empty();
  if (shared) {
    {
      std::lock_guard g(mu_);
      suspects_ = &r;
    }
    workCv_.notify_all();
  }
  std::vector<std::byte> buf;
  r.readSome(file_, buf);
  if (shared) {  // every key read: the helpers still reading one end first (their keys are in r)
    std::unique_lock l(mu_);
    suspects_ = nullptr;
    workCv_.notify_all();
    workCv_.wait(l, [&] { return helping_ == 0; });
  }
  return std::move(r.keys);
}

// A worker's part: it reads suspects while any is left, then waits until the handoff is done with
// them (or another handoff has some).
void BlobStore::helpReadSuspectsLocked(std::unique_lock<std::mutex>& l, std::vector<std::byte>& buf) {
  if (!suspects_->left()) {
    workCv_.wait(l, [&] { return !suspects_ || suspects_->left(); });
    return;
  }
  SuspectReads& r = *suspects_;
  ++helping_;
  l.unlock();
  r.readSome(file_, buf);
  l.lock();
  if (--helping_ == 0) workCv_.notify_all();
}

bool BlobStore::samplePendingLocked() const {
  if (!handedKeys_.load()) return false;
  for (const Job& j : queue_)
    if (auto it = bySample_.find({j.bytes, j.sample}); !j.keyed && it != bySample_.end() && it->second == Hash128{})
      return true;
  return false;
}

// The batch's board, made before the fork, so that the finisher and this process share it. Where
// none can be had its keys are read here, now: the finisher then has nothing to send.
void BlobStore::handUnreadLocked(const std::vector<size_t>& unread) {
  KeyBoard* board = KeyBoard::create(static_cast<uint32_t>(unread.size()));
  if (!board) {
    std::vector<std::byte> buf;
    for (size_t i : unread) applyKeyLocked(i, readHandedKey(reserved_[i].job, buf));
    wakeOrderedLocked();
    return;
  }
  std::vector<uint64_t> ordinals;
  for (size_t i : unread) {
    bySample_.try_emplace({reserved_[i].job.bytes, reserved_[i].job.sample}, Hash128{});
    ordinals.push_back(reserved_[i].job.ordinal);
  }
  handed_.push_back({board, unread, std::move(ordinals)});
  keyCv_.notify_all();
}

// The keys of batches not forked yet, read on this thread: the finisher's own batch (writeReserved,
// or the application's process where the fork failed), or a closing fork's second try
// (Writer::forkFinisher reserves again after finding the writer busy), whose first batch nobody
// else would read: a wait for it is this thread's to end.
void BlobStore::keyUnforkedLocked(std::unique_lock<std::mutex>& l) {
  for (;;) {
    keyCv_.wait(l, [&] { return !collecting_; });
    Handed* h = nullptr;
    for (Handed& x : handed_)
      if (x.pid == 0 && x.board->published() == 0) h = &x;
    if (!h) return;
    collecting_ = true;  // no board is taken down meanwhile (awaitKeysLocked)
    l.unlock();
    keyHanded(*h);
    l.lock();
    collecting_ = false;
    keyCv_.notify_all();
  }
}

// A handed job's key, read now, as its board holds it.
KeyBoard::Entry BlobStore::readHandedKey(const Job& j, std::vector<std::byte>& buf) const {
  const std::optional<Hash128> key = readKey(j, file_, buf);
  return key ? KeyBoard::Entry{key->lo, key->hi, KeyBoard::State::Stored} : KeyBoard::Entry{};
}

// ---- keys coming back -----------------------------------------------------------------------
void BlobStore::awaitKeys() {
  std::unique_lock l(mu_);
  awaitKeysLocked(l);
}

// One thread at a time waits on the oldest board (outside mu_) and takes in what it published;
// the others wait for it on keyCv_. A worker stops waiting when the store stops.
void BlobStore::awaitKeysLocked(std::unique_lock<std::mutex>& l, bool worker, uint64_t below) {
  constexpr int kWaitMs = 20;
  while (keysPendingLocked(below) && !(worker && stopping_)) {
    if (collecting_ || handed_.empty()) {  // (empty: a handoff has counted its keys, not made its board yet)
      keyCv_.wait_for(l, std::chrono::milliseconds(kWaitMs));
      continue;
    }
    Handed& h = handed_.front();
    if (takeKeysLocked(h, false)) {
      popHandedLocked();
      continue;
    }
    collecting_ = true;
    KeyBoard* board = h.board;
    const uint32_t seen = h.taken;
    const int pidfd = h.pidfd;
    const pid_t pid = h.pid;
    l.unlock();
    const bool ended = board->wait(seen, pidfd, pid, kWaitMs);
    l.lock();
    collecting_ = false;
    if (takeKeysLocked(handed_.front(), ended)) popHandedLocked();
    keyCv_.notify_all();
  }
}

// Bounded (the call log's thread, writing a segment): only the handed jobs it names, which are
// on boards already (blob_handoff.cpp, unreadLocked). Else also those a handoff has counted and
// not yet put on a board.
bool BlobStore::keysPendingLocked(uint64_t below) const {
  if (below == UINT64_MAX) return handedKeys_.load() > 0;
  for (const Handed& h : handed_)
    if (h.taken < h.ordinals.size() && h.ordinals[h.taken] < below) return true;
  return false;
}

// What the board published since the last time, taken in; `final` (its finisher ended, or this
// is the finisher that closes, after the others ended): the rest are Lost.
bool BlobStore::takeKeysLocked(Handed& h, bool final) {
  const uint32_t n = final ? h.board->count() : h.board->published();
  if (h.taken == n) return n == h.board->count();
  const uint32_t published = h.board->published();
  std::lock_guard f(file_.mu);  // reserved_
  for (; h.taken < n; ++h.taken)
    applyKeyLocked(h.reserved[h.taken], h.taken < published ? h.board->at(h.taken) : KeyBoard::Entry{});
  wakeOrderedLocked();
  if (blocked_ || draining_) doneCv_.notify_all();
  return h.taken == h.board->count();
}

// A handed job's key: named for the call log, and known to later puts (as seen_ and bySample_).
// Holds mu_ and file_.mu.
void BlobStore::applyKeyLocked(size_t reserved, const KeyBoard::Entry& e) {
  Reserved& r = reserved_[reserved];
  Job& j = r.job;
  r.lost = e.state != KeyBoard::State::Stored;
  j.hash = r.lost ? lostKey(j.ordinal) : Hash128{e.lo, e.hi};
  j.keyed = true;
  keys_[j.ordinal] = j.hash;
  if (r.lost) {
    bySample_.erase({j.bytes, j.sample});
    std::lock_guard g(statsMu_);
    stats_.uniqueBlobs--;
    stats_.uniqueBytes -= j.bytes;
  } else {
    seen_.try_emplace({j.hash, j.bytes}, false);  // written by the finisher
    noteSampleLocked(j);
  }
  handedKeys_.fetch_sub(1);
  doneLocked(j.ordinal);
  keyCv_.notify_all();  // keyNow
}

void BlobStore::popHandedLocked() {
  Handed& h = handed_.front();
  KeyBoard::destroy(h.board);
  if (h.pidfd >= 0) ::close(h.pidfd);
  handed_.pop_front();
}

void BlobStore::noteSampleLocked(const Job& j) { bySample_[{j.bytes, j.sample}] = j.hash; }

// In the finisher: the batch's unread keys, read from its view of the application's memory and
// published in order, so that the application's process has them before the writes end. That
// view is frozen: the writes take the bytes as keyed here, not hashed again (Job::ours).
void BlobStore::keyHanded(Handed& h) {
  std::vector<std::byte> buf;
  for (uint32_t i = 0; i < h.board->count(); ++i) {
    Job& j = reserved_[h.reserved[i]].job;
    h.board->publish(i, readHandedKey(j, buf));
    j.ours = frozen_;
  }
  h.board->wakeAll();
}

// ---- the finisher's writes --------------------------------------------------------------------
// In the finisher, alone in its process (the application's workers did not survive the fork):
// the batch's keys first, then its blocks, each written where it was reserved, one after the other
// on this thread. Buffered writes to one file take the kernel's lock on it in turn, and a second
// writer thread only spins on that lock (docs/design.md, "Finishing off the application's clock").
// The index entries are made at close, from the file (indexReserved), in whichever process closes.
void BlobStore::writeReserved() {
  std::unique_lock l(mu_);  // (contended only where the fork failed and the parent writes them)
  for (size_t i = batchStart_; i < reserved_.size(); ++i)  // their other sources, for nextSource
    if (const Reserved& r = reserved_[i]; !r.others.empty()) others_[{r.job.hash, r.job.bytes}] = r.others;
  keyUnforkedLocked(l);  // this batch's: not forked further, so this thread's to read
  // Every key in: those of earlier finishers too, which ended before a closing one gets here
  // (finisher.cpp); in the application's process (the fork failed), waited for.
  if (frozen_) {
    while (!handed_.empty() && takeKeysLocked(handed_.front(), true)) popHandedLocked();
  } else {
    awaitKeysLocked(l);
  }
  l.unlock();
  Scratch s;
  for (size_t i = batchStart_; i < reserved_.size(); ++i) {
    const Reserved& r = reserved_[i];
    if (r.lost)
      writeLostInRange(r, false);
    else
      writeOneReserved(r, s);
  }
}

void BlobStore::writeOneReserved(const Reserved& r, Scratch& s) {
  if (fromAnySource(r.job, [&](const Job& from) { return writeRaw(r.at, from, s, true); })) return;
  bool replaced = false;
  {
    std::lock_guard g(mu_);
    replaced = superseded_.count({r.job.hash, r.job.bytes}) > 0;
  }
  writeLostInRange(r, replaced);
}

// A Lost (or Replaced) record filling the range: its data offset is the payload's end (format.h),
// and bytes of a failed attempt are zeroed first.
void BlobStore::writeLostInRange(const Reserved& r, bool replaced) {
  const uint64_t payload = r.next - r.at - sizeof(F::BlockHeader);
  file_.writeZeros(r.at + sizeof(F::BlockHeader), payload);
  const F::BlobRecord rec = recordFor(r.job, replaced ? F::BlobEncoding::Replaced : F::BlobEncoding::Lost, 0, payload);
  file_.pwriteAll(&rec, sizeof rec, r.at + sizeof(F::BlockHeader));
  file_.finishBlock(r.at, makeBlockHeader(F::BlockType::Blob, payload, sizeof rec, check32(&rec, sizeof rec)), false);
}

void BlobStore::forked(pid_t finisher) {
  if (finisher > 0)
    for (Handed& h : handed_)
      if (h.pid == 0) {  // (a batch not forked yet is this one)
        h.pid = finisher;
        h.pidfd = processHandle(finisher);
      }
  batchStart_ = reserved_.size();
}

void BlobStore::indexReserved() {
  std::lock_guard f(file_.mu);
  for (const Reserved& r : reserved_) indexReservedOne(r);
}

namespace {
// The record of the block written at [at, next), or nullopt where that is not one good blob block:
// the block is mapped read-only and checked as every reader checks one (checkBlock), which reads
// its header, record and padding, not its data. A range past the file's end (never written) is
// not mapped: reading it would fault.
std::optional<F::BlobRecord> writtenBlob(const BlockFile& file, uint64_t at, uint64_t next) {
  struct stat st {};
  if (::fstat(file.fd(), &st) != 0 || static_cast<uint64_t>(st.st_size) < next) return std::nullopt;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = at / page * page, length = next - start;  // a page multiple keeps alignments
  void* m = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, file.fd(), static_cast<off_t>(start));
  if (m == MAP_FAILED) return std::nullopt;
  const auto* base = static_cast<const std::byte*>(m);
  const BlockCheck b = checkBlock(base, length, at - start);
  std::optional<F::BlobRecord> rec;
  if (b.status == BlockCheck::Ok && b.h.type == uint16_t(F::BlockType::Blob) && b.next == length)
    rec = blobRecordAt(base, at - start);
  ::munmap(m, length);
  return rec;
}
}  // namespace

// The block a finisher wrote for r, checked before its entry is indexed: a range never written
// (the finisher was killed) or written wrong fails the close.
void BlobStore::indexReservedOne(const Reserved& r) {
  const std::optional<F::BlobRecord> rec = writtenBlob(file_, r.at, r.next);
  if (!rec || rec->hashLo != r.job.hash.lo || rec->hashHi != r.job.hash.hi || rec->rawSize != r.job.bytes)
    throw Error(Error::Kind::Io, file_.path() + ": the weights reserved at offset " + std::to_string(r.at) +
                                     " were not written (their finisher did not finish)");
  file_.blobEntries.emplace_back(rec->hashLo, rec->hashHi, rec->rawSize, r.at, rec->storedSize,
                                 r.at + sizeof(F::BlockHeader) + rec->dataOffset, rec->encoding, rec->transform,
                                 rec->elementHint);
  std::lock_guard g(statsMu_);
  if (rec->encoding == uint16_t(F::BlobEncoding::Replaced)) {
    stats_.replacedBlobs++;
  } else if (rec->encoding == uint16_t(F::BlobEncoding::Lost)) {
    stats_.lostBlobs++;
    stats_.lostBytes += rec->rawSize;
  } else {
    stats_.storedBytes += rec->storedSize;
  }
}

void BlobStore::afterForkInChild() {
  frozen_ = true;
  new (&mu_) std::mutex();
  new (&statsMu_) std::mutex();
  workCv_.reset();
  new (&doneCv_) std::condition_variable();
  new (&orderedCv_) std::condition_variable();
  orderedWant_ = kNoTicket;  // the parent's log thread does not wait here
  new (&keyCv_) std::condition_variable();
  collecting_ = false;                     // (a thread of the parent's waited on a board)
  for (Handed& h : handed_) h.pidfd = -1;  // the parent's handles: closed with its other descriptors (finisher.cpp)
  // The std::thread objects name threads that do not exist here: never joined, never destroyed.
  new std::vector<std::thread>(std::move(workers_));
  workers_.clear();
}

}  // namespace trtrace::detail
