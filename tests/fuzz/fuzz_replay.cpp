// libFuzzer target: the player's replay (replay/Replayer, the generated dispatch and the hand-written
// overrides) of crafted traces, against the REAL TensorRT-RTX library loaded once in this process
// ($TRTRACE_TRT_LIB; without it every input is skipped). Beyond the readers, this covers what the
// player hands the library: object handles and their interfaces, null references, deletions,
// integer ranges, Dims, weights counts and the memory they claim, and array/count pairs: the
// mutator below rewrites, in a raw call log, the count of a call's array or the array's length
// (which parameter counts which array is api::ParamDesc::lengthOf), so that the spec's check
// (trtrace/call_check.h) is what stands between the library and a read past the array. Seeds:
// fuzz_seedgen writes one trace per pair of the spec.
//
// Each input is replayed as it is and after fz::fixChecks (checksums recomputed, so mutations of a
// real capture reach the calls). Only trtrace::Error and replay::Divergence may come out; a crash,
// an abort or a sanitizer report is a finding.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "block_file.h"
#include "fuzz_util.h"
#include "replayer.h"

// libFuzzer's own mutation (absent in the plain build, which never mutates).
extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize) __attribute__((weak));

namespace {

void* createBuilderFn() {
  static void* fn = [] {
    const char* lib = std::getenv("TRTRACE_TRT_LIB");
    void* h = lib && *lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : nullptr;
    if (!h) std::fprintf(stderr, "fuzz_replay: TRTRACE_TRT_LIB not loadable: inputs are skipped\n");
    return h ? dlsym(h, "createInferBuilder_INTERNAL") : nullptr;
  }();
  return fn;
}

void replayOne(fz::MemFile& f, const uint8_t* data, size_t size) {
  std::unique_ptr<trtrace::Reader> r;
  try {
    r = trtrace::Reader::open(f.set(data, size));
  } catch (const trtrace::Error&) {
    return;  // refused with one line by the reader
  }
  trtrace::replay::Options o;
  o.quiet = true;
  o.skipUnsupported = true;
  o.maxRandomBytes = 64u << 20;  // the cap the player enforces, lowered to stay inside -rss_limit_mb
  try {
    trtrace::replay::WeightsSource weights(*r);
    trtrace::replay::Replayer player(*r, weights, o, createBuilderFn());
    player.run(nullptr);
  } catch (const trtrace::replay::Divergence&) {
  } catch (const trtrace::Error&) {}
}

namespace fb = trtrace::fb;
namespace F = trtrace::format;

// Where a call's count and the array it counts lie in the buffer (both in a raw segment).
// Written with memcpy: FlatBuffers aligns a nested buffer's scalars only within it.
struct Pair {
  uint8_t* count;   // the count's recorded int64 (absent when 0: FlatBuffers leaves defaults out)
  uint8_t* length;  // the array's uint32 element count (absent when the array is null)
  uint32_t elements;
};

uint8_t* field(const void* table, uint16_t vt) {  // a present scalar field of a table, writable
  return const_cast<uint8_t*>(reinterpret_cast<const flatbuffers::Table*>(table)->GetAddressOf(vt));
}

uint8_t* lengthOf(const fb::Value* v) {  // the length word of the array an argument holds
  const flatbuffers::Vector<uint8_t>* vec =
      v->handles()  ? reinterpret_cast<const flatbuffers::Vector<uint8_t>*>(v->handles())
      : v->ints()   ? reinterpret_cast<const flatbuffers::Vector<uint8_t>*>(v->ints())
      : v->floats() ? reinterpret_cast<const flatbuffers::Vector<uint8_t>*>(v->floats())
                    : v->bytes();
  return vec ? const_cast<uint8_t*>(reinterpret_cast<const uint8_t*>(vec)) : nullptr;
}

void pairsOf(const fb::Call& c, std::vector<Pair>& out) {
  const trtrace::api::ApiDesc* d = trtrace::api::find(c.api());
  if (!d || !c.args()) return;
  for (uint32_t i = 0; i < d->nargs && i < c.args()->size(); ++i) {
    const auto a = static_cast<uint32_t>(d->params[i].lengthOf);
    if (d->params[i].lengthOf < 0 || a >= c.args()->size()) continue;
    uint8_t* len = lengthOf(c.args()->Get(a));
    uint32_t n = 0;
    if (len) std::memcpy(&n, len, sizeof n);
    out.push_back({field(c.args()->Get(i), fb::Value::VT_I), len, n});
  }
}

// Every pair of the calls in the data's raw (uncompressed, verified) segments.
std::vector<Pair> findPairs(std::vector<uint8_t>& b) {
  std::vector<Pair> out;
  const auto* base = reinterpret_cast<const std::byte*>(b.data());
  uint64_t pos = sizeof(F::FileHeader);
  while (b.size() >= sizeof(F::FileHeader) && pos < b.size()) {
    auto bc = trtrace::detail::checkBlock(base, b.size(), pos);
    if (bc.status != trtrace::detail::BlockCheck::Ok) break;
    if (bc.h.type == uint16_t(F::BlockType::Segment) && !bc.inflated)
      if (auto* calls = flatbuffers::GetRoot<fb::Segment>(bc.fbuf)->calls())
        for (auto* rec : *calls)
          if (const fb::Call* c = rec->call() ? rec->call_nested_root() : nullptr) pairsOf(*c, out);
    pos = bc.next;
  }
  return out;
}

// One pair made to disagree: the count off by one, negative, large or random, or the array cut.
bool breakPair(const Pair& p, std::mt19937_64& rng) {
  const int64_t n = p.elements;
  const int64_t counts[] = {n + 1, n - 1, -1, 2 * n + 1, 64, INT32_MAX, int64_t(rng() % 1024)};
  if (p.length && p.elements > 0 && (!p.count || rng() % 2)) {
    const auto shorter = static_cast<uint32_t>(rng() % p.elements);  // still inside the buffer
    std::memcpy(p.length, &shorter, sizeof shorter);
    return true;
  }
  if (!p.count) return false;
  std::memcpy(p.count, &counts[rng() % std::size(counts)], sizeof(int64_t));
  return true;
}

}  // namespace

// Half the time on an input with array/count pairs, one of them is broken (checksums made right
// again, so that the call reaches the player); otherwise libFuzzer's own mutations.
extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize, unsigned int seed) {
  std::mt19937_64 rng(seed);
  if (rng() % 2) {
    std::vector<uint8_t> b(data, data + size);
    std::vector<Pair> pairs = findPairs(b);
    if (!pairs.empty() && breakPair(pairs[rng() % pairs.size()], rng)) {
      fz::fixChecks(b);
      std::memcpy(data, b.data(), size);
      return size;
    }
  }
  return LLVMFuzzerMutate ? LLVMFuzzerMutate(data, size, maxSize) : size;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fz::MemFile f("fuzz_replay");
  if (!createBuilderFn()) return 0;
  replayOne(f, data, size);
  std::vector<uint8_t> fixed(data, data + size);
  fz::fixChecks(fixed);
  if (size != 0 && std::memcmp(fixed.data(), data, size) != 0) replayOne(f, fixed.data(), fixed.size());
  return 0;
}
