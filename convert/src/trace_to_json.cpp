// trtrace trace -> NVIDIA JSON+BIN (`trtrace convert`): the trace's calls in order through
// JsonRecords (trtrace/json_records.h, the encoder the capture shim's export uses too), written
// under temporary names and renamed only when complete (trtrace/files.h).
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#include "common.h"
#include "trtrace/convert.h"
#include "trtrace/files.h"
#include "trtrace/json_records.h"
#include "trtrace/reader.h"

namespace trtrace::convert {
namespace {

class Output {
 public:
  // Writes to `fd` (a temporary file, trtrace/files.h); messages name `shown`, the file asked for.
  Output(int fd, const std::string& shown) : path_(shown) {
    const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    f_ = own < 0 ? nullptr : ::fdopen(own, "wb");
    if (!f_) {
      if (own >= 0) ::close(own);
      throw Error(Error::Kind::Io, shown + ": cannot create (" + std::strerror(errno) + ")");
    }
    std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
  }
  ~Output() {
    if (f_) std::fclose(f_);
  }
  void write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n)
      throw Error(Error::Kind::Io, path_ + ": write failed (" + std::strerror(errno) + ")");
    bytes_ += n;
  }
  void write(const std::string& s) { write(s.data(), s.size()); }
  void close() {
    FILE* f = f_;
    f_ = nullptr;
    if (std::fclose(f) != 0) throw Error(Error::Kind::Io, path_ + ": write failed (" + std::strerror(errno) + ")");
  }
  uint64_t bytes() const { return bytes_; }

 private:
  std::string path_;
  FILE* f_ = nullptr;
  uint64_t bytes_ = 0;
};

// One conversion: the trace's calls in order, each rendered as NVIDIA's record; weights go to the
// BIN in first-use order.
class TraceToJson {
 public:
  TraceToJson(const std::string& tracePath, const std::string& jsonPath, const TraceToJsonOptions& opt);
  Stats run();

 private:
  void call(const CallView& c);

  std::string binPath_;
  const TraceToJsonOptions& opt_;
  std::unique_ptr<Reader> reader_;
  files::PendingOutputs outputs_;
  std::unique_ptr<Output> json_, bin_;
  std::unique_ptr<JsonRecords> records_;
  uint64_t releasedAt_ = 0;
  std::string out_{JsonRecords::kOpening};
};

TraceToJson::TraceToJson(const std::string& tracePath, const std::string& jsonPath, const TraceToJsonOptions& opt)
    : opt_(opt) {
  reader_ = Reader::open(tracePath);
  if (reader_->truncatedAt())
    throw Error(Error::Kind::Truncated, reader_->truncationMessage() + "; not converting a truncated trace");
  if (opt.requireCalls && reader_->callCount() == 0)
    throw Error(Error::Kind::Empty, tracePath + ": holds no calls (nothing to convert)");
  if (const uint64_t lost = reader_->lostBlobs())  // NVIDIA's layout has no way to say so
    std::fprintf(stderr,
                 "trtrace: warning: %s: %llu weight blobs were lost at capture (the app released them "
                 "first): the BIN holds zeros for them\n",
                 tracePath.c_str(), static_cast<unsigned long long>(lost));
  binPath_ = opt.binPath.empty() ? binPathFor(jsonPath) : opt.binPath;
  json_ = std::make_unique<Output>(outputs_.add(jsonPath), jsonPath);
  bin_ = std::make_unique<Output>(outputs_.add(binPath_), binPath_);
  records_ = std::make_unique<JsonRecords>(
      tracePath, opt.allCalls,
      [this](const BlobRef& ref) { return reader_->checkedBlob(ref); },  // damaged weights are not passed on
      [this](const void* p, size_t n) { bin_->write(p, n); });
}

void TraceToJson::call(const CallView& c) {
  if (opt_.progress) opt_.progress(c.seq(), reader_->callCount());
  const uint64_t before = records_->records();
  records_->add(c, out_);
  if (records_->records() == before) return;  // a call NVIDIA does not record
  if (bin_->bytes() - releasedAt_ > (64u << 20) || (records_->records() & 0x3ffff) == 0) {
    releasedAt_ = bin_->bytes();  // bounded memory: the trace pages read so far leave the RSS
    files::releasePages(reader_->mapping().data(), reader_->mapping().size());
  }
  if (out_.size() > (1u << 20)) {
    json_->write(out_);
    out_.clear();
  }
}

Stats TraceToJson::run() {
  auto t0 = std::chrono::steady_clock::now();
  reader_->forEachCall([&](const CallView& c) {
    call(c);
    return true;
  });
  out_ += records_->closing(binPath_, reader_->header().libraryVersion);
  json_->write(out_);
  json_->close();
  bin_->close();
  outputs_.commit(opt_.durable);
  Stats st;
  st.traceBytes = reader_->mapping().size();
  st.calls = records_->records();
  st.skipped = records_->skipped();
  st.weights = records_->weights();
  st.jsonBytes = json_->bytes();
  st.binBytes = bin_->bytes();
  st.networks = records_->networks();
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace

Stats traceToJson(const std::string& tracePath, const std::string& jsonPath, const TraceToJsonOptions& opt) {
  return TraceToJson(tracePath, jsonPath, opt).run();
}

}  // namespace trtrace::convert
