// Conformance of the API spec (schema/api/*.api) with the real TensorRT-RTX library, no GPU needed.
//
// The library named by TRTRACE_TRT_LIB is dlopened, a builder is created through
// createInferBuilder_INTERNAL with our own ILogger, and every spec'd method is called through the
// generated ABI (V-pointer of the public object's chain level). Most of the exercise is generated
// (conformance_gen.inc from schema/apigen.py): counting call wrappers, set/get round trips with
// type-driven samples, probes of const queries, the expected LayerType and one TEST per interface.
// The hand-written part is this file's "recipes" section: how to obtain an instance of each
// interface, sample overrides, and the calls that need real objects as arguments.
// A wrong vtable slot or signature in the spec shows up as a wrong value, a rejected call or a
// crash; the crash handler names the test (= interface) that was running.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "trtrace/api_abi.h"
#include "trtrace/api_table.h"

namespace trtrace::conf {
using namespace trtrace::abi;

// ==============================================================================================
// Harness
// ==============================================================================================
std::vector<uint32_t>& hits() {
  static std::vector<uint32_t> h(api::kMaxApiId + 1);
  return h;
}
void hit(uint32_t id) { ++hits()[id]; }
std::set<int32_t>& seenLayerTypes() {
  static std::set<int32_t> s;
  return s;
}
std::vector<std::string>& unchecked() {  // round trips called but not compared (with the reason)
  static std::vector<std::string> u;
  return u;
}

class TestLogger final : public ILogger {
 public:
  APILanguage getAPILanguage() const noexcept override { return APILanguage::kCPP; }
  InterfaceInfo getInterfaceInfo() const noexcept override { return {"ILogger", 1, 0}; }
  void log(Severity s, const char* msg) noexcept override {
    if (s <= Severity::kERROR) {
      text_ += std::string("\n  library error: ") + msg;
      ++errors_;
    }
    if (verbose_ && s <= Severity::kWARNING) std::fprintf(stderr, "[lib %d] %s\n", static_cast<int>(s), msg);
  }
  std::string take() { return std::exchange(text_, {}); }
  int errors() const { return errors_; }
  bool verbose_ = std::getenv("CONFORMANCE_VERBOSE") != nullptr;

 private:
  std::string text_;
  int errors_ = 0;
};

struct Lib {
  void* handle = nullptr;
  std::string path;
  using CreateFn = void* (*)(void*, int32_t);
  CreateFn create = nullptr;
  TestLogger logger;
};
Lib& lib() {
  static Lib l;
  return l;
}

// ---- sample values and comparisons
struct Override {
  std::optional<int64_t> i;        // integers, bools, enums
  std::optional<double> f;         // floats
  const char* s = nullptr;         // strings
  std::optional<Dims64> d;         // dims
  const char* nocheck = nullptr;   // call setter and getter, do not compare: why
  std::optional<int64_t> expectI;  // with nocheck: the getter returns this fixed value instead
  const char* expectS = nullptr;
};
Override I(int64_t v) {
  Override o;
  o.i = v;
  return o;
}
Override F(double v) {
  Override o;
  o.f = v;
  return o;
}
Override S(const char* v) {
  Override o;
  o.s = v;
  return o;
}
Override D(Dims64 v) {
  Override o;
  o.d = v;
  return o;
}
Override NoCheck(const char* why) {
  Override o;
  o.nocheck = why;
  return o;
}
// The setter has no effect here (why); the getter must return `v`.
Override Fixed(int64_t v, const char* why) {
  Override o;
  o.nocheck = why;
  o.expectI = v;
  return o;
}
Override FixedS(const char* v, const char* why) {
  Override o;
  o.nocheck = why;
  o.expectS = v;
  return o;
}
std::map<std::string_view, Override>& overrides();  // recipes section

template <class T>
T sample(std::string_view key, T def) {
  auto it = overrides().find(key);
  if (it == overrides().end()) return def;
  const Override& o = it->second;
  if constexpr (std::is_same_v<T, char const*>) {
    return o.s ? o.s : def;
  } else if constexpr (std::is_same_v<T, Dims64>) {
    return o.d ? *o.d : def;
  } else if constexpr (std::is_floating_point_v<T>) {
    return o.f ? static_cast<T>(*o.f) : def;
  } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
    return o.i ? static_cast<T>(*o.i) : def;
  } else {
    return def;
  }
}

float gSampleFloats[4] = {0.25f, 0.5f, 0.75f, 1.0f};
Weights sampleWeights() { return Weights{DataType::kFLOAT, gSampleFloats, 4}; }

bool same(char const* a, char const* b) { return a && b ? std::strcmp(a, b) == 0 : a == b; }
bool same(const Dims64& a, const Dims64& b) {
  if (a.nbDims != b.nbDims) return false;
  for (int i = 0; i < a.nbDims && i < 8; ++i)
    if (a.d[i] != b.d[i]) return false;
  return true;
}
bool same(const Weights& a, const Weights& b) { return a.type == b.type && a.values == b.values && a.count == b.count; }
bool same(const Permutation& a, const Permutation& b) { return std::memcmp(a.order, b.order, sizeof a.order) == 0; }
template <class A, class B>
bool same(const A& a, const B& b) {
  return a == b;
}

std::string show(char const* s) { return s ? "\"" + std::string(s) + "\"" : "null"; }
std::string show(const Dims64& d) {
  std::string o = "{" + std::to_string(d.nbDims) + ", {";
  for (int i = 0; i < d.nbDims && i < 8; ++i) o += (i ? ", " : "") + std::to_string(d.d[i]);
  return o + "}}";
}
std::string show(const Weights& w) {
  std::ostringstream o;
  o << "{type " << static_cast<int>(w.type) << ", values " << w.values << ", count " << w.count << "}";
  return o.str();
}
std::string show(const Permutation& p) {
  std::string o = "{";
  for (int i = 0; i < 8; ++i) o += (i ? ", " : "") + std::to_string(p.order[i]);
  return o + "}";
}
template <class T>
std::string show(const T& v) {
  std::ostringstream o;
  if constexpr (std::is_enum_v<T>)
    o << static_cast<int64_t>(v);
  else if constexpr (std::is_same_v<T, bool>)
    o << (v ? "true" : "false");
  else
    o << +v;
  return o.str();
}

template <class A, class B>
void check(std::string_view key, bool accepted, const A& got, const B& want) {
  auto it = overrides().find(key);
  if (it != overrides().end() && it->second.nocheck) {
    const Override& o = it->second;
    std::string fixed;
    if constexpr (std::is_integral_v<A> || std::is_enum_v<A>) {
      if (o.expectI) {
        fixed = " (getter checked: " + std::to_string(*o.expectI) + ")";
        EXPECT_EQ(static_cast<int64_t>(got), *o.expectI)
            << key << ": getter does not give the fixed value" << lib().logger.take();
      }
    } else if constexpr (std::is_same_v<A, char const*>) {
      if (o.expectS) {
        fixed = " (getter checked: \"" + std::string(o.expectS) + "\")";
        EXPECT_TRUE(same(got, o.expectS)) << key << ": getter gives " << show(got) << lib().logger.take();
      }
    }
    unchecked().push_back(std::string(key) + ": " + o.nocheck + fixed);
    lib().logger.take();
    return;
  }
  if (!accepted) {
    ADD_FAILURE() << key << "(" << show(want) << ") returned false (sample rejected?)" << lib().logger.take();
    return;
  }
  if (!same(got, want))
    ADD_FAILURE() << key << ": set " << show(want) << ", got back " << show(got) << lib().logger.take();
}

template <class T>
void probed(std::string_view, const T&) {}

template <class I>
struct Tag {};
template <class I>
struct Made {
  I* obj = nullptr;
  int inputs = -1, outputs = -1;  // expected counts (-1: not checked)
  bool unavailable = false;       // no instance can be had through the spec'd build-phase API
  std::string why;
};
template <class I>
Made<I> unavailable(const char* why) {
  Made<I> m;
  m.unavailable = true;
  m.why = why;
  return m;
}
template <class I>
Made<I> made(I* obj, int inputs, int outputs) {
  Made<I> m;
  m.obj = obj;
  m.inputs = inputs;
  m.outputs = outputs;
  return m;
}

struct Ctx;
template <class W, class M>
void extra(Ctx&, W&, M&) {}  // default: nothing hand-written beyond the generated part

}  // namespace trtrace::conf

// ---- generated: wrappers, round trips, probes, tables
namespace trtrace::conf {
#include "conformance_gen.inc"
}  // namespace trtrace::conf

namespace trtrace::conf {

// One builder and one network per test; destroyed (library-owned children with them) at the end.
struct Ctx {
  TestLogger& log = lib().logger;
  IBuilder* builder = nullptr;
  INetworkDefinition* network = nullptr;
  IBuilderConfig* config = nullptr;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> storage;  // weights live until the test ends
  int counter = 0;

  Ctx() {
    builder = static_cast<IBuilder*>(lib().create(static_cast<ILogger*>(&lib().logger), kLibraryVersionInt));
    if (!builder) {
      ADD_FAILURE() << "createInferBuilder_INTERNAL returned null" << log.take();
      return;
    }
    network = b().createNetworkV2(0);
  }
  ~Ctx() {
    if (config) delete reinterpret_cast<PublicRoot*>(config);
    if (network) delete reinterpret_cast<PublicRoot*>(network);
    if (builder) delete reinterpret_cast<PublicRoot*>(builder);
  }
  CBuilder b() { return CBuilder(builder); }
  CNetworkDefinition n() { return CNetworkDefinition(network); }
  IBuilderConfig* cfg() {
    if (!config) config = b().createBuilderConfig();
    return config;
  }
  std::string name(const char* stem) { return std::string(stem) + std::to_string(counter++); }

  ITensor* input(DataType t, std::initializer_list<int64_t> dims) {
    Dims64 d{static_cast<int32_t>(dims.size()), {}};
    int i = 0;
    for (int64_t v : dims) d.d[i++] = v;
    return n().addInput(name("in").c_str(), t, d);
  }
  ITensor* x() { return input(DataType::kFLOAT, {2, 3, 4, 4}); }
  static size_t elemSize(DataType t) {
    switch (t) {
      case DataType::kINT64: return 8;
      case DataType::kHALF:
      case DataType::kBF16: return 2;
      case DataType::kINT8:
      case DataType::kUINT8:
      case DataType::kBOOL:
      case DataType::kFP8: return 1;
      default: return 4;
    }
  }
  // A constant tensor; values: all `fill` (integers for integer types).
  ITensor* constant(DataType t, std::initializer_list<int64_t> dims, double fill = 1.0) {
    Dims64 d{static_cast<int32_t>(dims.size()), {}};
    int64_t count = 1;
    int i = 0;
    for (int64_t v : dims) d.d[i++] = v, count *= v;
    Weights w = weights(t, count, fill);
    ILayer* l = reinterpret_cast<ILayer*>(n().addConstant(d, w));
    return l ? CLayer(l).getOutput(0) : nullptr;
  }
  Weights weights(DataType t, int64_t count, double fill = 1.0) {
    auto buf = std::make_unique<std::vector<uint8_t>>(static_cast<size_t>(count) * elemSize(t) + 8);
    for (int64_t k = 0; k < count; ++k) {
      uint8_t* p = buf->data() + k * elemSize(t);
      if (t == DataType::kFLOAT) {
        float v = static_cast<float>(fill);
        std::memcpy(p, &v, 4);
      } else if (t == DataType::kINT32) {
        int32_t v = static_cast<int32_t>(fill);
        std::memcpy(p, &v, 4);
      } else if (t == DataType::kINT64) {
        int64_t v = static_cast<int64_t>(fill);
        std::memcpy(p, &v, 8);
      } else if (t == DataType::kBOOL) {
        *p = fill != 0;
      } else if (t == DataType::kHALF) {
        uint16_t v = 0x3c00;  // 1.0
        std::memcpy(p, &v, 2);
      }
    }
    Weights w{t, buf->data(), count};
    storage.push_back(std::move(buf));
    return w;
  }
  template <class I>
  ILayer* layer(I* l) {
    return reinterpret_cast<ILayer*>(l);
  }
  ITensor* out(void* l, int i = 0) { return l ? CLayer(l).getOutput(i) : nullptr; }
  // The first layer of the network with this type (boundary layers have no factory of their own).
  ILayer* findLayer(LayerType t) {
    for (int i = 0, n_ = n().getNbLayers(); i < n_; ++i) {
      ILayer* l = n().getLayer(i);
      if (l && CLayer(l).getType() == t) return l;
    }
    return nullptr;
  }
};

template <class I>
void checkLayer(Ctx& ctx, CLayer l, const Made<I>& m, LayerType want) {
  LayerType got = l.getType();
  seenLayerTypes().insert(static_cast<int32_t>(got));
  EXPECT_EQ(static_cast<int>(got), static_cast<int>(want)) << "Layer.getType() through the level-0 V-pointer";
  if (m.inputs >= 0) { EXPECT_EQ(l.getNbInputs(), m.inputs) << "Layer.getNbInputs()"; }
  if (m.outputs >= 0) { EXPECT_EQ(l.getNbOutputs(), m.outputs) << "Layer.getNbOutputs()"; }
  for (int i = 0; i < l.getNbOutputs(); ++i) { EXPECT_NE(l.getOutput(i), nullptr) << "Layer.getOutput(" << i << ")"; }
  for (int i = 0; i < m.inputs; ++i) (void)l.getInput(i);
  ctx.log.take();
}
// A layer made by an alternative factory (addXV2, addScale for addScaleNd, ...): type and counts.
template <class I>
void checkAlt(Ctx& ctx, I* obj, int inputs, int outputs, const char* what) {
  ASSERT_NE(obj, nullptr) << what << " returned null" << ctx.log.take();
  checkLayer(ctx, CLayer(obj), made(obj, inputs, outputs), LayerTypeOf<I>::value);
}

// ==============================================================================================
// Recipes (hand-written): sample overrides, one make() per interface, extra() calls
// ==============================================================================================
std::map<std::string_view, Override>& overrides() {
  static std::map<std::string_view, Override> o = {
      // Values the library validates: the type-driven default is not valid for the layer.
      {"Layer.setNbRanks", I(1)},
      {"ConvolutionLayer.setNbGroups", I(1)},
      {"DeconvolutionLayer.setNbGroups", I(1)},
      {"ConvolutionLayer.setPaddingMode", I(1)},
      {"OptimizationProfile.setDimensions#inputName", S("x")},
      {"OptimizationProfile.getNbShapeValues#inputName", S("x")},
      {"OptimizationProfile.setDimensions#select", I(0)},
      {"OptimizationProfile.setExtraMemoryTarget", F(0.5)},
      {"TopKLayer.setIndicesType", I(8)},  // kINT64: only index types
      {"NonZeroLayer.setIndicesType", I(8)},
      {"NMSLayer.setIndicesType", I(8)},
      {"Attention.setNormalizationQuantizeToType", I(6)},  // kFP8 or kINT8 only
      {"QuantizeLayer.setToType", I(6)},                   // kFP8 (made as kINT8)
      {"DynamicQuantizeLayer.setBlockSize", I(32)},        // 16 or 32
      {"DynamicQuantizeLayer.setScaleType", I(6)},         // kFP8 only
      {"DynamicQuantizeLayer.setToType", I(6)},            // kFP4 or kFP8 (made as kFP4)
      {"EinsumLayer.setEquation", S("ab,bc->ac")},
      {"GridSampleLayer.setSampleMode", I(4)},                              // kCLAMP, kFILL or kREFLECT
      {"MoELayer.setQuantizationBlockShape", D(Dims64{4, {1, 1, 1, 32}})},  // rank 4
      {"BuilderConfig.setFlags", I(1 << 5)},                                // kDISABLE_TIMING_CACHE
      {"BuilderConfig.setMemoryPoolLimit#pool", I(0)},                      // kWORKSPACE (DLA pools: no DLA)
      {"BuilderConfig.getMemoryPoolLimit#pool", I(0)},
      {"BuilderConfig.setComputeCapability", I(80)},  // kSM80 (kCURRENT needs exactly one)
      {"BuilderConfig.setRuntimePlatform", I(0)},     // Linux builds: kSAME_AS_BUILD only
      {"BuilderConfig.setBuildRoute",
       FixedS("", "getAllBuildRoutes() is empty on this machine: every route is rejected")},
      {"BuilderConfig.setDLACore", Fixed(-1, "no DLA: getDLACore() stays -1")},
      {"BuilderConfig.setHardwareCompatibilityLevel",
       Fixed(0, "unsupported in TensorRT-RTX: the library warns 'setHardwareCompatibilityLevel() is unsupported'")},
  };
  return o;
}

// ---- objects of the build API
Made<IBuilder> make(Ctx& c, Tag<IBuilder>) { return made(c.builder, -1, -1); }
Made<INetworkDefinition> make(Ctx& c, Tag<INetworkDefinition>) {
  c.x();  // one input so that index-0 queries have something to return
  return made(c.network, -1, -1);
}
Made<IBuilderConfig> make(Ctx& c, Tag<IBuilderConfig>) { return made(c.cfg(), -1, -1); }
Made<IOptimizationProfile> make(Ctx& c, Tag<IOptimizationProfile>) {
  return made(c.b().createOptimizationProfile(), -1, -1);
}
Made<ITensor> make(Ctx& c, Tag<ITensor>) { return made(c.x(), -1, -1); }
Made<IPluginRegistry> make(Ctx& c, Tag<IPluginRegistry>) { return made(&c.b().getPluginRegistry(), -1, -1); }
Made<ILayer> make(Ctx& c, Tag<ILayer>) { return made(c.layer(c.n().addIdentity(*c.x())), 1, 1); }

// A small network the CPU-only AOT build accepts: input -> relu -> output.
Made<IHostMemory> make(Ctx& c, Tag<IHostMemory>) {
  ITensor* in = c.x();
  ITensor* o = c.out(c.n().addActivation(*in, ActivationType::kRELU));
  if (!o) return {};
  c.n().markOutput(*o);
  IHostMemory* h = c.b().buildSerializedNetwork(*c.network, *c.cfg());
  Made<IHostMemory> m = made(h, -1, -1);
  if (!h) m.why = "buildSerializedNetwork failed" + c.log.take();
  return m;
}
Made<ISerializationConfig> make(Ctx&, Tag<ISerializationConfig>) {
  return unavailable<ISerializationConfig>("only ICudaEngine::createSerializationConfig (runtime phase) makes one");
}
Made<ITimingCache> make(Ctx&, Tag<ITimingCache>) {
  return unavailable<ITimingCache>("only BuilderConfig.createTimingCache (!unsupported) makes one");
}
Made<IPluginLayer> make(Ctx&, Tag<IPluginLayer>) {
  return unavailable<IPluginLayer>("no public class in RTX 1.6 and no factory in the spec");
}
Made<IPluginV2Layer> make(Ctx&, Tag<IPluginV2Layer>) {
  return unavailable<IPluginV2Layer>("addPluginV2 is not in the RTX 1.6 build-phase vtable");
}
Made<IPluginV3Layer> make(Ctx&, Tag<IPluginV3Layer>) {
  return unavailable<IPluginV3Layer>("addPluginV3 is only reachable through getPrivateApi_INTERNAL");
}

// ---- layers
#define CONF_LAYER(Name, nin, nout, ...) \
  Made<I##Name> make(Ctx& c, Tag<I##Name>) { return made(static_cast<I##Name*>(__VA_ARGS__), nin, nout); }

CONF_LAYER(ActivationLayer, 1, 1, c.n().addActivation(*c.x(), ActivationType::kRELU))
CONF_LAYER(LRNLayer, 1, 1, c.n().addLRN(*c.x(), 3, 1e-4f, 0.75f, 1.0f))
CONF_LAYER(ScaleLayer, 1, 1,
           c.n().addScaleNd(*c.x(), ScaleMode::kUNIFORM, c.weights(DataType::kFLOAT, 1), c.weights(DataType::kFLOAT, 1),
                            c.weights(DataType::kFLOAT, 1), 1))
CONF_LAYER(SoftMaxLayer, 1, 1, c.n().addSoftMax(*c.x()))
Made<IConcatenationLayer> make(Ctx& c, Tag<IConcatenationLayer>) {
  ITensor* in[2] = {c.x(), c.x()};
  return made(c.n().addConcatenation(in, 2), 2, 1);
}
CONF_LAYER(ElementWiseLayer, 2, 1, c.n().addElementWise(*c.x(), *c.x(), ElementWiseOperation::kSUM))
CONF_LAYER(UnaryLayer, 1, 1, c.n().addUnary(*c.x(), UnaryOperation::kEXP))
CONF_LAYER(ShuffleLayer, 1, 1, c.n().addShuffle(*c.x()))
CONF_LAYER(ReduceLayer, 1, 1, c.n().addReduce(*c.x(), ReduceOperation::kSUM, 2u, true))
CONF_LAYER(TopKLayer, 1, 2, c.n().addTopK(*c.x(), TopKOperation::kMAX, 2, 8u))
CONF_LAYER(GatherLayer, 2, 1, c.n().addGather(*c.x(), *c.input(DataType::kINT32, {2}), 1))
CONF_LAYER(RaggedSoftMaxLayer, 2, 1,
           c.n().addRaggedSoftMax(*c.input(DataType::kFLOAT, {1, 3, 5}), *c.input(DataType::kINT32, {1, 3, 1})))
CONF_LAYER(MatrixMultiplyLayer, 2, 1,
           c.n().addMatrixMultiply(*c.input(DataType::kFLOAT, {2, 3}), MatrixOperation::kNONE,
                                   *c.input(DataType::kFLOAT, {3, 4}), MatrixOperation::kNONE))
CONF_LAYER(ConstantLayer, 0, 1, c.n().addConstant(Dims64{1, {4}}, c.weights(DataType::kFLOAT, 4)))
CONF_LAYER(IdentityLayer, 1, 1, c.n().addIdentity(*c.x()))
CONF_LAYER(SliceLayer, 1, 1,
           c.n().addSlice(*c.x(), Dims64{4, {0, 0, 0, 0}}, Dims64{4, {1, 1, 2, 2}}, Dims64{4, {1, 1, 1, 1}}))
CONF_LAYER(ShapeLayer, 1, 1, c.n().addShape(*c.x()))
CONF_LAYER(ParametricReLULayer, 2, 1, c.n().addParametricReLU(*c.x(), *c.input(DataType::kFLOAT, {1, 3, 1, 1})))
CONF_LAYER(ConvolutionLayer, 1, 1,
           c.n().addConvolutionNd(*c.x(), 4, Dims64{2, {3, 3}}, c.weights(DataType::kFLOAT, 4 * 3 * 9),
                                  c.weights(DataType::kFLOAT, 4)))
CONF_LAYER(DeconvolutionLayer, 1, 1,
           c.n().addDeconvolutionNd(*c.x(), 4, Dims64{2, {3, 3}}, c.weights(DataType::kFLOAT, 4 * 3 * 9),
                                    c.weights(DataType::kFLOAT, 4)))
CONF_LAYER(PoolingLayer, 1, 1, c.n().addPoolingNd(*c.x(), PoolingType::kMAX, Dims64{2, {2, 2}}))
CONF_LAYER(ResizeLayer, 1, 1, c.n().addResize(*c.x()))
CONF_LAYER(SelectLayer, 3, 1, c.n().addSelect(*c.input(DataType::kBOOL, {2, 3, 4, 4}), *c.x(), *c.x()))
CONF_LAYER(PaddingLayer, 1, 1, c.n().addPaddingNd(*c.x(), Dims64{2, {1, 1}}, Dims64{2, {1, 1}}))
CONF_LAYER(ScatterLayer, 3, 1,
           c.n().addScatter(*c.input(DataType::kFLOAT, {4, 4}), *c.input(DataType::kINT32, {4, 4}),
                            *c.input(DataType::kFLOAT, {4, 4}), ScatterMode::kELEMENT))
Made<IEinsumLayer> make(Ctx& c, Tag<IEinsumLayer>) {
  ITensor* in[2] = {c.input(DataType::kFLOAT, {2, 3}), c.input(DataType::kFLOAT, {3, 4})};
  return made(c.n().addEinsum(in, 2, "ij,jk->ik"), 2, 1);
}
CONF_LAYER(AssertionLayer, 1, 0, c.n().addAssertion(*c.input(DataType::kBOOL, {2}), "conformance"))
CONF_LAYER(OneHotLayer, 3, 1,
           c.n().addOneHot(*c.input(DataType::kINT32, {3}), *c.input(DataType::kFLOAT, {2}),
                           *c.constant(DataType::kINT32, {}, 4), -1))
CONF_LAYER(NonZeroLayer, 1, 1, c.n().addNonZero(*c.x()))
CONF_LAYER(GridSampleLayer, 2, 1,
           c.n().addGridSample(*c.input(DataType::kFLOAT, {1, 1, 4, 4}), *c.input(DataType::kFLOAT, {1, 4, 4, 2})))
CONF_LAYER(NMSLayer, 3, 2,
           c.n().addNMS(*c.input(DataType::kFLOAT, {1, 10, 4}), *c.input(DataType::kFLOAT, {1, 10, 2}),
                        *c.constant(DataType::kINT32, {}, 5)))
CONF_LAYER(ReverseSequenceLayer, 2, 1,
           c.n().addReverseSequence(*c.input(DataType::kFLOAT, {4, 2, 3}), *c.input(DataType::kINT32, {2})))
CONF_LAYER(NormalizationLayer, 3, 1,
           c.n().addNormalization(*c.x(), *c.input(DataType::kFLOAT, {1, 3, 1, 1}),
                                  *c.input(DataType::kFLOAT, {1, 3, 1, 1}), 0b1100u))
CONF_LAYER(CastLayer, 1, 1, c.n().addCast(*c.x(), DataType::kHALF))
CONF_LAYER(QuantizeLayer, 2, 1, c.n().addQuantizeV2(*c.x(), *c.constant(DataType::kFLOAT, {}), DataType::kINT8))
CONF_LAYER(DequantizeLayer, 2, 1,
           c.n().addDequantizeV2(*c.input(DataType::kINT8, {2, 3}), *c.constant(DataType::kFLOAT, {}),
                                 DataType::kFLOAT))
CONF_LAYER(FillLayer, 0, 1, c.n().addFillV2(Dims64{1, {4}}, FillOperation::kLINSPACE, DataType::kFLOAT))
CONF_LAYER(SqueezeLayer, 2, 1,
           c.n().addSqueeze(*c.input(DataType::kFLOAT, {2, 1, 4}), *c.constant(DataType::kINT64, {1}, 1)))
CONF_LAYER(UnsqueezeLayer, 2, 1, c.n().addUnsqueeze(*c.x(), *c.constant(DataType::kINT64, {1}, 0)))
CONF_LAYER(DynamicQuantizeLayer, 1, 2,
           c.n().addDynamicQuantize(*c.input(DataType::kHALF, {2, 32}), 1, 16, DataType::kFP4, DataType::kFP8))
CONF_LAYER(CumulativeLayer, 2, 1,
           c.n().addCumulative(*c.x(), *c.constant(DataType::kINT32, {}, 1), CumulativeOperation::kSUM, false, false))
CONF_LAYER(RotaryEmbeddingLayer, 3, 1,
           c.n().addRotaryEmbedding(*c.input(DataType::kHALF, {1, 2, 8, 16}), *c.input(DataType::kHALF, {8, 8}),
                                    *c.input(DataType::kHALF, {8, 8}), false, 0))
CONF_LAYER(KVCacheUpdateLayer, 3, 1,
           c.n().addKVCacheUpdate(*c.input(DataType::kHALF, {1, 2, 32, 16}), *c.input(DataType::kHALF, {1, 2, 8, 16}),
                                  *c.input(DataType::kINT32, {1}), KVCacheMode::kLINEAR))
CONF_LAYER(MoELayer, 3, 1,
           c.n().addMoE(*c.input(DataType::kHALF, {1, 4, 16}), *c.input(DataType::kINT32, {1, 4, 2}),
                        *c.input(DataType::kHALF, {1, 4, 2})))
CONF_LAYER(DistCollectiveLayer, 1, 1,
           c.n().addDistCollective(*c.x(), CollectiveOperation::kALL_REDUCE, ReduceOperation::kSUM, -1, nullptr, 0))
#undef CONF_LAYER

// ---- loops: one complete loop; each part's recipe returns its part
struct LoopParts {
  ILoop* loop = nullptr;
  IRecurrenceLayer* rec = nullptr;
  ITripLimitLayer* trip = nullptr;
  IIteratorLayer* iter = nullptr;
  ILoopOutputLayer* out = nullptr;
};
LoopParts buildLoop(Ctx& c) {
  LoopParts p;
  p.loop = c.n().addLoop();
  if (!p.loop) return p;
  CLoop loop(p.loop);
  p.trip = loop.addTripLimit(*c.constant(DataType::kINT32, {}, 3), TripLimit::kCOUNT);
  ITensor* seq = c.input(DataType::kFLOAT, {3, 4});
  p.iter = loop.addIterator(*seq, 0, false);
  p.rec = loop.addRecurrence(*c.input(DataType::kFLOAT, {4}));
  ITensor* sum = c.out(c.n().addElementWise(*c.out(p.rec), *c.out(p.iter), ElementWiseOperation::kSUM));
  CLayer(p.rec).setInput(1, *sum);
  p.out = loop.addLoopOutput(*c.out(p.rec), LoopOutput::kLAST_VALUE, 0);
  return p;
}
Made<ILoop> make(Ctx& c, Tag<ILoop>) { return made(buildLoop(c).loop, -1, -1); }
Made<ILoopBoundaryLayer> make(Ctx& c, Tag<ILoopBoundaryLayer>) {
  return made(reinterpret_cast<ILoopBoundaryLayer*>(buildLoop(c).rec), 2, 1);
}
Made<IRecurrenceLayer> make(Ctx& c, Tag<IRecurrenceLayer>) { return made(buildLoop(c).rec, 2, 1); }
Made<ITripLimitLayer> make(Ctx& c, Tag<ITripLimitLayer>) { return made(buildLoop(c).trip, 1, 0); }
Made<IIteratorLayer> make(Ctx& c, Tag<IIteratorLayer>) { return made(buildLoop(c).iter, 1, 1); }
Made<ILoopOutputLayer> make(Ctx& c, Tag<ILoopOutputLayer>) { return made(buildLoop(c).out, 1, 1); }

// ---- if-conditionals
struct CondParts {
  IIfConditional* cond = nullptr;
  IConditionLayer* condition = nullptr;
  IIfConditionalInputLayer* input = nullptr;
  IIfConditionalOutputLayer* output = nullptr;
};
CondParts buildConditional(Ctx& c) {
  CondParts p;
  p.cond = c.n().addIfConditional();
  if (!p.cond) return p;
  CIfConditional ic(p.cond);
  p.condition = ic.setCondition(*c.input(DataType::kBOOL, {}));
  p.input = ic.addInput(*c.x());
  ITensor* in = c.out(p.input);
  ITensor* t = c.out(c.n().addActivation(*in, ActivationType::kRELU));
  ITensor* f = c.out(c.n().addUnary(*in, UnaryOperation::kABS));
  p.output = ic.addOutput(*t, *f);
  return p;
}
Made<IIfConditional> make(Ctx& c, Tag<IIfConditional>) { return made(buildConditional(c).cond, -1, -1); }
Made<IIfConditionalBoundaryLayer> make(Ctx& c, Tag<IIfConditionalBoundaryLayer>) {
  return made(reinterpret_cast<IIfConditionalBoundaryLayer*>(buildConditional(c).input), 1, 1);
}
Made<IConditionLayer> make(Ctx& c, Tag<IConditionLayer>) { return made(buildConditional(c).condition, 1, 0); }
Made<IIfConditionalInputLayer> make(Ctx& c, Tag<IIfConditionalInputLayer>) {
  return made(buildConditional(c).input, 1, 1);
}
Made<IIfConditionalOutputLayer> make(Ctx& c, Tag<IIfConditionalOutputLayer>) {
  return made(buildConditional(c).output, 2, 1);
}

// ---- attention
IAttention* buildAttention(Ctx& c) {
  return c.n().addAttention(*c.input(DataType::kHALF, {1, 2, 8, 16}), *c.input(DataType::kHALF, {1, 2, 8, 16}),
                            *c.input(DataType::kHALF, {1, 2, 8, 16}), AttentionNormalizationOp::kSOFTMAX, false);
}
Made<IAttention> make(Ctx& c, Tag<IAttention>) { return made(buildAttention(c), -1, -1); }
template <class I>
Made<I> attentionPart(Ctx& c, LayerType t) {
  if (!buildAttention(c)) return {};
  return made(reinterpret_cast<I*>(c.findLayer(t)), -1, -1);
}
Made<IAttentionBoundaryLayer> make(Ctx& c, Tag<IAttentionBoundaryLayer>) {
  return attentionPart<IAttentionBoundaryLayer>(c, LayerType::kATTENTION_INPUT);
}
Made<IAttentionInputLayer> make(Ctx& c, Tag<IAttentionInputLayer>) {
  return attentionPart<IAttentionInputLayer>(c, LayerType::kATTENTION_INPUT);
}
Made<IAttentionOutputLayer> make(Ctx& c, Tag<IAttentionOutputLayer>) {
  return attentionPart<IAttentionOutputLayer>(c, LayerType::kATTENTION_OUTPUT);
}

// ---- extra(): calls needing real objects as arguments, alternative factories, checked results
#define CONF_EXTRA(Name) void extra(Ctx& c, C##Name& w, Made<I##Name>& m)

CONF_EXTRA(Builder) {
  CBuilder b = w;
  b.setErrorRecorder(nullptr);
  EXPECT_EQ(b.getErrorRecorder(), nullptr);
  EXPECT_EQ(b.getLogger(), static_cast<ILogger*>(&lib().logger)) << "Builder.getLogger() is the creation logger";
  ITensor* in = c.x();
  c.n().markOutput(*c.out(c.n().addActivation(*in, ActivationType::kRELU)));
  (void)b.isNetworkSupported(*c.network, *c.cfg());
  b.reset();
  c.log.take();
}

// A wrapped abstract interface (30-interfaces.api): slots are checked through the object's own vtable.
CONF_EXTRA(PluginRegistry) {
  (void)m;
  using RegistryFn = IPluginRegistry* (*)();
  auto process = reinterpret_cast<RegistryFn>(dlsym(lib().handle, "getPluginRegistry"));
  ASSERT_NE(process, nullptr);
  EXPECT_NE(&c.b().getPluginRegistry(), process()) << "a builder's registry is its own, not getPluginRegistry()";
  int32_t all = -1, recursive = -1;
  auto list = w.getAllCreators(&all);
  auto rlist = w.getAllCreatorsRecursive(&recursive);
  EXPECT_GE(all, 0) << "PluginRegistry.getAllCreators writes the count";
  EXPECT_GE(recursive, all) << "PluginRegistry.getAllCreatorsRecursive includes the registry's own creators";
  EXPECT_TRUE(all == 0 || list != nullptr);
  EXPECT_TRUE(recursive == 0 || rlist != nullptr);
  EXPECT_EQ(w.getCreator("trtrace_no_such_plugin", "1", ""), nullptr) << "PluginRegistry.getCreator";
  w.setErrorRecorder(nullptr);
  EXPECT_EQ(w.getErrorRecorder(), nullptr) << "PluginRegistry.setErrorRecorder / getErrorRecorder";
  c.log.take();
}

CONF_EXTRA(NetworkDefinition) {
  CNetworkDefinition n = w;
  EXPECT_EQ(n.getNbInputs(), 1);
  EXPECT_TRUE(CTensor(n.getInput(0)).isNetworkInput());
  EXPECT_EQ(&n.getBuilder(), c.builder) << "NetworkDefinition.getBuilder()";
  EXPECT_FALSE(n.hasImplicitBatchDimension());
  // 35-public-virtuals.api: INetworkDefinition's public vtable has getBuilder in slot 2 (after the destructor pair).
  auto* pubVtbl = *reinterpret_cast<void* const* const*>(c.network);
  EXPECT_EQ(reinterpret_cast<void* (*)(const void*)>(pubVtbl[2])(c.network), c.builder)
      << "public INetworkDefinition vtable slot 2 (getBuilder)";
  n.setErrorRecorder(nullptr);
  EXPECT_EQ(n.getErrorRecorder(), nullptr);
  // outputs
  ITensor* a = c.out(n.addIdentity(*n.getInput(0)));
  n.markOutput(*a);
  EXPECT_EQ(n.getNbOutputs(), 1);
  EXPECT_EQ(n.getOutput(0), a);
  n.unmarkOutput(*a);
  EXPECT_EQ(n.getNbOutputs(), 0) << "NetworkDefinition.unmarkOutput";
  ITensor* shape = c.out(n.addShape(*n.getInput(0)));
  EXPECT_TRUE(n.markOutputForShapes(*shape)) << c.log.take();
  EXPECT_TRUE(n.unmarkOutputForShapes(*shape)) << c.log.take();
  // debug tensors
  EXPECT_TRUE(n.markDebug(*a)) << c.log.take();
  EXPECT_TRUE(n.isDebugTensor(*a));
  EXPECT_TRUE(n.unmarkDebug(*a));
  EXPECT_FALSE(n.isDebugTensor(*a));
  EXPECT_TRUE(n.markUnfusedTensorsAsDebugTensors()) << c.log.take();
  EXPECT_TRUE(n.unmarkUnfusedTensorsAsDebugTensors()) << c.log.take();
  // weights names and refit marks
  Weights wt = c.weights(DataType::kFLOAT, 4);
  n.addConstant(Dims64{1, {4}}, wt);
  EXPECT_TRUE(n.setWeightsName(wt, "conformance_w")) << c.log.take();
  (void)n.markWeightsRefittable("conformance_w");
  (void)n.areWeightsMarkedRefittable("conformance_w");
  (void)n.unmarkWeightsRefittable("conformance_w");
  // removeTensor: an unused input disappears from the inputs
  ITensor* extraIn = c.input(DataType::kFLOAT, {2});
  EXPECT_EQ(n.getNbInputs(), 2);
  n.removeTensor(*extraIn);
  EXPECT_EQ(n.getNbInputs(), 1) << "NetworkDefinition.removeTensor";
  c.log.take();
}

CONF_EXTRA(BuilderConfig) {
  CBuilderConfig k = w;
  // 35-public-virtuals.api: IBuilderConfig's public vtable has setAvgTimingIterations in slot 2.
  auto* pubVtbl = *reinterpret_cast<void* const* const*>(m.obj);
  reinterpret_cast<void (*)(void*, int32_t)>(pubVtbl[2])(m.obj, 7);
  EXPECT_EQ(k.getAvgTimingIterations(), 7) << "public IBuilderConfig vtable slot 2 (setAvgTimingIterations)";
  k.setFlag(BuilderFlag::kREFIT);
  EXPECT_TRUE(k.getFlag(BuilderFlag::kREFIT)) << "BuilderConfig.setFlag/getFlag";
  k.clearFlag(BuilderFlag::kREFIT);
  EXPECT_FALSE(k.getFlag(BuilderFlag::kREFIT)) << "BuilderConfig.clearFlag";
  ILayer* l = c.layer(c.n().addActivation(*c.x(), ActivationType::kRELU));
  k.setDeviceType(l, DeviceType::kGPU);
  EXPECT_TRUE(k.isDeviceTypeSet(l));
  EXPECT_EQ(k.getDeviceType(l), DeviceType::kGPU);
  k.resetDeviceType(l);
  EXPECT_FALSE(k.isDeviceTypeSet(l)) << "BuilderConfig.resetDeviceType";
  EXPECT_FALSE(k.canRunOnDLA(l));
  // an optimization profile for a dynamic input
  c.input(DataType::kFLOAT, {-1, 3});
  const char* dyn = CTensor(c.n().getInput(c.n().getNbInputs() - 1)).getName();
  IOptimizationProfile* p = c.b().createOptimizationProfile();
  COptimizationProfile prof(p);
  EXPECT_TRUE(prof.setDimensions(dyn, OptProfileSelector::kMIN, Dims64{2, {1, 3}}));
  EXPECT_TRUE(prof.setDimensions(dyn, OptProfileSelector::kOPT, Dims64{2, {2, 3}}));
  EXPECT_TRUE(prof.setDimensions(dyn, OptProfileSelector::kMAX, Dims64{2, {4, 3}}));
  EXPECT_TRUE(prof.isValid());
  int before = k.getNbOptimizationProfiles();
  EXPECT_EQ(k.addOptimizationProfile(p), before) << c.log.take();
  EXPECT_EQ(k.getNbOptimizationProfiles(), before + 1);
  const char* plugins[] = {"libconformance_plugin.so"};
  k.setPluginsToSerialize(plugins, 1);
  EXPECT_EQ(k.getNbPluginsToSerialize(), 1);
  EXPECT_TRUE(same(k.getPluginToSerialize(0), plugins[0])) << "BuilderConfig.getPluginToSerialize";
  k.setProgressMonitor(nullptr);
  EXPECT_EQ(k.getProgressMonitor(), nullptr);
  k.reset();
  EXPECT_EQ(k.getNbOptimizationProfiles(), 0) << "BuilderConfig.reset";
  c.log.take();
}

CONF_EXTRA(OptimizationProfile) {
  int64_t mn[2] = {1, 2}, opt[2] = {2, 3}, mx[2] = {4, 5};
  EXPECT_TRUE(w.setShapeValuesV2("shape_in", OptProfileSelector::kMIN, mn, 2)) << c.log.take();
  EXPECT_TRUE(w.setShapeValuesV2("shape_in", OptProfileSelector::kOPT, opt, 2)) << c.log.take();
  EXPECT_TRUE(w.setShapeValuesV2("shape_in", OptProfileSelector::kMAX, mx, 2)) << c.log.take();
  EXPECT_EQ(w.getNbShapeValues("shape_in"), 2);
  const int64_t* got = w.getShapeValuesV2("shape_in", OptProfileSelector::kOPT);
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(got[0], 2);
  EXPECT_EQ(got[1], 3);
  c.log.take();
}

CONF_EXTRA(HostMemory) {
  EXPECT_GT(w.size(), 0u) << "HostMemory.size()";
  EXPECT_NE(w.data(), nullptr) << "HostMemory.data()";
  EXPECT_EQ(w.type(), DataType::kINT8) << "HostMemory.type() (the Python bindings say INT8 too)";
  delete reinterpret_cast<PublicRoot*>(m.obj);
}

CONF_EXTRA(Tensor) {
  EXPECT_TRUE(w.isNetworkInput());
  EXPECT_FALSE(w.isNetworkOutput());
  EXPECT_EQ(w.getType(), DataType::kFLOAT);
  EXPECT_FALSE(w.isShapeTensor());
  EXPECT_FALSE(w.isExecutionTensor()) << "an input nothing consumes";
  c.n().markOutput(*c.out(c.n().addActivation(*m.obj, ActivationType::kRELU)));
  EXPECT_TRUE(w.isExecutionTensor()) << "an input that reaches an output";
}

CONF_EXTRA(Layer) {
  ITensor* other = c.x();
  w.setInput(0, *other);
  EXPECT_EQ(w.getInput(0), other) << "Layer.setInput/getInput";
  EXPECT_EQ(w.getOutputType(0), DataType::kFLOAT);
}

CONF_EXTRA(ScaleLayer) {
  checkAlt(c,
           c.n().addScale(*c.x(), ScaleMode::kUNIFORM, c.weights(DataType::kFLOAT, 1), c.weights(DataType::kFLOAT, 1),
                          c.weights(DataType::kFLOAT, 1)),
           1, 1, "addScale");
}
CONF_EXTRA(GatherLayer) {
  checkAlt(c, c.n().addGatherV2(*c.x(), *c.input(DataType::kINT32, {2}), GatherMode::kDEFAULT), 2, 1, "addGatherV2");
}
CONF_EXTRA(TopKLayer) {
  ITopKLayer* l = c.n().addTopKV2(*c.x(), TopKOperation::kMIN, 2, 8u, DataType::kINT64);
  checkAlt(c, l, 1, 2, "addTopKV2");
  if (l) { EXPECT_EQ(CTopKLayer(l).getIndicesType(), DataType::kINT64); }
}
CONF_EXTRA(NonZeroLayer) {
  INonZeroLayer* l = c.n().addNonZeroV2(*c.x(), DataType::kINT64);
  checkAlt(c, l, 1, 1, "addNonZeroV2");
  if (l) { EXPECT_EQ(CNonZeroLayer(l).getIndicesType(), DataType::kINT64); }
}
CONF_EXTRA(NMSLayer) {
  INMSLayer* l = c.n().addNMSV2(*c.input(DataType::kFLOAT, {1, 10, 4}), *c.input(DataType::kFLOAT, {1, 10, 2}),
                                *c.constant(DataType::kINT32, {}, 5), DataType::kINT64);
  checkAlt(c, l, 3, 2, "addNMSV2");
  if (l) { EXPECT_EQ(CNMSLayer(l).getIndicesType(), DataType::kINT64); }
}
CONF_EXTRA(DynamicQuantizeLayer) {
  IDynamicQuantizeLayer* l = c.n().addDynamicQuantizeV2(*c.input(DataType::kHALF, {2, 32}), Dims64{2, {1, 16}},
                                                        DataType::kFP4, DataType::kFP8);
  checkAlt(c, l, 1, 2, "addDynamicQuantizeV2");
  if (l) { EXPECT_TRUE(same(CDynamicQuantizeLayer(l).getBlockShape(), Dims64{2, {1, 16}})); }
}
CONF_EXTRA(NormalizationLayer) {
  INormalizationLayer* l = c.n().addNormalizationV2(*c.x(), *c.input(DataType::kFLOAT, {1, 3, 1, 1}),
                                                    *c.input(DataType::kFLOAT, {1, 3, 1, 1}), 0b1100u);
  checkAlt(c, l, 3, 1, "addNormalizationV2");
  if (l) { EXPECT_TRUE(CNormalizationLayer(l).isV2()) << "NormalizationLayer.isV2() after addNormalizationV2"; }
  EXPECT_FALSE(w.isV2()) << "NormalizationLayer.isV2() after addNormalization";
}

CONF_EXTRA(ResizeLayer) {
  float scales[4] = {1.f, 1.f, 2.f, 2.f};
  w.setScales(scales, 4);
  EXPECT_EQ(w.getScales(0, nullptr), 4) << "ResizeLayer.getScales(0, null) gives the count" << c.log.take();
  float got[4] = {};
  EXPECT_EQ(w.getScales(4, got), 4);
  EXPECT_EQ(std::memcmp(got, scales, sizeof got), 0) << "ResizeLayer.setScales/getScales";
}

CONF_EXTRA(RotaryEmbeddingLayer) {
  ITensor* t = c.input(DataType::kHALF, {1, 2, 8, 16});
  w.setInput(0, *t);
  EXPECT_EQ(CLayer(m.obj).getInput(0), t) << "RotaryEmbeddingLayer.setInput";
}

CONF_EXTRA(KVCacheUpdateLayer) {
  ITensor* lens = c.input(DataType::kINT32, {1});
  (void)w.setUpdateLengths(lens);
  EXPECT_EQ(w.getUpdateLengths(), lens) << "KVCacheUpdateLayer.setUpdateLengths" << c.log.take();
}

CONF_EXTRA(MoELayer) {
  ITensor* g = c.input(DataType::kHALF, {2, 16, 32});
  ITensor* u = c.input(DataType::kHALF, {2, 16, 32});
  ITensor* d = c.input(DataType::kHALF, {2, 32, 16});
  w.setGatedWeights(*g, *u, *d, MoEActType::kSILU);
  EXPECT_EQ(w.getActivationType(), MoEActType::kSILU) << "MoELayer.setGatedWeights' activation" << c.log.take();
  w.setGatedBiases(*c.input(DataType::kHALF, {2, 32}), *c.input(DataType::kHALF, {2, 32}),
                   *c.input(DataType::kHALF, {2, 16}));
  w.setQuantizationStatic(*c.input(DataType::kFLOAT, {}), DataType::kFP8);
  // RTX 1.6 rejects it ("IMoELayer::setQuantizationDynamicDblQ: not supported yet"): the call is checked by that
  // message naming the method (a wrong slot would name another method or crash).
  w.setQuantizationDynamicDblQ(*c.input(DataType::kFLOAT, {}), DataType::kFP4, Dims64{4, {1, 1, 1, 16}},
                               DataType::kFP8);
  EXPECT_NE(c.log.take().find("setQuantizationDynamicDblQ"), std::string::npos)
      << "MoELayer.setQuantizationDynamicDblQ";
  w.setSwigluParams(7.f, 1.5f, 0.25f);
  EXPECT_EQ(w.getSwigluParamLimit(), 7.f) << "MoELayer.setSwigluParams" << c.log.take();
  EXPECT_EQ(w.getSwigluParamAlpha(), 1.5f);
  EXPECT_EQ(w.getSwigluParamBeta(), 0.25f);
  ITensor* h = c.input(DataType::kHALF, {1, 4, 16});
  w.setInput(0, *h);
  EXPECT_EQ(CLayer(m.obj).getInput(0), h) << "MoELayer.setInput" << c.log.take();
  c.log.take();
}

CONF_EXTRA(Attention) {
  EXPECT_EQ(w.getNbInputs(), 3);
  EXPECT_EQ(w.getNbOutputs(), 1);
  ITensor* q = c.input(DataType::kHALF, {1, 2, 8, 16});
  EXPECT_TRUE(w.setInput(0, *q)) << c.log.take();
  EXPECT_EQ(w.getInput(0), q) << "Attention.setInput/getInput";
  EXPECT_TRUE(w.setCausalKind(CausalMaskKind::kNONE));  // a mask needs kNONE (the round trips set another)
  ITensor* mask = c.input(DataType::kBOOL, {1, 2, 8, 8});
  EXPECT_TRUE(w.setMask(*mask)) << c.log.take();
  EXPECT_EQ(w.getMask(), mask) << "Attention.setMask/getMask";
  ITensor* scale = c.constant(DataType::kFLOAT, {});
  EXPECT_TRUE(w.setNormalizationQuantizeScale(*scale)) << c.log.take();
  EXPECT_EQ(w.getNormalizationQuantizeScale(), scale);
  ITensor* ql = c.input(DataType::kINT32, {1});
  (void)w.setQueryLengths(ql);
  EXPECT_EQ(w.getQueryLengths(), ql) << "Attention.setQueryLengths" << c.log.take();
  ITensor* kvl = c.input(DataType::kINT32, {1});
  (void)w.setKeyValueLengths(kvl);
  EXPECT_EQ(w.getKeyValueLengths(), kvl) << "Attention.setKeyValueLengths" << c.log.take();
  IAttention* a2 = c.n().addAttentionV2(
      *c.input(DataType::kHALF, {1, 2, 8, 16}), *c.input(DataType::kHALF, {1, 2, 8, 16}),
      *c.input(DataType::kHALF, {1, 2, 8, 16}), AttentionNormalizationOp::kSOFTMAX, CausalMaskKind::kLOWER_RIGHT);
  ASSERT_NE(a2, nullptr) << "addAttentionV2" << c.log.take();
  EXPECT_EQ(CAttention(a2).getCausalKind(), CausalMaskKind::kLOWER_RIGHT) << "addAttentionV2's causal kind";
  c.log.take();
}

// Boundary layers lead back to their construct.
CONF_EXTRA(LoopBoundaryLayer) { EXPECT_NE(w.getLoop(), nullptr); }
CONF_EXTRA(RecurrenceLayer) { EXPECT_NE(w.getLoop(), nullptr); }
CONF_EXTRA(TripLimitLayer) { EXPECT_EQ(w.getTripLimit(), TripLimit::kCOUNT); }
CONF_EXTRA(LoopOutputLayer) { EXPECT_EQ(w.getLoopOutput(), LoopOutput::kLAST_VALUE); }
CONF_EXTRA(IfConditionalBoundaryLayer) { EXPECT_NE(w.getConditional(), nullptr); }
CONF_EXTRA(AttentionBoundaryLayer) { EXPECT_NE(w.getAttention(), nullptr); }
CONF_EXTRA(Loop) {
  ILayer* rec = c.findLayer(LayerType::kRECURRENCE);
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(CLoopBoundaryLayer(rec).getLoop(), m.obj) << "LoopBoundaryLayer.getLoop() is the loop";
}
CONF_EXTRA(IfConditional) {
  ILayer* in = c.findLayer(LayerType::kCONDITIONAL_INPUT);
  ASSERT_NE(in, nullptr);
  EXPECT_EQ(CIfConditionalBoundaryLayer(in).getConditional(), m.obj) << "getConditional() is the conditional";
}
CONF_EXTRA(AttentionInputLayer) { EXPECT_NE(CAttentionBoundaryLayer(m.obj).getAttention(), nullptr); }
#undef CONF_EXTRA
}  // namespace trtrace::conf

// ---- generated: one TEST per interface
namespace trtrace::conf {
#define TRTRACE_CONF_TESTS
#include "conformance_gen.inc"
}  // namespace trtrace::conf

// ==============================================================================================
// Whole-library tests, coverage report, main
// ==============================================================================================
namespace trtrace::conf {

int32_t libraryCode() {
  using Fn = int32_t (*)();
  auto v = reinterpret_cast<Fn>(dlsym(lib().handle, "getInferLibVersion"));
  return v ? v() : 0;
}

// The library is one of the versions the spec describes (kSpecVersions: the base and each delta),
// and its major/minor/patch/build entry points agree with that version's string.
TEST(Conformance, LibraryVersion) {
  using Fn = int32_t (*)();
  const int32_t code = libraryCode();
  ASSERT_NE(code, 0) << "getInferLibVersion not exported by " << lib().path;
  const SpecVersion* spec = nullptr;
  for (const auto& v : kSpecVersions)
    if (v.code == code / 100 * 100) spec = &v;
  ASSERT_NE(spec, nullptr) << lib().path << " is version " << code << ", not one the spec describes";
  int parts[4] = {};
  ASSERT_EQ(std::sscanf(spec->text, "%d.%d.%d.%d", &parts[0], &parts[1], &parts[2], &parts[3]), 4);
  const char* names[4] = {"getInferLibMajorVersion", "getInferLibMinorVersion", "getInferLibPatchVersion",
                          "getInferLibBuildVersion"};
  for (int i = 0; i < 4; ++i) {
    auto f = reinterpret_cast<Fn>(dlsym(lib().handle, names[i]));
    ASSERT_NE(f, nullptr) << names[i];
    EXPECT_EQ(f(), parts[i]) << names[i] << " of " << lib().path << " (spec: " << spec->text << ")";
  }
}

// 50-rtx-1.7.api: the slots 1.7 appends, called where the library has them.
TEST(Conformance, Rtx17Delta) {
  if (libraryCode() < 10700) GTEST_SKIP() << "library older than 1.7: the delta's methods are not its";
  Ctx c;
  // addSqueezeV2 with axes, and with none (every size-1 axis goes).
  ITensor* x = c.input(DataType::kFLOAT, {2, 1, 4, 1});
  ISqueezeLayer* some = c.n().addSqueezeV2(*x, c.constant(DataType::kINT64, {1}, 1));
  ASSERT_NE(some, nullptr);
  EXPECT_EQ(CLayer(some).getNbInputs(), 2);
  ISqueezeLayer* all = c.n().addSqueezeV2(*x, nullptr);
  ASSERT_NE(all, nullptr);
  EXPECT_EQ(CLayer(all).getNbInputs(), 1);
  EXPECT_EQ(CLayer(all).getType(), LayerType::kSQUEEZE);
  // OptimizationProfile's profiling stream: null by default, a set value comes back.
  IOptimizationProfile* p = c.b().createOptimizationProfile();
  ASSERT_NE(p, nullptr);
  COptimizationProfile cp(p);
  EXPECT_EQ(cp.getProfileStream(), nullptr);
  cp.setProfileStream(reinterpret_cast<cudaStream>(0x10));
  EXPECT_EQ(cp.getProfileStream(), reinterpret_cast<cudaStream>(0x10));
  cp.setProfileStream(nullptr);
}

// The StreamWriter interface (25-callbacks.api) against the real library: a streamed build calls
// the writer's `write` slot with the engine, the same bytes buildSerializedNetwork returns.
struct CollectingWriter final : IStreamWriter {
  std::vector<uint8_t> bytes;
  int calls = 0;
  APILanguage getAPILanguage() const noexcept override { return APILanguage::kCPP; }
  InterfaceInfo getInterfaceInfo() const noexcept override { return {"IStreamWriter", 1, 0}; }
  int64_t write(const void* data, int64_t n) override {
    ++calls;
    if (n > 0) bytes.insert(bytes.end(), static_cast<const uint8_t*>(data), static_cast<const uint8_t*>(data) + n);
    return n;
  }
};

TEST(Conformance, StreamedBuildWritesTheEngine) {
  std::vector<uint8_t> whole;
  {
    Ctx c;
    Made<IHostMemory> h = make(c, Tag<IHostMemory>{});
    ASSERT_NE(h.obj, nullptr) << h.why;
    const auto* data = static_cast<const uint8_t*>(CHostMemory(h.obj).data());
    whole.assign(data, data + CHostMemory(h.obj).size());
    delete reinterpret_cast<PublicRoot*>(h.obj);
  }
  Ctx c;
  ITensor* o = c.out(c.n().addActivation(*c.x(), ActivationType::kRELU));
  ASSERT_NE(o, nullptr);
  c.n().markOutput(*o);
  CollectingWriter w;
  ASSERT_TRUE(c.b().buildSerializedNetworkToStream(*c.network, *c.cfg(), w)) << c.log.take();
  EXPECT_GE(w.calls, 1);
  EXPECT_EQ(w.bytes, whole) << "the streamed engine differs from buildSerializedNetwork's";
}

class Report : public ::testing::Environment {
 public:
  void TearDown() override {
    const bool all = ::testing::GTEST_FLAG(filter) == "*";
    std::map<std::string, std::pair<int, int>> per;
    std::vector<std::string> missing;
    int done = 0, total = 0;
    for (const SpecMethod& m : kSpecMethods) {
      if (const api::ApiDesc* d = api::find(m.id); d && d->since > libraryCode()) continue;  // not this library's
      const bool hitOnce = hits()[m.id] > 0;
      ++total, done += hitOnce;
      auto& p = per[m.iface];
      ++p.second, p.first += hitOnce;
      if (!hitOnce) missing.push_back(std::string(m.iface) + "." + m.method);
    }
    std::printf("\nconformance: per interface (exercised/spec'd):\n");
    for (const auto& [name, p] : per)
      std::printf("  %-28s %3d/%-3d%s\n", name.c_str(), p.first, p.second, p.first == p.second ? "" : "  <");
    std::printf("conformance: not exercised (%zu):\n", missing.size());
    for (const auto& s : missing) std::printf("  %s\n", s.c_str());
    std::printf("conformance: round trips called but not compared (%zu):\n", unchecked().size());
    for (const auto& s : unchecked()) std::printf("  %s\n", s.c_str());
    std::printf("conformance: %d/%d methods exercised (%.1f%%)\n", done, total, 100.0 * done / total);
    if (!all) return;  // a filtered run cannot judge coverage
    EXPECT_GE(done * 100, total * 95) << "coverage below 95%";
    std::string notBuilt;
    for (LayerType t : kAllLayerTypes) {
      if (t == LayerType::kPLUGIN || t == LayerType::kPLUGIN_V2 || t == LayerType::kPLUGIN_V3) continue;
      if (!seenLayerTypes().count(static_cast<int32_t>(t)))
        notBuilt += " " + std::string(api::enumeratorName(api::kEnumLayerType, static_cast<int64_t>(t)));
    }
    EXPECT_TRUE(notBuilt.empty()) << "layer types never built:" << notBuilt;
  }
};

extern "C" void onCrash(int sig) {
  const auto* t = ::testing::UnitTest::GetInstance()->current_test_info();
  char buf[256];
  int n = std::snprintf(buf, sizeof buf, "\nconformance: signal %d in test %s.%s (a wrong vtable slot or signature?)\n",
                        sig, t ? t->test_suite_name() : "?", t ? t->name() : "?");
  if (n > 0) (void)!write(2, buf, static_cast<size_t>(n));
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace trtrace::conf

int main(int argc, char** argv) {
  using namespace trtrace::conf;
  ::testing::InitGoogleTest(&argc, argv);
  const char* path = std::getenv("TRTRACE_TRT_LIB");
  if (!path || !*path) {
    std::fprintf(stderr,
                 "conformance_tests: TRTRACE_TRT_LIB is not set. Point it at the real libtensorrt_rtx.so.1 "
                 "(e.g. `source build/env.sh`; ctest sets it from the project venv).\n");
    return 1;
  }
  Lib& l = lib();
  l.path = path;
  l.handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!l.handle) {
    std::fprintf(stderr, "conformance_tests: cannot dlopen TRTRACE_TRT_LIB=%s: %s\n", path, dlerror());
    return 1;
  }
  l.create = reinterpret_cast<Lib::CreateFn>(dlsym(l.handle, "createInferBuilder_INTERNAL"));
  if (!l.create) {
    std::fprintf(stderr, "conformance_tests: %s has no createInferBuilder_INTERNAL\n", path);
    return 1;
  }
  std::signal(SIGSEGV, onCrash);
  std::signal(SIGBUS, onCrash);
  std::signal(SIGILL, onCrash);
  std::signal(SIGFPE, onCrash);
  std::signal(SIGABRT, onCrash);
  ::testing::AddGlobalTestEnvironment(new Report);
  return RUN_ALL_TESTS();
}
