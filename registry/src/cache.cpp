// Replay from a reference: the trace assembled in a private cache folder from the layer store
// (store.h), whole or with only the weights a tool needs, which the tool then opens as a file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>

#include "pull_internal.h"
#include "trtrace/error.h"
#include "trtrace/files.h"
#include "trtrace/reader.h"
#include "trtrace/registry.h"

namespace trtrace::registry {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string cacheFolder() {
  if (!env("TRTRACE_OCI_CACHE").empty()) return env("TRTRACE_OCI_CACHE");
  if (!env("XDG_CACHE_HOME").empty()) return env("XDG_CACHE_HOME") + "/trtrace/oci";
  if (!env("HOME").empty()) return env("HOME") + "/.cache/trtrace/oci";
  throw Error("registry cache: neither $TRTRACE_OCI_CACHE, $XDG_CACHE_HOME nor $HOME is set");
}

}  // namespace

// The folder made (0700) if missing, then held to the decode cache's rule: a folder of this user
// that no other user may enter or write (a file found there is only as good as the folder).
std::string privateCacheFolder() {
  const std::string folder = cacheFolder();
  files::makeFolders(folder);
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  const bool ok = fd >= 0 && ::fstat(fd, &st) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok) throw Error("registry cache: " + folder + ": cannot open (not a folder, or a link)");
  if (st.st_uid != ::geteuid() || (st.st_mode & 077)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw Error("registry cache: " + folder + ": mode " + mode +
                " or its owner lets other users in: a cache folder must be private (yours, mode 0700)");
  }
  return folder;
}

uint64_t cacheBound() {
  const std::string v = env("TRTRACE_OCI_CACHE_MB");
  char* end = nullptr;
  const unsigned long long mb = v.empty() ? 0 : std::strtoull(v.c_str(), &end, 10);
  if (!v.empty() && (end == v.c_str() || *end || mb == 0 || mb > (uint64_t(1) << 40))) {
    std::fprintf(stderr, "trtrace: TRTRACE_OCI_CACHE_MB=%s is not a size in MiB; using 20480\n", v.c_str());
    return uint64_t(20480) << 20;
  }
  return (mb ? mb : 20480ull) << 20;
}

namespace {

// A file found in the cache: a regular file of this user (never a link) whose bytes give `digest`.
bool cachedMatches(const std::string& path, const Artifact& a) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() &&
            static_cast<uint64_t>(st.st_size) == a.fileSize;
  try {
    ok = ok && sha256OfRanges(fd, path, {{0, a.fileSize}}) == a.fileDigest;
  } catch (const Error&) { ok = false; }
  ::close(fd);
  return ok;
}

Options optionsFromEnv(const std::string& label) {
  Options o;
  o.plainHttp = env("TRTRACE_REGISTRY_PLAIN_HTTP") == "1";
  o.caFile = env("TRTRACE_REGISTRY_CA_FILE");
  o.configFile = env("TRTRACE_REGISTRY_CONFIG");
  o.label = label;
  return o;
}

// A trace file of this process in the cache folder (unguessable name), removed when dropped.
struct TraceOfThisRun {
  std::string name;
  UniqueFd file;  // closed after the destructor's body
  explicit TraceOfThisRun(const std::string& prefix)
      : file(files::createUnique(prefix + ".", &name, 0600, "registry cache")) {}
  ~TraceOfThisRun() { ::unlink(name.c_str()); }
};

}  // namespace

bool isReference(std::string_view arg) { return arg.substr(0, 6) == "oci://"; }

namespace {

// The whole trace, assembled into the cache under the pushed file's digest.
CachedTrace wholeTrace(Session& s, const Resolved& r, LayerStore& store, const std::string& path) {
  std::set<std::string> pieces;
  for (const Piece& p : r.artifact.pieces) pieces.insert(p.digest);
  fetchLayers(s, store, layersOf(r.artifact, pieces));
  files::PendingOutputs outputs;
  const int fd = outputs.add(path);
  assembleChecked(s, r, store, fd, path);
  outputs.commit();
  return {path, false, nullptr};
}

// The pieces that hold the data of the blobs network `network`'s calls use (the trace's call log
// read from the partial file `path`).
std::set<std::string> piecesUsed(const Artifact& a, const std::string& path, int64_t network) {
  const std::unique_ptr<Reader> reader = Reader::open(path);
  const std::vector<bool> used = usedBlobs(*reader, network);
  std::map<uint64_t, const Piece*> at;
  for (const Piece& p : a.pieces) at[p.range.offset] = &p;
  std::set<std::string> out;
  for (size_t i = 0; i < used.size(); ++i)
    if (auto it = at.find(reader->blobs()[i].dataOffset); used[i] && it != at.end()) out.insert(it->second->digest);
  return out;
}

// A file of this process with the call log and the weights `need` asks for; the rest are holes.
CachedTrace partialTrace(Session& s, const Resolved& r, LayerStore& store, const std::string& whole, const Need& need) {
  fetchLayers(s, store, {r.artifact.log});
  auto file = std::make_shared<TraceOfThisRun>(whole);
  assemble(r.artifact, store, {}, file->file.get(), file->name, s.options().label);
  if (need.kind == Need::Kind::Network) {
    const std::set<std::string> pieces = piecesUsed(r.artifact, file->name, need.network);
    fetchLayers(s, store, layersOf(r.artifact, pieces));
    assemble(r.artifact, store, pieces, file->file.get(), file->name, s.options().label);
  }
  return {file->name, true, file};
}

}  // namespace

CachedTrace pullCached(const Reference& ref, const std::string& label, const Need& need) {
  const std::string folder = privateCacheFolder();
  Session s(ref, optionsFromEnv(label), "pull");
  const Resolved r = resolve(s);
  const std::string whole = folder + "/" + r.artifact.fileDigest.substr(7) + ".trtrace";
  if (cachedMatches(whole, r.artifact))
    return ::utimensat(AT_FDCWD, whole.c_str(), nullptr, AT_SYMLINK_NOFOLLOW), CachedTrace{whole, false, nullptr};
  LayerStore store(folder);
  CachedTrace t =
      need.kind == Need::Kind::Everything ? wholeTrace(s, r, store, whole) : partialTrace(s, r, store, whole, need);
  std::set<std::string> keep{t.path, store.path(r.artifact.log.digest)};
  for (const Piece& p : r.artifact.pieces) keep.insert(store.path(p.digest));
  trimCache(folder, cacheBound(), keep);
  return t;
}

}  // namespace trtrace::registry
