// libFuzzer target: the blob decoder. The input is the payload of one blob block
// (BlobRecord | ChunkEntry[] | padding | data); the harness frames it as a valid, unclosed trace
// (file header, header block, the blob block with correct checks) so every input reaches the
// record/chunk-table checks and the zstd + byte-grouping decoder, through Reader::blob() and
// Reader::verify().
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "internal.h"

namespace F = trtrace::format;

namespace {}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fz::MemFile f("fuzz_blob");
  const auto& pre = fz::blobPrefix();
  if (size < sizeof(F::BlobRecord)) return 0;
  F::BlobRecord rec;
  std::memcpy(&rec, data, sizeof rec);
  // The checked part is the record and its chunk table (what the writer covers with the check).
  uint64_t checked = sizeof rec + uint64_t(rec.chunkCount) * sizeof(F::ChunkEntry);
  if (checked > size) checked = size;
  std::vector<uint8_t> file(pre);
  const uint64_t at = file.size();
  // Raw blob data must be 4 KiB aligned in the file: the seeds keep that, shifted by the prefix.
  auto h = trtrace::detail::makeBlockHeader(F::BlockType::Blob, size, checked, trtrace::detail::check32(data, checked));
  file.resize(at + sizeof h);
  std::memcpy(file.data() + at, &h, sizeof h);
  file.insert(file.end(), data, data + size);
  file.resize(F::alignUp(file.size(), F::kBlockAlign));
  std::unique_ptr<trtrace::Reader> r;
  try {
    r = trtrace::Reader::open(f.set(file.data(), file.size()));
  } catch (const trtrace::Error&) {
    std::abort();  // the framing is valid: open must not refuse it
  }
  fz::exercise(*r);
  return 0;
}
