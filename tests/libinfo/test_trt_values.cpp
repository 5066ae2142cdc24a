// Facts written once in libinfo/ and used by shim, player and tools: the stand-in weights (the
// player's random weights and strip's), the error-keeping logger, the V-pointer of a public object.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "error_logger.h"
#include "trt_values.h"

namespace trtrace {  // its abi, not the abi namespace GoogleTest's headers name
using abi::DataType;

namespace {

std::vector<std::byte> standIn(DataType t, uint64_t count, uint64_t seed) {
  std::vector<std::byte> out(abi::weightBytes(t, int64_t(count)));
  lib::randomWeights(t, count, seed, out);
  return out;
}

template <class T>
T at(const std::vector<std::byte>& b, size_t k) {
  T v;
  std::memcpy(&v, b.data() + k * sizeof(T), sizeof(T));
  return v;
}

}  // namespace

// HALF stand-ins are the FLOAT ones of the same seed rounded to nearest (floatToHalf), not
// truncated; BF16 ones are their top halves.
TEST(RandomWeights, HalfRoundsTheFloatsOfTheSameSeed) {
  constexpr uint64_t n = 4096;
  const auto f = standIn(DataType::kFLOAT, n, 42), h = standIn(DataType::kHALF, n, 42),
             b = standIn(DataType::kBF16, n, 42);
  size_t roundedUp = 0;
  for (size_t k = 0; k < n; ++k) {
    const float x = at<float>(f, k);
    ASSERT_GE(x, -1.0f);
    ASSERT_LT(x, 1.0f);
    uint32_t bits;
    std::memcpy(&bits, &x, 4);
    ASSERT_EQ(at<uint16_t>(h, k), lib::floatToHalf(x)) << k;
    ASSERT_EQ(at<uint16_t>(b, k), uint16_t(bits >> 16)) << k;
    const uint16_t truncated =
        uint16_t(((bits >> 16) & 0x8000) | ((((bits >> 23) & 0xff) - 112) << 10) | ((bits >> 13) & 0x3ff));
    roundedUp += at<uint16_t>(h, k) != truncated;
  }
  EXPECT_GT(roundedUp, n / 4);  // about half the values round away from the truncated half
}

TEST(RandomWeights, SameSeedSameValuesOtherSeedOthers) {
  for (DataType t : {DataType::kFLOAT, DataType::kHALF, DataType::kBF16, DataType::kINT32, DataType::kINT64,
                     DataType::kINT8, DataType::kFP8, DataType::kINT4}) {
    EXPECT_EQ(standIn(t, 100, 7), standIn(t, 100, 7)) << int(t);
    EXPECT_NE(standIn(t, 100, 7), standIn(t, 100, 8)) << int(t);
  }
}

TEST(RandomWeights, IntegersAreSmallAndNothingIsWrittenPastTheEnd) {
  const auto i = standIn(DataType::kINT32, 1000, 3);
  for (size_t k = 0; k < 1000; ++k) EXPECT_LE(std::abs(at<int32_t>(i, k)), 7);
  // INT4: two elements a byte; the bytes there are are written, nothing after them.
  std::vector<std::byte> packed(5 + 8, std::byte{0xAB});
  lib::randomWeights(DataType::kINT4, 10, 1, std::span<std::byte>(packed.data(), 5));
  for (size_t k = 5; k < packed.size(); ++k) EXPECT_EQ(packed[k], std::byte{0xAB});
  std::vector<std::byte> floats(3 * 4 + 4, std::byte{0xCD});  // room for 3 of the 4 floats asked for
  lib::randomWeights(DataType::kFLOAT, 4, 1, std::span<std::byte>(floats.data(), 3 * 4 + 2));
  EXPECT_EQ(floats[12], std::byte{0xCD});
}

namespace {
struct Recorder final : lib::ErrorKeepingLogger {
  abi::APILanguage getAPILanguage() const noexcept override { return abi::APILanguage::kCPP; }
  abi::InterfaceInfo getInterfaceInfo() const noexcept override { return {"ILogger", 1, 0}; }
  std::vector<std::pair<abi::Severity, std::string>> passed;
  void pass(abi::Severity s, const char* msg) noexcept override { passed.emplace_back(s, msg ? msg : "(null)"); }
};
}  // namespace

TEST(ErrorKeepingLogger, KeepsErrorsAndPassesEverything) {
  Recorder r;
  r.log(abi::Severity::kWARNING, "w");
  r.log(abi::Severity::kERROR, "e1");
  r.log(abi::Severity::kINTERNAL_ERROR, "e2");
  r.log(abi::Severity::kERROR, nullptr);
  r.log(abi::Severity::kINFO, "i");
  EXPECT_EQ(r.passed.size(), 5u);
  EXPECT_EQ(r.takeErrors(), (std::vector<std::string>{"e1", "e2"}));
  EXPECT_TRUE(r.takeErrors().empty());  // taken: the next build starts with none
}

TEST(ErrorKeepingLogger, KeepsAtMostTheFirst64) {
  Recorder r;
  for (int i = 0; i < 1000; ++i) r.log(abi::Severity::kERROR, std::to_string(i).c_str());
  const auto e = r.takeErrors();
  ASSERT_EQ(e.size(), lib::ErrorKeepingLogger::kMaxErrors);
  EXPECT_EQ(e.front(), "0");
  EXPECT_EQ(e.back(), "63");
  EXPECT_EQ(r.passed.size(), 1000u);
}

// The public layout {vptr, V-pointer per level}: level L's V-pointer is the pointer after L + 1 others.
TEST(VPointer, FieldOnePlusLevel) {
  int a, b, c;
  void* object[] = {&c, &a, &b};
  EXPECT_EQ(abi::vpointer(object, 0), &a);
  EXPECT_EQ(abi::vpointer(object, 1), &b);
}

}  // namespace trtrace
