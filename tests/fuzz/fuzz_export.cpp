// libFuzzer target: `trtrace export --python` (cli/export_python.cpp, the command's own code path),
// into a private temporary folder. Each input is exported three ways: as a trace, as it is and
// after fz::fixChecks (checksums recomputed, so mutations of a real capture reach the calls), under
// a trace name chosen from hostile ones; and as the strings of a well-formed trace (names set and
// read back, the trace's own name), which reach the script unless a name is not UTF-8 (most
// mutated traces stop at a call the bindings cannot express before any string is written).
//
// The export may refuse a trace (trtrace::Error, or Inexpressible: one line), but whatever build.py
// it writes must pass fz::checkScript: printable ASCII, the generator's fixed parts, and only
// statements of the generator's shapes with every trace-derived string an escaped literal -- a
// subset of Python, so the script parses. Any other exception, a crash or a sanitizer report is a
// finding. FUZZ_EXPORT_AST=1 also hands every accepted script to `python3 -c ast.parse` (slow: to
// confirm that the check accepts only what Python parses, not for run.sh's short runs).
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "export_python.h"
#include "fuzz_util.h"
#include "py_script_check.h"
#include "trtrace/api_table.h"
#include "trtrace/writer.h"

namespace {

namespace ex = trtrace::cli;

size_t checked = 0;  // scripts written and checked (printed at exit: the fuzzer reaches the check)

// A private folder for the outputs, removed at exit (libFuzzer leaves through exit()).
const std::string& workDir() {
  static const std::string& d = *[] {
    const char* t = std::getenv("TMPDIR");
    auto* p = new std::string(std::string(t && *t ? t : "/tmp") + "/fuzz_export-XXXXXX");  // lives past exit handlers
    if (!mkdtemp(p->data())) std::abort();
    std::atexit([] {
      std::error_code e;
      std::filesystem::remove_all(workDir(), e);
      std::fprintf(stderr, "fuzz_export: %zu build.py checked\n", checked);
    });
    return p;
  }();
  return d;
}

// The weights the export would write stay within the fuzzer's memory limit.
bool smallWeights(const trtrace::Reader& r) {
  bool small = true;
  try {
    r.forEachCall([&](const trtrace::CallView& c) {
      for (size_t i = 0; i < c.argCount() && small; ++i) {
        const auto v = c.arg(i);
        small = v.kind() != trtrace::ValueKind::WeightsBlob || v.blob().length <= (16u << 20);
      }
      return small;
    });
  } catch (const trtrace::Error&) {}
  return small;
}

void astParse(const std::string& script) {
  if (!std::getenv("FUZZ_EXPORT_AST")) return;
  const std::string cmd = "python3 -c 'import ast,sys; ast.parse(open(sys.argv[1],\"rb\").read())' '" + script + "'";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "fuzz_export: the check accepted a build.py that Python does not parse\n");
    std::abort();
  }
}

void check(const std::string& dir) {
  std::ifstream f(dir + "/build.py", std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  const std::string why = fz::checkScript(text, ex::kScriptPrelude, ex::kScriptEnd);
  if (!why.empty()) {
    std::fprintf(stderr, "fuzz_export: build.py %s\n", why.c_str());
    std::abort();
  }
  astParse(dir + "/build.py");
  ++checked;
}

// Exports `r` (named `source`) into the work folder and checks the script; false if refused.
bool exportAndCheck(const trtrace::Reader& r, const std::string& source) {
  const std::string dir = workDir() + "/out";
  std::filesystem::remove_all(dir);
  try {
    ex::exportPython(r, source, dir);
  } catch (const ex::Inexpressible&) { return false; } catch (const trtrace::Error&) {
    return false;
  }
  check(dir);
  std::filesystem::remove_all(dir);
  return true;
}

void exportOne(fz::MemFile& f, const uint8_t* data, size_t size) {
  static const char* const sources[] = {"capture.trtrace", "a\"\"\"\nimport os\n#\\", "\xff\xfe\x01\r\x1b[2J",
                                        "caf\xc3\xa9 \xe2\x80\xa8.trtrace"};
  std::unique_ptr<trtrace::Reader> r;
  try {
    r = trtrace::Reader::open(f.set(data, size));
  } catch (const trtrace::Error&) {
    return;  // refused with one line by the reader
  }
  if (r->truncatedAt() || !smallWeights(*r)) return;  // the command refuses a truncated trace
  exportAndCheck(*r, sources[size % 4]);
}

bool utf8(std::string_view s) {
  bool ok = true;
  ex::pyEscape(s, &ok);
  return ok;
}

// The input's bytes as the strings of a well-formed trace (split at '\0'): an input tensor's and a
// layer's names, a name read back, and the trace's own name. Every such trace reaches the script,
// unless a name the bindings are handed is not UTF-8.
void exportNames(const uint8_t* data, size_t size) {
  namespace api = trtrace::api;
  std::string s[4];
  for (size_t i = 0, k = 0; i < size; ++i) {
    if (data[i] == 0 && k < 3)
      ++k;
    else
      s[k] += char(data[i]);
  }
  trtrace::WriterOptions o;
  o.path = workDir() + "/names.trtrace";  // a new file each time: a writer never overwrites a trace
  std::filesystem::remove(o.path);
  o.workerThreads = 0;
  auto w = trtrace::Writer::create(o, trtrace::HeaderInfo{});
  w->beginCall(api::kentry_createInferBuilder_INTERNAL, 0, 0).argBool(true).argI64(0).retHandle(1).endCall();
  w->beginCall(api::kBuilder_createNetworkV2, 1, 0).argU64(0).retHandle(2).endCall();
  const int64_t dims[] = {1, 4};
  w->beginCall(api::kNetworkDefinition_addInput, 2, 1)
      .argString(s[0])
      .argEnum(api::kEnumDataType, 0)
      .argDims(dims)
      .retHandle(3)
      .endCall();
  w->beginCall(api::kNetworkDefinition_addActivation, 2, 1)
      .argHandle(3)
      .argEnum(api::kEnumActivationType, 0)
      .retHandle(4)
      .endCall();
  w->beginCall(api::kLayer_setName, 4, 1).argString(s[1]).retHandle(9).endCall();  // results where the
  w->beginCall(api::kTensor_getName, 3, 1).retString(s[2]).endCall();              // spec has none: not
  w->beginCall(api::kNetworkDefinition_destroy, 2, 1).retHandle(10).endCall();     // bound (x = del y)
  w->close();
  w.reset();
  const auto r = trtrace::Reader::open(o.path);
  if (!exportAndCheck(*r, s[3]) && utf8(s[0]) && utf8(s[1])) {
    std::fprintf(stderr, "fuzz_export: a trace whose names are UTF-8 was refused\n");
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fz::MemFile f("fuzz_export");
  exportNames(data, size);
  exportOne(f, data, size);
  std::vector<uint8_t> fixed(data, data + size);
  fz::fixChecks(fixed);
  if (size != 0 && std::memcmp(fixed.data(), data, size) != 0) exportOne(f, fixed.data(), fixed.size());
  return 0;
}
