// Helpers shared by the writer, the reader and the CLI (not part of the public API).
#pragma once
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "trace_generated.h"
#include "trtrace/error.h"
#include "trtrace/format.h"
#include "trtrace/quiet_thread.h"

namespace trtrace::detail {

// Low 32 bits of XXH3-64: the checksum of headers and FlatBuffer payloads.
uint32_t check32(const void* data, size_t bytes);
// FileHeader / BlockHeader with their check field computed.
format::FileHeader makeFileHeader(uint64_t fileLength, uint64_t footerOffset);
uint32_t fileHeaderCheck(const format::FileHeader& h);
format::BlockHeader makeBlockHeader(format::BlockType type, uint64_t payloadSize, uint64_t checkedSize,
                                    uint32_t payloadCheck, uint16_t flags = 0);
uint32_t blockHeaderCheck(const format::BlockHeader& h);

// Byte grouping (ZipNN-style): n bytes of k-byte elements -> all byte 0s, then all byte 1s, ...
void byteGroup(const std::byte* src, std::byte* dst, size_t n, unsigned k);
void byteUngroup(const std::byte* src, std::byte* dst, size_t n, unsigned k);
// Elements [first, first + count) of a grouped run of m elements of k bytes (k planes of m bytes),
// interleaved into dst (count * k bytes): a grouped chunk undone a piece at a time.
void byteUngroupRange(const std::byte* src, std::byte* dst, size_t m, unsigned k, size_t first, size_t count);
unsigned transformElementSize(format::BlobTransform t);  // 1 for None

std::string errnoText();

// Takes `l`'s mutex, spinning up to ~20 us before sleeping on it: for the application's thread, whose
// lock of a queue the workers hold for microseconds at a time would otherwise sleep in the kernel,
// and wait for a worker's wake-up call, an inter-processor interrupt away (calls-20k: ~50 such
// sleeps of ~50 us per capture).
inline void lockSoon(std::unique_lock<std::mutex>& l) {
  for (int i = 0; i < 1024; ++i) {
    if (l.try_lock()) return;
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  }
  l.lock();
}
// A FlatBuffers string as a view (empty when absent).
inline std::string_view sv(const flatbuffers::String* s) {
  return s ? std::string_view(s->c_str(), s->size()) : std::string_view();
}
const char* blockTypeName(uint16_t type);

}  // namespace trtrace::detail
