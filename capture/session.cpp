// Capture session: configuration, writer lifecycle, object registry, flush rules, exit summary.
#include "session.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "shim.h"
#include "trt_values.h"
#include "trtrace/api_table.h"
#include "trtrace/capture_names.h"
#include "trtrace/convert.h"
#include "trtrace/error.h"
#include "trtrace/progress.h"

namespace trtrace::capture {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

void warnBad(const char* name, const char* value, const char* expected) {
  std::fprintf(stderr, "trtrace: warning: %s='%s' is not %s; using the default\n", name, value, expected);
}

bool envBool(const char* name, bool def) {
  const char* v = env(name);
  if (!v) return def;
  std::string s(v);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  warnBad(name, v, "a boolean (1/0, true/false, yes/no, on/off)");
  return def;
}

int64_t envInt(const char* name, int64_t def) {
  const char* v = env(name);
  if (!v) return def;
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v, &end, 10);
  if (errno || end == v || *end || x < 0 || x > INT_MAX) {
    warnBad(name, v, "an integer in [0, 2147483647]");
    return def;
  }
  return x;
}

// ---- Output names (docs/design.md, "Output names"; capture_names.h) -------------------------------
// A capture only ever writes a file it creates: an existing trace (finished, cut short by a crash,
// or being written by a live process) is never opened, emptied or replaced, so no build it holds is
// lost and a reader mapping it keeps its bytes. The process takes the first free candidate name.

bool nameExists(const std::string& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 || errno != ENOENT;  // unknown: taken
}

struct Claimed {
  int fd = -1;  // the new, empty trace
  std::string trace, json;
};

constexpr unsigned kMaxCandidates = 1000;

// Creates the first candidate trace (from `first`: 1 for a forked child) whose JSON and BIN, when
// exported, are free too. O_EXCL makes taking a name atomic among processes; O_NOFOLLOW with it
// refuses a link at the name. Throws Error (Io) when a name cannot be created for another reason.
Claimed claimOutputs(const std::string& trace, const std::string& json, unsigned first) {
  for (unsigned k = first; k < kMaxCandidates; ++k) {
    const std::string sfx = capture_names::suffix(k, static_cast<long>(getpid()));
    Claimed c{-1, trace + sfx, json.empty() ? "" : capture_names::jsonWithSuffix(json, sfx)};
    if (!c.json.empty() && (nameExists(c.json) || nameExists(convert::binPathFor(c.json)))) continue;
    c.fd = ::open(c.trace.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (c.fd >= 0) return c;
    if (errno != EEXIST) throw Error(Error::Kind::Io, c.trace + ": cannot create (" + std::strerror(errno) + ")");
  }
  throw Error(Error::Kind::Io, trace + ": " + std::to_string(kMaxCandidates) +
                                   " names of this process are taken (" + trace + ".<pid>.<n>)");
}

// The process whose session this memory holds: set when the session starts and in a forked
// child. A vfork child (no fork handlers run) shares the parent's memory and sees another pid.
std::atomic<pid_t> gSessionPid{0};

// ---- Test fault injector ------------------------------------------------------------------------
// TRTRACE_FAULT_KILL_AT_CALL=N (test-only; docs/design.md "Robustness"): the process raises SIGKILL
// when the recording of call N (0-based, in the order calls start being recorded) begins, so call N
// and everything after it never reach the trace. The crash-safety tests use it to kill the
// application at exact, reproducible points. Unset (the default): no effect beyond one load.
std::atomic<int64_t> gKillAtCall{-1};
std::atomic<int64_t> gCallsStarted{0};

// TRTRACE_FAULT_WRITE_FAIL=N[:EIO] (test-only; docs/design.md "Robustness"): write N (0-based,
// counting every write the trace writer makes to the file, on any thread) fails with ENOSPC (or
// EIO), as on a full disk or a failing device: faults a test cannot get from a real filesystem on
// demand. The writer's own fault hook (WriterOptions::writeFault) applies it. Unset: no hook.
int64_t gFailWriteAt = -1;
int gFailWriteErrno = ENOSPC;
std::atomic<int64_t> gWrites{0};
int writeFault() { return gWrites.fetch_add(1) == gFailWriteAt ? gFailWriteErrno : 0; }

void parseWriteFault(const char* v) {
  std::string s(v);
  const size_t colon = s.find(':');
  const std::string err = colon == std::string::npos ? "ENOSPC" : s.substr(colon + 1);
  char* end = nullptr;
  const long long n = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str() || (*end && *end != ':') || n < 0 || (err != "ENOSPC" && err != "EIO")) {
    warnBad("TRTRACE_FAULT_WRITE_FAIL", v, "N or N:ENOSPC or N:EIO");
    return;
  }
  gFailWriteAt = n;
  gFailWriteErrno = err == "EIO" ? EIO : ENOSPC;
}

// Best-effort flush when the application dies of a fatal signal, then the previous disposition:
// the faults, abort, and the signals that end a process by default (SIGTERM, a closed terminal's
// SIGHUP, SIGINT, SIGQUIT). A signal the process ignores at start is left alone: it ends nothing.
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTERM, SIGHUP, SIGINT, SIGQUIT};
struct sigaction gPrevious[sizeof(kFatalSignals) / sizeof(int)];
std::atomic<bool> gInSignal{false};

void onFatalSignal(int sig) {
  if (!gInSignal.exchange(true)) {
    // Not async-signal-safe; this is the documented best effort for a process that is dying.
    // A watchdog ends the process if the flush cannot finish (e.g. the signal arrived while this
    // thread held a writer lock): a dying application must never hang on our account.
    signal(SIGALRM, SIG_DFL);
    alarm(10);
    if (Writer* w = Session::get().writer()) {
      try { w->flush(); } catch (...) {}
    }
  }
  for (size_t i = 0; i < std::size(kFatalSignals); ++i)
    if (kFatalSignals[i] == sig) sigaction(sig, &gPrevious[i], nullptr);
  raise(sig);
}

void installSignalHandlers() {
  for (size_t i = 0; i < std::size(kFatalSignals); ++i) {
    if (sigaction(kFatalSignals[i], nullptr, &gPrevious[i]) == 0 && gPrevious[i].sa_handler == SIG_IGN) continue;
    struct sigaction sa {};
    sa.sa_handler = onFatalSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(kFatalSignals[i], &sa, &gPrevious[i]);
  }
}


// trtShimSetOutputJsonFile before the session starts: kept here, applied by Config::fromEnv.
// gApiMu also orders the setter against the session's start (gLive).
std::mutex gApiMu;
std::string gApiJson;
bool gApiJsonSet = false;
std::atomic<Session*> gLive{nullptr};

}  // namespace

std::string Config::tracePath() const {
  if (!outputFile.empty()) return outputFile;
  if (!outputJson.empty()) {
    std::string p = outputJson;
    if (p.size() > 5 && p.compare(p.size() - 5, 5, ".json") == 0) p.resize(p.size() - 5);
    return p + ".trtrace";
  }
  return "capture.trtrace";
}

Config Config::fromEnv() {
  Config c;
  if (const char* v = env("TRT_SHIM_OUTPUT_FILE")) c.outputFile = v;
  if (const char* v = env("TRT_SHIM_OUTPUT_JSON_FILE")) c.outputJson = v;
  if (const char* v = env("TRT_SHIM_NVINFER_LIB_NAME")) c.libName = v;
  c.dumpApi = envBool("TRT_SHIM_DUMP_API", false);
  c.printWelcome = envBool("TRT_SHIM_PRINT_WELCOME", false);
  c.inlineMax = envInt("TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN", 8);
  c.randomMin = envInt("TRT_SHIM_MARK_AS_RANDOM_WEIGHTS_GREATER_EQUAL_THAN", INT_MAX);
  c.flushEveryCall = envBool("TRT_SHIM_FLUSH_AFTER_EVERY_CALL", false);
  c.flushOnBuild = envBool("TRT_SHIM_FLUSH_ON_BUILD", false);
  c.singleThread = envBool("TRT_SHIM_FORCE_SINGLE_THREAD_API", false);
  if (const char* v = env("TRT_SHIM_SET_TACTIC_CACHE")) c.tacticCache = v;
  if (gApiJsonSet) c.outputJson = gApiJson;  // trtShimSetOutputJsonFile wins over the environment
  c.ignoreVersion = envBool("TRTRACE_IGNORE_VERSION", false);
  c.zstdLevel = static_cast<int>(std::min<int64_t>(envInt("TRTRACE_ZSTD_LEVEL", c.zstdLevel), 22));
  c.durable = envBool("TRTRACE_SYNC", false);
  c.workers = static_cast<int>(std::min<int64_t>(envInt("TRTRACE_CAPTURE_WORKERS", c.workers), 64));
  c.queueMiB = envInt("TRTRACE_CAPTURE_QUEUE_MB", c.queueMiB);
  if (env("TRTRACE_FAULT_KILL_AT_CALL")) gKillAtCall = envInt("TRTRACE_FAULT_KILL_AT_CALL", -1);
  if (const char* v = env("TRTRACE_FAULT_WRITE_FAIL")) parseWriteFault(v);
  c.testJsonCounts = envBool("TRTRACE_TEST_JSON_COUNTS", false);
  return c;
}

Session& Session::get() {
  static Session* s = new Session();  // never destroyed: wrappers may outlive static destruction
  return *s;
}

Session::Session() {
  {
    std::lock_guard<std::mutex> lk(gApiMu);
    config_ = Config::fromEnv();
    gSessionPid = getpid();
    gLive = this;
  }
  if (!config_.tacticCache.empty())  // docs/json-bin-layout.md, "TRT_SHIM_SET_TACTIC_CACHE"
    std::fprintf(stderr, "trtrace: note: TRT_SHIM_SET_TACTIC_CACHE=%s has no effect: timing caches are no-ops in "
                 "TensorRT-RTX\n", config_.tacticCache.c_str());
  if (config_.printWelcome) {
    std::fprintf(stderr, "trtrace: Welcome to TensorRT Shim (trtrace capture of %s %s) -> %s\n",
                 abi::kLibraryName, abi::kLibraryVersion, config_.tracePath().c_str());
  }
  std::atexit([] { Session::get().close(); });
  pthread_atfork(nullptr, nullptr, [] { Session::get().forkedChild(); });
  installSignalHandlers();
}

bool Session::setOutputJson(const char* path) noexcept {
  try {
    const std::string p = path ? path : "";
    const size_t slash = p.find_last_of('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : p.substr(0, slash);
    if (p.empty() || p.back() == '/' || ::access(dir.c_str(), F_OK) != 0) {
      std::fprintf(stderr, "trtrace: error: trtShimSetOutputJsonFile('%s'): %s; not changed\n", p.c_str(),
                   p.empty() || p.back() == '/' ? "not a file name" : ("no directory " + dir).c_str());
      return false;
    }
    std::lock_guard<std::mutex> lk(gApiMu);
    Session* s = gLive.load();
    if (!s) {
      gApiJson = p;
      gApiJsonSet = true;
      return true;
    }
    std::lock_guard<std::mutex> lk2(s->mu_);
    if (s->opened_ && !s->json_) {  // its calls were never encoded for a JSON (json_export.h)
      std::fprintf(stderr, "trtrace: error: trtShimSetOutputJsonFile('%s'): the capture started without a JSON+BIN "
                   "export (set the path before the first TensorRT call, or TRT_SHIM_OUTPUT_JSON_FILE); not changed\n",
                   p.c_str());
      return false;
    }
    if (s->jsonWritten_) {
      std::fprintf(stderr, "trtrace: error: trtShimSetOutputJsonFile('%s'): the JSON+BIN is already written to %s; "
                   "not changed\n", p.c_str(), s->config_.outputJson.c_str());
      return false;
    }
    s->config_.outputJson = p;
    return true;
  } catch (...) {  // out of memory: the path stays as it was
    return false;
  }
}

size_t Session::outputJson(char* buf, size_t size) noexcept {
  try {
    std::string path;
    {
      std::lock_guard<std::mutex> lk(gApiMu);
      if (Session* s = gLive.load()) {
        std::lock_guard<std::mutex> lk2(s->mu_);
        path = s->config_.outputJson;
      } else {
        const char* v = env("TRT_SHIM_OUTPUT_JSON_FILE");
        path = gApiJsonSet ? gApiJson : v ? v : "";
      }
    }
    if (buf && size) std::snprintf(buf, size, "%s", path.c_str());
    return path.size();
  } catch (...) {
    if (buf && size) buf[0] = 0;
    return 0;
  }
}

std::recursive_mutex& Session::apiLock() {
  static std::recursive_mutex m;
  return m;
}

void Session::callStarting() {
  const int64_t n = gCallsStarted.fetch_add(1);
  if (n == gKillAtCall.load(std::memory_order_relaxed)) raise(SIGKILL);  // test fault injector (above)
}

WriterOptions Session::writerOptions() const {
  WriterOptions o;
  o.path = path_;
  o.zstdLevel = config_.zstdLevel;
  o.durable = config_.durable;
  o.rawWhenWaitedOn = true;  // the application never waits for zstd (docs/design.md, "Capture cost")
  // Flush after every call: a call's weights must be on disk before the segment naming them, so
  // blobs are written on the calling thread (a worker could still hold them when the app dies).
  o.workerThreads = config_.flushEveryCall ? 0 : config_.workers;
  o.queueBytes = config_.queueMiB > 0 ? static_cast<uint64_t>(config_.queueMiB) << 20 : UINT64_MAX;
  if (gFailWriteAt >= 0) o.writeFault = writeFault;  // test fault injector (above)
  o.flush = config_.flushEveryCall ? FlushPolicy::EveryCall
            : config_.flushOnBuild ? FlushPolicy::OnBuild
                                   : FlushPolicy::AtClose;
  return o;
}

HeaderInfo Session::header() const {
  HeaderInfo h;
  h.producer = "trtrace-capture";
  h.producerVersion = TRTRACE_VERSION;
  h.libraryName = abi::kLibraryName;
  // The real library's version and build id (a trace names what it was captured from).
  const lib::LibraryInfo& real = realLibrary();
  h.libraryVersion = real.version.empty() ? abi::kLibraryVersion : real.version;
  h.libraryBuildId = real.buildId;
  h.settings = {
      {"TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN", std::to_string(config_.inlineMax)},
      {"TRT_SHIM_MARK_AS_RANDOM_WEIGHTS_GREATER_EQUAL_THAN", std::to_string(config_.randomMin)},
      {"TRT_SHIM_FLUSH_AFTER_EVERY_CALL", config_.flushEveryCall ? "1" : "0"},
      {"TRT_SHIM_FLUSH_ON_BUILD", config_.flushOnBuild ? "1" : "0"},
  };
  if (!config_.outputJson.empty()) h.settings.emplace_back("TRT_SHIM_OUTPUT_JSON_FILE", config_.outputJson);
  return h;
}

void Session::open() {
  opened_ = true;
  baseTrace_ = config_.tracePath();
  baseJson_ = config_.outputJson;
  int fd = -1;
  try {
    // The configured names when free; else <trace>.<pid> (x.<pid>.json), said in one line
    // (a forked child's own names need no line: docs/design.md, "Output names").
    Claimed c = claimOutputs(baseTrace_, baseJson_, forked_ ? 1 : 0);
    fd = c.fd;
    if (!forked_ && c.trace != baseTrace_)
      std::fprintf(stderr, "trtrace: %s exists (kept); this process writes %s\n", baseTrace_.c_str(), c.trace.c_str());
    path_ = config_.outputFile = c.trace;
    config_.outputJson = c.json;
    WriterOptions o = writerOptions();
    o.fd = fd;
    HeaderInfo h = header();
    if (!config_.outputJson.empty()) {
      json_ = std::make_unique<JsonExport>(path_, h.libraryVersion);
      o.onCall = [json = json_.get()](const CallView& c) { json->add(c); };
    }
    writer_ = Writer::create(o, h);
    lib::describeApis(*writer_);
  } catch (const std::exception& e) {
    writer_.reset();
    json_.reset();
    disabled_ = true;  // the file stays as written (empty, or its header), as after any failed write
    std::fprintf(stderr, "trtrace: capture disabled: %s\n", e.what());
  }
  if (fd >= 0) ::close(fd);  // the writer holds its own descriptor
}

uint64_t Session::weightsIdentity(const void* values) {
  std::lock_guard lk(ptrMu_);
  return weightsPtrs_.try_emplace(values, weightsPtrs_.size() + 1).first->second;
}

Writer* Session::writer() {
  std::lock_guard<std::mutex> lk(mu_);
  if (!opened_ && !disabled_) open();
  return disabled_ || closed_ ? nullptr : writer_.get();
}

void Session::disable(const char* why) noexcept {
  Writer* w = nullptr;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (disabled_) return;
    disabled_ = true;
    w = writer_.get();
    std::fprintf(stderr, "trtrace: capture disabled: %s\n", why);
  }
  // Weights still queued point into the application's memory, which it may free once this call
  // returns: wait until the workers let go of them (after a failed write they skip them unread).
  if (w) {
    try { w->drainBlobs(); } catch (...) {}
  }
}

Object* Session::wrap(const void* real, const Iface& iface, Object* owner, uint32_t network) {
  if (!real) return nullptr;
  std::lock_guard<std::mutex> lk(mu_);
  auto it = byReal_.find(real);
  if (it != byReal_.end()) return it->second;
  Object* o = iface.make(const_cast<void*>(real));
  o->handle = ++nextHandle_;
  o->network = network;
  if (!iface.appOwned && owner) {
    o->owner = owner;
    owner->owned.push_back(o);
  }
  byReal_.emplace(real, o);
  return o;
}

Object* Session::find(const void* real) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = byReal_.find(real);
  return it == byReal_.end() ? nullptr : it->second;
}

void Session::unregister(Object* o) {
  std::lock_guard<std::mutex> lk(mu_);
  auto it = byReal_.find(o->real);
  if (it != byReal_.end() && it->second == o) byReal_.erase(it);
  if (o->owner) {
    auto& v = o->owner->owned;
    v.erase(std::remove(v.begin(), v.end(), o), v.end());
  }
}

void Session::exportJson() noexcept {
  // TRT_SHIM_OUTPUT_JSON_FILE: NVIDIA's JSON+BIN pair brought up to date at each flush point with
  // the calls encoded since the last one (json_export.h: created complete at the first flush, then
  // the JSON updated in place and the BIN appended). A failure is said once and stops the export
  // (the trace goes on); the summary then does not name the JSON.
  std::string json;
  try {
    {
      std::lock_guard<std::mutex> lk(mu_);
      json = config_.outputJson;
      jsonWritten_ = jsonWritten_ || !json.empty();  // trtShimSetOutputJsonFile no longer changes it
    }
    if (json.empty() || !json_ || jsonFailed_) return;
    json_->flush(json);
  } catch (const std::exception& e) {
    if (!jsonFailed_.exchange(true))
      std::fprintf(stderr, "trtrace: %s; not writing the JSON+BIN export\n", e.what());
  } catch (...) {
    if (!jsonFailed_.exchange(true))
      std::fprintf(stderr, "trtrace: %s: error writing; not writing the JSON+BIN export\n", json.c_str());
  }
}

void Session::afterCall() noexcept {
  if (config_.flushEveryCall && writer()) exportJson();
}

void Session::drain() noexcept {
  guarded([](Writer& w) { w.drainBlobs(); });
}

void Session::afterBuild() noexcept {
  drain();
  if (config_.flushOnBuild && guarded([](Writer& w) { w.flush(); })) exportJson();
}

bool Session::guarded(const std::function<void(Writer&)>& use) noexcept {
  try {
    Writer* w = writer();
    if (!w) return false;
    use(*w);
    return true;
  } catch (const std::exception& e) {
    disable(e.what());
  } catch (...) {
    disable("unknown error");
  }
  return false;
}

void Session::close() noexcept {
  std::unique_ptr<Writer> w;
  bool failed = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (closed_) return;
    closed_ = true;
    w = std::move(writer_);
    failed = disabled_;
  }
  // Disabled (a failed write): the trace stays the prefix written so far, said once already.
  // The writer's destructor only stops its workers (a failed writer writes nothing more).
  if (!w || failed) return;
  try {
    // A huge model's weights may still be queued for compression: report the final drain.
    if (const uint64_t pending = w->pendingBlobBytes()) {
      Progress p("trtrace " + path_, "writing queued weights", pending);
      w->drainBlobs([&](uint64_t left) { p.update(pending - std::min(left, pending)); });
    }
    w->close();
    Writer::Stats s = w->stats();
    exportJson();
    if (config_.testJsonCounts && json_)  // test hook (Config::testJsonCounts)
      std::fprintf(stderr, "trtrace: test: JSON+BIN export: %s\n", json_->counts().c_str());
    std::string out = path_;
    if (!config_.outputJson.empty() && !jsonFailed_) out += " and " + config_.outputJson + " (+ " + convert::binPathFor(config_.outputJson) + ")";
    // Weights the app released before the capture read them (format.h, Lost): said in the same line.
    std::string lost;
    if (s.lostBlobs)
      lost = "; " + std::to_string(s.lostBlobs) + " blobs (" + humanBytes(double(s.lostBytes)) +
             ") released by the app before they were read: stored as lost, replayed as zeros";
    std::fprintf(stderr,
                 "trtrace: captured %llu calls, %u networks; weights %s logical, %s unique, %s stored%s -> %s\n",
                 static_cast<unsigned long long>(s.calls), networks_.load(), humanBytes(double(s.blobPutBytes)).c_str(),
                 humanBytes(double(s.uniqueBytes)).c_str(), humanBytes(double(s.storedBytes)).c_str(), lost.c_str(),
                 out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trtrace: error closing %s: %s\n", path_.c_str(), e.what());
  } catch (...) {
    std::fprintf(stderr, "trtrace: error closing %s\n", path_.c_str());
  }
}

void Session::forkedChild() {
  // The parent's writer shares the parent's file and its worker threads did not survive the fork:
  // leave it untouched (leaked on purpose) and let the child write its own file.
  new (&mu_) std::mutex();
  gSessionPid = getpid();
  [[maybe_unused]] static Writer* abandonedAtFork[64];  // reachable, so leak checkers see them as kept, not lost
  [[maybe_unused]] static JsonExport* abandonedJsonAtFork[64];  // the writer's export, likewise
  static unsigned forks;
  abandonedJsonAtFork[forks % 64] = json_.release();
  abandonedAtFork[forks++ % 64] = writer_.release();
  reopenable();
  forked_ = true;
}

void Session::reopenable() {
  if (opened_) {
    config_.outputFile = baseTrace_;
    config_.outputJson = baseJson_;
  }
  opened_ = false;
  closed_ = false;
  jsonWritten_ = false;
}

// Whether the running process owns the live session (see gSessionPid); nullptr otherwise.
static Session* ownSession() {
  Session* s = gLive.load();
  return s && gSessionPid.load() == getpid() ? s : nullptr;
}

void Session::processEnding() noexcept {
  Session* s = ownSession();
  if (!s) return;
  // Inside a recorded call on this thread (a logger callback or a signal handler that ends the
  // process): the call cannot complete, so what is complete is flushed, as for a fatal signal.
  if (callInProgress()) {
    s->guarded([](Writer& w) { w.flush(); });
    return;
  }
  s->close();
}

void Session::execFailed() noexcept {
  Session* s = ownSession();
  if (!s) return;
  std::lock_guard<std::mutex> lk(s->mu_);
  if (s->closed_ && !s->disabled_) s->reopenable();
}

}  // namespace trtrace::capture
