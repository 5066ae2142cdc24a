// libFuzzer target: the trace reader (Reader::open, both the footer path and the forward scan,
// every view, blob reads, verify()) on arbitrary bytes.
//
// Each input is read twice: as it is (exercising the magic/version/checksum gates) and after
// fz::fixChecks, which recomputes the file header check and every block's checks, so that mutations
// of a seed trace get past the checksums into the FlatBuffers Verifier, the footer index, the
// blob records and the decoder.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "internal.h"

namespace F = trtrace::format;

namespace {

void readOne(fz::MemFile& f, const uint8_t* data, size_t size) {
  std::unique_ptr<trtrace::Reader> r;
  try {
    r = trtrace::Reader::open(f.set(data, size));
  } catch (const trtrace::Error&) {
    return;  // refused with one line: bad magic, other major version, bad header check
  }
  fz::exercise(*r);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fz::MemFile f("fuzz_trace");
  readOne(f, data, size);
  std::vector<uint8_t> fixed(data, data + size);
  fz::fixChecks(fixed);
  if (fixed.size() >= sizeof(F::FileHeader) && std::memcmp(fixed.data(), data, size) != 0)
    readOne(f, fixed.data(), fixed.size());
  return 0;
}
