// Call log: the FlatBuffers segments of call records, both ways. Writing: the open segment (each
// call its own nested, 8-aligned FlatBuffer, API descriptors written where an id is first used),
// flushed per FlushPolicy, zstd-compressed when that pays. A segment flushed because it is full is
// compressed and written by the log's own thread after the blobs queued before it, so the caller's
// thread (the app's, in a capture) neither runs zstd for it nor waits for the blob workers; every
// other flush waits for that thread and writes in place. Reading:
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
#include "trtrace/reader.h"

struct ZSTD_CCtx_s;

namespace trtrace::detail {

class CallLog {
 public:
  CallLog(BlockFile& file, BlobStore& blobs, const WriterOptions& options);
  ~CallLog();

  void describe(uint32_t apiId, std::string_view iface, std::string_view method,
                std::span<const std::string_view> argNames);
  // Seq number, append to the open segment, flush per policy (CallEncoder::endCall).
  uint64_t append(CallEncoder::Impl& e);
  void appendSegment(std::span<const std::byte> segmentFlatBuffer, std::span<const std::byte> stored,
                     uint16_t storedFlags);  // Writer::appendSegment
  // Writes the open segment (after the blobs it references when drainFirst).
  void flush(bool drainFirst);
  // No call is appended after this; the returned lock keeps appends out while the file is closed.
  std::unique_lock<std::mutex> seal();
  Writer::Stats stats() const;  // its counters: calls .. compressedSegments (the others 0)
  std::mutex& mutex() { return mu_; }
  // In a forked child: its locks made anew, the log's thread (which did not survive) forgotten.
  void afterForkInChild();

 private:
  // `stored` (with its block flags): the segment as another trace stores it, kept when smaller.
  void writeSegmentLocked(const void* fbuf, uint64_t n, uint64_t firstSeq, uint32_t calls, uint32_t index,
                          std::span<const std::byte> stored = {}, uint16_t storedFlags = 0);
  // The payload to store for a segment FlatBuffer: segOut_ (compressed) when that pays, else fbuf.
  uint16_t compressLocked(const void* fbuf, uint64_t n, const void*& payload, uint64_t& payloadN);
  void flushLocked();
  // The full open segment to the log's thread (started on first use). Holds mu_.
  void flushInBackgroundLocked();
  // Waits until the log's thread has written every pending segment; rethrows its failure. Holds mu_.
  void waitBackgroundLocked();
  void backgroundLoop();
  void finishSegmentLocked();
  // The provisional blob keys (deferKeys) in a finished segment's calls replaced in place by their
  // content keys: each segment is written after its blobs were read (drainTo, drain), so every
  // one is known by then.
  void resolveKeys(uint8_t* segment);
  void resolveKey(fb::Value* v);
  void nextSegmentLocked();
  void describeLocked(uint32_t api);

  BlockFile& file_;
  BlobStore& blobs_;
  const WriterOptions& opt_;
  std::mutex mu_;
  ZSTD_CCtx_s* cctx_ = nullptr;    // compresses segments (under mu_)
  std::vector<std::byte> segOut_;  // SegmentZstdHeader + frame of the segment being written
  // Sized for a full segment at once: growing by doubling would copy it and touch fresh pages at
  // every step, on the application's thread.
  flatbuffers::FlatBufferBuilder seg_;
  std::vector<flatbuffers::Offset<fb::CallRecord>> records_;
  std::vector<flatbuffers::Offset<fb::ApiDescriptor>> segApis_;
  uint64_t nextSeq_ = 0, segFirstSeq_ = 0;
  uint32_t segIndex_ = 0;
  bool segProvisional_ = false;  // the open segment holds a provisional blob key
  struct Descriptor {
    std::string iface, method;
    std::vector<std::string> args;
  };
  std::unordered_map<uint32_t, Descriptor> descriptors_;
  std::vector<bool> described_;  // by API id: its descriptor is in a written or the open segment
  bool closed_ = false;
  mutable std::mutex statsMu_;
  Writer::Stats stats_;  // only the call-log counters are used (calls: calls_)
  std::atomic<uint64_t> calls_{0};

  // The log's thread: full segments, each written once the blobs queued before it are (the
  // application's thread does not wait for them). Bounded: a full segment waits for room while
  // kMaxPendingSegmentBytes of them are pending.
  static constexpr uint64_t kMaxPendingSegmentBytes = 16 << 20;
  struct BackgroundSegment {
    explicit BackgroundSegment(size_t initialBytes) : fb(initialBytes) {}
    flatbuffers::FlatBufferBuilder fb;
    uint64_t firstSeq = 0, blobTicket = 0;  // blobTicket: BlobStore::ticket() when it was full
    uint32_t calls = 0, index = 0;
    bool provisional = false;  // holds provisional blob keys, resolved before it is written
  };
  struct Background {
    std::deque<std::unique_ptr<BackgroundSegment>> pending;  // in order; the front is being written
    std::vector<std::unique_ptr<BackgroundSegment>> idle;    // written, their builders kept for reuse
    uint64_t pendingBytes = 0;
    bool stop = false;
    std::exception_ptr error;  // a write failed: the segments after it are dropped, every later flush fails
  };
  std::mutex bgMu_;
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
