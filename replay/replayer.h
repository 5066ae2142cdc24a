// Replay runtime: what the generated dispatch (replay_gen.inc) calls to decode a recorded call,
// map trace handles to live objects of the real library, and bind or check results.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "trtrace/api_abi.h"
#include "trtrace/api_table.h"
#include "trtrace/progress.h"
#include "trtrace/reader.h"
#include "trtrace/weights_source.h"
#include "error_logger.h"
#include "settings.h"

namespace trtrace::replay {

// A replayed call behaved differently from the capture (or the trace asks for what we cannot do).
struct Divergence : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Bytes of random weights (weights the capture marked random, generated at replay) the player
// holds at once: TRTRACE_MAX_RANDOM_WEIGHTS_MB, default 1024 (1 GiB). A count beyond it is refused
// before anything is allocated, whatever a (possibly hostile) trace says.
uint64_t randomWeightsLimitFromEnv();

struct Options {
  std::string libPath;           // the real libtensorrt_rtx.so.1 (never a name from the capture)
  uint64_t seed = 0;             // for weights the capture marked random
  int64_t network = -1;          // replay only this network id (-1 = all)
  bool skipUnsupported = false;  // UNSUPPORTED records: skip instead of stopping
  bool ignoreVersion = false;
  bool quiet = false;         // library messages below error not shown
  bool trustWeights = false;  // skip the content-hash check of raw blobs (a trace already verified)
  uint64_t maxRandomBytes = randomWeightsLimitFromEnv();  // random weights held at once (above)
  std::vector<Setting>* settings = nullptr;               // --set (settings.h): applied, and counted, by the replay
};

// The player's logger: shows the library's warnings and errors, keeps errors for build records.
class Logger final : public lib::ErrorKeepingLogger {
 public:
  explicit Logger(bool quiet) : quiet_(quiet) {}
  abi::APILanguage getAPILanguage() const noexcept override { return abi::APILanguage::kCPP; }
  abi::InterfaceInfo getInterfaceInfo() const noexcept override { return {"ILogger", 1, 0}; }

 private:
  void pass(abi::Severity severity, const char* msg) noexcept override;
  bool quiet_;
};

struct NetworkResult {
  uint32_t network = 0;
  bool built = false, ok = false;
  uint64_t engineSize = 0;
  Hash128 engineHash;
  std::optional<BuildResultView> captured;  // what the capture recorded for this build
  std::vector<std::string> errors;          // the library's error messages at replay
  double buildSeconds = 0;
  std::string path;  // engine file written
};

// Where a streamed build (Builder::buildSerializedNetworkToStream) puts the engine as the library
// writes it, piece by piece, so that it is never held whole: the player's output file.
class EngineStream {
 public:
  virtual ~EngineStream() = default;
  // Called from inside the library: never throws. False: the piece could not be written (the
  // library then gives up writing; finish says why).
  virtual bool write(const void* data, size_t n) noexcept = 0;
  // The build returned: `keep` (it succeeded) completes the file and returns its name; otherwise
  // nothing of it stays. Throws trtrace::Error (Io) when a write or the completion failed.
  virtual std::string finish(bool keep) = 0;
};
// The stream of network `network`'s engine, or nullptr when it is not written anywhere.
using OpenEngineStream = std::function<std::unique_ptr<EngineStream>(uint32_t network)>;

class Replayer;
using PlayFn = void (*)(Replayer&);

// One interposed interface of the spec (generated table kIfaces, replay_gen.inc): every object the
// replay binds carries its interface, and every use is checked against the one the spec names, so
// a crafted trace can never hand the library an object of another type.
struct IfaceInfo {
  const char* name;
  uint16_t base;  // id of the interface it derives from (0: none)
  bool appOwned;  // the application deletes it (its `~` is replayed)
};
struct Dispatch {
  uint32_t id;
  PlayFn fn;
  // The call deletes its receiver: replayed even in a network --network skips, for an object this
  // replay created (e.g. a skipped network's INetworkDefinition, created by a builder call of no
  // network), so that objects go in the capture's order and none outlives the builder that made it.
  bool destroys;
};

class Replayer {
 public:
  // Weights come from `weights` (over `reader`), which outlives the replayer.
  Replayer(const Reader& reader, WeightsSource& weights, const Options& options, void* createBuilderFn);
  // Deletes the objects the application owned and never deleted, newest first (a network before the
  // builder that made it), as the application's exit would have left them to the library.
  ~Replayer();
  Replayer(const Replayer&) = delete;
  Replayer& operator=(const Replayer&) = delete;

  // Replays every call in order; throws Divergence or trtrace::Error.
  void run(const std::function<void(const NetworkResult&, const void* engine)>& onEngine);

  // ---- used by generated code -----------------------------------------------------------------
  // The receiver's real object, checked to be an `iface` (wrapped interfaces are called on it), and
  // its V-pointer at chain `level` (abi::vpointer).
  void* receiverObject(uint16_t iface);
  void* receiverImpl(int level, uint16_t iface);
  bool argBool(size_t i);
  template <class T>
  T argInt(size_t i);  // an integer parameter of type T: a recorded value T cannot hold diverges
  float argF32(size_t i);
  double argF64(size_t i);
  const char* argString(size_t i);
  abi::Dims64 argDims(size_t i);
  abi::Weights argWeights(size_t i);
  void argStruct(size_t i, void* out, size_t n);
  void* argObject(size_t i, uint16_t iface, bool required);
  std::vector<void*> argObjects(size_t i, uint16_t iface);
  template <class T>
  std::vector<T> argArray(size_t i);
  std::vector<std::byte> argBytes(size_t i);
  void* outBuffer(size_t i);
  void bindResult(const void* real, uint16_t iface);
  void checkBool(bool got);
  void checkScalar(int64_t got);
  void destroyReceiver(uint16_t iface);

  // ---- used by the hand-written overrides and hooks (replay/overrides.cpp) -----------------------
  const CallView& call() const { return *call_; }
  bool hasSettings() const { return options_.settings && !options_.settings->empty(); }  // --set given
  Logger& logger() { return logger_; }
  void* createBuilderFn() const { return createBuilder_; }
  // reports and releases build buffers; `engine` is null for a streamed build (result.path says
  // where it went, if anywhere)
  void buildDone(NetworkResult result, const void* engine);
  // Streamed builds write their engines through `open` (the player's outputs); without it they are
  // only hashed.
  void streamEnginesTo(OpenEngineStream open) { openStream_ = std::move(open); }
  std::unique_ptr<EngineStream> engineStream(uint32_t network) { return openStream_ ? openStream_(network) : nullptr; }
  // A stopwatch a pre hook starts and its post hook reads (the build's time).
  void startStopwatch() { stopwatch_ = std::chrono::steady_clock::now(); }
  double stopwatchSeconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - stopwatch_).count();
  }
  [[noreturn]] void diverge(const std::string& what) const;
  // Argument i holds `value`, which a `bits`-bit (un)signed parameter cannot hold.
  [[noreturn]] void outOfRange(size_t i, const std::string& value, int bits, bool isSigned) const;

  struct Stats {
    uint64_t calls = 0, skipped = 0, scalarMismatches = 0;
    double dispatchSeconds = 0, buildSeconds = 0;
    double outputSeconds = 0;  // in the engine callback (the player writes the engine file): not dispatch
  };
  const Stats& stats() const { return stats_; }

 private:
  std::chrono::steady_clock::time_point stopwatch_;
  bool skips(const CallView& c, const Dispatch* play);
  void dispatch(const CallView& c, const Dispatch& play, Setting* setting);
  Setting* settingFor(uint32_t apiId);
  void addBuildSettings(const CallView& build);
  const ValueView arg(size_t i) const;
  void* object(uint64_t handle, uint16_t iface) const;
  std::string where() const;
  std::string progressLabel() const;  // what the progress lines on stderr start with
  uint64_t weightsBytes(size_t i, const ValueView& v) const;

  const Reader& reader_;
  WeightsSource& source_;  // blob weights' bytes: decode cache, page release, second mappings
  Options options_;
  void* createBuilder_;
  Logger logger_;
  const bool jsonReturns_;  // calls from NVIDIA's JSON: a returned handle is a guess (bindResult)
  const CallView* call_ = nullptr;
  Setting* activeSetting_ = nullptr;                    // the --set call being replayed
  std::set<std::pair<uint32_t, uint64_t>> settingsOn_;  // (setting's API id, receiver) made already
  struct Bound {
    void* object;    // the real public object
    uint16_t iface;  // its interface (kIfaces), the most derived one known
  };
  std::unordered_map<uint64_t, Bound> objects_;  // trace handle -> real public object
  // Weights handed to the library stay alive until the build returns. The library identifies
  // weights by pointer (e.g. setWeightsName), so replay reproduces the application's pointer
  // identity: one replay pointer per (application pointer, content) -- the same pointer again gets
  // the same replay pointer, distinct pointers get distinct ones even for equal bytes. Traces
  // without pointer identities (ptr 0: before format 2.1) are keyed by content alone.
  // An entry lives until every network that was handed it has been built (interleaved networks).
  struct WeightsKey {
    uint64_t ptr;
    BlobRef content;
    bool operator==(const WeightsKey& o) const { return ptr == o.ptr && content == o.content; }
  };
  struct WeightsKeyHasher {
    size_t operator()(const WeightsKey& k) const {
      return BlobRefHasher()(k.content) ^ (k.ptr * 0x9E3779B97F4A7C15ull);
    }
  };
  struct Held {
    BlobView view;
    std::vector<uint32_t> networks;
  };
  const void* hold(const WeightsKey& key, const std::function<BlobView()>& load);
  std::unordered_map<WeightsKey, Held, WeightsKeyHasher> weights_;
  std::unordered_set<const void*> mappedHeld_;         // data of the zero-copy views held (one entry each)
  std::vector<std::unique_ptr<std::byte[]>> scratch_;  // out-parameter buffers, random weights
  uint64_t randomBytes_ = 0;                           // random weights made for this build
  std::function<void(const NetworkResult&, const void*)> onEngine_;
  OpenEngineStream openStream_;
  Stats stats_;
  std::unique_ptr<ElapsedPhase> building_;  // the build being made: its progress line (trtrace/progress.h)
};

template <class T>
T Replayer::argInt(size_t i) {
  ValueView v = arg(i);
  using L = std::numeric_limits<T>;
  if constexpr (std::is_signed_v<T>) {
    const int64_t x = v.asI64();
    if (x < static_cast<int64_t>(L::min()) || x > static_cast<int64_t>(L::max()))
      outOfRange(i, std::to_string(x), L::digits + 1, true);
  } else {
    const uint64_t x = v.asU64();
    if (x > static_cast<uint64_t>(L::max())) outOfRange(i, std::to_string(x), L::digits, false);
  }
  return std::is_signed_v<T> ? static_cast<T>(v.asI64()) : static_cast<T>(v.asU64());
}

template <class T>
std::vector<T> Replayer::argArray(size_t i) {
  ValueView v = arg(i);
  std::vector<T> out;
  if (v.kind() == ValueKind::F32Array) {
    for (float f : v.floats()) out.push_back(static_cast<T>(f));
    return out;
  }
  for (int64_t x : v.ints()) {
    if constexpr (std::is_integral_v<T>) {
      if (x < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          static_cast<uint64_t>(x) > static_cast<uint64_t>(std::numeric_limits<T>::max()))
        outOfRange(i, std::to_string(x), std::numeric_limits<T>::digits + std::is_signed_v<T>, std::is_signed_v<T>);
    } else if constexpr (std::is_enum_v<T>) {
      using U = std::underlying_type_t<T>;
      if (x < static_cast<int64_t>(std::numeric_limits<U>::min()) ||
          x > static_cast<int64_t>(std::numeric_limits<U>::max()))
        outOfRange(i, std::to_string(x), std::numeric_limits<U>::digits + 1, true);
    }
    out.push_back(static_cast<T>(x));
  }
  return out;
}

}  // namespace trtrace::replay
