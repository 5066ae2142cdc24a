// The OCI layout of a trace (docs/format.md, "OCI artifact"; layout version 1):
// - manifest: an OCI image manifest, artifactType kArtifactType, annotations (org.trtrace.*);
// - config (kConfigType): JSON {"layout": 1, "size": file bytes, "digest": the file's sha256,
//   "log": {"digest", "size"}, "pieces": [{"offset", "size", "digest"}, ...]};
// - layers: the log (kLogType): every byte of the file outside the pieces, in file order (FileHeader,
//   header block, segments, blob records and padding, footer), then one layer (kWeightsType) per
//   distinct piece digest. A piece is a weight blob's data region, so equal weights stored the same
//   way are one blob in the registry whatever trace holds them.
// Pull writes the log's bytes into the gaps between the pieces and each piece at its offset.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "sha256.h"

namespace trtrace {
class Reader;
}

namespace trtrace::registry {

inline constexpr const char* kManifestType = "application/vnd.oci.image.manifest.v1+json";
inline constexpr const char* kArtifactType = "application/vnd.trtrace.trace.v1";
inline constexpr const char* kConfigType = "application/vnd.trtrace.config.v1+json";
inline constexpr const char* kLogType = "application/vnd.trtrace.log.v1";
inline constexpr const char* kWeightsType = "application/vnd.trtrace.weights.v1";
inline constexpr int kLayoutVersion = 1;
inline constexpr size_t kMaxManifestBytes = 4 << 20;  // the distribution server's own limit
inline constexpr size_t kMaxConfigBytes = 64 << 20;   // 24 B a piece: about 2.8 million blobs

struct Piece {
  Range range;
  std::string digest;
};

struct Descriptor {
  std::string mediaType, digest;
  uint64_t size = 0;
};

// What the config says (push builds it, pull reads it back, checked).
struct Artifact {
  uint64_t fileSize = 0;
  std::string fileDigest;
  Descriptor log;
  std::vector<Piece> pieces;             // in file order, not overlapping
  std::vector<Range> logRanges() const;  // the gaps between the pieces
};

// The closed trace `r` (open on `fd`): its pieces and all digests (reads the whole file once).
Artifact planArtifact(const Reader& r, int fd, const std::string& name);
std::string configJson(const Artifact& a);
// The manifest: config, the log layer, then each distinct piece digest once.
std::string manifestJson(const Artifact& a, const Descriptor& config, const std::string& title,
                         const std::map<std::string, std::string>& annotations);

struct Manifest {
  Descriptor config;
  std::vector<Descriptor> layers;
};
// Parses and checks a manifest (media type, artifactType, descriptors); Error (Corrupt) naming `what`.
Manifest parseManifest(std::string_view body, const std::string& what);
// Parses and checks a config against its manifest's layers; Error (Corrupt) naming `what`.
Artifact parseConfig(std::string_view body, const Manifest& m, const std::string& what);

}  // namespace trtrace::registry
