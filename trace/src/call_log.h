// Call log: the FlatBuffers segments of call records, both ways. Writing: the calls' drafts
// (call_encoder.h) gathered in batches that the log's own thread encodes into the open segment
// (each call its own nested, 8-aligned FlatBuffer, API descriptors written where an id is first
// used); a full segment is zstd-compressed when that pays and written by that thread after the
// blobs queued before its calls, so the caller's thread (the app's, in a capture) neither encodes,
// nor runs zstd, nor waits for the blob workers. A flush (FlushPolicy, close) waits for that thread,
// then encodes the last batch and writes the open segment in place. Reading:
// inflation of a compressed segment, verification of a segment and of each call record
// (checkCallRecord), a segment's prefix for salvage.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "blob_store.h"
#include "block_file.h"
#include "byte_run.h"
#include "call_encoder.h"
#include "trtrace/reader.h"
#include "trtrace/spin_lock.h"

struct ZSTD_CCtx_s;

namespace trtrace::detail {

class CallLog {
 public:
  CallLog(BlockFile& file, BlobStore& blobs, const WriterOptions& options);
  ~CallLog();

  void describe(uint32_t apiId, std::string_view iface, std::string_view method,
                std::span<const std::string_view> argNames);
  // Seq number, the draft appended to the batch, flushed per policy (CallEncoder::endCall).
  uint64_t append(CallEncoder::Impl& e);
  void appendSegment(std::span<const std::byte> segmentFlatBuffer, std::span<const std::byte> stored,
                     uint16_t storedFlags);  // Writer::appendSegment
  // Encodes every call appended and writes the open segment (after the blobs it references when
  // drainFirst).
  void flush(bool drainFirst);
  // The calls appended so far to the log's thread, which then writes the open segment; returns at
  // once (a network's end: the exit that may follow finds little left to encode and compress).
  void flushBehind();
  // Returns once the log's thread has encoded and written all it was handed; the calls of the last
  // batch and the open segment stay in memory (a finisher forked now writes them: Writer::forkFinisher).
  // Returns once the log's thread is idle, or parked (waiting for keys a finisher reads, before
  // touching its next batch): a closing fork may then take its state as it is.
  void settle();
  // A batch is with the log's thread, and it is not parked. Holds mutex() and backgroundMutex().
  bool busyLocked() const;
  std::mutex& backgroundMutex() { return bgMu_; }
  // After a closing fork, in the parent: its parked thread never writes (both locks held).
  void abandonLocked();
  // No call is appended after this; the returned lock keeps appends out while the file is closed.
  std::unique_lock<SpinLock> seal();
  Writer::Stats stats() const;  // its counters: calls .. compressedSegments (the others 0)
  SpinLock& mutex() { return mu_; }
  // In a forked child: its locks made anew, the log's thread (which did not survive) forgotten.
  void afterForkInChild();

 private:
  // A batch of drafts, in seq order, and the blobs their calls reference: all queued by `blobTicket`.
  struct Batch {
    ByteRun drafts;
    uint64_t blobTicket = 0;
    bool endSegment = false;  // the open segment is written after these calls (flushBehind)
    size_t asked = 0;         // drafts' room asked for (prefetched) up to this offset
    // The room for the next calls' drafts asked for ahead, for writing, each line once.
    void askRoom();
    void clear() {
      drafts.clear();
      asked = 0;
    }
  };

  // ---- the appending side (mu_) ----
  // append's rare branches, apart from the lines every call runs: a call after close (throws), and
  // the call just appended shown to WriterOptions::onCall.
  [[noreturn, gnu::cold]] void appendedAfterClose();
  [[gnu::cold]] void showAppended(CallEncoder::Impl& e);
  // The batch to the log's thread (started on first use), which writes the open segment after it
  // when endSegment: it waits for room while kMaxPendingBatchBytes of batches are pending. Holds mu_.
  void handOffLocked(bool endSegment = false);
  // Waits until the log's thread has encoded and written every pending batch; rethrows its failure.
  void waitBackgroundLocked();
  // Encodes the batch on this thread (the log's thread is idle) and writes the open segment.
  void flushLocked();

  // ---- the encoding side: the log's thread, or a thread holding mu_ while it is idle ----
  // Each draft encoded into the open segment; a full one is written after its blobs (blobTicket).
  void encodeBatch(const Batch& batch);
  void addCall(const std::byte* draft);
  void writeOpenSegment(uint64_t blobTicket);
  void backgroundLoop();
  void encodePendingHere();  // the pending batches on this thread (a closing finisher's)
  // `stored` (with its block flags): the segment as another trace stores it, kept when smaller.
  void writeSegment(const void* fbuf, uint64_t n, uint64_t firstSeq, uint32_t calls, uint32_t index,
                    std::span<const std::byte> stored = {}, uint16_t storedFlags = 0);
  // The payload to store for a segment FlatBuffer: segOut_ (compressed) when that pays, else fbuf.
  uint16_t compress(const void* fbuf, uint64_t n, const void*& payload, uint64_t& payloadN);
  void finishSegment();
  // The provisional blob keys (deferKeys) in a finished segment's calls replaced in place by their
  // content keys: each segment is written after its blobs were read (drainTo, drain), so every
  // one is known by then.
  void resolveKeys(uint8_t* segment);
  void resolveKey(fb::Value* v);
  void nextSegment();
  void describeInSegment(uint32_t api);

  BlockFile& file_;
  BlobStore& blobs_;
  const WriterOptions& opt_;

  // Held for an append's copy of its draft (and, under FlushPolicy::EveryCall, its flush), and
  // while flush(), flushBehind(), seal(), settle() and appendSegment() encode, write or wait for
  // the log's thread: that is when a second appending thread spins, then yields (spin_lock.h).
  // Released with a plain store.
  SpinLock mu_;
  Batch batch_;  // the calls appended since the last handoff
  uint64_t nextSeq_ = 0;
  bool closed_ = false;
  flatbuffers::FlatBufferBuilder viewB_;  // onCall: the call just appended, encoded for its view
  EncodeScratch viewScratch_;             // encodeCall's, for viewB_
  std::atomic<uint64_t> calls_{0};

  // The encoding side's state, on cache lines of its own: the log's thread writes it while
  // application threads append.
  alignas(64) ZSTD_CCtx_s* cctx_ = nullptr;  // compresses segments
  std::vector<std::byte> segOut_;            // SegmentZstdHeader + frame of the segment being written
  flatbuffers::FlatBufferBuilder callB_;     // one call's FlatBuffer (encodeCall), then copied into seg_
  EncodeScratch callScratch_;                // encodeCall's, for callB_
  // Sized for a full segment at once: growing by doubling would copy it and touch fresh pages at
  // every step.
  flatbuffers::FlatBufferBuilder seg_;
  std::vector<flatbuffers::Offset<fb::CallRecord>> records_;
  std::vector<flatbuffers::Offset<fb::ApiDescriptor>> segApis_;
  uint64_t segFirstSeq_ = 0;
  uint32_t segIndex_ = 0;
  bool segProvisional_ = false;  // the open segment holds a provisional blob key
  std::vector<bool> described_;  // by API id: its descriptor is in a written or the open segment
  struct Descriptor {
    std::string iface, method;
    std::vector<std::string> args;
  };
  std::mutex descMu_;
  std::unordered_map<uint32_t, Descriptor> descriptors_;
  mutable std::mutex statsMu_;
  Writer::Stats stats_;  // only the call-log counters are used (calls: calls_)

  // The log's thread: batches, each encoded in order, full segments written once the blobs queued
  // before their calls are (the appending thread waits for neither). Bounded: a handoff waits
  // for room while kMaxPendingBatchBytes of batches are pending.
  static constexpr uint64_t kBatchBytes = 64 << 10;
  static constexpr uint64_t kMaxPendingBatchBytes = 16 << 20;
  struct Background {
    std::deque<Batch> pending;  // in order; the front is being encoded
    std::vector<Batch> idle;    // encoded, their buffers kept for reuse
    uint64_t pendingBytes = 0;
    bool stop = false;
    bool parked = false;       // the front batch waits for keys, untouched (backgroundLoop)
    bool abandoned = false;    // a closing finisher took the batches: none is encoded here
    std::exception_ptr error;  // a write failed: nothing more is written, every later flush fails
  };
  alignas(64) std::mutex bgMu_;
  std::condition_variable bgCv_;
  Background bg_;
  std::thread bgThread_;
};

// ---- reading ----------------------------------------------------------------------------------
// The payload of a Segment block whose framing is good: inflated when compressed (into
// b.inflated), verified, each call record checked; sets b.fbuf/b.fbufSize. "" when fine.
std::string checkSegmentPayload(const std::byte* payload, BlockCheck& b);
// The one check of a call record beyond the FlatBuffers Verifier (see call_log.cpp).
std::string checkCallRecord(const fb::CallRecord* rec);
// The call of a record; throws Error (Corrupt) naming the segment for an empty record.
const fb::Call* callOf(const fb::CallRecord* rec, const std::string& path, size_t segment, uint64_t offset);
// A copy of segment `s` holding only its first `calls` calls and all its API descriptors.
BlobView segmentPrefix(const fb::Segment* s, uint32_t calls);

}  // namespace trtrace::detail
