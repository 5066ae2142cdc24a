// A native C++ TensorRT-RTX client, written against trtrace's generated ABI (no TensorRT headers
// can be installed here; the calls are what the headers' inline methods compile to: the public
// object's V-pointer, then the vtable method). It loads the library the way the documented
// drop-in case describes: dlopen("libtensorrt_rtx.so.1") + dlsym.
//
//   cpp_app <out.engine> [options]
//     --threads N         N builders on N threads, engines <out>0..N-1
//     --networks N        N networks built one after the other (a builder each), engines <out>0..N-1
//     --variant V         the network variant (input channels 4 + V) of a single-network run
//     --dimension-name    also names and reads back dimension 0 of the input
//     --abort-at K        call abort() when K networks are built (K < N: with network K populated)
//     --throw-at K        the same with an unhandled C++ exception (std::terminate -> abort)
//     --fork              fork once network 0 is populated: the child builds network 1 with a
//                         builder of its own and exits; the parent builds network 0 (<out>0, <out>1)
//     --ready-fd R --go-fd G   after the first call, write one byte to fd R and wait for EOF on
//                         fd G (a barrier: the test starts several processes that all hold their
//                         trace open at the same time)
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
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
  return static_cast<typename abi::Level<I>::V*>(abi::vpointer(obj, abi::Level<I>::value));
}
abi::VLayer* layer(void* obj) { return static_cast<abi::VLayer*>(abi::vpointer(obj, 0)); }

abi::Dims64 dims(std::initializer_list<int64_t> d) {
  abi::Dims64 r{};
  r.nbDims = static_cast<int32_t>(d.size());
  int i = 0;
  for (int64_t v : d) r.d[i++] = v;
  return r;
}

using CreateBuilder = void* (*)(void*, int32_t);

bool gAskDimensionName = false;    // --dimension-name: also call ITensor::getDimensionName
int gAbortAt = -1, gThrowAt = -1;  // --abort-at / --throw-at
int gReadyFd = -1, gGoFd = -1;     // --ready-fd / --go-fd
bool gFork = false;
int gBuilt = 0;
pid_t gChild = -1;

// Dies as asked once `built` networks are built (an uncaught exception ends in std::terminate).
void maybeDie(int built) {
  std::fflush(stdout);
  if (built == gAbortAt) std::abort();
  if (built == gThrowAt) throw std::runtime_error("cpp_app: exception thrown on purpose");
}

void barrier() {
  if (gReadyFd < 0) return;
  char c = 'r';
  if (::write(gReadyFd, &c, 1) != 1) std::perror("cpp_app: ready");
  ::close(gReadyFd);
  while (::read(gGoFd, &c, 1) > 0) {}
  ::close(gGoFd);
  gReadyFd = gGoFd = -1;
}

bool buildOne(CreateBuilder create, Logger& logger, int variant, const std::string& out, bool forkHere = false) {
  auto* builder = static_cast<abi::IBuilder*>(create(&logger, abi::kLibraryVersionInt));
  if (!builder) return false;
  barrier();
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
  if (forkHere) {
    // Network 0 is populated (its weights possibly still queued in the writer): fork. The child
    // builds network 1 with a builder of its own and exits normally; the parent goes on.
    std::fflush(stdout);
    gChild = fork();
    if (gChild == 0) std::exit(buildOne(create, logger, 1, out.substr(0, out.size() - 1) + "1") ? 0 : 1);
  }
  maybeDie(gBuilt);
  abi::IBuilderConfig* config = impl(builder)->createBuilderConfig();
  abi::IHostMemory* engine = impl(builder)->buildSerializedNetwork(*net, *config);
  bool ok = engine != nullptr;
  ++gBuilt;
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
    std::fprintf(stderr, "usage: cpp_app <out.engine> [options] (see the source)\n");
    return 2;
  }
  int threads = 0, networks = 0, variant = 0;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "cpp_app: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::atoi(argv[++i]);
    };
    if (a == "--threads")
      threads = next();
    else if (a == "--networks")
      networks = next();
    else if (a == "--variant")
      variant = next();
    else if (a == "--dimension-name")
      gAskDimensionName = true;
    else if (a == "--abort-at")
      gAbortAt = next();
    else if (a == "--throw-at")
      gThrowAt = next();
    else if (a == "--fork")
      gFork = true;
    else if (a == "--ready-fd")
      gReadyFd = next();
    else if (a == "--go-fd")
      gGoFd = next();
    else {
      std::fprintf(stderr, "cpp_app: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  void* lib = dlopen("libtensorrt_rtx.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "cpp_app: %s\n", dlerror());
    return 1;
  }
  auto create = reinterpret_cast<CreateBuilder>(dlsym(lib, "createInferBuilder_INTERNAL"));
  Logger logger;
  const std::string out = argv[1];
  if (gFork) {
    bool ok = buildOne(create, logger, 0, out + "0", true);
    int status = 0;
    if (gChild > 0 && waitpid(gChild, &status, 0) == gChild) ok = ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return ok ? 0 : 1;
  }
  if (threads <= 0) {
    bool ok = true;
    if (networks <= 0) ok = buildOne(create, logger, variant, out);
    for (int i = 0; i < networks; ++i) ok = buildOne(create, logger, i, out + std::to_string(i)) && ok;
    maybeDie(gBuilt);
    return ok ? 0 : 1;
  }
  std::vector<std::thread> ts;
  std::vector<int> ok(static_cast<size_t>(threads), 0);
  for (int i = 0; i < threads; ++i)
    ts.emplace_back([&, i] { ok[static_cast<size_t>(i)] = buildOne(create, logger, i, out + std::to_string(i)); });
  for (auto& t : ts) t.join();
  for (int v : ok)
    if (!v) return 1;
  return 0;
}
