// micro_bench: the per-byte kernels of capture and replay, each next to the single-core memcpy
// figure of the same run (issue #8), so every rate reads as a fraction of the machine's limit.
//
//   BM_Memcpy            64 MiB -> 64 MiB, one core: the limit
//   BM_XXH3_128          hash of 64 MiB (putBlob's only work on the app's thread)
//   BM_ReadAndHash/K     the same through process_vm_readv on this process in K KiB pieces, as a
//                        worker or a handoff reads a key (fault-safe: the bytes may be released)
//   BM_ByteGroup/K       ZipNN-style split of 4 MiB chunks of K-byte elements (writer)
//   BM_ByteUngroup/K     the inverse (reader)
//   BM_ZstdCompress/L    zstd level L on byte-grouped N(0,0.02) fp32 (writer, per 4 MiB chunk)
//   BM_ZstdDecompress/L  the inverse (reader)
//   BM_EncodeCalls       CallEncoder: beginCall + 4 args + ret + endCall
//   BM_DecodeCalls       Reader::forEachCall reading 4 values per call
// Buffers are 64 MiB (beyond every cache) so the rates are memory-bound figures like memcpy's.
#include <benchmark/benchmark.h>
#include <sys/uio.h>
#include <unistd.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>
#include <zstd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "bench_calls.h"
#include "internal.h"
#include "trtrace/hash.h"
#include "trtrace/reader.h"
#include "trtrace/writer.h"

using namespace trtrace;

namespace {

constexpr size_t kBuf = 64 << 20;
constexpr size_t kChunk = 4 << 20;

// N(0, 0.02) fp32 weights, generated once (seeded).
const std::vector<std::byte>& weightsF32() {
  static const std::vector<std::byte> w = [] {
    std::vector<std::byte> b(kBuf);
    std::mt19937_64 rng(42);
    std::normal_distribution<float> d(0.f, 0.02f);
    for (size_t i = 0; i < kBuf; i += 4) {
      float f = d(rng);
      std::memcpy(b.data() + i, &f, 4);
    }
    return b;
  }();
  return w;
}

// The same weights as fp16 bit patterns (for K = 2).
const std::vector<std::byte>& weightsF16() {
  static const std::vector<std::byte> w = [] {
    const auto& f = weightsF32();
    std::vector<std::byte> b(kBuf);
    for (size_t i = 0, o = 0; o < kBuf; i += 4, o += 2) {
      uint32_t x;
      std::memcpy(&x, f.data() + (i % kBuf), 4);
      uint16_t h = static_cast<uint16_t>(x >> 16);  // bf16-like: top half
      std::memcpy(b.data() + o, &h, 2);
    }
    return b;
  }();
  return w;
}

void BM_Memcpy(benchmark::State& state) {
  std::vector<std::byte> src(kBuf), dst(kBuf);
  std::memset(src.data(), 1, kBuf);
  std::memset(dst.data(), 2, kBuf);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), kBuf);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBuf));
}

void BM_XXH3_128(benchmark::State& state) {
  const auto& w = weightsF32();
  for (auto _ : state) benchmark::DoNotOptimize(hash128(w.data(), w.size()));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBuf));
}

void BM_ReadAndHash(benchmark::State& state) {
  const auto& w = weightsF32();
  const size_t piece = size_t(state.range(0)) << 10;
  std::vector<std::byte> buf(piece);
  const pid_t self = ::getpid();
  for (auto _ : state) {
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    for (size_t off = 0; off < kBuf; off += piece) {
      iovec to{buf.data(), piece}, from{const_cast<std::byte*>(w.data()) + off, piece};
      if (::process_vm_readv(self, &to, 1, &from, 1, 0) != static_cast<ssize_t>(piece)) {
        state.SkipWithError("process_vm_readv failed");
        return;
      }
      XXH3_128bits_update(&st, buf.data(), piece);
    }
    benchmark::DoNotOptimize(XXH3_128bits_digest(&st));
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBuf));
}

void BM_ByteGroup(benchmark::State& state) {
  const unsigned k = unsigned(state.range(0));
  const auto& w = k == 2 ? weightsF16() : weightsF32();
  std::vector<std::byte> out(kBuf);
  for (auto _ : state) {
    for (size_t off = 0; off < kBuf; off += kChunk) detail::byteGroup(w.data() + off, out.data() + off, kChunk, k);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBuf));
}

void BM_ByteUngroup(benchmark::State& state) {
  const unsigned k = unsigned(state.range(0));
  const auto& w = k == 2 ? weightsF16() : weightsF32();
  std::vector<std::byte> g(kBuf), out(kBuf);
  for (size_t off = 0; off < kBuf; off += kChunk) detail::byteGroup(w.data() + off, g.data() + off, kChunk, k);
  for (auto _ : state) {
    for (size_t off = 0; off < kBuf; off += kChunk) detail::byteUngroup(g.data() + off, out.data() + off, kChunk, k);
    benchmark::ClobberMemory();
  }
  if (std::memcmp(out.data(), w.data(), kBuf) != 0) state.SkipWithError("ungroup(group(x)) != x");
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBuf));
}

// Byte-grouped fp32 chunks, as the writer feeds them to zstd.
const std::vector<std::byte>& groupedF32() {
  static const std::vector<std::byte> g = [] {
    const auto& w = weightsF32();
    std::vector<std::byte> b(kBuf);
    for (size_t off = 0; off < kBuf; off += kChunk) detail::byteGroup(w.data() + off, b.data() + off, kChunk, 4);
    return b;
  }();
  return g;
}

void BM_ZstdCompress(benchmark::State& state) {
  const int level = int(state.range(0));
  const auto& g = groupedF32();
  std::vector<std::byte> out(ZSTD_compressBound(kChunk));
  ZSTD_CCtx* c = ZSTD_createCCtx();
  size_t stored = 0;
  for (auto _ : state) {
    stored = 0;
    for (size_t off = 0; off < kBuf; off += kChunk)
      stored += ZSTD_compressCCtx(c, out.data(), out.size(), g.data() + off, kChunk, level);
  }
  ZSTD_freeCCtx(c);
  state.counters["ratio"] = double(kBuf) / double(stored);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBuf));
}

void BM_ZstdDecompress(benchmark::State& state) {
  const int level = int(state.range(0));
  const auto& g = groupedF32();
  std::vector<std::vector<std::byte>> frames;
  ZSTD_CCtx* c = ZSTD_createCCtx();
  for (size_t off = 0; off < kBuf; off += kChunk) {
    std::vector<std::byte> f(ZSTD_compressBound(kChunk));
    f.resize(ZSTD_compressCCtx(c, f.data(), f.size(), g.data() + off, kChunk, level));
    frames.push_back(std::move(f));
  }
  ZSTD_freeCCtx(c);
  ZSTD_DCtx* d = ZSTD_createDCtx();
  std::vector<std::byte> out(kBuf);
  for (auto _ : state) {
    size_t off = 0;
    for (auto& f : frames) off += ZSTD_decompressDCtx(d, out.data() + off, kChunk, f.data(), f.size());
    benchmark::DoNotOptimize(off);
  }
  ZSTD_freeDCtx(d);
  if (std::memcmp(out.data(), g.data(), kBuf) != 0) state.SkipWithError("round trip differs");
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kBuf));
}

std::string tmpPath(const char* tag) {
  const char* d = std::getenv("TMPDIR");
  return std::string(d && *d ? d : "/tmp") + "/micro_bench." + tag + "." + std::to_string(getpid()) + ".trtrace";
}

HeaderInfo header() {
  HeaderInfo h;
  h.producer = "micro_bench";
  h.producerVersion = "0";
  h.libraryName = "none";
  h.libraryVersion = "0";
  return h;
}

const BlobRef kWeightsRef{{1, 2}, 4096};

void BM_EncodeCalls(benchmark::State& state) {
  auto path = tmpPath("enc");
  auto w = bench::callWriter(path, header());
  uint64_t i = 0;
  for (auto _ : state) bench::encodeConvCall(*w, i++, kWeightsRef);
  w->close();
  const double bytesPerCall = double(std::filesystem::file_size(path)) / double(i);
  state.counters["bytes_per_call"] = bytesPerCall;
  state.SetItemsProcessed(int64_t(state.iterations()));
  state.SetBytesProcessed(int64_t(double(state.iterations()) * bytesPerCall));
  std::filesystem::remove(path);
}

void BM_DecodeCalls(benchmark::State& state) {
  auto path = tmpPath("dec");
  const uint64_t n = 200000;
  {
    auto w = bench::callWriter(path, header());
    for (uint64_t i = 0; i < n; ++i) bench::encodeConvCall(*w, i, kWeightsRef);
    w->close();
  }
  const double bytesPerCall = double(std::filesystem::file_size(path)) / double(n);
  auto r = Reader::open(path);
  uint64_t calls = 0;
  for (auto _ : state) calls += bench::decodeConvCalls(*r);
  state.counters["bytes_per_call"] = bytesPerCall;
  state.SetItemsProcessed(int64_t(calls));
  state.SetBytesProcessed(int64_t(double(calls) * bytesPerCall));
  std::filesystem::remove(path);
}

}  // namespace

BENCHMARK(BM_Memcpy)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_XXH3_128)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadAndHash)->Arg(4096)->Arg(256)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ByteGroup)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ByteUngroup)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZstdCompress)->Arg(-1)->Arg(1)->Arg(3)->Arg(9)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ZstdDecompress)->Arg(1)->Arg(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeCalls);
BENCHMARK(BM_DecodeCalls)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
