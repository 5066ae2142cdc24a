// Whether zstd is worth trying on a blob, from how the blobs of its kind (BlobHint, and whether
// under 1 MiB: the two sizes are held to different bars, WriterOptions::smallMinSaving) fared
// before. The weights of one kind in one model compress alike (random-like fp32 does not; bf16 does), and
// trying costs a worker the whole compression of a blob only to store it raw. After kGiveUpAfter
// blobs of a kind in a row whose compression was not kept, only every kProbeEvery-th blob of that
// kind is tried, so content that starts to compress is still found; a kept one starts over.
// Approximate under concurrency (relaxed atomics): a worker may try one blob more or less.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>

#include "trtrace/writer.h"

namespace trtrace::detail {

class CompressionOdds {
 public:
  static constexpr uint32_t kGiveUpAfter = 8;
  static constexpr uint32_t kProbeEvery = 16;

  bool worthTrying(BlobHint h, bool small) {
    Kind& k = of(h, small);
    if (k.misses.load(std::memory_order_relaxed) < kGiveUpAfter) return true;
    return k.skipped.fetch_add(1, std::memory_order_relaxed) % kProbeEvery == kProbeEvery - 1;
  }
  void tried(BlobHint h, bool small, bool kept) {
    Kind& k = of(h, small);
    if (kept)
      k.misses.store(0, std::memory_order_relaxed);
    else
      k.misses.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  struct Kind {
    std::atomic<uint32_t> misses{0};   // tried in a row and not kept
    std::atomic<uint32_t> skipped{0};  // asked while given up (every kProbeEvery-th is tried)
  };
  static constexpr size_t kHints = static_cast<size_t>(BlobHint::F32) + 1;
  Kind& of(BlobHint h, bool small) {
    const auto i = static_cast<uint32_t>(h);
    return kinds_[(i < kHints ? i : 0) * 2 + (small ? 1 : 0)];
  }
  std::array<Kind, kHints * 2> kinds_;  // one per BlobHint and size class
};

}  // namespace trtrace::detail
