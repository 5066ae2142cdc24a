// trace_diff A B: compares the calls and blobs of two traces (the converter tests' oracle).
//   --skip-unrecorded   leave out A's calls NVIDIA's shim never records (destructors "~" and calls on
//                       IHostMemory) before pairing A's calls with B's
// Compared per call: API id, receiver, network, every argument (kind and value, weights bytes and
// blob hashes included; "foreign" arguments only as present/absent is unknowable in NVIDIA's JSON),
// and object results (handles). Scalar results are not compared (NVIDIA's JSON has none).
// Blobs: the set of (XXH3-128, length) of both traces must be equal.
// Prints the first differences and exits 1 if any; 0 and a summary line otherwise.
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "trtrace/api_table.h"
#include "trtrace/reader.h"

using namespace trtrace;

namespace {
std::string show(const ValueView& v) { return std::string(kindName(v.kind())) + " " + v.toString(); }

bool sameValue(const ValueView& a, const ValueView& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ValueKind::Null: return true;
    case ValueKind::Bool: return a.asBool() == b.asBool();
    case ValueKind::I64: return a.asI64() == b.asI64();
    case ValueKind::U64: case ValueKind::Handle: return a.asU64() == b.asU64();
    case ValueKind::F32: case ValueKind::F64: return std::memcmp(&(const double&)a.asF64(), &(const double&)b.asF64(), 8) == 0 || a.asF64() == b.asF64();
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
// Weights pointer identity is compared as a pattern: a one-to-one map between the two traces'
// identities, per network (NVIDIA's JSON numbers weights per network; ours are per process).
struct PtrPattern {
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> ab, ba;
  bool same(uint32_t net, const ValueView& a, const ValueView& b) {
    const bool weights = a.kind() == ValueKind::WeightsInline || a.kind() == ValueKind::WeightsBlob ||
                         a.kind() == ValueKind::WeightsRandom;
    if (!weights || !a.weightsPtr() || !b.weightsPtr()) return true;  // none recorded: content only
    auto x = ab.try_emplace({net, a.weightsPtr()}, b.weightsPtr()).first->second;
    auto y = ba.try_emplace({net, b.weightsPtr()}, a.weightsPtr()).first->second;
    return x == b.weightsPtr() && y == a.weightsPtr();
  }
};
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  bool skipUnrecorded = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--skip-unrecorded") == 0) skipUnrecorded = true;
    else files.push_back(argv[i]);
  }
  if (files.size() != 2) {
    std::fprintf(stderr, "usage: trace_diff [--skip-unrecorded] A B\n");
    return 2;
  }
  try {
    auto a = Reader::open(files[0]), b = Reader::open(files[1]);
    // Both logs walked side by side, one segment of each in memory (views live until next()).
    CallCursor curA(*a), curB(*b);
    auto nextA = [&]() -> const CallView* {
      for (const CallView* c; (c = curA.next());) {
        const api::ApiDesc* d = api::find(c->apiId());
        if (skipUnrecorded && d && (d->method == "~" || d->interface == "HostMemory")) continue;
        return c;
      }
      return nullptr;
    };
    int problems = 0;
    PtrPattern ptrs;
    auto report = [&](size_t i, const std::string& what) {
      if (++problems <= 20) std::printf("call %zu: %s\n", i, what.c_str());
    };
    size_t na = 0, nb = 0;
    for (size_t i = 0;; ++i) {
      const CallView* px = nextA();
      const CallView* py = curB.next();
      na += px != nullptr;
      nb += py != nullptr;
      if (!px || !py) {
        while (px && nextA()) ++na;
        while (py && curB.next()) ++nb;
        if (na != nb) report(0, "call counts differ: " + std::to_string(na) + " vs " + std::to_string(nb));
        break;
      }
      const CallView &x = *px, &y = *py;
      const api::ApiDesc* d = api::find(x.apiId());
      std::string name = d ? std::string(d->interface) + "::" + std::string(d->method) : "?";
      if (x.apiId() != y.apiId()) { report(i, "API " + name + " vs id " + std::to_string(y.apiId())); continue; }
      if (x.receiver() != y.receiver()) report(i, name + ": receiver " + std::to_string(x.receiver()) + " vs " + std::to_string(y.receiver()));
      if (x.networkId() != y.networkId()) report(i, name + ": network " + std::to_string(x.networkId()) + " vs " + std::to_string(y.networkId()));
      if (x.argCount() != y.argCount()) { report(i, name + ": argument counts differ"); continue; }
      for (size_t k = 0; k < x.argCount(); ++k) {
        if (d && k < d->nargs && d->kinds[k] == "foreign") continue;
        if (!sameValue(x.arg(k), y.arg(k)))
          report(i, name + ": argument " + std::to_string(k) + ": " + show(x.arg(k)) + " vs " + show(y.arg(k)));
        else if (!ptrs.same(x.networkId(), x.arg(k), y.arg(k)))
          report(i, name + ": argument " + std::to_string(k) + ": weights pointer identity differs (aliasing changed)");
      }
      auto rx = x.ret(), ry = y.ret();
      if (rx && rx->kind() == ValueKind::Handle && !(ry && sameValue(*rx, *ry)))
        report(i, name + ": result " + show(*rx) + " vs " + (ry ? show(*ry) : std::string("none")));
    }
    std::set<std::pair<std::pair<uint64_t, uint64_t>, uint64_t>> ba, bb;
    for (auto& i : a->blobs()) ba.insert({{i.ref.hash.hi, i.ref.hash.lo}, i.ref.length});
    for (auto& i : b->blobs()) bb.insert({{i.ref.hash.hi, i.ref.hash.lo}, i.ref.length});
    if (ba != bb) report(0, "blob sets differ: " + std::to_string(ba.size()) + " vs " + std::to_string(bb.size()) + " blobs");
    if (problems) {
      std::printf("trace_diff: %d differences\n", problems);
      return 1;
    }
    std::printf("trace_diff: %zu calls and %zu blobs identical\n", na, ba.size());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trace_diff: %s\n", e.what());
    return 2;
  }
}
