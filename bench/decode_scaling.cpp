// decode_scaling: how the player's decode cache scales with cores (issue 16).
//
//   decode_scaling [--gib G] [--threads 1,2,4,...] [--dir D]
//
// Writes a trace of G GiB of distinct fp32 weights drawn from N(0, 0.02) (16 MiB blobs, the
// capture's settings: zstd level 1 after byte grouping), then builds its decode cache as the
// player does (WeightsSource::useDecodeCache, a nameless file) once per thread count, and prints one JSON
// line per run: threads, seconds, decoded GB/s, the speed-up over the first thread count, and what
// the same threads write into a new file's page cache with no decode at all (the limit). No
// TensorRT: it runs on any Linux host (BENCHMARKS.md has its 16-core run and the exact command).
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>
#include <thread>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "trtrace/reader.h"
#include "trtrace/weights_source.h"
#include "trtrace/writer.h"

namespace {

std::vector<unsigned> parseList(const char* s) {
  std::vector<unsigned> out;
  for (const char* p = s; *p;) {
    char* end;
    const unsigned long v = std::strtoul(p, &end, 10);
    if (end == p || v == 0 || v > 1024) return {};
    out.push_back(static_cast<unsigned>(v));
    p = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return {};
  }
  return out;
}

// One 16 MiB blob of N(0, 0.02) fp32 from `seed`.
void fill(std::vector<float>& v, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<float> n(0.f, 0.02f);
  for (float& x : v) x = n(g);
}

void writeTrace(const std::string& path, double gib) {
  trtrace::WriterOptions o;
  o.path = path;
  o.zstdLevel = trtrace::kDefaultBlobZstdLevel;
  o.workerThreads = static_cast<int>(std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN)));
  trtrace::HeaderInfo h;
  h.producer = "decode_scaling";
  auto w = trtrace::Writer::create(o, h);
  const std::string_view args[] = {"weights"};
  w->describeApi(1, "Network", "addConstant", args);
  const uint64_t blobs = static_cast<uint64_t>(gib * 64);  // 16 MiB each
  std::vector<std::vector<float>> keep(blobs, std::vector<float>(4u << 20));
  for (uint64_t i = 0; i < blobs; ++i) {
    fill(keep[i], 1000 + i);
    auto ref = w->putBlob(keep[i].data(), keep[i].size() * 4, trtrace::BlobHint::F32);
    w->beginCall(1, 1, 1).argWeightsBlob(0, keep[i].size(), ref).endCall();
  }
  w->close();
}

// The limit the decode meets: `threads` threads writing `bytes` into one new file's page cache
// (4 MiB pwrites of ready bytes, disjoint ranges; no decode, no hash). Seconds.
double pageCacheWrite(const std::string& dir, uint64_t bytes, unsigned threads) {
  const int fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0)
    throw std::runtime_error("cannot create a file in " + dir);
  const uint64_t piece = 4u << 20, pieces = bytes / piece;
  std::vector<char> buf(piece, 1);
  std::atomic<uint64_t> next{0};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (uint64_t k; (k = next.fetch_add(1)) < pieces;)
        if (::pwrite(fd, buf.data(), piece, static_cast<off_t>(k * piece)) != static_cast<ssize_t>(piece)) std::abort();
    });
  for (auto& th : pool) th.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(fd);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  double gib = 1;
  std::vector<unsigned> threads{1, 2, 4, 8, 16};
  std::string dir = "/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--gib"))
      gib = std::atof(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads"))
      threads = parseList(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--dir"))
      dir = argv[i + 1];
  }
  if (gib <= 0 || gib > 64 || threads.empty()) {
    std::fprintf(stderr, "usage: decode_scaling [--gib G (0-64)] [--threads 1,2,4,...] [--dir D]\n");
    return 2;
  }
  const std::string path = dir + "/decode_scaling." + std::to_string(::getpid()) + ".trtrace";
  try {
    writeTrace(path, gib);
    {  // one build first, not timed: the first touch of a fresh page costs more on a VM than later ones
      auto r = trtrace::Reader::open(path);
      trtrace::DecodeCacheOptions o;
      o.mode = trtrace::DecodeCacheOptions::Mode::Temp;
      trtrace::replay::WeightsSource(*r).useDecodeCache(o);
    }
    double one = 0;
    for (unsigned t : threads) {
      auto r = trtrace::Reader::open(path);
      trtrace::DecodeCacheOptions o;
      o.mode = trtrace::DecodeCacheOptions::Mode::Temp;
      o.threads = t;
      const auto rep = trtrace::replay::WeightsSource(*r).useDecodeCache(o);
      if (one == 0) one = rep.seconds;
      const double pc = pageCacheWrite(dir, rep.bytes, t);
      std::printf(
          "{\"threads\": %u, \"blobs\": %llu, \"bytes\": %llu, \"seconds\": %.4f, \"gb_per_s\": %.3f, "
          "\"speedup\": %.2f, \"page_cache_write_gb_per_s\": %.3f, \"cores\": %ld}\n",
          t, (unsigned long long)rep.blobs, (unsigned long long)rep.bytes, rep.seconds, rep.bytes / rep.seconds / 1e9,
          one / rep.seconds, rep.bytes / pc / 1e9, ::sysconf(_SC_NPROCESSORS_ONLN));
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "decode_scaling: %s\n", e.what());
    ::unlink(path.c_str());
    return 1;
  }
  ::unlink(path.c_str());
  return 0;
}
