// `trtrace bench TRACE... [options]`: repeated replays of captured builds, timed per phase, across
// library versions and builder settings. The measurement, statistics (SciPy) and plots
// (matplotlib) are the Python package's (python/trtrace/bench.py; docs/bench.md): this subcommand
// hands its arguments to `python3 -m trtrace.bench`, with the package and the player found beside
// this program, so `trtrace bench` is the same command from a build tree, an install or the wheel.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"
#include "trtrace/error.h"

#ifndef TRTRACE_PYTHON_SOURCE_DIR
#define TRTRACE_PYTHON_SOURCE_DIR ""
#endif

namespace trtrace::cli {
namespace {

std::string selfDir() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  const std::string exe = n > 0 ? std::string(buf, size_t(n)) : "";
  return exe.substr(0, exe.find_last_of('/'));
}

bool exists(const std::string& p) { return ::access(p.c_str(), F_OK) == 0; }

// The folder that holds the `trtrace` package: the wheel's (this program is trtrace/bin/trtrace in
// it), else the source tree this build came from.
std::string packageParent(const std::string& bin) {
  const std::string wheel = bin + "/../..";
  if (exists(bin + "/../__init__.py") && exists(bin + "/../bench.py")) return wheel;
  const std::string src = TRTRACE_PYTHON_SOURCE_DIR;
  if (!src.empty() && exists(src + "/trtrace/bench.py")) return src;
  throw Error(Error::Kind::Io, "bench: the trtrace Python package is not installed beside " + bin);
}

// TRTRACE_PYTHON, else the active virtual environment's, else python3 on PATH.
std::string python() {
  if (const char* p = std::getenv("TRTRACE_PYTHON"); p && *p) return p;
  if (const char* v = std::getenv("VIRTUAL_ENV"); v && *v && exists(std::string(v) + "/bin/python"))
    return std::string(v) + "/bin/python";
  return "python3";
}

int runBench(const std::vector<std::string>& args) {
  const std::string bin = selfDir();
  const std::string parent = packageParent(bin);
  const char* old = std::getenv("PYTHONPATH");
  const std::string path = parent + (old && *old ? ":" + std::string(old) : "");
  ::setenv("PYTHONPATH", path.c_str(), 1);
  const char* oldPath = std::getenv("PATH");  // the package's C interface is found beside this trtrace
  ::setenv("PATH", (bin + (oldPath && *oldPath ? ":" + std::string(oldPath) : "")).c_str(), 1);
  const std::string py = python();
  std::vector<std::string> argv = {py, "-m", "trtrace.bench", "--player", bin + "/tensorrt_player"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c;
  for (auto& s : argv) c.push_back(s.data());
  c.push_back(nullptr);
  std::fflush(nullptr);
  ::execvp(c[0], c.data());
  throw Error(Error::Kind::Io, "bench: " + py + ": cannot run (" + std::strerror(errno) + "); set TRTRACE_PYTHON");
}

}  // namespace

Command addBench(CLI::App& app) {
  auto* sub = app.add_subcommand("bench",
                                 "repeated replays of captures, timed per phase, across libraries and "
                                 "builder settings (trtrace bench --help; docs/bench.md)");
  sub->prefix_command();
  sub->set_help_flag();  // --help goes to the Python side, which knows the options
  return {sub, [sub] { return runBench(sub->remaining()); }};
}

}  // namespace trtrace::cli
