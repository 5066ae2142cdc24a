// Reader::verify: the full check of a trace, block by block (framing, checksums, padding, every
// segment and call, every blob decoded and hashed in one pass), then the footer index against the
// blocks and every blob reference against the blobs present; for a trace of the spec's library,
// every API descriptor and call against the spec (trtrace/call_check.h, the player's own check).
#include <map>
#include <set>
#include <tuple>

#include "blob_decode.h"
#include "block_file.h"
#include "reader_impl.h"
#include "trtrace/call_check.h"

namespace trtrace {
namespace F = format;
using detail::BlockCheck;
using P = VerifyReport::Problem;

namespace {

class Verifier {
 public:
  Verifier(const Reader::Impl& m, bool spec)
      : m_(m), closedHeader_(m.fh.fileLength != 0), cut_(closedHeader_ && m.fh.fileLength > m.size), spec_(spec) {}
  VerifyReport run(const std::function<void(uint64_t, uint64_t)>& progress);

 private:
  using BlobKey = std::tuple<uint64_t, uint64_t, uint64_t>;  // hash hi, hash lo, length
  void issue(P p, uint64_t off, const std::string& what) {
    rep_.issues.push_back({p, off, m_.path + ": offset " + std::to_string(off) + ": " + what});
  }
  // A damaged block in a closed file is corruption; in an open one, an incomplete block is a cut.
  P classify(BlockCheck::Status s) const {
    return s == BlockCheck::Truncated && (!closedHeader_ || cut_) ? P::Truncated : P::Corrupt;
  }
  std::string blockName(uint64_t pos, const BlockCheck& bc) const;
  bool block(uint64_t pos, const BlockCheck& bc);  // false: stop (after the footer)
  void segment(uint64_t pos, const BlockCheck& bc, const std::string& name);
  void againstSpec(uint64_t pos, const fb::Segment& s, const std::string& name);
  void blob(uint64_t pos, const std::string& name);
  void footer(uint64_t pos);
  void finish(uint64_t pos);

  const Reader::Impl& m_;
  const bool closedHeader_, cut_;
  const bool spec_;  // the trace names the spec's library: its API ids are this build's
  VerifyReport rep_;
  std::set<BlobKey> blobKeys_, lostKeys_;                                     // stored with bytes / stored Lost
  std::map<uint64_t, std::pair<uint64_t, uint64_t>> segOffsets_;              // offset -> first seq, calls
  std::map<uint64_t, std::tuple<uint64_t, uint16_t, uint16_t>> blobOffsets_;  // data offset, encoding, transform
  std::vector<std::pair<uint64_t, BlobRef>> refs_;                            // (seq, blob) referenced by calls
  uint64_t expectSeq_ = 0, footerAt_ = 0;
};

std::string Verifier::blockName(uint64_t pos, const BlockCheck& bc) const {
  if (!bc.headerValid) return "block";
  if (bc.h.type == uint16_t(F::BlockType::Segment)) return "segment " + std::to_string(rep_.segments);
  if (bc.h.type == uint16_t(F::BlockType::Blob) && bc.h.payloadSize >= sizeof(F::BlobRecord) &&
      bc.status != BlockCheck::Truncated) {
    auto r = detail::blobRecordAt(m_.base, pos);
    return detail::blobName({{r.hashLo, r.hashHi}, r.rawSize});
  }
  return detail::blockTypeName(bc.h.type);
}

VerifyReport Verifier::run(const std::function<void(uint64_t, uint64_t)>& progress) {
  if (m_.size < sizeof(F::FileHeader)) {
    issue(P::Truncated, 0, "truncated inside the file header");
    return rep_;
  }
  if (cut_)
    issue(P::Truncated, m_.size, "file is shorter than its recorded length " + std::to_string(m_.fh.fileLength));
  if (closedHeader_ && m_.fh.fileLength < m_.size)
    issue(P::Corrupt, m_.fh.fileLength, "bytes after the recorded file length");
  uint64_t pos = sizeof(F::FileHeader);
  while (pos < m_.size) {
    if (progress) progress(pos, m_.size);
    auto bc = detail::checkBlock(m_.base, m_.size, pos);
    if (bc.status != BlockCheck::Ok) {
      issue(classify(bc.status), pos, blockName(pos, bc) + ": " + bc.why);
      if (!bc.headerValid || bc.status != BlockCheck::Corrupt) break;
      if (bc.h.type == uint16_t(F::BlockType::Segment)) rep_.segments++;  // framing intact: go on
      pos = bc.next;
      continue;
    }
    const bool more = block(pos, bc);
    pos = bc.next;
    if (!more) break;
  }
  finish(pos);
  return std::move(rep_);
}

bool Verifier::block(uint64_t pos, const BlockCheck& bc) {
  switch (static_cast<F::BlockType>(bc.h.type)) {
    case F::BlockType::Header:
      if (pos != sizeof(F::FileHeader)) issue(P::Corrupt, pos, "header block in the wrong place");
      break;
    case F::BlockType::Segment: segment(pos, bc, blockName(pos, bc)); break;
    case F::BlockType::Blob: blob(pos, blockName(pos, bc)); break;
    case F::BlockType::Footer: footer(pos); return false;
  }
  return true;
}

// bc holds the segment (inflated if compressed) until the next block.
void Verifier::segment(uint64_t pos, const BlockCheck& bc, const std::string& name) {
  auto* s = flatbuffers::GetRoot<fb::Segment>(bc.fbuf);
  segOffsets_[pos] = {s->first_seq(), detail::callsIn(*s)};
  if (s->first_seq() != expectSeq_)
    issue(P::Corrupt, pos,
          name + ": first seq " + std::to_string(s->first_seq()) + ", expected " + std::to_string(expectSeq_));
  if (s->calls())
    for (auto* rec : *s->calls()) {
      const fb::Call* c = rec->call() ? rec->call_nested_root() : nullptr;
      if (!c) {
        issue(P::Corrupt, pos, name + ": empty call record");
        break;
      }
      if (c->seq() != expectSeq_)
        issue(P::Corrupt, pos, name + ": call seq " + std::to_string(c->seq()) + " out of order");
      expectSeq_ = c->seq() + 1;
      rep_.calls++;
      auto note = [&](const fb::Value* v) {
        if (v && v->kind() == fb::ValueKind::WeightsBlob)
          refs_.push_back({c->seq(), {{v->hash_lo(), v->hash_hi()}, v->length()}});
      };
      if (c->args())
        for (auto* v : *c->args()) note(v);
      note(c->ret());
    }
  if (spec_) againstSpec(pos, *s, name);
  rep_.segments++;
}

// The segment's API descriptors and calls, as the player checks them before a call (the first
// problem of each kind per segment: a hostile trace may hold millions).
void Verifier::againstSpec(uint64_t pos, const fb::Segment& s, const std::string& name) {
  if (s.apis())
    for (auto* d : *s.apis()) {
      ApiInfo a{d->id(), detail::sv(d->interface()), detail::sv(d->method()), {}};
      if (d->arg_names())
        for (auto* n : *d->arg_names()) a.argNames.push_back(detail::sv(n));
      if (std::string p = apiDescriptorProblem(a); !p.empty()) {
        issue(P::Corrupt, pos, name + ": " + p);
        break;
      }
    }
  if (s.calls())
    for (auto* rec : *s.calls()) {
      const fb::Call* c = rec->call() ? rec->call_nested_root() : nullptr;
      if (!c) break;
      if (std::string p = arrayCountProblem(CallView(c)); !p.empty()) {
        issue(P::Corrupt, pos, name + ": call " + std::to_string(c->seq()) + ": " + p);
        break;
      }
    }
}

void Verifier::blob(uint64_t pos, const std::string& name) {
  auto r = detail::blobRecordAt(m_.base, pos);
  BlobInfo bi;
  bi.ref = {{r.hashLo, r.hashHi}, r.rawSize};
  bi.offset = pos;
  bi.dataOffset = pos + sizeof(F::BlockHeader) + r.dataOffset;
  const bool lost = F::isBytelessEncoding(r.encoding);  // no bytes to check (format.h: Lost, Replaced)
  const bool replaced = r.encoding == uint16_t(F::BlobEncoding::Replaced);
  if (!lost) try {
      const Hash128 h = F::isRawEncoding(r.encoding) ? hash128(m_.base + bi.dataOffset, r.rawSize)
                                                     : detail::decodeBlob({m_.path, m_.base, bi}, nullptr,
                                                                          true);  // decoded and hashed in one pass
      if (!(h == bi.ref.hash)) issue(P::Corrupt, pos, name + ": content hash mismatch");
    } catch (const Error&) { issue(P::Corrupt, pos, name + ": cannot decode"); }
  // A key is stored at most once with bytes and at most once Lost.
  const BlobKey key{r.hashHi, r.hashLo, r.rawSize};
  if (!(lost ? lostKeys_ : blobKeys_).insert(key).second) issue(P::Corrupt, pos, name + ": stored twice");
  rep_.lostBlobs += lost && !replaced;
  rep_.lostBytes += lost && !replaced ? r.rawSize : 0;
  rep_.replacedBlobs += replaced;
  blobOffsets_[pos] = {bi.dataOffset, r.encoding, r.transform};
  rep_.blobs++;
  rep_.blobBytes += r.rawSize;
}

void Verifier::footer(uint64_t pos) {
  footerAt_ = pos;
  // An open file may end with its footer: the close stopped (crash, failed write) before the
  // file header was patched. Its blocks are whole: a clean prefix, as the reader treats it.
  if (closedHeader_ && m_.fh.footerOffset != pos) issue(P::Corrupt, pos, "footer: not where the file header says");
  auto* f = flatbuffers::GetRoot<fb::Footer>(m_.base + pos + sizeof(F::BlockHeader));
  size_t ns = f->segments() ? f->segments()->size() : 0, nb = f->blobs() ? f->blobs()->size() : 0;
  if (std::string why = detail::checkFooterIndex(*f, pos); !why.empty()) issue(P::Corrupt, pos, why);
  if (ns != segOffsets_.size() || nb != blobOffsets_.size() || f->total_calls() != rep_.calls)
    issue(P::Corrupt, pos, "footer: index counts disagree with the blocks");
  if (f->segments())
    for (auto* e : *f->segments()) {
      auto at = segOffsets_.find(e->offset());
      std::string why = at == segOffsets_.end() ? "points at no segment"
                                                : detail::checkSegmentEntry(e->first_seq(), e->calls(),
                                                                            at->second.first, at->second.second);
      if (!why.empty()) {
        issue(P::Corrupt, pos, "footer: segment entry at offset " + std::to_string(e->offset()) + ": " + why);
        break;
      }
    }
  if (f->blobs())
    for (auto* e : *f->blobs()) {
      auto at = blobOffsets_.find(e->offset());
      const BlobKey key{e->hash_hi(), e->hash_lo(), e->length()};
      if (at == blobOffsets_.end() || !(blobKeys_.count(key) || lostKeys_.count(key)) ||
          at->second != std::make_tuple(e->data_offset(), e->encoding(), e->transform())) {
        issue(P::Corrupt, pos, "footer: blob entry points at no such blob");
        break;
      }
    }
}

// What only the whole walk shows: the end of the file and references to missing blobs.
void Verifier::finish(uint64_t pos) {
  // Blobs outside the file (a JSON+BIN capture's BIN) are present too: each was hashed into its
  // key as its calls were converted, moments before, so only counted here.
  if (m_.external)
    for (const auto& [ref, bytes] : m_.external->blobs)
      if (blobKeys_.insert({ref.hash.hi, ref.hash.lo, ref.length}).second) rep_.blobs++, rep_.blobBytes += ref.length;
  if (pos > m_.size && !cut_) issue(P::Truncated, m_.size, "file ends inside the padding of its last block");
  if (footerAt_ && pos < m_.size && pos < m_.fh.fileLength) issue(P::Corrupt, pos, "blocks after the footer");
  if (closedHeader_ && !footerAt_ && !cut_ && rep_.ok()) issue(P::Corrupt, m_.fh.footerOffset, "footer missing");
  for (auto& [seq, ref] : refs_)
    if (!blobKeys_.count({ref.hash.hi, ref.hash.lo, ref.length}) &&
        !lostKeys_.count({ref.hash.hi, ref.hash.lo, ref.length})) {
      issue(closedHeader_ && !cut_ ? P::Corrupt : P::Truncated, 0,
            "call " + std::to_string(seq) + " references " + detail::blobName(ref) + ", which is not in the trace");
      break;
    }
}

}  // namespace

VerifyReport Reader::verify(const std::function<void(uint64_t, uint64_t)>& progress) const {
  return Verifier(*impl_, isSpecLibrary(*this)).run(progress);
}

VerifyReport verifyTrace(const Reader& reader, const std::function<void(uint64_t, uint64_t)>& progress) {
  VerifyReport rep = reader.verify(progress);
  if (rep.ok() && !reader.closedCleanly())
    rep.issues.push_back({VerifyReport::Problem::Truncated, reader.mapping().size(),
                          reader.path() +
                              ": not closed (the capture ended before closing it, or is still running); its " +
                              std::to_string(rep.calls) + " calls are a clean prefix"});
  return rep;
}

}  // namespace trtrace
