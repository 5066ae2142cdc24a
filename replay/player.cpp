// tensorrt_player: rebuild the engine(s) of a capture with the real TensorRT-RTX library.
//
//   tensorrt_player -j <capture> -o <engine>
//
// <capture> is a trtrace trace (or, through convert/, NVIDIA's JSON+BIN pair). One network ->
// <engine>; several -> <engine>0, <engine>1, ... in the order the networks were created.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string_view>
#include <string>

#include "library_select.h"
#include "recheck.h"
#include "replayer.h"
#include "trtrace/convert.h"
#include "trtrace/error.h"
#include "trtrace/format.h"
#include "trtrace/hash.h"

using namespace trtrace;
using namespace trtrace::replay;

namespace {

// Exit codes (docs/errors.md).
enum Exit : int {
  kOk = 0,
  kBadInput = 1,            // unreadable/corrupt capture, bad options, library not loadable
  kDivergence = 2,          // the replay behaved differently from the capture
  kFailureReproduced = 3,   // the capture's build failure happened again (as recorded)
  kEngineDiffers = 4,       // --check: an engine differs from the one recorded at capture
  kNondeterministic = 5,    // --check: rebuilds at other heap layouts gave different engines
};

// Writes `bytes` to `path` atomically: a temp file in the same folder, then rename.
void writeAtomically(const std::string& path, const void* data, size_t size) {
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(Error::Kind::Io, path + ": cannot create (" + std::strerror(errno) + ")");
  const char* p = static_cast<const char*>(data);
  size_t left = size;
  while (left) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(Error::Kind::Io, path + ": write failed (" + std::strerror(e) + ")");
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw Error(Error::Kind::Io, path + ": cannot finish writing (" + std::strerror(e) + ")");
  }
}

// Detection by content: the trace magic means a trace; a JSON document (first non-blank byte '{')
// or a file named *.json goes through convert/ (whose errors name the JSON fault); anything else is
// opened as a trace, whose reader names what is wrong with it (magic, version, ...).
bool isJson(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(Error::Kind::Io, path + ": cannot open (" + std::strerror(errno) + ")");
  char buf[4096];
  f.read(buf, sizeof buf);
  std::string_view head(buf, static_cast<size_t>(f.gcount()));
  if (head.substr(0, 8) == std::string_view("TRTRACE\0", 8)) return false;
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0) return true;
  if (head.substr(0, 3) == "\xEF\xBB\xBF") head.remove_prefix(3);  // UTF-8 byte order mark
  size_t i = head.find_first_not_of(" \t\r\n");
  return i != std::string_view::npos && head[i] == '{';
}

struct TempTrace {
  std::string path;
  ~TempTrace() {
    if (!path.empty()) ::unlink(path.c_str());
  }
};

std::string jsonEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) { char b[8]; std::snprintf(b, sizeof b, "\\u%04x", c); o += b; }
    else o += c;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tensorrt_player: rebuild TensorRT-RTX engines from a capture, without the application"};
  std::string capture, output, libPath;
  Options opt;
  bool stats = false, json = false, check = false;
  app.add_option("-j,--json-file,capture", capture, "capture: a trtrace trace or NVIDIA JSON (+BIN beside it)")->required();
  app.add_option("-o,--output", output, "engine file; several networks: <output>0, <output>1, ...");
  app.add_option("--lib", libPath, "the real libtensorrt_rtx.so.1 (default: TRT_SHIM_NVINFER_LIB_NAME, then the "
                                   "trace's version from an installed tensorrt_rtx_libs, then the loader path)");
  int64_t networkIndex = -1;
  app.add_option("--network", networkIndex, "replay only this network: 0, 1, ... in creation order (the <output> suffix)");
  app.add_option("--seed", opt.seed, "seed for weights the capture marked random");
  app.add_flag("--skip-unsupported", opt.skipUnsupported, "skip calls the capture marked UNSUPPORTED");
  app.add_flag("--ignore-version", opt.ignoreVersion, "replay a capture of another library version");
  app.add_flag("--trust-weights", opt.trustWeights,
               "skip the content-hash check of raw weight blobs (for a trace `trtrace verify` passed)");
  app.add_flag("--check", check, "compare each engine's XXH3-128 with the one recorded at capture");
  app.add_flag("--stats", stats, "print open/dispatch/build times per network");
  app.add_flag("--json", json, "machine-readable summary on stdout");
  app.add_flag("-q,--quiet", opt.quiet, "hide the library's warnings");
  int heapShift = 0;  // internal: the --check rebuilds (recheck.h)
  app.add_option("--heap-shift", heapShift)->group("");
  CLI11_PARSE(app, argc, argv);
  if (heapShift > 0) shiftHeap(std::min(heapShift, 64));
  opt.libPath = libPath;
  opt.network = networkIndex < 0 ? -1 : networkIndex + 1;  // trace network ids start at 1

  using Clock = std::chrono::steady_clock;
  try {
    if (!output.empty()) {  // an output that cannot be created fails now, not after the builds
      std::string dir = output.find('/') == std::string::npos ? "." : output.substr(0, output.rfind('/') + 1);
      if (::access(dir.c_str(), W_OK | X_OK) != 0)
        throw Error(Error::Kind::Io, output + ": cannot create (" + std::strerror(errno) + ")");
    }
    auto t0 = Clock::now();
    // NVIDIA JSON+BIN input: converted (convert/) to a temporary trace, removed when done.
    TempTrace converted;
    if (isJson(capture)) {
      const char* dir = std::getenv("TMPDIR");
      converted.path = std::string(dir && *dir ? dir : "/tmp") + "/tensorrt_player." + std::to_string(getpid()) + ".trtrace";
      convert::jsonToTrace(capture, converted.path);
    }
    std::unique_ptr<Reader> reader = Reader::open(converted.path.empty() ? capture : converted.path);
    if (!converted.path.empty()) ::unlink(converted.path.c_str());  // the mapping stays valid
    const double openSeconds = std::chrono::duration<double>(Clock::now() - t0).count();
    if (reader->truncatedAt() && *reader->truncatedAt() <= sizeof(format::FileHeader))  // not even the header block
      throw Error(Error::Kind::Truncated, reader->truncationMessage() + "; no capture to replay");
    if (auto msg = reader->truncationMessage(); !msg.empty())
      std::fprintf(stderr, "tensorrt_player: warning: %s; replaying the complete prefix\n", msg.c_str());
    else if (!reader->closedCleanly())
      std::fprintf(stderr, "tensorrt_player: warning: %s: not closed (the capture did not finish); replaying the %llu calls it holds\n",
                   capture.c_str(), static_cast<unsigned long long>(reader->callCount()));
    const ChosenLibrary chosen = chooseLibrary(*reader, opt.libPath, opt.ignoreVersion);  // library_select.h
    if (!opt.quiet && chosen.how != "--lib") std::fprintf(stderr, "tensorrt_player: %s\n", describe(chosen).c_str());
    checkCallsExist(*reader, chosen);
    const std::string used = chosen.info.path;
    void* create = dlsym(chosen.handle, "createInferBuilder_INTERNAL");

    // Networks that will be built decide the output names.
    std::map<uint32_t, int> builds;
    reader->forEachCall([&](const CallView& c) {
      if (c.apiId() == api::kBuilder_buildSerializedNetwork && (opt.network < 0 || c.networkId() == static_cast<uint32_t>(opt.network))) builds[c.networkId()]++;
      return true;
    });
    const bool single = builds.size() <= 1;

    std::vector<NetworkResult> results;
    bool failureReproduced = false, differs = false;
    Replayer player(*reader, opt, create);
    player.run([&](const NetworkResult& r0, const void* engine) {
      NetworkResult r = r0;
      if (r.ok && !output.empty()) {
        r.path = single ? output : output + std::to_string(r.network - 1);
        writeAtomically(r.path, engine, r.engineSize);
      }
      if (!r.ok) failureReproduced = true;
      results.push_back(r);
    });
    const auto& s = player.stats();
    // --check: an engine that differs gets a second opinion before it is called different.
    std::map<uint32_t, std::string> verdicts;  // network -> "identical" / "different" / "nondeterministic"
    bool nondeterministic = false;
    for (auto& r : results) {
      if (!r.ok || !r.captured || !r.captured->ok) continue;
      auto& v = verdicts[r.network];
      if (r.captured->engineHash == r.engineHash && r.captured->engineSize == r.engineSize) { v = "identical"; continue; }
      v = "different";
      if (!check) continue;
      std::vector<std::string> pass;
      if (opt.seed) pass.insert(pass.end(), {"--seed", std::to_string(opt.seed)});
      if (opt.skipUnsupported) pass.push_back("--skip-unsupported");
      if (opt.ignoreVersion) pass.push_back("--ignore-version");
      if (opt.trustWeights) pass.push_back("--trust-weights");
      Recheck rc = recheckNetwork({capture, used, pass}, r.network - 1, r.engineHash, r.engineSize,
                                  r.captured->engineHash, r.captured->engineSize, r.path);
      if (rc.verdict == Recheck::Verdict::Matched) {
        r.engineHash = r.captured->engineHash, r.engineSize = r.captured->engineSize;
        v = "identical";
        std::fprintf(stderr, "tensorrt_player: network %u: identical to capture on a rebuild at another heap layout "
                     "(library nondeterminism: its first build differed)\n", r.network - 1);
      } else if (rc.verdict == Recheck::Verdict::Nondeterministic) {
        v = "nondeterministic", nondeterministic = true;
        std::fprintf(stderr, "tensorrt_player: network %u: differs: library nondeterminism suspected (%d builds at "
                     "different heap layouts gave %d distinct engines, none the capture's)\n", r.network - 1, rc.builds, rc.distinct);
      } else {
        v = "different", differs = true;
      }
    }

    if (json) {
      std::printf("{\"capture\": \"%s\", \"calls\": %llu, \"skipped\": %llu, \"open_s\": %.6f, \"dispatch_s\": %.6f, "
                  "\"build_s\": %.6f, \"scalar_mismatches\": %llu, %s, \"networks\": [",
                  jsonEscape(capture).c_str(), (unsigned long long)s.calls, (unsigned long long)s.skipped, openSeconds,
                  s.dispatchSeconds, s.buildSeconds, (unsigned long long)s.scalarMismatches,
                  describeJson(chosen).c_str());
      for (size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        const char* same = verdicts.count(r.network) ? verdicts[r.network].c_str() : "unknown";
        std::printf("%s{\"network\": %u, \"ok\": %s, \"engine\": \"%s\", \"size\": %llu, \"xxh3\": \"%s\", "
                    "\"build_s\": %.6f, \"vs_capture\": \"%s\"}",
                    i ? ", " : "", r.network - 1, r.ok ? "true" : "false", jsonEscape(r.path).c_str(),
                    (unsigned long long)r.engineSize, toHex(r.engineHash).c_str(), r.buildSeconds, same);
      }
      std::printf("]}\n");
    } else {
      for (const auto& r : results) {
        if (r.ok) {
          std::string vs;
          if (verdicts.count(r.network))
            vs = verdicts[r.network] == "identical" ? ", identical to capture"
                 : verdicts[r.network] == "different" ? ", DIFFERENT from capture"
                                                      : ", differs: library nondeterminism suspected";
          std::printf("network %u: engine %s (%llu bytes, xxh3 %s%s)\n", r.network - 1, r.path.empty() ? "(not written)" : r.path.c_str(),
                      (unsigned long long)r.engineSize, toHex(r.engineHash).c_str(), vs.c_str());
        } else {
          std::printf("network %u: build failed, as at capture:\n", r.network - 1);
          for (const auto& e : r.errors) std::printf("  %s\n", e.c_str());
        }
      }
      if (stats) {
        std::fprintf(stderr, "stats: open %.3f ms, %llu calls dispatched in %.3f ms (%.0f calls/s), builds %.3f s\n",
                     openSeconds * 1e3, (unsigned long long)s.calls, s.dispatchSeconds * 1e3,
                     s.dispatchSeconds > 0 ? s.calls / s.dispatchSeconds : 0.0, s.buildSeconds);
        for (const auto& r : results) std::fprintf(stderr, "stats: network %u build %.3f s\n", r.network - 1, r.buildSeconds);
      }
    }
    if (check && differs) return kEngineDiffers;
    if (check && nondeterministic) return kNondeterministic;
    if (failureReproduced) return kFailureReproduced;
    return kOk;
  } catch (const Divergence& e) {
    std::fprintf(stderr, "tensorrt_player: %s: divergence at %s\n", capture.c_str(), e.what());
    return kDivergence;
  } catch (const Error& e) {
    std::fprintf(stderr, "tensorrt_player: %s\n", e.what());
    return kBadInput;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tensorrt_player: %s\n", e.what());
    return kBadInput;
  }
}
