// The exit codes of both tools, in one place: within each enum below, each number means one thing.
// docs/errors.md's "Exit codes" table says the same per tool and subcommand; tests/test_docs_code.py
// holds the two together (a code here that the table lacks, or a table cell no code here names,
// fails it). Header-only: trtrace (cli/commands.h) and tensorrt_player (replay/player.cpp) include it.
#pragma once

namespace trtrace::exits {

// Every tool, every subcommand: a command line that does not parse (sysexits' EX_USAGE).
inline constexpr int kUsage = 64;

// tensorrt_player.
namespace player {
enum Exit : int {
  kOk = 0,
  kBadInput = 1,           // unreadable/corrupt capture, bad options, library not loadable
  kDivergence = 2,         // the replay behaved differently from the capture
  kFailureReproduced = 3,  // the capture's build failure happened again (as recorded, or not recorded)
  kEngineDiffers = 4,      // --check: an engine differs from the one recorded at capture
  kNondeterministic = 5,   // --check: rebuilds at other heap layouts gave different engines
  kNothingWritten = 6,     // -o given, but the capture (or its replayed prefix) holds no build: no engine
  kStillFinishing = 7,     // --no-wait: the capture is still being finished by its finisher
};
}  // namespace player

// The trtrace subcommands. A code past kTruncated belongs to the one subcommand its comment names
// first, except kStillFinishing (every subcommand that reads a trace). diff follows diff(1) instead (below); bench's
// codes are its Python side's (python/trtrace/bench.py, EXIT_*); capture returns the command's own code where it ran.
namespace tool {
enum Exit : int {
  kOk = 0,
  kError = 1,           // cannot read or write a file, bad input or options, nothing to do
  kCorrupt = 2,         // corrupt input
  kTruncated = 3,       // truncated input, where the subcommand needs a whole trace
  kNotFailing = 4,      // reduce: the capture does not fail, nothing to reduce
  kInexpressible = 5,   // export: a call the Python API cannot express, nothing written
  kStillFinishing = 6,  // every subcommand, --no-wait: an input trace is still being finished by its finisher
};
}  // namespace tool

// trtrace diff, as diff(1).
namespace diff {
enum Exit : int {
  kEquivalent = 0,
  kDifferent = 1,
  kCannotCompare = 2,  // an input unreadable, not a trace, or corrupt
};
}  // namespace diff

}  // namespace trtrace::exits
