// capture/output_claim.h: a capture writes only a file it creates.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "output_claim.h"
#include "trtrace/error.h"
#include "unit_util.h"

using trtrace::capture::Claimed;
using trtrace::capture::claimOutputs;

namespace {

constexpr long kPid = 4242;

void writeText(const std::string& p, const std::string& text) { std::ofstream(p) << text; }
std::string readText(const std::string& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// The claim is an empty file of ours: the test closes it.
std::string claimed(const Claimed& c) {
  EXPECT_GE(c.fd, 0);
  struct stat st {};
  EXPECT_EQ(::fstat(c.fd, &st), 0);
  EXPECT_EQ(st.st_size, 0);
  ::close(c.fd);
  return c.trace;
}

TEST(OutputClaim, TakesTheConfiguredNameWhenFree) {
  capture_test::TempDir d;
  const Claimed c = claimOutputs(d.path("t.trtrace"), d.path("t.json"), 0, kPid);
  EXPECT_EQ(claimed(c), d.path("t.trtrace"));
  EXPECT_EQ(c.json, d.path("t.json"));
  EXPECT_FALSE(std::filesystem::exists(c.json));  // the export creates its own files later
}

TEST(OutputClaim, NoJsonAskedNoJsonNamed) {
  capture_test::TempDir d;
  const Claimed c = claimOutputs(d.path("t.trtrace"), "", 0, kPid);
  EXPECT_EQ(claimed(c), d.path("t.trtrace"));
  EXPECT_EQ(c.json, "");
}

TEST(OutputClaim, AnExistingTraceIsKeptAndTheNextNameTaken) {
  capture_test::TempDir d;
  writeText(d.path("t.trtrace"), "a finished capture");
  writeText(d.path("t.trtrace.4242"), "another");
  const Claimed c = claimOutputs(d.path("t.trtrace"), d.path("t.json"), 0, kPid);
  EXPECT_EQ(claimed(c), d.path("t.trtrace.4242.2"));
  EXPECT_EQ(c.json, d.path("t.4242.2.json"));
  EXPECT_EQ(readText(d.path("t.trtrace")), "a finished capture");
  EXPECT_EQ(readText(d.path("t.trtrace.4242")), "another");
}

TEST(OutputClaim, AForkedChildStartsAtItsPid) {
  capture_test::TempDir d;
  EXPECT_EQ(claimed(claimOutputs(d.path("t.trtrace"), "", 1, kPid)), d.path("t.trtrace.4242"));
}

// A candidate whose JSON or BIN exists is passed over, though its trace name is free.
TEST(OutputClaim, ATakenJsonOrBinSkipsThatCandidate) {
  capture_test::TempDir d;
  writeText(d.path("t.json"), "{}");
  writeText(d.path("t.4242.bin"), "");
  const Claimed c = claimOutputs(d.path("t.trtrace"), d.path("t.json"), 0, kPid);
  EXPECT_EQ(claimed(c), d.path("t.trtrace.4242.2"));
  EXPECT_EQ(c.json, d.path("t.4242.2.json"));
  EXPECT_FALSE(std::filesystem::exists(d.path("t.trtrace")));
  EXPECT_FALSE(std::filesystem::exists(d.path("t.trtrace.4242")));
}

// A link at the name (dangling or not) is never followed: its target is not created or emptied.
TEST(OutputClaim, ALinkAtTheNameIsNotFollowed) {
  capture_test::TempDir d;
  writeText(d.path("victim"), "keep me");
  std::filesystem::create_symlink(d.path("victim"), d.path("t.trtrace"));
  std::filesystem::create_symlink(d.path("nowhere"), d.path("t.trtrace.4242"));
  EXPECT_EQ(claimed(claimOutputs(d.path("t.trtrace"), "", 0, kPid)), d.path("t.trtrace.4242.2"));
  EXPECT_EQ(readText(d.path("victim")), "keep me");
  EXPECT_FALSE(std::filesystem::exists(d.path("nowhere")));
}

TEST(OutputClaim, AFolderThatDoesNotExistIsAnIoErrorNamingThePath) {
  capture_test::TempDir d;
  try {
    claimOutputs(d.path("no/t.trtrace"), "", 0, kPid);
    FAIL() << "claimed in a missing folder";
  } catch (const trtrace::Error& e) {
    EXPECT_EQ(e.kind(), trtrace::Error::Kind::Io);
    EXPECT_NE(std::string(e.what()).find(d.path("no/t.trtrace") + ": cannot create"), std::string::npos) << e.what();
  }
}

TEST(OutputClaim, AllCandidatesTakenIsAnIoErrorNotALoop) {
  capture_test::TempDir d;
  for (unsigned k = 0; k < trtrace::capture::kMaxOutputCandidates; ++k)
    writeText(d.path("t.trtrace") + (k == 0 ? "" : k == 1 ? ".4242" : ".4242." + std::to_string(k)), "");
  try {
    claimOutputs(d.path("t.trtrace"), "", 0, kPid);
    FAIL() << "claimed a taken name";
  } catch (const trtrace::Error& e) {
    EXPECT_EQ(e.kind(), trtrace::Error::Kind::Io);
    EXPECT_NE(std::string(e.what()).find("1000 names of this process are taken"), std::string::npos) << e.what();
  }
}

}  // namespace
