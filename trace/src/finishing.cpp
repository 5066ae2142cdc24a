// A trace being finished by another process: its marker, both sides (trtrace/finishing.h).
#include "trtrace/finishing.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>

#include "trtrace/error.h"
#include "trtrace/progress.h"
#include "trtrace/text.h"

namespace trtrace::finishing {
namespace {

std::atomic<bool> gWait{true};

constexpr size_t kMaxLog = 64 << 10;  // what a tool reads of a marker (untrusted: bounded)

bool writeAll(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t k = ::write(fd, s.data(), s.size());
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    s.remove_prefix(static_cast<size_t>(k));
  }
  return true;
}

int createMarker(const std::string& marker, ino_t* ino, pid_t capturePid) {
  std::string tmp = marker + ".XXXXXX";
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC | O_APPEND);  // O_EXCL, mode 0600
  if (fd < 0) return -1;
  struct stat st {};
  const bool ok = ::flock(fd, LOCK_SH) == 0 &&
                  writeAll(fd, "trtrace finisher log; capture pid " + std::to_string(capturePid) + "\n") &&
                  ::fstat(fd, &st) == 0 && ::link(tmp.c_str(), marker.c_str()) == 0;
  ::unlink(tmp.c_str());
  if (!ok) {
    ::close(fd);
    return -1;
  }
  ::fchmod(fd, 0644);
  *ino = st.st_ino;
  return fd;
}

// The file's bytes, at most kMaxLog of them.
std::string readLog(int fd) {
  std::string s(kMaxLog, '\0');
  size_t n = 0;
  while (n < s.size()) {
    const ssize_t k = ::pread(fd, s.data() + n, s.size() - n, static_cast<off_t>(n));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    n += static_cast<size_t>(k);
  }
  s.resize(n);
  return s;
}

// The number after `key` on the log's last line that has one (0: none, or out of range).
long lastNumberAfter(const std::string& log, std::string_view key) {
  long found = 0;
  for (size_t at = log.find(key); at != std::string::npos; at = log.find(key, at + 1)) {
    char* end = nullptr;
    const long v = std::strtol(log.c_str() + at + key.size(), &end, 10);
    if (end != log.c_str() + at + key.size() && v > 0 && v < (1L << 30)) found = v;
  }
  return found;
}

// The first logged failure's line ("<pid>: failed: ..."), escaped; "" when none.
std::string loggedFailure(const std::string& log) {
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);)
    if (line.find(": failed: ") != std::string::npos) return terminalText(line);
  return "";
}

bool alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

// Nobody holds the marker any more (we hold it exclusively): say why it is still there.
void reportLeftOver(const std::string& trace, int fd) {
  const std::string log = readLog(fd);
  const std::string shown = terminalText(trace);
  if (const std::string failure = loggedFailure(log); !failure.empty()) {
    std::fprintf(stderr, "trtrace: %s: its finisher failed (%s): the trace is its complete prefix\n", shown.c_str(),
                 failure.c_str());
    return;
  }
  if (alive(lastNumberAfter(log, "capture pid "))) return;  // the capture goes on: an open trace, as any
  std::fprintf(stderr,
               "trtrace: %s: its finisher (pid %ld) ended without completing it (killed?): the trace is its "
               "complete prefix\n",
               shown.c_str(), lastNumberAfter(log, "finisher pid "));
}

}  // namespace

std::string markerOf(const std::string& trace) { return trace + ".finishing"; }

int lockMarker(const std::string& trace, bool create, ino_t* ino, pid_t capturePid) {
  const std::string marker = markerOf(trace);
  if (create) return createMarker(marker, ino, capturePid);
  const int fd = ::open(marker.c_str(), O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  struct stat st {};
  if (fd < 0) return -1;
  if (::fstat(fd, &st) != 0 || st.st_ino != *ino || st.st_nlink == 0 || ::flock(fd, LOCK_SH) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void logToMarker(int fd, const std::string& line) {
  if (fd >= 0) writeAll(fd, std::to_string(::getpid()) + ": " + line + "\n");
}

void setWait(bool wait) { gWait = wait; }
bool waits() { return gWait; }

void await(const std::string& trace) {
  const int fd = ::open(markerOf(trace).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;  // no marker: no finisher
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {  // held: a finisher runs
    const long pid = lastNumberAfter(readLog(fd), "finisher pid ");
    const std::string shown = terminalText(trace);
    if (!gWait) {
      ::close(fd);
      throw Error(Error::Kind::Finishing, shown + ": still being finished by pid " + std::to_string(pid) +
                                              " (--no-wait); try again when it is done");
    }
    std::fprintf(stderr, "trtrace: %s: being finished by pid %ld: waiting for it (--no-wait: don't)\n", shown.c_str(),
                 pid);
    ElapsedPhase phase(shown, "waiting for its finisher");
    while (::flock(fd, LOCK_EX) != 0 && errno == EINTR) {}
  }
  if (::fstat(fd, &st) == 0 && st.st_nlink > 0) reportLeftOver(trace, fd);  // else: completed and removed
  ::close(fd);
}

}  // namespace trtrace::finishing
