// trtrace diff on two crafted 200,000-call traces (issue 24 item 4): the alignment finds exactly the
// calls inserted and changed, in bounded memory (peak RSS, /usr/bin/time -f %M), whatever the
// traces' length. Run as a subprocess, as test_cli.cpp does.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>

#include "test_util.h"
#include "trtrace/api_table.h"

using namespace trtrace;

namespace {

constexpr int kLayers = 66000;  // 3 calls each: ~200,000 calls
constexpr int kInsertEvery = 1000, kRenameEvery = 10000;

// A builder, a network, an input, then a chain of named activations. B (variant) also adds a
// dangling named activation every kInsertEvery layers, and names every kRenameEvery-th layer
// differently; its handles are therefore numbered differently from the first insertion on.
// scrambled: every layer named otherwise, after its output is taken (nothing aligns but the API).
void writeChain(const std::string& path, bool variant, bool scrambled = false) {
  WriterOptions o;
  o.path = path;
  auto w = Writer::create(o, tt::header());
  w->beginCall(api::kentry_createInferBuilder_INTERNAL, 0, 0).argBool(true).argI64(1).retHandle(1).endCall();
  w->beginCall(api::kBuilder_createNetworkV2, 1, 1).argU64(0).retHandle(2).endCall();
  const int64_t dims[] = {1, 8};
  w->beginCall(api::kNetworkDefinition_addInput, 2, 1)
      .argString("x")
      .argEnum(api::kEnumDataType, 0)
      .argDims(dims)
      .retHandle(3)
      .endCall();
  uint64_t next = 4, tensor = 3;
  for (int i = 0; i < kLayers; ++i) {
    const uint64_t layer = next++;
    w->beginCall(api::kNetworkDefinition_addActivation, 2, 1)
        .argHandle(tensor)
        .argEnum(api::kEnumActivationType, i % 3)
        .retHandle(layer)
        .endCall();
    const bool renamed = variant && i % kRenameEvery == 7;
    const std::string name = (scrambled ? "m" : renamed ? "renamed" : "l") + std::to_string(i);
    if (!scrambled) w->beginCall(api::kLayer_setName, layer, 1).argString(name).endCall();
    tensor = next++;
    w->beginCall(api::kLayer_getOutput, layer, 1).argI64(0).retHandle(tensor).endCall();
    if (scrambled) w->beginCall(api::kLayer_setName, layer, 1).argString(name).endCall();
    if (variant && i % kInsertEvery == 500) {
      const uint64_t extra = next++;
      w->beginCall(api::kNetworkDefinition_addActivation, 2, 1)
          .argHandle(tensor)
          .argEnum(api::kEnumActivationType, 2)
          .retHandle(extra)
          .endCall();
      w->beginCall(api::kLayer_setName, extra, 1).argString("extra" + std::to_string(i)).endCall();
    }
  }
  w->close();
}

// A hostile trace: a layer of network 1 named by a call of network 2, a network never made, an
// object's handle given again as another call's result, a receiver no call made, names holding
// the markers diff uses for layer references. Each layer index
// counts within its own network and an unknown handle compares by number: a trace against itself
// is equivalent, against a variant different (exit 1), never a crash.
void writeHostile(const std::string& path, int v) {
  WriterOptions o;
  o.path = path;
  auto w = Writer::create(o, tt::header());
  w->beginCall(api::kentry_createInferBuilder_INTERNAL, 0, 0).argBool(true).argI64(1).retHandle(1).endCall();
  w->beginCall(api::kBuilder_createNetworkV2, 1, 1).argU64(0).retHandle(2).endCall();
  w->beginCall(api::kBuilder_createNetworkV2, 1, 2).argU64(0).retHandle(20).endCall();
  const int64_t dims[] = {1, 8};
  const std::string input = std::string("x\x01") + (v ? "7" : "z") + "\x02";  // our layer markers, in a name
  w->beginCall(api::kNetworkDefinition_addInput, 2, 1)
      .argString(input)
      .argEnum(api::kEnumDataType, 0)
      .argDims(dims)
      .retHandle(3)
      .endCall();
  w->beginCall(api::kNetworkDefinition_addActivation, 2, 1)
      .argHandle(3)
      .argEnum(api::kEnumActivationType, 0)
      .retHandle(4)
      .endCall();
  w->beginCall(api::kLayer_setName, 4, 2).argString("n" + std::to_string(v)).endCall();
  w->beginCall(api::kNetworkDefinition_addActivation, 20, 2)
      .argHandle(3)
      .argEnum(api::kEnumActivationType, v)
      .retHandle(5)
      .endCall();
  w->beginCall(api::kLayer_getOutput, 5, 1).argI64(0).retHandle(4).endCall();
  w->beginCall(api::kLayer_setName, 5, 7).argString("z").endCall();
  w->beginCall(api::kLayer_getOutput, 999, 2).argI64(0).retHandle(6).endCall();
  if (v)
    w->beginCall(api::kNetworkDefinition_addActivation, 20, 2)
        .argHandle(4)
        .argEnum(api::kEnumActivationType, 1)
        .retHandle(30)
        .endCall();
  w->close();
}

struct Output {
  int code;
  std::string out;
};

Output runCli(const std::string& cmd) {
  FILE* f = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  const int st = pclose(f);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

long field(const std::string& json, const std::string& name) {
  const size_t p = json.find("\"" + name + "\":");
  return p == std::string::npos ? -1 : std::stol(json.substr(p + name.size() + 3));
}

// `trtrace diff --json a b` with its peak RSS in KiB (/usr/bin/time -f %M; its last line follows
// "Command exited with non-zero status 1").
Output diffMeasured(const tt::TempDir& d, const std::string& a, const std::string& b, long& peakKiB) {
  const std::string rss = d.path("rss");
  const Output r =
      runCli("/usr/bin/time -o " + rss + " -f %M " + std::string(TRTRACE_CLI) + " diff --json " + a + " " + b);
  peakKiB = std::stol(runCli("tail -n 1 " + rss).out);
  return r;
}

// The peak of a large diff against that of a diff of two small traces: ~2 x 200,000 calls at
// ~250 bytes for both traces fit; a table as large as the calls squared, or text kept for every
// call (the positional diff this replaces: ~180 MiB), would not. Under AddressSanitizer every small
// allocation carries redzones and freed memory is quarantined: peak RSS there says nothing.
void expectBoundedPeak(const tt::TempDir& d, long peakKiB) {
#if defined(__SANITIZE_ADDRESS__)
  (void)d, (void)peakKiB;
#else
  const std::string a = d.path("small_a.trtrace"), b = d.path("small_b.trtrace");
  writeHostile(a, 0);
  writeHostile(b, 2);
  long baseKiB = 0;
  diffMeasured(d, a, b, baseKiB);
  EXPECT_LT(peakKiB, baseKiB + 144 * 1024) << "peak RSS " << peakKiB << " KiB, " << baseKiB << " KiB on small traces";
#endif
}

}  // namespace

TEST(DiffLarge, AlignsTwoHundredThousandCallsInBoundedMemory) {
  tt::TempDir d;
  const std::string a = d.path("a.trtrace"), b = d.path("b.trtrace");
  writeChain(a, false);
  writeChain(b, true);
  long peakKiB = 0;
  const Output r = diffMeasured(d, a, b, peakKiB);
  ASSERT_EQ(r.code, 1) << r.out.substr(0, 2000);
  const long inserted = 2 * ((kLayers - 500 + kInsertEvery - 1) / kInsertEvery);
  const long renamed = (kLayers - 7 + kRenameEvery - 1) / kRenameEvery;
  EXPECT_EQ(field(r.out, "inserted"), inserted) << r.out.substr(0, 2000);
  EXPECT_EQ(field(r.out, "deleted"), 0);
  EXPECT_EQ(field(r.out, "changed"), renamed);
  EXPECT_NE(r.out.find("\"added\":[\"B:L501 ActivationLayer\""), std::string::npos) << r.out.substr(0, 2000);
  expectBoundedPeak(d, peakKiB);
}

TEST(DiffLarge, ATraceAgainstItselfIsEquivalent) {
  tt::TempDir d;
  const std::string a = d.path("a.trtrace");
  writeChain(a, true);
  const Output r = runCli(std::string(TRTRACE_CLI) + " diff " + a + " " + a);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("equivalent: ", 0), 0u) << r.out;
}

// Two traces that share no call but their APIs, in another order: the alignment gives up where its
// bounds say (Myers' edits and steps) and pairs what is left by position, in the same bound.
TEST(DiffLarge, UnalignableTracesStayBounded) {
  tt::TempDir d;
  const std::string a = d.path("a.trtrace"), b = d.path("b.trtrace");
  writeChain(a, false);
  writeChain(b, false, true);
  long peakKiB = 0;
  const Output r = diffMeasured(d, a, b, peakKiB);
  ASSERT_EQ(r.code, 1) << r.out.substr(0, 2000);
  EXPECT_GE(field(r.out, "changed") + field(r.out, "inserted") + field(r.out, "deleted"), kLayers)
      << r.out.substr(0, 2000);
  expectBoundedPeak(d, peakKiB);
}

TEST(DiffLarge, HostileObjectReferencesCompare) {
  tt::TempDir d;
  const std::string a = d.path("a.trtrace"), b = d.path("b.trtrace");
  writeHostile(a, 0);
  writeHostile(b, 2);
  const Output same = runCli(std::string(TRTRACE_CLI) + " diff " + a + " " + a);
  EXPECT_EQ(same.code, 0) << same.out;
  for (const auto& args : {a + " " + b, b + " " + a, "--json " + a + " " + b}) {
    const Output r = runCli(std::string(TRTRACE_CLI) + " diff " + args);
    EXPECT_EQ(r.code, 1) << r.out;
  }
}

// Objects each obtained from the last one (a hostile trace: 20,000 getOutput calls, each on the
// previous result). Their shown names are cut short, so memory stays with the number of objects,
// not its square (the positional diff this replaced took over 1 GiB here).
TEST(DiffLarge, ObjectChainsStayBounded) {
  tt::TempDir d;
  const std::string a = d.path("a.trtrace"), b = d.path("b.trtrace");
  for (const auto& [path, n] : {std::pair{a, 20000}, std::pair{b, 20001}}) {
    WriterOptions o;
    o.path = path;
    auto w = Writer::create(o, tt::header());
    w->beginCall(api::kentry_createInferBuilder_INTERNAL, 0, 0).argBool(true).argI64(1).retHandle(1).endCall();
    for (int i = 0; i < n; ++i)
      w->beginCall(api::kLayer_getOutput, uint64_t(1 + i), 0).argI64(0).retHandle(uint64_t(2 + i)).endCall();
    w->close();
  }
  long peakKiB = 0;
  const Output r = diffMeasured(d, a, b, peakKiB);
  EXPECT_EQ(r.code, 1) << r.out.substr(0, 2000);
  EXPECT_EQ(field(r.out, "inserted"), 1) << r.out.substr(0, 2000);
  EXPECT_EQ(field(r.out, "changed") + field(r.out, "deleted"), 0);
  expectBoundedPeak(d, peakKiB);
}
