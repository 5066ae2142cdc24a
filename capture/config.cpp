// Capture configuration from the environment (config.h).
#include "config.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>

namespace trtrace::capture {
namespace {

bool envBool(const EnvLookup& env, const char* name, bool def) {
  const char* v = env(name);
  if (!v) return def;
  std::string s(v);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  warnBadValue(name, v, "a boolean (1/0, true/false, yes/no, on/off)");
  return def;
}

std::string envString(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  return v ? v : "";
}

}  // namespace

const char* processEnv(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

void warnBadValue(const char* name, const char* value, const char* expected) {
  std::fprintf(stderr, "trtrace: warning: %s='%s' is not %s; using the default\n", name, value, expected);
}

int64_t envInt(const EnvLookup& env, const char* name, int64_t def) {
  const char* v = env(name);
  if (!v) return def;
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v, &end, 10);
  if (errno || end == v || *end || x < 0 || x > INT_MAX) {
    warnBadValue(name, v, "an integer in [0, 2147483647]");
    return def;
  }
  return x;
}

std::string Config::tracePath() const {
  if (!outputFile.empty()) return outputFile;
  if (!outputJson.empty()) {
    std::string p = outputJson;
    if (p.size() > 5 && p.compare(p.size() - 5, 5, ".json") == 0) p.resize(p.size() - 5);
    return p + ".trtrace";
  }
  return "capture.trtrace";
}

std::vector<std::pair<std::string, std::string>> Config::settings() const {
  std::vector<std::pair<std::string, std::string>> s = {
      {"TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN", std::to_string(inlineMax)},
      {"TRT_SHIM_MARK_AS_RANDOM_WEIGHTS_GREATER_EQUAL_THAN", std::to_string(randomMin)},
      {"TRT_SHIM_FLUSH_AFTER_EVERY_CALL", flushEveryCall ? "1" : "0"},
      {"TRT_SHIM_FLUSH_ON_BUILD", flushOnBuild ? "1" : "0"},
  };
  if (!outputJson.empty()) s.emplace_back("TRT_SHIM_OUTPUT_JSON_FILE", outputJson);
  return s;
}

Config Config::parse(const EnvLookup& env) {
  Config c;
  c.outputFile = envString(env, "TRT_SHIM_OUTPUT_FILE");
  c.outputJson = envString(env, "TRT_SHIM_OUTPUT_JSON_FILE");
  c.libName = envString(env, "TRT_SHIM_NVINFER_LIB_NAME");
  c.dumpApi = envBool(env, "TRT_SHIM_DUMP_API", false);
  c.printWelcome = envBool(env, "TRT_SHIM_PRINT_WELCOME", false);
  c.inlineMax = envInt(env, "TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN", c.inlineMax);
  c.randomMin = envInt(env, "TRT_SHIM_MARK_AS_RANDOM_WEIGHTS_GREATER_EQUAL_THAN", c.randomMin);
  c.flushEveryCall = envBool(env, "TRT_SHIM_FLUSH_AFTER_EVERY_CALL", false);
  c.flushOnBuild = envBool(env, "TRT_SHIM_FLUSH_ON_BUILD", false);
  c.singleThread = envBool(env, "TRT_SHIM_FORCE_SINGLE_THREAD_API", false);
  c.tacticCache = envString(env, "TRT_SHIM_SET_TACTIC_CACHE");
  c.ignoreVersion = envBool(env, "TRTRACE_IGNORE_VERSION", false);
  c.zstdLevel = static_cast<int>(std::min<int64_t>(envInt(env, "TRTRACE_ZSTD_LEVEL", c.zstdLevel), 22));
  c.durable = envBool(env, "TRTRACE_SYNC", false);
  c.workers = static_cast<int>(std::min<int64_t>(envInt(env, "TRTRACE_CAPTURE_WORKERS", c.workers), 64));
  c.queueMiB = envInt(env, "TRTRACE_CAPTURE_QUEUE_MB", c.queueMiB);
  c.finisher = envBool(env, "TRTRACE_FINISHER", c.finisher);
  c.finisherMiB = envInt(env, "TRTRACE_FINISHER_MB", c.finisherMiB);
  c.finisherReport = envString(env, "TRTRACE_FINISHER_REPORT");
  c.testJsonCounts = envBool(env, "TRTRACE_TEST_JSON_COUNTS", false);
  return c;
}

}  // namespace trtrace::capture
