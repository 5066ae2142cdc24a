// fuzz_seedgen OUTDIR: writes seed inputs for the fuzz targets, made by the real writer:
//   OUTDIR/trace_reader/  closed traces, an unclosed (crashed) one, cut ones
//   OUTDIR/blob_decoder/  the payload of every blob block of those traces (raw data re-aligned
//                         for the fuzz_blob_decoder framing)
//   OUTDIR/replay/        one trace per array/count pair of the spec (addConcatenation, addEinsum,
//                         setScales, ...), each a call the library accepts, raw call log (fuzz_replay's
//                         mutator rewrites counts and array lengths in place)
// The JSON seeds are real NVIDIA captures, committed in tests/fuzz/corpus/json_reader/.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "internal.h"
#include "trtrace/api_abi.h"
#include "trtrace/api_table.h"

namespace F = trtrace::format;
using namespace trtrace;

namespace {

std::vector<uint8_t> slurp(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
void spit(const std::string& p, const uint8_t* d, size_t n) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(d), static_cast<std::streamsize>(n));
}

std::vector<std::byte> floats(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, 0.05f);
  std::vector<std::byte> v(n * 4);
  for (size_t i = 0; i < n; ++i) {
    float f = d(g);
    std::memcpy(v.data() + 4 * i, &f, 4);
  }
  return v;
}
std::vector<std::byte> halves(size_t n, uint32_t seed) {  // fp16-like: few distinct high bytes
  std::mt19937 g(seed);
  std::vector<std::byte> v(n * 2);
  for (size_t i = 0; i < n; ++i) {
    v[2 * i] = std::byte(g());
    v[2 * i + 1] = std::byte(0x3c + (g() & 3));
  }
  return v;
}

// Every value kind, raw and compressed blobs (both byte groupings, several chunks), a build
// result with errors, an unsupported call; `close` false leaves it as a crash would. Call-log
// segments are zstd-compressed where that pays (logLevel 0: all raw, so that mutations reach the
// FlatBuffers Verifier directly).
void writeTrace(const std::string& path, FlushPolicy flush, bool close, int seed, int logLevel = 3) {
  WriterOptions o;
  o.logZstdLevel = logLevel;
  o.path = path;
  o.workerThreads = 0;
  o.chunkBytes = 4096;
  o.flush = flush;
  HeaderInfo h;
  h.producer = "fuzz_seedgen";
  h.producerVersion = "1";
  h.libraryName = "libtensorrt_rtx.so.1";
  h.libraryVersion = "1.6.1";
  h.settings = {{"TRT_SHIM_FLUSH_ON_BUILD", "1"}};
  h.host = "seed";
  h.pid = 7;
  h.startTimeNs = 1;
  auto w = Writer::create(o, h);
  std::string_view args[] = {"a", "b", "c"};
  w->describeApi(1, "INetworkDefinition", "addConstant", args);
  w->describeApi(2, "IBuilder", "buildSerializedNetwork", {});
  w->describeApi(3, "ILayer", "setName", args);
  auto f32 = floats(1100, seed), f16 = halves(2100, seed + 1);
  std::vector<std::byte> raw(500);
  std::mt19937 g(seed);
  for (auto& b : raw) b = std::byte(g());
  auto r32 = w->putBlob(f32.data(), f32.size(), BlobHint::F32);
  auto r16 = w->putBlob(f16.data(), f16.size(), BlobHint::F16);
  auto rr = w->putBlob(raw.data(), raw.size(), BlobHint::None);
  int64_t dims[] = {1, 3, 16, 16};
  float fl[] = {1.5f, -2.f};
  uint64_t hs[] = {0x10, 0x20};
  std::byte bytes[] = {std::byte{1}, std::byte{2}, std::byte{3}};
  w->beginCall(1, 0x10, 1).argDims(dims).argWeightsBlob(0, 1100, r32).retHandle(0x20, 4).endCall();
  w->beginCall(1, 0x10, 1).argDims(dims).argWeightsBlob(1, 2100, r16).retHandle(0x21, 4).endCall();
  w->beginCall(1, 0x10, 1).argI64Array(dims).argWeightsBlob(2, 500, rr).retHandle(0x22).endCall();
  w->beginCall(3, 0x20, 1).argString("conv1").argBool(true).argEnum(5, 2).endCall();
  w->beginCall(3, 0x21, 1).argF32(0.5f).argF64(1e-3).argU64(7).argI64(-1).retNull().endCall();
  w->beginCall(3, 0x22, 1).argHandleArray(hs).argF32Array(fl).argBytes(bytes).endCall();
  w->beginCall(1, 0x10, 1).argWeightsInline(0, 2, std::span(bytes, 2)).argWeightsRandom(0, 1000, 9).endCall();
  w->beginCall(3, 0x22, 1).unsupported("IConvolutionLayer", 17).endCall();
  w->beginCall(3, 0x22, 1).status(CallStatus::Exception).message("boom").endCall();
  std::string errs[] = {"shape mismatch", "second"};
  w->beginCall(2, 0x30, 1).argHandle(0x10).buildResult(false, 0, Hash128{}, errs).retNull().endCall();
  w->beginCall(2, 0x30, 2).argHandle(0x11).buildResult(true, 4096, Hash128{1, 2}).retHandle(0x40).endCall();
  if (close) {
    w->close();
  } else {
    w->flush();
    auto bytes = slurp(path);  // the unclosed file, as a crash would leave it
    w.reset();
    spit(path, bytes.data(), bytes.size());
  }
}

// A builder (1), a network (2) and two inputs "a", "b" of [1, 4] (3, 4), then `calls` (object 5 next).
void writeReplaySeed(const std::string& path, const std::function<void(Writer&)>& calls) {
  WriterOptions o;
  o.path = path;
  o.workerThreads = 0;
  o.logZstdLevel = 0;  // raw: the mutator edits the call log in place
  HeaderInfo h;
  h.producer = "fuzz_seedgen";
  h.libraryName = trtrace::abi::kLibraryName;
  h.libraryVersion = trtrace::abi::kLibraryVersion;
  auto w = Writer::create(o, h);
  w->beginCall(api::kentry_createInferBuilder_INTERNAL, 0, 0)
      .argBool(true)
      .argI64(trtrace::abi::kLibraryVersionInt)
      .retHandle(1)
      .endCall();
  w->beginCall(api::kBuilder_createNetworkV2, 1, 0).argU64(0).retHandle(2).endCall();
  const int64_t dims[] = {1, 4};
  w->beginCall(api::kNetworkDefinition_addInput, 2, 1)
      .argString("a")
      .argEnum(api::kEnumDataType, 0)
      .argDims(dims)
      .retHandle(3)
      .endCall();
  w->beginCall(api::kNetworkDefinition_addInput, 2, 1)
      .argString("b")
      .argEnum(api::kEnumDataType, 0)
      .argDims(dims)
      .retHandle(4)
      .endCall();
  calls(*w);
  w->close();
}

// Seeds for fuzz_replay: a real call of each array/count pair the spec has.
void writeReplaySeeds(const std::filesystem::path& dir) {
  const uint64_t two[] = {3, 4};
  const int64_t ints[] = {1, 4};
  const float scales[] = {1.f, 2.f};
  const char plugins[] = "p.so";
  const std::span<const std::byte> paths(reinterpret_cast<const std::byte*>(plugins), sizeof plugins);
  using Calls = std::function<void(Writer&)>;
  const std::pair<const char*, Calls> seeds[] = {
      {"concatenation",
       [&](Writer& w) {
         w.beginCall(api::kNetworkDefinition_addConcatenation, 2, 1)
             .argHandleArray(two)
             .argI64(2)
             .retHandle(5)
             .endCall();
       }},
      {"einsum",
       [&](Writer& w) {
         w.beginCall(api::kNetworkDefinition_addEinsum, 2, 1)
             .argHandleArray(two)
             .argI64(2)
             .argString("ij,ij->ij")
             .retHandle(5)
             .endCall();
       }},
      {"scales",
       [&](Writer& w) {
         w.beginCall(api::kNetworkDefinition_addResize, 2, 1).argHandle(3).retHandle(5).endCall();
         w.beginCall(api::kResizeLayer_setScales, 5, 1).argF32Array(scales).argI64(2).endCall();
       }},
      {"shape_values",
       [&](Writer& w) {
         w.beginCall(api::kBuilder_createOptimizationProfile, 1, 0).retHandle(5).endCall();
         w.beginCall(api::kOptimizationProfile_setShapeValuesV2, 5, 0)
             .argString("a")
             .argEnum(api::kEnumOptProfileSelector, 0)
             .argI64Array(ints)
             .argI64(2)
             .endCall();
       }},
      {"plugins",
       [&](Writer& w) {
         w.beginCall(api::kBuilder_createBuilderConfig, 1, 0).retHandle(5).endCall();
         w.beginCall(api::kBuilderConfig_setPluginsToSerialize, 5, 0).argBytes(paths).argI64(1).endCall();
       }},
      {"dist_collective",
       [&](Writer& w) {
         w.beginCall(api::kNetworkDefinition_addDistCollective, 2, 1)
             .argHandle(3)
             .argEnum(api::kEnumCollectiveOperation, 0)
             .argEnum(api::kEnumReduceOperation, 0)
             .argI64(0)
             .argI64Array(ints)
             .argI64(2)
             .retHandle(5)
             .endCall();
       }},
  };
  for (const auto& [name, calls] : seeds) writeReplaySeed((dir / (std::string(name) + ".trtrace")).string(), calls);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_seedgen OUTDIR\n");
    return 1;
  }
  namespace fs = std::filesystem;
  fs::path out = argv[1];
  fs::create_directories(out / "trace_reader");
  fs::create_directories(out / "blob_decoder");
  fs::create_directories(out / "json_reader");  // its seeds are real captures: corpus/json_reader
  fs::create_directories(out / "replay");
  fs::create_directories(out / "export");  // its seeds are real captures: corpus/export
  writeReplaySeeds(out / "replay");
  std::vector<std::string> traces;
  auto t = [&](const char* name) {
    traces.push_back((out / "trace_reader" / name).string());
    return traces.back();
  };
  writeTrace(t("closed_atclose.trtrace"), FlushPolicy::AtClose, true, 1);
  writeTrace(t("closed_everycall.trtrace"), FlushPolicy::EveryCall, true, 2);
  writeTrace(t("unclosed_everycall.trtrace"), FlushPolicy::EveryCall, false, 3);
  writeTrace(t("unclosed_onbuild.trtrace"), FlushPolicy::OnBuild, false, 4);
  writeTrace(t("closed_atclose_rawlog.trtrace"), FlushPolicy::AtClose, true, 5, 0);
  {  // cuts of a closed trace: inside a block, and just before the footer
    auto full = slurp(traces[0]);
    spit((out / "trace_reader" / "cut_half.trtrace").string(), full.data(), full.size() / 2);
    spit((out / "trace_reader" / "cut_end.trtrace").string(), full.data(), full.size() - 7);
  }
  // Blob payloads, framed the way fuzz_blob_decoder frames its input.
  const uint64_t pre = fz::blobPrefix().size();
  int n = 0;
  for (auto& p : traces) {
    auto b = slurp(p);
    uint64_t pos = sizeof(F::FileHeader);
    while (pos + sizeof(F::BlockHeader) <= b.size()) {
      F::BlockHeader h;
      std::memcpy(&h, b.data() + pos, sizeof h);
      if (h.magic != F::kBlockMagic || h.payloadSize > b.size() - pos - sizeof h) break;
      const uint8_t* pl = b.data() + pos + sizeof h;
      if (h.type == uint16_t(F::BlockType::Blob)) {
        F::BlobRecord r;
        std::memcpy(&r, pl, sizeof r);
        std::vector<uint8_t> seed;
        if (r.encoding == uint16_t(F::BlobEncoding::Raw)) {
          uint64_t d = sizeof r;
          while ((pre + sizeof(F::BlockHeader) + d) % F::kBlobAlign) ++d;
          F::BlobRecord r2 = r;
          r2.dataOffset = d;
          seed.resize(d);
          std::memcpy(seed.data(), &r2, sizeof r2);
          seed.insert(seed.end(), pl + r.dataOffset, pl + r.dataOffset + r.storedSize);
        } else {
          seed.assign(pl, pl + h.payloadSize);
        }
        spit((out / "blob_decoder" / ("blob" + std::to_string(n++))).string(), seed.data(), seed.size());
      }
      pos = F::alignUp(pos + sizeof h + h.payloadSize, F::kBlockAlign);
    }
  }
  // The C interface (fuzz_capi) reads what the trace reader reads: the same traces seed it.
  fs::create_directories(out / "capi");
  for (const auto& t : traces)
    fs::copy_file(t, out / "capi" / fs::path(t).filename(), fs::copy_options::overwrite_existing);
  std::printf("fuzz_seedgen: %zu traces, %d blob payloads in %s\n", traces.size() + 2, n, out.c_str());
  return 0;
}
