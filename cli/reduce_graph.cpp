// The network graph of a trace as trtrace reduce edits it (reduce_graph.h).
#include "reduce_graph.h"

#include <algorithm>
#include <unordered_set>

#include "trtrace/api_table.h"

namespace trtrace::cli {

namespace {

// A tensor handle (or an array of them): what a layer consumes or produces.
bool isTensor(const api::ParamDesc& p) {
  return (p.kind == api::Kind::Handle || p.kind == api::Kind::Handles) && p.iface == api::Iface::Tensor;
}

}  // namespace

ReduceGraph::ReduceGraph(const Reader& r) {
  std::unordered_set<uint64_t> seen;  // handles met so far (a tensor's first appearance names its producer)
  r.forEachCall([&](const CallView& c) {
    const size_t index = calls_.size();
    const api::ApiDesc* d = api::find(c.apiId());
    Call k;
    k.receiver = c.receiver();
    for (size_t i = 0; i < c.argCount(); ++i) {
      const ValueView v = c.arg(i);
      auto& to = d && i < d->nargs && isTensor(d->params[i]) ? k.tensors : k.others;
      if (v.kind() == ValueKind::Handle && v.asU64()) to.push_back(v.asU64());
      if (v.kind() == ValueKind::HandleArray)
        for (uint64_t h : v.handles())
          if (h) to.push_back(h);
    }
    if (auto ret = c.ret(); ret && ret->kind() == ValueKind::Handle) k.result = ret->asU64();
    const auto on = layerOf_.find(k.receiver);
    if (d && d->has(api::flag::kMakesLayer) && k.result && !layerOf_.count(k.result)) {
      k.layer = int64_t(layers_.size());
      layerOf_[k.result] = layers_.size();
      layers_.push_back({index, k.result, k.tensors, {}, {index}, false});
    } else if (on != layerOf_.end()) {
      Layer& l = layers_[on->second];
      l.calls.push_back(index);
      l.inputs.insert(l.inputs.end(), k.tensors.begin(), k.tensors.end());  // setInput
      if (d && d->result.kind == api::Kind::Handle && isTensor(d->result) && k.result && !seen.count(k.result)) {
        l.outputs.push_back(k.result);
      }
    }
    seen.insert(k.tensors.begin(), k.tensors.end());
    seen.insert(k.others.begin(), k.others.end());
    if (k.result) seen.insert(k.result);
    calls_.push_back(std::move(k));
    return true;
  });
  // Layers whose outputs the capture used: only those can become dead by a removal (a layer dead
  // at capture stays, in case the library's checks of it are the failure).
  const Plan p = plan(std::vector<bool>(layers_.size(), false));
  std::unordered_set<uint64_t> used;
  for (size_t i = 0; i < calls_.size(); ++i)
    if (p.keepCall[i]) used.insert(calls_[i].tensors.begin(), calls_[i].tensors.end());
  for (Layer& l : layers_)
    l.usedAtCapture = std::any_of(l.outputs.begin(), l.outputs.end(), [&](uint64_t t) { return used.count(t) > 0; });
}

size_t ReduceGraph::Plan::keptLayers() const { return size_t(std::count(removed.begin(), removed.end(), false)); }
size_t ReduceGraph::Plan::keptCalls() const { return size_t(std::count(keepCall.begin(), keepCall.end(), true)); }

bool ReduceGraph::keep(const Call& c, const Plan& p, const std::unordered_set<uint64_t>& gone,
                       const std::unordered_set<uint64_t>& dead) const {
  if (c.layer >= 0 && p.removed[size_t(c.layer)]) return false;
  if (gone.count(c.receiver) || (c.result && gone.count(c.result))) return false;
  for (uint64_t t : c.tensors)
    if (dead.count(t)) return false;
  for (uint64_t h : c.others)
    if (gone.count(h)) return false;
  return true;
}

ReduceGraph::Plan ReduceGraph::plan(std::vector<bool> removed) const {
  Plan p;
  p.removed = std::move(removed);
  for (bool changed = true; changed;) {
    changed = false;
    // Rewire: in creation order, so a replacement is itself already resolved.
    p.subst.clear();
    std::unordered_set<uint64_t> dead, gone;
    auto resolve = [&](uint64_t t) {
      auto it = p.subst.find(t);
      return it == p.subst.end() ? t : it->second;
    };
    for (size_t l = 0; l < layers_.size(); ++l) {
      if (!p.removed[l]) continue;
      uint64_t rep = 0;
      for (uint64_t in : layers_[l].inputs)
        if (!dead.count(in)) {
          rep = resolve(in);
          break;
        }
      for (uint64_t out : layers_[l].outputs) rep ? void(p.subst[out] = rep) : void(dead.insert(out));
      gone.insert(layers_[l].handle);
      gone.insert(layers_[l].outputs.begin(), layers_[l].outputs.end());
    }
    // Closure: a kept layer that consumes a dead tensor or names a removed object goes too.
    for (size_t l = 0; l < layers_.size(); ++l) {
      if (p.removed[l]) continue;
      for (size_t ci : layers_[l].calls) {
        const Call& c = calls_[ci];
        if (std::any_of(c.tensors.begin(), c.tensors.end(), [&](uint64_t t) { return dead.count(t) > 0; }) ||
            std::any_of(c.others.begin(), c.others.end(), [&](uint64_t h) { return gone.count(h) > 0; })) {
          p.removed[l] = changed = true;
          break;
        }
      }
    }
    if (changed) continue;
    p.keepCall.assign(calls_.size(), false);
    for (size_t i = 0; i < calls_.size(); ++i) p.keepCall[i] = keep(calls_[i], p, gone, dead);
    changed = sweep(p);
  }
  return p;
}

// Removes the layers that were used at capture and whose outputs no kept call uses any more, in
// reverse creation order (so a dead chain goes in one pass). Returns whether it removed any.
bool ReduceGraph::sweep(Plan& p) const {
  auto resolve = [&](uint64_t t) {
    auto it = p.subst.find(t);
    return it == p.subst.end() ? t : it->second;
  };
  std::unordered_map<uint64_t, size_t> uses;
  for (size_t i = 0; i < calls_.size(); ++i)
    if (p.keepCall[i])
      for (uint64_t t : calls_[i].tensors) ++uses[resolve(t)];
  bool any = false;
  for (size_t l = layers_.size(); l-- > 0;) {
    const Layer& L = layers_[l];
    if (p.removed[l] || !L.usedAtCapture ||
        std::any_of(L.outputs.begin(), L.outputs.end(), [&](uint64_t t) { return uses[t] > 0; }))
      continue;
    p.removed[l] = any = true;
    for (size_t ci : L.calls) {
      if (!p.keepCall[ci]) continue;
      p.keepCall[ci] = false;
      for (uint64_t t : calls_[ci].tensors) --uses[resolve(t)];
    }
  }
  return any;
}

}  // namespace trtrace::cli
