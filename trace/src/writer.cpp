// Writer: the facade over the block file, blob store, call log and encoder pool (writer_impl.h).
// See trtrace/writer.h for the contract and docs/format.md for the layout.
#include "trtrace/writer.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <new>

#include "writer_impl.h"

namespace trtrace {
namespace {

namespace F = format;

// The header block's FlatBuffer: who wrote the trace, against which library, where and when.
void buildHeader(flatbuffers::FlatBufferBuilder& b, const HeaderInfo& info) {
  std::vector<flatbuffers::Offset<fb::Setting>> settings;
  for (auto& [k, v] : info.settings) settings.push_back(fb::CreateSetting(b, b.CreateString(k), b.CreateString(v)));
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
                            b.CreateString(info.libraryVersion), b.CreateVector(settings), b.CreateString(host),
                            info.pid ? info.pid : uint64_t(::getpid()), now,
                            info.libraryBuildId.empty() ? 0 : b.CreateString(info.libraryBuildId)));
}

}  // namespace

Writer::Writer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<Writer> Writer::create(const WriterOptions& options, const HeaderInfo& info) {
  if (options.deferKeys && options.onCall)
    throw Error(Error::Kind::Usage, options.path + ": deferKeys and onCall exclude each other");
  if (options.chunkBytes < 4096 || options.chunkBytes > F::kMaxChunkRawSize)
    throw Error(Error::Kind::Usage, options.path + ": chunkBytes must be in [4 KiB, 4 MiB]");
  auto impl = std::make_unique<Impl>(options);  // file created, fixed header written, workers started
  flatbuffers::FlatBufferBuilder b;
  buildHeader(b, info);
  {
    std::lock_guard g(impl->file.mu);
    impl->file.appendBlock(F::BlockType::Header, b.GetBufferPointer(), b.GetSize());
  }
  return std::unique_ptr<Writer>(new Writer(std::move(impl)));
}

Writer::~Writer() {
  try {
    close();
  } catch (...) {}
  // A failed close may leave workers running: the blob store stops them before the file goes.
}

void Writer::describeApi(uint32_t apiId, std::string_view iface, std::string_view method,
                         std::span<const std::string_view> argNames) {
  impl_->log.describe(apiId, iface, method, argNames);
}

BlobRef Writer::putBlob(const void* data, uint64_t bytes, BlobHint hint) { return impl_->blobs.put(data, bytes, hint); }
std::optional<BlobRef> Writer::resolvedBlob(const BlobRef& ref) const { return impl_->blobs.resolved(ref); }
BlobRef Writer::blobKey(const BlobRef& ref, bool* readHere) { return impl_->blobs.keyNow(ref, readHere); }
void Writer::putLostBlob(const BlobRef& ref, BlobHint hint, bool replaced) {
  impl_->blobs.putLost(ref, hint, replaced);
}
void Writer::supersedeBlob(const BlobRef& ref) { impl_->blobs.supersede(ref); }
void Writer::drainBlobs(const std::function<void(uint64_t)>& onWait) { impl_->blobs.drain(onWait); }
uint64_t Writer::pendingBlobBytes() const { return impl_->blobs.pendingBytes(); }

CallEncoder& Writer::beginCall(uint32_t apiId, uint64_t receiver, uint32_t networkId) {
  CallEncoder& e = impl_->encoders.take(this);
  e.impl_->reset(apiId, receiver, networkId);
  return e;  // used by the caller until endCall() returns it to the pool
}

void Writer::appendSegment(std::span<const std::byte> bytes, std::span<const std::byte> stored, uint16_t storedFlags) {
  impl_->log.appendSegment(bytes, stored, storedFlags);
}

void Writer::copyEncodedBlob(std::span<const std::byte> p) {
  F::BlobRecord r{};
  if (p.size() >= sizeof r) std::memcpy(&r, p.data(), sizeof r);
  const bool zstd = p.size() >= sizeof r && r.encoding == uint16_t(F::BlobEncoding::Zstd) && r.dataOffset >= sizeof r &&
                    r.dataOffset <= p.size() && p.size() - r.dataOffset == r.storedSize;
  if (!zstd) throw Error(Error::Kind::Usage, impl_->file.path() + ": copyEncodedBlob: not a Zstd blob's block payload");
  auto& f = impl_->file;
  const auto h =
      detail::makeBlockHeader(F::BlockType::Blob, p.size(), r.dataOffset, detail::check32(p.data(), r.dataOffset));
  {
    std::lock_guard g(f.mu);
    const uint64_t at = f.end;
    const std::span<const std::byte> pieces[] = {p};
    f.writeBlock(at, h, pieces);
    f.blobEntries.emplace_back(r.hashLo, r.hashHi, r.rawSize, at, r.storedSize,
                               at + sizeof(F::BlockHeader) + r.dataOffset, r.encoding, r.transform, r.elementHint);
  }
  std::lock_guard g(impl_->copiedMu);
  Stats& s = impl_->copied;
  s.blobPuts++, s.uniqueBlobs++, s.compressedBlobs++;
  s.blobPutBytes += r.rawSize, s.uniqueBytes += r.rawSize, s.storedBytes += r.storedSize;
}

void Writer::flush() { impl_->log.flush(true); }
void Writer::flushBehind() { impl_->log.flushBehind(); }

void Writer::close() {
  auto* p = impl_.get();
  if (p->closed) return;
  p->log.flush(true);
  p->blobs.stop();
  auto sealed = p->log.seal();
  p->closed = true;
  p->blobs.indexReserved();
  std::lock_guard g(p->file.mu);
  Stats st = stats();
  p->file.finish(st.calls, st.blobPuts, st.blobPutBytes);
}

int Writer::fileDescriptor() const { return impl_->file.fd(); }

uint64_t Writer::reserveQueued() { return impl_->blobs.reserveQueued(); }

void Writer::writeReserved() {
  impl_->blobs.writeReserved();
  std::lock_guard g(impl_->file.mu);
  impl_->blobs.forked();  // written here (the fork failed): not again
}

pid_t Writer::forkFinisher(bool closing) {
  auto* p = impl_.get();
  for (;;) {
    if (closing) {
      p->blobs.reserveQueued(true);
      p->blobs.drain();  // the blobs being written (not those reserved)
      p->log.settle();   // the child encodes and writes the last calls (close)
    }
    std::unique_lock a(p->log.mutex());
    std::unique_lock b(p->blobs.mutex()), c(p->file.mu), d(p->log.backgroundMutex());
    // Another thread queued a blob, or handed the log's thread a batch, meanwhile.
    if (closing && (p->blobs.busyLocked() || p->log.busyLocked())) continue;
    const pid_t pid = ::fork();
    if (pid > 0) p->blobs.forked(pid);
    if (pid > 0 && closing) p->log.abandonLocked();  // the child writes the rest of the trace
    if (pid != 0) return pid;
    a.release(), b.release(), c.release(), d.release();  // held by a thread of the parent: made anew here
    p->file.afterForkInChild();
    p->blobs.afterForkInChild();
    p->log.afterForkInChild();
    new (&p->copiedMu) std::mutex();
    return 0;
  }
}

Writer::Stats Writer::stats() const {
  Stats a = impl_->log.stats(), b = impl_->blobs.stats();  // each counts its own fields only
  {
    std::lock_guard g(impl_->copiedMu);
    const Stats& c = impl_->copied;
    b.blobPuts += c.blobPuts, b.blobPutBytes += c.blobPutBytes, b.uniqueBlobs += c.uniqueBlobs;
    b.uniqueBytes += c.uniqueBytes, b.storedBytes += c.storedBytes, b.compressedBlobs += c.compressedBlobs;
  }
  return {a.calls + b.calls,
          a.segments + b.segments,
          a.segmentRawBytes + b.segmentRawBytes,
          a.segmentStoredBytes + b.segmentStoredBytes,
          a.compressedSegments + b.compressedSegments,
          a.blobPuts + b.blobPuts,
          a.blobPutBytes + b.blobPutBytes,
          a.uniqueBlobs + b.uniqueBlobs,
          a.uniqueBytes + b.uniqueBytes,
          a.storedBytes + b.storedBytes,
          a.compressedBlobs + b.compressedBlobs,
          a.lostBlobs + b.lostBlobs,
          a.lostBytes + b.lostBytes,
          a.replacedBlobs + b.replacedBlobs};
}

}  // namespace trtrace
