// The structural half of `trtrace diff` (diff_model.h). Each trace is read into networks: layers in
// creation order, each with the calls made on it and on its tensors, rendered as text in which
// objects are named by how they were obtained (the network "network", layer k "L<k>", a tensor
// "L3.getOutput(0)", the builder "createInferBuilder(...)") and weights by type, count and content
// hash -- so two captures compare by structure whatever their handle numbers. Layers are matched by
// type (longest common subsequence after the common prefix and suffix); B's layer references are
// renamed to their A partners before the calls are compared.
#include "diff_model.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "trace_edit.h"
#include "trtrace/api_table.h"

namespace trtrace::cli {
namespace {

struct LayerRec {
  uint32_t api = 0;
  std::string type, name;
  std::vector<std::string> calls;  // with layer references as "\x01<k>\x02"
};
struct NetRec {
  std::vector<LayerRec> layers;
  std::vector<std::string> calls;
};
struct Obj {
  int layer = -1;  // the layer it is or belongs to, -1: none
  std::string name;
};

std::string layerRef(size_t k) { return "\x01" + std::to_string(k) + "\x02"; }

std::string weightsText(const ValueView& v) {
  std::string s = "weights[type " + std::to_string(v.dtype()) + " x" + std::to_string(v.count()) + " ";
  if (v.kind() == ValueKind::WeightsBlob) s += "#" + toHex(v.blob().hash);
  else if (v.kind() == ValueKind::WeightsInline) s += "#" + toHex(hash128(v.bytes().data(), v.bytes().size()));
  else s += "random seed " + std::to_string(v.seed());
  return s + "]";
}

class ModelBuilder {
 public:
  ModelBuilder(const Reader& r, bool allCalls) : r_(r), all_(allCalls) {}
  std::map<uint32_t, NetRec> build() {
    r_.forEachCall([&](const CallView& c) {
      add(c);
      return true;
    });
    return std::move(nets_);
  }

 private:
  std::string objName(uint64_t h) const {
    if (!h) return "null";
    auto it = objs_.find(h);
    return it == objs_.end() ? "object?" : it->second.name;
  }
  std::string callText(const CallView& c, const api::ApiDesc* d) const {
    std::string s = std::string(d ? d->method : "api#" + std::to_string(c.apiId())) + "(";
    for (size_t k = 0; k < c.argCount(); ++k) {
      if (d && k < d->nargs && d->params[k].kind == api::Kind::Foreign) continue;
      const ValueView v = c.arg(k);
      if (k) s += ", ";
      if (v.kind() == ValueKind::Handle) s += objName(v.asU64());
      else if (v.kind() == ValueKind::HandleArray) {
        s += "[";
        for (uint64_t h : v.handles()) s += objName(h) + " ";
        s += "]";
      } else if (isWeights(v)) s += weightsText(v);
      else s += terminalText(v.toString());  // escaped: a raw \x01 in a name would read as a layer reference
    }
    return s + ")";
  }
  void add(const CallView& c) {
    const api::ApiDesc* d = api::find(c.apiId());
    if (!all_ && d && d->has(api::flag::kBuildIrrelevant)) return;
    NetRec& net = nets_[c.networkId()];
    const Obj recv = c.receiver() ? objs_[c.receiver()] : Obj{-1, ""};
    const std::string text = callText(c, d);
    const std::string full = (recv.name.empty() ? "" : recv.name + ".") + text;
    auto rv = c.ret();
    const bool newHandle = rv && rv->kind() == ValueKind::Handle && rv->asU64() && !objs_.count(rv->asU64());
    if (newHandle && d && d->result.kind == api::Kind::Handle && d->result.layer) {
      const size_t k = net.layers.size();
      net.layers.push_back({c.apiId(), std::string(api::ifaceName(d->result.iface)), "", {full}});
      objs_[rv->asU64()] = {int(k), layerRef(k)};
      return;
    }
    if (newHandle) objs_[rv->asU64()] = {recv.layer, d && d->has(api::flag::kStartsNetwork) ? "network" : full};
    if (recv.layer < 0) return net.calls.push_back(full);
    LayerRec& l = net.layers[recv.layer];
    if (d && d->id == api::kLayer_setName && c.argCount() && c.arg(0).kind() == ValueKind::String && recv.name == layerRef(recv.layer))
      l.name = std::string(c.arg(0).asString());
    l.calls.push_back(recv.name == layerRef(recv.layer) ? text : full);
  }

  const Reader& r_;
  bool all_;
  std::unordered_map<uint64_t, Obj> objs_;
  std::map<uint32_t, NetRec> nets_;
};

// Pairs of matched layer indices (A, B), by type: common prefix and suffix, LCS in between
// (positional when the middle is too large for a table).
std::vector<std::pair<size_t, size_t>> matchLayers(const std::vector<LayerRec>& a, const std::vector<LayerRec>& b) {
  size_t pre = 0, suf = 0;
  while (pre < a.size() && pre < b.size() && a[pre].api == b[pre].api) ++pre;
  while (suf < a.size() - pre && suf < b.size() - pre && a[a.size() - 1 - suf].api == b[b.size() - 1 - suf].api) ++suf;
  std::vector<std::pair<size_t, size_t>> m;
  for (size_t i = 0; i < pre; ++i) m.push_back({i, i});
  const size_t n = a.size() - pre - suf, k = b.size() - pre - suf;
  if (n * k <= (size_t(1) << 24)) {
    std::vector<std::vector<uint32_t>> t(n + 1, std::vector<uint32_t>(k + 1, 0));
    for (size_t i = n; i-- > 0;)
      for (size_t j = k; j-- > 0;)
        t[i][j] = a[pre + i].api == b[pre + j].api ? t[i + 1][j + 1] + 1 : std::max(t[i + 1][j], t[i][j + 1]);
    for (size_t i = 0, j = 0; i < n && j < k;) {
      if (a[pre + i].api == b[pre + j].api) m.push_back({pre + i++, pre + j++});
      else if (t[i + 1][j] >= t[i][j + 1]) ++i;
      else ++j;
    }
  } else {
    for (size_t i = 0; i < std::min(n, k); ++i)
      if (a[pre + i].api == b[pre + i].api) m.push_back({pre + i, pre + i});
  }
  for (size_t i = 0; i < suf; ++i) m.push_back({a.size() - suf + i, b.size() - suf + i});
  return m;
}

// Replaces each layer reference by "L<k>": A's by their own index, B's by their A partner's
// ("B:L<k>" for a layer only B has).
std::string render(std::string s, const std::vector<long>* toA) {
  for (size_t p; (p = s.find('\x01')) != std::string::npos;) {
    const size_t e = s.find('\x02', p);
    const size_t k = std::stoul(s.substr(p + 1, e - p - 1));
    const long mapped = toA ? (*toA)[k] : long(k);
    s.replace(p, e - p + 1, mapped >= 0 ? "L" + std::to_string(mapped) : "B:L" + std::to_string(k));
  }
  return s;
}

// removed = A's calls B lacks, added = B's calls A lacks (as multisets, in their order).
void multisetDiff(const std::vector<std::string>& a, const std::vector<std::string>& b, const std::vector<long>* toA,
                  std::vector<std::string>& removed, std::vector<std::string>& added) {
  std::map<std::string, long> count;
  std::vector<std::string> ra, rb;
  for (auto& s : a) ++count[ra.emplace_back(render(s, nullptr))];
  for (auto& s : b) --count[rb.emplace_back(render(s, toA))];
  for (auto& s : ra) if (count[s] > 0) { removed.push_back(s); --count[s]; }
  for (auto& s : rb) if (count[s] < 0) { added.push_back(s); ++count[s]; }
}

NetworkDiff diffNetwork(const std::string& label, const NetRec& a, const NetRec& b) {
  NetworkDiff n{label, a.layers.size(), b.layers.size(), {}, {}, {}, {}, {}};
  const auto m = matchLayers(a.layers, b.layers);
  std::vector<long> toA(b.layers.size(), -1);
  std::vector<bool> matchedA(a.layers.size(), false);
  for (auto [i, j] : m) toA[j] = long(i), matchedA[i] = true;
  for (size_t i = 0; i < a.layers.size(); ++i)
    if (!matchedA[i]) n.removedLayers.push_back("L" + std::to_string(i) + " " + a.layers[i].type);
  for (size_t j = 0; j < b.layers.size(); ++j)
    if (toA[j] < 0) n.addedLayers.push_back("B:L" + std::to_string(j) + " " + b.layers[j].type);
  for (auto [i, j] : m) {
    LayerChange ch{i, j, a.layers[i].type, a.layers[i].name, {}, {}, false};
    multisetDiff(a.layers[i].calls, b.layers[j].calls, &toA, ch.removed, ch.added);
    for (auto* v : {&ch.removed, &ch.added})
      for (auto& s : *v) ch.weights |= s.find("weights[") != std::string::npos;
    if (!ch.removed.empty() || !ch.added.empty()) n.changed.push_back(std::move(ch));
  }
  multisetDiff(a.calls, b.calls, &toA, n.callsRemoved, n.callsAdded);
  return n;
}

}  // namespace

std::vector<NetworkDiff> diffStructure(const Reader& a, const Reader& b, bool allCalls) {
  auto ma = ModelBuilder(a, allCalls).build(), mb = ModelBuilder(b, allCalls).build();
  std::vector<uint32_t> ids;
  for (auto& [id, _] : ma) ids.push_back(id);
  for (auto& [id, _] : mb) if (!ma.count(id)) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  std::vector<NetworkDiff> out;
  for (uint32_t id : ids) out.push_back(diffNetwork(id ? std::to_string(id - 1) : "-", ma[id], mb[id]));
  return out;
}

void printNetworkDiff(const NetworkDiff& n, int max) {
  std::printf("network %s: %zu layers vs %zu: %zu added, %zu removed, %zu changed%s\n", n.network.c_str(), n.layersA,
              n.layersB, n.addedLayers.size(), n.removedLayers.size(), n.changed.size(),
              n.callsRemoved.size() + n.callsAdded.size() ? ", other calls differ" : "");
  auto list = [&](const char* mark, const std::vector<std::string>& v) {
    for (size_t i = 0; i < v.size() && int(i) < max; ++i) std::printf("    %s %s\n", mark, v[i].c_str());  // callText escaped it
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
}

std::string networkDiffJson(const NetworkDiff& n) {
  auto arr = [](const std::vector<std::string>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + jsonString(v[i]);
    return s + "]";
  };
  std::string s = "{\"network\":" + jsonString(n.network) + ",\"layers\":[" + std::to_string(n.layersA) + "," +
                  std::to_string(n.layersB) + "],\"added\":" + arr(n.addedLayers) + ",\"removed\":" + arr(n.removedLayers) +
                  ",\"changed\":[";
  for (size_t i = 0; i < n.changed.size(); ++i) {
    auto& c = n.changed[i];
    s += std::string(i ? "," : "") + "{\"layer\":[" + std::to_string(c.layerA) + "," + std::to_string(c.layerB) +
         "],\"type\":" + jsonString(c.type) + ",\"name\":" + jsonString(c.name) + ",\"weights_changed\":" +
         (c.weights ? "true" : "false") + ",\"removed\":" + arr(c.removed) + ",\"added\":" + arr(c.added) + "}";
  }
  return s + "],\"calls_removed\":" + arr(n.callsRemoved) + ",\"calls_added\":" + arr(n.callsAdded) + "}";
}

}  // namespace trtrace::cli
