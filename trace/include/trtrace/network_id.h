// Networks as people see them. A trace numbers a call's network from 1, in creation order, and 0
// is a call of no network (docs/format.md); the player, every tool and the Python API show and
// select networks from 0 (the player's <output> suffix). These are the one conversion between the two.
#pragma once
#include <cstdint>
#include <string>

namespace trtrace {

inline constexpr uint32_t kNoNetwork = 0;  // a trace's network id of a call of no network

// The number shown for trace network id `id` (not kNoNetwork).
constexpr uint32_t shownNetwork(uint32_t id) { return id - 1; }

// The trace network id of shown number `shown` (64-bit: a huge --network must not wrap onto an id).
constexpr uint64_t traceNetworkId(uint64_t shown) { return shown + 1; }

// The shown number of trace network id `id`, or `none` for a call of no network.
inline std::string networkLabel(uint32_t id, const char* none) {
  return id == kNoNetwork ? none : std::to_string(shownNetwork(id));
}

}  // namespace trtrace
