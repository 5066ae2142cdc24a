// The trtrace CLI, run as a subprocess: info, dump, verify exit codes, rewrite.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

#include "test_util.h"

using namespace trtrace;

namespace {

struct Run {
  int code;
  std::string out;  // stdout + stderr
};

Run cli(const std::string& args) {
  std::string cmd = std::string(TRTRACE_CLI) + " " + args + " 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  int st = pclose(f);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

}  // namespace

TEST(Cli, InfoReportsCallsApisNetworksAndWeights) {
  tt::TempDir d;
  auto p = d.path("s.trace");
  tt::writeSample(p);
  auto r = cli("info " + p);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("calls:      4 in"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Network::addLayer"), std::string::npos);
  // Networks are numbered from 0, as the player numbers them (the trace's ids 1 and 2).
  EXPECT_NE(r.out.find("network 1: 1 calls"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("network 2:"), std::string::npos) << r.out;
  auto j = cli("info --json " + p);
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_NE(j.out.find("\"calls\":4"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"Network::addLayer\":3"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"networks\":{\"0\":3,\"1\":1}"), std::string::npos) << j.out;
  // Logical: 3000 + 10000 referenced; unique the same; the zeros blob compresses.
  EXPECT_NE(j.out.find("\"logical_bytes\":13000"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"unique_bytes\":13000"), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"compressed_blobs\":1"), std::string::npos) << j.out;
}

TEST(Cli, DumpPrintsOneLinePerCallWithFilters) {
  tt::TempDir d;
  auto p = d.path("s.trace");
  tt::writeSample(p);
  auto r = cli("dump " + p);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 4);
  EXPECT_NE(r.out.find("#0 t="), std::string::npos);
  EXPECT_NE(r.out.find("Network::addLayer(self=@0x10, input=@0x20, weights=weights(dtype=0, count=750, blob "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("-> @0x30 [ok]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("engine 4096 B"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[FAILED]"), std::string::npos) << r.out;
  auto net = cli("dump --network 1 " + p);  // 0-based: the trace's second network
  EXPECT_EQ(std::count(net.out.begin(), net.out.end(), '\n'), 1) << net.out;
  EXPECT_NE(net.out.find(" net=1 "), std::string::npos) << net.out;
  auto none = cli("dump --network 2 " + p);  // a network the trace does not have: an error, not an empty listing
  EXPECT_EQ(none.code, 1) << none.out;
  EXPECT_EQ(none.out, "trtrace: --network 2: " + p + " has networks 0 to 1\n");
  auto range = cli("dump --range 1:3 " + p);
  EXPECT_EQ(std::count(range.out.begin(), range.out.end(), '\n'), 2) << range.out;
  EXPECT_EQ(range.out.rfind("#1 ", 0), 0u) << range.out;
  auto bad = cli("dump --range x " + p);
  EXPECT_EQ(bad.code, 1);
  EXPECT_EQ(bad.out, "trtrace: --range x: expected A:B\n");
}

TEST(Cli, VerifyExitCodesDistinguishCorruptAndTruncated) {
  tt::TempDir d;
  auto p = d.path("s.trace");
  auto s = tt::writeSample(p);
  auto ok = cli("verify " + p);
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("OK"), std::string::npos);
  auto full = tt::readFile(p);
  auto cut = d.path("cut.trace");
  tt::writeFile(cut, full.data(), full.size() - 100);
  auto t = cli("verify " + cut);
  EXPECT_EQ(t.code, 3) << t.out;
  EXPECT_NE(t.out.find("TRUNCATED"), std::string::npos) << t.out;
  auto bad = d.path("bad.trace");
  auto r = Reader::open(p);
  auto copy = full;
  for (auto& b : r->blobs())
    if (b.ref == s.rawRef) copy[b.dataOffset] ^= std::byte{0xFF};
  tt::writeFile(bad, copy.data(), copy.size());
  auto c = cli("verify " + bad);
  EXPECT_EQ(c.code, 2) << c.out;
  EXPECT_NE(c.out.find("blob " + toHex(s.rawRef.hash)), std::string::npos) << c.out;
  auto missing = cli("verify " + d.path("nope"));
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.out.rfind("trtrace: " + d.path("nope") + ": cannot open", 0), 0u) << missing.out;
  EXPECT_EQ(std::count(missing.out.begin(), missing.out.end(), '\n'), 1);
}

TEST(Cli, RewriteRawThenCompressedPreservesContent) {
  tt::TempDir d;
  auto p = d.path("s.trace");
  auto s = tt::writeSample(p);
  auto raw = d.path("raw.trace"), comp = d.path("comp.trace");
  auto r1 = cli("rewrite " + p + " " + raw + " --raw");
  ASSERT_EQ(r1.code, 0) << r1.out;
  auto r2 = cli("rewrite " + raw + " " + comp + " --compress --level 5");
  ASSERT_EQ(r2.code, 0) << r2.out;
  {
    auto r = Reader::open(raw);
    for (auto& b : r->blobs()) {
      EXPECT_FALSE(b.compressed);
      EXPECT_TRUE(r->blob(b.ref).isZeroCopy());
    }
    EXPECT_TRUE(r->verify().ok());
  }
  auto a = cli("dump " + p), b = cli("dump " + raw), c = cli("dump " + comp);
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(a.out, c.out);
  auto r = Reader::open(comp);
  EXPECT_TRUE(r->verify().ok());
  auto z = r->blob(s.zRef);
  EXPECT_FALSE(z.isZeroCopy());
  EXPECT_TRUE(std::equal(s.zBytes.begin(), s.zBytes.end(), z.bytes().begin(), z.bytes().end()));
  // No temp files left behind; refusing a truncated input leaves no output at all.
  auto full = tt::readFile(p);
  tt::writeFile(d.path("cut.trace"), full.data(), full.size() - 10);
  auto t = cli("rewrite " + d.path("cut.trace") + " " + d.path("out.trace") + " --raw");
  EXPECT_EQ(t.code, 3) << t.out;
  EXPECT_FALSE(std::filesystem::exists(d.path("out.trace")));
  auto sal = cli("rewrite --salvage " + d.path("cut.trace") + " " + d.path("out.trace") + " --raw");
  EXPECT_EQ(sal.code, 0) << sal.out;
  EXPECT_TRUE(Reader::open(d.path("out.trace"))->verify().ok());
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(d.dir))
    files += e.path().string().find(".tmp.") != std::string::npos;
  EXPECT_EQ(files, 0u);
}

// rewrite keeps the input's blob order (the capture's, which the player reads in), not the index's
// hash order: blobs put in order 0..n-1 come out at increasing offsets.
TEST(Cli, RewriteKeepsTheBlobsInTheirFileOrder) {
  tt::TempDir d;
  auto p = d.path("in.trace"), out = d.path("out.trace");
  std::vector<BlobRef> order;
  {
    WriterOptions o;
    o.path = p;
    o.workerThreads = 0;  // written in put order
    auto w = Writer::create(o, tt::header());
    for (int i = 0; i < 64; ++i) {
      auto bytes = tt::randomBytes(1000 + 64 * size_t(i), 100 + i);
      order.push_back(w->putBlob(bytes.data(), bytes.size()));
      w->beginCall(1, 0, 0).argWeightsBlob(0, bytes.size(), order.back()).endCall();
    }
    w->close();
  }
  auto run = cli("rewrite " + p + " " + out + " --raw --threads 0");
  ASSERT_EQ(run.code, 0) << run.out;
  auto r = Reader::open(out);
  uint64_t last = 0;
  for (const BlobRef& ref : order) {
    auto it = std::find_if(r->blobs().begin(), r->blobs().end(), [&](const BlobInfo& b) { return b.ref == ref; });
    ASSERT_NE(it, r->blobs().end());
    EXPECT_GT(it->offset, last);
    last = it->offset;
  }
}
