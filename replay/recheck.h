// A second opinion on an engine that differs from the capture's (`tensorrt_player --check`).
//
// TensorRT-RTX builds some networks (expanded LayerNorm patterns, some GRU models, small BERTs)
// into different bytes depending on the process's heap layout: the same app gives other engines
// when only argv[0] or an early allocation changes (docs/design.md, "Library nondeterminism").
// Before calling an engine different, the player rebuilds that network in child processes whose
// heap starts shifted, and reports what the rebuilds show.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trtrace/hash.h"

namespace trtrace::replay {

struct Recheck {
  enum class Verdict {
    Matched,           // a rebuild at another heap layout gave the capture's engine (now the output)
    Nondeterministic,  // rebuilds gave engines different from each other: the library's doing
    Differs,           // every rebuild gave the same engine, not the capture's: a real difference
  } verdict = Verdict::Differs;
  int builds = 1;    // builds compared, the first replay included
  int distinct = 1;  // distinct engines among them
  int failed = 0;    // rebuilds that wrote no engine (crashed, refused, out of space)
};

// How hard `--check` looks before calling an engine different (`--check[=quick|thorough]`): each
// rebuild is one more build of that network, in a child process.
enum class CheckDepth {
  Quick,     // the default: one confirming rebuild at another heap layout
  Thorough,  // up to kThoroughRebuilds rebuilds at other heap layouts, until one gives the capture's engine
};
inline constexpr int kThoroughRebuilds = 12;
inline int rebuildsFor(CheckDepth d) { return d == CheckDepth::Thorough ? kThoroughRebuilds : 1; }

// The player's own command line for a child rebuild: the capture and the options that change what
// is built (library, seed, skip/ignore flags); network, output and heap shift are added per child.
struct RecheckArgs {
  std::string capture, lib;
  std::vector<std::string> options;
};

// Rebuilds 0-based `network` up to `attempts` times at other heap layouts (recheck.cpp), comparing each
// engine with `captured`. On Matched, the matching engine replaces `output` (when not empty).
Recheck recheckNetwork(const RecheckArgs& args, uint32_t network, const Hash128& first, uint64_t firstSize,
                       const Hash128& captured, uint64_t capturedSize, const std::string& output, int attempts);

// Called first thing in main when --heap-shift is given: `shift` small allocations kept for the
// process's life move every later allocation of the library.
void shiftHeap(int shift);

}  // namespace trtrace::replay
