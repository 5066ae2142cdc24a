// The differences of `trtrace diff` made readable (diff_model.h): the first kListedDifferences
// differing calls rendered in a second pass over each trace (objects named by how they were
// obtained: the network "network", layer k "L<k>", a tensor "L3.getOutput(0)"; weights by type,
// count and content hash; B's layers by their A partner's number, or "B:L<k>"), each changed
// call's arguments compared one by one by typed content, and the per-network structural summary:
// layers added, removed and changed (each differing call on a layer or on its tensors).
#include <cstdio>
#include <map>

#include "diff_internal.h"
#include "trace_edit.h"
#include "trtrace/network_id.h"

namespace trtrace::cli {
namespace diffing {

bool compared(const api::ApiDesc* d, bool allCalls) { return allCalls || !(d && d->has(api::flag::kBuildIrrelevant)); }

bool foreignArg(const api::ApiDesc* d, size_t k) {
  return d && k < d->nargs && d->params[k].kind == api::Kind::Foreign;  // app pointers such as a logger
}

void forEachCompared(const Reader& r, bool allCalls, const std::function<void(uint32_t, const CallView&)>& fn) {
  uint32_t index = 0;
  r.forEachCall([&](const CallView& c) {
    if (compared(api::find(c.apiId()), allCalls)) fn(index++, c);
    return true;
  });
}

std::string layerRef(size_t k) { return "\x01" + std::to_string(k) + "\x02"; }

// Only object texts hold references: their values are escaped (terminalText), so a \x01 there is
// one of ours; anything else between the markers is left as it is.
std::string renderRefs(std::string s, const std::vector<long>* toA) {
  for (size_t p = 0; (p = s.find('\x01', p)) != std::string::npos;) {
    const size_t e = s.find('\x02', p);
    if (e == std::string::npos) break;
    size_t k = 0;
    bool digits = e > p + 1 && e - p <= 12;
    for (size_t i = p + 1; digits && i < e; ++i) digits = s[i] >= '0' && s[i] <= '9', k = k * 10 + size_t(s[i] - '0');
    if (!digits) {
      ++p;
      continue;
    }
    const long mapped = !toA ? long(k) : k < toA->size() ? (*toA)[k] : -1;
    s.replace(p, e - p + 1, mapped >= 0 ? "L" + std::to_string(mapped) : "B:L" + std::to_string(k));
  }
  return s;
}

std::string objText(const TraceModel& m, uint64_t h) {
  if (!h) return "null";
  auto it = m.objs.find(h);
  return it == m.objs.end() ? "object?" : it->second.text;
}

namespace {

std::string weightsText(const ValueView& v) {
  std::string s = "weights[type " + std::to_string(v.dtype()) + " x" + std::to_string(v.count()) + " ";
  if (v.kind() == ValueKind::WeightsBlob)
    s += "#" + toHex(v.blob().hash);
  else if (v.kind() == ValueKind::WeightsInline)
    s += "#" + toHex(hash128(v.bytes().data(), v.bytes().size()));
  else
    s += "random seed " + std::to_string(v.seed());
  return s + "]";
}

std::string valueText(const TraceModel& m, const ValueView& v) {
  if (v.kind() == ValueKind::Handle) return objText(m, v.asU64());
  if (v.kind() == ValueKind::HandleArray) {  // the first few: a text per object made would grow with them all
    constexpr size_t kShown = 16;
    std::string s = "[";
    for (size_t i = 0; i < v.handles().size() && i < kShown; ++i) s += objText(m, v.handles()[i]) + " ";
    if (v.handles().size() > kShown) s += "... " + std::to_string(v.handles().size() - kShown) + " more ";
    return s + "]";
  }
  if (isWeights(v)) return weightsText(v);
  return terminalText(v.toString());  // escaped: a raw \x01 in a name would read as a layer reference
}

}  // namespace

std::string callText(const TraceModel& m, const CallView& c, const api::ApiDesc* d) {
  std::string s = std::string(d ? d->method : "api#" + std::to_string(c.apiId())) + "(";
  bool first = true;
  for (size_t k = 0; k < c.argCount(); ++k) {
    if (foreignArg(d, k)) continue;
    s += (first ? "" : ", ") + valueText(m, c.arg(k));
    first = false;
  }
  return s + ")";
}

std::string fullText(const TraceModel& m, const CallView& c, const api::ApiDesc* d) {
  return (c.receiver() ? objText(m, c.receiver()) + "." : "") + callText(m, c, d);
}

namespace {

struct ArgSnap {
  std::string name, shown;
  uint64_t content = 0;        // not an object: contentHash
  std::vector<uint64_t> objs;  // objects: their handles
  bool objects = false;
};
struct Snap {
  std::vector<ArgSnap> args;
  std::string receiver, result;
};

// What a listed call looks like: its text (full, and as the summary lists it) and, for a changed
// call, each argument (A's kept until B's partner is read).
struct Rendered {
  std::string text, rel;
  std::vector<Difference> diffs;
};

class Renderer {
 public:
  explicit Renderer(const Comparison& c) : c_(c), out_(std::min(c.items.size(), kListedDifferences)) {}
  void run();
  const std::vector<Rendered>& aSide() const { return out_; }  // and each listed difference
  const std::vector<Rendered>& bSide() const { return bSide_; }

 private:
  Snap snapshot(const TraceModel& m, const CallView& c, const std::vector<long>* toA) const;
  void texts(const TraceModel& m, const CallView& c, const std::vector<long>* toA, std::string& text,
             std::string& rel) const;
  void compare(size_t item, const Snap& x, const Snap& y);
  const std::vector<long>* toA(uint32_t net) const {
    auto it = c_.toA.find(net);
    return it == c_.toA.end() ? &none_ : &it->second;
  }

  const Comparison& c_;
  std::vector<Rendered> out_;
  std::vector<Rendered> bSide_;
  const std::vector<long> none_;
};

Snap Renderer::snapshot(const TraceModel& m, const CallView& c, const std::vector<long>* map) const {
  const api::ApiDesc* d = api::find(c.apiId());
  Snap s;
  for (size_t k = 0; k < c.argCount(); ++k) {
    if (foreignArg(d, k)) continue;
    const ValueView v = c.arg(k);
    ArgSnap a{argName(*m.reader, c.apiId(), k), "", 0, {}, false};
    a.objects = v.kind() == ValueKind::Handle || v.kind() == ValueKind::HandleArray;
    if (v.kind() == ValueKind::Handle) a.objs = {v.asU64()};
    if (v.kind() == ValueKind::HandleArray) a.objs.assign(v.handles().begin(), v.handles().end());
    if (!a.objects) a.content = contentHash(v);
    a.shown = std::string(kindName(v.kind())) + " " +
              (a.objects      ? renderRefs(valueText(m, v), map)
               : isWeights(v) ? valueText(m, v)
                              : v.toString());
    s.args.push_back(std::move(a));
  }
  s.receiver = renderRefs(objText(m, c.receiver()), map);
  const auto rv = c.ret();
  s.result = !rv ? "none" : rv->kind() == ValueKind::Handle ? renderRefs(objText(m, rv->asU64()), map) : rv->toString();
  return s;
}

void Renderer::texts(const TraceModel& m, const CallView& c, const std::vector<long>* map, std::string& text,
                     std::string& rel) const {
  const api::ApiDesc* d = api::find(c.apiId());
  text = renderRefs(fullText(m, c, d), map);
  auto it = m.objs.find(c.receiver());
  const bool onLayer =
      it != m.objs.end() && it->second.layer >= 0 && it->second.text == layerRef(size_t(it->second.layer));
  rel = onLayer ? renderRefs(callText(m, c, d), map) : text;
}

void Renderer::compare(size_t item, const Snap& x, const Snap& y) {
  const Item& it = c_.items[item];
  const CallRec &rx = c_.A.calls[it.a], &ry = c_.B.calls[it.b];
  auto& out = out_[item].diffs;
  auto add = [&](std::string arg, std::string a, std::string b) {
    out.push_back({Difference::Kind::Changed, rx.seq, ry.seq, apiName(*c_.A.reader, rx.api), std::move(arg),
                   std::move(a), std::move(b)});
  };
  if (it.what & kDiffReceiver) add("receiver", x.receiver, y.receiver);
  if (x.args.size() != y.args.size()) {
    add("", std::to_string(x.args.size()) + " arguments", std::to_string(y.args.size()));
  } else {
    for (size_t k = 0; k < x.args.size(); ++k) {
      const ArgSnap &p = x.args[k], &q = y.args[k];
      bool same = p.objects == q.objects && p.content == q.content && p.objs.size() == q.objs.size();
      for (size_t i = 0; same && i < p.objs.size(); ++i) same = c_.mapToA(q.objs[i]) == p.objs[i];
      if (!same) add(p.name, p.shown, q.shown);
    }
  }
  if (it.what & kDiffResult) add("result", x.result, y.result);
  if (it.what & kDiffAliasing) add("weights", "weights pointer identity", "another (aliasing changed)");
  if (out.empty()) add("", "this call", "another");  // only a hash could tell them apart
}

void Renderer::run() {
  std::unordered_map<uint32_t, size_t> needA, needB;
  for (size_t k = 0; k < out_.size(); ++k) {
    const Item& it = c_.items[k];
    if (it.kind != Difference::Kind::Inserted) needA[it.a] = k;
    if (it.kind != Difference::Kind::Deleted) needB[it.b] = k;
  }
  std::unordered_map<size_t, Snap> snaps;  // A's side of the changed calls
  forEachCompared(*c_.A.reader, c_.A.allCalls, [&](uint32_t i, const CallView& c) {
    auto it = needA.find(i);
    if (it == needA.end()) return;
    texts(c_.A, c, nullptr, out_[it->second].text, out_[it->second].rel);
    if (c_.items[it->second].kind == Difference::Kind::Changed) snaps[it->second] = snapshot(c_.A, c, nullptr);
  });
  bSide_.resize(out_.size());
  forEachCompared(*c_.B.reader, c_.B.allCalls, [&](uint32_t j, const CallView& c) {
    auto it = needB.find(j);
    if (it == needB.end()) return;
    const std::vector<long>* map = toA(c_.B.calls[j].net);
    texts(c_.B, c, map, bSide_[it->second].text, bSide_[it->second].rel);
    if (c_.items[it->second].kind != Difference::Kind::Changed) return;
    compare(it->second, snaps[it->second], snapshot(c_.B, c, map));
    snaps.erase(it->second);
  });
  for (size_t k = 0; k < out_.size(); ++k) {
    const Item& it = c_.items[k];
    if (it.kind == Difference::Kind::Deleted)
      out_[k].diffs.push_back(
          {it.kind, c_.A.calls[it.a].seq, 0, apiName(*c_.A.reader, c_.A.calls[it.a].api), "", out_[k].text, ""});
    if (it.kind == Difference::Kind::Inserted)
      out_[k].diffs.push_back(
          {it.kind, 0, c_.B.calls[it.b].seq, apiName(*c_.B.reader, c_.B.calls[it.b].api), "", "", bSide_[k].text});
  }
}

class Summarizer {
 public:
  Summarizer(const Comparison& c, const std::vector<Rendered>& a, const std::vector<Rendered>& b)
      : c_(c), a_(a), b_(b) {}
  std::vector<NetworkDiff> run();

 private:
  void item(size_t k);
  void onLayer(uint32_t net, long layerA, long layerB, size_t k, bool weights);
  void other(uint32_t net, size_t k);
  NetworkDiff& net(uint32_t id);
  bool listed(size_t k) const { return k < a_.size(); }

  const Comparison& c_;
  const std::vector<Rendered>& a_;
  const std::vector<Rendered>& b_;
  std::map<uint32_t, NetworkDiff> nets_;
  std::map<uint32_t, std::map<long, LayerChange>> changes_;
  std::map<uint32_t, std::vector<bool>> removedA_;
};

NetworkDiff& Summarizer::net(uint32_t id) {
  auto [it, fresh] = nets_.try_emplace(id);
  if (fresh) {
    it->second.network = networkLabel(id, "-");
    auto la = c_.A.layers.find(id), lb = c_.B.layers.find(id);
    it->second.layersA = la == c_.A.layers.end() ? 0 : la->second.size();
    it->second.layersB = lb == c_.B.layers.end() ? 0 : lb->second.size();
  }
  return it->second;
}

void Summarizer::onLayer(uint32_t id, long layerA, long layerB, size_t k, bool weights) {
  auto [it, fresh] = changes_[id].try_emplace(layerA);
  LayerChange& ch = it->second;
  if (fresh) {
    const LayerInfo& l = c_.A.layers.at(id)[size_t(layerA)];
    ch.layerA = size_t(layerA), ch.type = l.type, ch.name = l.name;
    const long partner = c_.toB.at(id)[size_t(layerA)];
    ch.layerB = size_t(partner >= 0 ? partner : layerB >= 0 ? layerB : layerA);
  }
  ch.weights |= weights;
  const Item& item = c_.items[k];
  if (!listed(k)) return void(++net(id).unlisted);
  if (item.kind != Difference::Kind::Inserted) ch.removed.push_back(a_[k].rel);
  if (item.kind != Difference::Kind::Deleted) ch.added.push_back(b_[k].rel);
}

void Summarizer::other(uint32_t id, size_t k) {
  NetworkDiff& n = net(id);
  const Item& item = c_.items[k];
  if (!listed(k)) return void(++n.unlisted);
  if (item.kind != Difference::Kind::Inserted) n.callsRemoved.push_back(a_[k].text);
  if (item.kind != Difference::Kind::Deleted) n.callsAdded.push_back(b_[k].text);
}

void Summarizer::item(size_t k) {
  const Item& it = c_.items[k];
  const CallRec* x = it.kind != Difference::Kind::Inserted ? &c_.A.calls[it.a] : nullptr;
  const CallRec* y = it.kind != Difference::Kind::Deleted ? &c_.B.calls[it.b] : nullptr;
  if (it.kind == Difference::Kind::Changed)
    return x->layer >= 0 ? onLayer(x->net, x->layer, y->layer, k, x->content != y->content) : other(x->net, k);
  const CallRec& r = x ? *x : *y;
  if (r.createsLayer) {  // a layer only one side has
    const LayerInfo& l = (x ? c_.A : c_.B).layers.at(r.net)[size_t(r.layer)];
    if (x)
      net(r.net).removedLayers.push_back("L" + std::to_string(r.layer) + " " + l.type);
    else
      net(r.net).addedLayers.push_back("B:L" + std::to_string(r.layer) + " " + l.type);
    return;
  }
  const long layerA = r.layer < 0 ? -1 : x ? r.layer : c_.toA.at(r.net)[size_t(r.layer)];
  if (r.layer >= 0 && (layerA < 0 || (x && removedA_[r.net][size_t(layerA)]))) return;  // in a layer only one side has
  if (r.getter && r.layer >= 0) return;  // reading a layer again changes nothing in it
  if (layerA >= 0) return onLayer(r.net, layerA, y ? r.layer : -1, k, r.hasWeights);
  other(r.net, k);
}

std::vector<NetworkDiff> Summarizer::run() {
  for (auto* m : {&c_.A, &c_.B})
    for (auto& [id, _] : m->byNet) net(id);
  for (auto& [id, layers] : c_.A.layers) removedA_[id].assign(layers.size(), false);
  for (const Item& it : c_.items)
    if (it.kind == Difference::Kind::Deleted && c_.A.calls[it.a].createsLayer)
      removedA_[c_.A.calls[it.a].net][size_t(c_.A.calls[it.a].layer)] = true;
  for (size_t k = 0; k < c_.items.size(); ++k) item(k);
  std::vector<NetworkDiff> out;
  for (auto& [id, n] : nets_) {
    for (auto& [_, ch] : changes_[id]) n.changed.push_back(std::move(ch));
    out.push_back(std::move(n));
  }
  return out;
}

}  // namespace

TraceDiff report(const Comparison& c) {
  TraceDiff t;
  t.calls.callsA = c.A.calls.size(), t.calls.callsB = c.B.calls.size(), t.calls.moved = c.moved,
  t.calls.reads = c.reads;
  for (const Item& it : c.items)
    ++(it.kind == Difference::Kind::Changed    ? t.calls.changed
       : it.kind == Difference::Kind::Inserted ? t.calls.inserted
                                               : t.calls.deleted);
  Renderer r(c);
  r.run();
  for (const Rendered& x : r.aSide()) t.calls.listed.insert(t.calls.listed.end(), x.diffs.begin(), x.diffs.end());
  t.networks = Summarizer(c, r.aSide(), r.bSide()).run();
  return t;
}

}  // namespace diffing

const char* Difference::kindName() const {
  return kind == Kind::Changed ? "changed" : kind == Kind::Inserted ? "inserted" : "deleted";
}

std::string Difference::line() const {
  if (kind == Kind::Inserted) return "call #" + std::to_string(seqB) + " only in B: " + api + ": " + b;
  if (kind == Kind::Deleted) return "call #" + std::to_string(seqA) + " only in A: " + api + ": " + a;
  std::string s = "call #" + std::to_string(seqA) + " / #" + std::to_string(seqB) + " " + api;
  if (!argument.empty()) s += ": " + argument;
  return s + ": " + a + " vs " + b;
}

void printNetworkDiff(const NetworkDiff& n, int max) {
  std::printf("network %s: %zu layers vs %zu: %zu added, %zu removed, %zu changed%s\n", n.network.c_str(), n.layersA,
              n.layersB, n.addedLayers.size(), n.removedLayers.size(), n.changed.size(),
              n.callsRemoved.size() + n.callsAdded.size() ? ", other calls differ" : "");
  auto list = [&](const char* mark, const std::vector<std::string>& v) {
    for (size_t i = 0; i < v.size() && int(i) < max; ++i)
      std::printf("    %s %s\n", mark, v[i].c_str());  // callText escaped it
    if (int(v.size()) > max) std::printf("    %s ... %zu more\n", mark, v.size() - max);
  };
  list("+ layer", n.addedLayers);
  list("- layer", n.removedLayers);
  for (size_t i = 0; i < n.changed.size() && int(i) < max; ++i) {
    auto& c = n.changed[i];
    std::printf("  ~ L%zu %s%s%s%s\n", c.layerA, terminalText(c.type).c_str(),
                c.name.empty() ? "" : (" " + quotedText(c.name)).c_str(),
                c.layerA == c.layerB ? "" : (" (B:L" + std::to_string(c.layerB) + ")").c_str(),
                c.weights ? ": weights changed" : "");
    list("-", c.removed);
    list("+", c.added);
  }
  list("-", n.callsRemoved);
  list("+", n.callsAdded);
  if (n.unlisted) std::printf("    ... %zu more differing calls not listed\n", n.unlisted);
}

std::string networkDiffJson(const NetworkDiff& n) {
  auto arr = [](const std::vector<std::string>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + jsonString(v[i]);
    return s + "]";
  };
  std::string s = "{\"network\":" + jsonString(n.network) + ",\"layers\":[" + std::to_string(n.layersA) + "," +
                  std::to_string(n.layersB) + "],\"added\":" + arr(n.addedLayers) +
                  ",\"removed\":" + arr(n.removedLayers) + ",\"changed\":[";
  for (size_t i = 0; i < n.changed.size(); ++i) {
    auto& c = n.changed[i];
    s += std::string(i ? "," : "") + "{\"layer\":[" + std::to_string(c.layerA) + "," + std::to_string(c.layerB) +
         "],\"type\":" + jsonString(c.type) + ",\"name\":" + jsonString(c.name) +
         ",\"weights_changed\":" + (c.weights ? "true" : "false") + ",\"removed\":" + arr(c.removed) +
         ",\"added\":" + arr(c.added) + "}";
  }
  return s + "],\"calls_removed\":" + arr(n.callsRemoved) + ",\"calls_added\":" + arr(n.callsAdded) +
         ",\"unlisted\":" + std::to_string(n.unlisted) + "}";
}

}  // namespace trtrace::cli
