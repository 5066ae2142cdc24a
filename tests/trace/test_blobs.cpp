// Blob store: dedup, compression decision both ways, byte grouping, chunking, alignment,
// zero-copy views, bounded writer memory.
#include <filesystem>
#include <gtest/gtest.h>

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <fstream>
#include <functional>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"
#include "trtrace/format.h"
#include "../../trace/src/compression_odds.h"

using namespace trtrace;

namespace {

bool sameBytes(const BlobView& v, const std::vector<std::byte>& b) {
  return v.size() == b.size() && std::equal(b.begin(), b.end(), v.bytes().begin());
}

bool insideMapping(const Reader& r, const BlobView& v) {
  auto m = r.mapping();
  auto* p = static_cast<const std::byte*>(v.data());
  return p >= m.data() && p + v.size() <= m.data() + m.size();
}

}  // namespace

TEST(Blobs, DedupAcrossCalls) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto a = tt::randomBytes(100000, 1), b = tt::randomBytes(100000, 2);
  auto aCopy = a;  // same content at another address
  {
    WriterOptions o;
    o.path = path;
    auto w = Writer::create(o, tt::header());
    for (int i = 0; i < 10; ++i) {
      auto& src = i % 2 ? a : aCopy;
      auto ref = w->putBlob(src.data(), src.size());
      w->beginCall(1, 0, 0).argWeightsBlob(0, src.size(), ref).endCall();
    }
    auto rb = w->putBlob(b.data(), b.size());
    auto rbShort = w->putBlob(b.data(), b.size() - 1);  // same prefix, other length: another blob
    EXPECT_NE(rb, rbShort);
    w->beginCall(1, 0, 0).argWeightsBlob(0, b.size(), rb).endCall();
    w->close();
    auto st = w->stats();
    EXPECT_EQ(st.blobPuts, 12u);
    EXPECT_EQ(st.uniqueBlobs, 3u);
    EXPECT_EQ(st.uniqueBytes, 300000u - 1);
  }
  auto r = Reader::open(path);
  EXPECT_EQ(r->blobs().size(), 3u);
  EXPECT_TRUE(sameBytes(r->blob(hash128(a.data(), a.size()), a.size()), a));
  EXPECT_TRUE(sameBytes(r->blob(hash128(b.data(), b.size() - 1), b.size() - 1),
                        std::vector<std::byte>(b.begin(), b.end() - 1)));
  // The file holds each blob once: well under two copies of a.
  EXPECT_LT(r->mapping().size(), 3 * 100000u + 64 * 1024);
  EXPECT_THROW(r->blob(Hash128{1, 2}, 3), Error);
}

TEST(Blobs, CompressionKeptWhenItSaves) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto z = tt::zeros(1 << 20);
  auto f = tt::floatBytes(1 << 18, 3);
  {
    WriterOptions o;
    o.path = path;
    o.chunkBytes = 256 << 10;  // several chunks
    auto w = Writer::create(o, tt::header());
    w->putBlob(z.data(), z.size(), BlobHint::None);
    w->putBlob(f.data(), f.size(), BlobHint::F32);
    w->close();
    EXPECT_EQ(w->stats().compressedBlobs, 2u);
    EXPECT_LT(w->stats().storedBytes, (z.size() + f.size()) * 9 / 10);
  }
  auto r = Reader::open(path);
  for (auto& b : r->blobs()) {
    EXPECT_TRUE(b.compressed);
    auto v = r->blob(b.ref);
    EXPECT_FALSE(v.isZeroCopy());
    EXPECT_TRUE(sameBytes(v, b.ref.hash == hash128(z.data(), z.size()) ? z : f));
  }
  EXPECT_TRUE(r->verify().ok());
}

// After CompressionOdds::kGiveUpAfter blobs of a kind whose compression was not kept, only every
// kProbeEvery-th blob of that kind is tried; a kept one starts over (trace/src/compression_odds.h).
TEST(Blobs, CompressionOddsGiveUpOnAKindAndProbeIt) {
  using detail::CompressionOdds;
  CompressionOdds odds;
  int tried = 0;
  for (uint32_t i = 0; i < CompressionOdds::kGiveUpAfter; ++i) {
    ASSERT_TRUE(odds.worthTrying(BlobHint::F32, true));
    odds.tried(BlobHint::F32, true, false);
  }
  for (uint32_t i = 0; i < 10 * CompressionOdds::kProbeEvery; ++i)
    if (odds.worthTrying(BlobHint::F32, true)) ++tried, odds.tried(BlobHint::F32, true, false);
  EXPECT_EQ(tried, 10);
  EXPECT_TRUE(odds.worthTrying(BlobHint::BF16, true));  // another kind keeps its own odds
  EXPECT_TRUE(odds.worthTrying(BlobHint::F32, false));  // and so do the kind's blobs of 1 MiB or more
  odds.tried(BlobHint::F32, true, true);                // a probe that paid: every blob is tried again
  EXPECT_TRUE(odds.worthTrying(BlobHint::F32, true));
  EXPECT_TRUE(odds.worthTrying(BlobHint::F32, true));
}

// Through the writer: 40 incompressible fp32 blobs, then 40 that compress (fp32 with their
// low mantissa bytes zero). The first are given up
// on; a probe finds the others, and from there each of them is stored compressed.
// tryEveryBlob (`trtrace rewrite --compress`): no kind is given up on, so every blob that pays is
// stored compressed.
TEST(Blobs, CompressionFoundAgainWhenAKindStartsToCompress) {
  for (bool everyBlob : {false, true}) {
    SCOPED_TRACE(everyBlob ? "tryEveryBlob" : "default");
    tt::TempDir d;
    auto path = d.path("t.trace");
    WriterOptions o;
    o.path = path;
    o.workerThreads = 0;  // in order, on this thread
    o.tryEveryBlob = everyBlob;
    auto w = Writer::create(o, tt::header());
    std::vector<std::vector<std::byte>> keep;
    for (uint64_t i = 0; i < 40; ++i) {
      keep.push_back(tt::randomBytes(64 << 10, 100 + i));
      w->putBlob(keep.back().data(), keep.back().size(), BlobHint::F32);
    }
    EXPECT_EQ(w->stats().compressedBlobs, 0u);
    for (uint64_t i = 0; i < 40; ++i) {
      keep.push_back(tt::floatBytes(16 << 10, 200 + i));
      for (size_t b = 0; b < keep.back().size(); b += 4) keep.back()[b] = keep.back()[b + 1] = std::byte{0};
      w->putBlob(keep.back().data(), keep.back().size(), BlobHint::F32);
    }
    w->close();
    EXPECT_GE(w->stats().compressedBlobs, everyBlob ? 40u : 40u - detail::CompressionOdds::kProbeEvery);
    EXPECT_TRUE(Reader::open(path)->verify().ok());
  }
}

namespace {

// The blobs written with `o` (each with hint h), then the trace opened and verified.
std::unique_ptr<Reader> writeBlobs(const WriterOptions& o, const std::vector<std::vector<std::byte>>& blobs,
                                   BlobHint h = BlobHint::None) {
  auto w = Writer::create(o, tt::header());
  for (const auto& b : blobs) w->putBlob(b.data(), b.size(), h);
  w->close();
  auto r = Reader::open(o.path);
  EXPECT_TRUE(r->verify().ok());
  return r;
}

}  // namespace

// WriterOptions::rawBacklogBytes: while a 32 MiB blob is being compressed the application queues
// 48 small ones behind it; each of those taken with 1 MiB or more still queued behind it is stored
// raw, where the same trace without the option compresses them all. A 2 MiB blob queued before
// them keeps its compression (the bound is for blobs under 1 MiB).
TEST(Blobs, ABacklogOfSmallBlobsIsStoredRaw) {
  auto compressible = [](size_t bytes, uint64_t seed) {
    auto v = tt::floatBytes(bytes / 4, seed);
    for (size_t b = 0; b < v.size(); b += 4) v[b] = v[b + 1] = std::byte{0};
    return v;
  };
  std::vector<std::vector<std::byte>> keep{compressible(32 << 20, 1), compressible(2 << 20, 2)};
  for (uint64_t i = 0; i < 48; ++i) keep.push_back(compressible(64 << 10, 10 + i));
  for (uint64_t backlog : {uint64_t{0}, uint64_t{1} << 20}) {
    SCOPED_TRACE(backlog ? "rawBacklogBytes = 1 MiB" : "no bound");
    tt::TempDir d;
    WriterOptions o;
    o.path = d.path("t.trace");
    o.workerThreads = 1;
    o.rawBacklogBytes = backlog;
    auto r = writeBlobs(o, keep, BlobHint::F32);
    size_t smallCompressed = 0, bigCompressed = 0;
    for (const auto& b : r->blobs()) (b.ref.length < (1 << 20) ? smallCompressed : bigCompressed) += b.compressed;
    EXPECT_EQ(bigCompressed, 2u);
    if (backlog)
      EXPECT_LT(smallCompressed, 48u - 8u);  // at least the first 8 saw 40 (2.5 MiB) queued behind
    else
      EXPECT_EQ(smallCompressed, 48u);
  }
}

// WriterOptions::smallMinSaving: blobs that zstd shrinks by ~8% stay compressed at the default 5%
// bar; with the bar for blobs under 1 MiB at 10% (a capture's), the 512 KiB one is stored raw and
// the 2 MiB one, held to minSaving, stays compressed.
TEST(Blobs, SmallBlobsHaveTheirOwnBar) {
  auto eightPercentZeros = [](size_t bytes, uint64_t seed) {
    auto v = tt::randomBytes(bytes, seed);
    std::fill(v.begin(), v.begin() + bytes * 8 / 100, std::byte{0});
    return v;
  };
  const std::vector<std::vector<std::byte>> blobs{eightPercentZeros(512 << 10, 1), eightPercentZeros(2 << 20, 2)};
  for (double smallBar : {0.05, 0.10}) {
    SCOPED_TRACE(smallBar);
    tt::TempDir d;
    WriterOptions o;
    o.path = d.path("t.trace");
    o.workerThreads = 0;
    o.smallMinSaving = smallBar;
    auto r = writeBlobs(o, blobs);
    for (const auto& b : r->blobs())
      EXPECT_EQ(b.compressed, b.ref.length > (1 << 20) || smallBar < 0.1) << b.ref.length;
  }
}

TEST(Blobs, CompressionDroppedWhenItDoesNot) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto rnd = tt::randomBytes(1 << 20, 4);
  // 3% saving: below the 5% threshold, so stored raw.
  auto mostly = tt::randomBytes(1 << 20, 5);
  std::fill(mostly.begin(), mostly.begin() + (1 << 20) * 3 / 100, std::byte{0});
  {
    WriterOptions o;
    o.path = path;
    o.minSaving = 0.05;
    auto w = Writer::create(o, tt::header());
    w->putBlob(rnd.data(), rnd.size());
    w->putBlob(mostly.data(), mostly.size());
    w->close();
    EXPECT_EQ(w->stats().compressedBlobs, 0u);
  }
  auto r = Reader::open(path);
  ASSERT_EQ(r->blobs().size(), 2u);
  for (auto& b : r->blobs()) {
    EXPECT_FALSE(b.compressed);
    EXPECT_EQ(b.storedSize, b.ref.length);
  }
  EXPECT_TRUE(sameBytes(r->blob(hash128(rnd.data(), rnd.size()), rnd.size()), rnd));
}

// Raw blobs of 64 KiB and more start on a 4 KiB boundary of the file (page-aligned views); smaller
// ones (RawSmall, format 2.3) on a 64-byte one, so small weights cost no page of padding each.
TEST(Blobs, RawBlobsAreAlignedAndPointIntoTheMapping) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  std::vector<std::vector<std::byte>> blobs;
  for (size_t n : {1u, 100u, 4095u, 4096u, 4097u, 65535u, 65536u, 70000u}) blobs.push_back(tt::randomBytes(n, n));
  {
    WriterOptions o;
    o.path = path;
    o.zstdLevel = 0;  // everything raw
    o.workerThreads = 2;
    auto w = Writer::create(o, tt::header());
    for (auto& b : blobs) w->putBlob(b.data(), b.size());
    w->close();
  }
  auto r = Reader::open(path);
  auto m = r->mapping();
  ASSERT_EQ(reinterpret_cast<uintptr_t>(m.data()) % 4096, 0u);
  for (auto& b : blobs) {
    const uint64_t align = b.size() < format::kSmallBlobMax ? format::kSmallBlobAlign : format::kBlobAlign;
    auto v = r->blob(hash128(b.data(), b.size()), b.size());
    EXPECT_TRUE(v.isZeroCopy());
    EXPECT_TRUE(insideMapping(*r, v));
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % align, 0u) << b.size();
    EXPECT_EQ((static_cast<const std::byte*>(v.data()) - m.data()) % align, 0) << b.size();
    EXPECT_TRUE(sameBytes(v, b));
  }
  EXPECT_TRUE(r->verify().ok());
}

// Issue 16: 1000 small raw weights take about their own bytes plus a record each, not a page each.
TEST(Blobs, SmallRawBlobsCostNoPagePadding) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  std::vector<std::vector<std::byte>> blobs;
  for (size_t i = 0; i < 1000; ++i) blobs.push_back(tt::randomBytes(128, 1000 + i));
  {
    WriterOptions o;
    o.path = path;
    o.zstdLevel = 0;
    auto w = Writer::create(o, tt::header());
    for (auto& b : blobs) w->putBlob(b.data(), b.size());
    w->close();
  }
  auto r = Reader::open(path);
  uint64_t stored = 0;
  for (auto& bi : r->blobs()) stored += bi.storedSize;
  EXPECT_EQ(stored, 128000u);
  // Per blob: 32 B block header + 64 B record + padding to 64 B + 128 B of data; plus the footer.
  EXPECT_LE(std::filesystem::file_size(path), 1000u * 256u + 96u * 1024u);
  EXPECT_TRUE(r->verify().ok());
  for (auto& b : blobs) EXPECT_TRUE(sameBytes(r->checkedBlob({hash128(b.data(), b.size()), b.size()}), b));
}

TEST(Blobs, ByteGroupingRoundTripsEveryElementType) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto f32 = tt::floatBytes(50001, 1);
  std::vector<std::byte> f16(f32.begin(), f32.begin() + 60002), odd(f32.begin(), f32.begin() + 60001);
  {
    WriterOptions o;
    o.path = path;
    o.chunkBytes = 16384;  // last chunk partial
    o.minSaving = 0;
    auto w = Writer::create(o, tt::header());
    w->putBlob(f32.data(), f32.size(), BlobHint::F32);
    w->putBlob(f16.data(), f16.size(), BlobHint::F16);
    w->putBlob(odd.data(), odd.size(), BlobHint::BF16);  // odd length: no grouping
    w->close();
  }
  auto r = Reader::open(path);
  EXPECT_TRUE(sameBytes(r->blob(hash128(f32.data(), f32.size()), f32.size()), f32));
  EXPECT_TRUE(sameBytes(r->blob(hash128(f16.data(), f16.size()), f16.size()), f16));
  EXPECT_TRUE(sameBytes(r->blob(hash128(odd.data(), odd.size()), odd.size()), odd));
  EXPECT_TRUE(r->verify().ok());
}

TEST(Blobs, ByteGroupingImprovesFloatCompression) {
  tt::TempDir d;
  auto f = tt::floatBytes(1 << 18, 9);
  uint64_t stored[2];
  for (int g = 0; g < 2; ++g) {
    WriterOptions o;
    o.path = d.path("t" + std::to_string(g));
    o.byteGrouping = g == 1;
    o.minSaving = 0;
    auto w = Writer::create(o, tt::header());
    w->putBlob(f.data(), f.size(), BlobHint::F32);
    w->close();
    stored[g] = w->stats().storedBytes;
  }
  EXPECT_LT(stored[1], stored[0]);
}

TEST(Blobs, LargeBlobsStreamUnderTheLockBothWays) {
  // Over the 16 MiB in-memory limit: compressed output is streamed; an incompressible blob
  // is first streamed compressed, then rewritten raw in place.
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto rnd = tt::randomBytes(40 << 20, 11);
  auto half = tt::randomBytes(40 << 20, 12);
  for (size_t i = 0; i < half.size(); ++i) half[i] &= std::byte{0x0F};
  {
    WriterOptions o;
    o.path = path;
    o.zstdLevel = 1;
    o.workerThreads = 2;
    auto w = Writer::create(o, tt::header());
    w->putBlob(rnd.data(), rnd.size());
    w->putBlob(half.data(), half.size());
    w->close();
    EXPECT_EQ(w->stats().compressedBlobs, 1u);
  }
  auto r = Reader::open(path);
  auto a = r->blob(hash128(rnd.data(), rnd.size()), rnd.size());
  EXPECT_TRUE(a.isZeroCopy());
  EXPECT_TRUE(sameBytes(a, rnd));
  auto b = r->blob(hash128(half.data(), half.size()), half.size());
  EXPECT_FALSE(b.isZeroCopy());
  EXPECT_TRUE(sameBytes(b, half));
  EXPECT_TRUE(r->verify().ok());
}

namespace {
uint64_t procStatusKb(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind(key, 0) == 0) return std::stoull(line.substr(std::strlen(key)));
  return 0;
}
}  // namespace

TEST(Blobs, WriterMemoryStaysBoundedWhileStreaming) {
  // 768 MiB of generated weights through a 16 MiB app buffer: the writer must not hold on to
  // them. Peak RSS growth is asserted against a ceiling far below the volume written.
  tt::TempDir d;
  auto path = d.path("big.trace");
  const size_t kBlob = 16 << 20, kBlobs = 48;
  std::vector<std::byte> buf(kBlob);
  std::ofstream("/proc/self/clear_refs") << "5";  // reset the peak (VmHWM) where supported
  uint64_t base = procStatusKb("VmRSS:");
  {
    WriterOptions o;
    o.path = path;
    o.zstdLevel = 1;
    o.workerThreads = 2;
    o.queueBytes = 32 << 20;
    auto w = Writer::create(o, tt::header());
    for (size_t i = 0; i < kBlobs; ++i) {
      // Alternate compressible and incompressible content, all distinct.
      uint64_t x = i * 0x9E3779B97F4A7C15ull + 1;
      for (size_t k = 0; k < kBlob; k += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t v = i % 2 ? x : (x & 0x0F0F0F0F0F0F0F0Full);
        std::memcpy(buf.data() + k, &v, 8);
      }
      auto ref = w->putBlob(buf.data(), buf.size(), BlobHint::None);
      w->beginCall(1, 0, 0).argWeightsBlob(0, kBlob, ref).endCall();
      w->drainBlobs();  // the app reuses its buffer
    }
    w->close();
    EXPECT_EQ(w->stats().uniqueBytes, kBlob * kBlobs);
  }
  uint64_t peak = procStatusKb("VmHWM:");
  EXPECT_LT(peak - std::min(peak, base), 160u * 1024) << "peak RSS grew by " << (peak - base) / 1024 << " MiB";
  auto r = Reader::open(path);
  EXPECT_EQ(r->blobs().size(), kBlobs);
}

// checkedBlob and verify decode a compressed blob and hash it in the same pass (blob_decode.cpp):
// the bytes checkedBlob returns are the decoded ones, and a change in a chunk that still decodes
// (a chunk stored raw inside a compressed blob; its data is covered by the hash only) is caught
// by both, for a plain and for a byte-grouped blob.
TEST(Blobs, CheckedBlobHashesWhileDecodingAndCatchesDamage) {
  for (BlobHint hint : {BlobHint::None, BlobHint::F32}) {
    SCOPED_TRACE(int(hint));
    tt::TempDir d;
    auto path = d.path("t.trace");
    auto bytes = tt::zeros(3 * 4096);  // chunk 0 compresses; chunk 1 is random: stored raw; chunk 2 compresses
    auto noise = tt::randomBytes(4096, 7);
    std::copy(noise.begin(), noise.end(), bytes.begin() + 4096);
    BlobRef ref;
    {
      WriterOptions o;
      o.path = path;
      o.chunkBytes = 4096;
      o.minCompressBytes = 0;
      auto w = Writer::create(o, tt::header());
      ref = w->putBlob(bytes.data(), bytes.size(), hint);
      w->close();
    }
    {
      auto r = Reader::open(path);
      ASSERT_TRUE(r->blobs().at(0).compressed);
      EXPECT_TRUE(sameBytes(r->checkedBlob(ref), bytes));
      EXPECT_TRUE(r->verify().ok());
    }
    // Flip one byte of the raw chunk (chunk 1) in the file.
    auto file = tt::readFile(path);
    const uint64_t at = Reader::open(path)->blobs().at(0).offset;
    format::BlobRecord rec;
    std::memcpy(&rec, file.data() + at + sizeof(format::BlockHeader), sizeof rec);
    ASSERT_EQ(rec.chunkCount, 3u);
    format::ChunkEntry chunk1;
    std::memcpy(&chunk1, file.data() + at + sizeof(format::BlockHeader) + sizeof rec + sizeof chunk1, sizeof chunk1);
    ASSERT_EQ(chunk1.flags & 1, 0u);  // stored raw
    file[at + sizeof(format::BlockHeader) + rec.dataOffset + chunk1.offset + 100] ^= std::byte{0x5a};
    tt::writeFile(path, file.data(), file.size());

    auto r = Reader::open(path);
    EXPECT_FALSE(sameBytes(r->blob(ref), bytes));  // unchecked: decodes, the change passes through
    try {
      r->checkedBlob(ref);
      ADD_FAILURE() << "checkedBlob accepted damaged weights";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), Error::Kind::Corrupt);
      EXPECT_EQ(std::string(e.what()), path + ": blob " + toHex(ref.hash) + " (" + std::to_string(bytes.size()) +
                                           " B) at offset " + std::to_string(at) +
                                           ": content does not match its hash (damaged weights)");
    }
    auto rep = r->verify();
    ASSERT_EQ(rep.issues.size(), 1u);
    EXPECT_NE(rep.issues[0].what.find("content hash mismatch"), std::string::npos) << rep.issues[0].what;
  }
}

// Reader::streamBlob hands a blob's stored bytes over in pieces with their XXH3-128 (what the
// player's decode cache is written from): raw or compressed, the same bytes as checkedBlob, and
// damage is an Error naming the blob.
TEST(Blobs, StreamBlobHandsTheStoredBytesWithTheirHash) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto raw = tt::randomBytes(300 << 10, 7), packed = tt::zeros(9 << 20);  // stored raw; compressed in 3 chunks
  {
    WriterOptions o;
    o.path = path;
    auto w = Writer::create(o, tt::header());
    for (auto* b : {&raw, &packed}) w->putBlob(b->data(), b->size());
    w->close();
  }
  auto r = Reader::open(path);
  for (auto* b : {&raw, &packed}) {
    const BlobRef ref{hash128(b->data(), b->size()), b->size()};
    std::vector<std::byte> got(b->size());
    uint64_t pieces = 0;
    const Hash128 h = r->streamBlob(ref, [&](const std::byte* p, uint64_t off, uint64_t n) {
      ASSERT_LE(off + n, got.size());
      std::memcpy(got.data() + off, p, n);
      ++pieces;
    });
    EXPECT_EQ(h, ref.hash);
    EXPECT_EQ(got, *b);
    EXPECT_EQ(r->blobInfo(ref)->compressed, b == &packed);
    EXPECT_EQ(pieces, b == &packed ? 3u : 1u);  // a compressed blob: chunk by chunk, never whole
  }
  const BlobRef absent{hash128("x", 1), 1};
  EXPECT_EQ(r->blobInfo(absent), nullptr);
  EXPECT_THROW(r->streamBlob(absent, [](const std::byte*, uint64_t, uint64_t) {}), Error);
}

// A byte-grouped blob streams in 256 KiB pieces, in order and back to back, each ungrouped from
// the chunk's planes: a decoding thread holds one chunk and one piece, not two chunks. Its last
// chunk is random, stored as it is, and ungrouped straight from the mapping, streamed or whole.
TEST(Blobs, StreamBlobHandsAByteGroupedBlobOverInPieces) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  std::vector<float> v((9 << 20) / 4);  // 9 MiB: chunks of 4, 4 and 1 MiB
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 4099) * 0.25f;
  const auto noise = tt::randomBytes(1 << 20, 3);
  std::memcpy(v.data() + (8 << 20) / 4, noise.data(), noise.size());
  {
    WriterOptions o;
    o.path = path;
    auto w = Writer::create(o, tt::header());
    w->putBlob(v.data(), v.size() * 4, BlobHint::F32);
    w->close();
  }
  auto r = Reader::open(path);
  const BlobRef ref{hash128(v.data(), v.size() * 4), v.size() * 4};
  ASSERT_TRUE(r->blobInfo(ref) && r->blobInfo(ref)->compressed);
  std::vector<std::byte> got;
  const Hash128 h = r->streamBlob(ref, [&](const std::byte* p, uint64_t off, uint64_t n) {
    ASSERT_EQ(off, got.size());  // in order, nothing skipped
    ASSERT_LE(n, 256u << 10);
    got.insert(got.end(), p, p + n);
  });
  EXPECT_EQ(h, ref.hash);
  ASSERT_EQ(got.size(), ref.length);
  EXPECT_EQ(std::memcmp(got.data(), v.data(), got.size()), 0);
  EXPECT_TRUE(sameBytes(r->checkedBlob(ref), got));
}

// Format 2.4 Lost blobs (format.h): a key stored with no bytes reads as zeros, verify counts it
// without calling it damage, and a second copy of the same key with bytes is preferred.
TEST(Blobs, LostBlobsReadAsZerosAndAStoredCopyWins) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto gone = tt::randomBytes(70000, 7), back = tt::randomBytes(5000, 8);
  const BlobRef goneRef{hash128(gone.data(), gone.size()), gone.size()};
  const BlobRef backRef{hash128(back.data(), back.size()), back.size()};
  {
    WriterOptions o;
    o.path = path;
    auto w = Writer::create(o, tt::header());
    w->putLostBlob(goneRef, BlobHint::F32);
    w->putLostBlob(backRef);
    EXPECT_EQ(w->putBlob(back.data(), back.size()), backRef);  // passed again, with its bytes
    w->beginCall(1, 0, 0).argWeightsBlob(0, gone.size(), goneRef).argWeightsBlob(0, back.size(), backRef).endCall();
    w->close();
    EXPECT_EQ(w->stats().lostBlobs, 2u);
    EXPECT_EQ(w->stats().lostBytes, gone.size() + back.size());
  }
  auto r = Reader::open(path);
  const VerifyReport rep = r->verify();
  EXPECT_TRUE(rep.ok()) << (rep.issues.empty() ? "" : rep.issues[0].what);
  EXPECT_EQ(rep.blobs, 3u);
  EXPECT_EQ(rep.lostBlobs, 2u);
  EXPECT_EQ(r->lostBlobs(), 1u);  // `back` has a stored copy
  EXPECT_TRUE(r->blobLost(goneRef));
  EXPECT_FALSE(r->blobLost(backRef));
  const BlobView z = r->checkedBlob(goneRef);
  ASSERT_EQ(z.size(), gone.size());
  EXPECT_TRUE(std::all_of(z.bytes().begin(), z.bytes().end(), [](std::byte b) { return b == std::byte{0}; }));
  EXPECT_TRUE(sameBytes(r->checkedBlob(backRef), back));
}

// A blob whose first buffer changes or is unmapped before a worker reads it is read from a second
// buffer passed with the same bytes while it was queued (a dedup hit), not stored Lost. Both blobs
// stay queued until close: a worker wakes for 64 blobs or 1 MiB (blob_store.cpp, batchReadyLocked).
TEST(Blobs, AReleasedFirstBufferIsReadFromALaterOneWithTheSameBytes) {
  for (const uint64_t minCompress : {uint64_t{0}, uint64_t{1} << 30}) {  // compressed path, raw path
    tt::TempDir d;
    auto path = d.path("t.trace");
    const size_t n = 200000, page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    auto want = tt::randomBytes(n, 11);
    auto later = want;  // the same bytes at another address
    void* m = ::mmap(nullptr, n + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    std::memcpy(m, want.data(), n);
    std::vector<std::byte> changed = want;
    auto ghost = tt::randomBytes(n, 13);
    auto ghostCopy = ghost;
    const BlobRef wantRef{hash128(want.data(), n), n}, ghostRef{hash128(ghost.data(), n), n};
    {
      WriterOptions o;
      o.path = path;
      o.workerThreads = 2;
      o.minCompressBytes = minCompress;
      auto w = Writer::create(o, tt::header());
      EXPECT_EQ(w->putBlob(m, n, BlobHint::F32), wantRef);
      EXPECT_EQ(w->putBlob(changed.data(), n, BlobHint::F32), wantRef);  // a second source, then changed too
      EXPECT_EQ(w->putBlob(later.data(), n, BlobHint::F32), wantRef);    // the one still intact
      EXPECT_EQ(w->putBlob(ghost.data(), n), ghostRef);
      EXPECT_EQ(w->putBlob(ghostCopy.data(), n), ghostRef);
      ::munmap(m, n + page);          // released by the app before the worker read it
      changed[7] ^= std::byte{0xff};  // and the second source changed
      ghost[0] ^= std::byte{1};       // both sources of this one changed: Lost
      ghostCopy[0] ^= std::byte{1};
      w->beginCall(1, 0, 0).argWeightsBlob(0, n, wantRef).argWeightsBlob(0, n, ghostRef).endCall();
      w->close();
      EXPECT_EQ(w->stats().lostBlobs, 1u);
      EXPECT_EQ(w->stats().lostBytes, n);
    }
    auto r = Reader::open(path);
    EXPECT_TRUE(r->verify().ok());
    EXPECT_FALSE(r->blobLost(wantRef));
    EXPECT_TRUE(sameBytes(r->checkedBlob(wantRef), want));
    EXPECT_TRUE(r->blobLost(ghostRef));
  }
}

// Format 2.5 Replaced blobs: bytes the app changed in place before a worker read them, which the
// capture then said were superseded (its check before a build found them changed), are stored with
// no bytes and not counted as lost; those it said nothing of stay Lost. The choice waits
// for a caller's drain, so a worker that found the bytes changed before the capture's check still
// gives Replaced; and bytes passed again meanwhile are stored, with no byteless record at all.
TEST(Blobs, BytesChangedBeforeTheBuildAreReplacedNotLost) {
  for (const bool workerFirst : {false, true}) {
    tt::TempDir d;
    auto path = d.path("t.trace");
    auto changed = tt::randomBytes(5000, 21), gone = tt::randomBytes(6000, 22), back = tt::randomBytes(7000, 23);
    const auto backCopy = back;
    const BlobRef changedRef{hash128(changed.data(), changed.size()), changed.size()};
    const BlobRef goneRef{hash128(gone.data(), gone.size()), gone.size()};
    const BlobRef backRef{hash128(back.data(), back.size()), back.size()};
    {
      WriterOptions o;
      o.path = path;
      o.workerThreads = 2;
      auto w = Writer::create(o, tt::header());
      w->putBlob(changed.data(), changed.size());
      w->putBlob(gone.data(), gone.size());
      w->putBlob(back.data(), back.size());
      changed[0] ^= std::byte{1};
      gone[0] ^= std::byte{1};
      back[0] ^= std::byte{1};
      if (workerFirst) {  // a batch worth a wake-up: the workers find all three changed
        auto filler = tt::randomBytes(2 << 20, 24);
        w->putBlob(filler.data(), filler.size());
        while (w->pendingBlobBytes() != 0) std::this_thread::yield();
      }
      w->supersedeBlob(changedRef);
      EXPECT_EQ(w->putBlob(backCopy.data(), backCopy.size()), backRef);  // the same bytes, passed again
      w->beginCall(1, 0, 0)
          .argWeightsBlob(0, 5000, changedRef)
          .argWeightsBlob(0, 6000, goneRef)
          .argWeightsBlob(0, 7000, backRef)
          .endCall();
      w->close();
      EXPECT_EQ(w->stats().replacedBlobs, 1u);
      EXPECT_EQ(w->stats().lostBlobs, 1u);
    }
    auto r = Reader::open(path);
    const VerifyReport rep = r->verify();
    EXPECT_TRUE(rep.ok()) << (rep.issues.empty() ? "" : rep.issues[0].what);
    EXPECT_EQ(rep.replacedBlobs, 1u);
    EXPECT_EQ(rep.lostBlobs, 1u);
    EXPECT_EQ(r->lostBlobs(), 1u);
    EXPECT_TRUE(r->blobReplaced(changedRef));
    EXPECT_TRUE(r->blobLost(goneRef) && !r->blobReplaced(goneRef));
    EXPECT_TRUE(sameBytes(r->checkedBlob(backRef), backCopy));
    const BlobView z = r->checkedBlob(changedRef);
    ASSERT_EQ(z.size(), 5000u);
    EXPECT_TRUE(std::all_of(z.bytes().begin(), z.bytes().end(), [](std::byte b) { return b == std::byte{0}; }));
  }
}

// Finishing in another process (writer.h): the queued blobs get their ranges, the writer goes on
// after them, and whoever writes the ranges (here the same process, as where a fork failed; the
// forked case is below and tests/test_finisher.py) leaves a trace whose index is read back at close.
// Blobs stay queued until reserved: a worker wakes for 64 blobs or 1 MiB (batchReadyLocked).
TEST(Blobs, ReservedRangesAreWrittenThenIndexedAtClose) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto a = tt::randomBytes(70000, 1), b = tt::randomBytes(300, 2), c = tt::randomBytes(5000, 3);
  std::vector<std::byte> gone(4096);
  {
    WriterOptions o;
    o.path = path;
    auto w = Writer::create(o, tt::header());
    auto ra = w->putBlob(a.data(), a.size()), rb = w->putBlob(b.data(), b.size());
    void* m = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(m, MAP_FAILED);
    std::memcpy(m, tt::randomBytes(4096, 4).data(), 4096);
    auto rg = w->putBlob(m, 4096);
    EXPECT_EQ(w->reserveQueued(), a.size() + b.size() + 4096);
    EXPECT_EQ(w->pendingBlobBytes(), 0u);
    auto rc = w->putBlob(c.data(), c.size());       // after the ranges
    EXPECT_EQ(w->putBlob(a.data(), a.size()), ra);  // still deduplicated
    ::munmap(m, 4096);                              // released before it was written: Lost
    w->beginCall(1, 0, 0).argWeightsBlob(0, a.size(), ra).argWeightsBlob(0, b.size(), rb).endCall();
    w->beginCall(1, 0, 0).argWeightsBlob(0, 4096, rg).argWeightsBlob(0, c.size(), rc).endCall();
    w->flush();
    w->writeReserved();
    w->close();
    EXPECT_EQ(w->stats().lostBlobs, 1u);
  }
  auto r = Reader::open(path);
  const VerifyReport rep = r->verify();
  EXPECT_TRUE(rep.ok()) << (rep.issues.empty() ? "" : rep.issues[0].what);
  EXPECT_TRUE(r->closedCleanly());
  EXPECT_EQ(rep.blobs, 4u);
  EXPECT_EQ(rep.lostBlobs, 1u);
  EXPECT_TRUE(sameBytes(r->checkedBlob({hash128(a.data(), a.size()), a.size()}), a));
  EXPECT_TRUE(sameBytes(r->checkedBlob({hash128(b.data(), b.size()), b.size()}), b));
  EXPECT_TRUE(sameBytes(r->checkedBlob({hash128(c.data(), c.size()), c.size()}), c));
}

// A writer whose first blob, `a`, was reserved (handed to a finisher that writes it, or not).
static std::unique_ptr<Writer> writerWithReservedBlob(const std::string& path, const std::vector<std::byte>& a) {
  WriterOptions o;
  o.path = path;
  auto w = Writer::create(o, tt::header());
  w->putBlob(a.data(), a.size());
  EXPECT_EQ(w->reserveQueued(), a.size());
  return w;
}

// A range nobody wrote (its finisher was killed): the close fails, and the file is the clean prefix
// before the hole, never a complete trace with a hole in it.
TEST(Blobs, AnUnwrittenReservedRangeFailsTheCloseAndLeavesAPrefix) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto a = tt::randomBytes(70000, 1), c = tt::randomBytes(5000, 3);
  {
    auto w = writerWithReservedBlob(path, a);
    auto rc = w->putBlob(c.data(), c.size());
    w->beginCall(1, 0, 0)
        .argWeightsBlob(0, a.size(), {hash128(a.data(), a.size()), a.size()})
        .argWeightsBlob(0, c.size(), rc)
        .endCall();
    EXPECT_THROW(w->close(), Error);
  }
  auto r = Reader::open(path);
  EXPECT_FALSE(r->closedCleanly());
  EXPECT_TRUE(r->truncatedAt().has_value());
  EXPECT_EQ(r->callCount(), 0u);  // the call came after the hole
}

// A range written wrong where only the reader's own block check looks (a non-zero byte in the
// padding before the data) fails the close too: a finisher's block is checked as every reader
// checks one before it is indexed.
TEST(Blobs, AReservedRangeWrittenWrongFailsTheClose) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto a = tt::randomBytes(70000, 1);
  {
    auto w = writerWithReservedBlob(path, a);
    w->writeReserved();
    const auto file = tt::readFile(path);
    const auto data = std::search(file.begin(), file.end(), a.begin(), a.begin() + 64);
    ASSERT_NE(data, file.end());
    ASSERT_EQ(*(data - 1), std::byte{0});  // padding before the 4 KiB-aligned data
    const int fd = ::open(path.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    const char one = 1;
    ASSERT_EQ(::pwrite(fd, &one, 1, (data - file.begin()) - 1), 1);
    ::close(fd);
    EXPECT_THROW(w->close(), Error);
  }
  auto r = Reader::open(path);
  EXPECT_FALSE(r->closedCleanly());
}

// forkFinisher, its child writing the reserved ranges and leaving; `meanwhile` runs in the parent
// while it does. Returns the child's exit status.
static int finishInChild(Writer& w, const std::function<void()>& meanwhile = {}) {
  const pid_t pid = w.forkFinisher(false);
  if (pid == 0) {
    w.writeReserved();
    ::_exit(0);
  }
  if (pid < 0) return -1;
  if (meanwhile) meanwhile();
  int status = -1;
  return ::waitpid(pid, &status, 0) == pid ? status : -1;
}

// forkFinisher: the child writes the ranges and leaves; the parent goes on and closes.
TEST(Blobs, AForkedFinisherWritesTheRangesItWasHanded) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "GCC 12's ASan allocator is not fork-safe";
#endif
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto a = tt::randomBytes(70000, 1), c = tt::randomBytes(5000, 3);
  const BlobRef ra{hash128(a.data(), a.size()), a.size()};
  {
    auto w = writerWithReservedBlob(path, a);
    // The child writes from its own view of the bytes, whatever the parent does with them.
    ASSERT_EQ(finishInChild(*w, [&] { std::fill(a.begin(), a.end(), std::byte{0}); }), 0);
    auto rc = w->putBlob(c.data(), c.size());
    w->beginCall(1, 0, 0).argWeightsBlob(0, 70000, ra).argWeightsBlob(0, c.size(), rc).endCall();
    w->close();
  }
  auto r = Reader::open(path);
  const VerifyReport rep = r->verify();
  EXPECT_TRUE(rep.ok()) << (rep.issues.empty() ? "" : rep.issues[0].what);
  EXPECT_EQ(rep.lostBlobs, 0u);
  EXPECT_TRUE(sameBytes(r->checkedBlob({hash128(c.data(), c.size()), c.size()}), c));
}

// A finisher writes the application's bytes from where they lie in its view of its memory: bytes
// released before the fork (the kernel cannot read them) or changed since their key was read are
// stored Lost in their range, and the trace closes clean.
TEST(Blobs, AForkedFinisherStoresBytesReleasedOrChangedBeforeTheForkAsLost) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "GCC 12's ASan allocator is not fork-safe";
#endif
  for (const bool release : {true, false}) {
    tt::TempDir d;
    auto path = d.path("t.trace");
    const size_t n = 256 << 10;
    auto* m = static_cast<std::byte*>(::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    ASSERT_NE(m, MAP_FAILED);
    const auto a = tt::randomBytes(n, 7);
    std::memcpy(m, a.data(), n);
    const BlobRef ra{hash128(a.data(), n), n};
    {
      WriterOptions o;
      o.path = path;
      auto w = Writer::create(o, tt::header());
      w->putBlob(m, n);
      ASSERT_EQ(w->reserveQueued(), n);
      if (release)
        ::munmap(m, n);
      else
        m[n / 2] ^= std::byte{1};
      ASSERT_EQ(finishInChild(*w), 0);
      w->beginCall(1, 0, 0).argWeightsBlob(0, n, ra).endCall();
      w->close();
      EXPECT_EQ(w->stats().lostBlobs, 1u);
    }
    if (!release) ::munmap(m, n);
    auto r = Reader::open(path);
    const VerifyReport rep = r->verify();
    EXPECT_TRUE(rep.ok()) << (rep.issues.empty() ? "" : rep.issues[0].what);
    EXPECT_EQ(rep.lostBlobs, 1u) << (release ? "released" : "changed");
  }
}

namespace {
// A writer's options as a capture's: keys read by the `workers` worker threads.
WriterOptions deferredOptions(const std::string& path, int workers) {
  WriterOptions o;
  o.path = path;
  o.workerThreads = workers;
  o.deferKeys = true;
  return o;
}

// The blob keys of every call's weights arguments, in order.
std::vector<BlobRef> blobArgs(const Reader& r) {
  std::vector<BlobRef> refs;
  r.forEachCall([&](const CallView& c) {
    for (size_t i = 0; i < c.argCount(); ++i) refs.push_back(c.arg(i).blob());
    return true;
  });
  return refs;
}
}  // namespace

// deferKeys: putBlob reads nothing; the call records name each put by a provisional key, and the
// segments on disk hold the content keys a worker found, deduplicated as with keys at the call.
TEST(DeferredKeys, CallRecordsHoldTheContentKeysTheWorkersFound) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto a = tt::randomBytes(300000, 41), aCopy = a, b = tt::randomBytes(5000, 42);
  const BlobRef aRef{hash128(a.data(), a.size()), a.size()}, bRef{hash128(b.data(), b.size()), b.size()};
  {
    WriterOptions o = deferredOptions(path, 2);
    o.segmentBytes = 64;  // each call fills a segment: written by the log's thread, after its blobs
    auto w = Writer::create(o, tt::header());
    const BlobRef p[] = {w->putBlob(a.data(), a.size(), BlobHint::F32), w->putBlob(aCopy.data(), a.size()),
                         w->putBlob(b.data(), b.size())};
    for (const BlobRef& ref : p) EXPECT_TRUE(provisionalBlob(ref));
    EXPECT_NE(p[0], p[1]);  // a put, not the bytes, until a worker read them
    for (const BlobRef& ref : p) w->beginCall(1, 0, 0).argWeightsBlob(0, ref.length, ref).endCall();
    w->drainBlobs();
    EXPECT_EQ(w->resolvedBlob(p[0]), aRef);
    EXPECT_EQ(w->resolvedBlob(p[1]), aRef);
    EXPECT_EQ(w->resolvedBlob(p[2]), bRef);
    EXPECT_EQ(w->resolvedBlob(aRef), aRef);  // a content key is its own
    w->close();
    EXPECT_EQ(w->stats().blobPuts, 3u);
    EXPECT_EQ(w->stats().uniqueBlobs, 2u);
  }
  auto r = Reader::open(path);
  EXPECT_TRUE(r->verify().ok());
  EXPECT_EQ(blobArgs(*r), (std::vector<BlobRef>{aRef, aRef, bRef}));
  EXPECT_TRUE(sameBytes(r->checkedBlob(aRef), a));
  EXPECT_TRUE(sameBytes(r->checkedBlob(bRef), b));
}

// Bytes the application released before any worker read them are Lost, said so (stats, verify),
// under a key of their own: no content key was ever known for them.
TEST(DeferredKeys, BytesReleasedBeforeAnyWorkerReadThemAreLost) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  const size_t n = 100000, page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  void* m = ::mmap(nullptr, n + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  std::memset(m, 7, n);
  BlobRef gone;
  {
    WriterOptions o = deferredOptions(path, 1);
    auto w = Writer::create(o, tt::header());
    const BlobRef p = w->putBlob(m, n);  // one small blob: no worker wakes for it before the drain
    ::munmap(m, n + page);
    w->beginCall(1, 0, 0).argWeightsBlob(0, n, p).endCall();
    w->close();
    EXPECT_EQ(w->stats().lostBlobs, 1u);
    EXPECT_EQ(w->stats().lostBytes, n);
    gone = *w->resolvedBlob(p);
  }
  auto r = Reader::open(path);
  const VerifyReport rep = r->verify();
  EXPECT_TRUE(rep.ok()) << (rep.issues.empty() ? "" : rep.issues[0].what);
  EXPECT_EQ(rep.lostBlobs, 1u);
  EXPECT_EQ(blobArgs(*r), std::vector<BlobRef>{gone});
  EXPECT_TRUE(r->blobLost(gone));
  std::vector<std::byte> sevens(n, std::byte{7});
  EXPECT_NE(gone.hash, hash128(sevens.data(), n));
}

// A handoff (reserveQueued) reads on the caller's thread only the keys of blobs that may be
// repeats (the same size and samples as another); the others are read by whoever writes the batch
// (here this process, as where the fork failed), and the next segment names them all.
TEST(DeferredKeys, AHandoffReadsOnlyTheKeysOfPossibleRepeats) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto a = tt::randomBytes(200000, 43), aCopy = a, b = tt::randomBytes(70000, 44);
  const BlobRef aRef{hash128(a.data(), a.size()), a.size()}, bRef{hash128(b.data(), b.size()), b.size()};
  {
    WriterOptions o = deferredOptions(path, 1);
    auto w = Writer::create(o, tt::header());
    const BlobRef p[] = {w->putBlob(a.data(), a.size()), w->putBlob(aCopy.data(), a.size()),
                         w->putBlob(b.data(), b.size())};
    EXPECT_EQ(w->reserveQueued(), a.size() + b.size());  // the copy is a dedup hit: no range
    EXPECT_EQ(w->resolvedBlob(p[0]), aRef);
    EXPECT_EQ(w->resolvedBlob(p[1]), aRef);
    EXPECT_EQ(w->resolvedBlob(p[2]), std::nullopt);  // handed unread
    w->writeReserved();
    EXPECT_EQ(w->resolvedBlob(p[2]), bRef);
    for (const BlobRef& ref : p) w->beginCall(1, 0, 0).argWeightsBlob(0, ref.length, ref).endCall();
    w->flush();
    w->close();
  }
  auto r = Reader::open(path);
  EXPECT_TRUE(r->verify().ok());
  EXPECT_EQ(blobArgs(*r), (std::vector<BlobRef>{aRef, aRef, bRef}));
  EXPECT_TRUE(sameBytes(r->checkedBlob(aRef), a));
  EXPECT_TRUE(sameBytes(r->checkedBlob(bRef), b));
}

// Many puts, repeats among them, faster than the workers write: the workers read keys ahead of
// their writes, a handoff in the middle takes what is queued, and every call still names the
// content key of the bytes it passed, each content stored once.
TEST(DeferredKeys, EveryCallNamesItsBytesWhateverTheWorkersAndAHandoffDid) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  constexpr int kDistinct = 24, kPuts = 160;
  std::vector<std::vector<std::byte>> contents;
  for (int i = 0; i < kDistinct; ++i) contents.push_back(tt::randomBytes((1 << 20) + 4096 * i, 100 + i));
  std::vector<std::vector<std::byte>> buffers;  // each put its own buffer, as an app's arrays
  for (int p = 0; p < kPuts; ++p) buffers.push_back(contents[(p * 7) % kDistinct]);
  std::vector<BlobRef> want;
  {
    WriterOptions o = deferredOptions(path, 2);
    o.segmentBytes = 256;
    auto w = Writer::create(o, tt::header());
    std::vector<BlobRef> refs;
    for (int p = 0; p < kPuts; ++p) {
      refs.push_back(w->putBlob(buffers[p].data(), buffers[p].size(), BlobHint::F32));
      want.push_back({hash128(buffers[p].data(), buffers[p].size()), buffers[p].size()});
      w->beginCall(1, 0, 0).argWeightsBlob(0, refs.back().length, refs.back()).endCall();
      if (p == kPuts / 2) {
        w->reserveQueued();
        w->writeReserved();  // in this process, as where the fork failed
      }
    }
    w->close();
    EXPECT_EQ(w->stats().uniqueBlobs, uint64_t(kDistinct));
    EXPECT_EQ(w->stats().lostBlobs, 0u);
    for (int p = 0; p < kPuts; ++p) EXPECT_EQ(w->resolvedBlob(refs[p]), want[p]) << "put " << p;
  }
  auto r = Reader::open(path);
  EXPECT_TRUE(r->verify().ok());
  EXPECT_EQ(blobArgs(*r), want);
  for (const auto& c : contents) EXPECT_TRUE(sameBytes(r->checkedBlob({hash128(c.data(), c.size()), c.size()}), c));
}

// Memory the application released and used again before any worker read it holds other bytes:
// they are not taken for the call's. The samples noted at the call (a fixed 128 bytes) differ, so
// the blob is Lost, said so, and the other bytes are stored nowhere.
TEST(DeferredKeys, OtherBytesAtTheCallsAddressAreLostNotTakenForTheCalls) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto buffer = tt::randomBytes(50000, 51);
  const auto reused = tt::randomBytes(buffer.size(), 52);
  {
    WriterOptions o = deferredOptions(path, 1);
    auto w = Writer::create(o, tt::header());
    const BlobRef p = w->putBlob(buffer.data(), buffer.size());  // no worker wakes for it before the close
    std::memcpy(buffer.data(), reused.data(), buffer.size());    // released, and the memory used again
    w->beginCall(1, 0, 0).argWeightsBlob(0, p.length, p).endCall();
    w->close();
    EXPECT_EQ(w->stats().lostBlobs, 1u);
  }
  auto r = Reader::open(path);
  EXPECT_TRUE(r->verify().ok());
  const std::vector<BlobRef> refs = blobArgs(*r);
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_TRUE(r->blobLost(refs[0]));
  EXPECT_FALSE(r->hasBlob({hash128(reused.data(), reused.size()), reused.size()}));
}

// blobKey reads a key no worker has read yet on the caller's thread (the capture's check before a
// build): the content key of the bytes as they are, the same the call record will hold.
TEST(DeferredKeys, BlobKeyReadsTheKeyNowWhereNoWorkerHas) {
  tt::TempDir d;
  auto a = tt::randomBytes(30000, 53);
  WriterOptions o = deferredOptions(d.path("t.trace"), 1);
  auto w = Writer::create(o, tt::header());
  const BlobRef p = w->putBlob(a.data(), a.size());
  EXPECT_EQ(w->resolvedBlob(p), std::nullopt);  // one small blob: no worker has woken for it
  const BlobRef want{hash128(a.data(), a.size()), a.size()};
  bool readHere = false;
  EXPECT_EQ(w->blobKey(p, &readHere), want);
  EXPECT_TRUE(readHere);  // read on this thread, now: the capture's check need not read it again
  EXPECT_EQ(w->resolvedBlob(p), want);
  EXPECT_EQ(w->blobKey(p, &readHere), want);
  EXPECT_FALSE(readHere);  // known before this call: what the bytes hold now is not what it says
  w->close();
  EXPECT_EQ(w->stats().uniqueBlobs, 1u);
}

// Bytes changed where a sample lies since the put are not the put's: the key read now is a Lost
// blob's, and blobKey does not count that read as one of the bytes' (the check reads them again).
TEST(DeferredKeys, BlobKeyOfChangedBytesIsNotReadHere) {
  tt::TempDir d;
  auto a = tt::randomBytes(30000, 54);
  auto w = Writer::create(deferredOptions(d.path("t.trace"), 1), tt::header());
  const BlobRef p = w->putBlob(a.data(), a.size());
  a[0] = std::byte(~std::to_integer<unsigned>(a[0]));  // the first sample
  bool readHere = true;
  const BlobRef got = w->blobKey(p, &readHere);
  EXPECT_FALSE(readHere);
  EXPECT_NE(got.hash, hash128(a.data(), a.size()));
  w->close();
}

// A key read out of order (blobKey, the check before a build) is not read again when the workers'
// reads ahead reach it: read twice, the blob's second read took itself for a repeat, and nobody
// wrote it. Here the one worker is held in its first write (writeFault, a fault the real disk
// cannot produce on demand) while the queue fills past the read-ahead threshold.
TEST(DeferredKeys, AKeyReadOutOfOrderIsWrittenOnce) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  std::mutex m;
  std::condition_variable cv;
  bool armed = false, held = false, released = false;
  std::vector<std::vector<std::byte>> blobs;
  for (int i = 0; i < 61; ++i) blobs.push_back(tt::randomBytes((i ? 1 : 2) << 20, 200 + i));
  std::vector<BlobRef> want;
  {
    WriterOptions o = deferredOptions(path, 1);
    o.zstdLevel = 0;
    o.writeFault = [&] {
      std::unique_lock l(m);
      if (armed && !released) {
        held = true;
        cv.notify_all();
        cv.wait(l, [&] { return released; });
      }
      return 0;
    };
    auto w = Writer::create(o, tt::header());
    {
      std::lock_guard g(m);
      armed = true;  // from the first blob's write on
    }
    std::vector<BlobRef> refs{w->putBlob(blobs[0].data(), blobs[0].size())};  // 2 MiB: the worker wakes
    {
      std::unique_lock l(m);
      cv.wait(l, [&] { return held; });
    }
    for (size_t i = 1; i < blobs.size(); ++i) refs.push_back(w->putBlob(blobs[i].data(), blobs[i].size()));
    EXPECT_EQ(w->blobKey(refs[20]), (BlobRef{hash128(blobs[20].data(), blobs[20].size()), blobs[20].size()}));
    {
      std::lock_guard g(m);
      released = true;
    }
    cv.notify_all();
    // The reads ahead pass job 20 before anybody waits for the workers (they stop reading ahead
    // then). A bounded wait, not a timing assertion.
    for (int k = 0; k < 60000 && !w->resolvedBlob(refs[28]); ++k)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ASSERT_TRUE(w->resolvedBlob(refs[28]));
    for (size_t i = 0; i < blobs.size(); ++i) {
      want.push_back({hash128(blobs[i].data(), blobs[i].size()), blobs[i].size()});
      w->beginCall(1, 0, 0).argWeightsBlob(0, refs[i].length, refs[i]).endCall();
    }
    w->close();
    EXPECT_EQ(w->stats().uniqueBlobs, blobs.size());
  }
  auto r = Reader::open(path);
  EXPECT_TRUE(r->verify().ok());
  EXPECT_EQ(blobArgs(*r), want);
  for (const BlobRef& ref : want) EXPECT_TRUE(r->hasBlob(ref) && !r->blobLost(ref));
}

// Small blobs queued together are read and written together (one read of the application's
// memory, one write of their blocks), and each keeps its own fate: one released before it was
// read is Lost (the joint read stops short at it, and the rest are read one by one), one changed
// is Lost, a repeat is stored once, and every other is stored whole, as one at a time.
TEST(DeferredKeys, SmallBlobsTakenTogetherKeepEachOnesFate) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<std::vector<std::byte>> blobs;
  for (int i = 0; i < 40; ++i)  // 41 puts, under 1 MiB in all: under a batch, read at the close
    blobs.push_back(tt::randomBytes(1 + (i * 7919) % 20000, 300 + i));
  blobs[30] = blobs[10];  // a repeat, its own buffer
  const size_t releasedBytes = 3 * page - 5;
  void* m = ::mmap(nullptr, releasedBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  std::memset(m, 9, releasedBytes);
  std::vector<BlobRef> want;
  uint64_t lostBytes = 0;
  {
    auto w = Writer::create(deferredOptions(path, 2), tt::header());
    std::vector<BlobRef> refs;
    for (size_t i = 0; i < blobs.size(); ++i) {
      refs.push_back(w->putBlob(blobs[i].data(), blobs[i].size()));
      if (i == 5) refs.push_back(w->putBlob(m, releasedBytes));
    }
    ::munmap(m, releasedBytes);
    blobs[20][0] ^= std::byte{1};  // after the call, where a sample lies: not the call's bytes
    lostBytes = releasedBytes + blobs[20].size();
    for (const BlobRef& ref : refs) w->beginCall(1, 0, 0).argWeightsBlob(0, ref.length, ref).endCall();
    w->close();
    EXPECT_EQ(w->stats().lostBlobs, 2u);
    EXPECT_EQ(w->stats().lostBytes, lostBytes);
    EXPECT_EQ(w->stats().uniqueBlobs, blobs.size() - 2);  // the repeat and the changed one aside
    for (const BlobRef& ref : refs) want.push_back(*w->resolvedBlob(ref));
  }
  auto r = Reader::open(path);
  const VerifyReport rep = r->verify();
  EXPECT_TRUE(rep.ok()) << (rep.issues.empty() ? "" : rep.issues[0].what);
  EXPECT_EQ(rep.lostBlobs, 2u);
  EXPECT_EQ(blobArgs(*r), want);
  EXPECT_TRUE(r->blobLost(want[6]));   // the released one
  EXPECT_TRUE(r->blobLost(want[21]));  // blobs[20], changed
  EXPECT_EQ(want[11], want[31]);       // blobs[10] and its repeat
  for (size_t i = 0; i < blobs.size(); ++i) {
    if (i == 20) continue;
    const BlobRef ref{hash128(blobs[i].data(), blobs[i].size()), blobs[i].size()};
    EXPECT_EQ(want[i + (i > 5)], ref) << "blob " << i;
    EXPECT_TRUE(sameBytes(r->checkedBlob(ref), blobs[i])) << "blob " << i;
  }
}

// A batch of small blobs is one write of their records and bytes, then each block's header in
// order. A write failing at any point of that (writeFault: a full disk, which the real one cannot
// be made to be on demand) leaves a trace whose blocks end before the first with no header: every
// blob read from it is whole and its own, and nothing in it reads as corrupt.
TEST(DeferredKeys, ABatchCutAtAnyOfItsWritesLeavesACleanPrefix) {
  tt::TempDir d;
  std::vector<std::vector<std::byte>> blobs;
  for (int i = 0; i < 24; ++i) blobs.push_back(tt::randomBytes(100 + i * 1500, 400 + i));
  for (int failAt = 1; failAt <= 30; ++failAt) {
    const auto path = d.path("t" + std::to_string(failAt) + ".trace");
    std::atomic<int> writes{0};
    std::atomic<bool> armed{false};
    WriterOptions o = deferredOptions(path, 1);
    o.writeFault = [&] { return armed && ++writes == failAt ? ENOSPC : 0; };
    {
      auto w = Writer::create(o, tt::header());
      armed = true;  // from the first write after the file's header
      for (const auto& b : blobs) {
        const BlobRef ref = w->putBlob(b.data(), b.size());  // under a batch: taken together at the close
        w->beginCall(1, 0, 0).argWeightsBlob(0, ref.length, ref).endCall();
      }
      EXPECT_THROW(w->close(), Error) << "failing write " << failAt;
    }
    auto r = Reader::open(path);
    EXPECT_FALSE(r->closedCleanly()) << "failing write " << failAt;
    const VerifyReport rep = r->verify();  // truncated, or complete blocks that end where the file does
    EXPECT_FALSE(rep.corrupt()) << "failing write " << failAt << ": " << rep.issues[0].what;
    size_t found = 0;
    for (const auto& b : blobs) {
      const BlobRef ref{hash128(b.data(), b.size()), b.size()};
      if (!r->hasBlob(ref)) continue;
      ++found;
      EXPECT_TRUE(sameBytes(r->checkedBlob(ref), b)) << "failing write " << failAt;
    }
    EXPECT_EQ(found, r->blobs().size()) << "failing write " << failAt;
  }
}

// ---- handed batches (trace/src/blob_handoff.cpp) ------------------------------------------------
namespace {
// Distinct contents (no two of one size share their samples), each in a buffer of its own.
std::vector<std::vector<std::byte>> distinctBlobs(std::initializer_list<size_t> sizes, uint64_t seed) {
  std::vector<std::vector<std::byte>> out;
  for (size_t n : sizes) out.push_back(tt::randomBytes(n, seed++));
  return out;
}
BlobRef keyOf(const std::vector<std::byte>& b) { return {hash128(b.data(), b.size()), b.size()}; }
}  // namespace

// A handoff reads no key that cannot be a repeat: the finisher reads them from its view of the
// bytes, and this process has them from its board, whatever it did with its own copy meanwhile.
TEST(Handoff, KeysHandedUnreadComeBackFromTheFinisher) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "GCC 12's ASan allocator is not fork-safe";
#endif
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto blobs = distinctBlobs({70000, 5000, 300000}, 60);
  std::vector<BlobRef> want, refs;
  {
    auto w = Writer::create(deferredOptions(path, 1), tt::header());
    for (const auto& b : blobs) {
      want.push_back(keyOf(b));
      refs.push_back(w->putBlob(b.data(), b.size()));
      w->beginCall(1, 0, 0).argWeightsBlob(0, b.size(), refs.back()).endCall();
    }
    EXPECT_EQ(w->reserveQueued(), 375000u);
    for (const BlobRef& r : refs) EXPECT_EQ(w->resolvedBlob(r), std::nullopt);  // nothing read
    ASSERT_EQ(finishInChild(*w,
                            [&] {
                              for (auto& b : blobs) std::fill(b.begin(), b.end(), std::byte{0});
                            }),
              0);
    for (size_t i = 0; i < refs.size(); ++i) EXPECT_EQ(w->blobKey(refs[i]), want[i]);
    w->close();
    EXPECT_EQ(w->stats().uniqueBlobs, 3u);
    EXPECT_EQ(w->stats().lostBlobs, 0u);
  }
  auto r = Reader::open(path);
  const VerifyReport rep = r->verify();
  EXPECT_TRUE(rep.ok()) << (rep.issues.empty() ? "" : rep.issues[0].what);
  EXPECT_EQ(blobArgs(*r), want);
  auto again = distinctBlobs({70000, 5000, 300000}, 60);
  for (const auto& b : again) EXPECT_TRUE(sameBytes(r->checkedBlob(keyOf(b)), b));
}

// A repeat-heavy batch: every put has a twin of the same size and samples (a copy, or bytes that
// differ where no sample lies), so every key is read at the handoff, by its thread and the idle
// workers together. Each call names its own bytes' key at once; copies get no range, the others
// one each.
TEST(Handoff, SuspectsReadWithTheWorkersEachNameTheirBytes) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  constexpr int kContents = 12;
  constexpr size_t kBytes = 24 << 10;  // 36 of them stay under a batch: no worker takes one first
  std::vector<std::vector<std::byte>> buffers;
  for (int i = 0; i < kContents; ++i) {
    buffers.push_back(tt::randomBytes(kBytes, 400 + i));
    buffers.push_back(buffers.back());  // a copy
    buffers.push_back(buffers.back());
    buffers.back()[20] ^= std::byte{1};  // not sampled: the same samples, another key
  }
  std::vector<BlobRef> want, refs;
  {
    auto w = Writer::create(deferredOptions(path, 2), tt::header());
    for (const auto& b : buffers) {
      refs.push_back(w->putBlob(b.data(), b.size()));
      want.push_back(keyOf(b));
      w->beginCall(1, 0, 0).argWeightsBlob(0, refs.back().length, refs.back()).endCall();
    }
    EXPECT_EQ(w->reserveQueued(), 2 * kContents * kBytes);
    for (size_t p = 0; p < refs.size(); ++p) EXPECT_EQ(w->resolvedBlob(refs[p]), want[p]) << "put " << p;
    w->writeReserved();
    w->close();
    EXPECT_EQ(w->stats().uniqueBlobs, uint64_t(2 * kContents));
  }
  auto r = Reader::open(path);
  EXPECT_TRUE(r->verify().ok());
  EXPECT_EQ(blobArgs(*r), want);
  for (const auto& b : buffers) EXPECT_TRUE(sameBytes(r->checkedBlob(keyOf(b)), b));
}

// The same bytes put again after a handoff, while their key is still the finisher's to read: no
// worker claims them before it came back, so they are stored once.
TEST(Handoff, ARepeatOfAHandedBlobIsStoredOnce) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "GCC 12's ASan allocator is not fork-safe";
#endif
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto a = tt::randomBytes(200000, 70), aCopy = a;
  {
    auto w = Writer::create(deferredOptions(path, 2), tt::header());
    const BlobRef p = w->putBlob(a.data(), a.size());
    w->beginCall(1, 0, 0).argWeightsBlob(0, a.size(), p).endCall();
    EXPECT_EQ(w->reserveQueued(), a.size());
    ASSERT_EQ(finishInChild(*w,
                            [&] {
                              const BlobRef q = w->putBlob(aCopy.data(), aCopy.size());
                              w->beginCall(1, 0, 0).argWeightsBlob(0, aCopy.size(), q).endCall();
                              w->drainBlobs();
                            }),
              0);
    w->close();
    EXPECT_EQ(w->stats().uniqueBlobs, 1u);
  }
  auto r = Reader::open(path);
  const VerifyReport rep = r->verify();
  EXPECT_TRUE(rep.ok()) << (rep.issues.empty() ? "" : rep.issues[0].what);
  EXPECT_EQ(rep.blobs, 1u);
  EXPECT_EQ(blobArgs(*r), (std::vector<BlobRef>{keyOf(a), keyOf(a)}));
}

// A finisher that ended before it read the keys it was handed: nobody waits for them for ever.
// They are Lost, and the close fails on their unwritten ranges, leaving the prefix before them.
TEST(Handoff, AFinisherGoneBeforeItsKeysLeavesThemLostAndTheCloseFails) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "GCC 12's ASan allocator is not fork-safe";
#endif
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto a = tt::randomBytes(70000, 71);
  {
    auto w = Writer::create(deferredOptions(path, 1), tt::header());
    const BlobRef p = w->putBlob(a.data(), a.size());
    w->beginCall(1, 0, 0).argWeightsBlob(0, a.size(), p).endCall();
    EXPECT_EQ(w->reserveQueued(), a.size());
    const pid_t pid = w->forkFinisher(false);
    if (pid == 0) ::_exit(3);  // killed before it read anything
    ASSERT_GT(pid, 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_NE(w->blobKey(p), keyOf(a));  // a Lost key of its own
    EXPECT_THROW(w->close(), Error);
  }
  auto r = Reader::open(path);
  EXPECT_FALSE(r->closedCleanly());
  EXPECT_EQ(r->callCount(), 0u);  // the call came after the hole
}
