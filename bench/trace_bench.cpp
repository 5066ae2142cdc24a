// trace_bench: write throughput (raw, compressed, dedup hit), open time, call encode/decode rate,
// and a multi-GB streaming run that reports the writer's peak RSS.
// Run: build-trace/bin/trace_bench [--benchmark_filter=...]; files go to $TMPDIR (default /tmp).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench_calls.h"
#include "trtrace/reader.h"
#include "trtrace/writer.h"

using namespace trtrace;

namespace {

std::string tmpPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("trace_bench_" + std::to_string(getpid()) + "_" + name)).string();
}

HeaderInfo header() {
  HeaderInfo h;
  h.producer = "trace_bench";
  return h;
}

const std::vector<std::byte>& randomPool() {  // 256 MiB, incompressible
  static std::vector<std::byte> v = [] {
    std::vector<std::byte> b(256 << 20);
    std::mt19937_64 g(1);
    for (size_t i = 0; i < b.size(); i += 8) {
      uint64_t x = g();
      std::memcpy(b.data() + i, &x, 8);
    }
    return b;
  }();
  return v;
}

const std::vector<std::byte>& floatPool() {  // 256 MiB of N(0, 0.02) fp32: typical weights
  static std::vector<std::byte> v = [] {
    std::vector<std::byte> b(256 << 20);
    std::mt19937 g(2);
    std::normal_distribution<float> d(0.f, 0.02f);
    for (size_t i = 0; i < b.size(); i += 4) {
      float f = d(g);
      std::memcpy(b.data() + i, &f, 4);
    }
    return b;
  }();
  return v;
}

constexpr size_t kBlob = 8 << 20;

void writePool(benchmark::State& state, const std::vector<std::byte>& pool, int level, BlobHint hint) {
  auto path = tmpPath("write");
  uint64_t stored = 0;
  for (auto _ : state) {
    WriterOptions o;
    o.path = path;
    o.zstdLevel = level;
    o.workerThreads = 2;
    auto w = Writer::create(o, header());
    for (size_t off = 0; off < pool.size(); off += kBlob) w->putBlob(pool.data() + off, kBlob, hint);
    w->close();
    stored = w->stats().storedBytes;
  }
  state.SetBytesProcessed(int64_t(state.iterations() * pool.size()));
  state.counters["ratio"] = double(pool.size()) / double(stored);
  std::filesystem::remove(path);
}

void BM_WriteRaw(benchmark::State& s) { writePool(s, randomPool(), 0, BlobHint::None); }
void BM_WriteCompressedF32(benchmark::State& s) { writePool(s, floatPool(), int(s.range(0)), BlobHint::F32); }
void BM_WriteIncompressible(benchmark::State& s) { writePool(s, randomPool(), 3, BlobHint::None); }

void BM_WriteDedupHit(benchmark::State& state) {
  auto path = tmpPath("dedup");
  WriterOptions o;
  o.path = path;
  auto w = Writer::create(o, header());
  auto& pool = randomPool();
  w->putBlob(pool.data(), kBlob);
  for (auto _ : state) benchmark::DoNotOptimize(w->putBlob(pool.data(), kBlob));  // hash + lookup
  state.SetBytesProcessed(int64_t(state.iterations() * kBlob));
  w->close();
  std::filesystem::remove(path);
}

// A trace with many calls and blobs, for open/decode benchmarks.
std::string makeTrace(bool close, uint64_t calls, uint64_t blobs) {
  auto path = tmpPath(close ? "closed" : "open");
  WriterOptions o;
  o.path = path;
  o.zstdLevel = 0;
  o.flush = FlushPolicy::AtClose;
  o.segmentBytes = 256 << 10;  // segments split by size
  auto w = Writer::create(o, header());
  auto& pool = randomPool();
  std::vector<BlobRef> refs;
  for (uint64_t i = 0; i < blobs; ++i) refs.push_back(w->putBlob(pool.data() + i * 64, 4096));
  for (uint64_t i = 0; i < calls; ++i) bench::encodeConvCall(*w, i, refs[i % refs.size()]);
  w->drainBlobs();
  w->flush();
  if (close)
    w->close();
  else
    w.release();  // leak on purpose: the file stays "not closed", as after a crash
  return path;
}

void BM_OpenClosed(benchmark::State& state) {
  auto path = makeTrace(true, 20000, 10000);
  for (auto _ : state) benchmark::DoNotOptimize(Reader::open(path));
  std::filesystem::remove(path);
}

void BM_OpenScan(benchmark::State& state) {
  auto path = makeTrace(false, 20000, 10000);
  for (auto _ : state) benchmark::DoNotOptimize(Reader::open(path));
  std::filesystem::remove(path);
}

void BM_EncodeCalls(benchmark::State& state) {
  auto path = tmpPath("enc");
  auto w = bench::callWriter(path, header());
  const BlobRef ref{{1, 2}, 4096};
  uint64_t i = 0;
  for (auto _ : state) bench::encodeConvCall(*w, i++, ref);
  state.SetItemsProcessed(int64_t(state.iterations()));
  w->close();
  std::filesystem::remove(path);
}

void BM_DecodeCalls(benchmark::State& state) {
  auto path = makeTrace(true, 100000, 16);
  auto r = Reader::open(path);
  uint64_t n = 0;
  for (auto _ : state) n += bench::decodeConvCalls(*r);
  state.SetItemsProcessed(int64_t(n));
  std::filesystem::remove(path);
}

uint64_t peakRssKb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}

// Streams range(0) MiB of distinct generated weights through one reused 16 MiB buffer.
void BM_StreamLarge(benchmark::State& state) {
  auto path = tmpPath("large");
  const uint64_t total = uint64_t(state.range(0)) << 20, blob = 16 << 20;
  std::vector<std::byte> buf(blob);
  std::ofstream("/proc/self/clear_refs") << "5";
  for (auto _ : state) {
    WriterOptions o;
    o.path = path;
    o.zstdLevel = 1;
    o.workerThreads = 2;
    auto w = Writer::create(o, header());
    for (uint64_t i = 0; i < total / blob; ++i) {
      uint64_t x = i * 0x9E3779B97F4A7C15ull + 1;
      for (size_t k = 0; k < blob; k += 8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t v = x & 0x0F0F0F0F0F0F0F0Full;
        std::memcpy(buf.data() + k, &v, 8);
      }
      w->putBlob(buf.data(), blob);
      w->drainBlobs();
    }
    w->close();
  }
  state.SetBytesProcessed(int64_t(state.iterations() * total));
  state.counters["peak_rss_MiB"] = double(peakRssKb()) / 1024;
  std::filesystem::remove(path);
}

}  // namespace

BENCHMARK(BM_WriteRaw)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_WriteCompressedF32)->Arg(1)->Arg(3)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_WriteIncompressible)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_WriteDedupHit)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OpenClosed)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_OpenScan)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EncodeCalls);
BENCHMARK(BM_DecodeCalls)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StreamLarge)->Arg(4096)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
