// The comparison behind `trtrace diff` (cmd_diff.cpp prints it): the two traces' calls aligned
// network by network, then the differences as calls inserted, deleted and changed, and the
// per-network structural summary (layers added, removed, changed) drawn from the same alignment.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "trtrace/reader.h"

namespace trtrace::cli {

// Differences listed in full (text rendered) at most; beyond, only counted.
inline constexpr size_t kListedDifferences = 10000;

struct Difference {
  enum class Kind { Changed, Inserted, Deleted };
  Kind kind = Kind::Changed;
  uint64_t seqA = 0, seqB = 0;      // the call's seq in A / in B (0: none there)
  std::string api, argument, a, b;  // Changed: the argument (empty: the call as a whole) and both values;
                                    // Inserted / Deleted: the call's text in b / in a
  std::string line() const;
  const char* kindName() const;
};

struct CallDiffs {
  std::vector<Difference> listed;                   // in trace order, one per differing argument of a changed call
  uint64_t changed = 0, inserted = 0, deleted = 0;  // calls
  uint64_t moved = 0;               // calls B makes elsewhere in the same network, where order cannot matter
  uint64_t reads = 0;               // value getters called on one side only: not differences, but for --all-calls
  uint64_t callsA = 0, callsB = 0;  // calls compared
  uint64_t total() const { return changed + inserted + deleted; }
};

struct LayerChange {
  size_t layerA = 0, layerB = 0;            // creation order in its network, from 0
  std::string type, name;                   // e.g. "ConvolutionLayer", its setName (if any)
  std::vector<std::string> removed, added;  // calls only A / only B made on it (weights by hash)
  bool weights = false;                     // a weights argument differs (or a call with weights is only on one side)
};

struct NetworkDiff {
  std::string network;  // "0", "1", ...; "-": builder and config calls (no network)
  size_t layersA = 0, layersB = 0;
  std::vector<std::string> addedLayers, removedLayers;  // "L<k> <type>"
  std::vector<LayerChange> changed;
  std::vector<std::string> callsRemoved, callsAdded;  // calls on the network itself (or builder/config)
  size_t unlisted = 0;                                // differing calls past kListedDifferences, in no list above
  bool same() const {
    return addedLayers.empty() && removedLayers.empty() && changed.empty() && callsRemoved.empty() &&
           callsAdded.empty() && !unlisted;
  }
};

struct TraceDiff {
  CallDiffs calls;
  std::vector<NetworkDiff> networks;  // one per network either trace has (and "-"), in order
};

// Compares a and b; allCalls: also the calls that cannot change a build (api::flag::kBuildIrrelevant).
TraceDiff diffTraces(const Reader& a, const Reader& b, bool allCalls);
void printNetworkDiff(const NetworkDiff& n, int max);
std::string networkDiffJson(const NetworkDiff& n);

}  // namespace trtrace::cli
