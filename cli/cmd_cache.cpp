// trtrace cache {path,size,list,clear}: the player's decode cache (trtrace/decode_cache.h;
// docs/design.md, "Decode cache"). The folder is the one the player uses (TRTRACE_DECODE_CACHE,
// else $XDG_CACHE_HOME/trtrace, else ~/.cache/trtrace; --decode-cache as the player's), trusted as
// the player trusts it: a folder that is not private is refused in the player's words. Only the
// cache's own files are listed, counted or removed (decode_cache.h: its names, regular files of
// this user); a link is never followed, anything else there never touched.
#include <ctime>
#include <cstdio>
#include <memory>

#include "commands.h"
#include "trtrace/decode_cache.h"
#include "trtrace/error.h"
#include "trtrace/text.h"

namespace trtrace::cli {
namespace {

struct CacheOptions {
  std::string decodeCache;  // --decode-cache: as the player's ("" = the environment's)
  bool json = false;
};

// The folder the player would use; Error when it uses none (temp, off, or no folder to default to).
std::string cacheFolder(const CacheOptions& o) {
  DecodeCacheOptions d = DecodeCacheOptions::fromEnv();
  if (!o.decodeCache.empty()) d.setMode(o.decodeCache);
  if (d.mode == DecodeCacheOptions::Mode::Folder) return d.folder;
  const std::string why = d.mode == DecodeCacheOptions::Mode::Off
                              ? "the decode cache is off (weights are decoded into memory)"
                          : !o.decodeCache.empty() || std::getenv("TRTRACE_DECODE_CACHE")
                              ? "the decode cache is a nameless temporary file per replay"
                              : "neither $XDG_CACHE_HOME nor $HOME is set: each replay decodes into a temporary file";
  throw Error(Error::Kind::Usage, "cache: no cache folder: " + why);
}

// Text of the user's (a path, a recorded trace name) safe to print: control characters as '?'.
std::string printable(std::string s) {
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  return s;
}

uint64_t totalBytes(const std::vector<DecodeCacheFile>& files) {
  uint64_t n = 0;
  for (const DecodeCacheFile& f : files) n += f.bytes;
  return n;
}

std::string localTime(int64_t t) {
  const time_t tt = static_cast<time_t>(t);
  struct tm tmv {};
  char buf[32] = "?";
  if (::localtime_r(&tt, &tmv)) std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tmv);
  return buf;
}

// {"folder": ..., "<key>": [{name, bytes, last_use, trace}...], "bytes": total}
std::string filesJson(const std::string& folder, const char* key, const std::vector<DecodeCacheFile>& files) {
  std::string s = "{\"folder\": " + jsonString(folder) + ", \"" + key + "\": [";
  for (size_t i = 0; i < files.size(); ++i) {
    const DecodeCacheFile& f = files[i];
    s += (i ? ", " : "") + std::string("{\"name\": ") + jsonString(f.name) + ", \"bytes\": " + std::to_string(f.bytes) +
         ", \"last_use\": " + std::to_string(f.lastUse) +
         ", \"trace\": " + (f.trace.empty() ? "null" : jsonString(f.trace)) + "}";
  }
  return s + "], \"bytes\": " + std::to_string(totalBytes(files)) + "}";
}

int runPath(const CacheOptions& o) {
  const std::string folder = cacheFolder(o);
  std::printf("%s\n", o.json ? ("{\"folder\": " + jsonString(folder) + "}").c_str() : printable(folder).c_str());
  return kOk;
}

int runSize(const CacheOptions& o) {
  const std::string folder = cacheFolder(o);
  const auto files = listDecodeCache(folder);
  if (o.json)
    std::printf("%s\n", filesJson(folder, "files", files).c_str());
  else
    std::printf("%s: %s in %zu files\n", printable(folder).c_str(), humanBytes(double(totalBytes(files))).c_str(),
                files.size());
  return kOk;
}

// One line a file, least recently used first: the order the folder's bound removes them in.
int runList(const CacheOptions& o) {
  const std::string folder = cacheFolder(o);
  const auto files = listDecodeCache(folder);
  if (o.json)
    std::printf("%s\n", filesJson(folder, "files", files).c_str());
  else if (files.empty())
    std::printf("%s: no cache files\n", printable(folder).c_str());
  for (const DecodeCacheFile& f : o.json ? std::vector<DecodeCacheFile>{} : files)
    std::printf("%s  %10s  %s  %s\n", localTime(f.lastUse).c_str(), humanBytes(double(f.bytes)).c_str(), f.name.c_str(),
                f.trace.empty() ? "-" : printable(f.trace).c_str());
  return kOk;
}

int runClear(const CacheOptions& o) {
  const std::string folder = cacheFolder(o);
  const auto removed = clearDecodeCache(folder);
  if (o.json)
    std::printf("%s\n", filesJson(folder, "removed", removed).c_str());
  else if (removed.empty())
    std::printf("%s: no cache files to remove\n", printable(folder).c_str());
  else
    std::printf("%s: removed %zu files (%s)\n", printable(folder).c_str(), removed.size(),
                humanBytes(double(totalBytes(removed))).c_str());
  return kOk;
}

}  // namespace

Command addCache(CLI::App& app) {
  auto o = std::make_shared<CacheOptions>();
  auto* sub =
      app.add_subcommand("cache", "Manage the player's decode cache (decoded weights, reused by later replays)");
  sub->require_subcommand(1);
  sub->fallthrough();  // the options below may follow the action too
  sub->add_option("--decode-cache", o->decodeCache,
                  "The cache folder, as the player's --decode-cache (default: TRTRACE_DECODE_CACHE, else "
                  "$XDG_CACHE_HOME/trtrace, else ~/.cache/trtrace)");
  sub->add_flag("--json", o->json, "Machine-readable output: one JSON object");
  struct Action {
    const char* name;
    const char* help;
    int (*run)(const CacheOptions&);
  };
  static const Action kActions[] = {
      {"path", "Print the folder the player uses", runPath},
      {"size", "Print the bytes the cache's files take on disk, and how many there are", runSize},
      {"list",
       "List the cache's files, least recently used first (the first the cache's bound, TRTRACE_DECODE_CACHE_MB, "
       "removes): last use, size, name, the trace that last used it",
       runList},
      {"clear", "Remove the cache's files (only files it made: nothing else in the folder, no link followed)",
       runClear},
  };
  std::vector<std::pair<CLI::App*, int (*)(const CacheOptions&)>> actions;
  for (const Action& a : kActions) actions.emplace_back(sub->add_subcommand(a.name, a.help), a.run);
  return {sub, [=] {
            for (const auto& [action, run] : actions)
              if (action->parsed()) return run(*o);
            return int(kError);
          }};
}

}  // namespace trtrace::cli
