// libFuzzer target: the NVIDIA JSON+BIN reader (trtrace::convert::jsonToTrace).
// Input: the JSON text, a NUL byte, then the BIN bytes (no NUL: an empty BIN). The harness
// writes <dir>/capture.json and <dir>/capture.bin on tmpfs and converts them to a trace, which is
// then read back completely: a conversion either succeeds with a sound trace or throws
// trtrace::Error, and leaves no output behind on failure.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "fuzz_util.h"
#include "trtrace/convert.h"

namespace {

struct Dir {
  std::string dir, json, bin, trace;
  Dir() {
    const char* base = std::getenv("TRTRACE_FUZZ_TMP");
    dir = std::string(base && *base ? base : "/dev/shm") + "/trtrace_fuzz_json." + std::to_string(::getpid());
    ::mkdir(dir.c_str(), 0700);
    json = dir + "/capture.json";
    bin = dir + "/capture.bin";
    trace = dir + "/out.trtrace";
  }
};

void put(const std::string& path, const uint8_t* p, size_t n) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (n && std::fwrite(p, 1, n, f) != n) std::abort();
  std::fclose(f);
}

bool exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Dir d;
  const uint8_t* nul = static_cast<const uint8_t*>(std::memchr(data, 0, size));
  size_t jsonN = nul ? size_t(nul - data) : size;
  put(d.json, data, jsonN);
  put(d.bin, nul ? nul + 1 : data, nul ? size - jsonN - 1 : 0);
  ::unlink(d.trace.c_str());
  trtrace::convert::JsonToTraceOptions o;
  o.zstdLevel = 1;
  o.workerThreads = 0;
  bool ok = false;
  try {
    trtrace::convert::jsonToTrace(d.json, d.trace, o);
    ok = true;
  } catch (const trtrace::Error&) {}
  if (!ok) {
    if (exists(d.trace)) std::abort();  // a failed conversion leaves no output behind
    return 0;
  }
  // A successful conversion is a sound, closed trace.
  auto r = trtrace::Reader::open(d.trace);
  if (!r->closedCleanly()) std::abort();
  auto rep = r->verify();
  if (!rep.ok()) {
    std::fprintf(stderr, "converted trace does not verify: %s\n", rep.issues[0].what.c_str());
    std::abort();
  }
  fz::exercise(*r);
  return 0;
}
