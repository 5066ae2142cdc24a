// The spec's check of recorded calls (trtrace/call_check.h), shared by `trtrace verify` and the
// player: every array/count pair the spec knows, and API descriptors against the API ids.
#include <gtest/gtest.h>

#include <functional>

#include "test_util.h"
#include "trtrace/api_abi.h"
#include "trtrace/api_table.h"
#include "trtrace/call_check.h"

using namespace trtrace;

namespace {

std::unique_ptr<Writer> specTrace(const std::string& path, const std::string& library = trtrace::abi::kLibraryName) {
  WriterOptions o;
  o.path = path;
  HeaderInfo h;
  h.producer = "test_call_check";
  h.libraryName = library;
  h.libraryVersion = trtrace::abi::kLibraryVersion;
  return Writer::create(o, h);
}

// Argument `a` of `d` recorded as an array of `n` elements of the kind the spec gives it.
void array(CallEncoder& e, const api::ParamDesc& p, size_t n) {
  const std::vector<uint64_t> handles(n, 1);
  const std::vector<int64_t> ints(n, 1);
  const std::vector<float> floats(n, 1.f);
  const std::vector<std::byte> bytes(n, std::byte{0});  // Strings: n empty strings, NUL-separated
  switch (p.kind) {
    case api::Kind::Handles: e.argHandleArray(handles); break;
    case api::Kind::Array: p.elem == api::Kind::F32 ? e.argF32Array(floats) : e.argI64Array(ints); break;
    default: e.argBytes(bytes); break;
  }
}

// One call of `d` whose array argument holds `n` elements (or is null) and whose count is `count`.
void pairCall(Writer& w, const api::ApiDesc& d, uint32_t c, std::optional<size_t> n, int64_t count) {
  auto& e = w.beginCall(d.id, 1, 1);
  for (uint32_t i = 0; i < d.nargs; ++i) {
    if (i == static_cast<uint32_t>(d.params[c].lengthOf) && n)
      array(e, d.params[i], *n);
    else if (i == c && d.params[c].kind == api::Kind::I64)
      e.argI64(count);
    else if (i == c)
      e.argU64(static_cast<uint64_t>(count));
    else
      e.argNull();
  }
  e.endCall();
}

void forEachPair(const std::function<void(const api::ApiDesc&, uint32_t)>& fn) {
  uint32_t n = 0;
  const api::ApiDesc* all = api::all(&n);
  for (uint32_t k = 0; k < n; ++k)
    for (uint32_t i = 0; i < all[k].nargs; ++i)
      if (all[k].params[i].lengthOf >= 0) fn(all[k], i);
}

}  // namespace

// Every pair the spec knows (addConcatenation, addEinsum, setScales, setShapeValuesV2, ...): the
// count must be the number of elements recorded, never negative, and a null array counts nothing.
TEST(CallCheck, EveryArrayCountPairOfTheSpec) {
  tt::TempDir dir;
  std::vector<bool> bad;
  size_t pairs = 0;
  {
    auto w = specTrace(dir.path("pairs.trtrace"));
    forEachPair([&](const api::ApiDesc& d, uint32_t c) {
      ++pairs;
      pairCall(*w, d, c, 3, 3), bad.push_back(false);
      pairCall(*w, d, c, 0, 0), bad.push_back(false);
      pairCall(*w, d, c, std::nullopt, 0), bad.push_back(false);
      pairCall(*w, d, c, 2, 5), bad.push_back(true);  // the library would read 3 past the array
      pairCall(*w, d, c, 3, 1), bad.push_back(true);
      pairCall(*w, d, c, std::nullopt, 2), bad.push_back(true);
      pairCall(*w, d, c, 0, -1), bad.push_back(true);  // negative (or 2^64-1 for an unsigned count)
    });
    w->close();
  }
  EXPECT_GE(pairs, 7u);  // a spec whose [len=] the generator lost would test nothing
  auto r = Reader::open(dir.path("pairs.trtrace"));
  size_t k = 0;
  r->forEachCall([&](const CallView& c) {
    const std::string p = arrayCountProblem(c);
    EXPECT_EQ(!p.empty(), bool(bad.at(k))) << "call " << k << " (api " << c.apiId() << "): " << p;
    ++k;
    return true;
  });
  EXPECT_EQ(k, bad.size());
}

TEST(CallCheck, VerifyAndThePlayerCheckSayTheSame) {
  tt::TempDir dir;
  const api::ApiDesc* concat = api::find(api::kNetworkDefinition_addConcatenation);
  ASSERT_TRUE(concat);
  for (const char* library : {trtrace::abi::kLibraryName, "another_library"}) {
    const std::string path = dir.path(std::string(library) + ".trtrace");
    auto w = specTrace(path, library);
    pairCall(*w, *concat, 1, 2, 5);
    w->close();
    auto r = Reader::open(path);
    const VerifyReport rep = verifyTrace(*r);
    const bool ours = std::string(library) == trtrace::abi::kLibraryName;
    ASSERT_EQ(rep.corrupt(), ours) << library;  // another library's ids are not this spec's
    if (ours) {
      ASSERT_EQ(rep.issues.size(), 1u);
      EXPECT_NE(rep.issues[0].what.find(": segment 0: call 0: argument 1 (nbInputs) is 5, but argument 0 (inputs) "
                                        "holds 2 elements"),
                std::string::npos)
          << rep.issues[0].what;
    }
    r->forEachCall([&](const CallView& c) {
      EXPECT_EQ(callProblem(*r, c), "argument 1 (nbInputs) is 5, but argument 0 (inputs) holds 2 elements");
      return true;
    });
  }
}

// A descriptor naming another method than the table's entry for its id: `dump` would show one call
// and the player make another.
TEST(CallCheck, ApiDescriptorMustMatchItsId) {
  tt::TempDir dir;
  const api::ApiDesc* concat = api::find(api::kNetworkDefinition_addConcatenation);
  ASSERT_TRUE(concat);
  struct Case {
    const char* method;
    std::vector<std::string_view> args;
    const char* says;
  };
  const Case cases[] = {
      {"addConcatenation", {"inputs", "nbInputs"}, ""},
      {"addEinsum",
       {"inputs", "nbInputs", "equation"},
       "as NetworkDefinition::addEinsum, which is NetworkDefinition::addConcatenation"},
      {"addConcatenation", {"inputs"}, "(NetworkDefinition::addConcatenation) with 1 arguments, it takes 2"},
  };
  for (const Case& c : cases) {
    const std::string path = dir.path(std::string(c.method) + std::to_string(c.args.size()) + ".trtrace");
    auto w = specTrace(path);
    w->describeApi(concat->id, "NetworkDefinition", c.method, c.args);
    pairCall(*w, *concat, 1, 2, 2);
    w->close();
    auto r = Reader::open(path);
    const VerifyReport rep = verifyTrace(*r);
    std::string fromPlayer;
    r->forEachCall([&](const CallView& call) {
      fromPlayer = callProblem(*r, call);
      return true;
    });
    if (!*c.says) {
      EXPECT_TRUE(rep.ok()) << (rep.issues.empty() ? "" : rep.issues[0].what);
      EXPECT_EQ(fromPlayer, "");
      continue;
    }
    ASSERT_EQ(rep.issues.size(), 1u) << c.method;
    EXPECT_TRUE(rep.corrupt());
    EXPECT_NE(rep.issues[0].what.find(c.says), std::string::npos) << rep.issues[0].what;
    EXPECT_NE(fromPlayer.find(c.says), std::string::npos) << fromPlayer;
  }
}
