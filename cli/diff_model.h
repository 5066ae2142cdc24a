// The structural half of `trtrace diff` (cmd_diff.cpp): each trace read into networks of layers,
// then the two matched layer by layer.
#pragma once
#include <string>
#include <vector>

#include "trtrace/reader.h"

namespace trtrace::cli {

struct LayerChange {
  size_t layerA = 0, layerB = 0;  // creation order in its network, from 0
  std::string type, name;         // e.g. "ConvolutionLayer", its setName (if any)
  std::vector<std::string> removed, added;  // calls only A / only B made on it (weights by hash)
  bool weights = false;           // a weights argument differs
};

struct NetworkDiff {
  std::string network;  // "0", "1", ...; "-": builder and config calls (no network)
  size_t layersA = 0, layersB = 0;
  std::vector<std::string> addedLayers, removedLayers;  // "L<k> <type>"
  std::vector<LayerChange> changed;
  std::vector<std::string> callsRemoved, callsAdded;  // calls on the network itself (or builder/config)
  bool same() const {
    return addedLayers.empty() && removedLayers.empty() && changed.empty() && callsRemoved.empty() && callsAdded.empty();
  }
};

// One entry per network either trace has (and "-" for calls of no network), in order.
std::vector<NetworkDiff> diffStructure(const Reader& a, const Reader& b, bool allCalls);
void printNetworkDiff(const NetworkDiff& n, int max);
std::string networkDiffJson(const NetworkDiff& n);

}  // namespace trtrace::cli
