// Sequence alignment for `trtrace diff` (diff_model.cpp): which elements of two key sequences
// correspond, as a longest common subsequence, in bounded memory and time.
//
// Method: the common prefix and suffix are matched first; in between, keys that occur exactly
// once on each side (patience diff) are anchors, the longest run of anchors in order on both sides
// is kept, and the stretches between anchors are aligned the same way, recursively. A stretch with
// no unique key is aligned by Myers' O(ND) greedy algorithm, whose memory grows with D squared:
// it gives up past kMaxEdits edits (or kMaxWork steps), and the stretch then falls back to pairing
// position by position (equal keys only). Working memory: the keys of one stretch at a time
// (16 bytes a key) plus at most ~4 kMaxEdits^2 bytes for Myers, whatever the lengths.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace trtrace::cli {

using Matches = std::vector<std::pair<uint32_t, uint32_t>>;  // (index in a, index in b), both increasing

inline constexpr size_t kMaxEdits = 1024;         // Myers' D bound: ~4 MiB of saved frontiers
inline constexpr uint64_t kMaxWork = 1ull << 27;  // Myers' steps before it gives up on a stretch

// Matched index pairs of a and b: every pair has a[i] == b[j], in increasing order on both sides.
Matches alignKeys(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b);

}  // namespace trtrace::cli
