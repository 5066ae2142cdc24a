// trace_lies: closed traces whose declarations (sizes, counts) promise more than their bytes hold,
// for the tests that a reader's memory is bounded by the input, not by what it declares, and that
// a footer which lies is corruption for every tool. Every check field is recomputed, so only the
// declaration is wrong.
//
//   trace_lies zero-blob OUT RAW CHUNK      a builder, then a zstd blob no call uses: RAW zero bytes
//                                           in chunks of CHUNK raw bytes (one frame per chunk,
//                                           repeated: a few KiB of file for RAW = 1 GiB)
//   trace_lies zero-segment OUT RAW         a builder, then a compressed segment declaring RAW bytes
//                                           (a frame of RAW zeros: not a FlatBuffer)
//   trace_lies lost-blob OUT N              a builder, a network, then addConstant of N FLOAT
//                                           weights whose blob is stored Lost (reads as zeros)
//   trace_lies footer-calls OUT IN N        IN with the footer's total_calls set to N
//   trace_lies footer-segment OUT IN N      IN with segment entry 0 claiming N more calls than it
//                                           holds, total_calls raised to match
#include <xxhash.h>
#include <zstd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "crafted_trace.h"
#include "internal.h"
#include "trtrace/api_abi.h"
#include "trtrace/api_table.h"
#include "trtrace/format.h"
#include "trtrace/writer.h"

using namespace trtrace;
namespace F = format;
using Bytes = std::vector<std::byte>;
using craft::readAll;
using craft::writeAll;

namespace {

constexpr uint64_t kPiece = 1 << 20;  // zeros are hashed and compressed this many at a time

// A trace holding one call (createInferBuilder), closed.
Bytes builderTrace(const std::string& out) {
  craft::withBuilder(out, "trace_lies")->close();
  return readAll(out);
}

template <class T>
std::vector<T> copyOf(const flatbuffers::Vector<const T*>* v) {
  std::vector<T> out;
  if (v)
    for (const T* e : *v) out.push_back(*e);
  return out;
}

F::FileHeader fileHeader(const Bytes& b) {
  F::FileHeader fh;
  std::memcpy(&fh, b.data(), sizeof fh);
  return fh;
}

// Appends a block (header with its checks, payload, zero padding to the block alignment).
void appendBlock(Bytes& b, F::BlockType type, const Bytes& payload, uint64_t checked, uint16_t flags = 0) {
  const auto h =
      detail::makeBlockHeader(type, payload.size(), checked, detail::check32(payload.data(), checked), flags);
  const size_t at = b.size();
  b.resize(at + sizeof h);
  std::memcpy(b.data() + at, &h, sizeof h);
  b.insert(b.end(), payload.begin(), payload.end());
  b.resize(F::alignUp(b.size(), F::kBlockAlign));
}

// b (a closed trace) with `extra` blocks put before a new footer: the old footer's index, plus the
// entries given, with total_calls as given; the file header patched to say "complete".
void refooter(Bytes& b, const Bytes& extra, std::vector<fb::SegmentEntry> segs, std::vector<fb::BlobEntry> blobs,
              uint64_t totalCalls) {
  const F::FileHeader fh = fileHeader(b);
  auto* f = flatbuffers::GetRoot<fb::Footer>(b.data() + fh.footerOffset + sizeof(F::BlockHeader));
  const auto oldSegs = copyOf(f->segments());
  const auto oldBlobs = copyOf(f->blobs());
  segs.insert(segs.begin(), oldSegs.begin(), oldSegs.end());
  blobs.insert(blobs.begin(), oldBlobs.begin(), oldBlobs.end());
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(fb::CreateFooter(fbb, fbb.CreateVectorOfStructs(segs), fbb.CreateVectorOfStructs(blobs), totalCalls,
                              f->blob_puts(), f->blob_put_bytes()));
  b.resize(fh.footerOffset);
  b.insert(b.end(), extra.begin(), extra.end());
  const uint64_t footerAt = b.size();
  Bytes payload(fbb.GetSize());
  std::memcpy(payload.data(), fbb.GetBufferPointer(), payload.size());
  appendBlock(b, F::BlockType::Footer, payload, payload.size());
  const F::FileHeader closed = detail::makeFileHeader(b.size(), footerAt);
  std::memcpy(b.data(), &closed, sizeof closed);
}

uint64_t calls(const Bytes& b) {
  auto* f = flatbuffers::GetRoot<fb::Footer>(b.data() + fileHeader(b).footerOffset + sizeof(F::BlockHeader));
  return f->total_calls();
}

// One zstd frame of n zero bytes (content size declared), compressed a piece at a time.
Bytes zeroFrame(uint64_t n) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setPledgedSrcSize(c, n);
  static const Bytes zeros(kPiece);
  Bytes out, buf(ZSTD_CStreamOutSize());
  for (uint64_t done = 0;;) {
    const uint64_t take = std::min(kPiece, n - done);
    ZSTD_inBuffer in{zeros.data(), take, 0};
    const ZSTD_EndDirective end = done + take == n ? ZSTD_e_end : ZSTD_e_continue;
    size_t left;
    do {
      ZSTD_outBuffer o{buf.data(), buf.size(), 0};
      left = ZSTD_compressStream2(c, &o, &in, end);
      if (ZSTD_isError(left)) std::abort();
      out.insert(out.end(), buf.begin(), buf.begin() + long(o.pos));
    } while (end == ZSTD_e_end ? left != 0 : in.pos < in.size);
    done += take;
    if (end == ZSTD_e_end) break;
  }
  ZSTD_freeCCtx(c);
  return out;
}

XXH128_hash_t zeroHash(uint64_t n) {
  static const Bytes zeros(kPiece);
  XXH3_state_t* s = XXH3_createState();
  XXH3_128bits_reset(s);
  for (uint64_t done = 0; done < n; done += std::min(kPiece, n - done))
    XXH3_128bits_update(s, zeros.data(), std::min(kPiece, n - done));
  XXH128_hash_t h = XXH3_128bits_digest(s);
  XXH3_freeState(s);
  return h;
}

// A zstd blob of `raw` zeros in chunks of `chunk` (each chunk's frame stored in turn), its record
// declaring `transform` (format::BlobTransform: zeros grouped are zeros).
void zeroBlob(const std::string& out, uint64_t raw, uint64_t chunk, uint16_t transform) {
  Bytes b = builderTrace(out);
  const uint32_t n = uint32_t((raw + chunk - 1) / chunk);
  const Bytes full = zeroFrame(chunk), last = raw % chunk ? zeroFrame(raw % chunk) : full;
  const XXH128_hash_t h = zeroHash(raw);
  F::BlobRecord r{};
  r.hashLo = h.low64;
  r.hashHi = h.high64;
  r.rawSize = raw;
  r.dataOffset = sizeof r + uint64_t(n) * sizeof(F::ChunkEntry);
  r.encoding = uint16_t(F::BlobEncoding::Zstd);
  r.transform = transform;
  r.chunkCount = n;
  r.chunkRawSize = uint32_t(chunk);
  Bytes table(n * sizeof(F::ChunkEntry)), data;
  for (uint32_t c = 0; c < n; ++c) {
    const Bytes& fr = c + 1 == n ? last : full;
    const F::ChunkEntry e{data.size(), uint32_t(fr.size()), 1};
    std::memcpy(table.data() + c * sizeof e, &e, sizeof e);
    data.insert(data.end(), fr.begin(), fr.end());
  }
  r.storedSize = data.size();
  Bytes payload(sizeof r);
  std::memcpy(payload.data(), &r, sizeof r);
  payload.insert(payload.end(), table.begin(), table.end());
  payload.insert(payload.end(), data.begin(), data.end());
  Bytes block;
  appendBlock(block, F::BlockType::Blob, payload, r.dataOffset);
  const uint64_t at = fileHeader(b).footerOffset;
  const fb::BlobEntry e(r.hashLo, r.hashHi, raw, at, r.storedSize, at + sizeof(F::BlockHeader) + r.dataOffset,
                        r.encoding, 0, 0);
  refooter(b, block, {}, {e}, calls(b));
  writeAll(out, b);
}

// A compressed segment block declaring `raw` bytes: a frame of that many zeros, its checks right.
void zeroSegment(const std::string& out, uint64_t raw) {
  Bytes b = builderTrace(out);
  const Bytes frame = zeroFrame(raw);
  F::SegmentZstdHeader zh{raw, 0, 0};
  XXH3_state_t* s = XXH3_createState();  // rawCheck: low 32 bits of XXH3-64 of the zeros
  XXH3_64bits_reset(s);
  static const Bytes zeros(kPiece);
  for (uint64_t done = 0; done < raw; done += std::min(kPiece, raw - done))
    XXH3_64bits_update(s, zeros.data(), std::min(kPiece, raw - done));
  zh.rawCheck = uint32_t(XXH3_64bits_digest(s));
  XXH3_freeState(s);
  Bytes payload(sizeof zh);
  std::memcpy(payload.data(), &zh, sizeof zh);
  payload.insert(payload.end(), frame.begin(), frame.end());
  Bytes block;
  appendBlock(block, F::BlockType::Segment, payload, payload.size(), F::kSegmentZstd);
  const uint64_t n = calls(b);
  refooter(b, block, {fb::SegmentEntry(fileHeader(b).footerOffset, n, 0, 1)}, {}, n);
  writeAll(out, b);
}

// IN with segment entry 0 claiming `more` calls more (and total_calls to match), or with
// total_calls alone set to `total` (more = 0).
void footerLie(const std::string& out, const std::string& in, uint64_t more, uint64_t total) {
  Bytes b = readAll(in);
  const F::FileHeader fh = fileHeader(b);
  auto* f = flatbuffers::GetRoot<fb::Footer>(b.data() + fh.footerOffset + sizeof(F::BlockHeader));
  std::vector<fb::SegmentEntry> segs = copyOf(f->segments());
  const std::vector<fb::BlobEntry> blobs = copyOf(f->blobs());
  if (more) {
    segs[0] =
        fb::SegmentEntry(segs[0].offset(), segs[0].first_seq(), segs[0].calls() + uint32_t(more), segs[0].index());
    for (auto& e : segs)
      if (&e != &segs[0]) e = fb::SegmentEntry(e.offset(), e.first_seq() + more, e.calls(), e.index());
    total = f->total_calls() + more;
  }
  Bytes kept(b.begin(), b.begin() + long(fh.footerOffset));
  flatbuffers::FlatBufferBuilder fbb;
  fbb.Finish(fb::CreateFooter(fbb, fbb.CreateVectorOfStructs(segs), fbb.CreateVectorOfStructs(blobs), total,
                              f->blob_puts(), f->blob_put_bytes()));
  Bytes payload(fbb.GetSize());
  std::memcpy(payload.data(), fbb.GetBufferPointer(), payload.size());
  appendBlock(kept, F::BlockType::Footer, payload, payload.size());
  const F::FileHeader closed = detail::makeFileHeader(kept.size(), fh.footerOffset);
  std::memcpy(kept.data(), &closed, sizeof closed);
  writeAll(out, kept);
}

void lostBlob(const std::string& out, uint64_t n) {
  auto w = craft::withBuilder(out, "trace_lies");
  craft::addNetwork(*w);
  const XXH128_hash_t k = XXH3_128bits("gone", 4);  // the key of bytes the capture never read
  const BlobRef ref{{k.low64, k.high64}, n * 4};
  w->putLostBlob(ref);
  const int64_t dims[] = {int64_t(n)};
  w->beginCall(api::kNetworkDefinition_addConstant, 2, 1)
      .argDims(dims)
      .argWeightsBlob(uint32_t(abi::DataType::kFLOAT), n, ref)
      .retHandle(3)
      .endCall();
  w->close();
}

int usage() {
  std::fprintf(stderr,
               "usage: trace_lies zero-blob|zero-segment|lost-blob|footer-calls|footer-segment ... (see the source)\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string what = argv[1], out = argv[2];
  auto num = [&](int i) { return std::strtoull(argv[i], nullptr, 0); };
  if (what == "zero-blob" && (argc == 5 || argc == 6))
    zeroBlob(out, num(3), num(4), argc == 6 ? uint16_t(num(5)) : 0);
  else if (what == "zero-segment" && argc == 4)
    zeroSegment(out, num(3));
  else if (what == "lost-blob" && argc == 4)
    lostBlob(out, num(3));
  else if (what == "footer-calls" && argc == 5)
    footerLie(out, argv[3], 0, num(4));
  else if (what == "footer-segment" && argc == 5)
    footerLie(out, argv[3], num(4), 0);
  else
    return usage();
  return 0;
}
