// Replay from a reference: the trace pulled whole into a private, content-addressed cache folder,
// which every reading tool then opens as a file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "pull_internal.h"
#include "trtrace/error.h"
#include "trtrace/files.h"
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

// The folder made (0700) if missing, then held to the decode cache's rule: a folder of this user
// that no other user may enter or write (a file found there is only as good as the folder).
std::string privateFolder() {
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

}  // namespace

bool isReference(std::string_view arg) { return arg.substr(0, 6) == "oci://"; }

std::string pullCached(const Reference& ref, const std::string& label) {
  const std::string folder = privateFolder();
  Session s(ref, optionsFromEnv(label), "pull");
  const Resolved r = resolve(s);
  const std::string path = folder + "/" + r.artifact.fileDigest.substr(7) + ".trtrace";
  if (!cachedMatches(path, r.artifact)) fetchInto(s, r, path);
  return path;
}

}  // namespace trtrace::registry
