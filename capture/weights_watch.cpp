// Weights a network's layers hold, watched until the network is built (docs/design.md, "Weights").
//
// TensorRT reads a layer's weights when it builds, not when they are passed: an application may
// fill or change them in place after add*() (a NumPy array, a buffer it loads later). The call log
// holds the bytes of the call, so before each build every weight the network's layers hold is read
// again, fault-safely, and each one whose bytes changed is recorded as a setter call on its layer
// with the same pointer and the new bytes, marked synthesized: the player replays it before the
// build and hands the library what it read at capture.
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "session.h"
#include "shim.h"

namespace trtrace::capture {
namespace {

// The layer setter each weights argument of a call stands for, in the order of the call's weights
// parameters: an add* call sets its new layer's weights, a setter its receiver's. (The spec does
// not say which add* parameter is which setter's; this table is the one place that does.)
struct Binding {
  uint32_t api;
  bool onCreated;  // the weights belong to the layer the call returned (add*), else to its receiver
  uint32_t setters[3];
};
constexpr Binding kBindings[] = {
    {api::kNetworkDefinition_addConstant, true, {api::kConstantLayer_setWeights}},
    {api::kNetworkDefinition_addConvolutionNd,
     true,
     {api::kConvolutionLayer_setKernelWeights, api::kConvolutionLayer_setBiasWeights}},
    {api::kNetworkDefinition_addDeconvolutionNd,
     true,
     {api::kDeconvolutionLayer_setKernelWeights, api::kDeconvolutionLayer_setBiasWeights}},
    {api::kNetworkDefinition_addScale,
     true,
     {api::kScaleLayer_setShift, api::kScaleLayer_setScale, api::kScaleLayer_setPower}},
    {api::kNetworkDefinition_addScaleNd,
     true,
     {api::kScaleLayer_setShift, api::kScaleLayer_setScale, api::kScaleLayer_setPower}},
    {api::kConstantLayer_setWeights, false, {api::kConstantLayer_setWeights}},
    {api::kConvolutionLayer_setKernelWeights, false, {api::kConvolutionLayer_setKernelWeights}},
    {api::kConvolutionLayer_setBiasWeights, false, {api::kConvolutionLayer_setBiasWeights}},
    {api::kDeconvolutionLayer_setKernelWeights, false, {api::kDeconvolutionLayer_setKernelWeights}},
    {api::kDeconvolutionLayer_setBiasWeights, false, {api::kDeconvolutionLayer_setBiasWeights}},
    {api::kScaleLayer_setShift, false, {api::kScaleLayer_setShift}},
    {api::kScaleLayer_setScale, false, {api::kScaleLayer_setScale}},
    {api::kScaleLayer_setPower, false, {api::kScaleLayer_setPower}},
};

const Binding* bindingOf(uint32_t api) {
  for (const Binding& b : kBindings)
    if (b.api == api) return &b;
  return nullptr;
}

// (layer, setter) -> the weights it holds, per network: what the library reads at the build. Kept
// as the bindings came, one append each (a call's cost stays flat): a later binding of a slot
// replaces an earlier one, and one not watched (random or empty weights) leaves nothing to compare.
using Slot = std::pair<Object*, uint32_t>;
struct Bound {
  Slot slot;
  PassedWeights w;
};
std::mutex gMu;
std::unordered_map<uint32_t, std::vector<Bound>> gHeld;

struct Changed {
  Slot slot;
  PassedWeights was;
};

// `w.hash` made the key of the bytes recorded, where the writer reads them off the application's
// thread (WriterOptions::deferKeys): one no worker has read yet is read now. Bytes that no longer
// gave the call's samples were recorded Lost, under a key no bytes give: changed, so a setter.
// True when the key was read here and now, whole: it is the hash of what the bytes hold at this
// build, so they are unchanged without a second read (a model built right after its construction
// has all its weights so: one read of them on this thread before the build, not two).
bool readRecordedKey(PassedWeights& w) {
  Writer* wr = Session::get().writer();
  if (!w.blob || !wr) return false;
  bool readHere = false;
  w.hash = wr->blobKey({w.hash, w.bytes}, &readHere).hash;
  return readHere;
}

// The network's weights whose bytes differ from those recorded (unreadable ones are left alone: the
// app may have freed the weights of a layer it replaced, and the library would not read them either).
std::vector<Changed> changedWeights(uint32_t network) {
  std::vector<Changed> all;
  {
    std::lock_guard g(gMu);
    auto it = gHeld.find(network);
    if (it == gHeld.end()) return {};
    std::map<Slot, const PassedWeights*> last;  // each slot's latest binding, in slot order
    for (const Bound& b : it->second) last[b.slot] = &b.w;
    for (const auto& [slot, w] : last)
      if (w->watched) all.push_back({slot, *w});
  }
  std::vector<Changed> changed;
  for (Changed& c : all) {  // read outside the lock: a model's weights take a while
    if (readRecordedKey(c.was)) continue;
    const std::optional<Hash128> now = hashReadable(c.was.w.values, c.was.bytes);
    if (now && *now != c.was.hash) changed.push_back(c);
  }
  return changed;
}

}  // namespace

void weightsBound(uint32_t api, Object* self, Object* created, std::span<const PassedWeights> passed) noexcept {
  const Binding* b = bindingOf(api);
  Object* layer = b ? (b->onCreated ? created : self) : nullptr;
  if (!layer || !layer->network) return;
  try {
    std::lock_guard g(gMu);
    auto& held = gHeld[layer->network];
    for (size_t i = 0; i < passed.size() && i < std::size(b->setters) && b->setters[i]; ++i)
      held.push_back({{layer, b->setters[i]}, passed[i]});
  } catch (...) {
    // Out of memory: this weight is not watched (the capture records the bytes of the call).
  }
}

void recheckWeights(uint32_t network) noexcept {
  Session& s = Session::get();
  if (!s.writer()) return;
  try {
    for (const Changed& c : changedWeights(network)) {
      // The bytes first recorded were never read by a build: a blob no source holds any more is
      // stored Replaced, not Lost (docs/format.md).
      if (c.was.blob) s.guarded([&](Writer& w) { w.supersedeBlob({c.was.hash, c.was.bytes}); });
      Call call(c.slot.first, c.slot.second, false);
      call.synthesized();
      call.argWeights(c.was.w);  // the same pointer, type and count; the bytes it holds now
    }                            // each synthesized call, once recorded, is what the slot holds (weightsBound)
  } catch (...) {
    // Out of memory: the capture goes on with the bytes of the calls.
  }
}

void forgetWeights(uint32_t network) noexcept {
  std::lock_guard g(gMu);
  gHeld.erase(network);
}

}  // namespace trtrace::capture
