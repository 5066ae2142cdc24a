#include "engine_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "trtrace/error.h"
#include "trtrace/files.h"

namespace trtrace::replay {
namespace {

class EngineFile final : public EngineStream {
 public:
  explicit EngineFile(std::string path) : path_(std::move(path)), fd_(out_.add(path_)) {}

  bool write(const void* data, size_t n) noexcept override {
    const char* p = static_cast<const char*>(data);
    while (n && !error_) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0)
        error_ = errno;
      else
        p += w, n -= static_cast<size_t>(w);
    }
    return !error_;
  }

  std::string finish(bool keep) override {
    if (error_) throw Error(Error::Kind::Io, path_ + ": write failed (" + std::strerror(error_) + ")");
    if (!keep) return {};  // PendingOutputs removes the temporary file
    out_.commit();
    return path_;
  }

 private:
  std::string path_;
  files::PendingOutputs out_;
  int fd_;
  int error_ = 0;
};

}  // namespace

std::unique_ptr<EngineStream> engineFile(const std::string& path) { return std::make_unique<EngineFile>(path); }

}  // namespace trtrace::replay
