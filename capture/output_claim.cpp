// Claiming a capture's output names (output_claim.h).
#include "output_claim.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "trtrace/capture_names.h"
#include "trtrace/convert.h"
#include "trtrace/error.h"

namespace trtrace::capture {
namespace {

bool nameExists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 || errno != ENOENT;  // unknown: taken
}

}  // namespace

Claimed claimOutputs(const std::string& trace, const std::string& json, unsigned first, long pid) {
  for (unsigned k = first; k < kMaxOutputCandidates; ++k) {
    const std::string sfx = capture_names::suffix(k, pid);
    Claimed c{-1, trace + sfx, json.empty() ? "" : capture_names::jsonWithSuffix(json, sfx)};
    if (!c.json.empty() && (nameExists(c.json) || nameExists(convert::binPathFor(c.json)))) continue;
    c.fd = ::open(c.trace.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (c.fd >= 0) return c;
    if (errno != EEXIST) throw Error(Error::Kind::Io, c.trace + ": cannot create (" + std::strerror(errno) + ")");
  }
  throw Error(Error::Kind::Io, trace + ": " + std::to_string(kMaxOutputCandidates) +
                                   " names of this process are taken (" + trace + ".<pid>.<n>)");
}

}  // namespace trtrace::capture
