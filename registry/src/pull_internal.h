// pull's steps, shared with the reference cache (cache.cpp).
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "http.h"
#include "layout.h"
#include "store.h"

namespace trtrace::registry {

struct Resolved {
  std::string manifestDigest;
  Manifest manifest;
  Artifact artifact;
};

// The manifest the session's reference names and its config, both checked.
Resolved resolve(Session& s);
// Every layer straight into `out` (complete or not at all), checked against the pushed file's digest
// (pull --no-cache: nothing kept in the layer store).
void fetchInto(Session& s, const Resolved& r, const std::string& out);

// The log layer, then each distinct layer of the pieces whose digest is in `pieces`.
std::vector<Descriptor> layersOf(const Artifact& a, const std::set<std::string>& pieces);
// Those layers into the store, on the session's -j threads, with progress.
void fetchLayers(Session& s, LayerStore& store, const std::vector<Descriptor>& layers);
// The trace written into `fd` in file order from the stored layers: the log's bytes in the gaps, each
// piece whose digest is in `have` from its layer, the others left holes (the file is sized first).
// Returns the file's digest when every piece was written, else "".
std::string assemble(const Artifact& a, const LayerStore& store, const std::set<std::string>& have, int fd,
                     const std::string& out, const std::string& label);
// assemble() of every piece, checked against the pushed file's digest; a stored layer damaged on
// disk is dropped and fetched again (once); Error (Corrupt) when the file still does not match.
void assembleChecked(Session& s, const Resolved& r, LayerStore& store, int fd, const std::string& out);

// The private cache folder (cache.cpp): made 0700 when missing, refused unless it is this user's and
// no other user may enter it. Its bound in bytes: TRTRACE_OCI_CACHE_MB (default 20480).
std::string privateCacheFolder();
uint64_t cacheBound();

}  // namespace trtrace::registry
