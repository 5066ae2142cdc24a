// Hand-written exceptions of the player, one per `override replay` / `hook replay` line of
// schema/api/90-overrides.api and one per recorded C entry point (declared by the generator in
// replay_overrides.h, so their signatures always match the spec). Mirrors capture/overrides.cpp.
#include <chrono>
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

// ---- Builder.buildSerializedNetwork hooks: time the build, compare its outcome, hand the engine on
void pre_Builder_buildSerializedNetwork(Replayer& x) {
  (void)x.logger().takeErrors();
  x.startStopwatch();
}

bool post_Builder_buildSerializedNetwork(Replayer& x, abi::IHostMemory* engine) {
  NetworkResult res;
  res.buildSeconds = x.stopwatchSeconds();
  res.network = x.call().networkId();
  res.built = true;
  res.captured = x.call().buildResult();
  res.errors = x.logger().takeErrors();
  const void* bytes = nullptr;
  if (engine) {
    const lib::EngineBytes b = lib::engineBytes(engine);
    res.ok = true;
    res.engineSize = b.size;
    bytes = b.data;
    res.engineHash = hash128(bytes, res.engineSize);
  }
  // No recorded outcome (a converted NVIDIA capture: its JSON never says whether a build
  // succeeded): the replay's outcome is taken as the app's, so a failure is reproduced, not a divergence.
  // Under --set the build is not the captured one: its outcome is the replay's, not a divergence.
  const bool outcomeDiffers = res.captured && res.ok != res.captured->ok;
  if (outcomeDiffers && !x.hasSettings()) {
    std::string msg = res.ok ? "the build succeeded, but it failed at capture"
                             : "the build failed, but it succeeded at capture";
    for (const auto& e : res.errors) msg += "\n  " + e;
    x.diverge(msg);
  }
  x.buildDone(res, bytes);
  // Without a recorded outcome the converter still gave the engine a handle (it cannot know there
  // was none), and a build --set made fail has one too: a failed build leaves it unbound.
  return engine || (res.captured && !outcomeDiffers);
}

}  // namespace trtrace::replay
