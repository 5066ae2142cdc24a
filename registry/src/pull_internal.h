// pull's steps, shared with the reference cache (cache.cpp).
#pragma once
#include <string>

#include "http.h"
#include "layout.h"

namespace trtrace::registry {

struct Resolved {
  std::string manifestDigest;
  Manifest manifest;
  Artifact artifact;
};

// The manifest the session's reference names and its config, both checked.
Resolved resolve(Session& s);
// Every layer into `out` (complete or not at all), checked against the pushed file's digest.
void fetchInto(Session& s, const Resolved& r, const std::string& out);

}  // namespace trtrace::registry
