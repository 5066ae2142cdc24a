// Round trip of every value kind, call fields, descriptors, header; flush policies; threads.
#include <gtest/gtest.h>

#include <functional>
#include <set>
#include <thread>

#include "test_util.h"

using namespace trtrace;

TEST(RoundTrip, EveryValueKind) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  const int64_t dims[] = {1, 3, 224, 224};
  const uint64_t handles[] = {0x1000, 0, 0x2000};
  const int64_t ints[] = {-5, 0, INT64_MAX};
  const float floats[] = {1.5f, -0.0f, 3.25e-7f};
  const std::byte bytes[] = {std::byte{1}, std::byte{2}, std::byte{255}};
  const std::byte inl[] = {std::byte{9}, std::byte{8}, std::byte{7}, std::byte{6}};
  BlobRef blob{{0x1111, 0x2222}, 64};  // a reference only (the blob itself is not needed here)
  {
    WriterOptions o;
    o.path = path;
    auto w = Writer::create(o, tt::header());
    std::string_view names[] = {"a", "b"};
    w->describeApi(7, "Iface", "method", names);
    auto& e = w->beginCall(7, 0xABC, 3);
    e.argNull()
        .argBool(true)
        .argI64(-42)
        .argU64(UINT64_MAX)
        .argF32(1.25f)
        .argF64(-2.5e300)
        .argString("hello \"world\"")
        .argEnum(12, -3)
        .argDims(dims)
        .argHandle(0xDEAD, 5)
        .argHandleArray(handles)
        .argI64Array(ints)
        .argF32Array(floats)
        .argBytes(bytes)
        .argWeightsInline(1, 2, inl)
        .argWeightsBlob(2, 16, blob)
        .argWeightsRandom(3, 1000, 77)
        .argDims({});
    e.retHandle(0xBEEF, 9).unsupported("IFoo", 17).message("note");
    std::string errs[] = {"err one", "err two"};
    e.buildResult(false, 0, Hash128{}, errs);
    EXPECT_EQ(e.endCall(), 0u);
    w->beginCall(8, 0, 0).retF32(0.5f).endCall();
    w->beginCall(8, 0, 0).retString("s").endCall();
    w->close();
  }
  auto r = Reader::open(path);
  EXPECT_TRUE(r->closedCleanly());
  EXPECT_FALSE(r->truncatedAt());
  EXPECT_EQ(r->callCount(), 3u);
  auto& h = r->header();
  EXPECT_EQ(h.producer, "trace_tests");
  EXPECT_EQ(h.libraryName, "testlib");
  EXPECT_EQ(h.libraryVersion, "1.2.3");
  EXPECT_EQ(h.host, "testhost");
  EXPECT_EQ(h.pid, 42u);
  ASSERT_EQ(h.settings.size(), 2u);
  EXPECT_EQ(h.settings[1].first, "mode");
  const ApiInfo* a = r->api(7);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->interfaceName, "Iface");
  EXPECT_EQ(a->methodName, "method");
  ASSERT_EQ(a->argNames.size(), 2u);
  EXPECT_EQ(a->argNames[1], "b");
  EXPECT_EQ(r->api(8), nullptr);  // never described

  std::vector<uint64_t> seqs;
  r->forEachCall([&](const CallView& c) {
    seqs.push_back(c.seq());
    if (c.seq() != 0) {
      auto v = c.ret();
      EXPECT_TRUE(v);
      if (c.seq() == 1) { EXPECT_EQ(v->asF64(), 0.5); }
      if (c.seq() == 2) { EXPECT_EQ(v->asString(), "s"); }
      return true;
    }
    EXPECT_EQ(c.apiId(), 7u);
    EXPECT_EQ(c.receiver(), 0xABCu);
    EXPECT_EQ(c.networkId(), 3u);
    EXPECT_EQ(c.thread(), uint64_t(gettid()));
    EXPECT_EQ(c.argCount(), 18u);
    EXPECT_EQ(c.arg(0).kind(), ValueKind::Null);
    EXPECT_EQ(c.arg(1).kind(), ValueKind::Bool);
    EXPECT_TRUE(c.arg(1).asBool());
    EXPECT_EQ(c.arg(2).asI64(), -42);
    EXPECT_EQ(c.arg(3).asU64(), UINT64_MAX);
    EXPECT_EQ(c.arg(4).kind(), ValueKind::F32);
    EXPECT_EQ(float(c.arg(4).asF64()), 1.25f);
    EXPECT_EQ(c.arg(5).asF64(), -2.5e300);
    EXPECT_EQ(c.arg(6).asString(), "hello \"world\"");
    EXPECT_EQ(c.arg(7).kind(), ValueKind::Enum);
    EXPECT_EQ(c.arg(7).typeId(), 12u);
    EXPECT_EQ(c.arg(7).asI64(), -3);
    EXPECT_EQ(std::vector<int64_t>(c.arg(8).ints().begin(), c.arg(8).ints().end()),
              std::vector<int64_t>(std::begin(dims), std::end(dims)));
    EXPECT_EQ(c.arg(9).kind(), ValueKind::Handle);
    EXPECT_EQ(c.arg(9).asU64(), 0xDEADu);
    EXPECT_EQ(c.arg(9).typeId(), 5u);
    EXPECT_EQ(c.arg(10).handles().size(), 3u);
    EXPECT_EQ(c.arg(10).handles()[2], 0x2000u);
    EXPECT_EQ(c.arg(11).ints().size(), 3u);
    EXPECT_EQ(c.arg(11).ints()[2], INT64_MAX);
    EXPECT_EQ(c.arg(12).floats().size(), 3u);
    EXPECT_EQ(c.arg(12).floats()[2], 3.25e-7f);
    EXPECT_TRUE(std::signbit(c.arg(12).floats()[1]));
    EXPECT_EQ(c.arg(13).bytes().size(), 3u);
    EXPECT_EQ(c.arg(13).bytes()[2], std::byte{255});
    EXPECT_EQ(c.arg(14).kind(), ValueKind::WeightsInline);
    EXPECT_EQ(c.arg(14).dtype(), 1u);
    EXPECT_EQ(c.arg(14).count(), 2u);
    EXPECT_EQ(c.arg(14).bytes().size(), 4u);
    EXPECT_EQ(c.arg(15).kind(), ValueKind::WeightsBlob);
    EXPECT_EQ(c.arg(15).blob(), blob);
    EXPECT_EQ(c.arg(15).count(), 16u);
    EXPECT_EQ(c.arg(16).kind(), ValueKind::WeightsRandom);
    EXPECT_EQ(c.arg(16).seed(), 77u);
    EXPECT_EQ(c.arg(16).count(), 1000u);
    EXPECT_EQ(c.arg(17).kind(), ValueKind::Dims);
    EXPECT_TRUE(c.arg(17).ints().empty());
    EXPECT_EQ(c.arg(99).kind(), ValueKind::Null);  // out of range reads as null
    auto ret = c.ret();
    EXPECT_TRUE(ret && ret->asU64() == 0xBEEF && ret->typeId() == 9);
    EXPECT_EQ(c.status(), CallStatus::Unsupported);
    EXPECT_EQ(c.unsupportedInterface(), "IFoo");
    EXPECT_EQ(c.unsupportedSlot(), 17u);
    EXPECT_EQ(c.message(), "note");
    auto b = c.buildResult();
    EXPECT_TRUE(b && !b->ok && b->errors.size() == 2 && b->errors[1] == "err two");
    EXPECT_EQ(c.arg(8).toString(), "dims[1, 3, 224, 224]");
    return true;
  });
  EXPECT_EQ(seqs, (std::vector<uint64_t>{0, 1, 2}));
  // The blob reference points at a blob this trace never stored: verify says so.
  auto rep = r->verify();
  ASSERT_EQ(rep.issues.size(), 1u);
  EXPECT_TRUE(rep.corrupt());
  EXPECT_NE(rep.issues[0].what.find("call 0 references blob"), std::string::npos) << rep.issues[0].what;
}

TEST(RoundTrip, VoidReturnAndBuildResult) {
  tt::TempDir d;
  auto s = tt::writeSample(d.path("s.trace"));
  auto r = Reader::open(d.path("s.trace"));
  int builds = 0;
  r->forEachCall([&](const CallView& c) {
    if (c.seq() == 3) { EXPECT_FALSE(c.ret()); }
    if (auto b = c.buildResult()) {
      ++builds;
      EXPECT_TRUE(b->ok);
      EXPECT_EQ(b->engineSize, 4096u);
      EXPECT_EQ(b->engineHash, (Hash128{1, 2}));
    }
    return true;
  });
  EXPECT_EQ(builds, 1);
}

TEST(RoundTrip, DescriptorWrittenOnceInFirstSegmentThatUsesIt) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  WriterOptions o;
  o.path = path;
  o.flush = FlushPolicy::EveryCall;
  auto w = Writer::create(o, tt::header());
  std::string_view n[] = {"x"};
  w->describeApi(1, "A", "f", n);
  w->describeApi(2, "B", "g", n);
  w->beginCall(2, 0, 0).argI64(1).endCall();
  w->beginCall(1, 0, 0).argI64(1).endCall();
  w->beginCall(1, 0, 0).argI64(2).endCall();
  // Before close: every segment is on disk (EveryCall); any prefix is self-describing.
  {
    auto r = Reader::open(path);
    EXPECT_FALSE(r->closedCleanly());
    EXPECT_EQ(r->segmentCount(), 3u);
    EXPECT_EQ(r->callCount(), 3u);
    ASSERT_NE(r->api(1), nullptr);
    EXPECT_EQ(r->api(2)->methodName, "g");
    EXPECT_TRUE(r->verify().ok());
  }
  w->close();
  auto r = Reader::open(path);
  EXPECT_TRUE(r->closedCleanly());
  // Segment 0 carries only api 2, segment 1 api 1, segment 2 none.
  for (size_t i = 0; i < 3; ++i) {
    int count = 0;
    r->forEachCallInSegment(i, [&](const CallView&) { return ++count, true; });
    EXPECT_EQ(count, 1);
  }
}

TEST(RoundTrip, FlushPolicies) {
  for (auto policy : {FlushPolicy::EveryCall, FlushPolicy::OnBuild, FlushPolicy::AtClose}) {
    tt::TempDir d;
    auto path = d.path("t.trace");
    WriterOptions o;
    o.path = path;
    o.flush = policy;
    auto w = Writer::create(o, tt::header());
    w->beginCall(1, 0, 0).endCall();
    w->beginCall(1, 0, 0).endCall();
    w->beginCall(2, 0, 0).buildResult(true, 1, {}).endCall();
    w->beginCall(1, 0, 0).endCall();
    auto before = Reader::open(path);
    uint64_t expected = policy == FlushPolicy::EveryCall ? 4 : policy == FlushPolicy::OnBuild ? 3 : 0;
    EXPECT_EQ(before->callCount(), expected);
    w->close();
    EXPECT_EQ(Reader::open(path)->callCount(), 4u);
  }
}

// WriterOptions::onCall (the shim's JSON+BIN export): each call once, as appended, in sequence
// order from several threads, with the values the trace holds for it.
TEST(RoundTrip, OnCallSeesEachCallOnceInOrder) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  WriterOptions o;
  o.path = path;
  std::vector<std::pair<uint64_t, int64_t>> seen;  // (seq, argument): under the call log's lock
  o.onCall = [&](const CallView& c) { seen.emplace_back(c.seq(), c.arg(0).asI64()); };
  auto w = Writer::create(o, tt::header());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) w->beginCall(1, 0, 0).argI64(t * 1000 + i).endCall();
    });
  for (auto& t : threads) t.join();
  w->close();
  ASSERT_EQ(seen.size(), 400u);
  size_t k = 0;
  Reader::open(path)->forEachCall([&](const CallView& c) {
    EXPECT_EQ(seen[k], std::make_pair(c.seq(), c.arg(0).asI64()));
    ++k;
    return true;
  });
  EXPECT_EQ(k, 400u);
}

TEST(RoundTrip, SegmentSizeLimitSplitsSegments) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  WriterOptions o;
  o.path = path;
  o.flush = FlushPolicy::AtClose;
  o.segmentBytes = 4096;
  auto w = Writer::create(o, tt::header());
  for (int i = 0; i < 1000; ++i) w->beginCall(1, i, 0).argString("some argument text").endCall();
  w->close();
  auto r = Reader::open(path);
  EXPECT_GT(r->segmentCount(), 10u);
  uint64_t next = 0;
  r->forEachCall([&](const CallView& c) {
    EXPECT_EQ(c.seq(), next++);
    return true;
  });
  EXPECT_EQ(next, 1000u);
}

namespace {
// Runs body(0) .. body(n - 1), each on a thread of its own, and waits for them.
void onThreads(int n, const std::function<void(int)>& body) {
  std::vector<std::thread> ts;
  for (int t = 0; t < n; ++t) ts.emplace_back(body, t);
  for (auto& t : ts) t.join();
}
}  // namespace

TEST(Threads, ConcurrentCallsAndBlobs) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  const int kThreads = 8, kCalls = 500;
  std::vector<std::vector<std::byte>> data;
  for (int i = 0; i < 16; ++i) data.push_back(tt::randomBytes(5000 + i, i));
  {
    WriterOptions o;
    o.path = path;
    o.workerThreads = 2;
    o.flush = FlushPolicy::EveryCall;
    o.queueBytes = 20000;  // small: exercises the blocking path
    auto w = Writer::create(o, tt::header());
    onThreads(kThreads, [&](int t) {
      for (int i = 0; i < kCalls; ++i) {
        auto& blob = data[(t + i) % data.size()];
        BlobRef ref = w->putBlob(blob.data(), blob.size(), BlobHint::None);
        auto& e = w->beginCall(1, uint64_t(t), uint32_t(t));
        // A nested call on the same thread while the first is open.
        if (i % 50 == 0) w->beginCall(2, 0, uint32_t(t)).argI64(i).endCall();
        e.argI64(i).argWeightsBlob(0, blob.size(), ref).endCall();
      }
    });
    w->close();
    auto st = w->stats();
    EXPECT_EQ(st.uniqueBlobs, 16u);
    EXPECT_EQ(st.blobPuts, uint64_t(kThreads * kCalls));
  }
  auto r = Reader::open(path);
  EXPECT_EQ(r->callCount(), uint64_t(kThreads * kCalls + kThreads * kCalls / 50));
  std::vector<int> perThread(kThreads, 0);
  uint64_t next = 0;
  std::set<uint64_t> tids;
  r->forEachCall([&](const CallView& c) {
    EXPECT_EQ(c.seq(), next++);
    tids.insert(c.thread());
    if (c.apiId() == 1) {
      EXPECT_EQ(c.arg(0).asI64(), perThread[c.networkId()]++);  // per-thread order preserved
      EXPECT_TRUE(r->hasBlob(c.arg(1).blob()));
    }
    return true;
  });
  EXPECT_EQ(tids.size(), size_t(kThreads));
  EXPECT_EQ(r->blobs().size(), 16u);
  for (auto& b : data) {
    auto v = r->blob(hash128(b.data(), b.size()), b.size());
    EXPECT_TRUE(std::equal(b.begin(), b.end(), v.bytes().begin(), v.bytes().end()));
  }
  EXPECT_TRUE(r->verify().ok());
}

// The batched path: threads append drafts that the call log's thread encodes, segments cut in the
// middle of a batch, weights keyed off the callers' threads, and build calls flushing in between.
TEST(Threads, BatchedCallsKeepTheirOrderValuesAndKeys) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  const int kThreads = 4, kCalls = 3000;
  std::vector<std::vector<std::byte>> data;
  for (int i = 0; i < 8; ++i) data.push_back(tt::randomBytes(3000 + i, 100 + i));
  {
    WriterOptions o;
    o.path = path;
    o.workerThreads = 2;
    o.deferKeys = true;
    o.flush = FlushPolicy::OnBuild;
    o.segmentBytes = 16 << 10;
    auto w = Writer::create(o, tt::header());
    onThreads(kThreads, [&](int t) {
      for (int i = 0; i < kCalls; ++i) {
        auto& blob = data[(t + i) % data.size()];
        const BlobRef ref = w->putBlob(blob.data(), blob.size(), BlobHint::None);
        const int64_t ints[] = {t, i, -i};
        const std::string text = "thread " + std::to_string(t) + " call " + std::to_string(i);
        auto& e = w->beginCall(1, uint64_t(t), uint32_t(t));
        e.argI64(i).argString(text).argI64Array(ints).argWeightsBlob(0, blob.size(), ref).endCall();
        if (t == 0 && i % 1000 == 999) w->beginCall(2, 0, 0).buildResult(true, 0, Hash128{}).endCall();
      }
    });
    w->close();
  }
  auto r = Reader::open(path);
  EXPECT_EQ(r->callCount(), uint64_t(kThreads * kCalls + 3));
  EXPECT_GT(r->segmentCount(), 10u);
  std::vector<int64_t> perThread(kThreads, 0);
  uint64_t next = 0;
  r->forEachCall([&](const CallView& c) {
    EXPECT_EQ(c.seq(), next++);
    if (c.apiId() != 1) return true;
    const int t = static_cast<int>(c.networkId());
    const int64_t i = perThread[t]++;
    EXPECT_EQ(c.arg(0).asI64(), i);  // per-thread order preserved
    EXPECT_EQ(c.arg(1).asString(), "thread " + std::to_string(t) + " call " + std::to_string(i));
    const auto ints = c.arg(2).ints();
    EXPECT_TRUE(ints.size() == 3 && ints[0] == t && ints[1] == i && ints[2] == -i);
    auto& blob = data[(t + i) % data.size()];
    EXPECT_EQ(c.arg(3).blob(), (BlobRef{hash128(blob.data(), blob.size()), blob.size()}));  // content keys
    return true;
  });
  EXPECT_EQ(next, uint64_t(kThreads * kCalls + 3));
  EXPECT_TRUE(r->verify().ok());
}
