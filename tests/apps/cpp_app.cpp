// A native C++ TensorRT-RTX client, written against trtrace's generated ABI (no TensorRT headers
// can be installed here; the calls are what the headers' inline methods compile to: the public
// object's V-pointer, then the vtable method). It loads the library the way the documented
// drop-in case describes: dlopen("libtensorrt_rtx.so.1") + dlsym.
//
//   cpp_app <out.engine> [--threads N | --dimension-name]
//     --threads N: N builders on N threads, engines <out>0..N-1
//     --dimension-name: also names and reads back dimension 0 of the input
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "trtrace/api_abi.h"

namespace abi = trtrace::abi;

namespace {

class Logger final : public abi::ILogger {
 public:
  abi::APILanguage getAPILanguage() const noexcept override { return abi::APILanguage::kCPP; }
  abi::InterfaceInfo getInterfaceInfo() const noexcept override { return {"ILogger", 1, 0}; }
  void log(abi::Severity s, const char* msg) noexcept override {
    if (s == abi::Severity::kERROR || s == abi::Severity::kINTERNAL_ERROR) std::fprintf(stderr, "[TRT] %s\n", msg);
  }
};

// The V-pointer of a public object at its chain level (what `obj->mImpl` is in the headers).
template <class I>
typename abi::Level<I>::V* impl(I* obj) {
  return static_cast<typename abi::Level<I>::V*>(reinterpret_cast<void* const*>(obj)[1 + abi::Level<I>::value]);
}
abi::VLayer* layer(void* obj) { return static_cast<abi::VLayer*>(reinterpret_cast<void* const*>(obj)[1]); }

abi::Dims64 dims(std::initializer_list<int64_t> d) {
  abi::Dims64 r{};
  r.nbDims = static_cast<int32_t>(d.size());
  int i = 0;
  for (int64_t v : d) r.d[i++] = v;
  return r;
}

using CreateBuilder = void* (*)(void*, int32_t);

bool gAskDimensionName = false;  // --dimension-name: also call ITensor::getDimensionName

bool buildOne(CreateBuilder create, Logger& logger, int variant, const std::string& out) {
  auto* builder = static_cast<abi::IBuilder*>(create(&logger, abi::kLibraryVersionInt));
  if (!builder) return false;
  abi::INetworkDefinition* net = impl(builder)->createNetworkV2(0);
  auto* n = impl(net);
  const int64_t c = 4 + variant;
  abi::ITensor* x = n->addInput("x", abi::DataType::kFLOAT, dims({1, c, 8, 8}));
  std::vector<float> k(static_cast<size_t>(8 * c * 3 * 3)), b(8);
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<float>((i * 7919 + variant) % 13) / 13.0f - 0.5f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = 0.1f * static_cast<float>(i);
  abi::Weights kw{abi::DataType::kFLOAT, k.data(), static_cast<int64_t>(k.size())};
  abi::Weights bw{abi::DataType::kFLOAT, b.data(), static_cast<int64_t>(b.size())};
  abi::IConvolutionLayer* conv = n->addConvolutionNd(*x, 8, dims({3, 3}), kw, bw);
  impl(conv)->setPaddingNd(dims({1, 1}));
  abi::IActivationLayer* act = n->addActivation(*layer(conv)->getOutput(0), abi::ActivationType::kRELU);
  abi::ITensor* y = layer(act)->getOutput(0);
  impl(y)->setName("y");
  if (gAskDimensionName) {
    impl(x)->setDimensionName(0, "batch");
    const char* name = impl(x)->getDimensionName(0);
    std::printf("dimension 0 of x: %s\n", name ? name : "(null)");
  }
  n->markOutput(*y);
  abi::IBuilderConfig* config = impl(builder)->createBuilderConfig();
  abi::IHostMemory* engine = impl(builder)->buildSerializedNetwork(*net, *config);
  bool ok = engine != nullptr;
  if (ok) {
    std::ofstream f(out, std::ios::binary);
    f.write(static_cast<const char*>(impl(engine)->data()), static_cast<std::streamsize>(impl(engine)->size()));
    std::printf("engine %s (%zu bytes)\n", out.c_str(), impl(engine)->size());
    delete reinterpret_cast<abi::PublicRoot*>(engine);
  }
  delete reinterpret_cast<abi::PublicRoot*>(config);
  delete reinterpret_cast<abi::PublicRoot*>(net);
  delete reinterpret_cast<abi::PublicRoot*>(builder);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cpp_app <out.engine> [--threads N]\n");
    return 2;
  }
  int threads = argc >= 4 && std::strcmp(argv[2], "--threads") == 0 ? std::atoi(argv[3]) : 0;
  gAskDimensionName = argc >= 3 && std::strcmp(argv[2], "--dimension-name") == 0;
  void* lib = dlopen("libtensorrt_rtx.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "cpp_app: %s\n", dlerror());
    return 1;
  }
  auto create = reinterpret_cast<CreateBuilder>(dlsym(lib, "createInferBuilder_INTERNAL"));
  Logger logger;
  if (threads <= 0) return buildOne(create, logger, 0, argv[1]) ? 0 : 1;
  std::vector<std::thread> ts;
  std::vector<int> ok(static_cast<size_t>(threads), 0);
  for (int i = 0; i < threads; ++i)
    ts.emplace_back([&, i] { ok[static_cast<size_t>(i)] = buildOne(create, logger, i, argv[1] + std::to_string(i)); });
  for (auto& t : ts) t.join();
  for (int v : ok)
    if (!v) return 1;
  return 0;
}
