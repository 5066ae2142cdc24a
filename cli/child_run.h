// Runs a command as a child process under a time limit and collects what it prints, so that a
// command that crashes or hangs (the library on a candidate of trtrace reduce) cannot take the
// caller with it: the child gets its own process group, stdin from /dev/null, stdout and stderr
// into one pipe; past the limit the whole group is killed. The run ends when the child exits: what
// it left running in its group is killed then, and output still held open by a process outside
// the group is not waited for (a grandchild holding the pipe cannot turn a verdict into a timeout).
#pragma once
#include <signal.h>

#include <exception>
#include <string>
#include <vector>

namespace trtrace::cli {

struct ChildResult {
  int status = 0;         // exit code; 128 + signal when killed by one; 124 when past the limit
  bool timedOut = false;  // killed at the time limit
  std::string output;     // stdout and stderr, interleaved (its first MiB)
};

// Runs argv[0] (looked up in PATH when it has no '/'); throws Error (Io) when it cannot be started,
// Interrupted when an InterruptScope's signal came (before it started, or while it ran).
ChildResult runChild(const std::vector<std::string>& argv, double timeoutSeconds);

// A command that runs children one after another (trtrace reduce), interrupted. While a scope
// lives, SIGINT, SIGTERM and SIGHUP end the child running now (its whole group: not this process's,
// so a terminal's ^C never reaches it) and make runChild throw Interrupted, at once or before it
// starts the next one; the caller's destructors then remove what it made, and trtrace exits 128 +
// the signal, as a shell says (main.cpp). A signal this process was started ignoring stays ignored.
class InterruptScope {
 public:
  InterruptScope();
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;
  // Throws Interrupted if a signal came since the scope began (before an output is committed).
  static void check();

 private:
  struct sigaction old_[3];
};

struct Interrupted : std::exception {
  explicit Interrupted(int sig);
  const char* what() const noexcept override { return text.c_str(); }
  int signal;
  std::string text;  // "interrupted by SIGINT; nothing written"
};

// Runs `exe` with `argv` and `env` in the foreground (this process group, the terminal's stdin and
// stdout) and waits for it, as a supervisor: SIGTERM, SIGHUP, SIGINT and SIGQUIT sent to this
// process go on to the command instead of ending this one, so the command is never left running
// orphaned and the caller still reports what it did. One the kernel sent (the terminal's ^C or ^\,
// a hangup) reached the command's whole process group already and is not sent twice. Returns its
// exit code, 128 + N when signal N ended it (as a shell says); spawnErrno is set (and -1 returned)
// when it could not be started.
int runSupervised(const std::string& exe, const std::vector<std::string>& argv, const std::vector<std::string>& env,
                  int& spawnErrno);

}  // namespace trtrace::cli
