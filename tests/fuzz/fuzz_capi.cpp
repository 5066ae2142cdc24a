// libFuzzer target: the C interface the Python API reads traces through (trace/capi/trtrace_c.h,
// loaded by python/trtrace via ctypes), on arbitrary bytes and on mutated traces (fz::fixChecks).
//
// It makes the calls `trtrace.open`, `Trace.calls`, `Weights.array()` and `Trace.verify()` make:
// open, the header, the calls in the batches Python asks for, every blob a call names, verify.
// Properties checked beyond "no crash, no leak": every JSON the interface returns parses (Python
// would otherwise raise a bare JSONDecodeError), a refusal always comes with its one-line message,
// and a blob is handed out with exactly the length its call named.
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "fuzz_util.h"
#include "trtrace_c.h"

namespace {

simdjson::dom::parser& parser() {
  static simdjson::dom::parser p;
  return p;
}

// The document as Python's json.loads reads it, for a strict parser: NaN, Infinity and -Infinity
// (which the interface writes for non-finite floats, as json.dumps does) outside strings become 0.
std::string strictJson(std::string_view s) {
  std::string o;
  bool inString = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (inString) {
      o += c;
      if (c == '\\' && i + 1 < s.size())
        o += s[++i];
      else if (c == '"')
        inString = false;
      continue;
    }
    inString = c == '"';
    for (std::string_view w : {"-Infinity", "Infinity", "NaN"})
      if (s.substr(i, w.size()) == w) {
        o += '0';
        i += w.size();
        break;
      }
    if (i < s.size()) o += s[i];
  }
  return o;
}

// A returned string: it must parse as JSON; freed here. A null result must carry its message.
simdjson::dom::element take(char* s, char* err) {
  if (!s) {
    if (!err) std::abort();  // a refusal without its line
    trtrace_free(err);
    return {};
  }
  simdjson::dom::element e;
  const std::string strict = strictJson(s);
  if (parser().parse(strict).get(e) != simdjson::SUCCESS) {  // Python's json.loads would raise
    std::fprintf(stderr, "fuzz_capi: the C interface returned what is not JSON: %s\n", s);
    std::abort();
  }
  trtrace_free(s);
  return e;
}

// Every blob a call of this batch names (WeightsBlob values: hash_hi, hash_lo, length).
void readBlobs(const trtrace_reader* r, simdjson::dom::element calls) {
  simdjson::dom::array list;
  if (calls.get(list) != simdjson::SUCCESS) return;
  for (simdjson::dom::element call : list) {
    simdjson::dom::array args;
    if (call["args"].get(args) != simdjson::SUCCESS) continue;
    for (simdjson::dom::element v : args) {
      uint64_t hi = 0, lo = 0, len = 0;
      if (v["hash_hi"].get(hi) || v["hash_lo"].get(lo) || v["length"].get(len)) continue;
      const void* data = nullptr;
      uint64_t size = 0;
      void* owner = nullptr;
      char* err = nullptr;
      int kind = 0;
      if (trtrace_blob(r, hi, lo, len, &data, &size, &owner, &err, &kind) == 0) {
        if (size != len) std::abort();  // NumPy would see another length than the call's
        if (size) fz::sink = fz::sink + static_cast<const uint8_t*>(data)[size - 1];
        if (owner) trtrace_blob_release(owner);
      } else {
        if (!err) std::abort();
        trtrace_free(err);
      }
    }
  }
}

void readAll(const std::string& path) {
  char* err = nullptr;
  int kind = 0;
  trtrace_reader* r = trtrace_open(path.c_str(), &err, &kind);
  if (!r) {
    take(nullptr, err);
    return;
  }
  simdjson::dom::element header = take(trtrace_header_json(r, &err, &kind), err);
  uint64_t calls = 0;
  if (header["calls"].get(calls) != simdjson::SUCCESS) calls = 0;
  constexpr uint64_t kBatch = 64;  // Python reads 4,096 at a time; smaller batches reach every seq here
  for (uint64_t lo = 0; lo < calls && lo < 4096; lo += kBatch) {
    err = nullptr;
    char* s = trtrace_calls_json(r, lo, lo + kBatch, &err, &kind);
    if (!s) {
      take(nullptr, err);
      break;
    }
    readBlobs(r, take(s, nullptr));
  }
  err = nullptr;
  take(trtrace_verify_json(r, &err, &kind), err);
  trtrace_close(r);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fz::MemFile f("fuzz_capi");
  readAll(f.set(data, size));
  std::vector<uint8_t> fixed(data, data + size);
  fz::fixChecks(fixed);
  if (size && std::memcmp(fixed.data(), data, size) != 0) readAll(f.set(fixed.data(), fixed.size()));
  return 0;
}
