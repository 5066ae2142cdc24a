// The real TensorRT-RTX library as the shim and the player see it: which version a loaded library
// is (getInferLibVersion + getInferLibBuildVersion, the ELF build id of its file), whether the API
// spec describes that version, and where to find a library file (the shared discovery order).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trtrace/api_abi.h"

namespace trtrace::lib {

struct LibraryInfo {
  int32_t code = 0;     // getInferLibVersion(): major*10000 + minor*100 + patch (0: unknown)
  int32_t build = 0;    // getInferLibBuildVersion()
  std::string version;  // "major.minor.patch.build", e.g. "1.7.1.116"
  std::string buildId;  // NT_GNU_BUILD_ID of the loaded file, lower-case hex ("" if it has none)
  std::string path;     // the file the loader mapped
};

// Reads the version and build id of a library opened with dlopen.
LibraryInfo inspect(void* handle);

// How the spec relates to a library version (getInferLibVersion encoding).
enum class Support {
  Described,   // its major.minor is one of abi::kSpecVersions
  NewerMinor,  // same major, newer than every spec'd minor: the spec'd subset is known
  OlderMinor,  // same major, older than the base: the base's vtables may not exist there
  OtherMajor,  // another ABI
};
Support support(int32_t code);
// The spec'd version whose methods a library of `code` has: the newest spec'd version <= code
// (nullptr for OlderMinor / OtherMajor).
const abi::SpecVersion* specFor(int32_t code);
// "1.7.1.116" -> 10701 (major*10000 + minor*100 + patch); 0 if it does not parse.
int32_t versionCode(const std::string& text);
// "1.7" for 10701.
std::string majorMinor(int32_t code);

// The tensorrt_rtx_libs folder the Python interpreter `python` (a name on PATH or a path) imports;
// "" if it cannot run or has no such package. Starts a process.
std::string pythonLibDir(const std::string& python);

// One place a library may be found, in the documented order (README "Finding the library").
struct Candidate {
  std::string path;  // file name or path handed to dlopen
  std::string how;   // why it was tried: "--lib", "TRT_SHIM_NVINFER_LIB_NAME", "tensorrt_rtx_libs 1.7.1.116 (...)",
                     // "loader path"
};
// Candidates for a library of version `want` (a version code; 0 = any): the explicit path, else
// TRT_SHIM_NVINFER_LIB_NAME, else installed tensorrt_rtx_libs packages (the active virtual
// environment's, then the one beside trtrace's own package when it was installed from the wheel,
// then those of `python3` on PATH when `askPython`), the one of the wanted
// major.minor first, else the loader path (libtensorrt_rtx.so, libtensorrt_rtx.so.1).
std::vector<Candidate> candidates(const std::string& explicitPath, int32_t want, bool askPython);

// A library opened (dlopen RTLD_NOW | RTLD_LOCAL) from the first candidate that loads and is
// TensorRT-RTX: it exports createInferBuilder_INTERNAL, and that is not `self` (the shim finding
// itself by soname in drop-in mode). handle is null when none is; `tried` then holds one reason per
// candidate ("; "-separated).
struct Loaded {
  void* handle = nullptr;
  LibraryInfo info;
  std::string how;  // the candidate's `how`
};
Loaded load(const std::vector<Candidate>& candidates, const void* self, std::string& tried);

}  // namespace trtrace::lib
