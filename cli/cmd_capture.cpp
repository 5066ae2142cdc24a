// trtrace capture [-o OUT] [--nvidia-json] [--] CMD ARGS...: runs CMD with the capture shim preloaded and
// the TRT_SHIM_* variables set, returns CMD's exit code and prints what the trace holds.
// The shim is the one installed beside this program (<prefix>/bin/trtrace -> <prefix>/lib/); the
// TensorRT-RTX library CMD will load is looked up first, in the shared discovery order
// (libinfo/library.h), so a missing library is said before anything runs.
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "child_run.h"
#include "commands.h"
#include "library.h"
#include "summary.h"
#include "usage.h"
#include "trtrace/capture_names.h"
#include "trtrace/convert.h"
#include "trtrace/error.h"
#include "trtrace/files.h"

extern char** environ;

namespace trtrace::cli {
namespace {

// Exit codes of capture's own refusals (docs/errors.md); otherwise it exits with CMD's code.
constexpr int kNotExecutable = 126, kNotFound = 127;

struct NotRunnable : Error {  // CMD cannot be started: exit 126/127 as a shell would
  NotRunnable(int code, const std::string& m) : Error(Kind::Usage, m), code(code) {}
  int code;
};

// CMD as the shell would find it: a name with a slash as given, else the first executable on PATH.
std::string resolveCommand(const std::string& name) {
  auto runnable = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    if (runnable(name)) return name;
    if (::access(name.c_str(), F_OK) != 0) throw NotRunnable(kNotFound, "capture: " + name + ": command not found");
    throw NotRunnable(kNotExecutable, "capture: " + name + ": not an executable file");
  }
  const char* env = std::getenv("PATH");
  const std::string path = env && *env ? env : "/usr/local/bin:/usr/bin:/bin";
  for (size_t start = 0; start <= path.size();) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end > start ? path.substr(start, end - start) : ".";
    if (runnable(dir + "/" + name)) return dir + "/" + name;
    start = end + 1;
  }
  throw NotRunnable(kNotFound, "capture: " + name + ": command not found (not on PATH)");
}

// The shim installed with this program: <dir of this executable>/../lib/libtensorrt_shim.so.
std::string installedShim() {
  char buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string exe = n > 0 ? std::string(buf, size_t(n)) : "";
  const std::string bin = exe.substr(0, exe.find_last_of('/'));
  const std::string shim = bin.substr(0, bin.find_last_of('/')) + "/lib/libtensorrt_shim.so";
  if (::access(shim.c_str(), R_OK) != 0)
    throw Error(Error::Kind::Io, "capture: " + shim + ": the capture shim is not installed beside " + exe);
  return shim;
}

// "<file> <version> (<why>)" of the TensorRT-RTX library at `path`, or "" when it does not load.
std::string describeLibrary(const std::string& path, const std::string& how) {
  void* h = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!h) return {};
  const lib::LibraryInfo info = lib::inspect(h);
  ::dlclose(h);
  return info.path + " " + info.version + " (" + how + ")";
}

// The TensorRT-RTX library CMD will load: a Python interpreter's own (asked), else the shared
// order (the active virtual environment's, trtrace's own environment's, python3's, the loader
// path's). Throws when there is none.
std::string findLibrary(const std::string& exe) {
  const std::string base = exe.substr(exe.find_last_of('/') + 1);
  if (base.rfind("python", 0) == 0)
    if (const std::string dir = lib::pythonLibDir(exe); !dir.empty())
      if (std::string d = describeLibrary(dir + "/libtensorrt_rtx.so.1", "tensorrt_rtx_libs of " + exe); !d.empty())
        return d;
  std::string tried;
  for (const lib::Candidate& c : lib::candidates("", 0, true)) {
    if (std::string d = describeLibrary(c.path, c.how); !d.empty()) return d;
    tried += (tried.empty() ? "" : "; ") + c.path;
  }
  throw Error(Error::Kind::Usage, "capture: no TensorRT-RTX library found (tried " + tried +
                                      "): install tensorrt-rtx in the active Python environment or put "
                                      "libtensorrt_rtx.so.1 on the loader path");
}

// Refuses an output that is the command or one of its arguments naming an existing file.
void checkOutputs(const std::vector<std::string>& cmd, const std::string& exe, const std::vector<std::string>& outs) {
  std::vector<std::string> maybeInputs(cmd.begin() + 1, cmd.end());
  maybeInputs.push_back(exe);
  for (const auto& p : maybeInputs) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) try {
        ::close(files::openInput(p));
      } catch (const Error&) {  // unreadable: not something the shim could overwrite for us to read back
      }
  }
  for (const auto& o : outs) files::checkOutput(o);
}

// Runs `exe` with `argv` and `env` as its supervisor (child_run.h: the terminating signals sent to
// us go on to it, so that it is never left orphaned and the summary is still printed); its exit
// code, 128 + signal when killed, as a shell reports it.
int runCommand(const std::string& exe, const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  int err = 0;
  const int code = runSupervised(exe, argv, env, err);
  if (err) throw NotRunnable(kNotExecutable, "capture: " + exe + ": cannot run (" + std::strerror(err) + ")");
  return code;
}

// The environment of CMD: ours, with the shim added to LD_PRELOAD and the output variables set.
// The shim goes after what is preloaded already (a sanitizer runtime must stay first); any preload
// still precedes the real library, which is all the shim needs.
std::vector<std::string> captureEnv(const std::string& shim, const std::string& out, const std::string& json) {
  std::vector<std::string> env;
  std::string preload = shim;
  for (char** p = environ; *p; ++p) {
    const std::string kv = *p;
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "LD_PRELOAD") {
      const std::string old = kv.substr(kv.find('=') + 1);
      if (!old.empty()) preload = old + ":" + shim;
    } else if (key != "TRT_SHIM_OUTPUT_FILE" && key != "TRT_SHIM_OUTPUT_JSON_FILE") {
      env.push_back(kv);
    }
  }
  env.push_back("LD_PRELOAD=" + preload);
  env.push_back("TRT_SHIM_OUTPUT_FILE=" + out);
  if (!json.empty()) env.push_back("TRT_SHIM_OUTPUT_JSON_FILE=" + json);
  return env;
}

struct FileStamp {
  bool exists = false;
  struct stat st {};
  bool operator==(const FileStamp& o) const {
    return exists == o.exists &&
           (!exists || (st.st_ino == o.st.st_ino && st.st_dev == o.st.st_dev && st.st_size == o.st.st_size &&
                        st.st_mtim.tv_sec == o.st.st_mtim.tv_sec && st.st_mtim.tv_nsec == o.st.st_mtim.tv_nsec));
  }
};
FileStamp stampOf(const std::string& path) {
  FileStamp s;
  s.exists = ::stat(path.c_str(), &s.st) == 0;
  return s;
}

// The files in OUT's folder that a capture of OUT may write (trtrace/capture_names.h: OUT,
// OUT.<pid>, OUT.<pid>.<n>), with their stamps: those new or changed after the run are its traces.
std::map<std::string, FileStamp> candidateTraces(const std::string& out) {
  const size_t slash = out.find_last_of('/');
  const std::string prefix = slash == std::string::npos ? "" : out.substr(0, slash + 1);
  std::map<std::string, FileStamp> found;
  if (DIR* d = ::opendir(prefix.empty() ? "." : prefix.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (const std::string path = prefix + e->d_name; capture_names::isCandidate(out, path))
        found.emplace(path, stampOf(path));
    ::closedir(d);
  }
  return found;
}

// One line per trace the run wrote (and the JSON+BIN with the same suffix, when exported).
void printWritten(const std::vector<std::string>& traces, const std::string& out, const std::string& jsonPath) {
  for (const std::string& t : traces) {
    std::unique_ptr<Reader> r;
    try {
      r = Reader::open(t);  // waits for the trace's finisher (trtrace/finishing.h), unless --no-wait
    } catch (const Error& e) {
      if (e.kind() != Error::Kind::Finishing) throw;
      std::fprintf(stderr, "trtrace: capture: %s\n", e.what());
      continue;
    }
    std::string sfx, json;
    if (!jsonPath.empty() && capture_names::isCandidate(out, t, &sfx))
      json = capture_names::jsonWithSuffix(jsonPath, sfx);
    std::fprintf(stderr, "trtrace: capture: %s%s: %s%s%s\n", t.c_str(), r->closedCleanly() ? "" : " (not closed)",
                 summaryLine(summarise(*r)).c_str(), json.empty() ? "" : "; JSON+BIN: ", json.c_str());
  }
}

}  // namespace

Command addCapture(CLI::App& app) {
  auto out = std::make_shared<std::string>("capture.trtrace");
  auto nvidiaJson = std::make_shared<bool>(false);
  auto cmd = std::make_shared<std::vector<std::string>>();  // CMD ARGS... (main.cpp keeps them from CLI11)
  auto* sub = app.add_subcommand(
      "capture", "Run a command with the capture shim: trtrace capture [-o OUT] [--nvidia-json] [--] CMD ARGS...");
  sub->add_option("-o,--output", *out, "The trace to write (default capture.trtrace)");
  sub->add_flag("--nvidia-json", *nvidiaJson,
                "Also write NVIDIA's JSON+BIN layout (OUT without .trtrace, + .json/.bin)");
  // --json means a machine-readable report in every tool; capture has none, and its NVIDIA layout
  // is --nvidia-json: a usage error that says so, rather than either taken silently.
  auto* json = sub->add_flag("--json")->group("");
  sub->prefix_command();  // without `--`, the command starts at the first argument that is not an option of capture
  return {sub, [=]() -> int {
            try {
              if (json->count())
                return usageError("trtrace", "capture",
                                  "--json: capture has no report to give as JSON; NVIDIA's JSON+BIN "
                                  "beside the trace: --nvidia-json");
              *cmd = commandAfterSeparator();
              // prefix_command leaves everything from the first argument that is not capture's own: an
              // option there is one capture does not have, and a command there as well as after -- is two.
              if (const std::vector<std::string> rest = sub->remaining(); !rest.empty()) {
                if (rest.front().size() > 1 && rest.front()[0] == '-')
                  return usageError("trtrace", "capture", "The following argument was not expected: " + rest.front());
                if (!cmd->empty())
                  return usageError("trtrace", "capture", "a command before -- as well as after it: " + rest.front());
                *cmd = rest;
              }
              if (cmd->empty())
                throw Error(Error::Kind::Usage,
                            "capture: no command given (trtrace capture [-o OUT] [--nvidia-json] [--] CMD ARGS...)");
              const std::string exe = resolveCommand(cmd->front());
              std::string jsonPath;
              if (*nvidiaJson) {
                jsonPath = *out;
                if (jsonPath.size() > 8 && jsonPath.compare(jsonPath.size() - 8, 8, ".trtrace") == 0)
                  jsonPath.resize(jsonPath.size() - 8);
                jsonPath += ".json";
              }
              std::vector<std::string> outs{*out};
              if (*nvidiaJson) outs.insert(outs.end(), {jsonPath, convert::binPathFor(jsonPath)});
              checkOutputs(*cmd, exe, outs);
              const std::string shim = installedShim();
              std::fprintf(stderr, "trtrace: capture: %s with %s -> %s\n", cmd->front().c_str(),
                           findLibrary(exe).c_str(), out->c_str());
              const auto before = candidateTraces(*out);
              const int code = runCommand(exe, *cmd, captureEnv(shim, *out, jsonPath));
              std::vector<std::string> written;  // a trace is never rewritten: new or changed = this run's
              for (const auto& [path, stamp] : candidateTraces(*out))
                if (auto it = before.find(path); it == before.end() || !(it->second == stamp)) written.push_back(path);
              if (written.empty()) {
                std::fprintf(stderr, "trtrace: capture: %s made no TensorRT-RTX call; no trace written to %s\n",
                             cmd->front().c_str(), out->c_str());
                return code ? code : kError;
              }
              printWritten(written, *out, jsonPath);
              return code;
            } catch (const NotRunnable& e) {
              std::fprintf(stderr, "trtrace: %s\n", e.what());
              return e.code;
            }
          }};
}

}  // namespace trtrace::cli
