// Decode cache: compressed blobs decoded once, in parallel, into a file mapped read-only (see
// decode_cache.h and docs/design.md, "Decode cache").
//
// File layout (little-endian): a 64-byte CacheHeader at 0, then from offset 4096 the bytes of every
// blob of the trace (decoded; the raw ones copied), in the order their blocks lie in the trace, each
// at a 4 KiB boundary (under 64 KiB: a 64-byte one): the weights lie as they do in a raw trace, in
// one mapping, in the capture's order and alignment (some builds depend on the relative addresses of their weights).
// The layout follows from the list of keys alone, so the header needs no table; the file is named by the XXH3-128 of
// that list, and every blob is checked against its key before it is trusted.
#include "decode_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <tuple>

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t on the stack
#include <xxhash.h>

#include "trtrace/error.h"
#include "trtrace/files.h"
#include "trtrace/format.h"
#include "trtrace/progress.h"

namespace trtrace {
namespace F = format;
using How = DecodeCacheReport::How;

const char* howName(How how) {
  switch (how) {
    case How::None: return "none";
    case How::Off: return "off";
    case How::Built: return "built";
    case How::Reused: return "reused";
    case How::Rebuilt: return "rebuilt";
    case How::Temp: return "temp";
  }
  return "none";
}

namespace {

std::string errnoText() { return std::strerror(errno); }

void warn(const std::string& what) { std::fprintf(stderr, "trtrace: warning: %s\n", what.c_str()); }

// What a progress line starts with: the tool, the trace.
std::string progressLabel(const std::string& trace) { return std::string(program_invocation_short_name) + " " + trace; }

uint64_t envNumber(const char* name, uint64_t dflt, uint64_t max) {
  const char* v = std::getenv(name);
  if (!v || !*v) return dflt;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*end || n == 0 || n > max) {
    warn(std::string(name) + "='" + v + "' is not a positive number; using " + std::to_string(dflt));
    return dflt;
  }
  return n;
}

}  // namespace

void DecodeCacheOptions::setMode(const std::string& spec) {
  if (spec == "off")
    mode = Mode::Off;
  else if (spec == "temp")
    mode = Mode::Temp;
  else if (spec.empty())
    throw Error(Error::Kind::Usage, "decode cache: an empty folder name (use a folder, temp or off)");
  else
    mode = Mode::Folder, folder = spec;
}

DecodeCacheOptions DecodeCacheOptions::fromEnv() {
  DecodeCacheOptions o;
  const char* spec = std::getenv("TRTRACE_DECODE_CACHE");
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (spec && *spec)
    o.setMode(spec);
  else if (xdg && *xdg == '/')
    o.setMode(std::string(xdg) + "/trtrace");  // the spec ignores relative ones
  else if (home && *home)
    o.setMode(std::string(home) + "/.cache/trtrace");
  o.maxBytes = envNumber("TRTRACE_DECODE_CACHE_MB", 20480, uint64_t(1) << 40) << 20;
  o.threads = static_cast<unsigned>(
      envNumber("TRTRACE_DECODE_THREADS", std::max(1u, std::thread::hardware_concurrency()), 1024));
  return o;
}

namespace detail {

constexpr uint64_t kDataStart = 4096;  // the first blob's offset

struct Layout {                   // where each blob lies in the file
  std::vector<size_t> blobs;      // indexes into the reader's blobs, in file order
  std::vector<uint64_t> offsets;  // where each lies in the file
  uint64_t fileLength = kDataStart, rawBytes = 0;
  Hash128 key;
};

namespace {

constexpr char kMagic[8] = {'T', 'R', 'D', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kVersion = 1;

struct CacheHeader {      // 64 B at offset 0
  char magic[8];          // "TRDCACHE"
  uint32_t version;       // 1
  uint32_t reserved0;     // 0
  uint64_t blobCount;     // blobs of the trace
  uint64_t keyLo, keyHi;  // XXH3-128 of their (hash lo, hash hi, length) list, in file order
  uint64_t fileLength;    // bytes in the file
  uint8_t reserved[12];   // 0
  uint32_t headerCheck;   // check32 of the 60 bytes before it
};
static_assert(sizeof(CacheHeader) == 64);

// Every blob with bytes that a call uses (`used`, by index), in the order they lie in the trace (the
// order the capture first saw them), when at least one of them is compressed; none otherwise (a raw
// trace is read in place). A blob no call uses is never decoded: it would cost time, memory and
// disk by what its record declares.
Layout layoutOf(const std::vector<BlobInfo>& all, const std::vector<bool>& used) {
  Layout L;
  for (size_t i = 0; i < all.size(); ++i)
    if (used[i] && !all[i].lost) L.blobs.push_back(i);  // a Lost blob has no bytes to cache (it reads as zeros)
  if (std::none_of(L.blobs.begin(), L.blobs.end(), [&](size_t i) { return all[i].compressed; })) return Layout{};
  std::sort(L.blobs.begin(), L.blobs.end(), [&](size_t a, size_t b) { return all[a].offset < all[b].offset; });
  std::vector<uint64_t> words;
  for (size_t i : L.blobs) {
    const uint64_t len = all[i].ref.length, align = len < F::kSmallBlobMax ? F::kSmallBlobAlign : F::kBlobAlign;
    L.fileLength = (L.fileLength + align - 1) / align * align;
    L.offsets.push_back(L.fileLength);
    L.fileLength += len;
    L.rawBytes += len;
    words.insert(words.end(), {all[i].ref.hash.lo, all[i].ref.hash.hi, len});
  }
  L.key = hash128(words.data(), words.size() * sizeof(uint64_t));
  return L;
}

CacheHeader headerOf(const Layout& L) {
  CacheHeader h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.blobCount = L.blobs.size();
  h.keyLo = L.key.lo, h.keyHi = L.key.hi;
  h.fileLength = L.fileLength;
  h.headerCheck =
      static_cast<uint32_t>(XXH3_64bits(&h, offsetof(CacheHeader, headerCheck)));  // low 32 bits, as the trace's
  return h;
}

// Runs work(k) for every k in [0, n) on `threads` threads; the calling thread reports `done()`
// bytes to `progress` meanwhile. The first exception a worker throws stops the rest and is rethrown.
void parallelFor(size_t n, unsigned threads, const std::function<void(size_t)>& work, Progress& progress,
                 const std::atomic<uint64_t>& done) {
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex mu;
  std::condition_variable cv;
  unsigned running = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(n)));
  std::vector<std::thread> pool;
  for (unsigned t = running; t > 0; --t)
    pool.emplace_back([&] {
      for (size_t k; (k = next.fetch_add(1)) < n;) {
        try {
          work(k);
        } catch (...) {
          std::lock_guard<std::mutex> lk(mu);
          if (!failure) failure = std::current_exception();
          next = n;
        }
      }
      std::lock_guard<std::mutex> lk(mu);
      --running;
      cv.notify_all();
    });
  progress.update(done);  // shown from the start when asked for every report (an interval of 0)
  {
    std::unique_lock<std::mutex> lk(mu);
    while (!cv.wait_for(lk, std::chrono::milliseconds(100), [&] { return running == 0; })) progress.update(done);
  }
  for (auto& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

// The order to work in: largest blobs first, so the threads finish together.
std::vector<size_t> bySize(const Layout& L, const std::vector<BlobInfo>& all) {
  std::vector<size_t> order(L.blobs.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return all[L.blobs[a]].ref.length > all[L.blobs[b]].ref.length; });
  return order;
}

void pwriteAll(int fd, const std::byte* p, uint64_t n, uint64_t off, const std::string& what) {
  while (n) {
    const ssize_t w = ::pwrite(fd, p, n, static_cast<off_t>(off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw Error(Error::Kind::Io, what + ": write failed (" + (w < 0 ? errnoText() : "no space") + ")");
    p += w, n -= static_cast<uint64_t>(w), off += static_cast<uint64_t>(w);
  }
}

// "" when every blob of the mapped file matches its key; else the first that does not.
std::string checkAll(const Reader& r, const Layout& L, const std::byte* map, unsigned threads) {
  std::atomic<uint64_t> done{0};
  std::mutex mu;
  std::string bad;
  Progress progress(progressLabel(r.path()), "checking the decode cache", L.rawBytes);
  const auto order = bySize(L, r.blobs());
  parallelFor(
      order.size(), threads,
      [&](size_t k) {
        const size_t j = order[k];
        const BlobRef& ref = r.blobs()[L.blobs[j]].ref;
        if (files::hashReleasing({map, L.fileLength}, L.offsets[j], ref.length, &done) == ref.hash) return;
        std::lock_guard<std::mutex> lk(mu);
        if (bad.empty())
          bad = blobName(ref) + " at offset " + std::to_string(L.offsets[j]) + " does not match its hash";
      },
      progress, done);
  // Threads work largest blob first, not in file order: one's faults map neighbours (fault-around)
  // that another already released. Whatever is left goes now.
  files::releaseAround({map, L.fileLength}, 0, L.fileLength);
  return bad;
}

// Decodes (or copies) every blob of L from the trace into fd at its offset, the trace's pages
// released as it goes; returns the offsets per blob of the index, kNone for one that does not give
// its key (damaged in the trace: reported when a call uses it). Throws Error (Io) for the file.
constexpr uint64_t kReleaseStep = 1 << 20;  // trace pages released per step while a blob decodes

std::vector<uint64_t> decodeAll(const Reader& r, const Layout& L, int fd, unsigned threads, const std::string& what,
                                uint64_t& failed) {
  const std::vector<BlobInfo>& all = r.blobs();
  std::vector<uint64_t> offsets(all.size(), DecodeCache::kNone);
  std::atomic<uint64_t> done{0}, bad{0};
  Progress progress(progressLabel(r.path()), "decoding weights", L.rawBytes);
  const auto order = bySize(L, all);
  parallelFor(
      order.size(), threads,
      [&](size_t k) {
        const size_t j = order[k], i = L.blobs[j];
        const BlobInfo& bi = all[i];
        try {
          // The trace's pages behind the chunks already decoded go as the blob goes, not at its end (a
          // 32 MiB blob would hold 32 MiB per thread): the chunks before `off` took about that share
          // of the stored bytes (a guess past them is only read again).
          uint64_t released = bi.offset;
          const Hash128 h = r.streamBlob(bi.ref, [&](const std::byte* p, uint64_t off, uint64_t n) {
            pwriteAll(fd, p, n, L.offsets[j] + off, what);
            done += n;
            const uint64_t consumed =
                bi.dataOffset +
                (bi.ref.length ? uint64_t(double(bi.storedSize) * double(off) / double(bi.ref.length)) : 0);
            if (consumed >= released + kReleaseStep) {
              files::releaseAround(r.mapping(), released, consumed);
              released = consumed;
            }
          });
          files::releaseAround(r.mapping(), bi.offset, bi.dataOffset + bi.storedSize);  // the block read
          if (h == bi.ref.hash)
            offsets[i] = L.offsets[j];
          else
            ++bad;
        } catch (const Error& e) {
          if (e.kind() == Error::Kind::Io) throw;  // the cache file's, not the trace's
          ++bad;
        }
      },
      progress, done);
  files::releaseAround(r.mapping(), 0, r.mapping().size());  // as checkAll: what the threads' faults left mapped
  failed = bad;
  return offsets;
}

uint64_t freeBytes(int fd) {
  struct statvfs v {};
  return ::fstatvfs(fd, &v) == 0 ? uint64_t(v.f_bavail) * v.f_frsize : 0;
}

// Room for `need` bytes beside what is there, with 512 MiB to spare; else why not.
std::string roomFor(int fd, uint64_t need, const std::string& where) {
  const uint64_t spare = uint64_t(512) << 20, have = freeBytes(fd);
  if (have >= need + spare) return "";
  return where + " has " + humanBytes(double(have)) + " free, the decoded weights need " + humanBytes(double(need));
}

// Why a file of `length` bytes cannot be written: over the process's file size limit (`ulimit -f`),
// where the write would raise SIGXFSZ, whose default action kills. "" when it fits.
std::string overFileLimit(uint64_t length) {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || length <= rl.rlim_cur) return "";
  return "the decoded weights (" + humanBytes(double(length)) + ") exceed the file size limit of " +
         humanBytes(double(rl.rlim_cur)) + " (ulimit -f)";
}

// The trust model (docs/design.md, "Decode cache"): what the folder holds is used only when no other
// user can have made or changed it: the folder and the file are owned by this process's effective
// user, with no access for group or others. Then no other user can create, replace, rewrite or cut
// a file there (a SIGBUS or a wrong engine); this user can, as with any of its own files.
// Why `st` is not private to this user; "" when it is.
std::string notPrivate(const struct stat& st) {
  const uid_t me = ::geteuid();
  if (st.st_uid != me)
    return "owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " + std::to_string(me) + ")";
  if ((st.st_mode & 077) == 0) return "";
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", unsigned(st.st_mode & 07777));
  return std::string("mode ") + mode + " lets other users in";
}

// The folder opened when it is private; -1 with `why` when it cannot be opened, or is not.
// Everything after is relative to this descriptor: the folder checked is the one used.
int openPrivateFolder(const std::string& folder, std::string& why) {
  const int dfd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct stat st {};
  if (dfd < 0 || ::fstat(dfd, &st) != 0) {
    why = folder + ": cannot open (" + errnoText() + ")";
    if (dfd >= 0) ::close(dfd);
    return -1;
  }
  why = notPrivate(st);
  if (why.empty()) return dfd;
  why = folder + ": " + why + ": a cache folder must be private (yours, mode 0700)";
  ::close(dfd);
  return -1;
}

// The folder, made if missing (mode 0700) and opened as openPrivateFolder does.
int openFolder(const std::string& folder, std::string& why) {
  try {
    files::makeFolders(folder);
  } catch (const Error& e) {
    why = e.what();
    return -1;
  }
  return openPrivateFolder(folder, why);
}

// The cache file `name` of the folder dfd, opened when it may be trusted to stay as it is checked:
// a regular file (a link is not followed, a FIFO not waited on) private to this user. -1 otherwise,
// with `why` ("" when there is no such file).
int openCacheFile(int dfd, const std::string& name, const std::string& path, std::string& why) {
  const int fd = ::openat(dfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP)
      why = path + ": a symbolic link: not followed";
    else if (errno != ENOENT)
      why = path + ": cannot open (" + errnoText() + ")";
    return -1;
  }
  struct stat st {};
  std::string bad;
  if (const char* kind = files::specialKind(fd))
    bad = std::string("not a regular file (") + kind + "): not used";
  else if (::fstat(fd, &st) != 0)
    bad = errnoText();
  else if (bad = notPrivate(st); !bad.empty())
    bad += ": not trusted";
  if (bad.empty()) return fd;
  why = path + ": " + bad;
  ::close(fd);
  return -1;
}

bool ownName(const std::string& n, bool* temp) {
  const size_t dot = n.find(".tdc");
  if (dot != 32 || n.find_first_not_of("0123456789abcdef") != 32) return false;
  *temp = n.size() > 36;
  return n.size() == 36 || n.compare(36, 5, ".tmp.") == 0;
}

// A file of the cache's own in a folder: named as the cache names its files (ownName), a regular
// file (a link is not followed) owned by this user. Anything else there is not the cache's.
struct OwnFile {
  std::string name;
  struct stat st;
  bool temp;  // a temporary name: a file being written, or left by a process that died
  uint64_t diskBytes() const { return uint64_t(st.st_blocks) * 512; }              // what the bound counts
  bool staleTemp() const { return temp && st.st_mtime < ::time(nullptr) - 3600; }  // its writer is gone
};

// The cache's own files in the folder dfd, least recently used first (by mtime: a build or a reuse
// sets it), then by name. Throws Error (Io) when the folder cannot be read.
std::vector<OwnFile> ownFiles(int dfd, const std::string& folder) {
  const int own = ::fcntl(dfd, F_DUPFD_CLOEXEC, 0);  // closedir closes it
  DIR* d = own >= 0 ? ::fdopendir(own) : nullptr;
  if (!d) {
    if (own >= 0) ::close(own);
    throw Error(Error::Kind::Io, folder + ": cannot read (" + errnoText() + ")");
  }
  ::rewinddir(d);
  std::vector<OwnFile> files;
  for (dirent* e; (e = ::readdir(d));) {
    OwnFile f{e->d_name, {}, false};
    if (ownName(f.name, &f.temp) && ::fstatat(dfd, e->d_name, &f.st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(f.st.st_mode) && f.st.st_uid == ::geteuid())
      files.push_back(std::move(f));
  }
  ::closedir(d);
  auto key = [](const OwnFile& f) { return std::tie(f.st.st_mtim.tv_sec, f.st.st_mtim.tv_nsec, f.name); };
  std::sort(files.begin(), files.end(), [&](const OwnFile& a, const OwnFile& b) { return key(a) < key(b); });
  return files;
}

// Removes the least recently used cache files of the folder dfd (and stale temporaries) until
// `need` more bytes fit under `maxBytes`. `keep` (a name) stays.
void evict(int dfd, uint64_t need, uint64_t maxBytes, const std::string& keep) {
  std::vector<OwnFile> files;
  try {
    files = ownFiles(dfd, "");
  } catch (const Error&) {
    return;  // an unreadable folder: the write that follows says so
  }
  uint64_t total = 0;
  std::vector<const OwnFile*> lru;
  for (const OwnFile& f : files) {
    if (f.name == keep) continue;
    if (f.staleTemp())
      ::unlinkat(dfd, f.name.c_str(), 0);
    else if (!f.temp)
      total += f.diskBytes(), lru.push_back(&f);
  }
  for (const OwnFile* f : lru) {
    if (total + need <= maxBytes) break;
    if (::unlinkat(dfd, f->name.c_str(), 0) == 0) total -= std::min(total, f->diskBytes());
  }
}

// The trace that uses the cache file fd, recorded beside it for `trtrace cache list` (an extended
// attribute: the file's bytes stay the layout's). Where the file system has none, nothing is.
constexpr const char* kTraceAttr = "user.trtrace.trace";

void recordTrace(int fd, const std::string& trace) {
  char full[PATH_MAX];
  const std::string path = ::realpath(trace.c_str(), full) ? std::string(full) : trace;
  ::fsetxattr(fd, kTraceAttr, path.data(), path.size(), 0);
}

// When the folder's cache files exceed kDecodeCacheAdviceBytes: one line saying so, and how to shrink it.
std::string adviceFor(int dfd, const DecodeCacheOptions& o) {
  uint64_t total = 0, n = 0;
  try {
    for (const OwnFile& f : ownFiles(dfd, o.folder))
      if (!f.temp) total += f.diskBytes(), ++n;
  } catch (const Error&) { return ""; }
  if (total <= kDecodeCacheAdviceBytes) return "";
  return o.folder + " holds " + humanBytes(double(total)) + " in " + std::to_string(n) + " files (over " +
         humanBytes(double(kDecodeCacheAdviceBytes)) +
         "): `trtrace cache clear` empties it; TRTRACE_DECODE_CACHE_MB bounds it (now " +
         std::to_string(o.maxBytes >> 20) + ")";
}

}  // namespace

DecodeCache::~DecodeCache() {
  if (map_) ::munmap(const_cast<std::byte*>(map_), size_);
  if (fd_ >= 0) ::close(fd_);
}

const std::byte* DecodeCache::find(size_t index) const {
  return index < offsets_.size() && offsets_[index] != kNone ? map_ + offsets_[index] : nullptr;
}

// The whole file `fd` mapped read-only (fd is kept, or closed with the nullptr when it cannot be).
std::unique_ptr<DecodeCache> DecodeCache::mapped(int fd, uint64_t length, std::vector<uint64_t> offsets) {
  void* p = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return ::close(fd), nullptr;
  std::unique_ptr<DecodeCache> c(new DecodeCache);
  c->map_ = static_cast<const std::byte*>(p), c->size_ = length, c->fd_ = fd, c->offsets_ = std::move(offsets);
  return c;
}

// Decodes into the new file fd (sized first); nullptr and `note` when the file fails.
std::unique_ptr<DecodeCache> DecodeCache::build(const Reader& r, const Layout& L, int fd, unsigned threads,
                                                const std::string& what, DecodeCacheReport& rep) {
  try {
    if (::ftruncate(fd, static_cast<off_t>(L.fileLength)) != 0)
      throw Error(Error::Kind::Io, what + ": cannot size (" + errnoText() + ")");
    auto offsets = decodeAll(r, L, fd, threads, what, rep.failed);
    const CacheHeader h = headerOf(L);
    pwriteAll(fd, reinterpret_cast<const std::byte*>(&h), sizeof h, 0, what);
    const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) throw Error(Error::Kind::Io, what + ": " + errnoText());
    auto c = mapped(dup, L.fileLength, std::move(offsets));
    if (!c) throw Error(Error::Kind::Io, what + ": cannot map (" + errnoText() + ")");
    return c;
  } catch (const Error& e) {
    rep.note = e.what();
    return nullptr;
  }
}

// A file of the folder that matches L (its header), hashed again unless trusted; nullptr and
// `note` when there is none or it does not check out.
std::unique_ptr<DecodeCache> DecodeCache::reuse(const Reader& r, const Layout& L, int dfd, const std::string& name,
                                                const std::string& path, const DecodeCacheOptions& o,
                                                DecodeCacheReport& rep) {
  const int fd = openCacheFile(dfd, name, path, rep.note);
  if (fd < 0) return nullptr;
  CacheHeader h{}, want = headerOf(L);
  struct stat st {};
  if (::pread(fd, &h, sizeof h, 0) != sizeof h || std::memcmp(&h, &want, sizeof h) != 0 || ::fstat(fd, &st) != 0 ||
      uint64_t(st.st_size) != L.fileLength) {
    rep.note = path + ": header or length does not match the trace";
    ::close(fd);
    return nullptr;
  }
  ::futimens(fd, nullptr);  // used now: the last to be evicted
  recordTrace(fd, r.path());
  std::vector<uint64_t> offsets(r.blobs().size(), kNone);
  for (size_t j = 0; j < L.blobs.size(); ++j) offsets[L.blobs[j]] = L.offsets[j];
  auto c = mapped(fd, L.fileLength, std::move(offsets));
  if (!c || !o.verify) return c;
  rep.note = checkAll(r, L, c->map_, rep.threads);
  if (!rep.note.empty()) rep.note = path + ": " + rep.note;
  return rep.note.empty() ? std::move(c) : nullptr;
}

// The cache in o.folder when the folder is private (else nullptr and `note`): reused, or (re)built.
std::unique_ptr<DecodeCache> DecodeCache::inFolder(const Reader& r, const Layout& L, const DecodeCacheOptions& o,
                                                   DecodeCacheReport& rep) {
  const int dfd = openFolder(o.folder, rep.note);
  if (dfd < 0) return nullptr;
  auto c = inFolderAt(r, L, o, dfd, rep);
  if (c) rep.advice = adviceFor(dfd, o);
  ::close(dfd);
  return c;
}

// The cache in the open folder dfd: reused, or (re)built under a temporary name and renamed into
// place; a temporary that cannot be renamed serves as a nameless file.
std::unique_ptr<DecodeCache> DecodeCache::inFolderAt(const Reader& r, const Layout& L, const DecodeCacheOptions& o,
                                                     int dfd, DecodeCacheReport& rep) {
  const std::string name = toHex(L.key) + ".tdc", path = o.folder + "/" + name;
  if (auto c = reuse(r, L, dfd, name, path, o, rep)) return rep.how = How::Reused, rep.path = path, std::move(c);
  const bool stale = !rep.note.empty();
  if (L.fileLength > o.maxBytes) {
    rep.note = "the decoded weights (" + humanBytes(double(L.fileLength)) + ") exceed the cache's bound of " +
               humanBytes(double(o.maxBytes)) + " (TRTRACE_DECODE_CACHE_MB)";
    return nullptr;
  }
  std::string temp;
  int fd = -1;
  try {
    evict(dfd, L.fileLength, o.maxBytes, name);
    fd = files::createUniqueAt(dfd, name + ".tmp.", &temp, 0600, path);
  } catch (const Error& e) {
    rep.note = e.what();
    return nullptr;
  }
  std::string full = roomFor(fd, L.fileLength, o.folder);
  std::unique_ptr<DecodeCache> c = full.empty() ? build(r, L, fd, rep.threads, path, rep) : nullptr;
  if (c) recordTrace(fd, r.path());
  ::close(fd);
  if (!full.empty()) rep.note = full;
  // A cache with a blob left out (damaged in the trace) is not kept: it would never check out.
  if (c && rep.failed)
    rep.note = path + ": not kept (" + std::to_string(rep.failed) + " blobs of the trace do not decode)";
  else if (c && ::renameat(dfd, temp.c_str(), dfd, name.c_str()) != 0)
    rep.note = path + ": cannot rename into place (" + errnoText() + ")";
  else if (c)
    return rep.how = stale ? How::Rebuilt : How::Built, rep.path = path, std::move(c);
  ::unlinkat(dfd, temp.c_str(), 0);
  if (c) rep.how = How::Temp;
  return c;
}

std::unique_ptr<DecodeCache> DecodeCache::open(const Reader& r, const DecodeCacheOptions& o, DecodeCacheReport& rep) {
  const Layout L = layoutOf(r.blobs(), usedBlobs(r, o.network));
  rep = DecodeCacheReport{};
  rep.blobs = L.blobs.size(), rep.bytes = L.rawBytes;
  rep.threads = o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  if (L.blobs.empty()) return nullptr;
  if (o.mode == DecodeCacheOptions::Mode::Off) return rep.how = How::Off, nullptr;
  // Checked before any file is made: past the limit, the write would kill the process (SIGXFSZ).
  if (rep.note = overFileLimit(L.fileLength); !rep.note.empty()) return rep.how = How::Off, nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<DecodeCache> c = o.mode == DecodeCacheOptions::Mode::Folder ? inFolder(r, L, o, rep) : nullptr;
  if (!c) {  // a nameless file in $TMPDIR
    try {
      const int fd = files::anonymousFile();
      std::string full = roomFor(fd, L.fileLength, "the temporary folder");
      if (full.empty())
        c = build(r, L, fd, rep.threads, "decode cache (temporary file)", rep);
      else
        rep.note += (rep.note.empty() ? "" : "; ") + full;
      ::close(fd);
    } catch (const Error& e) { rep.note += (rep.note.empty() ? "" : "; ") + std::string(e.what()); }
    rep.how = c ? How::Temp : How::Off;
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

}  // namespace detail

// ---- trtrace cache: the folder's files, as the player sees and bounds them --------------------------
namespace {

// The folder, trusted as the player trusts it (Error with its line otherwise); -1 when there is none.
int openForListing(const std::string& folder) {
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0 && errno == ENOENT) return -1;
  std::string why;
  const int dfd = detail::openPrivateFolder(folder, why);
  if (dfd < 0) throw Error(Error::Kind::Io, "decode cache: " + why);
  return dfd;
}

// The trace recorded on the file `name` of dfd (recordTrace); "" when there is none.
std::string recordedTrace(int dfd, const std::string& name) {
  const int fd = ::openat(dfd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  char buf[PATH_MAX];
  const ssize_t n = ::fgetxattr(fd, detail::kTraceAttr, buf, sizeof buf);
  ::close(fd);
  return n > 0 ? std::string(buf, size_t(n)) : "";
}

// The folder's own files (ownFiles), each described; `keep` chooses which.
template <class Keep>
std::vector<DecodeCacheFile> described(int dfd, const std::string& folder, Keep keep) {
  std::vector<DecodeCacheFile> out;
  for (const detail::OwnFile& f : detail::ownFiles(dfd, folder))
    if (keep(f)) out.push_back({f.name, f.diskBytes(), int64_t(f.st.st_mtime), recordedTrace(dfd, f.name)});
  return out;
}

}  // namespace

std::vector<DecodeCacheFile> listDecodeCache(const std::string& folder) {
  const int dfd = openForListing(folder);
  if (dfd < 0) return {};
  try {
    auto files = described(dfd, folder, [](const detail::OwnFile& f) { return !f.temp; });
    ::close(dfd);
    return files;
  } catch (...) {
    ::close(dfd);
    throw;
  }
}

std::vector<DecodeCacheFile> clearDecodeCache(const std::string& folder) {
  const int dfd = openForListing(folder);
  if (dfd < 0) return {};
  std::vector<DecodeCacheFile> removed;
  try {
    // A temporary still being written belongs to a running replay: only a dead one's goes.
    for (DecodeCacheFile& f :
         described(dfd, folder, [](const detail::OwnFile& f) { return !f.temp || f.staleTemp(); })) {
      if (::unlinkat(dfd, f.name.c_str(), 0) != 0 && errno != ENOENT)
        throw Error(Error::Kind::Io, folder + "/" + f.name + ": cannot remove (" + errnoText() + ")");
      removed.push_back(std::move(f));
    }
  } catch (...) {
    ::close(dfd);
    throw;
  }
  ::close(dfd);
  return removed;
}

}  // namespace trtrace
