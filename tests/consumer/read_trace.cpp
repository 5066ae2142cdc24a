// Reads a trace with the installed C++ reader: "<calls> calls, <builds> builds, <blobs> blobs,
// verify ok|failed", then the first call's name as the API table names it.
#include <cstdio>
#include <exception>

#include "trtrace/api_table.h"
#include "trtrace/error.h"
#include "trtrace/reader.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  try {
    auto r = trtrace::Reader::open(argv[1]);
    unsigned long long calls = 0, builds = 0;
    uint32_t first = 0;
    r->forEachCall([&](const trtrace::CallView& c) {
      if (!calls++) first = c.apiId();
      builds += c.buildResult().has_value();
      return true;
    });
    std::printf("%llu calls, %llu builds, %zu blobs, verify %s\n", calls, builds, r->blobs().size(),
                trtrace::verifyTrace(*r).ok() ? "ok" : "failed");
    if (const auto* d = trtrace::api::find(first))
      std::printf("first: %.*s::%.*s\n", int(d->interface.size()), d->interface.data(), int(d->method.size()),
                  d->method.data());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "read_trace: %s\n", trtrace::describe(e).c_str());
    return 1;
  }
}
