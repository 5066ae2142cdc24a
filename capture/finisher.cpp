// Finishing off the application's clock (finisher.h).
#include "finisher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <cstdio>
#include <string_view>
#include <thread>

#include "trtrace/error.h"
#include "trtrace/finishing.h"
#include "trtrace/progress.h"

namespace trtrace::capture {
namespace {

thread_local bool tForking = false;

// Whether a finisher said 'K' (done) before its pipe closed (it failed or was killed). Blocking:
// returns at its 'K', not at its end, which waits for the kernel to take down its copy of the
// application's address space.
bool saidDone(int fd) {
  char c;
  for (;;) {
    const ssize_t k = ::read(fd, &c, 1);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    if (c == 'K') return true;
  }
}

// The finisher leaves like a crashed process would, never through the application's handlers (the
// capture's own flush a fatal signal triggers would take locks of threads that are gone here).
void defaultSignals() {
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCHLD})
    ::signal(sig, SIG_DFL);
  ::signal(SIGPIPE, SIG_IGN);
}

// Every descriptor of the application's but `keep` closed, and 0-2 onto /dev/null: a pipeline or a
// harness that waits for the application's output to end does not wait for its finisher too.
void closeOthers(const std::vector<int>& keep) {
  std::vector<int> open;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (const dirent* e = ::readdir(d))
      if (e->d_name[0] >= '0' && e->d_name[0] <= '9') open.push_back(std::atoi(e->d_name));
    ::closedir(d);
  }
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd : open)
    if (fd != null && std::find(keep.begin(), keep.end(), fd) == keep.end()) {
      if (fd <= 2 && null >= 0)
        ::dup2(null, fd);
      else
        ::close(fd);  // the directory's own descriptor is already closed: EBADF, harmless
    }
  if (null > 2) ::close(null);
}

// A field of /proc/self/status in bytes ("VmRSS:\t  1234 kB"); 0 when absent.
uint64_t statusBytes(const std::string& status, const char* field) {
  const size_t at = status.find(std::string(field) + ":");
  return at == std::string::npos ? 0 : std::strtoull(status.c_str() + at + std::strlen(field) + 1, nullptr, 10) << 10;
}

std::string selfStatus() {
  std::string s(8192, '\0');
  const int fd = ::open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  const ssize_t n = fd >= 0 ? ::read(fd, s.data(), s.size()) : 0;
  if (fd >= 0) ::close(fd);
  s.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return s;
}

// TRTRACE_FINISHER_REPORT: one JSON line of this finisher's memory and time (bench/e2e.py). Its own
// memory is what it holds beyond the pages it shares with the application: RssAnon grown since the
// fork, and its peak RSS over its RSS at the fork.
void appendReport(const std::string& path, const std::string& start, double seconds, bool closes, bool ok) {
  const std::string end = selfStatus();
  char line[512];
  std::snprintf(line, sizeof line,
                "{\"pid\": %d, \"closes\": %s, \"ok\": %s, \"seconds\": %.3f, \"rss_at_fork\": %llu, "
                "\"peak_rss\": %llu, \"anon_at_fork\": %llu, \"anon_at_end\": %llu}\n",
                ::getpid(), closes ? "true" : "false", ok ? "true" : "false", seconds,
                static_cast<unsigned long long>(statusBytes(start, "VmRSS")),
                static_cast<unsigned long long>(statusBytes(end, "VmHWM")),
                static_cast<unsigned long long>(statusBytes(start, "RssAnon")),
                static_cast<unsigned long long>(statusBytes(end, "RssAnon")));
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!::write(fd, line, std::strlen(line));
  ::close(fd);
}

[[noreturn]] void exitNow(int code) {
  ::syscall(SYS_exit_group, code);
  __builtin_unreachable();
}

// The marker is removed by the finisher that completed the trace, if it is still the one on `fd`.
void removeMarker(const std::string& trace, int fd) {
  struct stat held {
  }, named{};
  const std::string m = finishing::markerOf(trace);
  if (::fstat(fd, &held) == 0 && ::lstat(m.c_str(), &named) == 0 && held.st_ino == named.st_ino &&
      held.st_dev == named.st_dev)
    ::unlink(m.c_str());
}

// The trace's path now, from its descriptor: the marker goes beside the file, wherever the
// application's working folder went since the capture named it (a relative name); `name` if the
// system does not say.
std::string whereIs(const Writer& w, const std::string& name) {
  char buf[4096];
  const std::string link = "/proc/self/fd/" + std::to_string(w.fileDescriptor());
  const ssize_t n = ::readlink(link.c_str(), buf, sizeof buf - 1);
  if (n <= 0 || buf[0] != '/' || std::string_view(buf, static_cast<size_t>(n)).ends_with(" (deleted)")) return name;
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace

bool Finishers::forkingFinisher() noexcept { return tForking; }

void Finishers::configure(const Config& c, bool jsonExport, Faults* faults) {
  enabled_ = c.finisher && !jsonExport && !c.flushEveryCall && !c.flushOnBuild;  // those stay synchronous
#if defined(__SANITIZE_ADDRESS__)
  enabled_ = false;  // GCC 12's ASan allocator is not fork-safe: a child can inherit its lock held
#endif
  minBytes_ = static_cast<uint64_t>(c.finisherMiB) << 20;
  faults_ = faults;
  report_ = c.finisherReport;
}

bool Finishers::wanted(uint64_t queued) const { return enabled_ && queued > 0 && queued >= minBytes_; }

bool Finishers::handOff(Writer& w, const std::string& trace) {
  reap();
  if (!wanted(w.pendingBlobBytes()) || w.reserveQueued() == 0) return false;
  fork(w, trace, false);
  return true;
}

pid_t Finishers::closing(Writer& w, const std::string& trace) {
  reap();
  if (failed_ || (running_.empty() && !wanted(w.pendingBlobBytes()))) return 0;
  return fork(w, trace, true);
}

// A finisher for what is reserved (with `closing`: all that is queued, and the close). Where none
// can be had (no marker, no pipe, no fork) the reserved weights are written here and now, and a
// closing caller waits for the finishers already running: 0 is returned, the caller closes.
pid_t Finishers::fork(Writer& w, const std::string& name, bool closing) {
  const std::string trace = whereIs(w, name);
  ino_t ino = marker_;
  const int marker = finishing::lockMarker(trace, marker_ == 0, &ino, ::getpid());
  int fds[2] = {-1, -1};
  pid_t pid = -1;
  if (marker >= 0 && ::pipe2(fds, O_CLOEXEC) == 0) {
    tForking = true;
    pid = w.forkFinisher(closing);
    tForking = false;
    if (pid == 0) runChild(w, trace, closing, fds[1], marker);
    ::close(fds[1]);
  }
  if (marker >= 0) ::close(marker);
  if (pid < 0) {
    if (fds[0] >= 0) ::close(fds[0]);
    w.writeReserved();
    if (closing && !earlierSucceeded()) failed_ = true;
    return 0;
  }
  marker_ = ino;
  markerTrace_ = trace;
  running_.push_back({pid, fds[0]});
  return pid;
}

void Finishers::runChild(Writer& w, const std::string& trace, bool closes, int status, int marker) {
  defaultSignals();
  // The application's own work comes first where both want a core (the machines this runs on may
  // have two).
  (void)!::setpriority(PRIO_PROCESS, 0, 19);
  std::vector<int> keep = {w.fileDescriptor(), status, marker};
  for (const Child& c : running_) keep.push_back(c.status);
  closeOthers(keep);
  const std::string atFork = report_.empty() ? "" : selfStatus();
  const auto t0 = std::chrono::steady_clock::now();
  finishing::logToMarker(marker, "finisher pid " + std::to_string(::getpid()));
  faults_->finisherStarted();  // test hooks (faults.h)
  if (faults_->finisherStallMs() > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(faults_->finisherStallMs()));
  std::string failure;
  try {
    // The one that closes waits for the others first: the keys they read are then all in
    // (trace/src/blob_handoff.cpp), and their blocks all written.
    if (closes && !earlierSucceeded()) throw Error(Error::Kind::Io, "an earlier finisher did not finish");
    w.writeReserved();
    if (closes) w.close();
  } catch (const std::exception& e) { failure = describe(e); } catch (...) {
    failure = "unknown error";
  }
  if (!report_.empty())
    appendReport(report_, atFork, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), closes,
                 failure.empty());
  if (!failure.empty()) {
    finishing::logToMarker(marker, "failed: " + failure);
    exitNow(1);  // said in the marker, which the next tool run reports (stderr is /dev/null by now)
  }
  if (closes) removeMarker(trace, marker);
  (void)!::write(status, "K", 1);
  exitNow(0);
}

bool Finishers::earlierSucceeded() {
  for (const Child& c : running_) {
    if (!saidDone(c.status)) failed_ = true;
    ::close(c.status);
    exiting_.push_back(c.pid);
  }
  running_.clear();
  return !failed_;
}

void Finishers::reap() {
  for (size_t i = 0; i < running_.size();) {
    pollfd p{running_[i].status, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) {
      ++i;
      continue;
    }
    if (!saidDone(running_[i].status)) failed_ = true;  // it said 'K' and is exiting, or it ended without
    ::close(running_[i].status);
    exiting_.push_back(running_[i].pid);
    running_.erase(running_.begin() + static_cast<long>(i));
  }
  // Not left a zombie of an application that goes on, nor waited for while it exits.
  std::erase_if(exiting_, [](pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) != 0; });
}

void Finishers::closed() noexcept {
  if (marker_ == 0) return;
  struct stat st {};
  const std::string m = finishing::markerOf(markerTrace_);
  if (::lstat(m.c_str(), &st) == 0 && st.st_ino == marker_) ::unlink(m.c_str());
  marker_ = 0;
}

void Finishers::afterForkInApp() noexcept {
  for (const Child& c : running_) ::close(c.status);
  running_.clear();
  exiting_.clear();
  enabled_ = false;  // the child captures into a trace of its own, from the start (session.h)
  marker_ = 0;
  failed_ = false;
}

}  // namespace trtrace::capture
