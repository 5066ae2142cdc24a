// Claiming a capture's output names (docs/design.md, "Output names"; trtrace/capture_names.h).
// A capture only ever writes a file it creates: an existing trace (finished, cut short by a crash,
// or being written by a live process) is never opened, emptied or replaced, so no build it holds is
// lost and a reader mapping it keeps its bytes. The process takes the first free candidate name.
#pragma once
#include <string>

namespace trtrace::capture {

struct Claimed {
  int fd = -1;              // the new, empty trace (the caller closes it)
  std::string trace, json;  // json: "" when no JSON+BIN export was asked for
};

inline constexpr unsigned kMaxOutputCandidates = 1000;

// Creates the first candidate trace of process `pid` (from candidate `first`: 1 for a forked child)
// whose JSON and BIN, when exported (`json` not empty), are free too. O_EXCL makes taking a name
// atomic among processes; O_NOFOLLOW with it refuses a link at the name. Throws Error (Io) when a
// name cannot be created for another reason, or when all kMaxOutputCandidates names are taken.
Claimed claimOutputs(const std::string& trace, const std::string& json, unsigned first, long pid);

}  // namespace trtrace::capture
