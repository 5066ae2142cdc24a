// The capture's configuration: the documented TRT_SHIM_* variables
// (shared/reference/capture-replay-trt-rtx.txt) plus ours, read once when the session starts.
// Parsing takes the environment as a lookup so that it is testable without the process's own.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "trtrace/writer.h"

namespace trtrace::capture {

// A variable's value, or nullptr when it is unset (or empty: the same as unset).
using EnvLookup = std::function<const char*(const char* name)>;
const char* processEnv(const char* name);  // the process's environment, as an EnvLookup

struct Config {
  std::string outputFile;     // TRT_SHIM_OUTPUT_FILE: the binary trace (default output)
  std::string outputJson;     // TRT_SHIM_OUTPUT_JSON_FILE: NVIDIA's JSON+BIN pair (documented default capture.json)
  std::string libName;        // TRT_SHIM_NVINFER_LIB_NAME (empty: the discovery order, libinfo/library.h)
  bool dumpApi = false;       // TRT_SHIM_DUMP_API: enter/exit line per call on stderr
  bool printWelcome = false;  // TRT_SHIM_PRINT_WELCOME
  int64_t inlineMax = 8;      // TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN (elements)
  int64_t randomMin = 2147483647;  // TRT_SHIM_MARK_AS_RANDOM_WEIGHTS_GREATER_EQUAL_THAN (elements)
  bool flushEveryCall = false;     // TRT_SHIM_FLUSH_AFTER_EVERY_CALL
  bool flushOnBuild = false;       // TRT_SHIM_FLUSH_ON_BUILD
  bool singleThread = false;       // TRT_SHIM_FORCE_SINGLE_THREAD_API: one recorded call at a time, process-wide
  std::string tacticCache;         // TRT_SHIM_SET_TACTIC_CACHE: accepted, no effect on TensorRT-RTX (one note)
  bool ignoreVersion = false;      // TRTRACE_IGNORE_VERSION: capture a library version the spec does not describe
  // Weight storage (BENCHMARKS.md, "Hot spots fixed"): zstd level 1 is faster than 3 and compresses
  // byte-grouped weights as well; 0 stores every blob raw. Workers compress/write off the app's thread.
  int zstdLevel = kDefaultBlobZstdLevel;  // TRTRACE_ZSTD_LEVEL (at most 22)
  bool durable = false;                   // TRTRACE_SYNC (WriterOptions::durable)
  int workers = 2;                        // TRTRACE_CAPTURE_WORKERS (at most 64)
  // Bytes of weights queued (pointers only: zero-copy) before a call waits for the workers; 0 = no
  // limit. TensorRT requires weights to stay valid until the build, and the queue drains at every
  // build and when a network is destroyed, so the app's thread need not wait for compression.
  int64_t queueMiB = 0;  // TRTRACE_CAPTURE_QUEUE_MB
  // Finishing off the application's clock (docs/design.md, "Finishing off the application's
  // clock"): at a build, a network's deletion or the process's end, weights still queued from this
  // many MiB on are written by a forked finisher while the application goes on or exits.
  bool finisher = true;       // TRTRACE_FINISHER (0: the application waits for every weight to be written)
  int64_t finisherMiB = 256;  // TRTRACE_FINISHER_MB (0: whatever is queued)
  // TRTRACE_FINISHER_REPORT=FILE (bench/e2e.py): each finisher appends one JSON line of its memory
  // (/proc/self/status at its start and end) and times. Unset: nothing written.
  std::string finisherReport;
  // Test hook (TRTRACE_TEST_JSON_COUNTS): one closing line with the JSON+BIN export's counts
  // (JsonExport::counts): its work is linear in the calls. Off: no effect.
  bool testJsonCounts = false;

  std::string tracePath() const;  // where the binary trace goes
  // The settings a trace's header records (the ones that change what a capture holds).
  std::vector<std::pair<std::string, std::string>> settings() const;
  // Bad values: one warning line each on stderr, the default kept.
  static Config parse(const EnvLookup& env);
  static Config fromEnv() { return parse(processEnv); }
};

// Shared by the test fault injectors (faults.h): one warning line for a value not as `expected`.
void warnBadValue(const char* name, const char* value, const char* expected);
// A variable holding an integer in [0, INT_MAX]; `def` when unset or bad (one warning line).
int64_t envInt(const EnvLookup& env, const char* name, int64_t def);

}  // namespace trtrace::capture
