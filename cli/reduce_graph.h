// The network graph of a trace as trtrace reduce edits it: its layers (calls the spec marks as
// layer creators, api::flag::kMakesLayer), the tensors each one consumes (Tensor handle arguments)
// and produces (tensors first seen as the result of a call on the layer, e.g. getOutput), and the
// plan of a candidate that removes some layers while keeping the network well-formed:
// - each output tensor of a removed layer is rewired to the removed layer's first tensor input (the
//   same shape and type for the unary and elementwise layers that make up most chains; a candidate
//   the library rejects for it simply does not reproduce the failure);
// - a layer that consumes a tensor with no replacement (a removed layer had no tensor input), or
//   whose calls name a removed layer, is removed too; so is a layer none of whose outputs is used
//   any more (dead: neither consumed nor marked as an output);
// - calls on removed layers and on their output tensors are dropped, and with them their weights.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "trtrace/reader.h"

namespace trtrace::cli {

class ReduceGraph {
 public:
  explicit ReduceGraph(const Reader& r);

  size_t layerCount() const { return layers_.size(); }
  size_t callCount() const { return calls_.size(); }

  // What a candidate keeps, for a set of layers to remove (indexed by layer, creation order).
  struct Plan {
    std::vector<bool> removed;                     // the layers removed, after the closure above
    std::vector<bool> keepCall;                    // per call of the trace
    std::unordered_map<uint64_t, uint64_t> subst;  // tensor handle -> the tensor replacing it
    size_t keptLayers() const;
    size_t keptCalls() const;
  };
  Plan plan(std::vector<bool> removed) const;
  Plan whole() const { return plan(std::vector<bool>(layers_.size(), false)); }

 private:
  struct Call {
    uint64_t receiver = 0, result = 0;
    std::vector<uint64_t> tensors;  // tensor handle arguments (handles of Tensor, single or arrays)
    std::vector<uint64_t> others;   // other handle arguments
    int64_t layer = -1;             // the layer this call creates (-1: none)
  };
  struct Layer {
    size_t creator = 0;
    uint64_t handle = 0;
    std::vector<uint64_t> inputs, outputs;
    std::vector<size_t> calls;   // its creator and the calls on it
    bool usedAtCapture = false;  // a kept call of the whole trace uses one of its outputs
  };
  bool sweep(Plan& p) const;
  bool keep(const Call& c, const Plan& p, const std::unordered_set<uint64_t>& gone,
            const std::unordered_set<uint64_t>& dead) const;

  std::vector<Call> calls_;
  std::vector<Layer> layers_;
  std::unordered_map<uint64_t, size_t> layerOf_;  // layer handle -> layer index
};

}  // namespace trtrace::cli
