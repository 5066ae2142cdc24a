// How the library's values become trace values (trt_values.h).
#include "trt_values.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

#include "trtrace/api_table.h"

namespace trtrace::lib {

BlobHint blobHint(abi::DataType t) {
  switch (t) {
    case abi::DataType::kFLOAT: return BlobHint::F32;
    case abi::DataType::kHALF: return BlobHint::F16;
    case abi::DataType::kBF16: return BlobHint::BF16;
    default: return BlobHint::None;
  }
}

bool holdsLearnedValues(abi::DataType t) {
  switch (t) {  // every enumerator, so that a type a new spec adds is a compile warning here
    case abi::DataType::kINT32:
    case abi::DataType::kINT64:
    case abi::DataType::kBOOL:
    case abi::DataType::kUINT8: return false;
    case abi::DataType::kFLOAT:
    case abi::DataType::kHALF:
    case abi::DataType::kBF16:
    case abi::DataType::kFP8:
    case abi::DataType::kFP4:
    case abi::DataType::kINT8:
    case abi::DataType::kINT4:
    case abi::DataType::kE8M0: return true;
  }
  return true;
}

uint16_t floatToHalf(double d) {
  float f = static_cast<float>(d);  // exact for values that came from a half
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t absx = x & 0x7fffffff;
  if (absx >= 0x7f800000) return sign | (absx > 0x7f800000 ? 0x7e00 : 0x7c00);  // NaN / Inf
  if (absx >= 0x477ff000) return sign | 0x7c00;                                 // overflow -> Inf
  if (absx < 0x38800000) {                                                      // subnormal half
    // value * 2^24 rounded to nearest even gives the subnormal mantissa.
    float a;
    std::memcpy(&a, &absx, 4);
    double m = std::nearbyint(static_cast<double>(a) * 16777216.0);
    return sign | static_cast<uint16_t>(m);
  }
  uint32_t e = ((absx >> 23) - 127 + 15) << 10;
  uint32_t m = absx & 0x7fffff;
  uint32_t h = e | (m >> 13);
  uint32_t rest = m & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return sign | static_cast<uint16_t>(h);
}

double halfToDouble(uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v;
  if (e == 0)
    v = std::ldexp(m, -24);
  else if (e == 31)
    v = m ? std::nan("") : INFINITY;
  else
    v = std::ldexp(m + 1024, e - 25);
  return s ? -v : v;
}

namespace {
template <class T>
void put(std::span<std::byte> out, uint64_t k, T v) {
  if ((k + 1) * sizeof(T) <= out.size()) std::memcpy(out.data() + k * sizeof(T), &v, sizeof(T));
}
}  // namespace

void randomWeights(abi::DataType t, uint64_t count, uint64_t seed, std::span<std::byte> out) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  for (uint64_t k = 0; k < count; ++k) {
    const float f = uni(rng);
    uint32_t x;
    std::memcpy(&x, &f, 4);
    switch (t) {
      case abi::DataType::kFLOAT: put(out, k, f); break;
      case abi::DataType::kHALF: put(out, k, floatToHalf(f)); break;
      case abi::DataType::kBF16: put(out, k, static_cast<uint16_t>(x >> 16)); break;
      case abi::DataType::kINT32: put(out, k, static_cast<int32_t>(f * 8)); break;
      case abi::DataType::kINT64: put(out, k, static_cast<int64_t>(f * 8)); break;
      default: put(out, k, static_cast<uint8_t>(rng() & 0x7));
    }
  }
}

void describeApis(Writer& w) {
  uint32_t n = 0;
  const api::ApiDesc* all = api::all(&n);
  for (uint32_t i = 0; i < n; ++i) {
    std::vector<std::string_view> names(all[i].args, all[i].args + all[i].nargs);
    w.describeApi(all[i].id, all[i].interface, all[i].method, names);
  }
}

EngineBytes engineBytes(abi::IHostMemory* engine) {
  auto* hm = static_cast<abi::VHostMemory*>(abi::vpointer(engine, 0));
  return {hm->data(), hm->size()};
}

// What the library writes is hashed as given, whatever `pass` takes of it: the engine is what the
// library produced (an application writer that refuses bytes is the app's affair, as without us).
int64_t EngineStreamWriter::write(const void* data, int64_t nbytes) {
  if (data && nbytes > 0) hash_.update(data, static_cast<uint64_t>(nbytes));
  return pass_(data, nbytes);
}

}  // namespace trtrace::lib
