// capture/flush_policy.h: when the trace and its JSON+BIN reach the disk, and the writer's options.
#include <gtest/gtest.h>

#include <cstdint>

#include "flush_policy.h"

using trtrace::FlushPolicy;
using trtrace::capture::Config;
using trtrace::capture::flushRules;
using trtrace::capture::writerOptions;

namespace {

Config flushes(bool everyCall, bool onBuild) {
  Config c;
  c.flushEveryCall = everyCall;
  c.flushOnBuild = onBuild;
  return c;
}

TEST(FlushPolicyTest, ByDefaultEverythingWaitsForTheEnd) {
  const auto r = flushRules(flushes(false, false));
  EXPECT_EQ(r.segments, FlushPolicy::AtClose);
  EXPECT_FALSE(r.blobsOnCallingThread || r.exportAfterCall || r.flushAfterBuild);
}

TEST(FlushPolicyTest, OnBuildFlushesAtEachBuild) {
  const auto r = flushRules(flushes(false, true));
  EXPECT_EQ(r.segments, FlushPolicy::OnBuild);
  EXPECT_TRUE(r.flushAfterBuild);
  EXPECT_FALSE(r.blobsOnCallingThread || r.exportAfterCall);
}

// Every call: its weights are written on the calling thread, before the segment naming them.
TEST(FlushPolicyTest, EveryCallWritesBlobsOnTheCallingThread) {
  const auto r = flushRules(flushes(true, false));
  EXPECT_EQ(r.segments, FlushPolicy::EveryCall);
  EXPECT_TRUE(r.blobsOnCallingThread && r.exportAfterCall);
  EXPECT_FALSE(r.flushAfterBuild);
}

TEST(FlushPolicyTest, EveryCallWinsOverOnBuildWhichStillFlushesAtBuilds) {
  const auto r = flushRules(flushes(true, true));
  EXPECT_EQ(r.segments, FlushPolicy::EveryCall);
  EXPECT_TRUE(r.blobsOnCallingThread && r.exportAfterCall && r.flushAfterBuild);
}

TEST(FlushPolicyTest, WriterOptionsFollowTheConfig) {
  Config c;
  c.zstdLevel = 7;
  c.durable = true;
  c.workers = 5;
  c.queueMiB = 3;
  auto o = writerOptions(c, "p.trtrace");
  EXPECT_EQ(o.path, "p.trtrace");
  EXPECT_EQ(o.zstdLevel, 7);
  EXPECT_TRUE(o.durable);
  EXPECT_TRUE(o.rawWhenWaitedOn);            // the application never waits for zstd
  EXPECT_GT(o.smallMinSaving, o.minSaving);  // small weights are compressed only where it pays well
  EXPECT_EQ(o.workerThreads, 5);
  EXPECT_EQ(o.queueBytes, 3u << 20);
  EXPECT_EQ(o.flush, FlushPolicy::AtClose);
  EXPECT_FALSE(o.writeFault);
  EXPECT_FALSE(o.onCall);
  c.queueMiB = 0;  // no limit
  c.flushEveryCall = true;
  o = writerOptions(c, "p.trtrace");
  EXPECT_EQ(o.queueBytes, UINT64_MAX);
  EXPECT_EQ(o.workerThreads, 0);
  EXPECT_EQ(o.flush, FlushPolicy::EveryCall);
}

}  // namespace
