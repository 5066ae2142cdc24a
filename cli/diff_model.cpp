// The comparison behind `trtrace diff` (diff_model.h). Each trace is read once into compact call
// records (diff_internal.h: objects named structurally, values hashed by their typed content).
// Per network ("-": builder and config calls) the two call sequences are aligned on the whole
// call (seq_align.h: patience anchors, bounded Myers); between two aligned calls, the calls left
// on both sides are aligned again on the call but for its objects (an input changed), then again
// on what the call is (API and the kind of object called), which pairs a call with its changed
// counterpart. A call left on one side is inserted or deleted --
// unless the other side makes the same call elsewhere in that network and nothing else could have
// overwritten it (a move: order does not matter there). Then every aligned pair is compared in A's
// order, with B's objects mapped to A's through the pairs' results: an aligned pair that differs
// (an argument, the object called, the result, weights aliasing) is a change.
#include <algorithm>
#include <cmath>
#include <limits>
#include <iterator>
#include <tuple>

#include "diff_internal.h"
#include "seq_align.h"
#include "trace_edit.h"
#include "trtrace/convert.h"
#include "trtrace/hash.h"
#include "trtrace/progress.h"

namespace trtrace::cli {
namespace diffing {
namespace {

uint64_t hashOf(const std::string& s) {
  const Hash128 h = hash128(s.data(), s.size());
  return h.lo ^ (h.hi * 0x9E3779B97F4A7C15ull);
}
template <class T>
void put(std::string& s, const T& v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void putBytes(std::string& s, const void* p, size_t n) {
  put(s, uint64_t(n));
  s.append(static_cast<const char*>(p), n);
}

// A weights value's contents: inline bytes and a blob with the same bytes are the same weights.
Hash128 weightsContent(const ValueView& v) {
  if (v.kind() == ValueKind::WeightsInline) return hash128(v.bytes().data(), v.bytes().size());
  if (v.kind() == ValueKind::WeightsBlob) return v.blob().hash;
  return Hash128{v.seed(), 0x5eed};
}

// Equal numbers compare equal (-0 and 0), and NaN equals NaN whatever its payload.
double canonical(double x) {
  if (std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
  return x == 0 ? 0.0 : x;
}

// Kind and content of a value that is not an object; weights by type and count (content apart).
void putShape(std::string& s, const ValueView& v) {
  const ValueKind k = v.kind() == ValueKind::WeightsInline ? ValueKind::WeightsBlob : v.kind();
  put(s, uint8_t(k));
  switch (v.kind()) {
    case ValueKind::Null:
    case ValueKind::Handle:
    case ValueKind::HandleArray: break;
    case ValueKind::Bool: put(s, uint8_t(v.asBool())); break;
    case ValueKind::I64: put(s, v.asI64()); break;
    case ValueKind::U64: put(s, v.asU64()); break;
    case ValueKind::F32:
    case ValueKind::F64: put(s, canonical(v.asF64())); break;
    case ValueKind::String: putBytes(s, v.asString().data(), v.asString().size()); break;
    case ValueKind::Enum: put(s, v.typeId()), put(s, v.asI64()); break;
    case ValueKind::Dims:
    case ValueKind::I64Array: putBytes(s, v.ints().data(), v.ints().size_bytes()); break;
    case ValueKind::F32Array:
      put(s, uint64_t(v.floats().size()));
      for (float x : v.floats()) put(s, canonical(x));
      break;
    case ValueKind::Bytes: putBytes(s, v.bytes().data(), v.bytes().size()); break;
    case ValueKind::WeightsInline:
    case ValueKind::WeightsBlob:
    case ValueKind::WeightsRandom: put(s, v.dtype()), put(s, v.count()); break;
  }
}

// Pass 1: the compact records of one trace.
class ModelBuilder {
 public:
  ModelBuilder(TraceModel& m, std::unordered_map<uint64_t, uint64_t> appNames)
      : m_(m), appNames_(std::move(appNames)) {}
  void add(const CallView& c);

 private:
  struct Parts {
    std::string shape, content;
    std::string names[kNameDepth + 1];  // the objects' names at each depth
    std::vector<uint64_t> ptrs;
  };
  const ObjInfo* find(uint64_t h) const;
  void putNames(uint64_t h, Parts& p) const;
  void addArg(const ValueView& v, Parts& p, CallRec& r);
  void nameResult(const CallView& c, const api::ApiDesc* d, CallRec& r, uint64_t h, const Parts& p,
                  const ObjInfo* recv);

  TraceModel& m_;
  const std::unordered_map<uint64_t, uint64_t> appNames_;  // handle -> hash of the first name the app gave it
};

// The name the app first gives each object (setName), by handle: part of the object's structural
// name, so that two objects made alike (two activations of one tensor) are told apart by it.
std::unordered_map<uint64_t, uint64_t> appNames(const Reader& r, bool allCalls) {
  static constexpr uint32_t kSetName[] = {api::kTensor_setName, api::kLayer_setName, api::kLoop_setName,
                                          api::kIfConditional_setName, api::kAttention_setName};
  std::unordered_map<uint64_t, uint64_t> names;
  r.forEachCall([&](const CallView& c) {
    if (std::find(std::begin(kSetName), std::end(kSetName), c.apiId()) != std::end(kSetName) && c.receiver() &&
        c.argCount() && c.arg(0).kind() == ValueKind::String && compared(api::find(c.apiId()), allCalls))
      names.try_emplace(c.receiver(), hashOf(std::string(c.arg(0).asString())));
    return true;
  });
  return names;
}

const ObjInfo* ModelBuilder::find(uint64_t h) const {
  auto it = m_.objs.find(h);
  return it == m_.objs.end() ? nullptr : &it->second;  // stays valid: a node container
}

void ModelBuilder::putNames(uint64_t h, Parts& p) const {
  const ObjInfo* o = h ? find(h) : nullptr;
  const uint64_t unknown = h ? hashOf("handle" + std::to_string(h)) : 0;  // never obtained: by number
  for (int k = 0; k <= kNameDepth; ++k) put(p.names[k], o ? o->names[k] : unknown);
}

void ModelBuilder::addArg(const ValueView& v, Parts& p, CallRec& r) {
  putShape(p.shape, v);
  if (v.kind() == ValueKind::Handle) {
    m_.pool.push_back(v.asU64());
    putNames(v.asU64(), p);
  } else if (v.kind() == ValueKind::HandleArray) {
    put(p.shape, uint64_t(v.handles().size()));
    for (uint64_t h : v.handles()) m_.pool.push_back(h), putNames(h, p);
  } else if (isWeights(v)) {
    put(p.content, weightsContent(v));
    p.ptrs.push_back(v.weightsPtr());
    r.hasWeights = true;
  }
}

// Names at depth 0 (the creating call without its objects, and the app's name for the object) to
// kNameDepth (with its objects' names one depth less): a change renames what lies at most
// kNameDepth objects downstream, so the alignment's first level still anchors beyond it.
void ModelBuilder::nameResult(const CallView& c, const api::ApiDesc* d, CallRec& r, uint64_t h, const Parts& p,
                              const ObjInfo* recv) {
  ObjInfo o;
  auto named = appNames_.find(h);
  std::string own = p.shape + p.content;
  put(own, named == appNames_.end() ? uint64_t(0) : named->second);
  o.names[0] = hashOf(own);
  for (int k = 1; k <= kNameDepth; ++k) o.names[k] = hashOf(own + p.names[k - 1]);
  o.creator = r.api, o.net = r.net;
  if (d && d->result.kind == api::Kind::Handle && d->result.layer) {
    auto& layers = m_.layers[r.net];
    o.layer = int32_t(layers.size()), o.text = layerRef(layers.size());
    layers.push_back({std::string(api::ifaceName(d->result.iface)), ""});
    r.layer = o.layer, r.createsLayer = true;
  } else {
    o.layer = r.layer;  // the receiver's layer, if it is of this network
    o.text = d && d->has(api::flag::kStartsNetwork) ? "network" : fullText(m_, c, d);
    // Each object's text holds its receiver's: a chain of objects each obtained from the last (a
    // hostile trace) would make them grow with the chain. Shown, not compared: cut short.
    if (o.text.size() > kMaxObjectText) o.text.resize(kMaxObjectText), o.text += "...";
  }
  m_.objs.emplace(h, std::move(o));
}

void ModelBuilder::add(const CallView& c) {
  const api::ApiDesc* d = api::find(c.apiId());
  CallRec r;
  r.seq = c.seq(), r.api = c.apiId(), r.net = c.networkId(), r.hOff = uint32_t(m_.pool.size());
  r.getter = d && d->has(api::flag::kGetter);
  r.valueRead = r.getter && d->result.kind != api::Kind::Handle;
  const ObjInfo* recv = find(c.receiver());
  Parts p;
  put(p.shape, r.api), put(p.shape, uint32_t(c.argCount()));
  putNames(c.receiver(), p);
  m_.pool.push_back(c.receiver());
  for (size_t k = 0; k < c.argCount(); ++k)
    if (!foreignArg(d, k)) addArg(c.arg(k), p, r);
  const auto rv = c.ret();
  const uint64_t result = rv && rv->kind() == ValueKind::Handle ? rv->asU64() : 0;
  m_.pool.push_back(result);
  r.nH = uint32_t(m_.pool.size() - r.hOff);
  m_.pool.insert(m_.pool.end(), p.ptrs.begin(), p.ptrs.end());
  r.nW = uint32_t(p.ptrs.size());
  const std::string& names = p.names[kNameDepth];
  auto named = result ? appNames_.find(result) : appNames_.end();  // what the app calls the object made
  r.shape = hashOf(p.shape), r.content = hashOf(p.content);
  r.key = hashOf(p.shape + names + p.content + std::to_string(named == appNames_.end() ? 0 : named->second));
  r.slot = hashOf(names.substr(0, sizeof(uint64_t)) + std::to_string(r.api));
  // A layer index counts within its network: one named by a call of another network (a hostile
  // trace) is no layer of this one.
  r.layer = recv && recv->net == r.net ? recv->layer : -1, r.recvCreator = recv ? recv->creator : 0;
  if (result && !m_.objs.count(result)) nameResult(c, d, r, result, p, recv);
  if (d && d->id == api::kLayer_setName && recv && r.layer >= 0 && recv->text == layerRef(size_t(r.layer)) &&
      c.argCount() && c.arg(0).kind() == ValueKind::String)
    m_.layers[r.net][size_t(r.layer)].name = std::string(c.arg(0).asString());
  m_.byNet[r.net].push_back(uint32_t(m_.calls.size()));
  m_.calls.push_back(r);
}

// Aligns one network's calls; appends the aligned pairs and the calls of one side only.
class NetworkAligner {
 public:
  NetworkAligner(Comparison& c, const std::vector<uint32_t>& ia, const std::vector<uint32_t>& ib,
                 std::vector<std::pair<uint32_t, uint32_t>>& pairs)
      : c_(c), ia_(ia), ib_(ib), pairs_(pairs) {}
  void run();

 private:
  static constexpr int kLevels = 3;
  static uint64_t key(int level, const CallRec& r);
  void stretch(int level, size_t a0, size_t a1, size_t b0, size_t b1);
  void matchMoves();
  uint64_t orderBefore(size_t a0) const { return a0 ? 2 * c_.A.calls[ia_[a0 - 1]].seq + 1 : 1; }

  Comparison& c_;
  const std::vector<uint32_t>& ia_;
  const std::vector<uint32_t>& ib_;
  std::vector<std::pair<uint32_t, uint32_t>>& pairs_;
  std::vector<uint32_t> deleted_;                        // A indices
  std::vector<std::pair<uint32_t, uint64_t>> inserted_;  // B index, order
};

void NetworkAligner::run() {
  stretch(0, 0, ia_.size(), 0, ib_.size());
  matchMoves();
  // A getter of a value (a name, a type) one side makes and the other does not (the ONNX parser
  // asks for names in an order that follows heap addresses) is a read: it differs only under
  // --all-calls. A getter of an object stays a difference: later calls may use the object.
  const bool reads = !c_.A.allCalls;
  for (uint32_t a : deleted_)
    if (reads && c_.A.calls[a].valueRead)
      ++c_.reads;
    else
      c_.items.push_back({Difference::Kind::Deleted, a, 0, 0, 2 * c_.A.calls[a].seq, 0});
  for (auto [b, order] : inserted_)
    if (reads && c_.B.calls[b].valueRead)
      ++c_.reads;
    else
      c_.items.push_back({Difference::Kind::Inserted, 0, b, 0, order, c_.B.calls[b].seq});
}

// The alignment key of a call at each level: the whole call; the call but for the objects it is
// given (a changed input); what it is (API and the kind of object called: a changed call).
uint64_t NetworkAligner::key(int level, const CallRec& r) {
  if (level == 0) return r.key;
  if (level == 1) return r.shape ^ (r.content * 0x9E3779B97F4A7C15ull);
  return (uint64_t(r.api) << 32) | r.recvCreator;
}

// Aligns calls [a0, a1) of A with [b0, b1) of B at `level`; what stays between two aligned calls
// is aligned at the next level, and what is left after the last level is on one side only.
void NetworkAligner::stretch(int level, size_t a0, size_t a1, size_t b0, size_t b1) {
  if (a0 == a1 && b0 == b1) return;
  if (level == kLevels || a0 == a1 || b0 == b1) {
    for (size_t i = a0; i < a1; ++i) deleted_.push_back(ia_[i]);
    for (size_t j = b0; j < b1; ++j) inserted_.push_back({ib_[j], orderBefore(a0)});
    return;
  }
  std::vector<uint64_t> ka, kb;
  ka.reserve(a1 - a0), kb.reserve(b1 - b0);
  for (size_t i = a0; i < a1; ++i) ka.push_back(key(level, c_.A.calls[ia_[i]]));
  for (size_t j = b0; j < b1; ++j) kb.push_back(key(level, c_.B.calls[ib_[j]]));
  const Matches m = alignKeys(ka, kb);
  ka = {}, kb = {};
  size_t pa = a0, pb = b0;
  for (auto [i, j] : m) {
    stretch(level + 1, pa, a0 + i, pb, b0 + j);
    pairs_.push_back({ia_[a0 + i], ib_[b0 + j]});
    pa = a0 + i + 1, pb = b0 + j + 1;
  }
  stretch(level + 1, pa, a1, pb, b1);
}

// A deleted and an inserted call that are the same call form a move, unless it makes a layer (the
// layers' order is the network's) or its receiver takes that call more than once on either side
// (the last one may win: setters, markOutput) and it is not a getter.
void NetworkAligner::matchMoves() {
  if (deleted_.empty() || inserted_.empty()) return;
  auto slots = [](const TraceModel& m, const std::vector<uint32_t>& idx) {
    std::vector<uint64_t> s;
    for (uint32_t i : idx) s.push_back(m.calls[i].slot);
    std::sort(s.begin(), s.end());
    return s;
  };
  const auto sa = slots(c_.A, ia_), sb = slots(c_.B, ib_);
  auto once = [](const std::vector<uint64_t>& s, uint64_t v) {
    auto [lo, hi] = std::equal_range(s.begin(), s.end(), v);
    return hi - lo == 1;
  };
  std::vector<std::pair<uint64_t, size_t>> byKey;  // deleted, by key
  for (size_t k = 0; k < deleted_.size(); ++k) byKey.push_back({c_.A.calls[deleted_[k]].key, k});
  std::sort(byKey.begin(), byKey.end());
  std::vector<bool> gone(deleted_.size(), false);
  std::vector<std::pair<uint32_t, uint64_t>> left;
  for (auto& ins : inserted_) {
    const CallRec& y = c_.B.calls[ins.first];
    auto it = std::lower_bound(byKey.begin(), byKey.end(), std::make_pair(y.key, size_t(0)));
    while (it != byKey.end() && it->first == y.key && gone[it->second]) ++it;
    // A call whose slot recurs may overwrite another's effect, so its place matters; a getter's
    // cannot (the app may ask again in another order: the ONNX parser under NVIDIA's shim does).
    const bool orderFree = y.getter || (once(sa, y.slot) && once(sb, y.slot));
    if (it == byKey.end() || it->first != y.key || y.createsLayer || !orderFree) {
      left.push_back(ins);
      continue;
    }
    gone[it->second] = true;
    pairs_.push_back({deleted_[it->second], ins.first});
    c_.movedA.push_back(deleted_[it->second]);
  }
  inserted_ = std::move(left);
  std::vector<uint32_t> kept;
  for (size_t k = 0; k < deleted_.size(); ++k)
    if (!gone[k]) kept.push_back(deleted_[k]);
  deleted_ = std::move(kept);
}

// Compares aligned pairs in A's order, so that each object is mapped before it is used.
class PairComparer {
 public:
  explicit PairComparer(Comparison& c) : c_(c) {}
  uint8_t compare(const CallRec& x, const CallRec& y);

 private:
  bool sameAliasing(const CallRec& x, const CallRec& y);
  Comparison& c_;
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> ab_, ba_;  // weights pointers, per network
};

uint8_t PairComparer::compare(const CallRec& x, const CallRec& y) {
  uint8_t what = 0;
  if (x.shape != y.shape || x.content != y.content || x.nH != y.nH) what |= kDiffArgs;
  const uint64_t* hx = c_.A.handles(x);
  const uint64_t* hy = c_.B.handles(y);
  if (c_.mapToA(hy[0]) != hx[0]) what |= kDiffReceiver;
  if (!(what & kDiffArgs))
    for (uint32_t k = 1; k + 1 < x.nH; ++k)
      if (c_.mapToA(hy[k]) != hx[k]) what |= kDiffArgs;
  const uint64_t rx = hx[x.nH - 1], ry = hy[y.nH - 1];
  // A getter's result in a trace from NVIDIA's JSON is the converter's guess (its layout writes
  // only new objects): a known object reached another way cannot be named there.
  const bool guessed = x.getter && (c_.A.guessedReturns || c_.B.guessedReturns);
  if (rx && ry) {
    auto [it, fresh] = c_.bToA.try_emplace(ry, rx);
    if (!fresh && it->second != rx && !guessed) what |= kDiffResult;
  } else if (rx) {        // A made an object, B none. Not the other way: a round trip through NVIDIA's
    what |= kDiffResult;  // JSON gives a failed build's null result a handle
  }
  if (!sameAliasing(x, y)) what |= kDiffAliasing;
  return what;
}

// Weights pointer identity as a pattern: one-to-one between the traces, per network (NVIDIA's
// JSON numbers weights per network; ours are per process).
bool PairComparer::sameAliasing(const CallRec& x, const CallRec& y) {
  bool same = true;
  for (uint32_t k = 0; k < x.nW && k < y.nW; ++k) {
    const uint64_t px = c_.A.weightPtrs(x)[k], py = c_.B.weightPtrs(y)[k];
    if (!px || !py) continue;  // none recorded: content only
    const uint64_t b = ab_.try_emplace({x.net, px}, py).first->second;
    const uint64_t a = ba_.try_emplace({x.net, py}, px).first->second;
    same &= b == py && a == px;
  }
  return same;
}

void layerPartners(Comparison& c, const std::vector<std::pair<uint32_t, uint32_t>>& pairs) {
  for (auto& [net, layers] : c.A.layers) c.toB[net].assign(layers.size(), -1);
  for (auto& [net, layers] : c.B.layers) c.toA[net].assign(layers.size(), -1);
  for (auto [i, j] : pairs) {
    const CallRec &x = c.A.calls[i], &y = c.B.calls[j];
    if (x.createsLayer && y.createsLayer && x.net == y.net)
      c.toB[x.net][x.layer] = y.layer, c.toA[y.net][y.layer] = x.layer;
  }
}

}  // namespace

uint64_t contentHash(const ValueView& v) {
  std::string s;
  putShape(s, v);
  if (isWeights(v)) put(s, weightsContent(v));
  return hashOf(s);
}

uint64_t Comparison::mapToA(uint64_t hb) const {
  if (!hb) return 0;
  auto it = bToA.find(hb);
  if (it != bToA.end()) return it->second;
  // A handle no call of either trace made (a hostile trace's) compares by number; an object only
  // B made matches none of A's.
  return !B.objs.count(hb) && !A.objs.count(hb) ? hb : ~uint64_t(0);
}

void buildModel(const Reader& r, bool allCalls, TraceModel& m) {
  m.reader = &r, m.allCalls = allCalls, m.guessedReturns = convert::fromNvidiaJson(r);
  ModelBuilder b(m, appNames(r, allCalls));
  Progress progress("trtrace diff", r.callCount(), Progress::Unit::Calls);
  r.forEachCall([&](const CallView& c) {
    progress.update(c.seq());
    if (compared(api::find(c.apiId()), allCalls)) b.add(c);
    return true;
  });
}

void compareModels(Comparison& c) {
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  std::vector<uint32_t> nets;
  for (auto& [id, _] : c.A.byNet) nets.push_back(id);
  for (auto& [id, _] : c.B.byNet)
    if (!c.A.byNet.count(id)) nets.push_back(id);
  static const std::vector<uint32_t> none;
  for (uint32_t id : nets) {
    auto ia = c.A.byNet.find(id), ib = c.B.byNet.find(id);
    NetworkAligner(c, ia == c.A.byNet.end() ? none : ia->second, ib == c.B.byNet.end() ? none : ib->second, pairs)
        .run();
  }
  std::sort(pairs.begin(), pairs.end());
  std::sort(c.movedA.begin(), c.movedA.end());
  PairComparer cmp(c);
  for (auto [i, j] : pairs) {
    const uint8_t what = cmp.compare(c.A.calls[i], c.B.calls[j]);
    if (what)
      c.items.push_back({Difference::Kind::Changed, i, j, what, 2 * c.A.calls[i].seq, 0});
    else
      c.moved += std::binary_search(c.movedA.begin(), c.movedA.end(), i);  // a move only if the same call
  }
  layerPartners(c, pairs);
  std::stable_sort(c.items.begin(), c.items.end(),
                   [](const Item& x, const Item& y) { return std::tie(x.order, x.sub) < std::tie(y.order, y.sub); });
}

}  // namespace diffing

TraceDiff diffTraces(const Reader& a, const Reader& b, bool allCalls) {
  diffing::Comparison c;
  diffing::buildModel(a, allCalls, c.A);
  diffing::buildModel(b, allCalls, c.B);
  diffing::compareModels(c);
  return diffing::report(c);
}

}  // namespace trtrace::cli
