// trtrace pull: the manifest, its config, then every layer straight to its place in a temporary
// file beside the output (the log into the gaps between the pieces, each piece at its offsets),
// each checked against its digest as it arrives; a dropped transfer resumes with a Range request.
// The finished file is checked against the pushed file's digest before it is renamed into place.
#include <unistd.h>

#include <map>

#include "pull_internal.h"
#include "transfer.h"
#include "trtrace/error.h"
#include "trtrace/files.h"
#include "trtrace/registry.h"

namespace trtrace::registry {
namespace {

constexpr int kBlobAttempts = 3;  // tries per blob (a dropped connection)

void writeAt(int fd, const std::string& name, uint64_t off, const char* p, size_t n) {
  while (n) {
    const ssize_t k = ::pwrite(fd, p, n, static_cast<off_t>(off));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) throw Error(name + ": cannot write at offset " + std::to_string(off));
    p += k, off += static_cast<uint64_t>(k), n -= static_cast<size_t>(k);
  }
}

// Where a blob's bytes go: the stream's [0, size) laid over `ranges` of the file, for each copy.
struct Target {
  Descriptor d;
  std::vector<std::vector<Range>> copies;
};

// One blob's bytes, received in order (resumed or restarted), hashed and written as they come.
class BlobSink {
 public:
  BlobSink(const Target& t, int fd, const std::string& out) : t_(t), fd_(fd), out_(out) {}
  bool take(const char* p, size_t n);  // false: more bytes than the descriptor says
  void restart() { h_ = std::make_unique<Sha256>(), done_ = 0; }
  uint64_t done() const { return done_; }
  std::string digest() { return h_->digest(); }

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

std::string blobPath(const Session& s, const std::string& digest) { return "/v2/" + s.ref().repo + "/blobs/" + digest; }

// GET a small blob (the config) whole, checked against its descriptor.
std::string fetchSmall(Session& s, const Descriptor& d, const std::string& what) {
  Request r;
  r.url = blobPath(s, d.digest);
  std::string body;
  r.sink = [&](const char* p, size_t n) { return body.size() + n <= d.size ? (body.append(p, n), true) : false; };
  const Response resp = s.send(r, what);
  if (resp.status != 200) s.fail(resp, what);
  if (body.size() != d.size || sha256Digest(body) != d.digest)
    throw Error(Error::Kind::Corrupt,
                s.ref().str() + ": " + what + ": the bytes received do not match digest " + d.digest);
  return body;
}

// GET one blob into place; a transfer that breaks resumes from the bytes received (Range), up to
// kBlobAttempts tries.
void fetchBlob(Session& s, const Target& t, int fd, const std::string& out, ByteCounter& progress) {
  const std::string what = "GET blob " + t.d.digest;
  BlobSink sink(t, fd, out);
  for (int attempt = 1;; ++attempt) {
    Request r;
    r.url = blobPath(s, t.d.digest);
    const uint64_t from = sink.done();
    if (from) r.headers.push_back("Range: bytes=" + std::to_string(from) + "-");
    r.onStatus = [&](long status) {
      if (status == 200) sink.restart();  // the whole blob again: the registry ignored the Range
    };
    r.sink = [&](const char* p, size_t n) {
      progress.add(n);
      return sink.take(p, n);
    };
    Response resp;
    try {
      resp = s.send(r, what);
    } catch (const Error& e) {  // a broken transfer (Io) is tried again; an answer is not
      if (e.kind() != Error::Kind::Io || attempt == kBlobAttempts || sink.done() == t.d.size) throw;
      continue;
    }
    if (resp.status != 200 && resp.status != 206) s.fail(resp, what);
    break;
  }
  if (sink.done() != t.d.size || sink.digest() != t.d.digest)
    throw Error(Error::Kind::Corrupt, s.ref().str() + ": " + what + ": the bytes received (" +
                                          std::to_string(sink.done()) +
                                          ") do not match the digest and size the manifest gives");
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
    forEachParallel(targets.size(), s.options().jobs,
                    [&](size_t i) { fetchBlob(s, targets[i], fd, outPath, progress); });
  }
  if (sha256OfRanges(fd, outPath, {{0, a.fileSize}}) != a.fileDigest)
    throw Error(Error::Kind::Corrupt,
                s.ref().str() + ": the trace assembled does not match the pushed file's digest " + a.fileDigest);
  outputs.commit();
}

std::string pull(const Reference& ref, const std::string& outPath, const Options& o) {
  files::checkOutput(outPath);  // before anything is fetched
  Session s(ref, o, "pull");
  const Resolved r = resolve(s);
  fetchInto(s, r, outPath);
  return r.manifestDigest;
}

}  // namespace trtrace::registry
