// A trace assembled from the layer store (pull_internal.h): written in file order, so the file's own
// digest is computed on the way.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "pull_internal.h"
#include "trtrace/error.h"
#include "trtrace/progress.h"

namespace trtrace::registry {
namespace {

// Copies n bytes from `src` at `from` to `dst` at `to`, into the file digest when there is one.
class Copier {
 public:
  Copier(int dst, std::string name, Sha256* digest, Progress& progress)
      : dst_(dst), name_(std::move(name)), digest_(digest), progress_(progress) {}
  void copy(int src, const std::string& srcName, uint64_t from, uint64_t to, uint64_t n) {
    for (uint64_t done = 0; done < n;) {
      const size_t k = static_cast<size_t>(std::min<uint64_t>(buf_.size(), n - done));
      readAt(src, srcName, from + done, buf_.data(), k);
      write(to + done, k);
      if (digest_) digest_->update(buf_.data(), k);
      done += k;
      progress_.update(written_ += k);
    }
  }

 private:
  void write(uint64_t at, size_t n) { writeAt(dst_, name_, at, buf_.data(), n); }
  int dst_;
  std::string name_;
  Sha256* digest_;
  Progress& progress_;
  std::vector<char> buf_ = std::vector<char>(1 << 20);
  uint64_t written_ = 0;
};

// A stored layer, open for reading.
struct Layer {
  std::string path;
  UniqueFd file;
  explicit Layer(std::string p) : path(std::move(p)), file(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) {
    if (file.get() < 0)
      throw Error(Error::Kind::Io, "registry cache: " + path + ": cannot open (" + std::strerror(errno) + ")");
  }
  int fd() const { return file.get(); }
};

}  // namespace

std::string assemble(const Artifact& a, const LayerStore& store, const std::set<std::string>& have, int fd,
                     const std::string& out, const std::string& label) {
  bool whole = true;
  for (const Piece& p : a.pieces) whole = whole && have.count(p.digest);
  if (::ftruncate(fd, static_cast<off_t>(a.fileSize)) != 0)  // pieces not written stay holes
    throw Error(Error::Kind::Io,
                out + ": cannot size to " + std::to_string(a.fileSize) + " bytes (" + std::strerror(errno) + ")");
  Sha256 digest;
  Progress progress(label, "writing the trace", a.fileSize);
  Copier c(fd, out, whole ? &digest : nullptr, progress);
  const Layer log(store.path(a.log.digest));
  uint64_t at = 0, logAt = 0;
  for (const Piece& p : a.pieces) {
    c.copy(log.fd(), log.path, logAt, at, p.range.offset - at);
    logAt += p.range.offset - at;
    if (have.count(p.digest)) {
      const Layer piece(store.path(p.digest));
      c.copy(piece.fd(), piece.path, 0, p.range.offset, p.range.size);
    }
    at = p.range.offset + p.range.size;
  }
  c.copy(log.fd(), log.path, logAt, at, a.fileSize - at);
  return whole ? digest.digest() : "";
}

}  // namespace trtrace::registry
