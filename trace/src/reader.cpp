// Reader: the facade over a mapped trace (reader_impl.h): segments inflated and verified on use,
// blobs decoded (and hashed in the same pass when checked), calls walked in seq order.
// See trtrace/reader.h for the contract and docs/format.md for the layout.
#include "trtrace/reader.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>

#include "blob_decode.h"
#include "block_file.h"
#include "call_log.h"
#include "reader_impl.h"
#include "trtrace/files.h"

namespace trtrace {
namespace F = format;
using detail::blobName;
using detail::BlockCheck;
using detail::sv;

// ---- Reader::Impl: use ------------------------------------------------------------------------
Reader::Impl::SegmentFb Reader::Impl::segment(size_t i) const {
  if (i >= segs.size()) throw Error(Error::Kind::Usage, path + ": no segment " + std::to_string(i));
  auto name = [&] { return path + ": segment " + std::to_string(i) + " at offset " + std::to_string(segs[i].offset); };
  int8_t st = segState[i].load(std::memory_order_acquire);
  if (st < 0) throw Error(Error::Kind::Corrupt, name() + " is damaged");
  F::BlockHeader h;
  std::memcpy(&h, base + segs[i].offset, sizeof h);  // within the file: checked at open
  SegmentFb s;
  if (st == 0 || (h.flags & F::kSegmentZstd)) {
    auto bc = detail::checkBlock(base, size, segs[i].offset);
    if (bc.status != BlockCheck::Ok || bc.h.type != uint16_t(F::BlockType::Segment)) {
      segState[i].store(-1, std::memory_order_release);
      throw Error(Error::Kind::Corrupt, name() + ": " + (bc.why.empty() ? "not a segment block" : bc.why));
    }
    segState[i].store(1, std::memory_order_release);
    s.bytes =
        bc.inflated ? BlobView::owned(std::move(bc.inflated), bc.fbufSize) : BlobView::mapped({bc.fbuf, bc.fbufSize});
  } else {  // a raw segment verified before
    s.bytes = BlobView::mapped({base + segs[i].offset + sizeof h, h.payloadSize});
  }
  s.root = flatbuffers::GetRoot<fb::Segment>(s.bytes.data());
  // The index (a closed trace's footer) said how many calls from which seq: what callCount() and
  // every caller that pages by seq trusted. Checked on every use (two compares), so each says why.
  const uint64_t held = detail::callsIn(*s.root);
  if (std::string why = detail::checkSegmentEntry(segs[i].firstSeq, segs[i].calls, s.root->first_seq(), held);
      !why.empty())
    throw Error(Error::Kind::Corrupt, name() + ": " + why);
  return s;
}

const fb::Call* Reader::Impl::callOf(size_t i, const fb::CallRecord* rec) const {
  return detail::callOf(rec, path, i, segs[i].offset);
}

const BlobInfo* Reader::Impl::findBlob(const BlobRef& ref) const {
  BlobInfo key;
  key.ref = ref;
  auto it = std::lower_bound(blobs.begin(), blobs.end(), key, blobLess);
  if (it == blobs.end() || !(it->ref == ref)) return nullptr;
  return &*it;
}

void Reader::Impl::blobError(const BlobRef& ref, uint64_t offset, const std::string& what) const {
  throw Error(Error::Kind::Corrupt, path + ": " + blobName(ref) + " at offset " + std::to_string(offset) + ": " + what);
}

const BlobInfo& Reader::Impl::locate(const BlobRef& ref) const {
  const BlobInfo* bi = findBlob(ref);
  if (!bi) throw Error(Error::Kind::Corrupt, path + ": " + blobName(ref) + " is not in the trace");
  auto bc = detail::checkBlock(base, size, bi->offset);
  if (bc.status != BlockCheck::Ok || bc.h.type != uint16_t(F::BlockType::Blob))
    blobError(ref, bi->offset, bc.why.empty() ? "not a blob block" : bc.why);
  auto r = detail::blobRecordAt(base, bi->offset);
  if (r.hashLo != ref.hash.lo || r.hashHi != ref.hash.hi || r.rawSize != ref.length ||
      bi->dataOffset != bi->offset + sizeof(F::BlockHeader) + r.dataOffset)
    blobError(ref, bi->offset, "index and record disagree");
  return *bi;
}

namespace {
// rawSize zero bytes for a Lost blob: pages of an anonymous read-only mapping (no memory until read).
BlobView zeros(uint64_t n) {
  if (n == 0) return {};
  void* p = ::mmap(nullptr, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw Error(Error::Kind::Io, "cannot map " + std::to_string(n) + " zero bytes for a lost blob");
  std::shared_ptr<const void> keep(p, [n](const void* q) { ::munmap(const_cast<void*>(q), n); });
  return BlobView::kept({static_cast<const std::byte*>(p), n}, std::move(keep));
}
}  // namespace

BlobView Reader::Impl::blob(const BlobRef& ref, bool checked) const {
  const BlobInfo* in = findBlob(ref);
  if (external && !in)
    if (auto it = external->blobs.find(ref); it != external->blobs.end()) return BlobView::kept(it->second, external);
  const BlobInfo* bi = &locate(ref);
  const auto r = detail::blobRecordAt(base, bi->offset);
  if (bi->lost) return zeros(r.rawSize);  // nothing to check: the capture kept no bytes
  const char* damaged = "content does not match its hash (damaged weights)";
  if (F::isRawEncoding(r.encoding)) {
    auto view = BlobView::mapped({base + bi->dataOffset, r.rawSize});  // zero-copy into the mapping
    if (checked && !(files::hashReleasing({base, size}, bi->dataOffset, r.rawSize) == ref.hash))
      blobError(ref, bi->offset, damaged);
    return view;
  }
  const detail::StoredBlob stored{path, base, *bi};
  detail::checkChunkSizes(stored);  // before rawSize bytes are allocated on the record's word
  std::unique_ptr<std::byte[]> buf;
  try {
    buf = std::make_unique_for_overwrite<std::byte[]>(r.rawSize);
  } catch (const std::bad_alloc&) {
    throw Error(Error::Kind::Io,
                path + ": " + blobName(ref) + ": cannot allocate " + std::to_string(r.rawSize) + " bytes");
  }
  const Hash128 h = detail::decodeBlob(stored, buf.get(), checked);  // one pass: decoded and hashed
  if (checked && !(h == ref.hash)) blobError(ref, bi->offset, damaged);
  return BlobView::owned(std::move(buf), r.rawSize);
}

// ---- Reader -----------------------------------------------------------------------------------
const std::string& Reader::path() const { return impl_->path; }
const HeaderView& Reader::header() const { return impl_->header; }
bool Reader::closedCleanly() const { return impl_->closed; }
std::optional<uint64_t> Reader::truncatedAt() const { return impl_->trunc; }
std::string Reader::truncationMessage() const {
  if (!impl_->trunc) return "";
  return impl_->path + ": truncated at offset " + std::to_string(*impl_->trunc) + " (" + impl_->truncWhy + ")";
}
uint64_t Reader::callCount() const { return impl_->totalCalls; }
size_t Reader::segmentCount() const { return impl_->segs.size(); }

void Reader::forEachCallInSegment(size_t i, const std::function<bool(const CallView&)>& fn) const {
  auto seg = impl_->segment(i);  // held (inflated, if compressed) for this segment's calls only
  if (!seg.root->calls()) return;
  for (auto* rec : *seg.root->calls())
    if (!fn(CallView(impl_->callOf(i, rec)))) return;
}

void Reader::forEachCall(const std::function<bool(const CallView&)>& fn) const {
  bool go = true;
  for (size_t i = 0; i < impl_->segs.size() && go; ++i)
    forEachCallInSegment(i, [&](const CallView& c) { return go = fn(c); });
}

BlobView Reader::segmentBytes(size_t i) const { return impl_->segment(i).bytes; }

BlobView Reader::segmentPrefix(size_t i, uint32_t calls) const {
  Impl::SegmentFb seg = impl_->segment(i);
  return detail::segmentPrefix(seg.root, calls);
}

SegmentInfo Reader::segmentInfo(size_t i) const {
  if (i >= impl_->segs.size()) throw Error(Error::Kind::Usage, impl_->path + ": no segment " + std::to_string(i));
  const auto& sg = impl_->segs[i];
  F::BlockHeader h;
  std::memcpy(&h, impl_->base + sg.offset, sizeof h);
  if (h.magic != F::kBlockMagic || h.headerCheck != detail::blockHeaderCheck(h) ||
      h.type != uint16_t(F::BlockType::Segment))
    throw Error(Error::Kind::Corrupt, impl_->path + ": segment " + std::to_string(i) + " at offset " +
                                          std::to_string(sg.offset) + ": bad block header");
  SegmentInfo si;
  si.offset = sg.offset;
  si.firstSeq = sg.firstSeq;
  si.calls = sg.calls;
  si.storedSize = h.payloadSize;
  si.compressed = (h.flags & F::kSegmentZstd) != 0;
  return si;
}

// ---- CallCursor -------------------------------------------------------------------------------
struct CallCursor::State {
  const Reader* r;
  size_t seg = 0;
  uint32_t pos = 0;
  Reader::Impl::SegmentFb cur;  // the segment being walked (one inflated segment at most)
  CallView view{nullptr};
};

CallCursor::CallCursor(const Reader& r) : s_(std::make_unique<State>()) { s_->r = &r; }
CallCursor::~CallCursor() = default;

const CallView* CallCursor::next() {
  const Reader::Impl& m = *s_->r->impl_;
  for (;;) {
    if (s_->cur.root) {
      auto* calls = s_->cur.root->calls();
      if (calls && s_->pos < calls->size()) {
        s_->view = CallView(m.callOf(s_->seg - 1, calls->Get(s_->pos++)));
        return &s_->view;
      }
      s_->cur = {};  // done with it: freed before the next one is inflated
    }
    if (s_->seg >= m.segs.size()) return nullptr;
    s_->cur = m.segment(s_->seg++);
    s_->pos = 0;
  }
}

// ---- API names and blobs ----------------------------------------------------------------------
const ApiInfo* Reader::api(uint32_t id) const {
  std::call_once(impl_->apisOnce, [&] {
    auto own = [&](const flatbuffers::String* x) -> std::string_view { return impl_->apiStrings.emplace_back(sv(x)); };
    for (size_t i = 0; i < impl_->segs.size(); ++i) {
      Impl::SegmentFb seg;
      try {
        seg = impl_->segment(i);  // one at a time: the names are copied out
      } catch (const Error&) {
        continue;  // a damaged segment's names are lost; verify() reports it
      }
      if (!seg.root->apis()) continue;
      for (auto* d : *seg.root->apis()) {
        if (impl_->apiMap.count(d->id())) continue;
        ApiInfo a;
        a.id = d->id();
        a.interfaceName = own(d->interface());
        a.methodName = own(d->method());
        if (d->arg_names())
          for (auto* n : *d->arg_names()) a.argNames.push_back(own(n));
        impl_->apiMap.emplace(a.id, std::move(a));
      }
    }
  });
  auto it = impl_->apiMap.find(id);
  return it == impl_->apiMap.end() ? nullptr : &it->second;
}

std::vector<const ApiInfo*> Reader::apis() const {
  api(0);
  std::vector<const ApiInfo*> v;
  for (auto& [id, a] : impl_->apiMap) v.push_back(&a);
  return v;
}

bool Reader::hasBlob(const BlobRef& ref) const {
  return impl_->findBlob(ref) || (impl_->external && impl_->external->blobs.count(ref));
}
const BlobInfo* Reader::blobInfo(const BlobRef& ref) const { return impl_->findBlob(ref); }
void Reader::setExternalBlobs(std::shared_ptr<const ExternalBlobs> blobs) { impl_->external = std::move(blobs); }
const ExternalBlobs* Reader::externalBlobs() const { return impl_->external.get(); }
bool Reader::blobLost(const BlobRef& ref) const {
  const BlobInfo* b = impl_->findBlob(ref);
  return b && b->lost;
}
bool Reader::blobReplaced(const BlobRef& ref) const {
  const BlobInfo* b = impl_->findBlob(ref);
  return b && b->replaced;
}
uint64_t Reader::lostBlobs() const {
  uint64_t n = 0;
  for (const BlobInfo& b : impl_->blobs) n += b.lost && !b.replaced && impl_->findBlob(b.ref) == &b;  // no other copy
  return n;
}
BlobView Reader::blob(const Hash128& h, uint64_t len) const { return impl_->blob({h, len}, false); }
BlobView Reader::checkedBlob(const BlobRef& ref) const { return impl_->blob(ref, true); }
const std::vector<BlobInfo>& Reader::blobs() const { return impl_->blobs; }
std::span<const std::byte> Reader::mapping() const { return {impl_->base, impl_->size}; }
int Reader::mappedFd() const { return impl_->fd; }

Hash128 Reader::streamBlob(const BlobRef& ref, const BlobSink& sink) const {
  const BlobInfo& bi = impl_->locate(ref);  // framing, checksum, record
  if (bi.lost) impl_->blobError(ref, bi.offset, "stored Lost: the capture kept no bytes");
  if (bi.compressed) return detail::decodeBlob({impl_->path, impl_->base, bi}, nullptr, true, sink);
  // Hashed and handed on a piece at a time, each piece's pages released once the sink returns: a
  // copy of a 32 MiB blob holds 4 MiB of the mapping at a time, not 32.
  return files::hashReleasing(mapping(), bi.dataOffset, ref.length, nullptr, sink);
}

std::vector<bool> usedBlobs(const Reader& r, int64_t network) {
  const std::vector<BlobInfo>& all = r.blobs();
  std::vector<bool> used(all.size());
  try {
    r.forEachCall([&](const CallView& c) {
      if (network >= 0 && c.networkId() && c.networkId() != uint64_t(network)) return true;
      for (size_t i = 0; i < c.argCount(); ++i)
        if (const ValueView v = c.arg(i); v.kind() == ValueKind::WeightsBlob)
          if (const BlobInfo* b = r.blobInfo(v.blob())) used[size_t(b - all.data())] = true;
      return true;
    });
  } catch (const Error&) {}
  return used;
}

}  // namespace trtrace
