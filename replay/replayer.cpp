// Replay runtime and the generated dispatch table.
#include "replayer.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "trtrace/call_check.h"
#include "trtrace/convert.h"
#include "trtrace/error.h"
#include "trtrace/files.h"
#include "trt_values.h"
#include "trtrace/hash.h"
#include "trtrace/network_id.h"
#include "trtrace/progress.h"

namespace trtrace::replay {

void Logger::pass(abi::Severity severity, const char* msg) noexcept {
  const bool error = isError(severity);
  if (msg && (error || (!quiet_ && severity == abi::Severity::kWARNING)))
    std::fprintf(stderr, "[TRT] %s: %s\n", error ? "error" : "warning", msg);
}

// The generated functions, one per API id, and the hand-written ones they name (replay/overrides.cpp).
using namespace trtrace::abi;
#include "replay_overrides.h"
#include "replay_gen.inc"

namespace {
const Dispatch* findPlay(uint32_t id) {
  static const std::vector<const Dispatch*> table = [] {
    std::vector<const Dispatch*> t(api::kMaxApiId + 1, nullptr);
    for (const Dispatch& d : kDispatch) t[d.id] = &d;
    return t;
  }();
  return id < table.size() ? table[id] : nullptr;
}
}  // namespace

Replayer::Replayer(const Reader& reader, WeightsSource& weights, const Options& options, void* createBuilderFn)
    : reader_(reader),
      source_(weights),
      options_(options),
      createBuilder_(createBuilderFn),
      logger_(options.quiet),
      jsonReturns_(convert::fromNvidiaJson(reader)) {}

Replayer::~Replayer() {
  // One object may be bound to several handles (a converted NVIDIA capture names a known object
  // reached another way anew): each is deleted once, ordered by the first handle it got.
  std::unordered_map<void*, uint64_t> first;
  for (const auto& [h, b] : objects_)
    if (b.object && b.iface != kIf_None && kIfaces[b.iface].appOwned) {
      auto [it, fresh] = first.emplace(b.object, h);
      if (!fresh) it->second = std::min(it->second, h);
    }
  std::vector<std::pair<uint64_t, void*>> owned;
  for (const auto& [o, h] : first) owned.emplace_back(h, o);
  std::sort(owned.rbegin(), owned.rend());
  for (const auto& [h, o] : owned) delete static_cast<abi::PublicRoot*>(o);
}

namespace {
// " network <n>", 0-based as the player's output numbers them ("" for a call outside any network).
std::string networkName(uint32_t networkId) { return networkId ? " network " + networkLabel(networkId, "") : ""; }
}  // namespace

std::string Replayer::progressLabel() const { return "tensorrt_player " + reader_.path(); }

std::string Replayer::where() const {
  const api::ApiDesc* d = call_ ? api::find(call_->apiId()) : nullptr;
  std::string name = d ? std::string(d->interface) + "::" + std::string(d->method)
                       : "api " + std::to_string(call_ ? call_->apiId() : 0);
  return "call #" + std::to_string(call_ ? call_->seq() : 0) + " (" + name + ")";
}

void Replayer::diverge(const std::string& what) const { throw Divergence(where() + ": " + what); }

void Replayer::outOfRange(size_t i, const std::string& value, int bits, bool isSigned) const {
  const api::ApiDesc* d = call_ ? api::find(call_->apiId()) : nullptr;
  const std::string name = d && i < d->nargs ? " (" + std::string(d->args[i]) + ")" : "";
  diverge("argument " + std::to_string(i) + name + ": " + value + " does not fit its " + std::to_string(bits) +
          "-bit " + (isSigned ? "signed" : "unsigned") + " parameter");
}

void Replayer::run(const std::function<void(const NetworkResult&, const void*)>& onEngine) {
  onEngine_ = onEngine;
  Progress progress(progressLabel(), "replaying calls", reader_.callCount(), Progress::Unit::Calls);
  reader_.forEachCall([&](const CallView& c) {
    progress.update(c.seq());
    call_ = &c;
    // The spec's check (verify's too): an array shorter than its count, or a call described as
    // another method than its API id, never reaches the library.
    if (const std::string bad = callProblem(reader_, c); !bad.empty())
      throw Error(Error::Kind::Corrupt, reader_.path() + ": " + where() + ": " + bad);
    const Dispatch* play = findPlay(c.apiId());
    if (skips(c, play)) {
      ++stats_.skipped;
      return true;
    }
    if (const api::ApiDesc* d = api::find(c.apiId()); d && d->has(api::flag::kBuild)) addBuildSettings(c);
    Setting* s = settingFor(c.apiId());
    if (!s) {
      dispatch(c, *play, nullptr);
      return true;
    }
    std::vector<uint8_t> buf;
    dispatch(settingCall(*s, c.receiver(), c.networkId(), c.seq(), buf), *play, s);
    ++s->replaced;
    settingsOn_.insert({s->api->id, c.receiver()});
    return true;
  });
  call_ = nullptr;
  source_.releaseNow();
}

// A call left out (another network under --network; UNSUPPORTED with --skip-unsupported); a call
// this player cannot make diverges.
bool Replayer::skips(const CallView& c, const Dispatch* play) {
  const uint32_t net = c.networkId();
  if (options_.network >= 0 && net != 0 && int64_t{net} != options_.network && !(play && play->destroys)) return true;
  // A build --set made fail bound no engine: the calls on it cannot change a build.
  if (hasSettings() && c.receiver() && !objects_.count(c.receiver()))
    if (const api::ApiDesc* d = api::find(c.apiId()); d && d->has(api::flag::kBuildIrrelevant)) return true;
  if (c.status() == CallStatus::Unsupported) {
    if (options_.skipUnsupported) return true;
    diverge("the capture marked this call UNSUPPORTED (" + std::string(c.unsupportedInterface()) + " slot " +
            std::to_string(c.unsupportedSlot()) + "); pass --skip-unsupported to replay without it");
  }
  if (!play) {
    const ApiInfo* info = reader_.api(c.apiId());
    diverge(std::string("unknown API id ") + std::to_string(c.apiId()) +
            (info ? " (" + std::string(info->interfaceName) + "::" + std::string(info->methodName) + ")" : "") +
            " for this player (" + abi::kLibraryName + " " + abi::kLibraryVersion + ")");
  }
  return false;
}

void Replayer::dispatch(const CallView& c, const Dispatch& play, Setting* setting) {
  using Clock = std::chrono::steady_clock;
  const CallView* recorded = call_;
  call_ = &c;
  activeSetting_ = setting;
  auto t0 = Clock::now();
  const double buildBefore = stats_.buildSeconds, outputBefore = stats_.outputSeconds;
  // The library's build says nothing until it returns: its own phase, with the time spent.
  const api::ApiDesc* d = setting ? nullptr : api::find(c.apiId());
  if (d && d->has(api::flag::kBuild))
    building_ = std::make_unique<ElapsedPhase>(progressLabel(), "building" + networkName(c.networkId()));
  struct EndPhase {  // ends it here when buildDone did not (a failure: no "done" line then)
    std::unique_ptr<ElapsedPhase>& phase;
    ~EndPhase() { phase.reset(); }
  } endPhase{building_};
  try {
    play.fn(*this);
  } catch (const std::bad_alloc&) {  // one line naming the call, never a bare "std::bad_alloc"
    throw Error(Error::Kind::Io, reader_.path() + ": " + where() + ": out of memory replaying this call");
  }
  stats_.dispatchSeconds += std::chrono::duration<double>(Clock::now() - t0).count() -
                            (stats_.buildSeconds - buildBefore) - (stats_.outputSeconds - outputBefore);
  ++stats_.calls;
  activeSetting_ = nullptr;
  call_ = recorded;
}

Setting* Replayer::settingFor(uint32_t apiId) {
  if (!options_.settings) return nullptr;
  for (Setting& s : *options_.settings)
    if (s.api->id == apiId) return &s;
  return nullptr;
}

// Before a build: each BuilderConfig setting the capture never made on the build's config is made
// on it now (the config is the build's BuilderConfig parameter, as the spec types it).
void Replayer::addBuildSettings(const CallView& build) {
  if (!options_.settings) return;
  const api::ApiDesc* d = api::find(build.apiId());
  for (uint32_t i = 0; d && i < d->nargs && i < build.argCount(); ++i) {
    if (d->params[i].kind != api::Kind::Handle || d->params[i].iface != api::Iface::BuilderConfig) continue;
    const uint64_t config = build.arg(i).asU64();
    for (Setting& s : *options_.settings) {
      if (s.api->iface != api::Iface::BuilderConfig || !settingsOn_.insert({s.api->id, config}).second) continue;
      std::vector<uint8_t> buf;
      dispatch(settingCall(s, config, build.networkId(), build.seq(), buf), *findPlay(s.api->id), &s);
      ++s.added;
    }
  }
}

const ValueView Replayer::arg(size_t i) const {
  if (i >= call_->argCount()) diverge("argument " + std::to_string(i) + " missing in the trace");
  return call_->arg(i);
}

namespace {
bool isA(uint16_t actual, uint16_t wanted) {
  for (uint16_t i = actual; i != kIf_None; i = kIfaces[i].base)
    if (i == wanted) return true;
  return false;
}
}  // namespace

void* Replayer::object(uint64_t handle, uint16_t iface) const {
  if (handle == 0) return nullptr;
  auto it = objects_.find(handle);
  if (it == objects_.end()) diverge("object handle " + std::to_string(handle) + " was never created in this replay");
  const uint16_t got = it->second.iface;
  if (iface != kIf_None && got != kIf_None && !isA(got, iface))
    diverge("object " + std::to_string(handle) + " is a " + kIfaces[got].name + ", the call needs a " +
            kIfaces[iface].name);
  return it->second.object;
}

void* Replayer::receiverObject(uint16_t iface) {
  void* pub = object(call_->receiver(), iface);
  if (!pub) diverge("call on a null object");
  return pub;
}

void* Replayer::receiverImpl(int level, uint16_t iface) { return abi::vpointer(receiverObject(iface), level); }

bool Replayer::argBool(size_t i) { return arg(i).asBool(); }
float Replayer::argF32(size_t i) { return static_cast<float>(arg(i).asF64()); }
double Replayer::argF64(size_t i) { return arg(i).asF64(); }

const char* Replayer::argString(size_t i) {
  ValueView v = arg(i);
  if (v.kind() == ValueKind::Null) return nullptr;
  // FlatBuffers strings are NUL-terminated in the buffer: the view's data is a valid C string.
  return v.asString().data();
}

abi::Dims64 Replayer::argDims(size_t i) {
  ValueView v = arg(i);
  abi::Dims64 d{};
  auto ints = v.ints();
  if (v.kind() == ValueKind::I64Array && ints.size() == 1 && !lib::travelsAsDims(ints[0])) {
    if (ints[0] < INT32_MIN || ints[0] > INT32_MAX) outOfRange(i, std::to_string(ints[0]), 32, true);
    d.nbDims = static_cast<int32_t>(ints[0]);  // an out-of-range nbDims, kept as recorded
    return d;
  }
  if (ints.size() > lib::kMaxDims)
    diverge("argument " + std::to_string(i) + ": Dims with " + std::to_string(ints.size()) + " dimensions");
  d.nbDims = static_cast<int32_t>(ints.size());
  std::copy(ints.begin(), ints.end(), d.d);
  return d;
}

uint64_t randomWeightsLimitFromEnv() {
  const char* v = std::getenv("TRTRACE_MAX_RANDOM_WEIGHTS_MB");
  char* end = nullptr;
  const unsigned long long mb = v && *v ? std::strtoull(v, &end, 10) : 0;
  if (v && *v && (*end || mb == 0 || mb > (UINT64_MAX >> 20)))
    std::fprintf(stderr,
                 "tensorrt_player: warning: TRTRACE_MAX_RANDOM_WEIGHTS_MB='%s' is not a positive number "
                 "of MiB; using 1024\n",
                 v);
  return (v && *v && !*end && mb > 0 && mb <= (UINT64_MAX >> 20) ? mb : 1024) << 20;
}

// The bytes of a recorded Weights argument, checked before anything is sized by them: the count
// must fit the library's Weights (int64) and the type must be one this build knows.
uint64_t Replayer::weightsBytes(size_t i, const ValueView& v) const {
  const uint64_t count = v.count();
  if (count > uint64_t(INT64_MAX))
    diverge("argument " + std::to_string(i) + ": weights count " + std::to_string(count) + " does not fit a Weights");
  const uint64_t bytes = abi::weightBytes(static_cast<abi::DataType>(v.dtype()), static_cast<int64_t>(count));
  if (count > 0 && bytes == 0)
    diverge("argument " + std::to_string(i) + ": weights of unknown DataType " + std::to_string(v.dtype()));
  return bytes;
}

abi::Weights Replayer::argWeights(size_t i) {
  ValueView v = arg(i);
  abi::Weights w{};
  w.type = static_cast<abi::DataType>(v.dtype());
  w.count = static_cast<int64_t>(v.count());
  switch (v.kind()) {
    case ValueKind::WeightsInline: {
      auto b = v.bytes();
      if (b.size() < weightsBytes(i, v))
        diverge("argument " + std::to_string(i) + ": inline weights shorter than their count");
      if (b.empty()) break;
      w.values = hold({v.weightsPtr(), {hash128(b.data(), b.size()), b.size()}}, [&] {
        // Copied once to an aligned buffer: the log's bytes are only 4-byte aligned.
        auto buf = std::make_unique<std::byte[]>(b.size());
        std::memcpy(buf.get(), b.data(), b.size());
        return BlobView::owned(std::move(buf), b.size());
      });
      break;
    }
    case ValueKind::WeightsBlob: {
      BlobRef ref = v.blob();
      if (ref.length < weightsBytes(i, v))
        diverge("argument " + std::to_string(i) + ": blob shorter than the weights' count");
      // A view into a mapping (the trace's or the decode cache's), its content hash checked once per
      // blob before the library sees the bytes, so damaged weights never build an engine silently.
      w.values = hold({v.weightsPtr(), ref}, [&] { return source_.blob(ref, !options_.trustWeights); });
      break;
    }
    case ValueKind::WeightsRandom: {
      const uint64_t bytes = weightsBytes(i, v);
      if (bytes > options_.maxRandomBytes - std::min(randomBytes_, options_.maxRandomBytes))
        diverge("argument " + std::to_string(i) + ": random weights of " + std::to_string(v.count()) + " elements (" +
                humanBytes(double(bytes)) + ") would exceed the " + humanBytes(double(options_.maxRandomBytes)) +
                " of random weights a build may hold (TRTRACE_MAX_RANDOM_WEIGHTS_MB)");
      auto make = [&] {
        randomBytes_ += bytes;
        auto buf = std::make_unique<std::byte[]>(bytes);
        lib::randomWeights(static_cast<abi::DataType>(v.dtype()), v.count(),
                           options_.seed * 0x9E3779B97F4A7C15ull ^ v.seed(), {buf.get(), bytes});
        return buf;
      };
      if (v.weightsPtr() == 0) {  // no identity recorded: fresh values per call
        w.values = scratch_.emplace_back(make()).get();
      } else {  // the same application pointer (same type and count) gets the values of its first use
        const uint64_t kRandomTag = 0x52414e444f4d0000ull;  // keys apart from content hashes
        w.values = hold({v.weightsPtr(), {{kRandomTag | v.dtype(), kRandomTag}, bytes}},
                        [&] { return BlobView::owned(make(), bytes); });
      }
      break;
    }
    case ValueKind::Null: break;
    default: diverge("argument " + std::to_string(i) + ": expected weights, found " + std::string(kindName(v.kind())));
  }
  return w;
}

const void* Replayer::hold(const WeightsKey& key, const std::function<BlobView()>& load) {
  auto it = weights_.find(key);
  if (it == weights_.end()) {
    BlobView v = load();
    // A blob is a view into a mapping (the trace's, or the decode cache's): a second application
    // pointer with the same bytes needs a pointer of its own: a second mapping of the same file
    // pages (no memory), or for a blob that does not start on a page, a copy.
    if (v.isZeroCopy() && v.size() && !mappedHeld_.insert(v.data()).second) {
      if (BlobView a = source_.alias(v); a.size()) {
        v = std::move(a);
      } else {
        auto buf = std::make_unique_for_overwrite<std::byte[]>(v.size());
        std::memcpy(buf.get(), v.data(), v.size());
        files::releasePages(v.data(), v.size());  // the source pages the copy read
        v = BlobView::owned(std::move(buf), v.size());
      }
    }
    it = weights_.emplace(key, Held{std::move(v), {}}).first;
  }
  auto& nets = it->second.networks;
  const uint32_t net = call_->networkId();
  if (std::find(nets.begin(), nets.end(), net) == nets.end()) nets.push_back(net);
  return it->second.view.data();
}

void Replayer::argStruct(size_t i, void* out, size_t n) {
  auto b = arg(i).bytes();
  if (b.size() != n)
    diverge("argument " + std::to_string(i) + ": struct of " + std::to_string(b.size()) + " bytes, expected " +
            std::to_string(n));
  std::memcpy(out, b.data(), n);
}

void* Replayer::argObject(size_t i, uint16_t iface, bool required) {
  ValueView v = arg(i);
  void* o = v.kind() == ValueKind::Null ? nullptr : object(v.asU64(), iface);
  if (!o && required) diverge("argument " + std::to_string(i) + ": null where the API takes a reference");
  return o;
}

std::vector<void*> Replayer::argObjects(size_t i, uint16_t iface) {
  std::vector<void*> out;
  for (uint64_t h : arg(i).handles()) out.push_back(object(h, iface));
  return out;
}

std::vector<std::byte> Replayer::argBytes(size_t i) {
  auto b = arg(i).bytes();
  return {b.begin(), b.end()};
}

void* Replayer::outBuffer(size_t) {
  // Output parameters: the library writes into a zeroed scratch buffer we own.
  auto buf = std::make_unique<std::byte[]>(1 << 16);
  std::memset(buf.get(), 0, 1 << 16);
  void* p = buf.get();
  scratch_.push_back(std::move(buf));
  return p;
}

void Replayer::bindResult(const void* real, uint16_t iface) {
  auto r = call_->ret();
  uint64_t h = r && r->kind() == ValueKind::Handle ? r->asU64() : 0;
  if (!h) {
    if (real) diverge("returned an object where the capture got null");
    return;
  }
  // NVIDIA's JSON writes a returned object only when it is new, so a converted call's handle is a
  // guess: a fresh one for null (getInput past the last input), the same call's last one for a
  // known object reached another way (getInput after setInput). Such a handle is bound to what
  // the library returns; later calls name objects by NVIDIA's ids, not by it.
  if (!real) {
    if (jsonReturns_ && !objects_.count(h)) return;  // stays unbound: a later use diverges there
    diverge("returned null where the capture got object " + std::to_string(h));
  }
  auto [it, inserted] = objects_.emplace(h, Bound{const_cast<void*>(real), kIf_None});
  if (!inserted && it->second.object != real) {
    if (!jsonReturns_) diverge("object " + std::to_string(h) + " is a different object than at capture");
    it->second = Bound{const_cast<void*>(real), kIf_None};
  }
  // The most derived interface known: a layer returned at the base type gets its concrete one.
  const uint16_t known = refineIface(real, iface);
  if (it->second.iface == kIf_None || isA(known, it->second.iface)) it->second.iface = known;
}

void Replayer::checkBool(bool got) {
  if (activeSetting_) {  // a --set call: the library's refusal is reported, not a divergence
    activeSetting_->rejected += !got;
    return;
  }
  auto r = call_->ret();
  if (r && r->kind() == ValueKind::Bool && r->asBool() != got)
    diverge(std::string("returned ") + (got ? "true" : "false") + ", the capture got " + (got ? "false" : "true"));
}

void Replayer::checkScalar(int64_t got) {
  auto r = call_->ret();
  if (r && (r->kind() == ValueKind::I64 || r->kind() == ValueKind::Enum || r->kind() == ValueKind::U64) &&
      r->asI64() != got && static_cast<int64_t>(r->asU64()) != got)
    ++stats_.scalarMismatches;
}

void Replayer::destroyReceiver(uint16_t iface) {
  auto it = objects_.find(call_->receiver());
  if (it == objects_.end()) return;
  object(call_->receiver(), iface);  // checked: only an object of the deleted interface ...
  if (!kIfaces[iface].appOwned)      // ... that the application owns may be deleted
    diverge(std::string("a ") + kIfaces[iface].name + " is not deleted by the application");
  void* gone = it->second.object;
  delete static_cast<abi::PublicRoot*>(gone);
  std::erase_if(objects_, [&](const auto& kv) { return kv.second.object == gone; });  // every handle of it
}

void Replayer::buildDone(NetworkResult result, const void* engine) {
  stats_.buildSeconds += result.buildSeconds;
  building_.reset();
  if (onEngine_) {
    auto t0 = std::chrono::steady_clock::now();
    std::optional<ElapsedPhase> writing;  // a streamed engine (null) is written by the build
    if (engine) writing.emplace(progressLabel(), "writing the engine of" + networkName(result.network));
    onEngine_(result, engine);
    stats_.outputSeconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  // The weights of this build may go now: raw blobs were views, the rest owned buffers.
  for (auto it = weights_.begin(); it != weights_.end();) {
    auto& nets = it->second.networks;
    nets.erase(std::remove(nets.begin(), nets.end(), result.network), nets.end());
    if (!nets.empty()) {
      ++it;
      continue;
    }
    if (it->second.view.isZeroCopy()) mappedHeld_.erase(it->second.view.data());
    it = weights_.erase(it);
  }
  scratch_.clear();
  randomBytes_ = 0;
}

}  // namespace trtrace::replay
