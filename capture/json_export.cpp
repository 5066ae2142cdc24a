// The capture shim's JSON+BIN export (json_export.h): calls encoded once into spools as they are
// recorded, spools appended to the JSON (in place, before its closing part) and to the BIN at each
// flush point.
#include "json_export.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "trtrace/convert.h"
#include "trtrace/error.h"
#include "trtrace/files.h"

namespace trtrace::capture {
namespace {

void writeAt(int fd, const void* data, size_t n, uint64_t offset, const std::string& name) {
  auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = ::pwrite(fd, p, std::min<size_t>(n, 1u << 30), static_cast<off_t>(offset));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) throw Error(Error::Kind::Io, name + ": write failed (" + std::strerror(errno) + ")");
    p += k;
    n -= static_cast<size_t>(k);
    offset += static_cast<uint64_t>(k);
  }
}

void writeAt(int fd, std::string_view s, uint64_t offset, const std::string& name) {
  writeAt(fd, s.data(), s.size(), offset, name);
}

// The weights bytes of the calls being recorded on this thread (JsonExport::noteBlob).
thread_local std::vector<std::pair<BlobRef, const void*>> tBlobs;

BlobView notedBlob(const BlobRef& ref) {
  for (const auto& [r, p] : tBlobs)
    if (r == ref) return BlobView::mapped({static_cast<const std::byte*>(p), ref.length});
  throw Error(Error::Kind::Usage, "weights of the call being recorded were not noted (a bug of the shim)");
}

int dupCloexec(int fd) {
  const int d = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (d < 0) throw Error(Error::Kind::Io, std::string("dup: ") + std::strerror(errno));
  return d;
}

}  // namespace

// Bytes appended now and written into a file at the next flush: held in memory up to 1 MiB, the
// rest in an unnamed temporary file (files::anonymousFile), so memory stays bounded between flushes.
class JsonExport::Spool {
 public:
  ~Spool() {
    if (fd_ >= 0) ::close(fd_);
  }
  void append(const void* p, size_t n) {
    if (buf_.size() + n > kMemory) {
      spill(buf_.data(), buf_.size());
      buf_.clear();
      if (n > kMemory) return spill(p, n);
    }
    buf_.append(static_cast<const char*>(p), n);
  }
  // Writes everything appended since the last moveTo at `offset` of `fd` (`name` in messages);
  // returns the bytes written.
  uint64_t moveTo(int fd, uint64_t offset, const std::string& name) {
    uint64_t done = 0;
    std::string chunk;
    while (done < spilled_) {
      chunk.resize(std::min<uint64_t>(kMemory, spilled_ - done));
      const ssize_t k = ::pread(fd_, chunk.data(), chunk.size(), static_cast<off_t>(done));
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) throw Error(Error::Kind::Io, "the JSON+BIN export's temporary file: read failed");
      writeAt(fd, chunk.data(), static_cast<size_t>(k), offset + done, name);
      done += static_cast<uint64_t>(k);
    }
    if (spilled_ && ::ftruncate(fd_, 0) != 0)
      throw Error(Error::Kind::Io, "the JSON+BIN export's temporary file: cannot truncate");
    spilled_ = 0;
    writeAt(fd, buf_, offset + done, name);
    done += buf_.size();
    buf_.clear();
    return done;
  }

 private:
  static constexpr size_t kMemory = 1 << 20;
  void spill(const void* p, size_t n) {
    if (fd_ < 0) fd_ = files::anonymousFile();
    writeAt(fd_, p, n, spilled_, "the JSON+BIN export's temporary file");
    spilled_ += n;
  }
  std::string buf_;
  int fd_ = -1;
  uint64_t spilled_ = 0;
};

JsonExport::JsonExport(const std::string& tracePath, std::string libraryVersion)
    : libraryVersion_(std::move(libraryVersion)),
      records_(tracePath, false, notedBlob, [this](const void* p, size_t n) { bin_->append(p, n); }),
      json_(std::make_unique<Spool>()),
      bin_(std::make_unique<Spool>()) {}

JsonExport::~JsonExport() {
  if (jsonFd_ >= 0) ::close(jsonFd_);
  if (binFd_ >= 0) ::close(binFd_);
}

void JsonExport::noteBlob(const BlobRef& ref, const void* bytes) { tBlobs.emplace_back(ref, bytes); }
void JsonExport::forgetBlobs() { tBlobs.clear(); }

void JsonExport::add(const CallView& c) noexcept {
  std::lock_guard lk(mu_);
  if (!error_.empty()) return;
  try {
    std::string text;
    records_.add(c, text);
    json_->append(text.data(), text.size());
  } catch (const std::exception& e) { stop(e.what()); } catch (...) {
    stop("out of memory while encoding a call");
  }
}

// Both files complete under temporary names, renamed over their final names; kept open for the
// in-place updates of later flushes.
void JsonExport::firstFlush(const std::string& jsonPath, const std::string& closing) {
  const std::string binPath = convert::binPathFor(jsonPath);
  files::PendingOutputs outputs;
  const int json = outputs.add(jsonPath);  // first: a missing folder is said naming the JSON
  const int bin = outputs.add(binPath);
  binSize_ = bin_->moveTo(bin, 0, binPath);
  const auto opening = convert::JsonRecords::kOpening;
  writeAt(json, opening, 0, jsonPath);
  jsonEnd_ = opening.size() + json_->moveTo(json, opening.size(), jsonPath);
  writeAt(json, closing, jsonEnd_, jsonPath);
  jsonFd_ = dupCloexec(json);
  binFd_ = dupCloexec(bin);
  outputs.commit();
  jsonPath_ = jsonPath;
  binPath_ = binPath;
}

void JsonExport::flush(const std::string& jsonPath) {
  std::lock_guard lk(mu_);
  if (!error_.empty()) throw Error(Error::Kind::Io, error_);
  try {
    const std::string closing =
        records_.closing(jsonFd_ < 0 ? convert::binPathFor(jsonPath) : binPath_, libraryVersion_);
    if (jsonFd_ < 0) {
      firstFlush(jsonPath, closing);
      jsonWritten_ += jsonEnd_ + closing.size();
      binWritten_ += binSize_;
    } else {
      // The BIN first: the JSON never names bytes the BIN does not hold yet.
      const uint64_t weights = bin_->moveTo(binFd_, binSize_, binPath_);
      binSize_ += weights;
      const uint64_t records = json_->moveTo(jsonFd_, jsonEnd_, jsonPath_);
      jsonEnd_ += records;
      writeAt(jsonFd_, closing, jsonEnd_, jsonPath_);
      if (jsonEnd_ + closing.size() < jsonSize_ &&
          ::ftruncate(jsonFd_, static_cast<off_t>(jsonEnd_ + closing.size())) != 0)
        throw Error(Error::Kind::Io, jsonPath_ + ": cannot truncate (" + std::strerror(errno) + ")");
      jsonWritten_ += records + closing.size();
      binWritten_ += weights;
    }
    jsonSize_ = jsonEnd_ + closing.size();
    ++flushes_;
  } catch (const std::exception& e) {
    stop(e.what());
    throw;
  } catch (...) {
    stop("out of memory");
    throw;
  }
}

// The export stops after its first failure: what is spooled goes.
void JsonExport::stop(const std::string& why) {
  error_ = why;
  json_.reset();
  bin_.reset();
}

std::string JsonExport::counts() {
  std::lock_guard lk(mu_);
  return std::to_string(records_.records()) + " records encoded, " + std::to_string(records_.skipped()) +
         " calls skipped, " + std::to_string(jsonWritten_) + " JSON bytes written, " + std::to_string(binWritten_) +
         " BIN bytes written, " + std::to_string(flushes_) + " flushes";
}

}  // namespace trtrace::capture
