// trtrace strip IN -o OUT [--keep-below N] [--zeros] [--all-types] [--seed S] [--json]: the same
// build with other numbers, shareable without the model's weights (issue 17). Every weights value
// (stored blob or inline in the call log) of N bytes or more that holds learned numbers
// (lib::holdsLearnedValues: floating and quantized types) is replaced by values of the same type,
// count and length: FLOAT, HALF, BF16 seeded uniform in [-1, 1), the other replaced types zeros;
// --zeros: zeros for all. Integer and bool weights (INT32, INT64, BOOL, UINT8) are kept: they are
// the shapes, axes, indices and masks the build's structure is computed from (a Conv1d's reshape
// target, a Squeeze's axes), so replacing them breaks the build rather than hiding a model; a
// type-driven rule, never a guess from layer kinds or names. --all-types replaces those too.
// Equal contents get equal replacements and every weights pointer identity is kept, so aliasing
// (which replay keys on) is unchanged; weights recorded as random (a seed, no bytes) stay as they
// are. Everything else (calls, shapes, attributes, the recorded build results) is copied. OUT
// appears complete or not at all, never over IN (trtrace/files.h).
#include <cstdio>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <vector>

#include "commands.h"
#include "trace_edit.h"
#include "trtrace/api_abi.h"
#include "trtrace/convert.h"
#include "trtrace/error.h"
#include "trtrace/files.h"
#include "trtrace/reader.h"
#include "trtrace/writer.h"
#include "trt_values.h"

namespace trtrace::cli {

struct StripOptions {
  std::string in, out;
  uint64_t keepBelow = 0, seed = 1;
  bool zeros = false, allTypes = false, json = false;
};

namespace {

// `bytes` bytes standing in for weights of `dtype` (`count` elements): see the file comment.
std::unique_ptr<std::byte[]> standIn(uint32_t dtype, uint64_t bytes, uint64_t seed, bool zeros) {
  auto buf = std::make_unique<std::byte[]>(bytes);  // zeroed
  const auto t = static_cast<abi::DataType>(dtype);
  const size_t width = t == abi::DataType::kFLOAT ? 4 : t == abi::DataType::kHALF || t == abi::DataType::kBF16 ? 2 : 0;
  if (!zeros && width) lib::randomWeights(t, bytes / width, seed, {buf.get(), bytes});
  return buf;
}

struct Key {
  Hash128 hash;
  uint64_t length;
  uint32_t dtype;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    return size_t(k.hash.lo ^ (k.hash.hi * 31) ^ k.length ^ (uint64_t(k.dtype) << 56));
  }
};

// Encodes each weights value with its stand-in: stored blobs are written once per content (kept
// ones copied), inline values re-encoded in the call log. Holds blob bytes until the writer
// consumed them (bounded).
class Stripper {
 public:
  Stripper(const Reader& r, Writer& w, const StripOptions& o) : r_(r), w_(w), o_(o) {}

  void weights(CallEncoder& e, const ValueView& v, bool ret) {
    const bool blob = v.kind() == ValueKind::WeightsBlob;
    const uint64_t length = blob ? v.blob().length : v.bytes().size();
    if (v.kind() == ValueKind::WeightsRandom || length == 0) return encodeValue(e, v, ret);
    const bool structure = !o_.allTypes && !lib::holdsLearnedValues(static_cast<abi::DataType>(v.dtype()));
    if (!blob && (structure || length < o_.keepBelow)) return count(true, structure, length), encodeValue(e, v, ret);
    const Key key{blob ? v.blob().hash : hash128(v.bytes().data(), length), length, v.dtype()};
    if (!blob) {
      auto it = inline_.find(key);
      if (it == inline_.end()) it = inline_.emplace(key, standIn(v.dtype(), length, nextSeed(), o_.zeros)).first;
      count(false, false, length);
      auto bytes = std::span<const std::byte>(it->second.get(), length);
      ret ? e.retWeightsInline(v.dtype(), v.count(), bytes, v.weightsPtr())
          : e.argWeightsInline(v.dtype(), v.count(), bytes, v.weightsPtr());
      return;
    }
    auto it = blobs_.find(key);
    if (it == blobs_.end()) {
      // A Lost blob gets a stand-in too (of the right length: zeros for a structure type).
      const bool keep = (structure || length < o_.keepBelow) && !r_.blobLost(v.blob());
      count(keep, structure, length);
      it = blobs_
               .emplace(key, put(keep ? r_.checkedBlob(v.blob())
                                      : BlobView::owned(standIn(v.dtype(), length, nextSeed(), o_.zeros), length)))
               .first;
    }
    ret ? e.retWeightsBlob(v.dtype(), v.count(), it->second, v.weightsPtr())
        : e.argWeightsBlob(v.dtype(), v.count(), it->second, v.weightsPtr());
  }
  void finish() {
    w_.drainBlobs();
    held_.clear();
    heldBytes_ = 0;
  }
  uint64_t replaced = 0, replacedBytes = 0, kept = 0, keptBytes = 0, keptStructure = 0, keptStructureBytes = 0;

 private:
  uint64_t nextSeed() { return o_.seed * 0x9E3779B97F4A7C15ull + ++seeds_; }
  // Kept values are counted once: as structure (integer/bool) or as under --keep-below.
  void count(bool keep, bool structure, uint64_t length) {
    if (!keep)
      ++replaced, replacedBytes += length;
    else if (structure)
      ++keptStructure, keptStructureBytes += length;
    else
      ++kept, keptBytes += length;
  }
  BlobRef put(BlobView v) {
    const BlobRef ref = w_.putBlob(v.data(), v.size());
    if (!v.isZeroCopy()) heldBytes_ += v.size(), held_.push_back(std::move(v));
    if (heldBytes_ > (256u << 20)) finish();
    return ref;
  }
  const Reader& r_;
  Writer& w_;
  const StripOptions& o_;
  uint64_t seeds_ = 0, heldBytes_ = 0;
  std::unordered_map<Key, BlobRef, KeyHash> blobs_;
  std::unordered_map<Key, std::unique_ptr<std::byte[]>, KeyHash> inline_;
  std::vector<BlobView> held_;
};

}  // namespace

static void report(const StripOptions& o, uint64_t calls, const Stripper& s) {
  using ull = unsigned long long;
  if (o.json) {
    std::printf(
        "{\"output\":%s,\"calls\":%llu,\"replaced\":%llu,\"replaced_bytes\":%llu,\"kept\":%llu,\"kept_bytes\":%llu,"
        "\"kept_integer\":%llu,\"kept_integer_bytes\":%llu}\n",
        jsonString(o.out).c_str(), ull(calls), ull(s.replaced), ull(s.replacedBytes), ull(s.kept), ull(s.keptBytes),
        ull(s.keptStructure), ull(s.keptStructureBytes));
    return;
  }
  std::printf(
      "%s: %llu calls; %llu weights replaced (%s)%s, %llu kept (under %llu bytes, %s), %llu integer/bool kept (%s)\n",
      o.out.c_str(), ull(calls), ull(s.replaced), humanBytes(double(s.replacedBytes)).c_str(),
      o.zeros ? " by zeros" : "", ull(s.kept), ull(o.keepBelow), humanBytes(double(s.keptBytes)).c_str(),
      ull(s.keptStructure), humanBytes(double(s.keptStructureBytes)).c_str());
}

static int runStrip(const StripOptions& o) {
  auto r = convert::openCapture(o.in);
  if (r->truncatedAt())
    throw Error(Error::Kind::Truncated, r->truncationMessage() + "; not stripping a truncated trace");
  if (r->callCount() == 0) throw Error(Error::Kind::Empty, o.in + ": holds no calls (nothing to strip)");
  files::PendingOutputs outputs;  // OUT is never IN, and appears complete or not at all
  auto w = createDerived(*r, outputs, o.out);
  Stripper s(*r, *w, o);
  Progress progress("trtrace strip " + o.out, "copying calls", r->callCount(), Progress::Unit::Calls);
  r->forEachCall([&](const CallView& c) {
    progress.update(c.seq());
    copyCall(c, *w, c.networkId(), [&](CallEncoder& e, const ValueView& v, bool ret) { s.weights(e, v, ret); });
    return true;
  });
  s.finish();
  w->close();
  outputs.commit();
  report(o, r->callCount(), s);
  return kOk;
}

Command addStrip(CLI::App& app) {
  auto o = std::make_shared<StripOptions>();
  auto* sub =
      app.add_subcommand("strip",
                         "Replace every learned weight (floating and quantized types) by stand-in values of the "
                         "same type and count (same build, other numbers, none of the model's "
                         "parameters); integer and bool weights (shapes, axes, indices) are kept");
  sub->add_option("in", o->in, "Input trace")->required();
  sub->add_option("-o,--output", o->out, "Output trace (written to a temp file, then renamed)")->required();
  sub->add_option("--keep-below", o->keepBelow,
                  "Keep weights smaller than this many bytes as they are (e.g. shape constants)")
      ->check(CLI::NonNegativeNumber);
  sub->add_flag("--zeros", o->zeros,
                "Zeros for every type (default: seeded uniform [-1, 1) for FLOAT/HALF/BF16, zeros otherwise)");
  sub->add_flag("--all-types", o->allTypes,
                "Replace integer and bool weights too (default: kept, being the shapes, axes and indices the build's "
                "structure depends on; with this, builds that compute shapes from them fail)");
  sub->add_option("--seed", o->seed, "Seed of the stand-in values (default 1)")->check(CLI::NonNegativeNumber);
  sub->add_flag("--json", o->json, "Machine-readable report");
  return {sub, [o] { return runStrip(*o); }};
}

}  // namespace trtrace::cli
