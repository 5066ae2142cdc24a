// Writer: append-only, streaming trace writer.
//
// Failure: the first failed write (full disk, I/O error) stops the writer: every later write
// throws without touching the file, so the file stays what it was: its complete blocks are a clean
// prefix (docs/format.md), whatever the caller does next.
//
// Threading: every method may be called from any thread concurrently, except that one CallEncoder
// is used by one thread between beginCall() and its endCall(). Calls are recorded without a lock
// (each beginCall hands out its own encoder; nested beginCall on one thread is fine); endCall()
// takes a short lock to assign the sequence number and append the call's draft to a batch, which
// the call log's thread encodes into FlatBuffers segments (a flush encodes the rest in place).
// putBlob() enqueues blobs ZERO-COPY for the worker threads, which compress and write them; the
// caller keeps the bytes alive until drainBlobs() returns. It hashes on the caller's thread, unless
// WriterOptions::deferKeys leaves that to the workers too.
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trtrace/hash.h"

namespace trtrace {

class CallView;  // trtrace/reader.h

enum class FlushPolicy { EveryCall, OnBuild, AtClose };

// The blobs' zstd level of a capture and of a conversion: level 1 keeps up with the disk on one
// core (BENCHMARKS.md, micro-benchmarks); higher levels save a few percent on weights.
inline constexpr int kDefaultBlobZstdLevel = 1;

struct WriterOptions {
  std::string path;                          // created (truncated) unless fd is given; named in messages
  int fd = -1;                               // >= 0: write into this open, empty file instead (duplicated)
  FlushPolicy flush = FlushPolicy::OnBuild;  // when call-log segments are written
  // A segment is also flushed when it grows past this. A reader holds one segment (inflated) while
  // it walks its calls, so this bounds its memory for the call log: 1 MiB is ~5,000 calls.
  uint64_t segmentBytes = 1 << 20;
  int zstdLevel = kDefaultBlobZstdLevel;  // 0 = store every blob raw
  int logZstdLevel = 3;                   // call-log segments: zstd level (0 = every segment raw)
  double minSaving = 0.05;                // keep a compressed blob/segment only if it saves >= this fraction
  // The same bar for blobs under 1 MiB, the weights a call-heavy application queues one by one as
  // it runs (rawBacklogBytes's class). A capture raises it: there every second of zstd runs beside
  // the application, and byte-grouped fp32 weights save ~9% (docs/design.md, "Capture cost").
  double smallMinSaving = 0.05;
  // false: zstd is given up on for a kind of blob that does not pay, and probed now and then
  // (trace/src/compression_odds.h); true: it is tried on every blob (`trtrace rewrite --compress`).
  bool tryEveryBlob = false;
  // Blobs under this are stored raw without trying zstd: on small weights a compression call costs
  // more per byte than it saves (calls-20k in BENCHMARKS.md), and repeats are deduplicated anyway.
  uint64_t minCompressBytes = 64 << 10;
  // Blobs still queued once somebody waits for them (drainBlobs, a flush, close: in a capture, the
  // application, at a build or at exit) are stored raw: zstd runs only while it costs nobody time.
  bool rawWhenWaitedOn = false;
  // With this much more queued behind it, a blob under 1 MiB is stored raw (0: never): an
  // application's calls can queue small weights faster than zstd keeps up, and the backlog would
  // be a wait at its next drain (calls-20k-h64 in BENCHMARKS.md). Larger blobs keep their chance.
  uint64_t rawBacklogBytes = 0;
  bool byteGrouping = true;         // split fp16/bf16/fp32 bytes by position before zstd
  uint32_t chunkBytes = 4 << 20;    // blobs are compressed in chunks of this many raw bytes
  int workerThreads = 1;            // 0 = compress/write on the caller's thread
  int workerNice = 0;               // the workers and the log's thread raise their nice value by this (0..19)
  uint64_t queueBytes = 256 << 20;  // putBlob blocks while this many enqueued bytes are pending
  // false: putBlob hashes and returns the key but stores nothing: the bytes lie elsewhere, and the
  // reader is told where (Reader::setExternalBlobs; the player's in-memory log of a JSON+BIN capture).
  bool storeBlobs = true;
  // close() waits for the data to reach the disk (fdatasync) before the header says "complete",
  // so a trace that reads as complete survives a power loss too. Off: the kernel writes it back
  // in its own time (an application's exit does not wait for the disk); a trace torn by a power
  // loss still never reads as valid (docs/format.md).
  bool durable = false;
  // Test-only fault injection (capture/faults.cpp, TRTRACE_FAULT_WRITE_FAIL): called before every
  // write to the file; a non-zero errno fails that write as the system would (ENOSPC, EIO), faults
  // a test cannot get from a real filesystem on demand. Empty (the default): no effect.
  std::function<int()> writeFault;
  // true (with workerThreads > 0): putBlob reads no more than a few samples of the bytes on the
  // caller's thread (128 bytes, whatever their size). It returns a provisional key (provisionalBlob
  // says which) that the call records hold until a worker has read the bytes and found their
  // content key; each segment is written with its calls' keys resolved (never a provisional one).
  // A blob no worker could read, or whose bytes no longer give the samples, is stored Lost under a
  // key of its own (docs/format.md, "Lost"). The bytes recorded are those the writer read, by the
  // next drainBlobs() or reserveQueued() at the latest. Incompatible with onCall (its views would
  // show provisional keys). The capture shim's setting (docs/design.md, "Capture cost").
  bool deferKeys = false;
  // Called with each call once it is appended, in sequence order, on the thread that ends it and
  // under the call log's lock: a view of the record just encoded, valid during the call (the
  // capture shim's JSON+BIN export, capture/json_export.h). Must not throw, nor use the writer.
  // Empty (the default): no effect.
  std::function<void(const CallView&)> onCall;
};

struct HeaderInfo {
  std::string producer, producerVersion;
  std::string libraryName, libraryVersion;  // version: the real library's major.minor.patch.build
  std::string libraryBuildId;               // its ELF build id (hex), "" if unknown
  std::vector<std::pair<std::string, std::string>> settings;
  std::string host;          // empty = gethostname()
  uint64_t pid = 0;          // 0 = getpid()
  uint64_t startTimeNs = 0;  // 0 = now
};

// Element type of a blob, for the byte-grouping transform only.
enum class BlobHint : uint32_t { None = 0, F16 = 1, BF16 = 2, F32 = 3 };

enum class CallStatus : uint8_t { Ok = 0, Failed = 1, Unsupported = 2, Exception = 3 };

class Writer;

// XXH3-128 of `bytes` bytes of this process's memory at `data`, read fault-safely as the blob workers
// read (process_vm_readv, 4 MiB at a time): nullopt when any of them is unmapped, or where this
// process may not read itself that way (a seccomp profile; then nothing is read at all).
std::optional<Hash128> hashReadable(const void* data, uint64_t bytes);

// A key putBlob returned under WriterOptions::deferKeys, before its bytes were read: it names the
// put (its ordinal), not the bytes, and never reaches a file.
bool provisionalBlob(const BlobRef& ref);

// Builds one call record. Obtained from Writer::beginCall; arguments are positional, in order.
class CallEncoder {
 public:
  CallEncoder& argNull();
  CallEncoder& argBool(bool v);
  CallEncoder& argI64(int64_t v);
  CallEncoder& argU64(uint64_t v);
  CallEncoder& argF32(float v);
  CallEncoder& argF64(double v);
  CallEncoder& argString(std::string_view v);
  CallEncoder& argEnum(uint32_t typeId, int64_t value);
  CallEncoder& argDims(std::span<const int64_t> dims);
  CallEncoder& argHandle(uint64_t handle, uint32_t typeId = 0);
  CallEncoder& argHandleArray(std::span<const uint64_t> handles);
  CallEncoder& argI64Array(std::span<const int64_t> v);
  CallEncoder& argF32Array(std::span<const float> v);
  CallEncoder& argBytes(std::span<const std::byte> v);
  CallEncoder& argWeightsInline(uint32_t dtype, uint64_t count, std::span<const std::byte> bytes, uint64_t ptr = 0);
  CallEncoder& argWeightsBlob(uint32_t dtype, uint64_t count, const BlobRef& blob, uint64_t ptr = 0);
  CallEncoder& argWeightsRandom(uint32_t dtype, uint64_t count, uint64_t seed, uint64_t ptr = 0);

  // Return value (at most one; the last one set wins).
  CallEncoder& retNull();
  CallEncoder& retBool(bool v);
  CallEncoder& retI64(int64_t v);
  CallEncoder& retU64(uint64_t v);
  CallEncoder& retF32(float v);
  CallEncoder& retF64(double v);
  CallEncoder& retString(std::string_view v);
  CallEncoder& retEnum(uint32_t typeId, int64_t value);
  CallEncoder& retDims(std::span<const int64_t> dims);
  CallEncoder& retHandle(uint64_t handle, uint32_t typeId = 0);
  CallEncoder& retHandleArray(std::span<const uint64_t> handles);
  CallEncoder& retI64Array(std::span<const int64_t> v);
  CallEncoder& retF32Array(std::span<const float> v);
  CallEncoder& retBytes(std::span<const std::byte> v);
  CallEncoder& retWeightsInline(uint32_t dtype, uint64_t count, std::span<const std::byte> bytes, uint64_t ptr = 0);
  CallEncoder& retWeightsBlob(uint32_t dtype, uint64_t count, const BlobRef& blob, uint64_t ptr = 0);
  CallEncoder& retWeightsRandom(uint32_t dtype, uint64_t count, uint64_t seed, uint64_t ptr = 0);

  CallEncoder& status(CallStatus s);
  // Unsupported entry point: the interface name and vtable slot (sets status Unsupported).
  CallEncoder& unsupported(std::string_view interfaceName, uint32_t vtableSlot);
  CallEncoder& message(std::string_view text);
  // The capture made this call, not the application (format 2.5; docs/design.md, "Weights").
  CallEncoder& synthesized();
  // Engine build outcome: on success the engine's size and XXH3-128; else the error messages.
  CallEncoder& buildResult(bool ok, uint64_t engineSize, const Hash128& engineHash,
                           std::span<const std::string> errors = {});

  // Assigns the global sequence number, appends the call, flushes per policy; returns the seq.
  // The encoder must not be used afterwards.
  uint64_t endCall();

  struct Impl;
  explicit CallEncoder(Writer* w);
  ~CallEncoder();

 private:
  friend class Writer;
  std::unique_ptr<Impl> impl_;
};

class Writer {
 public:
  static std::unique_ptr<Writer> create(const WriterOptions& options, const HeaderInfo& header);
  ~Writer();  // close()s; errors are swallowed there: call close() to see them

  // Registers the name of an API id; written once, into the segment where the id is first used.
  void describeApi(uint32_t apiId, std::string_view interfaceName, std::string_view methodName,
                   std::span<const std::string_view> argNames);

  // Hashes the bytes now (with deferKeys: a worker will); a blob not seen before is enqueued
  // (zero-copy) for compression/writing. Blocks only while the queue holds more than queueBytes.
  // Keep the bytes alive until drainBlobs().
  BlobRef putBlob(const void* data, uint64_t bytes, BlobHint hint = BlobHint::None);
  // The content key of `ref`: itself unless provisional (deferKeys); a provisional one's once its
  // bytes were read (nullopt before; a Lost blob's own key after a failed read).
  std::optional<BlobRef> resolvedBlob(const BlobRef& ref) const;
  // The same, waiting for it: read now on this thread where no worker has begun to (the capture's
  // check before a build compares the bytes recorded with those the build will read). `readHere`,
  // where given, says whether this call read the bytes and found them whole: the key is then the
  // hash of what they hold now, so reading them again to compare tells nothing new.
  BlobRef blobKey(const BlobRef& ref, bool* readHere = nullptr);
  // Stores `ref` as Lost, or Replaced (format.h): a derived trace keeps its input's byteless blob as it was.
  void putLostBlob(const BlobRef& ref, BlobHint hint = BlobHint::None, bool replaced = false);
  // The application changed in place the bytes it passed as `ref`, and no build has read them since
  // (the capture records the new ones, docs/design.md "Weights"): if `ref` is still pending and no
  // source of it still holds its bytes, it is stored Replaced instead of Lost. No effect otherwise.
  void supersedeBlob(const BlobRef& ref);
  // Returns once every enqueued blob's bytes have been consumed (written or compressed). With
  // onWait, it is called with the bytes still pending each time a blob completes (or every 100 ms)
  // while waiting: the capture's progress report at exit.
  void drainBlobs(const std::function<void(uint64_t pendingBytes)>& onWait = {});
  // Bytes of enqueued blobs not yet consumed.
  uint64_t pendingBlobBytes() const;

  CallEncoder& beginCall(uint32_t apiId, uint64_t receiverHandle, uint32_t networkId);

  // Writes a complete call-log segment FlatBuffer (verified first; stored compressed or raw per
  // logZstdLevel, like the writer's own segments), for tools that copy a trace (e.g. rewrite).
  // Must not be mixed with beginCall/endCall in one writer. Given the payload and block flags that
  // store this same segment in its input trace, that form is kept where it is smaller than this
  // writer's (a rewrite never grows a segment).
  void appendSegment(std::span<const std::byte> segmentFlatBuffer, std::span<const std::byte> storedPayload = {},
                     uint16_t storedFlags = 0);
  // A Zstd blob's block payload as another trace stores it (BlobRecord, chunk table, data), written
  // as is and indexed: `trtrace rewrite` keeps an input's encoding where re-encoding is not smaller.
  // The caller has checked the blob's content against its hash; anything but a Zstd blob's
  // payload is refused (Usage).
  void copyEncodedBlob(std::span<const std::byte> blockPayload);

  void flush();  // writes the pending segment and waits for pending blobs
  // Returns at once; the call log's thread writes the open segment after the calls recorded so far
  // (nothing is said of when: a flush or close does). A capture asks at a network's end or build.
  void flushBehind();
  // flush, footer index, file_length patch; idempotent. Every range reserved (below) must be
  // written by then: its record is read back from the file for the index (else Io, file unclosed).
  void close();

  // ---- Finishing in another process (docs/design.md, "Finishing off the application's clock") ----
  // The blobs queued now leave the queue, each given the file range its raw block will fill (the
  // writer's later blocks go after them); returns their bytes. Cheap: nothing is written, and of
  // the deferred keys not read yet only those of possible repeats are read. The others come back
  // from whoever writes the ranges (writeReserved), and until then blobKey(), drains of the call
  // log and the workers wait for them (docs/design.md, "Keys the finisher reads").
  uint64_t reserveQueued();
  // fork(2) with the writer consistent: its locks are held across the fork, and with `closing` no
  // blob is queued or being written and the call log's thread is idle or parked first (the child
  // will close: it encodes and writes the last calls, which the parent leaves to it).
  // Returns the child's pid to the parent (-1: fork failed, errno set), 0 in the child, where the
  // writer has no threads left and is alone: it calls writeReserved, then close() if it closes. The
  // parent must not close the writer after a `closing` fork.
  pid_t forkFinisher(bool closing);
  // The ranges reserved before the last forkFinisher (or since, when called in the process that
  // reserved them: the fork failed), their unread keys read and published first, then written on
  // this thread: a released source is stored Lost. A closing child calls it once every earlier
  // finisher ended.
  void writeReserved();
  // The trace's file descriptor (a finisher keeps it open when it closes the application's others).
  int fileDescriptor() const;

  struct Stats {
    uint64_t calls = 0, segments = 0;
    uint64_t segmentRawBytes = 0, segmentStoredBytes = 0;  // call-log FlatBuffers / their payloads
    uint64_t compressedSegments = 0;
    uint64_t blobPuts = 0, blobPutBytes = 0;    // every putBlob (logical)
    uint64_t uniqueBlobs = 0, uniqueBytes = 0;  // written once
    uint64_t storedBytes = 0, compressedBlobs = 0;
    uint64_t lostBlobs = 0, lostBytes = 0;  // released by the app before they were read (format.h, Lost)
    uint64_t replacedBlobs = 0;             // changed by the app before they were read (format.h, Replaced)
  };
  Stats stats() const;

  struct Impl;

 private:
  friend class CallEncoder;
  explicit Writer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace trtrace
