// trtrace::files (trtrace/files.h): input checks, output-is-not-an-input checks and atomic outputs,
// shared by every tool.
#include "trtrace/files.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

#include "trtrace/error.h"

namespace trtrace::files {
namespace {

std::string errnoText(int e) { return std::strerror(e); }

// The files this process opened as input, by (device, inode): no output may replace one of them.
struct Inputs {
  std::mutex mu;
  std::map<std::pair<dev_t, ino_t>, std::string> byId;
};
Inputs& inputs() {
  static Inputs* in = new Inputs;  // never destroyed: usable from exit-time code
  return *in;
}

// What a non-regular file is, for the message; nullptr for a regular file with real contents.
const char* specialKind(int fd, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return "a folder";
  if (S_ISFIFO(st.st_mode)) return "a FIFO";
  if (S_ISCHR(st.st_mode)) return "a character device";
  if (S_ISBLK(st.st_mode)) return "a block device";
  if (S_ISSOCK(st.st_mode)) return "a socket";
  if (!S_ISREG(st.st_mode)) return "not a regular file";
  struct statfs fs {};
  // Pseudo-files report a size that is not their content (0 or 4096).
  if (::fstatfs(fd, &fs) == 0 && (fs.f_type == PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC))
    return "a /proc or /sys file";
  return nullptr;
}

std::string folderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string randomSuffix() {
  unsigned char b[6] = {};
  if (::getrandom(b, sizeof b, 0) != static_cast<ssize_t>(sizeof b))
    throw Error(Error::Kind::Io, std::string("no random bytes for a temporary name (") + errnoText(errno) + ")");
  static const char kDigits[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  std::string s;
  for (unsigned char c : b) s += kDigits[c % 62], s += kDigits[(c / 62) % 62];
  return s;
}

}  // namespace

int openInput(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; regular files ignore it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(Error::Kind::Io, path + ": cannot open (" + errnoText(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw Error(Error::Kind::Io, path + ": cannot open (" + errnoText(e) + ")");
  }
  if (const char* kind = specialKind(fd, st)) {
    ::close(fd);
    throw Error(Error::Kind::Io, path + ": not a regular file (" + kind + ")");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  auto& in = inputs();
  std::lock_guard<std::mutex> lk(in.mu);
  in.byId.emplace(std::make_pair(st.st_dev, st.st_ino), path);
  return fd;
}

const char* specialKind(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) != 0 ? "unreadable" : specialKind(fd, st);
}

void checkOutput(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw Error(Error::Kind::Usage, path + ": is a folder (name the file to write)");
    auto& in = inputs();
    std::lock_guard<std::mutex> lk(in.mu);
    if (auto it = in.byId.find({st.st_dev, st.st_ino}); it != in.byId.end())
      throw Error(Error::Kind::Usage, path + ": is the input " + it->second + " (not overwriting it)");
  }
  if (::access(folderOf(path).c_str(), W_OK | X_OK) != 0)
    throw Error(Error::Kind::Io, path + ": cannot create (" + errnoText(errno) + ")");
}

int createUnique(const std::string& prefix, std::string* name, int mode, const std::string& what) {
  return createUniqueAt(AT_FDCWD, prefix, name, mode, what);
}

int createUniqueAt(int dirFd, const std::string& prefix, std::string* name, int mode, const std::string& what) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    std::string temp = prefix + randomSuffix();
    const int fd = ::openat(dirFd, temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd >= 0) {
      *name = std::move(temp);
      return fd;
    }
    if (errno != EEXIST) throw Error(Error::Kind::Io, what + ": cannot create (" + errnoText(errno) + ")");
  }
  throw Error(Error::Kind::Io, what + ": cannot create (no free temporary name)");
}

void makeFolders(const std::string& path) {
  for (size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
    const std::string part = path.substr(0, at);
    struct stat st {};
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
      throw Error(Error::Kind::Io, part + ": cannot create folder (" + errnoText(errno) + ")");
    if (::stat(part.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) throw Error(Error::Kind::Io, part + ": not a folder");
    if (at == std::string::npos) return;
  }
}

int PendingOutputs::add(const std::string& finalPath) {
  checkOutput(finalPath);
  std::string temp;
  const int fd = createUnique(finalPath + ".tmp.", &temp, 0666, finalPath);
  files_.push_back({std::move(temp), finalPath, fd});
  return fd;
}

void PendingOutputs::commit(bool durable) {
  for (auto& f : files_) {
    const int fd = std::exchange(f.fd, -1);
    const bool synced = !durable || ::fsync(fd) == 0;
    const int e = errno;
    if (::close(fd) != 0 || !synced || ::rename(f.temp.c_str(), f.final.c_str()) != 0)
      throw Error(Error::Kind::Io, f.final + ": cannot finish writing (" + errnoText(synced ? errno : e) + ")");
    f.temp.clear();  // renamed: nothing to remove
  }
}

PendingOutputs::~PendingOutputs() {
  for (auto& f : files_) {
    if (f.fd >= 0) ::close(f.fd);
    if (!f.temp.empty()) ::unlink(f.temp.c_str());
  }
}

void writeAtomically(const std::string& path, const void* data, size_t size) {
  PendingOutputs out;
  const int fd = out.add(path);
  const char* p = static_cast<const char*>(data);
  while (size) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(Error::Kind::Io, path + ": write failed (" + errnoText(errno) + ")");
    p += n;
    size -= static_cast<size_t>(n);
  }
  out.commit();
}

int memoryFile(const char* name) {
  const int fd = ::memfd_create(name, MFD_CLOEXEC);
  return fd >= 0 ? fd : anonymousFile();
}

int anonymousFile() {
  const char* env = std::getenv("TMPDIR");
  const std::string dir = env && *env ? env : "/tmp";
  int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0) return fd;
  if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
    throw Error(Error::Kind::Io, dir + ": cannot create a temporary file (" + errnoText(errno) + ")");
  for (int attempt = 0; attempt < 64; ++attempt) {  // no O_TMPFILE here: a random name, unlinked at once
    const std::string name = dir + "/trtrace." + randomSuffix();
    fd = ::open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::unlink(name.c_str());
      return fd;
    }
    if (errno != EEXIST) break;
  }
  throw Error(Error::Kind::Io, dir + ": cannot create a temporary file (" + errnoText(errno) + ")");
}

void releasePages(const void* data, size_t n) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t lo = (reinterpret_cast<uintptr_t>(data) + page - 1) & ~(page - 1);
  const uintptr_t hi = (reinterpret_cast<uintptr_t>(data) + n) & ~(page - 1);
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
}

void releaseAround(std::span<const std::byte> map, uint64_t lo, uint64_t hi) {
  // Windows are aligned in the address space; the mapping starts on a page, which is enough here.
  const uintptr_t start = reinterpret_cast<uintptr_t>(map.data()), end = start + map.size();
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  uintptr_t a = std::max(start, (start + lo) & ~(uintptr_t(kFaultAroundBytes) - 1));
  uintptr_t b = std::min(end, (start + hi + kFaultAroundBytes - 1) & ~(uintptr_t(kFaultAroundBytes) - 1));
  b = (b + page - 1) & ~(page - 1);  // the mapping's last page, partly past the file's end
  if (b > a) ::madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
}

Hash128 hashReleasing(std::span<const std::byte> map, uint64_t off, uint64_t n, std::atomic<uint64_t>* done,
                      const Piece& each) {
  constexpr uint64_t kStep = 4 << 20;
  StreamHash128 h;
  for (uint64_t at = 0; at < n; at += kStep) {
    const uint64_t step = std::min(kStep, n - at);
    h.update(map.data() + off + at, step);
    if (each) each(map.data() + off + at, at, step);
    releaseAround(map, off + at, off + at + step);
    if (done) *done += step;
  }
  return h.digest();
}

}  // namespace trtrace::files
