// trtrace diff A B [--all-calls] [--json] [--max N]: are two traces the same build, and where do
// they part? (issue 17)
// 1. Calls, side by side: API id, receiver, network, every argument (kind and value; weights by
//    type, count and content hash; "foreign" arguments -- app pointers such as a logger -- not at
//    all), object results (handles), and weights pointer identities as a one-to-one pattern per
//    network (aliasing). Scalar results are not compared (NVIDIA's JSON has none). By default the
//    calls that cannot change a build are left out on both sides -- destructors ("~") and calls on
//    IHostMemory, which NVIDIA's shim does not record -- so a trace and its NVIDIA-JSON round trip
//    are equivalent; --all-calls compares them too. The first difference names both calls' seq,
//    the API, the argument and both values.
// 2. Structure, per network (network 0, 1, ... as everywhere; "-": builder and config calls):
//    layers matched in creation order by their type (longest common subsequence), then layers
//    added, removed and changed (each changed call on the layer or its tensors; changed weights by
//    content hash). Objects are named by how they were obtained ("L3.getOutput(0)"), so traces
//    whose handles are numbered differently compare by structure.
// Exit codes (docs/errors.md): 0 equivalent, 1 different, 2 cannot compare (an input unreadable,
// not a trace, corrupt).
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "diff_model.h"
#include "trace_edit.h"
#include "trtrace/api_table.h"
#include "trtrace/convert.h"
#include "trtrace/error.h"
#include "trtrace/reader.h"
#include "usage.h"

namespace trtrace::cli {

struct DiffOptions {
  std::string a, b;
  bool allCalls = false, json = false;
  int max = 10;
};

namespace {

bool sameValue(const ValueView& a, const ValueView& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ValueKind::Null: return true;
    case ValueKind::Bool: return a.asBool() == b.asBool();
    case ValueKind::I64: return a.asI64() == b.asI64();
    case ValueKind::U64: case ValueKind::Handle: return a.asU64() == b.asU64();
    case ValueKind::F32: case ValueKind::F64: return a.toString() == b.toString() || a.asF64() == b.asF64();
    case ValueKind::String: return a.asString() == b.asString();
    case ValueKind::Enum: return a.typeId() == b.typeId() && a.asI64() == b.asI64();
    case ValueKind::Dims: case ValueKind::I64Array:
      return std::equal(a.ints().begin(), a.ints().end(), b.ints().begin(), b.ints().end());
    case ValueKind::F32Array: return std::equal(a.floats().begin(), a.floats().end(), b.floats().begin(), b.floats().end());
    case ValueKind::HandleArray: return std::equal(a.handles().begin(), a.handles().end(), b.handles().begin(), b.handles().end());
    case ValueKind::Bytes: case ValueKind::WeightsInline:
      return a.dtype() == b.dtype() && a.count() == b.count() &&
             std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin(), b.bytes().end());
    case ValueKind::WeightsBlob: return a.dtype() == b.dtype() && a.count() == b.count() && a.blob() == b.blob();
    case ValueKind::WeightsRandom: return a.dtype() == b.dtype() && a.count() == b.count() && a.seed() == b.seed();
  }
  return false;
}

// Weights pointer identity compared as a pattern: a one-to-one map between the two traces'
// identities, per network (NVIDIA's JSON numbers weights per network; ours are per process).
struct PtrPattern {
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> ab, ba;
  bool same(uint32_t net, const ValueView& a, const ValueView& b) {
    if (!isWeights(a) || !a.weightsPtr() || !b.weightsPtr()) return true;  // none recorded: content only
    auto x = ab.try_emplace({net, a.weightsPtr()}, b.weightsPtr()).first->second;
    auto y = ba.try_emplace({net, b.weightsPtr()}, a.weightsPtr()).first->second;
    return x == b.weightsPtr() && y == a.weightsPtr();
  }
};

// Calls that cannot change a build (left out unless --all-calls).
bool buildIrrelevant(uint32_t apiId) {
  const api::ApiDesc* d = api::find(apiId);
  return d && d->has(api::flag::kBuildIrrelevant);
}

struct Difference {
  uint64_t seqA = 0, seqB = 0;
  std::string api, argument, a, b;  // argument empty: the call as a whole ("what" in a/b)
  std::string line() const {
    std::string s = "call #" + std::to_string(seqA) + " / #" + std::to_string(seqB) + " " + api;
    if (!argument.empty()) s += ": " + argument;
    return s + ": " + a + " vs " + b;
  }
};

std::string show(const ValueView& v) { return std::string(kindName(v.kind())) + " " + v.toString(); }

// Compares two calls already paired; appends each difference.
void compareCall(const Reader& ra, const CallView& x, const CallView& y, PtrPattern& ptrs, std::vector<Difference>& out) {
  Difference d{x.seq(), y.seq(), apiName(ra, x.apiId()), "", "", ""};
  auto add = [&](std::string arg, std::string a, std::string b) {
    d.argument = std::move(arg), d.a = std::move(a), d.b = std::move(b);
    out.push_back(d);
  };
  if (x.apiId() != y.apiId()) return add("", "this call", "the call " + apiName(ra, y.apiId()));
  if (x.receiver() != y.receiver()) add("receiver", std::to_string(x.receiver()), std::to_string(y.receiver()));
  if (x.networkId() != y.networkId()) add("network", std::to_string(x.networkId()), std::to_string(y.networkId()));
  if (x.argCount() != y.argCount())
    return add("", std::to_string(x.argCount()) + " arguments", std::to_string(y.argCount()));
  const api::ApiDesc* desc = api::find(x.apiId());
  for (size_t k = 0; k < x.argCount(); ++k) {
    if (desc && k < desc->nargs && desc->params[k].kind == api::Kind::Foreign) continue;
    if (!sameValue(x.arg(k), y.arg(k))) add(argName(ra, x.apiId(), k), show(x.arg(k)), show(y.arg(k)));
    if (!ptrs.same(x.networkId(), x.arg(k), y.arg(k)))  // aliasing, whether or not the contents differ
      add(argName(ra, x.apiId(), k), "weights pointer identity", "another (aliasing changed)");
  }
  auto rx = x.ret(), ry = y.ret();
  if (rx && rx->kind() == ValueKind::Handle && !(ry && sameValue(*rx, *ry)))
    add("result", show(*rx), ry ? show(*ry) : std::string("none"));
}

struct CallDiff {
  std::vector<Difference> diffs;
  uint64_t callsA = 0, callsB = 0;
  size_t blobsA = 0, blobsB = 0;
  bool blobSetsDiffer = false;
};

// Walks both logs side by side, one segment of each in memory.
CallDiff compareCalls(const Reader& a, const Reader& b, const DiffOptions& o) {
  CallDiff r;
  CallCursor curA(a), curB(b);
  auto next = [&](CallCursor& cur) -> const CallView* {
    for (const CallView* c; (c = cur.next());)
      if (o.allCalls || !buildIrrelevant(c->apiId())) return c;
    return nullptr;
  };
  PtrPattern ptrs;
  Progress progress("trtrace diff", a.callCount(), Progress::Unit::Calls);
  for (;;) {
    const CallView* x = next(curA);
    const CallView* y = next(curB);
    r.callsA += x != nullptr;
    r.callsB += y != nullptr;
    if (!x || !y) {
      while (x && next(curA)) ++r.callsA;
      while (y && next(curB)) ++r.callsB;
      if (r.callsA != r.callsB)
        r.diffs.push_back({r.callsA, r.callsB, "(end)", "", std::to_string(r.callsA) + " calls", std::to_string(r.callsB) + " calls"});
      break;
    }
    progress.update(x->seq());
    compareCall(a, *x, *y, ptrs, r.diffs);
  }
  std::set<std::pair<std::pair<uint64_t, uint64_t>, uint64_t>> ba, bb;
  for (const BlobRef& k : blobKeys(a)) ba.insert({{k.hash.hi, k.hash.lo}, k.length});
  for (const BlobRef& k : blobKeys(b)) bb.insert({{k.hash.hi, k.hash.lo}, k.length});
  r.blobsA = ba.size(), r.blobsB = bb.size(), r.blobSetsDiffer = ba != bb;
  return r;
}

void printText(const CallDiff& c, const std::vector<NetworkDiff>& nets, const DiffOptions& o) {
  const bool same = c.diffs.empty() && !c.blobSetsDiffer;
  if (same) {
    std::printf("equivalent: %llu calls%s, %zu blobs\n", (unsigned long long)c.callsA,
                o.allCalls ? "" : " that build", c.blobsA);
    return;
  }
  std::printf("different: %zu call differences (%llu vs %llu calls), blobs %zu vs %zu%s\n", c.diffs.size(),
              (unsigned long long)c.callsA, (unsigned long long)c.callsB, c.blobsA, c.blobsB,
              c.blobSetsDiffer ? " (sets differ)" : "");
  if (!c.diffs.empty()) std::printf("first divergent call: %s\n", terminalText(c.diffs[0].line()).c_str());
  for (size_t i = 1; i < c.diffs.size() && int(i) < o.max; ++i) std::printf("  %s\n", terminalText(c.diffs[i].line()).c_str());
  if (int(c.diffs.size()) > o.max) std::printf("  ... %zu more\n", c.diffs.size() - o.max);
  for (auto& n : nets) printNetworkDiff(n, o.max);
}

void printJson(const CallDiff& c, const std::vector<NetworkDiff>& nets) {
  const bool same = c.diffs.empty() && !c.blobSetsDiffer;
  std::printf("{\"equivalent\":%s,\"calls\":[%llu,%llu],\"blobs\":[%zu,%zu],\"blob_sets_differ\":%s,\"differences\":[",
              same ? "true" : "false", (unsigned long long)c.callsA, (unsigned long long)c.callsB, c.blobsA, c.blobsB,
              c.blobSetsDiffer ? "true" : "false");
  for (size_t i = 0; i < c.diffs.size(); ++i) {
    auto& d = c.diffs[i];
    std::printf("%s{\"seq\":[%llu,%llu],\"api\":%s,\"argument\":%s,\"a\":%s,\"b\":%s}", i ? "," : "",
                (unsigned long long)d.seqA, (unsigned long long)d.seqB, jsonString(d.api).c_str(),
                jsonString(d.argument).c_str(), jsonString(d.a).c_str(), jsonString(d.b).c_str());
  }
  std::printf("],\"networks\":[");
  for (size_t i = 0; i < nets.size(); ++i) std::printf("%s%s", i ? "," : "", networkDiffJson(nets[i]).c_str());
  std::printf("]}\n");
}

}  // namespace

static int runDiff(const DiffOptions& o) {
  std::unique_ptr<Reader> a, b;
  try {
    a = convert::openCapture(o.a);
    b = convert::openCapture(o.b);
    for (auto* r : {a.get(), b.get()})
      if (r->truncatedAt()) std::fprintf(stderr, "trtrace: warning: %s; comparing its prefix\n", terminalText(r->truncationMessage()).c_str());
    const CallDiff calls = compareCalls(*a, *b, o);
    const auto nets = diffStructure(*a, *b, o.allCalls);
    o.json ? printJson(calls, nets) : printText(calls, nets, o);
    return calls.diffs.empty() && !calls.blobSetsDiffer ? 0 : 1;
  } catch (const std::exception& e) {  // cannot compare: one line, exit 2 (1 means "different")
    std::fprintf(stderr, "trtrace: %s\n", topLevelMessage(e, "diff " + o.a + " " + o.b).c_str());
    return 2;
  }
}

Command addDiff(CLI::App& app) {
  auto o = std::make_shared<DiffOptions>();
  auto* sub = app.add_subcommand("diff", "Compare two traces: first divergent call, then layers added/removed/changed per network "
                                         "(exit 0 equivalent, 1 different, 2 cannot compare)");
  sub->add_option("a", o->a, "First trace")->required();
  sub->add_option("b", o->b, "Second trace")->required();
  sub->add_flag("--all-calls", o->allCalls, "Also compare destructors and IHostMemory calls (they cannot change a build)");
  sub->add_flag("--json", o->json, "Machine-readable output");
  sub->add_option("--max", o->max, "Differences listed per section (default 10)")->check(CLI::Range(1, 1 << 20));
  return {sub, [o] { return runDiff(*o); }};
}

}  // namespace trtrace::cli
