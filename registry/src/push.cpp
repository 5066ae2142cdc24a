// trtrace push: HEAD each blob, mount or upload the missing ones (monolithic PUT, or PATCH chunks
// that resume where the registry says the upload stands after a failed one), then PUT the manifest.
#include <unistd.h>

#include <algorithm>
#include <set>

#include "http.h"
#include "layout.h"
#include "transfer.h"
#include "trtrace/error.h"
#include "trtrace/files.h"
#include "trtrace/reader.h"
#include "trtrace/registry.h"

namespace trtrace::registry {
namespace {

constexpr int kChunkAttempts = 3;  // tries per chunk (a dropped connection, a 5xx)

// One blob to send: in-memory bytes (the config) or ranges of the trace (the log, a piece).
struct Blob {
  Descriptor d;
  std::string bytes;
  std::vector<Range> ranges;
};

// The body of `b` from `from` on: random access over its ranges (or bytes).
std::function<void(uint64_t, char*, size_t)> bodyOf(const Blob& b, int fd, const std::string& name, uint64_t from) {
  return [&b, fd, name, from](uint64_t off, char* buf, size_t n) {
    off += from;
    if (b.ranges.empty()) {
      std::copy_n(b.bytes.data() + off, n, buf);
      return;
    }
    uint64_t base = 0;
    for (const Range& r : b.ranges) {
      if (n == 0) return;
      if (off < base + r.size) {
        const size_t k = static_cast<size_t>(std::min<uint64_t>(n, base + r.size - off));
        readAt(fd, name, r.offset + (off - base), buf, k);
        buf += k, off += k, n -= k;
      }
      base += r.size;
    }
  };
}

class Pusher {
 public:
  Pusher(Session& s, int fd, std::string name, ByteCounter& progress)
      : s_(s), fd_(fd), name_(std::move(name)), progress_(progress) {}
  enum class Outcome { Present, Mounted, Uploaded };
  Outcome push(const Blob& b);

 private:
  std::string blobPath(const std::string& d) const { return "/v2/" + s_.ref().repo + "/blobs/" + d; }
  std::string uploads() const { return "/v2/" + s_.ref().repo + "/blobs/uploads/"; }
  bool exists(const Blob& b);
  std::string startUpload(const Blob& b, bool* mounted);
  void sendMonolithic(const Blob& b, const std::string& loc);
  void sendChunked(const Blob& b, std::string loc);
  std::string sendChunk(const Blob& b, const std::string& loc, uint64_t off, uint64_t n);
  uint64_t uploadOffset(std::string* loc, const std::string& what);
  void finish(const Blob& b, const std::string& loc);
  static std::string withDigest(const std::string& loc, const std::string& d) {
    return loc + (loc.find('?') == std::string::npos ? "?" : "&") + "digest=" + d;
  }

  Session& s_;
  int fd_;
  std::string name_;
  ByteCounter& progress_;
};

bool Pusher::exists(const Blob& b) {
  Request r;
  r.method = "HEAD";
  r.url = blobPath(b.d.digest);
  const Response resp = s_.send(r, "HEAD blob " + b.d.digest);
  if (resp.status == 200) return true;
  if (resp.status != 404) s_.fail(resp, "HEAD blob " + b.d.digest);
  return false;
}

// POST an upload (a mount first, from each --mount-from repository): the upload's location, or ""
// with *mounted set when a mount was accepted.
std::string Pusher::startUpload(const Blob& b, bool* mounted) {
  Request r;
  r.method = "POST";
  for (const std::string& from : s_.options().mountFrom) {
    r.url = uploads() + "?mount=" + b.d.digest + "&from=" + from;
    const Response resp = s_.send(r, "mount blob " + b.d.digest + " from " + from);
    if (resp.status == 201) return *mounted = true, "";
    if (resp.status == 202 && !resp.header("location").empty()) return resp.header("location");
    if (resp.status != 404) s_.fail(resp, "mount blob " + b.d.digest + " from " + from);
  }
  r.url = uploads();
  const Response resp = s_.send(r, "start upload of " + b.d.digest);
  if (resp.status != 202 || resp.header("location").empty()) s_.fail(resp, "start upload of " + b.d.digest);
  return resp.header("location");
}

void Pusher::sendMonolithic(const Blob& b, const std::string& loc) {
  Request r;
  r.method = "PUT";
  r.url = withDigest(loc, b.d.digest);
  r.headers = {"Content-Type: application/octet-stream"};
  r.bodySize = b.d.size;
  r.body = bodyOf(b, fd_, name_, 0);
  uint64_t shown = 0;
  r.sent = [&](uint64_t n) {
    if (n > shown) progress_.add(n - shown), shown = n;
  };
  const Response resp = s_.send(r, "upload blob " + b.d.digest);
  if (resp.status != 201) s_.fail(resp, "upload blob " + b.d.digest);
}

// PATCH [off, off+n) to `loc`; the next location.
std::string Pusher::sendChunk(const Blob& b, const std::string& loc, uint64_t off, uint64_t n) {
  Request r;
  r.method = "PATCH";
  r.url = loc;
  r.headers = {"Content-Type: application/octet-stream",
               "Content-Range: " + std::to_string(off) + "-" + std::to_string(off + n - 1)};
  r.bodySize = n;
  r.body = bodyOf(b, fd_, name_, off);
  const Response resp = s_.send(r, "upload blob " + b.d.digest + " at " + std::to_string(off));
  if (resp.status != 202) s_.fail(resp, "upload blob " + b.d.digest + " at " + std::to_string(off));
  const std::string next = resp.header("location");
  return next.empty() ? loc : next;
}

// Where the upload at *loc stands (GET: Range 0-<last byte>); *loc takes the new location.
uint64_t Pusher::uploadOffset(std::string* loc, const std::string& what) {
  Request r;
  r.url = *loc;
  const Response resp = s_.send(r, what + ": upload status");
  if (resp.status != 204) s_.fail(resp, what + ": upload status");
  if (!resp.header("location").empty()) *loc = resp.header("location");
  const std::string range = resp.header("range");
  const size_t dash = range.find('-');
  if (range.empty() || dash == std::string::npos) return 0;
  try {
    return std::stoull(range.substr(dash + 1)) + 1;
  } catch (const std::exception&) {
    throw Error(Error::Kind::Corrupt, s_.ref().str() + ": " + what + ": the registry's Range '" + range.substr(0, 60) +
                                          "' is not a byte range");
  }
}

void Pusher::sendChunked(const Blob& b, std::string loc) {
  const std::string what = "upload blob " + b.d.digest;
  int failures = 0;
  for (uint64_t off = 0; off < b.d.size;) {
    const uint64_t n = std::min<uint64_t>(s_.options().chunkBytes, b.d.size - off);
    try {
      loc = sendChunk(b, loc, off, n);
      progress_.add(n);
      off += n;
    } catch (const Error&) {
      if (++failures == kChunkAttempts) throw;
      const uint64_t at = uploadOffset(&loc, what);  // resume where the registry stands
      if (at > b.d.size || at < off) throw;
      progress_.add(at - off);
      off = at;
    }
  }
  finish(b, loc);
}

void Pusher::finish(const Blob& b, const std::string& loc) {
  Request r;
  r.method = "PUT";
  r.url = withDigest(loc, b.d.digest);
  const Response resp = s_.send(r, "finish upload of " + b.d.digest);
  if (resp.status != 201) s_.fail(resp, "finish upload of " + b.d.digest);
}

Pusher::Outcome Pusher::push(const Blob& b) {
  if (exists(b)) return progress_.add(b.d.size), Outcome::Present;
  bool mounted = false;
  const std::string loc = startUpload(b, &mounted);
  if (mounted) return progress_.add(b.d.size), Outcome::Mounted;
  if (b.d.size > s_.options().chunkBytes)
    sendChunked(b, loc);
  else
    sendMonolithic(b, loc);
  return Outcome::Uploaded;
}

std::vector<Blob> blobsOf(const Artifact& a, const std::string& config) {
  std::vector<Blob> out;
  out.push_back({{kConfigType, sha256Digest(config), config.size()}, config, {}});
  out.push_back({a.log, "", a.logRanges()});
  std::set<std::string> seen;
  for (const Piece& p : a.pieces)
    if (seen.insert(p.digest).second) out.push_back({{kWeightsType, p.digest, p.range.size}, "", {p.range}});
  return out;
}

std::string putManifest(Session& s, const std::string& manifest) {
  const std::string digest = sha256Digest(manifest);
  if (!s.ref().digest.empty() && s.ref().digest != digest)
    throw Error(Error::Kind::Usage, s.ref().str() + ": the trace's manifest is " + digest + ", not the digest named");
  Request r;
  r.method = "PUT";
  r.url = "/v2/" + s.ref().repo + "/manifests/" + s.ref().manifestRef();
  r.headers = {std::string("Content-Type: ") + kManifestType};
  r.bodyBytes = manifest;
  r.bodySize = manifest.size();
  const Response resp = s.send(r, "PUT manifest");
  if (resp.status != 201) s.fail(resp, "PUT manifest");
  return digest;
}

std::string baseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

PushResult push(const std::string& path, const Reference& ref, const Options& o,
                const std::map<std::string, std::string>& annotations) {
  const int fd = files::openInput(path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  const auto reader = Reader::open(fd, path);
  if (!reader->closedCleanly()) {  // the artifact is the whole file: a prefix would not pull back as the capture
    const std::string cut = reader->truncationMessage();
    throw Error(Error::Kind::Truncated, (cut.empty() ? path + ": not closed (the capture did not finish)" : cut) +
                                            "; not pushing a truncated trace");
  }
  const Artifact a = planArtifact(*reader, fd, path);
  const std::string config = configJson(a);
  const std::vector<Blob> blobs = blobsOf(a, config);
  PushResult res;
  for (const Blob& b : blobs) res.totalBytes += b.d.size;
  Session s(ref, o, "pull,push", o.mountFrom);
  ByteCounter progress(o.label, "pushing " + std::to_string(blobs.size()) + " blobs", res.totalBytes);
  std::vector<Pusher::Outcome> outcome(blobs.size());
  forEachParallel(blobs.size(), o.jobs, [&](size_t i) { outcome[i] = Pusher(s, fd, path, progress).push(blobs[i]); });
  for (size_t i = 0; i < blobs.size(); ++i) {
    ++res.blobs;
    if (outcome[i] == Pusher::Outcome::Uploaded)
      ++res.uploaded, res.uploadedBytes += blobs[i].d.size;
    else if (outcome[i] == Pusher::Outcome::Mounted)
      ++res.mounted;
    else
      ++res.present;
  }
  res.manifestDigest = putManifest(s, manifestJson(a, blobs[0].d, baseName(path), annotations));
  return res;
}

}  // namespace trtrace::registry
