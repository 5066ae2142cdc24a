// Decode cache (docs/design.md, "Decode cache"): the compressed weight blobs of a trace decoded
// once, in parallel on every core, into a file that the reader then maps read-only, so the bytes
// a replay hands to the library are evictable page cache instead of anonymous memory. The file is
// content-addressed (named by a hash of the trace's compressed blob keys) in a folder bounded in
// size, and reused by later replays after every blob in it has been hashed again; or a nameless
// temporary file, gone when the process ends.
#pragma once
#include <cstdint>
#include <string>

namespace trtrace {

struct DecodeCacheOptions {
  enum class Mode { Folder, Temp, Off };  // Off: blobs are decoded into memory when used
  Mode mode = Mode::Temp;
  std::string folder;                     // Folder mode: where the cache files live
  uint64_t maxBytes = uint64_t(20) << 30;  // the folder's bound (least recently used files go first)
  unsigned threads = 0;                   // decode / check threads; 0 = every core
  bool verify = true;                     // a reused file's blobs are hashed before they are trusted

  // TRTRACE_DECODE_CACHE (a folder, `temp` or `off`; default $XDG_CACHE_HOME/trtrace, else
  // $HOME/.cache/trtrace, else temp), TRTRACE_DECODE_CACHE_MB (default 20480),
  // TRTRACE_DECODE_THREADS (default: every core). A bad value: one warning line, the default.
  static DecodeCacheOptions fromEnv();
  // `spec` as TRTRACE_DECODE_CACHE reads it: "off", "temp" or a folder.
  void setMode(const std::string& spec);
};

struct DecodeCacheReport {
  // "none" (no compressed blob), "off", "built", "reused", "rebuilt" (a reused file was damaged or
  // stale: `note` says how), "temp" (a nameless file: folder unusable or too small, or asked for).
  std::string how = "none";
  std::string path;  // the cache file (Folder mode)
  std::string note;  // why a file was rebuilt, or why the folder was not used
  uint64_t blobs = 0, bytes = 0;  // blobs in the cache, their decoded bytes
  uint64_t failed = 0;            // blobs left out (damaged in the trace: reported when used)
  unsigned threads = 0;
  double seconds = 0;             // decode (or check) time
};

}  // namespace trtrace
