// Capture session: the writer's lifecycle, the JSON+BIN export wired to it, the exit summary, and
// the process events (exit, fork, exec, fatal signals) that reach it. Each other role is a unit of
// its own (session.h).
#include "session.h"

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "fatal_signals.h"
#include "live_session.h"
#include "output_claim.h"
#include "shim.h"
#include "trt_values.h"
#include "trtrace/api_table.h"
#include "trtrace/convert.h"
#include "trtrace/progress.h"

namespace trtrace::capture {

Session::Session() {
  config_ = Config::fromEnv();
  rules_ = flushRules(config_);
  faults_.configure(processEnv);
  live::start(this, config_);
  if (!config_.tacticCache.empty())  // docs/json-bin-layout.md, "TRT_SHIM_SET_TACTIC_CACHE"
    std::fprintf(stderr,
                 "trtrace: note: TRT_SHIM_SET_TACTIC_CACHE=%s has no effect: timing caches are no-ops in "
                 "TensorRT-RTX\n",
                 config_.tacticCache.c_str());
  if (config_.printWelcome) {
    std::fprintf(stderr, "trtrace: Welcome to TensorRT Shim (trtrace capture of %s %s) -> %s\n", abi::kLibraryName,
                 abi::kLibraryVersion, config_.tracePath().c_str());
  }
  std::atexit([] { Session::get().close(); });
  pthread_atfork(nullptr, nullptr, [] { Session::get().forkedChild(); });
  flushOnFatalSignals([]() noexcept {
    if (Writer* w = Session::get().writer()) {
      try {
        w->flush();
      } catch (...) {}
    }
  });
}

bool Session::changeOutputJson(const std::string& p) {
  std::lock_guard<std::mutex> lk(mu_);
  if (opened_ && !json_.exporter()) {  // its calls were never encoded for a JSON (json_export.h)
    std::fprintf(stderr,
                 "trtrace: error: trtShimSetOutputJsonFile('%s'): the capture started without a JSON+BIN "
                 "export (set the path before the first TensorRT call, or TRT_SHIM_OUTPUT_JSON_FILE); not changed\n",
                 p.c_str());
    return false;
  }
  if (jsonWritten_) {
    std::fprintf(stderr,
                 "trtrace: error: trtShimSetOutputJsonFile('%s'): the JSON+BIN is already written to %s; "
                 "not changed\n",
                 p.c_str(), config_.outputJson.c_str());
    return false;
  }
  config_.outputJson = p;
  return true;
}

std::string Session::outputJsonPath() {
  std::lock_guard<std::mutex> lk(mu_);
  return config_.outputJson;
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
  h.settings = config_.settings();
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
    Claimed c = claimOutputs(baseTrace_, baseJson_, forked_ ? 1 : 0, static_cast<long>(getpid()));
    fd = c.fd;
    if (!forked_ && c.trace != baseTrace_)
      std::fprintf(stderr, "trtrace: %s exists (kept); this process writes %s\n", baseTrace_.c_str(), c.trace.c_str());
    path_ = config_.outputFile = c.trace;
    config_.outputJson = c.json;
    openWriter(fd);
  } catch (const std::exception& e) {
    writer_.reset();
    json_.stop();
    disabled_ = true;  // the file stays as written (empty, or its header), as after any failed write
    std::fprintf(stderr, "trtrace: capture disabled: %s\n", e.what());
  }
  if (fd >= 0) ::close(fd);  // the writer holds its own descriptor
}

// The writer on the claimed file `fd`, with the JSON+BIN export fed by it when one is configured.
void Session::openWriter(int fd) {
  WriterOptions o = writerOptions(config_, path_);
  o.fd = fd;
  o.writeFault = faults_.writeHook();
  HeaderInfo h = header();
  if (!config_.outputJson.empty()) json_.start(path_, h.libraryVersion, o);
  writer_ = Writer::create(o, h);
  lib::describeApis(*writer_);
  finishers_.configure(config_, !config_.outputJson.empty(), &faults_);
}

// A writer this process never destroys, kept reachable so that leak checkers see it as kept: one a
// finisher closes, the parent's after a fork (its workers did not survive), and one closed as the
// process ends, whose memory the exit frees at once (freed piece by piece, its maps and buffers
// cost the application's exit ~1.5M instructions on calls-20k; a failed exec leaves one such
// closed writer and its idle log thread behind).
static void keepWriter(std::unique_ptr<Writer> w) {
  [[maybe_unused]] static Writer* kept[64];
  static unsigned n;
  kept[n++ % 64] = w.release();
}

void Session::publishLocked(Writer* w) {
  live_.store(w, std::memory_order_release);
  off_.store(!w && (disabled_ || closed_), std::memory_order_release);
}

Writer* Session::writerSlowly() {
  if (off_.load(std::memory_order_acquire)) return nullptr;  // no lock once capture is off
  std::lock_guard<std::mutex> lk(mu_);
  if (!opened_ && !disabled_) open();
  Writer* w = disabled_ || closed_ ? nullptr : writer_.get();
  publishLocked(w);
  return w;
}

void Session::disable(const char* why) noexcept {
  Writer* w = nullptr;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (disabled_) return;
    disabled_ = true;
    publishLocked(nullptr);
    w = writer_.get();
    std::fprintf(stderr, "trtrace: capture disabled: %s\n", why);
  }
  // Weights still queued point into the application's memory, which it may free once this call
  // returns: wait until the workers let go of them (after a failed write they skip them unread).
  if (w) {
    try {
      w->drainBlobs();
    } catch (...) {}
  }
}

void Session::exportJson() noexcept {
  // TRT_SHIM_OUTPUT_JSON_FILE: NVIDIA's JSON+BIN pair brought up to date at each flush point
  // (json_output.h); once it failed, the summary does not name the JSON.
  std::string json;
  try {
    std::lock_guard<std::mutex> lk(mu_);
    json = config_.outputJson;
    jsonWritten_ = jsonWritten_ || !json.empty();  // trtShimSetOutputJsonFile no longer changes it
  } catch (...) {
    return;  // out of memory copying the path: this flush point is skipped
  }
  json_.flush(json);
}

void Session::exportAfterCall() noexcept {
  if (writer()) exportJson();
}

void Session::drain() noexcept {
  guarded([this](Writer& w) {
    finishers_.handOff(w, path_);  // from TRTRACE_FINISHER_MB queued: written by a finisher (finisher.h)
    w.drainBlobs();                // what the workers are writing now
    w.flushBehind();               // the open segment written meanwhile: an exit that follows finds little left
  });
}

void Session::afterBuild() noexcept {
  drain();
  if (rules_.flushAfterBuild && guarded([](Writer& w) { w.flush(); })) exportJson();
}

void Session::close() noexcept {
  std::unique_ptr<Writer> w;
  bool failed = false;
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (closed_) return;
    closed_ = true;
    publishLocked(nullptr);
    w = std::move(writer_);
    failed = disabled_;
  }
  // Disabled (a failed write): the trace stays the prefix written so far, said once already.
  // The writer's destructor only stops its workers (a failed writer writes nothing more).
  if (!w || failed) return;
  try {
    if (const pid_t finisher = finishers_.closing(*w, path_)) {  // it completes the trace (finisher.h)
      summary(w->stats(), finisher);
      keepWriter(std::move(w));
      return;
    }
    // A huge model's weights may still be queued for compression: report the final drain.
    if (const uint64_t pending = w->pendingBlobBytes()) {
      Progress p("trtrace " + path_, "writing queued weights", pending);
      w->drainBlobs([&](uint64_t left) { p.update(pending - std::min(left, pending)); });
    }
    w->close();
    finishers_.closed();  // every finisher done: the marker one of them left goes
    const Writer::Stats s = w->stats();
    exportJson();
    if (config_.testJsonCounts && json_.exporter())  // test hook (Config::testJsonCounts)
      std::fprintf(stderr, "trtrace: test: JSON+BIN export: %s\n", json_.exporter()->counts().c_str());
    summary(s);
    keepWriter(std::move(w));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trtrace: error closing %s: %s\n", path_.c_str(), e.what());
  } catch (...) { std::fprintf(stderr, "trtrace: error closing %s\n", path_.c_str()); }
}

// The closing line: what was captured, and where it went.
void Session::summary(const Writer::Stats& s, pid_t finisher) {
  std::string out = path_;
  if (finisher) out += " (being finished by pid " + std::to_string(finisher) + ")";
  if (!config_.outputJson.empty() && !json_.failed())
    out += " and " + config_.outputJson + " (+ " + convert::binPathFor(config_.outputJson) + ")";
  // Weights the app released before the capture read them (format.h, Lost): said in the same line.
  std::string lost;
  if (s.lostBlobs)
    lost = "; " + std::to_string(s.lostBlobs) + " blobs (" + humanBytes(double(s.lostBytes)) +
           ") released by the app before they were read: stored as lost, replayed as zeros";
  const char* by = finisher ? " by the app (the rest by its finisher)" : "";
  std::fprintf(stderr,
               "trtrace: captured %llu calls, %u networks; weights %s logical, %s unique, %s stored%s%s -> %s\n",
               static_cast<unsigned long long>(s.calls), objects_.networks(),
               humanBytes(double(s.blobPutBytes)).c_str(), humanBytes(double(s.uniqueBytes)).c_str(),
               humanBytes(double(s.storedBytes)).c_str(), by, lost.c_str(), out.c_str());
}

void Session::forkedChild() {
  if (Finishers::forkingFinisher()) return;  // our own finisher: it never returns to the application
  // The parent's writer shares the parent's file and its worker threads did not survive the fork:
  // leave it untouched (leaked on purpose) and let the child write its own file. A lock another
  // thread held at the fork stays held in the child: each is made anew.
  new (&mu_) std::mutex();
  live_.store(nullptr);
  objects_.afterFork();
  Object::afterFork();
  weights_.afterFork();
  live::ownedByThisProcess();
  json_.abandon();
  keepWriter(std::move(writer_));
  finishers_.afterForkInApp();
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
  publishLocked(nullptr);
  jsonWritten_ = false;
}

void Session::processEnding() noexcept {
  Session* s = live::own();
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
  Session* s = live::own();
  if (!s) return;
  std::lock_guard<std::mutex> lk(s->mu_);
  if (s->closed_ && !s->disabled_) s->reopenable();
}

}  // namespace trtrace::capture
