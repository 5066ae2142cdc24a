// How the library's values become trace values, one way for the shim, the player, the converter
// and the CLI: Dims of any nbDims, the blob hint of a DataType, IEEE half <-> double, and an engine's bytes read
// through its IHostMemory without a recorded call, or hashed as a streamed build writes them; the API names a trace
// describes itself with.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <utility>

#include "trtrace/api_abi.h"
#include "trtrace/hash.h"
#include "trtrace/writer.h"

namespace trtrace::lib {

// How a Dims64 travels: nbDims in [0, kMaxDims] as Dims (its extents); any other nbDims (-1 is
// "invalid") alone, as a one-element I64 array, so that the exact value replays.
inline constexpr size_t kMaxDims = sizeof(abi::Dims64::d) / sizeof(abi::Dims64::d[0]);  // the spec's Dims64
inline bool travelsAsDims(int64_t nbDims) { return nbDims >= 0 && static_cast<uint64_t>(nbDims) <= kMaxDims; }

// The byte grouping a blob of weights of this type compresses best with (none for others).
BlobHint blobHint(abi::DataType t);

// Whether weights of this type are a model's learned numbers: the floating types (FLOAT, HALF,
// BF16, FP8, FP4) and those the library defines as encodings of floating values (INT8 and INT4
// quantized weights, E8M0 block scales). The others (INT32, INT64, BOOL, and UINT8, which the
// library never reads as a quantized value) are the integers and truth values a network's
// shapes, axes, indices and masks are computed from: what a build's structure depends on. A value
// outside the enum counts as learned (a tool that hides weights then hides it too).
bool holdsLearnedValues(abi::DataType t);

// IEEE binary16. floatToHalf rounds to nearest, ties to even (the one rounding of the tree: exact
// for values that came from a half, and the closest half of any other); overflow gives infinity,
// NaN stays NaN.
uint16_t floatToHalf(double v);
double halfToDouble(uint16_t h);

// Stand-in values for weights whose values are not at hand, the same for the same seed: the
// player's for weights the capture marked random, trtrace strip's for the weights it replaces.
// `count` elements of type `t` into `out` (nothing past its end): FLOAT, HALF and BF16 uniform in
// [-1, 1) (HALF rounded by floatToHalf, BF16 the float's top half), INT32 and INT64 integers in
// [-7, 7], other types one byte in [0, 7] per element while bytes last.
void randomWeights(abi::DataType t, uint64_t count, uint64_t seed, std::span<std::byte> out);

// The serialized engine in an IHostMemory the library returned, through the object's V-pointer
// (level 0): no call on it is recorded or replayed.
struct EngineBytes {
  const void* data = nullptr;
  uint64_t size = 0;
};
EngineBytes engineBytes(abi::IHostMemory* engine);

// The engine of a streamed build (Builder::buildSerializedNetworkToStream) as the library writes
// it: the writer the library is handed, which counts each piece, hashes it (the XXH3-128
// engineBytes' bytes would give) and hands it on to `pass`, returning what `pass` returns. The
// shim's passes it to the application's writer, the player's to its engine file; nothing is held.
class EngineStreamWriter final : public abi::IStreamWriter {
 public:
  using Pass = std::function<int64_t(const void* data, int64_t nbytes)>;
  EngineStreamWriter(Pass pass, abi::APILanguage language) : pass_(std::move(pass)), language_(language) {}
  abi::APILanguage getAPILanguage() const noexcept override { return language_; }
  abi::InterfaceInfo getInterfaceInfo() const noexcept override { return {"IStreamWriter", 1, 0}; }
  int64_t write(const void* data, int64_t nbytes) override;
  uint64_t size() const { return hash_.bytes(); }
  Hash128 hash() const { return hash_.digest(); }

 private:
  Pass pass_;
  abi::APILanguage language_;
  StreamHash128 hash_;
};

// The trace's self-description: names and parameter names of every API id this build knows.
void describeApis(Writer& w);

}  // namespace trtrace::lib
