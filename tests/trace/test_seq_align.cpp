// The alignment behind `trtrace diff` (cli/seq_align.h), on random key sequences: every match pairs
// equal keys in increasing order on both sides; a sequence with keys inserted (or deleted) aligns
// all of the shorter one, as the longest common subsequence would; long sequences with no unique
// key finish within Myers' bounds.
#include <gtest/gtest.h>

#include <random>

#include "seq_align.h"

using trtrace::cli::alignKeys;
using trtrace::cli::Matches;

namespace {

void expectValid(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b, const Matches& m) {
  for (size_t k = 0; k < m.size(); ++k) {
    ASSERT_LT(m[k].first, a.size());
    ASSERT_LT(m[k].second, b.size());
    EXPECT_EQ(a[m[k].first], b[m[k].second]);
    if (k) { EXPECT_TRUE(m[k].first > m[k - 1].first && m[k].second > m[k - 1].second); }
  }
}

std::vector<uint64_t> randomKeys(std::mt19937_64& g, size_t n, uint64_t alphabet) {
  std::vector<uint64_t> v(n);
  for (auto& x : v) x = g() % alphabet;
  return v;
}

}  // namespace

TEST(SeqAlign, InsertionsAndDeletionsKeepAllOfTheShorterSequence) {
  std::mt19937_64 g(24);
  for (int round = 0; round < 300; ++round) {
    const uint64_t alphabet = 2 + g() % 60;
    const auto a = randomKeys(g, g() % 300, alphabet);
    std::vector<uint64_t> b;
    for (uint64_t x : a) {
      while (g() % 8 == 0) b.push_back(g() % alphabet);  // inserted
      b.push_back(x);
    }
    const Matches ab = alignKeys(a, b), ba = alignKeys(b, a);
    expectValid(a, b, ab);
    expectValid(b, a, ba);
    EXPECT_EQ(ab.size(), a.size()) << "round " << round;
    EXPECT_EQ(ba.size(), a.size()) << "round " << round;
  }
}

TEST(SeqAlign, AnyTwoSequencesAlignValidly) {
  std::mt19937_64 g(26);
  for (int round = 0; round < 300; ++round) {
    const uint64_t alphabet = 1 + g() % 20;
    const auto a = randomKeys(g, g() % 200, alphabet), b = randomKeys(g, g() % 200, alphabet);
    expectValid(a, b, alignKeys(a, b));
  }
  EXPECT_TRUE(alignKeys({}, {}).empty());
  EXPECT_TRUE(alignKeys({1, 2}, {}).empty());
}

TEST(SeqAlign, LongSequencesWithoutUniqueKeysStayWithinBounds) {
  std::mt19937_64 g(4);
  const auto a = randomKeys(g, 200000, 2), b = randomKeys(g, 200000, 2);
  const Matches m = alignKeys(a, b);  // Myers gives up; pairs by position
  expectValid(a, b, m);
  EXPECT_GT(m.size(), 0u);
}
