// The player's choice of the real library for a trace: found in the documented order
// (libinfo/library.h), its version compared with the trace's, and the calls of the trace that the
// chosen library has no method for (a method newer than it) counted before anything is replayed.
#pragma once
#include <string>

#include "library.h"
#include "trtrace/reader.h"

namespace trtrace::replay {

struct ChosenLibrary {
  void* handle = nullptr;
  lib::LibraryInfo info;  // version, build id, file
  std::string how;        // which rule chose it ("--lib", "TRT_SHIM_NVINFER_LIB_NAME", ...)
};

// Loads the library for `reader`'s trace. Throws Error (usage) when none loads, or when its
// version is not the trace's and `ignoreVersion` is off: one line naming both versions.
ChosenLibrary chooseLibrary(const Reader& reader, const std::string& libPath, bool ignoreVersion);

// Throws Divergence when calls of the trace are newer than the chosen library: one stderr line
// per API (name, count), the exception naming the first such call.
void checkCallsExist(const Reader& reader, const ChosenLibrary& lib);

// "library: ... (chosen by ...)": the line the player prints and its --json fields.
std::string describe(const ChosenLibrary& lib);
std::string describeJson(const ChosenLibrary& lib);

}  // namespace trtrace::replay
