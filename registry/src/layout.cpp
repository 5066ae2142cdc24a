#include "layout.h"

#include <simdjson.h>
#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <unordered_map>

#include "trtrace/error.h"
#include "trtrace/reader.h"
#include "trtrace/text.h"

namespace trtrace::registry {
namespace {

// The data regions of the trace's stored blobs (Lost and Replaced ones hold none), in file order.
std::vector<Range> dataRegions(const Reader& r, uint64_t fileSize, const std::string& name) {
  std::vector<Range> out;
  for (const BlobInfo& b : r.blobs())
    if (b.storedSize > 0) out.push_back({b.dataOffset, b.storedSize});
  std::sort(out.begin(), out.end(), [](const Range& a, const Range& b) { return a.offset < b.offset; });
  uint64_t end = 0;
  for (const Range& g : out) {
    if (g.offset < end || g.offset > fileSize || g.size > fileSize - g.offset)
      throw Error(Error::Kind::Corrupt, name + ": blob data at offset " + std::to_string(g.offset) +
                                            " overlaps another or runs past the end");
    end = g.offset + g.size;
  }
  return out;
}

// One pass over the file: the whole file's digest, the log's (bytes outside `regions`) and each region's.
void digestAll(int fd, const std::string& name, Artifact* a) {
  Sha256 file, log;
  std::vector<char> buf(1 << 20);
  size_t next = 0;  // the first piece not yet finished
  std::unique_ptr<Sha256> piece;
  for (uint64_t off = 0; off < a->fileSize;) {
    uint64_t stop = a->fileSize;  // the end of the run of bytes that goes to one hasher
    const bool inPiece = next < a->pieces.size() && off >= a->pieces[next].range.offset;
    if (inPiece)
      stop = a->pieces[next].range.offset + a->pieces[next].range.size;
    else if (next < a->pieces.size())
      stop = a->pieces[next].range.offset;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), stop - off));
    readAt(fd, name, off, buf.data(), n);
    file.update(buf.data(), n);
    if (!inPiece)
      log.update(buf.data(), n);
    else {
      if (!piece) piece = std::make_unique<Sha256>();
      piece->update(buf.data(), n);
    }
    off += n;
    if (inPiece && off == stop) {
      a->pieces[next++].digest = piece->digest();
      piece.reset();
    }
  }
  a->fileDigest = file.digest();
  a->log.digest = log.digest();
}

std::string descriptorJson(const Descriptor& d, const std::string& title) {
  std::string s = "{\"mediaType\":" + jsonString(d.mediaType) + ",\"digest\":" + jsonString(d.digest) +
                  ",\"size\":" + std::to_string(d.size);
  if (!title.empty()) s += ",\"annotations\":{\"org.opencontainers.image.title\":" + jsonString(title) + "}";
  return s + "}";
}

[[noreturn]] void corrupt(const std::string& what, const std::string& why) {
  throw Error(Error::Kind::Corrupt, what + ": " + why);
}

Descriptor parseDescriptor(simdjson::dom::element e, const std::string& what) {
  Descriptor d;
  std::string_view mt, dg;
  uint64_t size = 0;
  if (e["mediaType"].get(mt) || e["digest"].get(dg) || e["size"].get(size))
    corrupt(what, "a descriptor lacks mediaType, digest or size");
  d.mediaType = std::string(mt.substr(0, 200));
  d.digest = std::string(dg.substr(0, 200));
  d.size = size;
  if (!validDigest(d.digest)) corrupt(what, "a descriptor's digest is not sha256:<64 hex>");
  return d;
}

simdjson::dom::element parseJson(simdjson::dom::parser& p, std::string_view body, const std::string& what) {
  simdjson::dom::element doc;
  if (p.parse(body.data(), body.size()).get(doc)) corrupt(what, "not JSON");
  return doc;
}

}  // namespace

std::vector<Range> Artifact::logRanges() const {
  std::vector<Range> out;
  uint64_t at = 0;
  for (const Piece& p : pieces) {
    if (p.range.offset > at) out.push_back({at, p.range.offset - at});
    at = p.range.offset + p.range.size;
  }
  if (fileSize > at) out.push_back({at, fileSize - at});
  return out;
}

Artifact planArtifact(const Reader& r, int fd, const std::string& name) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw Error(name + ": cannot stat");
  Artifact a;
  a.fileSize = static_cast<uint64_t>(st.st_size);
  uint64_t pieceBytes = 0;
  for (const Range& g : dataRegions(r, a.fileSize, name)) {
    a.pieces.push_back({g, ""});
    pieceBytes += g.size;
  }
  a.log = {kLogType, "", a.fileSize - pieceBytes};
  digestAll(fd, name, &a);
  return a;
}

std::string configJson(const Artifact& a) {
  std::string s = "{\"layout\":" + std::to_string(kLayoutVersion) + ",\"size\":" + std::to_string(a.fileSize) +
                  ",\"digest\":" + jsonString(a.fileDigest) + ",\"log\":{\"digest\":" + jsonString(a.log.digest) +
                  ",\"size\":" + std::to_string(a.log.size) + "},\"pieces\":[";
  for (size_t i = 0; i < a.pieces.size(); ++i)
    s += (i ? ",{\"offset\":" : "{\"offset\":") + std::to_string(a.pieces[i].range.offset) +
         ",\"size\":" + std::to_string(a.pieces[i].range.size) + ",\"digest\":" + jsonString(a.pieces[i].digest) + "}";
  return s + "]}";
}

std::string manifestJson(const Artifact& a, const Descriptor& config, const std::string& title,
                         const std::map<std::string, std::string>& annotations) {
  std::string s = "{\"schemaVersion\":2,\"mediaType\":" + jsonString(kManifestType) +
                  ",\"artifactType\":" + jsonString(kArtifactType) + ",\"config\":" + descriptorJson(config, "") +
                  ",\"layers\":[" + descriptorJson(a.log, title);
  std::set<std::string> seen;
  for (const Piece& p : a.pieces)
    if (seen.insert(p.digest).second)
      s += "," + descriptorJson({kWeightsType, p.digest, p.range.size}, "weights-" + p.digest.substr(7) + ".bin");
  s += "],\"annotations\":{";
  bool first = true;
  for (const auto& [k, v] : annotations) {
    s += (first ? "" : ",") + jsonString(k) + ":" + jsonString(v);
    first = false;
  }
  return s + "}}";
}

Manifest parseManifest(std::string_view body, const std::string& what) {
  simdjson::dom::parser p;
  simdjson::dom::element doc = parseJson(p, body, what);
  std::string_view mt, at;
  uint64_t version = 0;
  if (doc["schemaVersion"].get(version) || version != 2) corrupt(what, "not an OCI manifest (schemaVersion is not 2)");
  if (!doc["mediaType"].get(mt) && mt != kManifestType)
    corrupt(what, "media type '" + std::string(mt.substr(0, 100)) + "' is not an OCI image manifest");
  if (doc["artifactType"].get(at) || at != kArtifactType)
    corrupt(what, "not a trtrace trace (artifactType is not " + std::string(kArtifactType) + ")");
  Manifest m;
  simdjson::dom::element config;
  simdjson::dom::array layers;
  if (doc["config"].get(config) || doc["layers"].get(layers)) corrupt(what, "no config or layers");
  m.config = parseDescriptor(config, what);
  if (m.config.mediaType != kConfigType) corrupt(what, "config media type is not " + std::string(kConfigType));
  if (m.config.size > kMaxConfigBytes)
    corrupt(what, "config declares " + std::to_string(m.config.size) + " bytes (at most " +
                      std::to_string(kMaxConfigBytes) + ")");
  for (simdjson::dom::element l : layers) m.layers.push_back(parseDescriptor(l, what));
  return m;
}

namespace {

using LayerSizes = std::unordered_map<std::string, uint64_t>;

// The size the manifest gives `digest` (as a layer); Error when it lists none.
uint64_t layerSize(const LayerSizes& sizes, const std::string& digest, const std::string& what) {
  const auto it = sizes.find(digest);
  if (it == sizes.end()) corrupt(what, "layer " + digest + " is not in the manifest");
  return it->second;
}

Piece parsePiece(simdjson::dom::element e, const std::string& what) {
  Piece p;
  std::string_view dg;
  if (e["offset"].get(p.range.offset) || e["size"].get(p.range.size) || e["digest"].get(dg))
    corrupt(what, "a piece lacks offset, size or digest");
  p.digest = std::string(dg.substr(0, 100));
  if (!validDigest(p.digest)) corrupt(what, "a piece's digest is not sha256:<64 hex>");
  return p;
}

// Pieces in file order, not overlapping, non-empty, inside the file, each a manifest layer of its size.
void checkPieces(const Artifact& a, const Manifest& m, const std::string& what) {
  LayerSizes sizes;
  for (const Descriptor& d : m.layers)
    if (!sizes.emplace(d.digest, d.size).second && sizes[d.digest] != d.size)
      corrupt(what, "layer " + d.digest + " listed with two sizes");
  uint64_t end = 0, total = 0;
  for (const Piece& p : a.pieces) {
    const std::string at = "piece at offset " + std::to_string(p.range.offset);
    if (p.range.size == 0 || p.range.offset < end || p.range.offset > a.fileSize ||
        p.range.size > a.fileSize - p.range.offset)
      corrupt(what, at + ": empty, out of order, overlapping or past the end of the file");
    if (layerSize(sizes, p.digest, what) != p.range.size) corrupt(what, at + ": size differs from its layer's");
    end = p.range.offset + p.range.size;
    total += p.range.size;
  }
  if (a.log.size != a.fileSize - total) corrupt(what, "the log's size is not the file's less its pieces'");
  if (layerSize(sizes, a.log.digest, what) != a.log.size) corrupt(what, "the log's size differs from its layer's");
}

}  // namespace

Artifact parseConfig(std::string_view body, const Manifest& m, const std::string& what) {
  simdjson::dom::parser p;
  simdjson::dom::element doc = parseJson(p, body, what);
  Artifact a;
  uint64_t layout = 0;
  std::string_view fd, ld;
  simdjson::dom::array pieces;
  if (doc["layout"].get(layout) || layout != kLayoutVersion)
    corrupt(what, "layout version is not " + std::to_string(kLayoutVersion) + " (a newer trtrace wrote it?)");
  if (doc["size"].get(a.fileSize) || doc["digest"].get(fd) || doc["log"]["digest"].get(ld) ||
      doc["log"]["size"].get(a.log.size) || doc["pieces"].get(pieces))
    corrupt(what, "lacks size, digest, log or pieces");
  a.fileDigest = std::string(fd.substr(0, 100));
  a.log.digest = std::string(ld.substr(0, 100));
  a.log.mediaType = kLogType;
  if (!validDigest(a.fileDigest) || !validDigest(a.log.digest)) corrupt(what, "a digest is not sha256:<64 hex>");
  for (simdjson::dom::element e : pieces) a.pieces.push_back(parsePiece(e, what));
  checkPieces(a, m, what);
  return a;
}

}  // namespace trtrace::registry
