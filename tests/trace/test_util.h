// Shared helpers for the trace tests: temp files and a small sample trace using every feature.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "trtrace/error.h"
#include "trtrace/reader.h"
#include "trtrace/writer.h"

namespace tt {

// A fresh directory per test, removed afterwards.
struct TempDir {
  std::filesystem::path dir;
  TempDir() {
    dir = std::filesystem::temp_directory_path() /
          ("trtrace_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    std::filesystem::create_directories(dir);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string path(const std::string& name) const { return (dir / name).string(); }
  static int& counter() {
    static int c = 0;
    return c;
  }
};

inline std::vector<std::byte> readFile(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> v((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return {reinterpret_cast<std::byte*>(v.data()), reinterpret_cast<std::byte*>(v.data()) + v.size()};
}
inline void writeFile(const std::string& p, const std::byte* d, size_t n) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(d), static_cast<std::streamsize>(n));
}

// Incompressible bytes.
inline std::vector<std::byte> randomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t x = g();
    for (size_t k = 0; k < 8 && i + k < n; ++k) v[i + k] = std::byte(x >> (8 * k));
  }
  return v;
}
// fp32-like weights: compressible after byte grouping (few exponents, random mantissas).
inline std::vector<std::byte> floatBytes(size_t count, uint64_t seed) {
  std::mt19937 g(static_cast<uint32_t>(seed));
  std::normal_distribution<float> d(0.f, 0.02f);
  std::vector<std::byte> v(count * 4);
  for (size_t i = 0; i < count; ++i) {
    float f = d(g);
    std::memcpy(v.data() + 4 * i, &f, 4);
  }
  return v;
}
inline std::vector<std::byte> zeros(size_t n) { return std::vector<std::byte>(n); }

inline trtrace::HeaderInfo header() {
  trtrace::HeaderInfo h;
  h.producer = "trace_tests";
  h.producerVersion = "0.1";
  h.libraryName = "testlib";
  h.libraryVersion = "1.2.3";
  h.settings = {{"flush", "on-build"}, {"mode", "test"}};
  h.host = "testhost";
  h.pid = 42;
  h.startTimeNs = 1234;
  return h;
}

// A small trace: two APIs, a raw blob, a compressed blob, a dedup hit, a build. Returns blob refs.
struct Sample {
  trtrace::BlobRef rawRef, zRef;
  std::vector<std::byte> rawBytes, zBytes;
  uint64_t calls = 0;
};
inline Sample writeSample(const std::string& path, int workers = 1) {
  using namespace trtrace;
  Sample s;
  WriterOptions o;
  o.path = path;
  o.workerThreads = workers;
  o.chunkBytes = 4096;
  o.minCompressBytes = 0;  // its small zeros blob is compressed
  auto w = Writer::create(o, header());
  std::string_view addArgs[] = {"input", "weights"};
  w->describeApi(1, "Network", "addLayer", addArgs);
  w->describeApi(2, "Builder", "build", {});
  s.rawBytes = randomBytes(3000, 7);
  s.zBytes = zeros(10000);
  s.rawRef = w->putBlob(s.rawBytes.data(), s.rawBytes.size(), BlobHint::None);
  s.zRef = w->putBlob(s.zBytes.data(), s.zBytes.size(), BlobHint::F32);
  auto again = w->putBlob(s.zBytes.data(), s.zBytes.size(), BlobHint::F32);  // dedup hit
  w->beginCall(1, 0x10, 1).argHandle(0x20).argWeightsBlob(0, 750, s.rawRef).retHandle(0x30).endCall();
  w->beginCall(1, 0x10, 1).argHandle(0x30).argWeightsBlob(0, 2500, again).retHandle(0x40).endCall();
  w->beginCall(2, 0x50, 1).argHandle(0x10).buildResult(true, 4096, Hash128{1, 2}).retHandle(0x60).endCall();
  w->beginCall(1, 0x11, 2).argNull().argWeightsRandom(1, 8, 99).status(CallStatus::Failed).endCall();
  w->close();
  s.calls = 4;
  return s;
}

}  // namespace tt
