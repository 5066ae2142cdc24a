// What a trace holds, counted once for `trtrace info` and for the line `trtrace capture` prints
// at the end: calls, per-API and per-network counts, builds (by the spec's kBuild flag, recorded
// outcome or not), weight volumes (logical, unique, stored: a JSON+BIN capture's weights are the
// reader's external blobs, stored raw in the BIN). Reads the call log and the blob index only,
// never weight bytes.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "trtrace/reader.h"

namespace trtrace::cli {

struct Summary {
  uint64_t calls = 0, builds = 0, buildsOk = 0;
  std::map<uint32_t, uint64_t> perApi;                         // API id -> calls
  std::map<uint32_t, uint64_t> perNet;                         // trace network id (from 1) -> calls
  uint64_t refs = 0, logical = 0, inlineBytes = 0;             // weights as the calls reference them
  uint64_t blobs = 0, unique = 0, stored = 0, compressed = 0;  // weights as the trace stores them
  uint64_t logStored = 0, logCompressed = 0;                   // call-log segment payloads
  // Builds (api::flag::kBuild) whose outcome the trace does not hold (converted NVIDIA captures).
  uint64_t buildsUnrecorded = 0;
  double dedup() const { return unique ? double(logical) / double(unique) : 1.0; }
  double ratio() const { return stored ? double(unique) / double(stored) : 1.0; }
};

Summary summarise(const Reader& r);

// "<n> calls, <n> networks, <n> builds (<n> ok[, <n> not recorded]), weights <logical> (<unique>
// unique, <stored> stored)".
std::string summaryLine(const Summary& s);

}  // namespace trtrace::cli
