// libFuzzer target: the trace reader (Reader::open, both the footer path and the forward scan,
// every view, blob reads, verify()) on arbitrary bytes.
//
// Each input is read twice: as it is (exercising the magic/version/checksum gates) and after
// "fixup", which recomputes the file header check and every block's checks, so that mutations
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

void fixup(std::vector<uint8_t>& b) {
  if (b.size() < sizeof(F::FileHeader)) return;
  F::FileHeader fh;
  std::memcpy(&fh, b.data(), sizeof fh);
  fh.headerCheck = trtrace::detail::fileHeaderCheck(fh);
  std::memcpy(b.data(), &fh, sizeof fh);
  uint64_t pos = sizeof fh;
  while (pos + sizeof(F::BlockHeader) <= b.size()) {
    F::BlockHeader h;
    std::memcpy(&h, b.data() + pos, sizeof h);
    if (h.magic != F::kBlockMagic) break;
    uint64_t avail = b.size() - pos - sizeof h;
    if (h.payloadSize <= avail && h.checkedSize <= h.payloadSize)
      h.payloadCheck = trtrace::detail::check32(b.data() + pos + sizeof h, h.checkedSize);
    h.headerCheck = trtrace::detail::blockHeaderCheck(h);
    std::memcpy(b.data() + pos, &h, sizeof h);
    if (h.payloadSize > avail) break;
    pos = F::alignUp(pos + sizeof h + h.payloadSize, F::kBlockAlign);
  }
}

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
  fixup(fixed);
  if (fixed.size() >= sizeof(F::FileHeader) && std::memcmp(fixed.data(), data, size) != 0)
    readOne(f, fixed.data(), fixed.size());
  return 0;
}
