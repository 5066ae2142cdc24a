// Decode cache (docs/design.md, "Decode cache"): the compressed weight blobs of a trace decoded
// once, in parallel on every core, into a file that the player's weights source
// (trtrace/weights_source.h) then maps read-only, so the bytes a replay hands to the library are
// evictable page cache instead of anonymous memory. The file is
// content-addressed (named by a hash of the trace's compressed blob keys) in a folder bounded in
// size, and reused by later replays after every blob in it has been hashed again; or a nameless
// temporary file, gone when the process ends.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trtrace {

struct DecodeCacheOptions {
  enum class Mode { Folder, Temp, Off };  // Off: blobs are decoded into memory when used
  Mode mode = Mode::Temp;
  std::string folder;                      // Folder mode: where the cache files live
  uint64_t maxBytes = uint64_t(20) << 30;  // the folder's bound (least recently used files go first)
  unsigned threads = 0;                    // decode / check threads; 0 = every core
  bool verify = true;                      // a reused file's blobs are hashed before they are trusted
  int64_t network = -1;                    // >= 0: only the blobs this trace network's calls use (--network)

  // TRTRACE_DECODE_CACHE (a folder, `temp` or `off`; default $XDG_CACHE_HOME/trtrace, else
  // $HOME/.cache/trtrace, else temp), TRTRACE_DECODE_CACHE_MB (default 20480),
  // TRTRACE_DECODE_THREADS (default: every core). A bad value: one warning line, the default.
  static DecodeCacheOptions fromEnv();
  // `spec` as TRTRACE_DECODE_CACHE reads it: "off", "temp" or a folder.
  void setMode(const std::string& spec);
};

struct DecodeCacheReport {
  // None: no compressed blob; Rebuilt: a reused file was damaged or stale (`note` says how); Temp:
  // a nameless file (folder unusable or too small, or asked for).
  enum class How { None, Off, Built, Reused, Rebuilt, Temp };
  How how = How::None;
  std::string path;               // the cache file (Folder mode)
  std::string note;               // why a file was rebuilt, or why the folder was not used
  uint64_t blobs = 0, bytes = 0;  // blobs in the cache, their decoded bytes
  uint64_t failed = 0;            // blobs left out (damaged in the trace: reported when used)
  unsigned threads = 0;
  double seconds = 0;  // decode (or check) time
  // Folder mode, when the folder's cache files exceed kDecodeCacheAdviceBytes after this one: one
  // line saying so and how to shrink it (the player says it once per run); "" otherwise.
  std::string advice;
};

// How's name in the player's --json ("none", "off", "built", "reused", "rebuilt", "temp").
const char* howName(DecodeCacheReport::How how);

inline constexpr uint64_t kDecodeCacheAdviceBytes = uint64_t(1) << 30;

// One file of a decode cache folder (`trtrace cache list`).
struct DecodeCacheFile {
  std::string name;     // <32 hex digits>.tdc
  uint64_t bytes = 0;   // on disk (what the folder's bound counts)
  int64_t lastUse = 0;  // when it was last built or reused (its mtime, seconds since the epoch)
  std::string trace;    // the trace that last used it, where recorded (an extended attribute); else ""
};

// The cache's own files in `folder`, least recently used first (the order the bound removes them
// in): regular files named as the cache names them, owned by this user; links, other names and
// other owners' files are not the cache's and are left out. An existing folder is trusted as the
// player trusts it (yours, mode 0700): else Error (Io) with the player's line ("decode cache:
// <folder>: mode 0777 lets other users in: ..."). A folder that does not exist holds none.
std::vector<DecodeCacheFile> listDecodeCache(const std::string& folder);
// Removes those files (and temporaries a dead process left, as the bound does); returns the removed.
// Nothing else is touched: a link is removed by no one, followed by no one.
std::vector<DecodeCacheFile> clearDecodeCache(const std::string& folder);

}  // namespace trtrace
