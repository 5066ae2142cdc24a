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
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <string>

#include "library_select.h"
#include "engine_file.h"
#include "recheck.h"
#include "replayer.h"
#include "trtrace/convert.h"
#include "trtrace/decode_cache.h"
#include "trtrace/error.h"
#include "trtrace/files.h"
#include "trtrace/finishing.h"
#include "trtrace/format.h"
#include "trtrace/hash.h"
#include "trtrace/network_id.h"
#include "trtrace/registry.h"
#include "trtrace/text.h"
#include "../cli/exit_codes.h"
#include "../cli/usage.h"  // the command line of every tool: usage errors, validators

using namespace trtrace;
using namespace trtrace::replay;

namespace {

using namespace trtrace::exits::player;  // the player's exit codes (cli/exit_codes.h, docs/errors.md)

// A build call without a recorded outcome (converted NVIDIA captures: docs/format.md, "Build
// outcomes"): whatever the replay gives is taken as what the app got.
constexpr char kOutcomeUnknown[] = "outcome not recorded in the capture: the replay's is taken as the app's";

// A capture that does not exist, where the other default name does beside it (NVIDIA's shim writes
// capture.json, ours capture.trtrace): the error names the file that exists.
void checkCaptureExists(const std::string& capture) {
  static const std::pair<std::string_view, std::string_view> kOther[] = {{".json", ".trtrace"}, {".trtrace", ".json"}};
  if (::access(capture.c_str(), F_OK) == 0 || errno != ENOENT) return;
  for (auto [ext, other] : kOther) {
    if (capture.size() <= ext.size() || capture.compare(capture.size() - ext.size(), ext.size(), ext) != 0) continue;
    const std::string beside = capture.substr(0, capture.size() - ext.size()) + std::string(other);
    if (::access(beside.c_str(), F_OK) != 0) return;
    throw Error(Error::Kind::Io, capture + ": cannot open (No such file or directory); " + beside +
                                     " is beside it (the " + (other == ".json" ? "NVIDIA shim's" : "trtrace") +
                                     " name of a capture): tensorrt_player -j " + beside);
  }
}

struct Args {
  std::string capture, output;
  Options opt;
  bool stats = false, json = false, check = false;
  CheckDepth checkDepth = CheckDepth::Quick;  // --check=thorough: more rebuilds before "differs"
  std::string decodeCache;                    // --decode-cache: a folder, temp or off ("" = TRTRACE_DECODE_CACHE)
  std::optional<int64_t> network;             // --network, 0-based as given
  std::vector<std::string> sets;              // --set Interface::method=VALUE (settings.h)
  bool validateSet = false;                   // --validate-set: read the --set values, replay nothing
};

// When each phase ended, on CLOCK_MONOTONIC (one clock for every process of the machine, so
// `trtrace bench` places the player's phases between its own fork and wait): --json's "phases".
struct Phases {
  static int64_t now() {
    timespec t{};
    ::clock_gettime(CLOCK_MONOTONIC, &t);
    return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
  }
  int64_t main = now(), opened = 0, library = 0, decoded = 0, replayed = 0, checked = 0;
};
Phases gPhases;  // main: as the process reaches static initialisation, before main()

// The library for this trace (library_select.h: the documented search order, its version against
// the trace's, calls it has no method for); the choice is said unless -q or named by --lib.
ChosenLibrary openLibrary(const Reader& reader, const Args& a) {
  const std::string& requested = a.opt.libPath;
  // A path to a file: checked as an input first (a FIFO would hang dlopen; no output may replace it).
  if (requested.find('/') != std::string::npos && ::access(requested.c_str(), F_OK) == 0)
    ::close(files::openInput(requested));
  ChosenLibrary chosen = chooseLibrary(reader, requested, a.opt.ignoreVersion);
  if (!a.opt.quiet && chosen.how != "--lib") std::fprintf(stderr, "tensorrt_player: %s\n", describe(chosen).c_str());
  checkCallsExist(reader, chosen);
  return chosen;
}

// Refuses a capture with nothing to replay and says what is missing from an incomplete one.
void checkCapture(const Reader& reader, const Args& a) {
  const std::string cut = reader.truncationMessage();
  if (reader.truncatedAt() && *reader.truncatedAt() <= sizeof(format::FileHeader))  // not even the header block
    throw Error(Error::Kind::Truncated, cut + "; no capture to replay");
  if (reader.callCount() == 0)
    throw Error(Error::Kind::Empty,
                (cut.empty() ? a.capture + ": holds no calls" : cut + "; no calls before it") + " (nothing to replay)");
  if (!cut.empty())
    std::fprintf(stderr, "tensorrt_player: warning: %s; replaying the complete prefix\n", cut.c_str());
  else if (!reader.closedCleanly())
    std::fprintf(
        stderr,
        "tensorrt_player: warning: %s: not closed (the capture did not finish); replaying the %llu calls it holds\n",
        a.capture.c_str(), static_cast<unsigned long long>(reader.callCount()));
  if (const uint64_t lost = reader.lostBlobs())
    std::fprintf(stderr,
                 "tensorrt_player: warning: %s: %llu weight blobs were released by the app before the capture "
                 "read them (stored as lost): they replay as zeros, and an engine built from them differs\n",
                 a.capture.c_str(), static_cast<unsigned long long>(lost));
}

// The engine file of each network that will be built (trace network id -> path; "" without -o),
// all checked as outputs before any build. A --network the capture does not have is an error.
std::map<uint32_t, std::string> plannedOutputs(const Reader& reader, const Args& a) {
  std::set<uint64_t> networks;  // 64-bit: a huge --network must not wrap onto an existing id
  std::set<uint32_t> builds;
  reader.forEachCall([&](const CallView& c) {
    if (c.networkId()) networks.insert(c.networkId());
    // Every build entry point (the spec's flag), save one the capture could not record (UNSUPPORTED:
    // a trace of an older shim; --skip-unsupported leaves it out).
    const api::ApiDesc* d = api::find(c.apiId());
    if (d && d->has(api::flag::kBuild) && c.status() != CallStatus::Unsupported &&
        (a.opt.network < 0 || c.networkId() == uint64_t(a.opt.network)))
      builds.insert(c.networkId());
    return true;
  });
  if (a.network && !networks.count(traceNetworkId(static_cast<uint64_t>(*a.network))))
    throw Error(
        Error::Kind::Usage,
        "--network " + std::to_string(*a.network) + ": " + a.capture +
            (networks.empty() ? " has no networks" : " has networks 0 to " + std::to_string(networks.size() - 1)));
  std::map<uint32_t, std::string> out;
  for (uint32_t n : builds) {
    out[n] = a.output.empty() ? "" : builds.size() == 1 ? a.output : a.output + std::to_string(shownNetwork(n));
    if (!a.output.empty()) files::checkOutput(out[n]);  // inputs are all open now (a JSON's BIN too)
  }
  return out;
}

bool sameAsCapture(const NetworkResult& r) {
  return r.captured && r.captured->engineHash == r.engineHash && r.captured->engineSize == r.engineSize;
}

// What each built network's engine is, next to the capture's (absent: the capture recorded no
// engine for it); --json names it (vs_capture).
enum class Verdict { Identical, Different, Nondeterministic };
using Verdicts = std::map<uint32_t, Verdict>;

const char* verdictName(Verdict v) {
  switch (v) {
    case Verdict::Identical: return "identical";
    case Verdict::Different: return "different";
    case Verdict::Nondeterministic: return "nondeterministic";
  }
  return "unknown";
}

// What --check costs, for --help: each rebuild is one more build of a network whose engine differs.
constexpr const char* kCheckHelp =
    "compare each engine's XXH3-128 with the one recorded at capture; an engine that differs is rebuilt once "
    "at another heap layout before it is called different (one more build of that network). "
    "--check=thorough: up to 12 rebuilds at other heap layouts (up to 12 more builds of each differing "
    "network), which tells library nondeterminism (exit 5) from a real difference (exit 4) more surely";

// Every rebuild gave the first replay's engine: a difference (exit 4); the quick check says what
// the thorough one would add.
void reportDiffers(uint32_t network, const Recheck& rc, CheckDepth depth) {
  const int n = rc.builds - 1;
  const std::string failed = rc.failed ? ", " + std::to_string(rc.failed) + " wrote no engine" : "";
  const char* more = depth == CheckDepth::Quick ? "; --check=thorough tries up to 12 heap layouts" : "";
  std::fprintf(stderr, "tensorrt_player: network %u: differs: %d %s gave the first replay's engine%s%s\n", network, n,
               n == 1 ? "rebuild at another heap layout" : "rebuilds at other heap layouts", failed.c_str(), more);
}

// --check: an engine that differs gets a second opinion (recheck.h) before it is called different;
// a rebuild that gives the capture's engine replaces the output.
Verdicts compareWithCapture(const Args& a, const std::string& lib, std::vector<NetworkResult>& results) {
  Verdicts verdicts;
  for (auto& r : results) {
    if (!r.ok || !r.captured || !r.captured->ok) continue;
    auto& v = verdicts[r.network];
    v = sameAsCapture(r) ? Verdict::Identical : Verdict::Different;
    if (!a.check || v == Verdict::Identical) continue;
    std::vector<std::string> pass;
    if (a.opt.seed) pass.insert(pass.end(), {"--seed", std::to_string(a.opt.seed)});
    if (a.opt.skipUnsupported) pass.push_back("--skip-unsupported");
    if (a.opt.ignoreVersion) pass.push_back("--ignore-version");
    if (a.opt.trustWeights) pass.push_back("--trust-weights");
    if (!a.decodeCache.empty()) pass.insert(pass.end(), {"--decode-cache", a.decodeCache});
    const Recheck rc =
        recheckNetwork({a.capture, lib, pass}, shownNetwork(r.network), r.engineHash, r.engineSize,
                       r.captured->engineHash, r.captured->engineSize, r.path, rebuildsFor(a.checkDepth));
    if (rc.verdict == Recheck::Verdict::Matched) {
      r.engineHash = r.captured->engineHash, r.engineSize = r.captured->engineSize;
      v = Verdict::Identical;
      std::fprintf(stderr,
                   "tensorrt_player: network %u: identical to capture on a rebuild at another heap layout "
                   "(library nondeterminism: its first build differed)\n",
                   shownNetwork(r.network));
    } else if (rc.verdict == Recheck::Verdict::Nondeterministic) {
      v = Verdict::Nondeterministic;
      std::fprintf(stderr,
                   "tensorrt_player: network %u: differs: library nondeterminism suspected (%d builds at "
                   "different heap layouts gave %d distinct engines, none the capture's)\n",
                   shownNetwork(r.network), rc.builds, rc.distinct);
    } else {
      reportDiffers(shownNetwork(r.network), rc, a.checkDepth);
    }
  }
  return verdicts;
}

// The compressed weights decoded into a decode cache (trtrace/decode_cache.h) before the replay: the
// options from the environment and --decode-cache; --trust-weights also trusts a reused cache file.
// A rebuilt or unusable cache is said in one line (the replay goes on without it).
DecodeCacheReport decodeWeights(WeightsSource& weights, const Args& a) {
  DecodeCacheOptions o = DecodeCacheOptions::fromEnv();
  if (!a.decodeCache.empty()) o.setMode(a.decodeCache);
  o.verify = !a.opt.trustWeights;
  o.network = a.opt.network;  // --network: the other networks' weights are not decoded
  const bool folder = o.mode == DecodeCacheOptions::Mode::Folder;
  const DecodeCacheReport r = weights.useDecodeCache(o);
  using How = DecodeCacheReport::How;
  if (r.how == How::Rebuilt)
    std::fprintf(stderr, "tensorrt_player: decode cache: %s; rebuilt\n", r.note.c_str());
  else if ((r.how == How::Temp && folder) || (r.how == How::Off && o.mode != DecodeCacheOptions::Mode::Off))
    std::fprintf(stderr, "tensorrt_player: decode cache: %s; decoding %s\n", r.note.c_str(),
                 r.how == How::Temp ? "into a temporary file" : "into memory");
  if (!r.advice.empty()) std::fprintf(stderr, "tensorrt_player: decode cache: %s\n", r.advice.c_str());
  return r;
}

std::string cacheJson(const DecodeCacheReport& r) {
  char b[256];
  std::snprintf(b, sizeof b,
                "\"how\": \"%s\", \"blobs\": %llu, \"bytes\": %llu, \"failed\": %llu, \"threads\": %u, "
                "\"seconds\": %.6f",
                howName(r.how), (unsigned long long)r.blobs, (unsigned long long)r.bytes, (unsigned long long)r.failed,
                r.threads, r.seconds);
  return "{" + std::string(b) + ", \"path\": " + jsonString(r.path) + ", \"note\": " + jsonString(r.note) + "}";
}

// The phases as --json gives them: the monotonic time each ended at (ns), the build and engine-write
// seconds inside the replay, and what each --set did.
std::string phasesJson(const Replayer::Stats& s, const std::vector<Setting>& settings) {
  const Phases& p = gPhases;
  char b[512];
  std::snprintf(b, sizeof b,
                "{\"start_ns\": %lld, \"opened_ns\": %lld, \"library_ns\": %lld, \"decoded_ns\": %lld, "
                "\"replayed_ns\": %lld, \"checked_ns\": %lld, \"end_ns\": %lld, \"build_s\": %.6f, \"write_s\": %.6f}",
                (long long)p.main, (long long)p.opened, (long long)p.library, (long long)p.decoded,
                (long long)p.replayed, (long long)p.checked, (long long)Phases::now(), s.buildSeconds, s.outputSeconds);
  std::string out = std::string(", \"phases\": ") + b + ", \"settings\": [";
  for (size_t i = 0; i < settings.size(); ++i) {
    const Setting& t = settings[i];
    std::snprintf(b, sizeof b, "\"replaced\": %llu, \"added\": %llu, \"rejected\": %llu}",
                  (unsigned long long)t.replaced, (unsigned long long)t.added, (unsigned long long)t.rejected);
    out += (i ? ", {\"set\": " : "{\"set\": ") + jsonString(t.text) + ", " + b;
  }
  return out + "]";
}

void printJson(const Args& a, const Replayer::Stats& s, double openSeconds, const DecodeCacheReport& cache,
               const std::vector<NetworkResult>& results, const Verdicts& verdicts, const ChosenLibrary& lib,
               const std::vector<Setting>& settings) {
  std::printf(
      "{\"capture\": %s, \"calls\": %llu, \"skipped\": %llu, \"open_s\": %.6f, \"dispatch_s\": %.6f, "
      "\"build_s\": %.6f, \"scalar_mismatches\": %llu, %s, \"decode_cache\": %s, \"networks\": [",
      jsonString(a.capture).c_str(), (unsigned long long)s.calls, (unsigned long long)s.skipped, openSeconds,
      s.dispatchSeconds, s.buildSeconds, (unsigned long long)s.scalarMismatches, describeJson(lib).c_str(),
      cacheJson(cache).c_str());
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& r = results[i];
    const auto it = verdicts.find(r.network);
    const char* same = it == verdicts.end() ? "unknown" : verdictName(it->second);
    std::string errors;  // the library's error messages of this build, as it logged them
    for (const auto& e : r.errors) errors += (errors.empty() ? "" : ", ") + jsonString(e);
    std::printf(
        "%s{\"network\": %u, \"ok\": %s, \"engine\": %s, \"size\": %llu, \"xxh3\": \"%s\", "
        "\"build_s\": %.6f, \"vs_capture\": \"%s\", \"errors\": [%s]}",
        i ? ", " : "", shownNetwork(r.network), r.ok ? "true" : "false", jsonString(r.path).c_str(),
        (unsigned long long)r.engineSize, toHex(r.engineHash).c_str(), r.buildSeconds, same, errors.c_str());
  }
  std::printf("]%s}\n", phasesJson(s, settings).c_str());
}

void printText(const Args& a, const Replayer::Stats& s, double openSeconds, const std::vector<NetworkResult>& results,
               const Verdicts& verdicts) {
  for (const auto& r : results) {
    if (r.ok) {
      std::string vs = r.captured ? "" : std::string("; ") + kOutcomeUnknown;
      if (auto it = verdicts.find(r.network); it != verdicts.end())
        vs = it->second == Verdict::Identical   ? ", identical to capture"
             : it->second == Verdict::Different ? ", DIFFERENT from capture"
                                                : ", differs: library nondeterminism suspected";
      std::printf("network %u: engine %s (%llu bytes, xxh3 %s%s)\n", shownNetwork(r.network),
                  r.path.empty() ? "(not written)" : r.path.c_str(), (unsigned long long)r.engineSize,
                  toHex(r.engineHash).c_str(), vs.c_str());
    } else {
      std::printf("network %u: build failed%s%s%s:\n", shownNetwork(r.network), r.captured ? ", as at capture" : " (",
                  r.captured ? "" : kOutcomeUnknown, r.captured ? "" : ")");
      for (const auto& e : r.errors) std::printf("  %s\n", terminalText(e).c_str());  // they name the trace's layers
    }
  }
  if (!a.stats) return;
  std::fprintf(stderr, "stats: open %.3f ms, %llu calls dispatched in %.3f ms (%.0f calls/s), builds %.3f s\n",
               openSeconds * 1e3, (unsigned long long)s.calls, s.dispatchSeconds * 1e3,
               s.dispatchSeconds > 0 ? s.calls / s.dispatchSeconds : 0.0, s.buildSeconds);
  for (const auto& r : results)
    std::fprintf(stderr, "stats: network %u build %.3f s\n", shownNetwork(r.network), r.buildSeconds);
}

// -o asked for engines, and the capture (or the prefix a truncated one holds) has no build to give
// one: said, and an exit code of its own, rather than 0 with nothing written.
int nothingWritten(const Args& a, const Replayer::Stats& s) {
  std::fprintf(stderr, "tensorrt_player: %s\n",
               terminalText(a.capture + ": nothing written to " + a.output + ": no build among the " +
                            std::to_string(s.calls) + " calls replayed")
                   .c_str());
  return kNothingWritten;
}

int play(const Args& a) {
  using Clock = std::chrono::steady_clock;
  if (a.network && *a.network < 0)
    throw Error(Error::Kind::Usage, "--network " + std::to_string(*a.network) + ": networks are numbered from 0");
  auto t0 = Clock::now();
  checkCaptureExists(a.capture);
  convert::detect(a.capture);                           // the capture is an input: opened (and checked) first,
  if (!a.output.empty()) files::checkOutput(a.output);  // so that an output over it fails before any work
  std::vector<Setting> settings;
  for (const std::string& text : a.sets) settings.push_back(parseSetting(text));
  if (a.validateSet) return kOk;
  std::unique_ptr<Reader> reader = convert::openCapture(a.capture);
  const double openSeconds = std::chrono::duration<double>(Clock::now() - t0).count();
  gPhases.opened = Phases::now();
  checkCapture(*reader, a);
  const ChosenLibrary chosen = openLibrary(*reader, a);
  gPhases.library = Phases::now();
  const std::string lib = chosen.info.path;
  void* create = dlsym(chosen.handle, "createInferBuilder_INTERNAL");
  const std::map<uint32_t, std::string> outputs = plannedOutputs(*reader, a);
  WeightsSource weights(*reader);  // outlives the replayer, which holds views of its mappings
  const DecodeCacheReport cache = decodeWeights(weights, a);
  gPhases.decoded = Phases::now();
  Options opt = a.opt;
  opt.settings = &settings;

  std::vector<NetworkResult> results;
  bool failureReproduced = false;
  Replayer player(*reader, weights, opt, create);
  player.streamEnginesTo([&](uint32_t network) -> std::unique_ptr<EngineStream> {  // a streamed build's output
    const auto it = outputs.find(network);
    return it == outputs.end() || it->second.empty() ? nullptr : engineFile(it->second);
  });
  player.run([&](const NetworkResult& r0, const void* engine) {
    NetworkResult r = r0;  // a streamed engine (engine null) is in its file already
    if (auto it = outputs.find(r.network); engine && r.ok && it != outputs.end() && !it->second.empty()) {
      r.path = it->second;
      files::writeAtomically(r.path, engine, r.engineSize);
    }
    if (!r.ok) failureReproduced = true;
    results.push_back(r);
  });
  const auto& s = player.stats();
  if (s.calls == 0) throw Error(Error::Kind::Empty, a.capture + ": no call was replayed (nothing to do)");
  gPhases.replayed = Phases::now();
  const Verdicts verdicts = compareWithCapture(a, lib, results);
  gPhases.checked = Phases::now();
  if (a.json)
    printJson(a, s, openSeconds, cache, results, verdicts, chosen, settings);
  else
    printText(a, s, openSeconds, results, verdicts);
  auto any = [&](Verdict v) {
    return std::any_of(verdicts.begin(), verdicts.end(), [&](const auto& kv) { return kv.second == v; });
  };
  if (a.check && any(Verdict::Different)) return kEngineDiffers;
  if (a.check && any(Verdict::Nondeterministic)) return kNondeterministic;
  if (failureReproduced) return kFailureReproduced;
  if (results.empty() && !a.output.empty()) return nothingWritten(a, s);
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tensorrt_player: rebuild TensorRT-RTX engines from a capture, without the application"};
  app.set_version_flag("--version", trtrace::cli::versionLine("tensorrt_player"));
  Args a;
  app.add_option("-j,--json-file,capture", a.capture,
                 "capture: a trtrace trace, NVIDIA JSON (+BIN beside it), or oci://REF (docs/registry.md)")
      ->required();
  app.add_option("-o,--output", a.output, "engine file; several networks: <output>0, <output>1, ...");
  app.add_option("--lib", a.opt.libPath,
                 "the real libtensorrt_rtx.so.1 (default: TRT_SHIM_NVINFER_LIB_NAME, then the "
                 "trace's version from an installed tensorrt_rtx_libs, then the loader path)");
  app.add_option("--network", a.network, "replay only this network: 0, 1, ... in creation order (the <output> suffix)");
  app.add_option("--seed", a.opt.seed, "seed for weights the capture marked random")->check(CLI::NonNegativeNumber);
  app.add_flag("--skip-unsupported", a.opt.skipUnsupported, "skip calls the capture marked UNSUPPORTED");
  app.add_flag("--ignore-version", a.opt.ignoreVersion, "replay a capture of another library version");
  app.add_flag("--trust-weights", a.opt.trustWeights,
               "skip the content-hash check of raw weight blobs and of a reused decode cache (for a trace `trtrace "
               "verify` passed)");
  app.add_option("--decode-cache", a.decodeCache,
                 "where compressed weights are decoded to: a folder (reused by later replays), temp (a nameless "
                 "file) or off (memory); default TRTRACE_DECODE_CACHE, else $XDG_CACHE_HOME/trtrace");
  std::string check;
  app.add_flag("--check{quick}", check, kCheckHelp)
      ->check(CLI::Validator(
          [](std::string& v) { return v == "quick" || v == "thorough" ? "" : "takes quick or thorough, not " + v; },
          "[=thorough]"));
  app.add_flag("--stats", a.stats, "print open/dispatch/build times per network");
  app.add_flag("--json", a.json, "machine-readable summary on stdout");
  app.add_flag("-q,--quiet", a.opt.quiet, "hide the library's warnings");
  bool noWait = false;
  app.add_flag("--no-wait", noWait,
               "a capture still being finished by its finisher: fail at once (exit 7) instead of waiting for it");
  app.add_option("--set", a.sets,
                 "Interface::method=VALUE: a builder setting for this replay (a one-scalar method of the "
                 "API spec; enums by name): replaces the recorded call's value, or is made before the "
                 "build on its BuilderConfig; may be given more than once")
      ->allow_extra_args(false);
  app.add_flag("--validate-set", a.validateSet)->group("");  // trtrace bench: the --set values, before any run
  int heapShift = 0;                                         // internal: the --check rebuilds (recheck.h)
  app.add_option("--heap-shift", heapShift)->group("")->check(CLI::Range(0, 64));
  if (const int rc = trtrace::cli::parseCommandLine(app, argc, argv, "tensorrt_player"); rc >= 0) return rc;
  if (heapShift > 0) shiftHeap(std::min(heapShift, 64));
  trtrace::finishing::setWait(!noWait);
  a.check = !check.empty();
  a.checkDepth = check == "thorough" ? CheckDepth::Thorough : CheckDepth::Quick;
  a.opt.network = a.network && *a.network >= 0 ? int64_t(traceNetworkId(uint64_t(*a.network))) : -1;
  try {
    trtrace::registry::CachedTrace pulled;  // oci://...: the call log, then the weights replayed (docs/registry.md)
    if (trtrace::registry::isReference(a.capture)) {
      trtrace::registry::Need need;
      if (a.opt.network >= 0) need = {trtrace::registry::Need::Kind::Network, a.opt.network};
      pulled = trtrace::registry::pullCached(trtrace::registry::Reference::parse(a.capture),
                                             "tensorrt_player " + a.capture, need);
      a.capture = pulled.path;
    }
    return play(a);
  } catch (const Divergence& e) {
    std::fprintf(stderr, "tensorrt_player: %s\n", terminalText(a.capture + ": divergence at " + e.what()).c_str());
    return kDivergence;
  } catch (const std::exception& e) {  // trtrace::Error and the rest: one line, bad input
    std::fprintf(stderr, "tensorrt_player: %s\n", trtrace::cli::topLevelMessage(e, "replaying " + a.capture).c_str());
    const auto* err = dynamic_cast<const Error*>(&e);
    return err && err->kind() == Error::Kind::Finishing ? kStillFinishing : kBadInput;
  }
}
