// The capture session: configuration from the environment, the trace writer, and the registry of
// our objects. One per process (a forked child starts its own, writing `<output>.<pid>`). Its
// trace is a file it creates, never one that exists (docs/design.md, "Output names").
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "json_export.h"
#include "trtrace/writer.h"

namespace trtrace::capture {

struct Object;
struct Iface;

// The documented TRT_SHIM_* variables (shared/reference/capture-replay-trt-rtx.txt) plus ours.
struct Config {
  std::string outputFile;       // TRT_SHIM_OUTPUT_FILE: the binary trace (default output)
  std::string outputJson;       // TRT_SHIM_OUTPUT_JSON_FILE: NVIDIA's JSON+BIN pair (documented default capture.json)
  std::string libName;          // TRT_SHIM_NVINFER_LIB_NAME (empty: the discovery order, libinfo/library.h)
  bool dumpApi = false;         // TRT_SHIM_DUMP_API: enter/exit line per call on stderr
  bool printWelcome = false;    // TRT_SHIM_PRINT_WELCOME
  int64_t inlineMax = 8;        // TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN (elements)
  int64_t randomMin = 2147483647;  // TRT_SHIM_MARK_AS_RANDOM_WEIGHTS_GREATER_EQUAL_THAN (elements)
  bool flushEveryCall = false;  // TRT_SHIM_FLUSH_AFTER_EVERY_CALL
  bool flushOnBuild = false;    // TRT_SHIM_FLUSH_ON_BUILD
  bool singleThread = false;    // TRT_SHIM_FORCE_SINGLE_THREAD_API: one recorded call at a time, process-wide
  std::string tacticCache;      // TRT_SHIM_SET_TACTIC_CACHE: accepted, no effect on TensorRT-RTX (one note)
  bool ignoreVersion = false;   // TRTRACE_IGNORE_VERSION: capture a library version the spec does not describe
  // Weight storage (BENCHMARKS.md, "Hot spots fixed"): zstd level 1 is faster than 3 and compresses
  // byte-grouped weights as well; 0 stores every blob raw. Workers compress/write off the app's thread.
  int zstdLevel = kDefaultBlobZstdLevel;  // TRTRACE_ZSTD_LEVEL
  bool durable = false;         // TRTRACE_SYNC (WriterOptions::durable)
  int workers = 2;              // TRTRACE_CAPTURE_WORKERS
  // Bytes of weights queued (pointers only: zero-copy) before a call waits for the workers; 0 = no
  // limit. TensorRT requires weights to stay valid until the build, and the queue drains at every
  // build and when a network is destroyed, so the app's thread need not wait for compression.
  int64_t queueMiB = 0;         // TRTRACE_CAPTURE_QUEUE_MB
  // Test hook (TRTRACE_TEST_JSON_COUNTS): one closing line with the JSON+BIN export's counts
  // (JsonExport::counts): its work is linear in the calls. Off: no effect.
  bool testJsonCounts = false;
  std::string tracePath() const;  // where the binary trace goes
  static Config fromEnv();        // bad values: one warning line each, default kept
};

class Session {
 public:
  static Session& get();  // created on first use; never destroyed (atexit closes the writer)

  // trtShimSetOutputJsonFile / trtShimGetOutputJsonFile (NVIDIA's shim C interface, as its shim
  // behaves: docs/json-bin-layout.md): the JSON+BIN path, changeable until the first JSON flush;
  // before the first intercepted call it is kept and applied when the session starts (the
  // environment is read then, not at load). set: false (one line) for a path whose folder does not
  // exist or once the JSON+BIN is written. get: the path's length, copied NUL-terminated into
  // buf[size] (truncated), "" when no JSON+BIN is configured.
  static bool setOutputJson(const char* path) noexcept;
  static size_t outputJson(char* buf, size_t size) noexcept;

  const Config& config() const { return config_; }
  // The writer, opened on first use; nullptr when capture is off (open failed, closed, disabled).
  Writer* writer();
  // Stop recording (passthrough continues), say why once; waits until queued weights are let go.
  void disable(const char* why) noexcept;
  // Runs `use` on the writer unless capture is off; any failure (a failed write, out of memory)
  // disables the capture instead of reaching the application. Returns whether `use` completed.
  // Every use of the writer from an application's thread goes through here or through Call.
  bool guarded(const std::function<void(Writer&)>& use) noexcept;

  // Registry of our objects, keyed by the real object.
  Object* wrap(const void* real, const Iface& iface, Object* owner, uint32_t network);
  Object* find(const void* real);
  void unregister(Object* o);
  uint32_t newNetworkId() { return ++networks_; }

  void afterCall() noexcept;  // flush-after-every-call policy (JSON mode: the JSON+BIN brought up to date)
  void exportJson() noexcept; // TRT_SHIM_OUTPUT_JSON_FILE: a flush point of the JSON+BIN export
  // The JSON+BIN export, when TRT_SHIM_OUTPUT_JSON_FILE (or trtShimSetOutputJsonFile) named a JSON
  // when the capture started; nullptr otherwise.
  JsonExport* jsonExport() { return json_.get(); }
  void afterBuild() noexcept; // drain blobs (the app may free weights now) + flush-on-build policy
  void drain() noexcept;      // every enqueued blob consumed
  void close() noexcept;      // flush, footer, summary line (atexit)
  void forkedChild();         // the child abandons the parent's writer and starts its own file
  // The process is about to exec or to end without exit() (_exit, _Exit: process_end.cpp): the
  // trace is closed as at exit. Does nothing in a vfork child (it shares the parent's memory, and
  // so this session, which is not its own) or where no session started.
  static void processEnding() noexcept;
  // An exec failed and the process goes on: its later calls go to a new trace (as after a fork,
  // objects made before are unknown to it).
  static void execFailed() noexcept;
  void callStarting();        // a call starts being recorded (test fault injector, session.cpp)
  // TRT_SHIM_FORCE_SINGLE_THREAD_API: the lock every Call holds (recursive: calls nest).
  static std::recursive_mutex& apiLock();
  uint64_t nextRandomSeed() { return ++randomSeeds_; }
  // 1, 2, ... in order of first appearance of an application weights pointer (deterministic, no
  // addresses in the trace); the same pointer always gets the same number.
  uint64_t weightsIdentity(const void* values);

 private:
  Session();
  void open();
  WriterOptions writerOptions() const;
  HeaderInfo header() const;
  void reopenable();  // mu_ held: names back to the configured ones, the next call opens a new trace

  Config config_;
  std::mutex mu_;
  std::unique_ptr<JsonExport> json_;  // fed by writer_ (Writer::onCall): declared before it
  std::unique_ptr<Writer> writer_;
  bool opened_ = false, disabled_ = false, closed_ = false;
  std::string path_;
  std::string baseTrace_, baseJson_;  // the configured names, before a suffix made them free
  bool forked_ = false;  // a forked child: its names start at <trace>.<pid> (capture_names.h)
  std::unordered_map<const void*, Object*> byReal_;
  uint64_t nextHandle_ = 0;
  std::atomic<uint32_t> networks_{0};
  std::atomic<uint64_t> randomSeeds_{0};
  std::mutex ptrMu_;
  std::unordered_map<const void*, uint64_t> weightsPtrs_;
  bool jsonWritten_ = false;  // a JSON+BIN flush happened: the path no longer changes (mu_)
  std::atomic<bool> jsonFailed_{false};  // the JSON+BIN export failed once: said once, not retried
};

}  // namespace trtrace::capture
