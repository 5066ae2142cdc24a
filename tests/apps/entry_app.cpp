// Calls C entry points of libtensorrt_rtx.so.1 the way an application linked against it does: the
// library is loaded into the global scope and each symbol is resolved there (LD_PRELOAD first, then
// the library; in the drop-in layout the library's name is the shim's). Types: trtrace's generated
// ABI (abi::entry, from schema/api/00-library.api).
//
//   entry_app version                  getInferLibVersion()
//   entry_app library-path PATH        setInternalLibraryPath(PATH)
//   entry_app private-api ID VERSION   getPrivateApi_INTERNAL(ID, VERSION): prints null or non-null
//
// Prints `NAME: RESULT`; a symbol the loaded libraries lack is exit 3 (where a linked application
// would fail to load), a usage error exit 2.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "trtrace/api_abi.h"

namespace entry = trtrace::abi::entry;

namespace {

template <class Fn>
Fn resolve(const char* name) {
  auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
  if (!fn) {
    std::fprintf(stderr, "entry_app: symbol %s: not found\n", name);
    std::exit(3);
  }
  return fn;
}

int run(int argc, char** argv) {
  const char* what = argc > 1 ? argv[1] : "";
  if (!std::strcmp(what, "version") && argc == 2) {
    std::printf("getInferLibVersion: %d\n", resolve<entry::getInferLibVersion>("getInferLibVersion")());
  } else if (!std::strcmp(what, "library-path") && argc == 3) {
    const bool ok = resolve<entry::setInternalLibraryPath>("setInternalLibraryPath")(argv[2]);
    std::printf("setInternalLibraryPath: %d\n", ok ? 1 : 0);
  } else if (!std::strcmp(what, "private-api") && argc == 4) {
    auto fn = resolve<entry::getPrivateApi_INTERNAL>("getPrivateApi_INTERNAL");
    void* table = fn(std::strtoull(argv[2], nullptr, 0), static_cast<int32_t>(std::atoi(argv[3])));
    std::printf("getPrivateApi_INTERNAL: %s\n", table ? "non-null" : "null");
  } else {
    std::fprintf(stderr, "usage: entry_app version | library-path PATH | private-api ID VERSION\n");
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!dlopen("libtensorrt_rtx.so.1", RTLD_NOW | RTLD_GLOBAL)) {
    std::fprintf(stderr, "entry_app: %s\n", dlerror());
    return 1;
  }
  return run(argc, argv);
}
