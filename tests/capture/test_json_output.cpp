// capture/json_output.h: the JSON+BIN export wired to a trace; a failure said once, the export stopped.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "json_output.h"
#include "unit_util.h"

using trtrace::capture::JsonOutput;

namespace {

size_t lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(JsonOutputTest, NotStartedOrNoPathWritesNothing) {
  capture_test::TempDir d;
  JsonOutput j;
  j.flush(d.path("x.json"));
  EXPECT_FALSE(std::filesystem::exists(d.path("x.json")));
  trtrace::WriterOptions o;
  j.start(d.path("x.trtrace"), "1.2.3.4", o);
  EXPECT_TRUE(o.onCall);  // the writer feeds the export
  ASSERT_NE(j.exporter(), nullptr);
  j.flush("");
  EXPECT_TRUE(std::filesystem::is_empty(d.dir));
  EXPECT_FALSE(j.failed());
}

TEST(JsonOutputTest, AFlushPointWritesTheJsonAndItsBin) {
  capture_test::TempDir d;
  JsonOutput j;
  trtrace::WriterOptions o;
  j.start(d.path("x.trtrace"), "1.2.3.4", o);
  j.flush(d.path("x.json"));
  EXPECT_FALSE(j.failed());
  EXPECT_TRUE(std::filesystem::exists(d.path("x.json")));
  EXPECT_TRUE(std::filesystem::exists(d.path("x.bin")));
}

// A failed flush: one line, the export stops (no retry, no second line); the trace is not its concern.
TEST(JsonOutputTest, AFailureIsSaidOnceAndStopsTheExport) {
  capture_test::TempDir d;
  JsonOutput j;
  trtrace::WriterOptions o;
  j.start(d.path("x.trtrace"), "1.2.3.4", o);
  testing::internal::CaptureStderr();
  j.flush(d.path("missing/x.json"));
  j.flush(d.path("missing/x.json"));
  j.flush(d.path("x.json"));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(j.failed());
  EXPECT_EQ(lines(err), 1u) << err;
  EXPECT_NE(err.find("not writing the JSON+BIN export"), std::string::npos) << err;
  EXPECT_FALSE(std::filesystem::exists(d.path("x.json")));
}

TEST(JsonOutputTest, StopDropsTheExport) {
  capture_test::TempDir d;
  JsonOutput j;
  trtrace::WriterOptions o;
  j.start(d.path("x.trtrace"), "1.2.3.4", o);
  j.stop();
  EXPECT_EQ(j.exporter(), nullptr);
  j.flush(d.path("x.json"));
  EXPECT_FALSE(std::filesystem::exists(d.path("x.json")));
}

}  // namespace
