// trtrace pull: the manifest, its config, then every layer into the layer store (store.h: checked
// against its digest as it arrives; a dropped transfer resumes with a Range request, in this run or
// the next), and the trace assembled from them in file order into a temporary file beside the output
// (the log into the gaps between the pieces, each piece at its offsets). --no-cache writes each layer
// straight to its places instead (nothing kept to resume from). The finished file is checked against
// the pushed file's digest before it is renamed into place.
#include <unistd.h>

#include <map>
#include <set>

#include "pull_internal.h"
#include "store.h"
#include "transfer.h"
#include "trtrace/error.h"
#include "trtrace/files.h"
#include "trtrace/registry.h"

namespace trtrace::registry {
namespace {

// Where a blob's bytes go: the stream's [0, size) laid over `ranges` of the file, for each copy.
struct Target {
  Descriptor d;
  std::vector<std::vector<Range>> copies;
};

// One blob's bytes written straight to each of its places in the output (--no-cache).
class BlobSink : public BlobBytes {
 public:
  BlobSink(const Target& t, int fd, const std::string& out) : t_(t), fd_(fd), out_(out) {}
  bool take(const char* p, size_t n) override;
  void restart() override { h_ = std::make_unique<Sha256>(), done_ = 0; }
  uint64_t done() const override { return done_; }
  std::string digest() override { return h_->digest(); }

 private:
  const Target& t_;
  int fd_;
  const std::string& out_;
  std::unique_ptr<Sha256> h_ = std::make_unique<Sha256>();
  uint64_t done_ = 0;
};

bool BlobSink::take(const char* p, size_t n) {
  if (n > t_.d.size - done_) return false;
  h_->update(p, n);
  for (const auto& ranges : t_.copies) {
    uint64_t base = 0, off = done_;
    const char* q = p;
    size_t left = n;
    for (const Range& r : ranges) {
      if (left && off < base + r.size) {
        const size_t k = static_cast<size_t>(std::min<uint64_t>(left, base + r.size - off));
        writeAt(fd_, out_, r.offset + (off - base), q, k);
        q += k, off += k, left -= k;
      }
      base += r.size;
    }
  }
  done_ += n;
  return true;
}

// GET a small blob (the config) whole, checked against its descriptor.
std::string fetchSmall(Session& s, const Descriptor& d, const std::string& what) {
  Request r;
  r.url = blobUrl(s, d.digest);
  std::string body;
  r.sink = [&](const char* p, size_t n) { return body.size() + n <= d.size ? (body.append(p, n), true) : false; };
  const Response resp = s.send(r, what);
  if (resp.status != 200) s.fail(resp, what);
  if (body.size() != d.size || sha256Digest(body) != d.digest)
    throw Error(Error::Kind::Corrupt,
                s.ref().str() + ": " + what + ": the bytes received do not match digest " + d.digest);
  return body;
}

// GET the manifest the reference names; checked against the digest when it names one.
std::string fetchManifest(Session& s) {
  Request r;
  r.url = "/v2/" + s.ref().repo + "/manifests/" + s.ref().manifestRef();
  r.headers = {std::string("Accept: ") + kManifestType};
  std::string body;
  r.sink = [&](const char* p, size_t n) {
    return body.size() + n <= kMaxManifestBytes ? (body.append(p, n), true) : false;
  };
  const Response resp = s.send(r, "GET manifest");
  if (resp.status != 200) s.fail(resp, "GET manifest");
  if (!s.ref().digest.empty() && sha256Digest(body) != s.ref().digest)
    throw Error(Error::Kind::Corrupt, s.ref().str() + ": the manifest received does not match the digest named");
  return body;
}

// Each distinct layer once, with every place its bytes go.
std::vector<Target> targetsOf(const Artifact& a) {
  std::vector<Target> out{{a.log, {a.logRanges()}}};
  std::map<std::string, size_t> index;
  for (const Piece& p : a.pieces) {
    auto [it, fresh] = index.emplace(p.digest, out.size());
    if (fresh) out.push_back({{kWeightsType, p.digest, p.range.size}, {}});
    out[it->second].copies.push_back({p.range});
  }
  return out;
}

}  // namespace

Resolved resolve(Session& s) {
  const std::string manifest = fetchManifest(s);
  Resolved r;
  r.manifestDigest = sha256Digest(manifest);
  r.manifest = parseManifest(manifest, s.ref().str() + ": manifest");
  const Descriptor& c = r.manifest.config;
  r.artifact = parseConfig(fetchSmall(s, c, "GET config " + c.digest), r.manifest, s.ref().str() + ": config");
  return r;
}

void fetchInto(Session& s, const Resolved& r, const std::string& outPath) {
  files::PendingOutputs outputs;
  const int fd = outputs.add(outPath);
  const Artifact& a = r.artifact;
  const std::vector<Target> targets = targetsOf(a);
  uint64_t total = 0;
  for (const Target& t : targets) total += t.d.size;
  {
    ByteCounter progress(s.options().label, "pulling " + std::to_string(targets.size()) + " blobs", total);
    forEachParallel(targets.size(), s.options().jobs, [&](size_t i) {
      BlobSink sink(targets[i], fd, outPath);
      fetchBlob(s, targets[i].d, sink, progress);
    });
  }
  if (sha256OfRanges(fd, outPath, {{0, a.fileSize}}) != a.fileDigest)
    throw Error(Error::Kind::Corrupt,
                s.ref().str() + ": the trace assembled does not match the pushed file's digest " + a.fileDigest);
  outputs.commit();
}

std::vector<Descriptor> layersOf(const Artifact& a, const std::set<std::string>& pieces) {
  std::vector<Descriptor> out{a.log};
  std::set<std::string> seen;
  for (const Piece& p : a.pieces)
    if (pieces.count(p.digest) && seen.insert(p.digest).second) out.push_back({kWeightsType, p.digest, p.range.size});
  return out;
}

void fetchLayers(Session& s, LayerStore& store, const std::vector<Descriptor>& layers) {
  uint64_t total = 0;
  for (const Descriptor& d : layers) total += d.size;
  ByteCounter progress(s.options().label, "pulling " + std::to_string(layers.size()) + " blobs", total);
  forEachParallel(layers.size(), s.options().jobs, [&](size_t i) { store.ensure(s, layers[i], progress); });
}

void assembleChecked(Session& s, const Resolved& r, LayerStore& store, int fd, const std::string& out) {
  const Artifact& a = r.artifact;
  std::set<std::string> all{a.log.digest};
  for (const Piece& p : a.pieces) all.insert(p.digest);
  for (int round = 0;; ++round) {
    if (assemble(a, store, all, fd, out, s.options().label) == a.fileDigest) return;
    // A stored layer damaged on disk since it was checked: dropped and fetched again, once.
    if (round == 1 || store.dropDamaged(all) == 0)
      throw Error(Error::Kind::Corrupt,
                  s.ref().str() + ": the trace assembled does not match the pushed file's digest " + a.fileDigest);
    fetchLayers(s, store, layersOf(a, all));
  }
}

std::string pull(const Reference& ref, const std::string& outPath, const Options& o) {
  files::checkOutput(outPath);  // before anything is fetched
  Session s(ref, o, "pull");
  const Resolved r = resolve(s);
  if (o.noCache) return fetchInto(s, r, outPath), r.manifestDigest;
  const std::string folder = privateCacheFolder();
  LayerStore store(folder);
  std::set<std::string> pieces;
  for (const Piece& p : r.artifact.pieces) pieces.insert(p.digest);
  const std::vector<Descriptor> layers = layersOf(r.artifact, pieces);
  fetchLayers(s, store, layers);
  files::PendingOutputs outputs;
  const int fd = outputs.add(outPath);
  assembleChecked(s, r, store, fd, outPath);
  outputs.commit();
  std::set<std::string> keep;
  for (const Descriptor& d : layers) keep.insert(store.path(d.digest));
  trimCache(folder, cacheBound(), keep);
  return r.manifestDigest;
}

}  // namespace trtrace::registry
