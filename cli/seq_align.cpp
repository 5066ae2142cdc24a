// Sequence alignment (seq_align.h): prefix/suffix, patience anchors, bounded Myers, positional
// fallback.
#include "seq_align.h"

#include <algorithm>

namespace trtrace::cli {
namespace {

constexpr int kMaxDepth = 16;  // patience recursion; deeper stretches go straight to Myers

class Aligner {
 public:
  Aligner(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b, Matches& out) : a_(a), b_(b), out_(out) {}
  void range(size_t a0, size_t a1, size_t b0, size_t b1, int depth);

 private:
  bool patience(size_t a0, size_t a1, size_t b0, size_t b1, int depth);
  bool myers(size_t a0, size_t a1, size_t b0, size_t b1);
  void positional(size_t a0, size_t a1, size_t b0, size_t b1);
  void match(size_t i, size_t j) { out_.push_back({uint32_t(i), uint32_t(j)}); }

  const std::vector<uint64_t>& a_;
  const std::vector<uint64_t>& b_;
  Matches& out_;
};

void Aligner::range(size_t a0, size_t a1, size_t b0, size_t b1, int depth) {
  while (a0 < a1 && b0 < b1 && a_[a0] == b_[b0]) match(a0++, b0++);
  size_t suffix = 0;
  while (a1 - suffix > a0 && b1 - suffix > b0 && a_[a1 - 1 - suffix] == b_[b1 - 1 - suffix]) ++suffix;
  a1 -= suffix, b1 -= suffix;
  if (a0 < a1 && b0 < b1 && (depth >= kMaxDepth || !patience(a0, a1, b0, b1, depth)) && !myers(a0, a1, b0, b1))
    positional(a0, a1, b0, b1);
  for (size_t k = 0; k < suffix; ++k) match(a1 + k, b1 + k);
}

// Keys unique on both sides of the stretch, as (i, j), in order of i.
std::vector<std::pair<uint32_t, uint32_t>> uniquePairs(const std::vector<uint64_t>& a, size_t a0, size_t a1,
                                                       const std::vector<uint64_t>& b, size_t b0, size_t b1) {
  auto sorted = [](const std::vector<uint64_t>& v, size_t lo, size_t hi) {
    std::vector<std::pair<uint64_t, uint32_t>> s;
    s.reserve(hi - lo);
    for (size_t i = lo; i < hi; ++i) s.push_back({v[i], uint32_t(i)});
    std::sort(s.begin(), s.end());
    return s;
  };
  const auto sa = sorted(a, a0, a1), sb = sorted(b, b0, b1);
  auto once = [](const auto& s, size_t i) {
    return (i == 0 || s[i - 1].first != s[i].first) && (i + 1 == s.size() || s[i + 1].first != s[i].first);
  };
  std::vector<std::pair<uint32_t, uint32_t>> u;
  for (size_t i = 0, j = 0; i < sa.size() && j < sb.size();) {
    if (sa[i].first < sb[j].first)
      ++i;
    else if (sb[j].first < sa[i].first)
      ++j;
    else {
      if (once(sa, i) && once(sb, j)) u.push_back({sa[i].second, sb[j].second});
      ++i, ++j;
    }
  }
  std::sort(u.begin(), u.end());
  return u;
}

// The longest subsequence of u increasing in j (u is increasing in i): patience sorting.
std::vector<std::pair<uint32_t, uint32_t>> longestIncreasing(const std::vector<std::pair<uint32_t, uint32_t>>& u) {
  std::vector<uint32_t> tops;  // index into u of the top of each pile
  std::vector<int64_t> prev(u.size(), -1);
  for (size_t k = 0; k < u.size(); ++k) {
    auto it = std::lower_bound(tops.begin(), tops.end(), u[k].second,
                               [&](uint32_t t, uint32_t j) { return u[t].second < j; });
    if (it != tops.begin()) prev[k] = *(it - 1);
    if (it == tops.end())
      tops.push_back(uint32_t(k));
    else
      *it = uint32_t(k);
  }
  std::vector<std::pair<uint32_t, uint32_t>> lis;
  for (int64_t k = tops.empty() ? int64_t(-1) : int64_t(tops.back()); k >= 0; k = prev[size_t(k)])
    lis.push_back(u[size_t(k)]);
  std::reverse(lis.begin(), lis.end());
  return lis;
}

bool Aligner::patience(size_t a0, size_t a1, size_t b0, size_t b1, int depth) {
  const auto anchors = longestIncreasing(uniquePairs(a_, a0, a1, b_, b0, b1));
  if (anchors.empty()) return false;
  for (auto [i, j] : anchors) {
    range(a0, i, b0, j, depth + 1);
    match(i, j);
    a0 = i + 1, b0 = j + 1;
  }
  range(a0, a1, b0, b1, depth + 1);
  return true;
}

// Myers' greedy forward search, keeping each round's frontier for the walk back.
bool Aligner::myers(size_t a0, size_t a1, size_t b0, size_t b1) {
  const int64_t n = int64_t(a1 - a0), m = int64_t(b1 - b0);
  const int64_t maxD = std::min<int64_t>(n + m, int64_t(kMaxEdits));
  std::vector<int64_t> v(size_t(2 * maxD + 3), 0);
  const int64_t off = maxD + 1;
  std::vector<std::vector<int32_t>> frontiers;  // round d: v[-d .. d] before the round
  uint64_t work = 0;
  for (int64_t d = 0; d <= maxD; ++d) {
    frontiers.emplace_back(v.begin() + (off - d), v.begin() + (off + d + 1));
    for (int64_t k = -d; k <= d; k += 2) {
      int64_t x = (k == -d || (k != d && v[off + k - 1] < v[off + k + 1])) ? v[off + k + 1] : v[off + k - 1] + 1;
      int64_t y = x - k;
      while (x < n && y < m && a_[a0 + x] == b_[b0 + y]) ++x, ++y, ++work;
      v[off + k] = x;
      if (x >= n && y >= m) {
        Matches rev;
        for (int64_t e = d; e > 0; --e) {
          const auto& f = frontiers[e];  // f[t] = v[t - e]
          const int64_t kk = x - y;
          const bool down = kk == -e || (kk != e && f[kk - 1 + e] < f[kk + 1 + e]);
          const int64_t px = f[(down ? kk + 1 : kk - 1) + e], py = px - (down ? kk + 1 : kk - 1);
          while (x > px && y > py && x > (down ? px : px + 1)) rev.push_back({uint32_t(a0 + --x), uint32_t(b0 + --y)});
          x = px, y = py;
        }
        while (x > 0 && y > 0) rev.push_back({uint32_t(a0 + --x), uint32_t(b0 + --y)});
        out_.insert(out_.end(), rev.rbegin(), rev.rend());
        return true;
      }
      if (++work > kMaxWork) return false;
    }
  }
  return false;
}

void Aligner::positional(size_t a0, size_t a1, size_t b0, size_t b1) {
  for (size_t k = 0; a0 + k < a1 && b0 + k < b1; ++k)
    if (a_[a0 + k] == b_[b0 + k]) match(a0 + k, b0 + k);
}

}  // namespace

Matches alignKeys(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  Matches out;
  Aligner(a, b, out).range(0, a.size(), 0, b.size(), 0);
  return out;
}

}  // namespace trtrace::cli
