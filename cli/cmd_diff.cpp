// trtrace diff A B [--all-calls] [--json] [--max N]: are two traces the same build, and where do
// they part? (issue 17)
// 1. Calls, aligned (diff_model.h): per network, the two call sequences are aligned as a diff
//    aligns lines (patience anchors, Myers' algorithm; bounded memory), so inserted layers show as
//    the calls inserted, not as every later call shifted. Each difference is a call only in B
//    (inserted), only in A (deleted), or an aligned pair that differs (changed): an argument by its
//    typed content (weights by type, count and content hash; "foreign" arguments -- app pointers
//    such as a logger -- not at all), the object called or passed (objects are mapped through the
//    aligned calls that made them, whatever their handle numbers), an object result, or weights
//    pointer identity as a one-to-one pattern per network (aliasing). Scalar results are not
//    compared (NVIDIA's JSON has none). A call made elsewhere in the same network, where its order
//    cannot matter, is a move, not a difference. By default the calls that cannot change a build
//    are left out on both sides -- destructors ("~") and calls on IHostMemory, which NVIDIA's shim
//    does not record -- so a trace and its NVIDIA-JSON round trip are equivalent; --all-calls
//    compares them too. The first difference names both calls' seq, the API, the argument and both
//    values.
// 2. Structure, per network (network 0, 1, ... as everywhere; "-": builder and config calls), from
//    the same alignment: layers added, removed and changed (each differing call on the layer or its
//    tensors; changed weights by content hash). Objects are named by how they were obtained
//    ("L3.getOutput(0)"; B's layers by their A partner's number, or "B:L<k>").
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
#include "trtrace/hash.h"
#include "trtrace/reader.h"
#include "usage.h"

namespace trtrace::cli {

struct DiffOptions {
  std::string a, b;
  bool allCalls = false, json = false;
  int max = 10;
};

namespace {

// Blob sets: the weights each trace stores (or, for a JSON+BIN capture, can hand out).
struct BlobSets {
  size_t a = 0, b = 0;
  bool differ = false;
};

// The weights a trace holds, by content key: its stored blobs (their count goes to `stored`), and
// the bytes of every inline Weights argument. Where a weight lives is the writer's choice: a round
// trip through NVIDIA's JSON stores a small non-finite weight in the BIN that was inline.
using WeightKeys = std::set<std::pair<std::pair<uint64_t, uint64_t>, uint64_t>>;
WeightKeys weightKeys(const Reader& r, size_t& stored) {
  WeightKeys keys;
  for (const BlobRef& k : blobKeys(r)) keys.insert({{k.hash.hi, k.hash.lo}, k.length});
  stored = keys.size();
  r.forEachCall([&keys](const CallView& c) {
    for (size_t i = 0; i < c.argCount(); ++i) {
      const ValueView v = c.arg(i);
      if (v.kind() != ValueKind::WeightsInline) continue;
      const Hash128 h = hash128(v.bytes().data(), v.bytes().size());
      keys.insert({{h.hi, h.lo}, v.bytes().size()});
    }
    return true;
  });
  return keys;
}

BlobSets compareBlobs(const Reader& a, const Reader& b) {
  BlobSets s;
  s.differ = weightKeys(a, s.a) != weightKeys(b, s.b);
  return s;
}

void printText(const CallDiffs& c, const BlobSets& blobs, const std::vector<NetworkDiff>& nets, const DiffOptions& o) {
  if (!c.total() && !blobs.differ) {
    std::printf("equivalent: %llu calls%s, %zu blobs", (unsigned long long)c.callsA, o.allCalls ? "" : " that build",
                blobs.a);
    if (c.moved) std::printf(" (%llu calls in another order where it cannot matter)", (unsigned long long)c.moved);
    if (c.reads)
      std::printf(" (%llu getter calls on one side only: reads, listed with --all-calls)", (unsigned long long)c.reads);
    std::printf("\n");
    return;
  }
  std::printf(
      "different: %llu call differences (%llu inserted, %llu deleted, %llu changed; %llu vs %llu calls), blobs %zu vs "
      "%zu%s\n",
      (unsigned long long)c.total(), (unsigned long long)c.inserted, (unsigned long long)c.deleted,
      (unsigned long long)c.changed, (unsigned long long)c.callsA, (unsigned long long)c.callsB, blobs.a, blobs.b,
      blobs.differ ? " (sets differ)" : "");
  const auto& d = c.listed;
  if (!d.empty()) std::printf("first divergent call: %s\n", terminalText(d[0].line()).c_str());
  for (size_t i = 1; i < d.size() && int(i) < o.max; ++i) std::printf("  %s\n", terminalText(d[i].line()).c_str());
  if (int(d.size()) > o.max) std::printf("  ... %zu more\n", d.size() - o.max);
  for (auto& n : nets) printNetworkDiff(n, o.max);
}

std::string seqJson(uint64_t seq) { return seq ? std::to_string(seq) : "null"; }

void printJson(const CallDiffs& c, const BlobSets& blobs, const std::vector<NetworkDiff>& nets) {
  const bool same = !c.total() && !blobs.differ;
  std::printf(
      "{\"equivalent\":%s,\"calls\":[%llu,%llu],\"blobs\":[%zu,%zu],\"blob_sets_differ\":%s,"
      "\"inserted\":%llu,\"deleted\":%llu,\"changed\":%llu,\"moved\":%llu,\"reads\":%llu,\"differences\":[",
      same ? "true" : "false", (unsigned long long)c.callsA, (unsigned long long)c.callsB, blobs.a, blobs.b,
      blobs.differ ? "true" : "false", (unsigned long long)c.inserted, (unsigned long long)c.deleted,
      (unsigned long long)c.changed, (unsigned long long)c.moved, (unsigned long long)c.reads);
  for (size_t i = 0; i < c.listed.size(); ++i) {
    auto& d = c.listed[i];
    std::printf("%s{\"kind\":\"%s\",\"seq\":[%s,%s],\"api\":%s,\"argument\":%s,\"a\":%s,\"b\":%s}", i ? "," : "",
                d.kindName(), seqJson(d.seqA).c_str(), seqJson(d.seqB).c_str(), jsonString(d.api).c_str(),
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
      if (r->truncatedAt())
        std::fprintf(stderr, "trtrace: warning: %s; comparing its prefix\n",
                     terminalText(r->truncationMessage()).c_str());
    const TraceDiff d = diffTraces(*a, *b, o.allCalls);
    const BlobSets blobs = compareBlobs(*a, *b);
    o.json ? printJson(d.calls, blobs, d.networks) : printText(d.calls, blobs, d.networks, o);
    return !d.calls.total() && !blobs.differ ? exits::diff::kEquivalent : exits::diff::kDifferent;
  } catch (const std::exception& e) {  // cannot compare: one line (kError's 1 means "different" here)
    std::fprintf(stderr, "trtrace: %s\n", topLevelMessage(e, "diff " + o.a + " " + o.b).c_str());
    return exits::diff::kCannotCompare;
  }
}

Command addDiff(CLI::App& app) {
  auto o = std::make_shared<DiffOptions>();
  auto* sub =
      app.add_subcommand("diff",
                         "Compare two traces: first divergent call, then layers added/removed/changed per network "
                         "(exit 0 equivalent, 1 different, 2 cannot compare)");
  sub->add_option("a", o->a, "First trace")->required();
  sub->add_option("b", o->b, "Second trace")->required();
  sub->add_flag("--all-calls", o->allCalls,
                "Also compare destructors and IHostMemory calls (they cannot change a build)");
  sub->add_flag("--json", o->json, "Machine-readable output");
  sub->add_option("--max", o->max, "Differences listed per section (default 10)")->check(CLI::Range(1, 1 << 20));
  return {sub, [o] { return runDiff(*o); }};
}

}  // namespace trtrace::cli
