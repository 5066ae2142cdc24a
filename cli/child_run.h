// Runs a command as a child process under a time limit and collects what it prints, so that a
// command that crashes or hangs (the library on a candidate of trtrace reduce) cannot take the
// caller with it: the child gets its own process group, stdin from /dev/null, stdout and stderr
// into one pipe; past the limit the whole group is killed.
#pragma once
#include <string>
#include <vector>

namespace trtrace::cli {

struct ChildResult {
  int status = 0;         // exit code; 128 + signal when killed by one; 124 when past the limit
  bool timedOut = false;  // killed at the time limit
  std::string output;     // stdout and stderr, interleaved (its first MiB)
};

// Runs argv[0] (looked up in PATH when it has no '/'); throws Error (Io) when it cannot be started.
ChildResult runChild(const std::vector<std::string>& argv, double timeoutSeconds);

}  // namespace trtrace::cli
