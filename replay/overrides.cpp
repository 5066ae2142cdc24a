// Hand-written exceptions of the player, one per `override replay` / `hook replay` line of
// schema/api/90-overrides.api and one per recorded C entry point (declared by the generator in
// replay_overrides.h, so their signatures always match the spec). Mirrors capture/overrides.cpp.
#include <chrono>
#include <memory>
#include <string>

#include "replayer.h"
#include "trtrace/hash.h"
#include "trt_values.h"

namespace trtrace::replay {

namespace {
constexpr uint16_t iface(api::Iface i) { return static_cast<uint16_t>(i); }
}  // namespace

using namespace trtrace::abi;  // the generated declarations spell ABI types unqualified
#include "replay_overrides.h"

// ---- C entry points ---------------------------------------------------------------------------
void override_entry_createInferBuilder_INTERNAL(Replayer& x) {
  using Fn = void* (*)(void*, int32_t);
  auto fn = reinterpret_cast<Fn>(x.createBuilderFn());
  const int32_t version = x.argInt<int32_t>(1);
  x.bindResult(fn(static_cast<abi::ILogger*>(&x.logger()), version), iface(api::Iface::Builder));
}

void override_entry_setInternalLibraryPath(Replayer& x) {
  x.diverge("setInternalLibraryPath names a path of the capturing machine; not replayed");
}

void override_entry_getPrivateApi_INTERNAL(Replayer& x) { x.diverge("private API tables cannot be replayed"); }

void override_entry_createNvOnnxParser_INTERNAL(Replayer& x) {
  x.diverge("the ONNX parser is not replayed itself; its network calls are (re-capture with this shim)");
}

// ---- the builds: time each, compare its outcome with the capture's, hand the engine on ----------
namespace {
// What a build that just returned gave, before its engine is known.
NetworkResult outcome(Replayer& x, bool ok) {
  NetworkResult res;
  res.buildSeconds = x.stopwatchSeconds();
  res.network = x.call().networkId();
  res.built = true;
  res.ok = ok;
  res.captured = x.call().buildResult();
  res.errors = x.logger().takeErrors();
  return res;
}

// A build that succeeded where the capture's failed, or the reverse, diverges. Without a recorded
// outcome (a converted NVIDIA capture: its JSON never says whether a build succeeded) the replay's
// is taken as the app's, so a failure is reproduced, not a divergence. Under --set the build is not
// the captured one: its outcome is the replay's. Returns whether the outcome differs.
bool checkOutcome(Replayer& x, const NetworkResult& res) {
  const bool differs = res.captured && res.ok != res.captured->ok;
  if (differs && !x.hasSettings()) {
    std::string msg =
        res.ok ? "the build succeeded, but it failed at capture" : "the build failed, but it succeeded at capture";
    for (const auto& e : res.errors) msg += "\n  " + e;
    x.diverge(msg);
  }
  return differs;
}
}  // namespace

void pre_Builder_buildSerializedNetwork(Replayer& x) {
  (void)x.logger().takeErrors();
  x.startStopwatch();
}

bool post_Builder_buildSerializedNetwork(Replayer& x, abi::IHostMemory* engine) {
  NetworkResult res = outcome(x, engine != nullptr);
  const void* bytes = nullptr;
  if (engine) {
    const lib::EngineBytes b = lib::engineBytes(engine);
    res.engineSize = b.size;
    bytes = b.data;
    res.engineHash = hash128(bytes, res.engineSize);
  }
  const bool differs = checkOutcome(x, res);
  x.buildDone(res, bytes);
  // Without a recorded outcome the converter still gave the engine a handle (it cannot know there
  // was none), and a build --set made fail has one too: a failed build leaves it unbound.
  return engine || (res.captured && !differs);
}

// The streamed build: the app's writer (argument 2) is replaced by the player's, which writes the
// engine into the player's output as the library hands it over and hashes it on the way; its
// outcome is compared as buildSerializedNetwork's is, and the file appears only then.
void override_Builder_buildSerializedNetworkToStream(Replayer& x) {
  auto* self = static_cast<abi::VBuilder*>(x.receiverImpl(0, iface(api::Iface::Builder)));
  auto* network = static_cast<abi::INetworkDefinition*>(x.argObject(0, iface(api::Iface::NetworkDefinition), true));
  auto* config = static_cast<abi::IBuilderConfig*>(x.argObject(1, iface(api::Iface::BuilderConfig), true));
  std::unique_ptr<EngineStream> out = x.engineStream(x.call().networkId());
  lib::EngineStreamWriter writer(
      [&](const void* data, int64_t n) -> int64_t {
        return !out || n <= 0 || out->write(data, static_cast<size_t>(n)) ? n : -1;  // -1: the library gives up
      },
      abi::APILanguage::kCPP);
  pre_Builder_buildSerializedNetwork(x);
  NetworkResult res = outcome(x, self->buildSerializedNetworkToStream(*network, *config, writer));
  if (res.ok) res.engineSize = writer.size(), res.engineHash = writer.hash();
  checkOutcome(x, res);
  if (out) res.path = out->finish(res.ok);
  x.buildDone(res, nullptr);
}

}  // namespace trtrace::replay
