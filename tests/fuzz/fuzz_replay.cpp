// libFuzzer target: the player's replay (replay/Replayer, the generated dispatch and the hand-written
// overrides) of crafted traces, against the REAL TensorRT-RTX library loaded once in this process
// ($TRTRACE_TRT_LIB; without it every input is skipped). Beyond the readers, this covers what the
// player hands the library: object handles and their interfaces, null references, deletions,
// integer ranges, Dims, weights counts and the memory they claim.
//
// Each input is replayed as it is and after fz::fixChecks (checksums recomputed, so mutations of a
// real capture reach the calls). Only trtrace::Error and replay::Divergence may come out; a crash,
// an abort or a sanitizer report is a finding.
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fuzz_util.h"
#include "replayer.h"

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
    trtrace::replay::Replayer player(*r, o, createBuilderFn());
    player.run(nullptr);
  } catch (const trtrace::replay::Divergence&) {
  } catch (const trtrace::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fz::MemFile f("fuzz_replay");
  if (!createBuilderFn()) return 0;
  replayOne(f, data, size);
  std::vector<uint8_t> fixed(data, data + size);
  fz::fixChecks(fixed);
  if (size != 0 && std::memcmp(fixed.data(), data, size) != 0) replayOne(f, fixed.data(), fixed.size());
  return 0;
}
