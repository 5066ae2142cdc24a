// tensorrt_player on traces crafted with the trace Writer: what a capture cannot easily produce
// (unknown API ids, another library version, UNSUPPORTED records, dangling handles).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "trtrace/api_abi.h"
#include "trtrace/api_table.h"
#include "trtrace/writer.h"

namespace fs = std::filesystem;
using namespace trtrace;

namespace {

struct Result {
  int code;
  std::string output;
};

Result runPlayer(const fs::path& trace, const std::string& extra = "") {
  const char* lib = std::getenv("TRTRACE_TRT_LIB");
  std::string cmd = std::string(TRTRACE_PLAYER) + " -j " + trace.string() + " -o " +
                    (trace.parent_path() / "out.engine").string() + " --lib " + (lib ? lib : "") + " " + extra +
                    " 2>&1";
  Result r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.output.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

class Crafted : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(std::getenv("TRTRACE_TRT_LIB"), nullptr) << "set TRTRACE_TRT_LIB to the real libtensorrt_rtx.so.1";
    dir_ = fs::temp_directory_path() / ("trtrace_crafted_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A trace whose first call creates a builder (handle 1), as a capture would.
  std::unique_ptr<Writer> open(const std::string& name, const std::string& version = trtrace::abi::kLibraryVersion) {
    WriterOptions o;
    o.path = (dir_ / name).string();
    HeaderInfo h;
    h.producer = "test";
    h.libraryName = trtrace::abi::kLibraryName;
    h.libraryVersion = version;
    auto w = Writer::create(o, h);
    auto& c = w->beginCall(api::kentry_createInferBuilder_INTERNAL, 0, 0);
    c.argBool(true).argI64(trtrace::abi::kLibraryVersionInt).retHandle(1);
    c.endCall();
    return w;
  }
  fs::path dir_;
};

TEST_F(Crafted, UnknownApiIdIsOneClearError) {
  auto w = open("unknown.trtrace");
  w->beginCall(99999, 1, 0).endCall();
  w->close();
  Result r = runPlayer(dir_ / "unknown.trtrace");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown API id 99999"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("unknown.trtrace"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out.engine"));
}

TEST_F(Crafted, OtherLibraryVersionIsRefused) {
  auto w = open("old.trtrace", "1.3.0.35");
  w->close();
  Result r = runPlayer(dir_ / "old.trtrace");
  EXPECT_EQ(r.code, 1) << r.output;
  EXPECT_NE(r.output.find("captured with tensorrt_rtx 1.3.0.35"), std::string::npos) << r.output;
}

TEST_F(Crafted, UnsupportedRecordStopsUnlessSkipped) {
  auto w = open("unsupported.trtrace");
  auto& c = w->beginCall(api::kBuilder_setGpuAllocator, 1, 0);
  c.argBool(true).unsupported("Builder", 2);
  c.endCall();
  w->close();
  Result stop = runPlayer(dir_ / "unsupported.trtrace");
  EXPECT_EQ(stop.code, 2) << stop.output;
  EXPECT_NE(stop.output.find("UNSUPPORTED (Builder slot 2)"), std::string::npos) << stop.output;
  Result skip = runPlayer(dir_ / "unsupported.trtrace", "--skip-unsupported");
  EXPECT_EQ(skip.code, 6) << skip.output;  // skipped; the capture holds no build: nothing written
}

TEST_F(Crafted, HandleNeverCreatedIsADivergence) {
  auto w = open("dangling.trtrace");
  w->beginCall(api::kBuilder_createBuilderConfig, 42, 0).retHandle(43).endCall();
  w->close();
  Result r = runPlayer(dir_ / "dangling.trtrace");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("object handle 42 was never created"), std::string::npos) << r.output;
}

}  // namespace
