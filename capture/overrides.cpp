// Hand-written exceptions of the capture shim, one per `override capture` / `hook capture` line of
// schema/api/90-overrides.api (declared by the generator in capture_overrides.h), plus the C entry
// points, loading of the real library and the logger the builder gets.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "error_logger.h"
#include "session.h"
#include "shim.h"
#include "trt_values.h"
#include "trtrace/hash.h"

#define TRTRACE_EXPORT __attribute__((visibility("default")))

namespace trtrace::capture {
namespace {

// ---- the real library -------------------------------------------------------------------------
void* selfSymbol();  // our createInferBuilder_INTERNAL, to recognise ourselves

// The library the application has already loaded (not the shim): next in the global lookup order
// (LD_PRELOAD before a linked or globally loaded library), else loaded privately under its SONAME
// (Python's tensorrt_rtx_libs preloads it RTLD_LOCAL). nullptr when it has loaded none yet.
void* applicationLibrary() {
  if (void* next = dlsym(RTLD_NEXT, "createInferBuilder_INTERNAL"); next && next != selfSymbol()) {
    Dl_info info{};
    if (dladdr(next, &info) && info.dli_fname)
      if (void* h = dlopen(info.dli_fname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) return h;
  }
  for (const char* soname : {"libtensorrt_rtx.so.1", "libtensorrt_rtx.so"}) {
    if (void* h = dlopen(soname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) {
      void* sym = dlsym(h, "createInferBuilder_INTERNAL");
      if (sym && sym != selfSymbol()) return h;
      dlclose(h);
    }
  }
  return nullptr;
}

// The real library, in the shared discovery order (libinfo/library.h, README "Drop-in"):
// TRT_SHIM_NVINFER_LIB_NAME; else the application's own (above); else the active virtual
// environment's tensorrt_rtx_libs, then the loader path. The shim does not ask python3 (that
// would start a process inside the application).
lib::Loaded openReal() {
  if (Session::get().config().libName.empty()) {
    if (void* h = applicationLibrary()) return {h, lib::inspect(h), "the application's, already loaded"};
  }
  std::string tried;
  lib::Loaded l = lib::load(lib::candidates("", 0, false), selfSymbol(), tried);
  if (!l.handle)
    std::fprintf(stderr,
                 "trtrace: error: cannot load the real TensorRT-RTX library (%s); set TRT_SHIM_NVINFER_LIB_NAME "
                 "to its path\n",
                 tried.c_str());
  return l;
}

// The loaded real library and what it is; opened at the first intercepted call. Which library
// was chosen, and why, is said when TRT_SHIM_DUMP_API or TRT_SHIM_PRINT_WELCOME is set.
const lib::Loaded& real() {
  static const lib::Loaded r = [] {
    lib::Loaded x = openReal();
    if (!x.handle) return x;
    const Config& c = Session::get().config();
    if (c.dumpApi || c.printWelcome)
      std::fprintf(stderr, "trtrace: real library: %s %s, %s (%s)\n", abi::kLibraryName, x.info.version.c_str(),
                   x.info.path.c_str(), x.how.c_str());
    return x;
  }();
  return r;
}

// What capture does with the loaded library's version (docs/design.md, "The real library"):
// a spec'd major.minor is captured exactly; a newer minor of the same major is captured (the
// spec'd subset; methods beyond it pass through as UNSUPPORTED records) with one line; an older
// minor or another major is not wrapped (one line) unless TRTRACE_IGNORE_VERSION.
bool captureThisVersion() {
  static const bool ok = [] {
    const lib::LibraryInfo& l = realLibrary();
    const lib::Support s = lib::support(l.code);
    const auto& newest = abi::kSpecVersions[abi::kNumSpecVersions - 1];
    if (s == lib::Support::Described) return true;
    if (s == lib::Support::NewerMinor) {
      std::fprintf(stderr,
                   "trtrace: note: %s is %s %s, newer than this shim's spec (newest %s); capturing the "
                   "spec'd subset, calls beyond it are recorded as UNSUPPORTED\n",
                   l.path.c_str(), abi::kLibraryName, l.version.c_str(), newest.text);
      return true;
    }
    const bool ignore = Session::get().config().ignoreVersion;
    std::fprintf(stderr, "trtrace: %s: the real library %s is %s %s, this shim describes %s %s to %s%s\n",
                 ignore ? "warning" : "error", l.path.c_str(), abi::kLibraryName, l.version.c_str(), abi::kLibraryName,
                 abi::kSpecVersions[0].text, newest.text,
                 ignore ? "; capturing anyway (TRTRACE_IGNORE_VERSION)"
                        : "; not capturing (TRTRACE_IGNORE_VERSION=1 captures anyway)");
    return ignore;
  }();
  return ok;
}

// Drop-in into a Python package's folder (pip's tensorrt_rtx_libs) cannot capture, found by trying
// (README, "Drop-in"): the package's __init__ preloads every *.so* in its folder by path and
// the bindings then find libtensorrt_rtx.so.1 by SONAME only, which is the real library's (renamed
// to *.so*, it silently satisfies them) and never ours (renamed otherwise, the bindings fail to
// import). So, at load (files only, no environment), a shim loaded under the library's name from a
// folder that holds an __init__.py says so in one line and names what works.
__attribute__((constructor)) void refuseDropInIntoPythonPackage() {
  Dl_info self{};
  if (!dladdr(reinterpret_cast<void*>(&refuseDropInIntoPythonPackage), &self) || !self.dli_fname) return;
  const std::string path = self.dli_fname;
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (path.compare(slash + 1, 15, "libtensorrt_rtx") != 0 || ::access((dir + "/__init__.py").c_str(), F_OK) != 0)
    return;
  std::fprintf(stderr,
               "trtrace: error: %s: drop-in into a Python package folder does not capture (the package "
               "preloads every *.so* there and its bindings bind to the real library by SONAME); restore the real "
               "library there and use LD_PRELOAD=<the shim> instead\n",
               path.c_str());
}

// ---- the logger we give the real builder: forwards to the application's, keeps the errors ------
class ShimLogger final : public lib::ErrorKeepingLogger {
 public:
  explicit ShimLogger(abi::ILogger* app) : app_(app) {}
  abi::APILanguage getAPILanguage() const noexcept override {
    return app_ ? app_->getAPILanguage() : abi::APILanguage::kCPP;
  }
  abi::InterfaceInfo getInterfaceInfo() const noexcept override {
    return app_ ? app_->getInterfaceInfo() : abi::InterfaceInfo{"ILogger", 1, 0};
  }
  void clearErrors() { (void)takeErrors(); }

 private:
  void pass(abi::Severity severity, const char* msg) noexcept override {
    if (app_) app_->log(severity, msg);
  }
  abi::ILogger* app_;
};

std::mutex gLoggersMu;
std::vector<std::pair<Object*, ShimLogger*>> gLoggers;  // builder -> its logger (few builders)

ShimLogger* loggerOf(Object* builder) {
  std::lock_guard<std::mutex> lk(gLoggersMu);
  for (auto& [b, l] : gLoggers)
    if (b == builder) return l;
  return nullptr;
}

}  // namespace

const lib::LibraryInfo& realLibrary() { return real().info; }

void* realSymbol(const char* name) {
  void* h = real().handle;
  return h ? dlsym(h, name) : nullptr;
}

// ---- the builds: the outcome (engine size + XXH3-128, or the library's errors) --------------------
namespace {
// Before any build is forwarded. The library reads the weights now: those the app changed since it
// passed them are recorded again, in synthesized setter calls that come before this build in the log.
void beginBuild(Call& c, Object* builder) {
  if (ShimLogger* logger = loggerOf(builder)) logger->clearErrors();
  recheckWeights(c.network());
}

// The build's outcome, before its result is recorded: the engine's size and hash, or the errors.
void recordOutcome(Call& c, Object* builder, bool ok, uint64_t size, const Hash128& hash) {
  ShimLogger* logger = loggerOf(builder);
  std::vector<std::string> errors = logger ? logger->takeErrors() : std::vector<std::string>{};
  c.record([&](CallEncoder& e) {
    if (ok)
      e.buildResult(true, size, hash);
    else
      e.buildResult(false, 0, {}, errors).status(CallStatus::Failed);
  });
}
}  // namespace

void pre_Builder_buildSerializedNetwork(Call& c, Object* self, abi::INetworkDefinition&, abi::IBuilderConfig&) {
  beginBuild(c, self);
}

void post_Builder_buildSerializedNetwork(Call& c, Object* self, abi::IHostMemory* engine, abi::INetworkDefinition&,
                                         abi::IBuilderConfig&) {
  const lib::EngineBytes b = engine ? lib::engineBytes(engine) : lib::EngineBytes{};
  recordOutcome(c, self, engine != nullptr, b.size, engine ? hash128(b.data, b.size) : Hash128{});
}

// Once the build's call is recorded: pending weights drained, TRT_SHIM_FLUSH_ON_BUILD applied.
void after_Builder_buildSerializedNetwork(Object*) noexcept { Session::get().afterBuild(); }

// The streamed build: the library gets our writer, which hashes each piece on its way to the app's
// writer (the app gets every byte and call as without us; what it returns goes back unchanged). The
// outcome is the build's result with the bytes the library wrote, as buildSerializedNetwork records.
bool override_Builder_buildSerializedNetworkToStream(Object* self, abi::VBuilder* real,
                                                     abi::INetworkDefinition& network, abi::IBuilderConfig& config,
                                                     abi::IStreamWriter& writer) {
  struct After {
    ~After() { Session::get().afterBuild(); }
  } after;  // destroyed after the Call: once the call is recorded
  Call c(self, api::kBuilder_buildSerializedNetworkToStream, false, netHint(&network, &config));
  c.argHandle(&network);
  c.argHandle(&config);
  c.argForeign(true);
  beginBuild(c, self);
  lib::EngineStreamWriter ours([&](const void* data, int64_t n) { return writer.write(data, n); },
                               writer.getAPILanguage());
  const bool ok = real->buildSerializedNetworkToStream(*static_cast<abi::INetworkDefinition*>(unwrap(&network)),
                                                       *static_cast<abi::IBuilderConfig*>(unwrap(&config)), ours);
  recordOutcome(c, self, ok, ours.size(), ours.hash());
  c.retBool(ok);
  return ok;
}

}  // namespace trtrace::capture

using namespace trtrace;
using namespace trtrace::capture;

// ---- C entry points ---------------------------------------------------------------------------
#include "capture_entries.inc"

// NVIDIA's shim C interface, with the signatures and results of NVIDIA's shim (docs/json-bin-layout.md,
// "The shim's C interface"): the JSON+BIN path (and, when TRT_SHIM_OUTPUT_FILE is unset and capture
// has not started, the trace beside it), changeable until the first JSON flush. Set returns 1 when
// the path was taken, 0 (one line) when not; get returns the path's length and copies it into
// buf[size]. Nothing here reads the environment at load.
extern "C" TRTRACE_EXPORT int trtShimSetOutputJsonFile(const char* path) { return Session::setOutputJson(path); }
extern "C" TRTRACE_EXPORT size_t trtShimGetOutputJsonFile(char* buf, size_t size) {
  return Session::outputJson(buf, size);
}

extern "C" TRTRACE_EXPORT void* createInferBuilder_INTERNAL(void* logger, int32_t version) {
  using Fn = void* (*)(void*, int32_t);
  static Fn fn = reinterpret_cast<Fn>(realSymbol("createInferBuilder_INTERNAL"));
  if (!fn) return nullptr;
  if (!captureThisVersion()) return fn(logger, version);
  auto* shimLogger = new ShimLogger(static_cast<abi::ILogger*>(logger));
  void* real = nullptr;
  Object* builder = nullptr;
  {
    Call c(nullptr, api::kentry_createInferBuilder_INTERNAL, false);
    c.argForeign(logger != nullptr);
    c.argI64(version);
    real = fn(shimLogger, version);
    builder = static_cast<Object*>(c.retHandle(real, kIfaceBuilder));
  }
  if (!builder) {
    delete shimLogger;
    return nullptr;
  }
  std::lock_guard<std::mutex> lk(gLoggersMu);
  gLoggers.emplace_back(builder, shimLogger);  // kept for the process lifetime (the library may log late)
  return builder;
}

namespace trtrace::capture {
namespace {
void* selfSymbol() { return reinterpret_cast<void*>(&::createInferBuilder_INTERNAL); }
}  // namespace
}  // namespace trtrace::capture
