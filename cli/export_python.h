// trtrace export --python: a trace as a standalone Python script (build.py + weights/*.npy) that
// rebuilds the same engine(s) with the tensorrt_rtx bindings. The command (cmd_export.cpp) and the
// export fuzzer (tests/fuzz/fuzz_export.cpp) share this code path.
//
// build.py is code a person runs, and a trace is hostile input: every byte that comes from the
// trace (names, strings read back, the trace's own path) reaches the script only through pyEscape,
// inside a string literal or a whole-line comment, as printable ASCII. Everything else in the
// script (statement shapes, variable names, attribute names, enumerators) comes from the generator
// and the spec.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "trtrace/reader.h"

namespace trtrace::cli {

// A call the Python API cannot express: "<trace>: call #N (Interface::method): cannot be written
// with the tensorrt_rtx Python API (why)". Nothing is written.
struct Inexpressible : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The body of a Python string literal (without its quotes) holding `s`, in printable ASCII: '"' and
// '\' escaped, control bytes as \xNN, valid UTF-8 beyond ASCII as \uNNNN / \UNNNNNNNN. A byte that
// is not part of valid UTF-8 is written \xNN and clears *utf8 (when given): Python has no str that
// the bindings would pass on as that byte.
std::string pyEscape(std::string_view s, bool* utf8 = nullptr);

// The fixed text of every build.py: the part after the docstring and before the calls, and the end.
extern const std::string_view kScriptPrelude;
extern const std::string_view kScriptEnd;

struct ExportResult {
  size_t statements = 0, weightsFiles = 0;
  uint64_t weightBytes = 0;
};

// Writes DIR/build.py and DIR/weights/*.npy for every call of `r` (DIR new or empty; it appears
// complete or not at all). `source` names the trace in the script's docstring. Throws
// Inexpressible for a call the bindings cannot express, Error for the rest.
ExportResult exportPython(const Reader& r, const std::string& source, const std::string& dir);

}  // namespace trtrace::cli
