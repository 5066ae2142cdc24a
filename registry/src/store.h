// The layer store (docs/registry.md, "The cache"): a registry's layers kept by digest in the private
// cache folder, so that a pull that failed resumes where it stopped, a layer that another trace
// already brought is not fetched again, and a replay fetches only the layers its calls use.
//   <cache>/blobs/sha256/<hex>          a complete layer, checked against its digest when stored
//   <cache>/blobs/sha256/<hex>.partial  the bytes received so far of one being fetched (locked
//                                       while a process fetches it; the next fetch resumes there)
#pragma once
#include <cstdint>
#include <set>
#include <string>

#include "http.h"
#include "layout.h"
#include "transfer.h"

namespace trtrace::registry {

// One blob's bytes as they arrive, in order (a transfer resumed or restarted), hashed as they come.
class BlobBytes {
 public:
  virtual ~BlobBytes() = default;
  virtual bool take(const char* p, size_t n) = 0;  // false: more bytes than the descriptor says
  virtual void restart() = 0;                      // the registry sends the whole blob again
  virtual uint64_t done() const = 0;
  virtual std::string digest() = 0;  // of the bytes taken; once
};

// The URL path of a blob of the session's repository.
std::string blobUrl(const Session& s, const std::string& digest);

// GETs blob `d` into `sink` from sink.done() on (Range), resuming a broken transfer up to three
// tries; Error (Corrupt) when the bytes do not give the descriptor's digest and size.
void fetchBlob(Session& s, const Descriptor& d, BlobBytes& sink, ByteCounter& progress);

class LayerStore {
 public:
  explicit LayerStore(const std::string& cacheFolder);  // the private folder (cache.cpp); blobs/ made in it
  std::string path(const std::string& digest) const;
  bool has(const Descriptor& d) const;  // a complete layer of d's size, a regular file of this user
  // The complete layer `d`: found, or fetched (resuming a .partial a failed run left). A layer whose
  // bytes do not match is not kept: its partial bytes are dropped, so a retry starts it over.
  std::string ensure(Session& s, const Descriptor& d, ByteCounter& progress);
  // Drops the stored layers of `digests` whose bytes no longer give their digest (damaged on disk);
  // returns how many.
  size_t dropDamaged(const std::set<std::string>& digests) const;

 private:
  std::string folder_;
};

// Removes the cache folder's least recently used files (layers, partial layers no process holds,
// assembled traces) until it holds at most `maxBytes`, never one whose path is in `keep`.
void trimCache(const std::string& cacheFolder, uint64_t maxBytes, const std::set<std::string>& keep);

}  // namespace trtrace::registry
