// The layer store and the blob transfer that fills it (store.h).
#include "store.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "trtrace/error.h"
#include "trtrace/files.h"

namespace trtrace::registry {
namespace {

constexpr int kBlobAttempts = 3;  // tries per blob within one run (a dropped connection)

std::string errnoText() { return std::strerror(errno); }

// `fd` is a regular file of this user (never a link: opened with O_NOFOLLOW), of `size` if given.
bool ownRegular(int fd, int64_t size = -1) {
  struct stat st {};
  return fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
         (size < 0 || st.st_size == size);
}

// The bytes of a layer being fetched, appended to its .partial file; those a failed run left there
// are hashed first, so the transfer goes on from them.
class PartialFile : public BlobBytes {
 public:
  PartialFile(int fd, std::string name, uint64_t size) : fd_(fd), name_(std::move(name)), size_(size) {
    struct stat st {};
    const uint64_t have = ::fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
    if (have > size_) {  // not a prefix of this blob
      restart();
      return;
    }
    std::vector<char> buf(1 << 20);
    for (uint64_t off = 0; off < have;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), have - off));
      readAt(fd_, name_, off, buf.data(), n);
      h_->update(buf.data(), n);
      off += n;
    }
    done_ = have;
  }
  bool take(const char* p, size_t n) override {
    if (n > size_ - done_) return false;
    writeAt(fd_, "registry cache: " + name_, done_, p, n);
    h_->update(p, n);
    done_ += n;
    return true;
  }
  void restart() override {
    if (::ftruncate(fd_, 0) != 0)
      throw Error(Error::Kind::Io, "registry cache: " + name_ + ": cannot truncate (" + errnoText() + ")");
    h_ = std::make_unique<Sha256>(), done_ = 0;
  }
  uint64_t done() const override { return done_; }
  std::string digest() override { return h_->digest(); }

 private:
  int fd_;
  std::string name_;
  uint64_t size_, done_ = 0;
  std::unique_ptr<Sha256> h_ = std::make_unique<Sha256>();
};

// One GET of the blob from sink.done() on. False: a broken transfer worth another try.
bool fetchOnce(Session& s, const Descriptor& d, BlobBytes& sink, ByteCounter& progress, bool lastTry) {
  const std::string what = "GET blob " + d.digest;
  Request r;
  r.url = blobUrl(s, d.digest);
  if (const uint64_t from = sink.done()) r.headers.push_back("Range: bytes=" + std::to_string(from) + "-");
  r.onStatus = [&](long status) {
    if (status == 200 && sink.done()) sink.restart();  // the whole blob again: the registry ignored the Range
  };
  r.sink = [&](const char* p, size_t n) {
    progress.add(n);
    return sink.take(p, n);
  };
  Response resp;
  try {
    resp = s.send(r, what);
  } catch (const Error& e) {  // a broken transfer (Io) is tried again; an answer is not
    if (e.kind() != Error::Kind::Io || lastTry || sink.done() == d.size) throw;
    return false;
  }
  if (resp.status != 200 && resp.status != 206) s.fail(resp, what);
  return true;
}

}  // namespace

std::string blobUrl(const Session& s, const std::string& digest) { return "/v2/" + s.ref().repo + "/blobs/" + digest; }

void fetchBlob(Session& s, const Descriptor& d, BlobBytes& sink, ByteCounter& progress) {
  if (sink.done() < d.size || d.size == 0)
    for (int attempt = 1; !fetchOnce(s, d, sink, progress, attempt == kBlobAttempts); ++attempt) {}
  if (sink.done() != d.size || sink.digest() != d.digest)
    throw Error(Error::Kind::Corrupt, s.ref().str() + ": GET blob " + d.digest + ": the bytes received (" +
                                          std::to_string(sink.done()) +
                                          ") do not match the digest and size the manifest gives");
}

LayerStore::LayerStore(const std::string& cacheFolder) : folder_(cacheFolder + "/blobs/sha256") {
  files::makeFolders(folder_);
}

std::string LayerStore::path(const std::string& digest) const { return folder_ + "/" + digest.substr(7); }

bool LayerStore::has(const Descriptor& d) const {
  UniqueFd f(::open(path(d.digest).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  return ownRegular(f.get(), static_cast<int64_t>(d.size));
}

std::string LayerStore::ensure(Session& s, const Descriptor& d, ByteCounter& progress) {
  const std::string done = path(d.digest), partial = done + ".partial";
  if (has(d)) return ::utimensat(AT_FDCWD, done.c_str(), nullptr, AT_SYMLINK_NOFOLLOW), done;
  UniqueFd f(::open(partial.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!ownRegular(f.get())) throw Error(Error::Kind::Io, "registry cache: " + partial + ": not a file of yours");
  while (::flock(f.get(), LOCK_EX) != 0 && errno == EINTR) {}  // another process fetching it: wait
  if (has(d)) return done;                                     // it finished meanwhile
  PartialFile sink(f.get(), partial, d.size);
  progress.add(sink.done());
  // Bytes that do not give the digest are never resumed: dropped, and when an earlier run's bytes
  // were part of them (they may be what broke), the whole blob is fetched once more.
  for (bool resumed = sink.done() > 0;; resumed = false) {
    try {
      fetchBlob(s, d, sink, progress);
      break;
    } catch (const Error& e) {
      if (e.kind() != Error::Kind::Corrupt) throw;  // a transfer that failed: the next run resumes it
      if (!resumed) ::unlink(partial.c_str());
      if (!resumed) throw;
      sink.restart();
    }
  }
  if (::rename(partial.c_str(), done.c_str()) != 0)
    throw Error(Error::Kind::Io, "registry cache: " + done + ": cannot rename into place (" + errnoText() + ")");
  return done;
}

size_t LayerStore::dropDamaged(const std::set<std::string>& digests) const {
  size_t dropped = 0;
  for (const std::string& d : digests) {
    const std::string p = path(d);
    UniqueFd f(::open(p.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (f.get() < 0 || ::fstat(f.get(), &st) != 0) continue;
    bool ok = false;
    try {
      ok = sha256OfRanges(f.get(), p, {{0, static_cast<uint64_t>(st.st_size)}}) == d;
    } catch (const Error&) {}
    if (!ok && ::unlink(p.c_str()) == 0) ++dropped;
  }
  return dropped;
}

namespace {

struct CacheFile {
  std::string path;
  uint64_t bytes;
  int64_t mtime;
};

// The regular files of `folder` (one level), with their allocated size and last use.
void listFiles(const std::string& folder, std::vector<CacheFile>& out) {
  DIR* dir = ::opendir(folder.c_str());
  if (!dir) return;
  while (const dirent* e = ::readdir(dir)) {
    const std::string p = folder + "/" + e->d_name;
    struct stat st {};
    if (e->d_name[0] == '.' || ::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid())
      continue;
    out.push_back({p, static_cast<uint64_t>(st.st_blocks) * 512, static_cast<int64_t>(st.st_mtime)});
  }
  ::closedir(dir);
}

// A .partial that a running fetch holds is left alone.
bool inUse(const std::string& path) {
  if (path.size() < 8 || path.compare(path.size() - 8, 8, ".partial") != 0) return false;
  UniqueFd f(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  return f.get() >= 0 && ::flock(f.get(), LOCK_EX | LOCK_NB) != 0;
}

}  // namespace

void trimCache(const std::string& cacheFolder, uint64_t maxBytes, const std::set<std::string>& keep) {
  std::vector<CacheFile> all;
  listFiles(cacheFolder, all);
  listFiles(cacheFolder + "/blobs/sha256", all);
  uint64_t total = 0;
  for (const CacheFile& f : all) total += f.bytes;
  std::sort(all.begin(), all.end(), [](const CacheFile& a, const CacheFile& b) { return a.mtime < b.mtime; });
  for (const CacheFile& f : all) {
    if (total <= maxBytes) break;
    if (keep.count(f.path) || inUse(f.path) || ::unlink(f.path.c_str()) != 0) continue;
    total -= f.bytes;
  }
}

}  // namespace trtrace::registry
