// trtrace::files: how every tool (player, trtrace info/dump/verify/rewrite/convert) opens what it
// reads and creates what it writes, one way for all of them (docs/errors.md):
// - an input must be a regular file: a FIFO, folder, device or /proc file is refused up front
//   (opened without blocking), with one line naming it;
// - an output is never one of the inputs this process opened (same device and inode, whatever the
//   names), never a folder, and its folder must be writable: checked before any work;
// - an output is written under an unguessable temporary name beside it (O_CREAT|O_EXCL|O_NOFOLLOW,
//   mkstemp-style) and renamed over it only when complete; on failure the temporary is removed.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "trtrace/hash.h"

namespace trtrace::files {

// Opens `path` read-only (close-on-exec) and returns the descriptor; throws trtrace::Error (Io)
// naming the file when it cannot be opened or is not a regular file. The file is remembered as an
// input of this process (see checkOutput).
int openInput(const std::string& path);

// Throws trtrace::Error (Usage) when `path` is a file this process opened as input, or a folder;
// (Io) when it cannot be created in its folder. Writes nothing.
void checkOutput(const std::string& path);

// Outputs that appear only when all are complete: each is written to its own new temporary file in
// its folder, renamed over the final name by commit(); the destructor removes them otherwise.
class PendingOutputs {
 public:
  PendingOutputs() = default;
  PendingOutputs(const PendingOutputs&) = delete;
  PendingOutputs& operator=(const PendingOutputs&) = delete;
  ~PendingOutputs();
  // checkOutput(finalPath), then creates the temporary file; returns its descriptor, owned by this
  // object (valid until commit() or destruction).
  int add(const std::string& finalPath);
  // Renames each temporary over its final name (each appears complete or not at all); durable:
  // fsync each first, so that a power loss cannot leave a renamed file whose data never reached
  // the disk (the tools' --sync; readers verify what they read either way).
  void commit(bool durable = false);

 private:
  struct File {
    std::string temp, final;
    int fd;
  };
  std::vector<File> files_;
};

// `size` bytes to `path`, through a PendingOutputs: complete or not at all.
void writeAtomically(const std::string& path, const void* data, size_t size);

// Drops the whole pages inside [data, data + n) of a read-only file mapping from this process's
// resident set (MADV_DONTNEED: they are read again from the file if touched): bounded memory while
// a big input is walked once.
void releasePages(const void* data, size_t n);

// The kernel's fault-around window (its default fault_around_bytes): a read fault on a file mapping
// also maps the window's other pages that are in the page cache.
inline constexpr uint64_t kFaultAroundBytes = 64 << 10;

// Drops every page of the read-only shared file mapping `map` that overlaps [lo, hi) (offsets in
// it), widened to whole fault-around windows: after a few bytes were read at scattered places (a
// block's header, record and padding), releasing only the pages read would leave their neighbours,
// mapped by fault-around, resident. Later reads fault the pages back from the page cache.
void releaseAround(std::span<const std::byte> map, uint64_t lo, uint64_t hi);
// XXH3-128 of the n bytes at `off` in the read-only mapping `map`, read 4 MiB at a time, each step's
// pages released once hashed (releaseAround): a 32 MiB blob adds 4 MiB to the resident set while it
// is checked, not 32. `done`, when given, counts the bytes hashed (a progress line's). `each`, when
// given, is handed each step (its bytes, their offset from `off`, its length) before its pages go.
using Piece = std::function<void(const std::byte* data, uint64_t offset, uint64_t n)>;
Hash128 hashReleasing(std::span<const std::byte> map, uint64_t off, uint64_t n, std::atomic<uint64_t>* done = nullptr,
                      const Piece& each = {});

// A new read-write file named `prefix` + an unguessable suffix (O_CREAT|O_EXCL|O_NOFOLLOW, close-on-
// exec, `mode`); its name goes to *name. Throws trtrace::Error (Io) naming `what` when it cannot.
int createUnique(const std::string& prefix, std::string* name, int mode, const std::string& what);
// The same in the folder open as `dirFd` (openat: the folder checked is the one written, whatever
// is renamed meanwhile); `prefix` and *name are names in it.
int createUniqueAt(int dirFd, const std::string& prefix, std::string* name, int mode, const std::string& what);

// What the open file `fd` is when it is not a regular file with real contents ("a FIFO", "a
// folder", "a /proc or /sys file", ...; "unreadable" when fstat fails); nullptr when it is one.
const char* specialKind(int fd);

// Creates `path` and its missing parent folders (mode 0700); throws trtrace::Error (Io) naming the
// one that cannot be made, or that exists and is not a folder.
void makeFolders(const std::string& path);

// A new read-write file with no name (O_TMPFILE in $TMPDIR, else /tmp; where the file system lacks
// O_TMPFILE, an unguessable name unlinked at once): private, and gone when closed.
int anonymousFile();
// A new read-write file in memory (memfd_create; anonymousFile() where that is refused): for data
// that lives only as long as this process and is read back at once.
int memoryFile(const char* name);

}  // namespace trtrace::files
