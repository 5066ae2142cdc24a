// Torn and damaged traces: every prefix opens, every flipped byte is caught by verify().
#include <gtest/gtest.h>

#include "test_util.h"
#include "trtrace/error.h"
#include "trtrace/format.h"

#include <xxhash.h>

using namespace trtrace;

TEST(Robustness, FooterAndScanAgree) {
  tt::TempDir d;
  auto s = tt::writeSample(d.path("s.trace"));
  auto full = tt::readFile(d.path("s.trace"));
  // Zero the file_length: the reader must scan and find the same content.
  auto copy = full;
  std::memset(copy.data() + 16, 0, 16);
  auto fh = reinterpret_cast<format::FileHeader*>(copy.data());
  fh->headerCheck = 0;
  {
    // recompute the check the way the writer does
    format::FileHeader h = *fh;
    h.headerCheck = static_cast<uint32_t>(XXH3_64bits(&h, 60));
    std::memcpy(copy.data(), &h, sizeof h);
  }
  tt::writeFile(d.path("open.trace"), copy.data(), copy.size());
  auto a = Reader::open(d.path("s.trace"));
  auto b = Reader::open(d.path("open.trace"));
  EXPECT_TRUE(a->closedCleanly());
  EXPECT_FALSE(b->closedCleanly());
  EXPECT_FALSE(b->truncatedAt());
  EXPECT_EQ(a->callCount(), b->callCount());
  ASSERT_EQ(a->blobs().size(), b->blobs().size());
  for (size_t i = 0; i < a->blobs().size(); ++i) {
    EXPECT_EQ(a->blobs()[i].ref, b->blobs()[i].ref);
    EXPECT_EQ(a->blobs()[i].dataOffset, b->blobs()[i].dataOffset);
  }
  EXPECT_EQ(a->header().producer, b->header().producer);
  EXPECT_EQ(b->api(1)->methodName, "addLayer");
}

TEST(Robustness, TruncateAtEveryByteOffset) {
  tt::TempDir d;
  auto s = tt::writeSample(d.path("s.trace"));
  auto full = tt::readFile(d.path("s.trace"));
  ASSERT_LT(full.size(), 64u * 1024);
  uint64_t lastCalls = 0, sawPartial = 0;
  for (size_t n = 0; n < full.size(); ++n) {
    auto p = d.path("cut.trace");
    tt::writeFile(p, full.data(), n);
    std::unique_ptr<Reader> r;
    ASSERT_NO_THROW(r = Reader::open(p)) << "cut at " << n;
    ASSERT_TRUE(r->truncatedAt().has_value()) << "cut at " << n;
    EXPECT_LE(*r->truncatedAt(), n);
    EXPECT_NE(r->truncationMessage().find("truncated at offset"), std::string::npos);
    // The calls read are a prefix of the full log, and grow monotonically with n.
    uint64_t next = 0;
    r->forEachCall([&](const CallView& c) {
      EXPECT_EQ(c.seq(), next++);
      return true;
    });
    EXPECT_EQ(next, r->callCount());
    EXPECT_GE(next, lastCalls);
    lastCalls = next;
    if (next > 0 && next < s.calls) ++sawPartial;
    // Blobs present in the prefix are intact.
    for (auto& b : r->blobs()) {
      auto v = r->blob(b.ref);
      auto& want = b.ref == s.rawRef ? s.rawBytes : s.zBytes;
      EXPECT_TRUE(std::equal(want.begin(), want.end(), v.bytes().begin(), v.bytes().end()));
    }
    auto rep = r->verify();
    EXPECT_TRUE(rep.truncated()) << "cut at " << n << ": " << (rep.issues.empty() ? "" : rep.issues[0].what);
  }
  EXPECT_EQ(lastCalls, s.calls);  // the last prefix (all but the last byte) lost only the footer
  auto r = Reader::open(d.path("s.trace"));
  EXPECT_FALSE(r->truncatedAt());
}

TEST(Robustness, TruncatedWhileOpenWithEveryCallFlush) {
  // A writer that never closed (crash): every complete segment is read.
  tt::TempDir d;
  auto p = d.path("open.trace");
  WriterOptions o;
  o.path = p;
  o.flush = FlushPolicy::EveryCall;
  auto w = Writer::create(o, tt::header());
  for (int i = 0; i < 10; ++i) w->beginCall(1, 0, 0).argI64(i).endCall();
  auto full = tt::readFile(p);
  for (size_t n : {full.size(), full.size() - 1, full.size() - 40, size_t(200)}) {
    tt::writeFile(d.path("cut"), full.data(), n);
    auto r = Reader::open(d.path("cut"));
    EXPECT_FALSE(r->closedCleanly());
    if (n == full.size()) {
      EXPECT_FALSE(r->truncatedAt());
      EXPECT_EQ(r->callCount(), 10u);
      EXPECT_TRUE(r->verify().ok());
    } else {
      EXPECT_TRUE(r->truncatedAt());
      EXPECT_TRUE(r->verify().truncated());
    }
  }
  w->close();
}

TEST(Robustness, EveryFlippedByteIsDetected) {
  tt::TempDir d;
  tt::writeSample(d.path("s.trace"));
  auto full = tt::readFile(d.path("s.trace"));
  auto p = d.path("flip.trace");
  for (size_t i = 0; i < full.size(); ++i) {
    auto copy = full;
    copy[i] ^= std::byte{0x40};
    tt::writeFile(p, copy.data(), copy.size());
    bool caught = false;
    try {
      auto r = Reader::open(p);
      auto rep = r->verify();
      caught = !rep.ok();
      if (i >= 64) { EXPECT_TRUE(rep.corrupt()) << "flip at " << i << " reported as truncation"; }
    } catch (const Error& e) {
      caught = true;
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos);
    }
    ASSERT_TRUE(caught) << "flip at offset " << i << " went unnoticed";
  }
}

TEST(Robustness, VerifyNamesTheDamagedSegmentOrBlob) {
  tt::TempDir d;
  auto s = tt::writeSample(d.path("s.trace"));
  auto full = tt::readFile(d.path("s.trace"));
  auto r0 = Reader::open(d.path("s.trace"));
  const BlobInfo* raw = nullptr;
  for (auto& b : r0->blobs())
    if (b.ref == s.rawRef) raw = &b;
  ASSERT_TRUE(raw);
  auto p = d.path("flip.trace");
  {  // a byte of the raw blob's data
    auto copy = full;
    copy[raw->dataOffset + 100] ^= std::byte{1};
    tt::writeFile(p, copy.data(), copy.size());
    auto rep = Reader::open(p)->verify();
    ASSERT_FALSE(rep.ok());
    EXPECT_NE(rep.issues[0].what.find("blob " + toHex(s.rawRef.hash)), std::string::npos) << rep.issues[0].what;
    EXPECT_NE(rep.issues[0].what.find("content hash mismatch"), std::string::npos);
    EXPECT_EQ(rep.issues[0].offset, raw->offset);
  }
  {  // the last byte of the segment block's payload
    auto seg = r0->segmentInfo(0);
    EXPECT_TRUE(seg.compressed);  // the sample's first segment is stored zstd-compressed
    size_t off = static_cast<size_t>(seg.offset + sizeof(format::BlockHeader) + seg.storedSize) - 3;
    auto copy = full;
    copy[off] ^= std::byte{1};
    tt::writeFile(p, copy.data(), copy.size());
    auto r = Reader::open(p);  // closed: open is O(1) and does not touch the segment
    auto rep = r->verify();
    ASSERT_FALSE(rep.ok());
    EXPECT_NE(rep.issues[0].what.find("segment 0"), std::string::npos) << rep.issues[0].what;
    // Reading the damaged segment throws one clear error naming it.
    try {
      r->forEachCall([](const CallView&) { return true; });
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("segment 0 at offset"), std::string::npos) << e.what();
    }
  }
}

TEST(Robustness, NotATraceAndNewerVersions) {
  tt::TempDir d;
  auto p = d.path("x");
  std::string junk = "hello, this is not a trace at all...................................";
  tt::writeFile(p, reinterpret_cast<const std::byte*>(junk.data()), junk.size());
  try {
    Reader::open(p);
    FAIL();
  } catch (const Error& e) { EXPECT_EQ(std::string(e.what()), p + ": offset 0: not a trtrace file (bad magic)"); }
  EXPECT_THROW(Reader::open(d.path("missing")), Error);

  tt::writeSample(d.path("s.trace"));
  auto full = tt::readFile(d.path("s.trace"));
  auto bump = [&](uint16_t major, uint16_t minor) {
    auto copy = full;
    format::FileHeader h;
    std::memcpy(&h, copy.data(), sizeof h);
    h.versionMajor = major;
    h.versionMinor = minor;
    h.headerCheck = static_cast<uint32_t>(XXH3_64bits(&h, 60));
    std::memcpy(copy.data(), &h, sizeof h);
    tt::writeFile(p, copy.data(), copy.size());
  };
  bump(format::kVersionMajor, format::kVersionMinor + 1);  // newer minor: readable
  EXPECT_EQ(Reader::open(p)->callCount(), 4u);
  bump(format::kVersionMajor + 1, 0);  // newer major: refused with one line
  try {
    Reader::open(p);
    FAIL();
  } catch (const Error& e) {
    const std::string newer = "format version " + std::to_string(format::kVersionMajor + 1) + ".0 is not supported";
    EXPECT_NE(std::string(e.what()).find(newer), std::string::npos) << e.what();
  }
}

TEST(Robustness, FullSegmentIsWrittenAfterTheBlobsItsCallsReference) {
  // A segment flushed because it is full (the policy alone would wait for close) must not reach the
  // file before the blobs its calls reference: a crash right after it would leave calls whose
  // weights are missing. Workers compress large blobs slowly, so without the ordering the reader
  // below would see calls ahead of their blobs.
  tt::TempDir d;
  auto p = d.path("open.trace");
  WriterOptions o;
  o.path = p;
  o.flush = FlushPolicy::AtClose;
  o.segmentBytes = 1;  // every call fills its segment
  o.workerThreads = 2;
  o.zstdLevel = 19;
  auto w = Writer::create(o, tt::header());
  std::vector<std::vector<std::byte>> keep;
  for (int i = 0; i < 4; ++i) {
    keep.push_back(tt::floatBytes(1 << 20, 100 + i));
    BlobRef ref = w->putBlob(keep.back().data(), keep.back().size(), BlobHint::F32);
    w->beginCall(1, 0, 0).argWeightsBlob(0, 1 << 20, ref).endCall();
    // The file as a crash at this instant would leave it: a full segment is written by the log's
    // own thread, so the newest calls may not be there yet, but no call is there without its blob.
    auto r = Reader::open(p);
    ASSERT_LE(r->callCount(), uint64_t(i + 1));
    r->forEachCall([&](const CallView& c) {
      EXPECT_TRUE(r->hasBlob(c.arg(0).blob())) << "call " << c.seq() << " is on disk before its weights";
      return true;
    });
    w->flush();  // returns once every call so far is on disk
    ASSERT_EQ(Reader::open(p)->callCount(), uint64_t(i + 1));
  }
  w->close();
}
