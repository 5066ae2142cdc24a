// capture/faults.h: the test fault injectors' settings and the writer's fault hook.
#include <gtest/gtest.h>

#include <csignal>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "faults.h"
#include "unit_util.h"

using trtrace::capture::Faults;
using trtrace::capture::parseWriteFault;

namespace {

TEST(FaultInjectors, WriteFaultSpellings) {
  auto f = parseWriteFault("3");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->at, 3);
  EXPECT_EQ(f->err, ENOSPC);
  f = parseWriteFault("0:EIO");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->at, 0);
  EXPECT_EQ(f->err, EIO);
  EXPECT_EQ(parseWriteFault("5:ENOSPC")->err, ENOSPC);
  for (const char* bad : {"", "x", "-1", "3:EPERM", "3:", "3x", ":EIO"}) EXPECT_FALSE(parseWriteFault(bad)) << bad;
}

TEST(FaultInjectors, UnsetMeansNoHook) {
  Faults f;
  f.configure(capture_test::FakeEnv{}.lookup());
  EXPECT_FALSE(f.writeHook());
  f.callStarting();  // no kill point: nothing happens
}

// The hook fails exactly the Nth write the writer makes, counting every write.
TEST(FaultInjectors, TheHookFailsOnlyTheNthWrite) {
  capture_test::FakeEnv e;
  e.vars = {{"TRTRACE_FAULT_WRITE_FAIL", "2:EIO"}};
  Faults f;
  f.configure(e.lookup());
  auto hook = f.writeHook();
  ASSERT_TRUE(hook);
  EXPECT_EQ(hook(), 0);
  EXPECT_EQ(hook(), 0);
  EXPECT_EQ(hook(), EIO);
  EXPECT_EQ(hook(), 0);
}

TEST(FaultInjectors, BadSettingsWarnAndStayOff) {
  capture_test::FakeEnv e;
  e.vars = {{"TRTRACE_FAULT_WRITE_FAIL", "soon"}, {"TRTRACE_FAULT_KILL_AT_CALL", "-3"}};
  Faults f;
  testing::internal::CaptureStderr();
  f.configure(e.lookup());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_FALSE(f.writeHook());
  f.callStarting();  // a bad kill point is no kill point
  EXPECT_NE(err.find("TRTRACE_FAULT_WRITE_FAIL='soon' is not N or N:ENOSPC or N:EIO"), std::string::npos) << err;
  EXPECT_NE(err.find("TRTRACE_FAULT_KILL_AT_CALL='-3'"), std::string::npos) << err;
}

// The kill point: the process dies of SIGKILL as call N starts being recorded, not before.
TEST(FaultInjectors, KillAtCallRaisesSigkillAtThatCall) {
  capture_test::FakeEnv e;
  e.vars = {{"TRTRACE_FAULT_KILL_AT_CALL", "2"}};
  EXPECT_EXIT(
      {
        Faults f;
        f.configure(e.lookup());
        f.callStarting();
        f.callStarting();
        std::fprintf(stderr, "two calls started\n");
        f.callStarting();
        std::exit(0);
      },
      testing::KilledBySignal(SIGKILL), "two calls started");
}

}  // namespace
