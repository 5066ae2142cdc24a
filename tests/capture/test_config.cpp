// capture/config.h: the capture's configuration from the environment.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <string>

#include "config.h"
#include "unit_util.h"

using capture_test::FakeEnv;
using trtrace::capture::Config;

namespace {

Config parse(const FakeEnv& e) { return Config::parse(e.lookup()); }

TEST(CaptureConfig, DefaultsWhenNothingIsSet) {
  testing::internal::CaptureStderr();
  const Config c = parse({});
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(c.outputFile, "");
  EXPECT_EQ(c.outputJson, "");
  EXPECT_EQ(c.libName, "");
  EXPECT_FALSE(c.dumpApi || c.printWelcome || c.flushEveryCall || c.flushOnBuild || c.singleThread);
  EXPECT_FALSE(c.ignoreVersion || c.durable || c.testJsonCounts);
  EXPECT_EQ(c.inlineMax, 8);
  EXPECT_EQ(c.randomMin, 2147483647);
  EXPECT_EQ(c.zstdLevel, trtrace::kDefaultBlobZstdLevel);
  EXPECT_EQ(c.workers, 2);
  EXPECT_EQ(c.queueMiB, 0);
  EXPECT_EQ(c.tracePath(), "capture.trtrace");
}

TEST(CaptureConfig, ReadsEveryVariable) {
  FakeEnv e;
  e.vars = {{"TRT_SHIM_OUTPUT_FILE", "a.trtrace"},
            {"TRT_SHIM_OUTPUT_JSON_FILE", "b.json"},
            {"TRT_SHIM_NVINFER_LIB_NAME", "/x/lib.so"},
            {"TRT_SHIM_DUMP_API", "1"},
            {"TRT_SHIM_PRINT_WELCOME", "yes"},
            {"TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN", "0"},
            {"TRT_SHIM_MARK_AS_RANDOM_WEIGHTS_GREATER_EQUAL_THAN", "1024"},
            {"TRT_SHIM_FLUSH_AFTER_EVERY_CALL", "TRUE"},
            {"TRT_SHIM_FLUSH_ON_BUILD", "On"},
            {"TRT_SHIM_FORCE_SINGLE_THREAD_API", "true"},
            {"TRT_SHIM_SET_TACTIC_CACHE", "t.cache"},
            {"TRTRACE_IGNORE_VERSION", "1"},
            {"TRTRACE_ZSTD_LEVEL", "0"},
            {"TRTRACE_SYNC", "1"},
            {"TRTRACE_CAPTURE_WORKERS", "5"},
            {"TRTRACE_CAPTURE_QUEUE_MB", "64"},
            {"TRTRACE_TEST_JSON_COUNTS", "1"}};
  testing::internal::CaptureStderr();
  const Config c = parse(e);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(c.outputFile, "a.trtrace");
  EXPECT_EQ(c.outputJson, "b.json");
  EXPECT_EQ(c.libName, "/x/lib.so");
  EXPECT_TRUE(c.dumpApi && c.printWelcome && c.flushEveryCall && c.flushOnBuild && c.singleThread);
  EXPECT_TRUE(c.ignoreVersion && c.durable && c.testJsonCounts);
  EXPECT_EQ(c.inlineMax, 0);
  EXPECT_EQ(c.randomMin, 1024);
  EXPECT_EQ(c.tacticCache, "t.cache");
  EXPECT_EQ(c.zstdLevel, 0);
  EXPECT_EQ(c.workers, 5);
  EXPECT_EQ(c.queueMiB, 64);
}

TEST(CaptureConfig, FalseSpellingsTurnOff) {
  for (const char* off : {"0", "false", "No", "OFF"}) {
    FakeEnv e;
    e.vars = {{"TRT_SHIM_DUMP_API", off}};
    EXPECT_FALSE(parse(e).dumpApi) << off;
  }
}

// Each bad value: one warning line naming the variable and the value, and that setting's default.
TEST(CaptureConfig, BadValuesWarnOnceEachAndKeepTheDefault) {
  FakeEnv e;
  e.vars = {{"TRT_SHIM_DUMP_API", "maybe"},
            {"TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN", "-1"},
            {"TRT_SHIM_MARK_AS_RANDOM_WEIGHTS_GREATER_EQUAL_THAN", "2147483648"},
            {"TRTRACE_CAPTURE_WORKERS", "3x"},
            {"TRTRACE_CAPTURE_QUEUE_MB", "99999999999999999999"}};
  testing::internal::CaptureStderr();
  const Config c = parse(e);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(c.dumpApi);
  EXPECT_EQ(c.inlineMax, 8);
  EXPECT_EQ(c.randomMin, 2147483647);
  EXPECT_EQ(c.workers, 2);
  EXPECT_EQ(c.queueMiB, 0);
  size_t lines = 0;
  for (char ch : err) lines += ch == '\n';
  EXPECT_EQ(lines, 5u) << err;
  EXPECT_NE(err.find("trtrace: warning: TRT_SHIM_DUMP_API='maybe' is not a boolean"), std::string::npos) << err;
  EXPECT_NE(err.find("TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN='-1' is not an integer in [0, 2147483647]; "
                     "using the default"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("TRTRACE_CAPTURE_WORKERS='3x'"), std::string::npos) << err;
}

TEST(CaptureConfig, LevelsAndWorkersAreCapped) {
  FakeEnv e;
  e.vars = {{"TRTRACE_ZSTD_LEVEL", "99"}, {"TRTRACE_CAPTURE_WORKERS", "1000"}};
  const Config c = parse(e);
  EXPECT_EQ(c.zstdLevel, 22);
  EXPECT_EQ(c.workers, 64);
}

TEST(CaptureConfig, TracePathFollowsTheJsonWhenNoTraceIsNamed) {
  Config c;
  c.outputJson = "dir/x.json";
  EXPECT_EQ(c.tracePath(), "dir/x.trtrace");
  c.outputJson = "x";
  EXPECT_EQ(c.tracePath(), "x.trtrace");
  c.outputJson = ".json";  // nothing before the extension: kept whole
  EXPECT_EQ(c.tracePath(), ".json.trtrace");
  c.outputFile = "t.trtrace";
  EXPECT_EQ(c.tracePath(), "t.trtrace");
}

TEST(CaptureConfig, HeaderSettingsNameTheJsonOnlyWhenExported) {
  Config c;
  c.inlineMax = 3;
  c.flushOnBuild = true;
  auto s = c.settings();
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0], (std::pair<std::string, std::string>{"TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN", "3"}));
  EXPECT_EQ(s[1].second, "2147483647");
  EXPECT_EQ(s[2].second, "0");
  EXPECT_EQ(s[3], (std::pair<std::string, std::string>{"TRT_SHIM_FLUSH_ON_BUILD", "1"}));
  c.outputJson = "a.json";
  s = c.settings();
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[4], (std::pair<std::string, std::string>{"TRT_SHIM_OUTPUT_JSON_FILE", "a.json"}));
}

// The process environment: an empty variable is the same as an unset one.
TEST(CaptureConfig, ProcessEnvTreatsEmptyAsUnset) {
  ::setenv("TRTRACE_UNIT_TEST_VAR", "", 1);
  EXPECT_EQ(trtrace::capture::processEnv("TRTRACE_UNIT_TEST_VAR"), nullptr);
  ::setenv("TRTRACE_UNIT_TEST_VAR", "v", 1);
  EXPECT_STREQ(trtrace::capture::processEnv("TRTRACE_UNIT_TEST_VAR"), "v");
  ::unsetenv("TRTRACE_UNIT_TEST_VAR");
  EXPECT_EQ(trtrace::capture::processEnv("TRTRACE_UNIT_TEST_VAR"), nullptr);
}

// These units stand alone: this test process never loads the TensorRT-RTX library.
TEST(CaptureUnits, RunWithoutTheLibrary) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) EXPECT_EQ(line.find("libtensorrt"), std::string::npos) << line;
}

}  // namespace
