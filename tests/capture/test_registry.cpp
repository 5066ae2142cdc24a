// capture/registry.h and capture/weights_identity.h: the numbers a trace names objects and weights by;
// capture/object_pool.h: the memory our objects live in; trace/include/trtrace/spin_lock.h: their lock.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <unordered_map>
#include <thread>
#include <utility>
#include <vector>

#include "object_pool.h"
#include "pointer_map.h"
#include "registry.h"
#include "trtrace/spin_lock.h"
#include "weights_identity.h"

using trtrace::SpinLock;
using trtrace::capture::ObjectPool;
using trtrace::capture::PointerMap;
using trtrace::capture::Registry;
using trtrace::capture::WeightsIdentity;

namespace {

// What the registry needs of capture::Object.
struct Node {
  void* real = nullptr;
  uint64_t handle = 0;
  uint32_t network = 0;
  Node* owner = nullptr;
  std::vector<Node*> owned;
  size_t ownedAt = 0;
};

struct Fixture : testing::Test {
  Registry<Node> reg;
  std::vector<std::unique_ptr<Node>> made;
  int reals[8] = {};
  Node* wrap(int i, Node* owner = nullptr, uint32_t network = 0) {
    return reg.wrap(
        &reals[i],
        [&](void* r) {
          made.push_back(std::make_unique<Node>());
          made.back()->real = r;
          return made.back().get();
        },
        owner, network);
  }
};

using ObjectRegistry = Fixture;

TEST_F(ObjectRegistry, NullIsNullAndMakesNothing) {
  EXPECT_EQ(reg.wrap(
                nullptr,
                [&](void*) -> Node* {
                  ADD_FAILURE() << "made";
                  return nullptr;
                },
                nullptr, 0),
            nullptr);
  EXPECT_EQ(reg.find(nullptr), nullptr);
}

TEST_F(ObjectRegistry, HandlesNumberFirstAppearancesFromOne) {
  Node* a = wrap(0);
  Node* b = wrap(1, nullptr, 7);
  EXPECT_EQ(wrap(0), a);  // the same real object: the same wrapper, made once
  EXPECT_EQ(made.size(), 2u);
  EXPECT_EQ(a->handle, 1u);
  EXPECT_EQ(b->handle, 2u);
  EXPECT_EQ(b->network, 7u);
  EXPECT_EQ(reg.find(&reals[1]), b);
  EXPECT_EQ(reg.find(&reals[2]), nullptr);
}

TEST_F(ObjectRegistry, OwnedObjectsAreLinkedAndUnlinked) {
  Node* net = wrap(0);
  Node* layer = wrap(1, net, 1);
  Node* tensor = wrap(2, net, 1);
  EXPECT_EQ(layer->owner, net);
  EXPECT_EQ(net->owned, (std::vector<Node*>{layer, tensor}));
  reg.unregister(layer);
  EXPECT_EQ(net->owned, (std::vector<Node*>{tensor}));
  EXPECT_EQ(reg.find(&reals[1]), nullptr);
  Node* again = wrap(1, net, 1);  // the library reused the address: a new object, a new handle
  EXPECT_NE(again, layer);
  EXPECT_EQ(again->handle, 4u);
}

// A network owns tens of thousands of objects, and a removed tensor leaves its owner's list in one
// step: the others stay listed once each, every one at the index it records.
TEST_F(ObjectRegistry, UnregisteringOneOfManyKeepsTheOwnersListExact) {
  static int many[64];
  Node* net = wrap(0);
  std::vector<Node*> kept;
  for (int& r : many)
    kept.push_back(reg.wrap(
        &r,
        [&](void* real) {
          made.push_back(std::make_unique<Node>());
          made.back()->real = real;
          return made.back().get();
        },
        net, 1));
  std::mt19937 rng(7);
  for (int round = 0; round < 40; ++round) {
    const size_t k = rng() % kept.size();
    reg.unregister(kept[k]);
    EXPECT_EQ(kept[k]->owner, nullptr);
    reg.unregister(kept[k]);  // twice: nothing more happens
    kept.erase(kept.begin() + static_cast<std::ptrdiff_t>(k));
    ASSERT_EQ(std::multiset<Node*>(net->owned.begin(), net->owned.end()),
              std::multiset<Node*>(kept.begin(), kept.end()));
    for (size_t i = 0; i < net->owned.size(); ++i) ASSERT_EQ(net->owned[i]->ownedAt, i);
  }
}

// An object whose address the registry already maps to a newer wrapper leaves that mapping alone.
TEST_F(ObjectRegistry, UnregisteringAStaleObjectKeepsTheNewerMapping) {
  Node* old = wrap(0);
  reg.unregister(old);
  Node* fresh = wrap(0);
  reg.unregister(old);
  EXPECT_EQ(reg.find(&reals[0]), fresh);
}

TEST_F(ObjectRegistry, NetworkIdsCountFromOne) {
  EXPECT_EQ(reg.networks(), 0u);
  EXPECT_EQ(reg.newNetworkId(), 1u);
  EXPECT_EQ(reg.newNetworkId(), 2u);
  EXPECT_EQ(reg.networks(), 2u);
}

// Threads wrapping the same objects at once get one wrapper each and distinct handles 1..N.
TEST_F(ObjectRegistry, ConcurrentWrapsMakeOneWrapperPerObject) {
  std::mutex madeMu;
  std::vector<std::thread> threads;
  std::vector<Node*> seen[4];
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 8; ++i)
        seen[t].push_back(reg.wrap(
            &reals[i],
            [&](void* r) {
              std::lock_guard lk(madeMu);
              made.push_back(std::make_unique<Node>());
              made.back()->real = r;
              return made.back().get();
            },
            nullptr, 0));
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(made.size(), 8u);
  for (int t = 1; t < 4; ++t) EXPECT_EQ(seen[t], seen[0]);
  std::set<uint64_t> handles;
  for (Node* n : seen[0]) handles.insert(n->handle);
  EXPECT_EQ(handles, (std::set<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
}

// A network's deletion releases its layers and tensors at once: unmapped, unlinked, handed back.
TEST_F(ObjectRegistry, ReleasingAnOwnersObjectsUnmapsAndUnlinksThem) {
  Node* net = wrap(0);
  Node* layer = wrap(1, net, 1);
  Node* tensor = wrap(2, net, 1);
  EXPECT_EQ(reg.releaseOwned(net), (std::vector<Node*>{layer, tensor}));
  EXPECT_TRUE(net->owned.empty());
  EXPECT_EQ(layer->owner, nullptr);
  EXPECT_EQ(tensor->owner, nullptr);
  EXPECT_EQ(reg.find(&reals[1]), nullptr);
  EXPECT_EQ(reg.find(&reals[2]), nullptr);
  EXPECT_EQ(reg.find(&reals[0]), net);
}

// Releasing one owner's objects leaves every other mapping in place, whatever share of the map goes.
TEST_F(ObjectRegistry, ReleasingOneOwnersObjectsLeavesTheOthersMapped) {
  Node* a = wrap(0);
  Node* b = wrap(1);
  std::vector<Node*> ofA{wrap(2, a), wrap(3, a), wrap(4, a), wrap(5, a)};
  Node* ofB = wrap(6, b);
  EXPECT_EQ(reg.releaseOwned(b), (std::vector<Node*>{ofB}));  // 1 of 7
  EXPECT_EQ(reg.find(&reals[6]), nullptr);
  EXPECT_EQ(reg.releaseOwned(a), ofA);  // 4 of 6
  for (int i = 2; i < 6; ++i) EXPECT_EQ(reg.find(&reals[i]), nullptr);
  EXPECT_EQ(reg.find(&reals[0]), a);
  EXPECT_EQ(reg.find(&reals[1]), b);
}

// The flat map against std::unordered_map over random inserts, lookups and erases of keys packed
// in a small range (long probe runs, wrap-around at the table's end, erases inside runs).
TEST(PointerMapTest, AgreesWithAStandardMapUnderRandomUse) {
  static char arena[4096];
  std::mt19937 rng(27);
  PointerMap<int> flat;
  std::unordered_map<const void*, int> model;
  for (int step = 0; step < 200000; ++step) {
    const void* key = &arena[(rng() % 1024) * 4];
    switch (rng() % 3) {
      case 0: {
        const int v = step;
        EXPECT_EQ(flat.emplace(key, v), model.emplace(key, v).first->second);
        break;
      }
      case 1: EXPECT_EQ(flat.erase(key), model.erase(key) == 1); break;
      default: {
        int* got = flat.find(key);
        auto it = model.find(key);
        ASSERT_EQ(got != nullptr, it != model.end());
        ASSERT_EQ(std::as_const(flat).contains(key), it != model.end());
        if (got) { EXPECT_EQ(*got, it->second); }
      }
    }
    ASSERT_EQ(flat.size(), model.size());
  }
}

TEST(WeightsIdentityTest, NumbersPointersByFirstAppearance) {
  WeightsIdentity w;
  float a[2] = {}, b[2] = {};
  EXPECT_EQ(w.of(b), 1u);
  EXPECT_EQ(w.of(a), 2u);
  EXPECT_EQ(w.of(b), 1u);
  EXPECT_EQ(w.of(a + 1), 3u);
}

TEST(WeightsIdentityTest, RandomSeedsCountFromOne) {
  WeightsIdentity w;
  EXPECT_EQ(w.nextRandomSeed(), 1u);
  EXPECT_EQ(w.nextRandomSeed(), 2u);
}

}  // namespace

// Freed objects' memory is reused by the next of their size class; sizes apart never share it, and
// every piece is aligned as operator new's would be.
TEST(ObjectPool, ReusesFreedMemoryWithinASizeClass) {
  ObjectPool pool;
  void* a = pool.take(112);
  void* b = pool.take(128);
  void* c = pool.take(144);
  EXPECT_NE(a, b);
  for (void* p : {a, b, c}) EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % ObjectPool::kGrain, 0u);
  pool.give(a, 112);
  EXPECT_EQ(pool.take(100), a);  // 97..112 bytes: one class
  pool.give(c, 144);
  EXPECT_NE(pool.take(112), c);
  EXPECT_EQ(pool.take(144), c);
  void* big = pool.take(ObjectPool::kMaxBytes + 1);  // from the heap
  std::memset(big, 0xab, ObjectPool::kMaxBytes + 1);
  pool.give(big, ObjectPool::kMaxBytes + 1);
}

// More objects than a chunk holds, written whole, each distinct: chunks are added as needed.
TEST(ObjectPool, ObjectsBeyondOneChunkNeverOverlap) {
  ObjectPool pool;
  constexpr size_t kSize = 176;
  std::vector<std::byte*> all;
  for (size_t i = 0; i < 3 * ObjectPool::kChunk / kSize; ++i) {
    all.push_back(static_cast<std::byte*>(pool.take(kSize)));
    std::memset(all.back(), static_cast<int>(i & 0xff), kSize);
  }
  for (size_t i = 0; i < all.size(); ++i)
    ASSERT_EQ(all[i][kSize - 1], static_cast<std::byte>(i & 0xff)) << "object " << i << " was overwritten";
  for (std::byte* p : all) pool.give(p, kSize);
  EXPECT_EQ(pool.take(kSize), all.back());  // the last freed comes back first
}

// Threads that take the lock far more often than they have CPUs (the spinning ones yield): every
// increment under it lands, and what one holder wrote is what the next one reads.
TEST(SpinLockTest, ExcludesUnderContention) {
  SpinLock lock;
  uint64_t counter = 0, shadow = 0;
  constexpr int kThreads = 4, kEach = 50000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        std::lock_guard<SpinLock> g(lock);
        ASSERT_EQ(counter, shadow);
        ++counter;
        shadow = counter;
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter, uint64_t{kThreads} * kEach);
}

// A lock held when the process forked (by a thread the child does not have) is free in the child.
TEST(SpinLockTest, ResetFreesALockHeldByAThreadThatIsGone) {
  SpinLock lock;
  lock.lock();
  lock.reset();
  std::lock_guard<SpinLock> g(lock);  // would spin forever otherwise
  SUCCEED();
}
