// Traces in an OCI registry (docs/registry.md): push a trace as an OCI artifact, pull it back
// byte for byte. The layout (docs/format.md, "OCI artifact"): the trace's bytes other than weight
// data as one layer, each weight blob's data region as its own layer (so equal weights are one
// blob in the registry, whatever trace or repository holds them), and a config naming where each
// layer's bytes lie in the file. Errors are trtrace::Error, one line naming the reference.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace trtrace::registry {

// [oci://]HOST[:PORT]/REPO[:TAG|@sha256:HEX]; no tag and no digest means the tag "latest".
struct Reference {
  std::string host;    // host[:port], as in URLs and in the Docker config's `auths`
  std::string repo;    // path components: [a-z0-9]+ joined by [._-] runs, '/' between components
  std::string tag;     // empty when digest is set
  std::string digest;  // "sha256:<64 hex>" or empty
  static Reference parse(std::string_view text);  // throws Error (Usage) naming what is wrong
  std::string str() const;                        // host/repo:tag or host/repo@digest
  std::string manifestRef() const { return digest.empty() ? tag : digest; }
};

struct Options {
  bool plainHttp = false;              // http:// instead of https:// (a registry on a trusted host only)
  std::string caFile;                  // PEM bundle trusted besides the system store
  std::string configFile;              // Docker/OCI config holding `auths` ("" = $DOCKER_CONFIG/config.json
                                       // else ~/.docker/config.json)
  unsigned jobs = 4;                   // blobs transferred at once
  uint64_t chunkBytes = 64 << 20;      // push: a blob over this is sent in PATCH chunks of this size
  std::vector<std::string> mountFrom;  // push: repositories (same registry) to mount missing blobs from
  std::string label;                   // progress label ("trtrace push x.trtrace")
  bool noCache = false;                // pull: each layer straight to the output; none kept to resume from
};

struct PushResult {
  std::string manifestDigest;
  uint64_t blobs = 0, uploaded = 0, mounted = 0, present = 0;  // counts of layers + config
  uint64_t uploadedBytes = 0, totalBytes = 0;
};

// Pushes the closed trace `path` as `ref`; `annotations` go on the manifest (the trace's counts).
PushResult push(const std::string& path, const Reference& ref, const Options& o,
                const std::map<std::string, std::string>& annotations);

// Writes the trace `ref` names to `out` (complete or not at all; same bytes as the pushed file).
// Returns the manifest digest.
std::string pull(const Reference& ref, const std::string& out, const Options& o);

// A capture argument that names a registry artifact: "oci://..." (a file path never starts so).
bool isReference(std::string_view arg);

// What a reading tool needs of a trace it names by reference (pullCached).
struct Need {
  enum class Kind {
    Everything,  // every layer: the whole trace, byte for byte
    CallLog,     // the call log only: the weights' data regions are holes, never to be read
    Network,     // the call log and the weights of one network's calls (the player's --network)
  };
  Kind kind = Kind::Everything;
  int64_t network = -1;  // Network: a trace network id
};

// A trace named by reference, as a file the tools open.
struct CachedTrace {
  std::string path;
  bool partial = false;        // the weights not needed are holes (removed when `keep` goes)
  std::shared_ptr<void> keep;  // hold while the file is used
};

// The trace `ref` names, from the private cache folder (docs/registry.md, "Replay from a reference"):
// $TRTRACE_OCI_CACHE, else $XDG_CACHE_HOME/trtrace/oci, else ~/.cache/trtrace/oci, made 0700 and
// refused unless it is this user's and private. The manifest, its config and the call log come
// first; then only the layers `need` asks for, each fetched once into the layer store (whatever
// trace brought it) and resumed where a failed run stopped. Everything: the whole trace, kept in the
// folder by the pushed file's digest (a file found there is used only when its bytes still give
// that digest); else a partial file of this process, removed when `keep` goes. The folder is bounded
// by TRTRACE_OCI_CACHE_MB (default 20480), least recently used files first.
// Options from the environment: TRTRACE_REGISTRY_PLAIN_HTTP=1, TRTRACE_REGISTRY_CA_FILE,
// TRTRACE_REGISTRY_CONFIG (as push and pull's --plain-http, --ca-file, --registry-config).
CachedTrace pullCached(const Reference& ref, const std::string& label, const Need& need = {});

}  // namespace trtrace::registry
