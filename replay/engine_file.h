// The engine file a streamed build writes into (replayer.h, EngineStream): the player's output.
#pragma once
#include <memory>
#include <string>

#include "replayer.h"

namespace trtrace::replay {

// Writes the engine under an unguessable temporary name beside `path` as the library hands it
// over (nothing is held in memory) and renames it into place only when the build succeeded:
// the file appears complete or not at all (files::PendingOutputs).
std::unique_ptr<EngineStream> engineFile(const std::string& path);

}  // namespace trtrace::replay
