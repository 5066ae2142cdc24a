// Library choice and version checks of the player (library_select.h).
#include "library_select.h"

#include <cstdio>
#include <map>

#include "replayer.h"
#include "trtrace/api_table.h"
#include "trtrace/error.h"
#include "trtrace/text.h"

namespace trtrace::replay {
namespace {

// Same release: major.minor.patch equal, and the build too when both name one.
bool sameVersion(const std::string& traced, const lib::LibraryInfo& l) {
  if (lib::versionCode(traced) != l.code) return false;
  const size_t dot = traced.find('.', traced.find('.', traced.find('.') + 1) + 1);
  return dot == std::string::npos || traced.substr(dot + 1) == std::to_string(l.build);
}

}  // namespace

ChosenLibrary chooseLibrary(const Reader& reader, const std::string& libPath, bool ignoreVersion) {
  const std::string traced(reader.header().libraryVersion);
  const std::string name(reader.header().libraryName);
  std::string errors;
  const lib::Loaded loaded = lib::load(lib::candidates(libPath, lib::versionCode(traced), true), nullptr, errors);
  const ChosenLibrary c{loaded.handle, loaded.info, loaded.how};
  if (!c.handle)
    throw Error(Error::Kind::Usage, "cannot load the TensorRT-RTX library (" + errors + "); pass --lib PATH");
  const std::string file = c.info.path.empty() ? "the library" : c.info.path;
  if (lib::support(c.info.code) == lib::Support::OtherMajor && !ignoreVersion)
    throw Error(Error::Kind::Usage,
                file + ": library version " + (c.info.code ? c.info.version : "0") + ", this player replays " +
                    abi::kLibraryName + " " + abi::kSpecVersions[0].text + " to " +
                    abi::kSpecVersions[abi::kNumSpecVersions - 1].text + " (--ignore-version to try anyway)");
  if (!sameVersion(traced, c.info) && !ignoreVersion)
    throw Error(Error::Kind::Usage, reader.path() + ": captured with " + name + " " + traced + ", the library " + file +
                                        " is " + abi::kLibraryName + " " + c.info.version +
                                        " (--ignore-version to replay on it anyway)");
  return c;
}

void checkCallsExist(const Reader& reader, const ChosenLibrary& lib) {
  const int32_t have = lib.info.code;
  std::map<std::string, uint64_t> missing;  // "Interface::method (since 1.7)" -> calls
  uint64_t firstSeq = 0;
  std::string first;
  reader.forEachCall([&](const CallView& c) {
    const api::ApiDesc* d = api::find(c.apiId());
    if (!d || have == 0 || d->since <= have) return true;
    std::string n = std::string(d->interface) + "::" + std::string(d->method) + " (" + abi::kLibraryName + " " +
                    lib::majorMinor(d->since) + ")";
    if (missing.empty()) first = n, firstSeq = c.seq();
    ++missing[n];
    return true;
  });
  if (missing.empty()) return;
  for (const auto& [n, count] : missing)
    std::fprintf(stderr, "tensorrt_player: %s: %llu call%s of %s, which library %s does not have\n",
                 reader.path().c_str(), static_cast<unsigned long long>(count), count == 1 ? "" : "s", n.c_str(),
                 lib.info.version.c_str());
  throw Divergence("call #" + std::to_string(firstSeq) + " (" + first + "): no counterpart in library " +
                   lib.info.version + " (a newer method); nothing was replayed");
}

std::string describe(const ChosenLibrary& lib) {
  return "library: " + lib.info.path + " (" + abi::kLibraryName + " " + lib.info.version + ", chosen by " + lib.how +
         ")";
}

std::string describeJson(const ChosenLibrary& lib) {
  return "\"library\": {\"path\": " + jsonString(lib.info.path) + ", \"version\": " + jsonString(lib.info.version) +
         ", \"build_id\": " + jsonString(lib.info.buildId) + ", \"chosen_by\": " + jsonString(lib.how) + "}";
}

}  // namespace trtrace::replay
