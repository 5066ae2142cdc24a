// Runs a command as a child process under a time limit (child_run.h).
#include "child_run.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iterator>

#include "trtrace/error.h"

extern char** environ;

namespace trtrace::cli {

namespace {

constexpr size_t kKeep = 1 << 20;  // output kept per child; the rest is read and dropped

constexpr int kInterrupting[] = {SIGINT, SIGTERM, SIGHUP};
static_assert(std::size(kInterrupting) == 3, "InterruptScope::old_ holds one action per signal");
volatile sig_atomic_t gInterrupt = 0;   // the signal that interrupted an InterruptScope (0: none)
volatile sig_atomic_t gChildGroup = 0;  // the running child's process group, while runChild waits

void interrupt(int sig) {
  gInterrupt = sig;
  if (const pid_t group = gChildGroup; group > 0) ::kill(-group, SIGKILL);
}

pid_t spawn(const std::vector<std::string>& argv, int out) {
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out, 1);
  posix_spawn_file_actions_adddup2(&fa, out, 2);
  posix_spawnattr_init(&at);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&at, 0);  // its own group: a timeout kills its children too
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, args[0], &fa, &at, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (err) throw Error(Error::Kind::Io, argv[0] + ": cannot run (" + std::strerror(err) + ")");
  return pid;
}

// A descriptor that polls readable when `pid` exits (-1 where the kernel has no pidfd_open: then
// the wait below looks every 100 ms).
int exitFd(pid_t pid) {
#ifdef SYS_pidfd_open
  return int(::syscall(SYS_pidfd_open, pid, 0));
#else
  return -1;
#endif
}

// Whether `pid` has exited, leaving it a zombie (WNOWAIT): its id, which is also its process
// group's, cannot be reused before the group is killed below.
bool exited(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

// Reads what is in the pipe without waiting: a process outside the group may hold it open.
void drain(int fd, std::string& out) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  char buf[65536];
  for (size_t total = 0; total < 4 * kKeep;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;
    total += size_t(got);
    if (out.size() < kKeep) out.append(buf, std::min(size_t(got), kKeep - out.size()));
  }
}

// Collects the output until the child exits or the deadline passes; true when it exited in time.
// The child's exit ends the wait, not the pipe's end: a grandchild that keeps the pipe open (a
// daemon the check started) would otherwise make every run last until the limit.
bool collect(pid_t pid, int out, double timeoutSeconds, std::string& output) {
  const int pidfd = exitFd(pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
  bool open = true, done = false;
  char buf[65536];
  while (!done && !gInterrupt) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p[2] = {{open ? out : -1, POLLIN, 0}, {pidfd, POLLIN, 0}};
    const int n = ::poll(p, 2, int(std::min<long long>(left.count(), pidfd < 0 ? 100 : 1000)));
    if (n < 0 && errno != EINTR) break;
    if (n > 0 && (p[0].revents & (POLLIN | POLLHUP))) {
      const ssize_t got = ::read(out, buf, sizeof buf);
      if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) open = false;
      if (got > 0 && output.size() < kKeep) output.append(buf, std::min(size_t(got), kKeep - output.size()));
    }
    done = exited(pid);
  }
  if (pidfd >= 0) ::close(pidfd);
  return done;
}

}  // namespace

ChildResult runChild(const std::vector<std::string>& argv, double timeoutSeconds) {
  InterruptScope::check();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw Error(Error::Kind::Io, std::string("pipe: ") + std::strerror(errno));
  pid_t pid;
  try {
    pid = spawn(argv, fds[1]);
  } catch (...) {
    close(fds[0]);
    close(fds[1]);
    throw;
  }
  close(fds[1]);
  gChildGroup = pid;  // (a signal before this: collect sees it at once, and the kill below ends it)
  ChildResult r;
  r.timedOut = !collect(pid, fds[0], timeoutSeconds, r.output);
  ::kill(-pid, SIGKILL);  // the whole group: the child past the limit, or what it left running
  gChildGroup = 0;        // before the reap: the id may be another's after it
  drain(fds[0], r.output);
  close(fds[0]);
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
  InterruptScope::check();
  r.status = r.timedOut ? 124 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

// No SA_RESTART: the wait's poll returns at once.
InterruptScope::InterruptScope() {
  gInterrupt = 0;
  struct sigaction sa {};
  sa.sa_handler = interrupt;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < std::size(kInterrupting); ++i) {
    ::sigaction(kInterrupting[i], nullptr, &old_[i]);
    if (old_[i].sa_handler != SIG_IGN) ::sigaction(kInterrupting[i], &sa, nullptr);
  }
}

InterruptScope::~InterruptScope() {
  for (size_t i = 0; i < std::size(kInterrupting); ++i) ::sigaction(kInterrupting[i], &old_[i], nullptr);
}

void InterruptScope::check() {
  if (const int sig = gInterrupt) throw Interrupted(sig);
}

Interrupted::Interrupted(int sig)
    : signal(sig),
      text(std::string("interrupted by SIG") + (sigabbrev_np(sig) ? sigabbrev_np(sig) : "?") + "; nothing written") {}

namespace {

constexpr int kForwarded[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT};
volatile sig_atomic_t gSupervised = 0;  // the command's pid while runSupervised waits for it

void forward(int sig, siginfo_t* info, void*) {
  if (info && info->si_code == SI_KERNEL) return;  // the terminal's: the command's group has it
  if (const pid_t pid = gSupervised; pid > 0) ::kill(pid, sig);
}

// The forwarding handlers, installed with the signals blocked (saved into `old`, `oldMask`).
void installForwarding(struct sigaction (&old)[4], sigset_t& oldMask) {
  sigset_t block;
  sigemptyset(&block);
  for (int s : kForwarded) sigaddset(&block, s);
  ::sigprocmask(SIG_BLOCK, &block, &oldMask);
  struct sigaction sa {};
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < 4; ++i) ::sigaction(kForwarded[i], &sa, &old[i]);
}

}  // namespace

int runSupervised(const std::string& exe, const std::vector<std::string>& argv, const std::vector<std::string>& env,
                  int& spawnErrno) {
  std::vector<char*> a, e;
  for (auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
  for (auto& s : env) e.push_back(const_cast<char*>(s.c_str()));
  a.push_back(nullptr);
  e.push_back(nullptr);
  struct sigaction old[4];
  sigset_t oldMask;
  installForwarding(old, oldMask);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : kForwarded) sigaddset(&defaults, s);
  posix_spawnattr_setsigdefault(&attr, &defaults);  // the command's own dispositions, not our handlers
  posix_spawnattr_setsigmask(&attr, &oldMask);      // nor our blocked mask
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  spawnErrno = ::posix_spawn(&pid, exe.c_str(), nullptr, &attr, a.data(), e.data());
  posix_spawnattr_destroy(&attr);
  if (spawnErrno == 0) gSupervised = pid;
  ::sigprocmask(SIG_SETMASK, &oldMask, nullptr);  // signals that came meanwhile are forwarded now
  // Waits for the exit leaving a zombie (WNOWAIT), so that a signal forwarded until the handlers
  // are gone cannot reach another process that got the id; then reaps it.
  siginfo_t info{};
  while (spawnErrno == 0 && ::waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {}
  for (size_t i = 0; i < 4; ++i) ::sigaction(kForwarded[i], &old[i], nullptr);
  gSupervised = 0;
  int status = 0;
  while (spawnErrno == 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (spawnErrno) return -1;
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

}  // namespace trtrace::cli
