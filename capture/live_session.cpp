// The live session and NVIDIA's shim C interface (live_session.h; docs/json-bin-layout.md).
#include "live_session.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

#include "session.h"

namespace trtrace::capture {
namespace {

std::mutex gApiMu;  // orders the setter against the session's start
std::string gPendingJson;
bool gPendingSet = false;
std::atomic<Session*> gLive{nullptr};
std::atomic<pid_t> gOwnerPid{0};  // the process whose session this memory holds

// Why `p` cannot name a JSON file ("" when it can): empty, a folder, or in no existing folder.
std::string unusableJsonPath(const std::string& p) {
  if (p.empty() || p.back() == '/') return "not a file name";
  const size_t slash = p.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : p.substr(0, slash);
  return ::access(dir.c_str(), F_OK) != 0 ? "no directory " + dir : "";
}

}  // namespace

namespace live {

void start(Session* s, Config& c) {
  std::lock_guard<std::mutex> lk(gApiMu);
  if (gPendingSet) c.outputJson = gPendingJson;  // trtShimSetOutputJsonFile wins over the environment
  gOwnerPid = getpid();
  gLive = s;
}

void ownedByThisProcess() { gOwnerPid = getpid(); }

Session* own() {
  Session* s = gLive.load();
  return s && gOwnerPid.load() == getpid() ? s : nullptr;
}

}  // namespace live

bool Session::setOutputJson(const char* path) noexcept {
  try {
    const std::string p = path ? path : "";
    if (const std::string why = unusableJsonPath(p); !why.empty()) {
      std::fprintf(stderr, "trtrace: error: trtShimSetOutputJsonFile('%s'): %s; not changed\n", p.c_str(), why.c_str());
      return false;
    }
    std::lock_guard<std::mutex> lk(gApiMu);
    if (Session* s = gLive.load()) return s->changeOutputJson(p);
    gPendingJson = p;
    gPendingSet = true;
    return true;
  } catch (...) {  // out of memory: the path stays as it was
    return false;
  }
}

size_t Session::outputJson(char* buf, size_t size) noexcept {
  try {
    std::string path;
    {
      std::lock_guard<std::mutex> lk(gApiMu);
      if (Session* s = gLive.load()) {
        path = s->outputJsonPath();
      } else {
        const char* v = processEnv("TRT_SHIM_OUTPUT_JSON_FILE");
        path = gPendingSet ? gPendingJson : v ? v : "";
      }
    }
    if (buf && size) std::snprintf(buf, size, "%s", path.c_str());
    return path.size();
  } catch (...) {
    if (buf && size) buf[0] = 0;
    return 0;
  }
}

}  // namespace trtrace::capture
