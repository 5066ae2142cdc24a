// The player's weights source (replay/weights): the decode cache, the release of the trace's pages
// read, a second mapping of the same bytes. Over the reader's container access only.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "test_util.h"
#include "trtrace/weights_source.h"

using namespace trtrace;
using replay::WeightsSource;

namespace {

bool sameBytes(const BlobView& v, const std::vector<std::byte>& b) {
  return v.size() == b.size() && std::equal(b.begin(), b.end(), v.bytes().begin());
}

DecodeCacheOptions tempCache() {
  DecodeCacheOptions co;
  co.mode = DecodeCacheOptions::Mode::Temp;
  return co;
}

}  // namespace

// The decode cache holds the blobs the calls use, and only those (issue 23): a blob no call refers
// to is never decoded, whatever its record declares, so it costs no time, memory or disk.
TEST(WeightsSource, DecodeCacheDecodesOnlyTheBlobsCallsUse) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto used = tt::zeros(1 << 20), unused = tt::zeros(3 << 20);  // both compressed
  unused[0] = std::byte{1};
  {
    WriterOptions o;
    o.path = path;
    auto w = Writer::create(o, tt::header());
    const BlobRef ref = w->putBlob(used.data(), used.size());
    w->putBlob(unused.data(), unused.size());
    w->beginCall(1, 0, 0).argWeightsBlob(0, used.size(), ref).endCall();
    w->close();
  }
  auto r = Reader::open(path);
  ASSERT_EQ(r->blobs().size(), 2u);
  ASSERT_TRUE(r->blobs()[0].compressed && r->blobs()[1].compressed);
  WeightsSource ws(*r);
  const DecodeCacheReport rep = ws.useDecodeCache(tempCache());
  EXPECT_EQ(rep.how, DecodeCacheReport::How::Temp);
  EXPECT_EQ(rep.blobs, 1u);
  EXPECT_EQ(rep.bytes, used.size());
  const BlobView cached = ws.blob({hash128(used.data(), used.size()), used.size()}, true);
  EXPECT_TRUE(sameBytes(cached, used));
  EXPECT_TRUE(cached.isZeroCopy());  // a view into the cache's mapping, not a decode
  // The unused one still reads (decoded on use, outside the cache).
  EXPECT_TRUE(sameBytes(ws.blob({hash128(unused.data(), unused.size()), unused.size()}, true), unused));

  auto raw = d.path("raw.trace");  // no call uses a compressed blob: no cache at all
  {
    WriterOptions o;
    o.path = raw;
    auto w = Writer::create(o, tt::header());
    w->putBlob(unused.data(), unused.size());
    w->beginCall(1, 0, 0).endCall();
    w->close();
  }
  auto rawReader = Reader::open(raw);
  EXPECT_EQ(WeightsSource(*rawReader).useDecodeCache(tempCache()).how, DecodeCacheReport::How::None);
}

// WeightsSource::alias (issue 16): a second owner of a blob's bytes (the player's second application
// pointer to deduplicated weights) gets a second read-only mapping of the same file pages, not a
// copy: from the trace's mapping for a raw blob, from the decode cache's for a compressed one.
TEST(WeightsSource, AliasIsASecondMappingOfTheSamePages) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  auto big = tt::randomBytes(256 << 10, 3);  // raw: 4 KiB aligned
  auto zero = tt::zeros(1 << 20);            // compressed
  {
    WriterOptions o;
    o.path = path;
    auto w = Writer::create(o, tt::header());
    for (auto* b : {&big, &zero})
      w->beginCall(1, 0, 0).argWeightsBlob(0, b->size(), w->putBlob(b->data(), b->size())).endCall();
    w->close();
  }
  auto r = Reader::open(path);
  WeightsSource ws(*r);
  ASSERT_EQ(ws.useDecodeCache(tempCache()).how, DecodeCacheReport::How::Temp);
  for (auto* b : {&big, &zero}) {
    BlobView v = ws.blob({hash128(b->data(), b->size()), b->size()}, true);
    BlobView a = ws.alias(v);
    ASSERT_EQ(a.size(), b->size());
    EXPECT_TRUE(a.isZeroCopy());
    EXPECT_NE(a.data(), v.data());
    EXPECT_TRUE(sameBytes(a, *b));
  }
  auto own = std::make_unique<std::byte[]>(4096);  // not in a mapping of this reader: no alias
  BlobView owned = BlobView::owned(std::move(own), 4096);
  EXPECT_EQ(ws.alias(owned).size(), 0u);
}

namespace {
// Resident bytes of the mapping that starts at `m` (this process's /proc/self/smaps).
uint64_t residentBytes(std::span<const std::byte> m) {
  std::ifstream smaps("/proc/self/smaps");
  const auto want = reinterpret_cast<uintptr_t>(m.data());
  bool in = false;
  for (std::string line; std::getline(smaps, line);) {
    uintptr_t lo = 0;
    if (std::sscanf(line.c_str(), "%lx-", &lo) == 1 && line.find('-') < 17 && line.find(' ') > line.find('-'))
      in = lo == want;
    unsigned long kb = 0;
    if (in && std::sscanf(line.c_str(), "Rss: %lu kB", &kb) == 1) return uint64_t(kb) << 10;
  }
  return 0;
}
}  // namespace

// Reading a trace's blobs once leaves its mapping's pages resident (the kernel maps a fault's
// cached neighbours too); the weights source gives them back as it hands the blobs out, and blobs served from a decode
// cache never touch the trace's pages at all: the player's memory stays bounded however small the blobs.
TEST(WeightsSource, ReadingEveryBlobOnceLeavesLittleOfTheTraceResident) {
  tt::TempDir d;
  auto path = d.path("t.trace");
  std::vector<BlobRef> refs;
  for (const uint64_t minCompress : {uint64_t{1} << 30, uint64_t{0}}) {  // raw small blobs; compressed ones
    SCOPED_TRACE(minCompress);
    {
      WriterOptions o;
      o.path = path;
      o.workerThreads = 0;
      o.minCompressBytes = minCompress;
      auto w = Writer::create(o, tt::header());
      refs.clear();
      for (int i = 0; i < 1500; ++i) {
        auto bytes = tt::zeros(6000 + 8 * size_t(i));
        auto noise = tt::randomBytes(bytes.size() / 2, 1000 + i);  // distinct, half compressible
        std::copy(noise.begin(), noise.end(), bytes.begin());
        refs.push_back(w->putBlob(bytes.data(), bytes.size(), BlobHint::F32));
        w->beginCall(1, 0, 0)
            .argWeightsBlob(0, bytes.size(), refs.back())
            .endCall();  // the cache holds used blobs only
      }
      w->close();
    }
    auto r = Reader::open(path);
    const uint64_t size = r->mapping().size();
    WeightsSource ws(*r);
    if (minCompress) {
      for (const BlobRef& ref : refs) {  // read as a library would: the pages are mapped
        const BlobView v = r->blob(ref.hash, ref.length);
        EXPECT_EQ(hash128(v.data(), v.size()), ref.hash);
      }
      EXPECT_GT(residentBytes(r->mapping()), size / 2);  // what the test guards against
      std::vector<BlobView> views;
      for (const BlobRef& ref : refs) views.push_back(ws.blob(ref, true));
      ws.releaseNow();
    } else {
      ASSERT_EQ(ws.useDecodeCache(tempCache()).how, DecodeCacheReport::How::Temp);
      ASSERT_TRUE(r->blobs().at(0).compressed);
      for (const BlobRef& ref : refs) EXPECT_EQ(ws.blob(ref, true).size(), ref.length);
    }
    EXPECT_LT(residentBytes(r->mapping()), size / 20) << "of " << size;
  }
}
