// Call-log compression: zstd segments round trip, stay raw when that is smaller, are verified
// before they are trusted (crafted headers), are inflated one at a time, and shrink the log.
#include <gtest/gtest.h>

#include <xxhash.h>

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <string>

#include "test_util.h"
#include "trtrace/format.h"

using namespace trtrace;
namespace F = trtrace::format;

namespace {

// A realistic, repetitive build sequence: a transformer-like network of `blocks` blocks, each
// layer a few calls (add layer with weights blobs, get output, set name, set a type), plus a
// build at the end. Returns the number of calls written.
uint64_t writeTransformerLike(const std::string& path, int logLevel, int blocks, uint64_t segmentBytes = 8 << 20) {
  WriterOptions o;
  o.path = path;
  o.flush = FlushPolicy::AtClose;
  o.logZstdLevel = logLevel;
  o.segmentBytes = segmentBytes;
  o.workerThreads = 0;
  auto w = Writer::create(o, tt::header());
  std::string_view n2[] = {"input", "weights"}, n1[] = {"index"}, nName[] = {"name"};
  w->describeApi(1, "INetworkDefinition", "addConstant", n2);
  w->describeApi(2, "INetworkDefinition", "addMatrixMultiply", n2);
  w->describeApi(3, "ILayer", "getOutput", n1);
  w->describeApi(4, "ILayer", "setName", nName);
  w->describeApi(5, "INetworkDefinition", "addElementWise", n2);
  w->describeApi(6, "ITensor", "setType", n1);
  w->describeApi(7, "IBuilder", "buildSerializedNetwork", n2);
  uint64_t handle = 0x7f0000001000, calls = 0;
  auto next = [&] { return handle += 0x40; };
  const uint64_t net = 0x7f00000000a0;
  uint64_t x = next();
  std::vector<std::byte> weights(1024);  // small distinct blobs (stored compressed, apart from the log)
  for (int b = 0; b < blocks; ++b) {
    for (int l = 0; l < 6; ++l) {
      const int64_t dims[] = {1, 16, 16};
      const int id = b * 6 + l;
      std::memcpy(weights.data(), &id, sizeof id);
      BlobRef wref = w->putBlob(weights.data(), weights.size(), BlobHint::F32);
      uint64_t cst = next();
      w->beginCall(1, net, 1).argDims(dims).argWeightsBlob(0, 256, wref).retHandle(cst, 3).endCall();
      uint64_t ct = next();
      w->beginCall(3, cst, 1).argI64(0).retHandle(ct, 2).endCall();
      uint64_t mm = next();
      w->beginCall(2, net, 1).argHandle(x, 2).argEnum(11, 0).argHandle(ct, 2).argEnum(11, 1).retHandle(mm, 4).endCall();
      w->beginCall(4, mm, 1)
          .argString("block." + std::to_string(b) + ".layer." + std::to_string(l) + ".matmul")
          .endCall();
      uint64_t out = next();
      w->beginCall(3, mm, 1).argI64(0).retHandle(out, 2).endCall();
      uint64_t ew = next();
      w->beginCall(5, net, 1).argHandle(out, 2).argHandle(x, 2).argEnum(12, 0).retHandle(ew, 5).endCall();
      w->beginCall(6, out, 1).argEnum(13, 1).endCall();
      x = next();
      w->beginCall(3, ew, 1).argI64(0).retHandle(x, 2).endCall();
      calls += 8;
    }
  }
  w->beginCall(7, 0x50, 1)
      .argHandle(net, 1)
      .argHandle(0x60, 6)
      .buildResult(true, 123456, Hash128{1, 2})
      .retHandle(0x70, 7)
      .endCall();
  w->close();
  return calls + 1;
}

uint64_t callLogBytes(const Reader& r) {  // segment payloads as stored
  uint64_t n = 0;
  for (size_t i = 0; i < r.segmentCount(); ++i) n += r.segmentInfo(i).storedSize;
  return n;
}

// Rewrites a block's checks after its payload was edited (what a crafted file would do).
void reseal(std::vector<std::byte>& f, uint64_t at) {
  F::BlockHeader h;
  std::memcpy(&h, f.data() + at, sizeof h);
  h.payloadCheck = static_cast<uint32_t>(XXH3_64bits(f.data() + at + sizeof h, h.checkedSize));
  h.headerCheck = static_cast<uint32_t>(XXH3_64bits(&h, offsetof(F::BlockHeader, headerCheck)));
  std::memcpy(f.data() + at, &h, sizeof h);
}

// The error or verify line for a crafted file, "" if it read cleanly.
std::string problemOf(const std::string& p) {
  try {
    auto r = Reader::open(p);
    auto rep = r->verify();
    r->forEachCall([](const CallView&) { return true; });
    return rep.issues.empty() ? "" : rep.issues[0].what;
  } catch (const Error& e) { return e.what(); }
}

}  // namespace

TEST(CallLog, CompressedSegmentsRoundTrip) {
  tt::TempDir d;
  auto pz = d.path("z.trace"), praw = d.path("raw.trace");
  const uint64_t calls = writeTransformerLike(pz, 3, 40, 16 << 10);  // small segments: many of them
  writeTransformerLike(praw, 0, 40, 16 << 10);
  auto z = Reader::open(pz), raw = Reader::open(praw);
  ASSERT_EQ(z->callCount(), calls);
  ASSERT_EQ(raw->callCount(), calls);
  ASSERT_GT(z->segmentCount(), 5u);
  for (size_t i = 0; i < z->segmentCount(); ++i) {
    EXPECT_TRUE(z->segmentInfo(i).compressed) << "segment " << i;
    EXPECT_FALSE(raw->segmentInfo(i).compressed) << "segment " << i;
    // The inflated FlatBuffer is the raw one, byte for byte.
    auto a = z->segmentBytes(i), b = raw->segmentBytes(i);
    EXPECT_FALSE(a.isZeroCopy());
    EXPECT_TRUE(b.isZeroCopy());
    EXPECT_TRUE(std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin(), b.bytes().end())) << "segment " << i;
  }
  // Every call reads the same through both readers, walked side by side.
  CallCursor ca(*z), cb(*raw);
  uint64_t n = 0;
  for (const CallView *x = ca.next(), *y = cb.next(); x || y; x = ca.next(), y = cb.next(), ++n) {
    ASSERT_TRUE(x && y);
    EXPECT_EQ(x->seq(), n);
    EXPECT_EQ(x->seq(), y->seq());
    EXPECT_EQ(x->apiId(), y->apiId());
    EXPECT_EQ(x->receiver(), y->receiver());
    ASSERT_EQ(x->argCount(), y->argCount());
    for (size_t k = 0; k < x->argCount(); ++k) EXPECT_EQ(x->arg(k).toString(), y->arg(k).toString());
    EXPECT_EQ(x->ret().has_value(), y->ret().has_value());
    if (x->ret()) { EXPECT_EQ(x->ret()->toString(), y->ret()->toString()); }
    EXPECT_EQ(x->buildResult().has_value(), y->buildResult().has_value());
  }
  EXPECT_EQ(n, calls);
  // API names come from the first segment and outlive its inflated buffer.
  ASSERT_NE(z->api(4), nullptr);
  EXPECT_EQ(z->api(4)->methodName, "setName");
  EXPECT_EQ(z->api(7)->argNames[1], "weights");
  auto rep = z->verify();
  EXPECT_TRUE(rep.ok()) << (rep.issues.empty() ? "" : rep.issues[0].what);
  EXPECT_EQ(rep.calls, calls);
  // The forward scan (file not closed) inflates and indexes the same segments.
  auto f = tt::readFile(pz);
  F::FileHeader fh;
  std::memcpy(&fh, f.data(), sizeof fh);
  f.resize(fh.footerOffset);
  tt::writeFile(d.path("open.trace"), f.data(), f.size());
  auto s = Reader::open(d.path("open.trace"));
  EXPECT_FALSE(s->closedCleanly());
  EXPECT_EQ(s->callCount(), calls);
  EXPECT_EQ(s->segmentCount(), z->segmentCount());
  uint64_t seen = 0;
  s->forEachCall([&](const CallView& c) {
    EXPECT_EQ(c.seq(), seen++);
    return true;
  });
  EXPECT_EQ(seen, calls);
}

TEST(CallLog, SmallAndIncompressibleSegmentsStayRaw) {
  tt::TempDir d;
  auto p = d.path("t.trace");
  WriterOptions o;
  o.path = p;
  o.flush = FlushPolicy::EveryCall;
  auto w = Writer::create(o, tt::header());
  w->beginCall(1, 0, 0).endCall();  // a tiny segment (under 128 B): not worth a frame
  auto noise = tt::randomBytes(32 << 10, 3);
  w->beginCall(1, 0, 0).argBytes(noise).endCall();  // incompressible: saves < 5%
  std::string text(4000, 'a');
  w->beginCall(1, 0, 0).argString(text).endCall();  // compressible
  w->close();
  auto st = w->stats();
  EXPECT_EQ(st.segments, 3u);
  EXPECT_EQ(st.compressedSegments, 1u);
  EXPECT_LT(st.segmentStoredBytes, st.segmentRawBytes);
  auto r = Reader::open(p);
  ASSERT_EQ(r->segmentCount(), 3u);
  EXPECT_FALSE(r->segmentInfo(0).compressed);
  EXPECT_FALSE(r->segmentInfo(1).compressed);
  EXPECT_TRUE(r->segmentInfo(2).compressed);
  EXPECT_LT(r->segmentInfo(2).storedSize, 200u);
  int i = 0;
  r->forEachCall([&](const CallView& c) {
    if (i == 1) {
      EXPECT_TRUE(std::equal(noise.begin(), noise.end(), c.arg(0).bytes().begin(), c.arg(0).bytes().end()));
    }
    if (i == 2) { EXPECT_EQ(c.arg(0).asString(), text); }
    return ++i, true;
  });
  EXPECT_EQ(i, 3);
  EXPECT_TRUE(r->verify().ok());
}

TEST(CallLog, AppendSegmentRecompressesOrStoresRaw) {
  tt::TempDir d;
  auto p = d.path("z.trace");
  const uint64_t calls = writeTransformerLike(p, 3, 10, 8 << 10);
  auto r = Reader::open(p);
  for (int level : {0, 3}) {
    auto q = d.path("copy" + std::to_string(level));
    WriterOptions o;
    o.path = q;
    o.logZstdLevel = level;
    o.workerThreads = 0;
    auto w = Writer::create(o, tt::header());
    for (auto& b : r->blobs()) {
      auto v = r->blob(b.ref);
      w->putBlob(v.data(), v.size(), b.hint);  // written before putBlob returns (no workers)
    }
    for (size_t i = 0; i < r->segmentCount(); ++i) w->appendSegment(r->segmentBytes(i).bytes());
    w->close();
    EXPECT_EQ(w->stats().calls, calls);
    auto c = Reader::open(q);
    ASSERT_EQ(c->segmentCount(), r->segmentCount());
    for (size_t i = 0; i < c->segmentCount(); ++i) {
      EXPECT_EQ(c->segmentInfo(i).compressed, level > 0);
      auto a = c->segmentBytes(i), b = r->segmentBytes(i);
      EXPECT_TRUE(std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin(), b.bytes().end()));
    }
    EXPECT_TRUE(c->verify().ok());
  }
}

TEST(CallLog, BytesPerCallDropSubstantially) {
  tt::TempDir d;
  auto pz = d.path("z.trace"), praw = d.path("raw.trace");
  const uint64_t calls = writeTransformerLike(pz, 3, 200);  // 9601 calls, one segment
  writeTransformerLike(praw, 0, 200);
  auto z = Reader::open(pz), raw = Reader::open(praw);
  const double rawPerCall = double(callLogBytes(*raw)) / double(calls);
  const double zPerCall = double(callLogBytes(*z)) / double(calls);
  std::printf("call log: %.1f B/call raw, %.1f B/call zstd (%.1fx)\n", rawPerCall, zPerCall, rawPerCall / zPerCall);
  EXPECT_GT(rawPerCall, 100.0);           // the FlatBuffer log this compares against
  EXPECT_LT(zPerCall * 6.0, rawPerCall);  // at least 6x smaller
}

TEST(CallLog, CraftedCompressedSegmentsAreRefused) {
  tt::TempDir d;
  auto p = d.path("z.trace");
  writeTransformerLike(p, 3, 4);
  auto full = tt::readFile(p);
  uint64_t at = Reader::open(p)->segmentInfo(0).offset;
  const uint64_t zhAt = at + sizeof(F::BlockHeader);
  F::SegmentZstdHeader zh;
  std::memcpy(&zh, full.data() + zhAt, sizeof zh);
  auto q = d.path("crafted.trace");
  auto craft = [&](auto edit) {
    auto f = full;
    edit(f);
    reseal(f, at);
    tt::writeFile(q, f.data(), f.size());
    return problemOf(q);
  };
  auto withHeader = [&](F::SegmentZstdHeader h) {
    return craft([&](std::vector<std::byte>& f) { std::memcpy(f.data() + zhAt, &h, sizeof h); });
  };
  auto expect = [&](const std::string& got, const std::string& want) {
    EXPECT_NE(got.find(want), std::string::npos) << got;
    EXPECT_NE(got.find("offset " + std::to_string(at)), std::string::npos) << got;  // names where
  };
  {  // a decompressed size over the cap: refused before anything is allocated
    auto h = zh;
    h.rawSize = F::kMaxSegmentRawSize + 1;
    expect(withHeader(h), "out of range");
  }
  {  // a size the frame does not declare
    auto h = zh;
    h.rawSize = zh.rawSize * 2;
    expect(withHeader(h), "frame does not declare the recorded size");
  }
  {  // a wrong check over the decompressed bytes
    auto h = zh;
    h.rawCheck ^= 1;
    expect(withHeader(h), "decompressed bytes fail their check");
  }
  {
    auto h = zh;
    h.reserved = 1;
    expect(withHeader(h), "reserved field not zero");
  }
  {  // an unknown flag bit: refused, never guessed at
    expect(craft([&](std::vector<std::byte>& f) {
             F::BlockHeader bh;
             std::memcpy(&bh, f.data() + at, sizeof bh);
             bh.flags |= 0x8000;
             std::memcpy(f.data() + at, &bh, sizeof bh);
           }),
           "unknown block flags 0x8001");
  }
  {  // a resealed flip inside the frame: the frame or the decompressed check catches it
    auto got = craft([&](std::vector<std::byte>& f) { f[zhAt + sizeof zh + 20] ^= std::byte{0x10}; });
    EXPECT_NE(got.find("segment 0"), std::string::npos) << got;
  }
  {  // the compressed flag dropped: the frame is no FlatBuffer
    auto got = craft([&](std::vector<std::byte>& f) {
      F::BlockHeader bh;
      std::memcpy(&bh, f.data() + at, sizeof bh);
      bh.flags = 0;
      std::memcpy(f.data() + at, &bh, sizeof bh);
    });
    EXPECT_NE(got.find("fails verification"), std::string::npos) << got;
  }
}

TEST(CallLog, TruncatedCompressedLogReadsAsTruncation) {
  // Every cut of a multi-segment compressed log: a prefix of the calls, reported as truncation.
  tt::TempDir d;
  auto p = d.path("z.trace");
  writeTransformerLike(p, 3, 6, 2048);
  auto full = tt::readFile(p);
  ASSERT_GT(Reader::open(p)->segmentCount(), 3u);
  uint64_t last = 0;
  for (size_t n = 64; n < full.size(); n += 7) {
    tt::writeFile(d.path("cut"), full.data(), n);
    auto r = Reader::open(d.path("cut"));
    ASSERT_TRUE(r->truncatedAt()) << n;
    uint64_t next = 0;
    r->forEachCall([&](const CallView& c) {
      EXPECT_EQ(c.seq(), next++);
      return true;
    });
    EXPECT_EQ(next, r->callCount());
    EXPECT_GE(next, last);
    last = next;
    EXPECT_TRUE(r->verify().truncated()) << n;
  }
}

TEST(CallLog, Version1TracesStillRead) {
  // A 1.x trace (raw segments, no flags) is read by this reader.
  tt::TempDir d;
  auto p = d.path("v1.trace");
  const uint64_t calls = writeTransformerLike(p, 0, 3);
  auto f = tt::readFile(p);
  F::FileHeader fh;
  std::memcpy(&fh, f.data(), sizeof fh);
  fh.versionMajor = 1;
  fh.versionMinor = 0;
  fh.headerCheck = static_cast<uint32_t>(XXH3_64bits(&fh, offsetof(F::FileHeader, headerCheck)));
  std::memcpy(f.data(), &fh, sizeof fh);
  tt::writeFile(p, f.data(), f.size());
  auto r = Reader::open(p);
  EXPECT_EQ(r->callCount(), calls);
  EXPECT_TRUE(r->verify().ok());
}

// Real-model fidelity, class 1: a scalar's Dims is an EMPTY int64 array, which FlatBuffers does not
// pre-align (it may lie 4-aligned). Such traces are valid: verify passes them, so every reader must
// decode every call of them. Empty Dims / arrays in every position (before and after 4-byte fields).
TEST(CallLog, EmptyEightByteArraysAnywhereDecodeAfterVerify) {
  tt::TempDir d;
  const auto path = d.path("scalars.trtrace");
  WriterOptions o;
  o.path = path;
  o.workerThreads = 0;
  auto w = Writer::create(o, tt::header());
  std::string_view names[] = {"a", "b", "c"};
  w->describeApi(1, "INetworkDefinition", "addConstant", names);
  const int64_t none[1] = {};
  const std::span<const int64_t> empty(none, 0);
  const std::span<const uint64_t> noHandles;
  uint64_t calls = 0;
  for (int lead = 0; lead < 4; ++lead)
    for (int tail = 0; tail < 3; ++tail, ++calls) {
      auto& e = w->beginCall(1, 0x10, 1);
      for (int i = 0; i < lead; ++i) e.argEnum(7, i);
      e.argDims(empty).argI64Array(empty).argHandleArray(noHandles);
      for (int i = 0; i < tail; ++i) e.argBool(true);
      e.retDims(empty).endCall();
    }
  w->close();
  auto r = Reader::open(path);
  ASSERT_TRUE(r->verify().ok());
  uint64_t seen = 0;
  r->forEachCall([&](const CallView& c) {
    for (size_t i = 0; i < c.argCount(); ++i) {
      EXPECT_NO_THROW(EXPECT_TRUE(c.arg(i).ints().empty() || c.arg(i).kind() == ValueKind::Enum));
      EXPECT_NO_THROW(c.arg(i).handles());
    }
    EXPECT_TRUE(c.ret().has_value());
    if (c.ret()) { EXPECT_NO_THROW(EXPECT_TRUE(c.ret()->ints().empty())); }
    ++seen;
    return true;
  });
  EXPECT_EQ(seen, calls);
}

// The thread that appends calls (the application's, in a capture) never waits for the blob workers
// when a segment fills: full segments queue behind a blob still being written, and each is written
// once the blobs queued before it are. Here the worker's write is held (writeFault, a fault the
// real disk cannot produce on demand) while several segments fill.
TEST(CallLog, FullSegmentsQueueBehindABlobStillBeingWritten) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  std::mutex m;
  std::condition_variable cv;
  bool armed = false, held = false, released = false;
  WriterOptions o;
  o.path = path;
  o.flush = FlushPolicy::AtClose;
  o.segmentBytes = 4 << 10;
  o.workerThreads = 1;
  o.writeFault = [&] {  // the first write once armed (the worker's blob) waits for the test
    std::unique_lock l(m);
    if (armed && !held) {
      held = true;
      cv.notify_all();
      cv.wait(l, [&] { return released; });
    }
    return 0;
  };
  auto w = Writer::create(o, tt::header());
  std::string_view names[] = {"weights", "name"};
  w->describeApi(1, "INetworkDefinition", "addConstant", names);
  const auto a = tt::randomBytes(2 << 20, 1);  // big enough to wake the worker at once
  {
    std::lock_guard g(m);
    armed = true;
  }
  const BlobRef ra = w->putBlob(a.data(), a.size());
  {
    std::unique_lock l(m);
    cv.wait(l, [&] { return held; });  // the worker is inside its write
  }
  constexpr int kCalls = 400;  // about 10 full segments
  auto appended = std::async(std::launch::async, [&] {
    for (int i = 0; i < kCalls; ++i)
      w->beginCall(1, 0, 1)
          .argWeightsBlob(0, a.size(), ra)
          .argString(std::string(64, static_cast<char>('a' + i % 26)))
          .endCall();
  });
  // Not a timing assertion: a guard against the hang this test exists to catch.
  const bool returned = appended.wait_for(std::chrono::minutes(2)) == std::future_status::ready;
  EXPECT_TRUE(returned) << "appending calls waited for the blob being written";
  EXPECT_EQ(w->stats().segments, 0u) << "a segment was written before the blob its calls reference";
  {
    std::lock_guard g(m);
    released = true;
  }
  cv.notify_all();
  appended.wait();
  w->close();

  auto r = Reader::open(path);
  const VerifyReport rep = r->verify();
  ASSERT_TRUE(rep.ok()) << (rep.issues.empty() ? "" : rep.issues[0].what);
  EXPECT_EQ(rep.calls, uint64_t(kCalls));
  ASSERT_GT(r->segmentCount(), 3u);
  const BlobInfo* blob = r->blobInfo(ra);
  ASSERT_NE(blob, nullptr);
  for (size_t s = 0; s < r->segmentCount(); ++s) EXPECT_LT(blob->offset, r->segmentInfo(s).offset);
}
