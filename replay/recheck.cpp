// Rebuilds of one network at other heap layouts, in child processes of the player itself
// (recheck.h says why). Each child writes its engine to a private temp file beside the output (or in
// $TMPDIR); the parent hashes it and keeps it only if it is the capture's engine.
#include "recheck.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <set>
#include <tuple>

#include "../cli/exit_codes.h"

extern char** environ;

namespace trtrace::replay {
namespace {

// A private, unguessable temp file name in `dir` (created O_EXCL by mkstemp, then closed: the child
// replaces it by rename).
std::string tempEngine(const std::string& output) {
  std::string dir;
  if (!output.empty()) dir = output.find('/') == std::string::npos ? "." : output.substr(0, output.rfind('/'));
  if (dir.empty()) {
    const char* t = std::getenv("TMPDIR");
    dir = t && *t ? t : "/tmp";
  }
  std::string tmpl = dir + "/.tensorrt_player.recheck.XXXXXX";
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0) return "";
  ::close(fd);
  return tmpl;
}

// The same file under a longer name ("./" repeated): the length of the path the player keeps is one
// of the small allocations that flip the library's choices.
std::string paddedPath(const std::string& path, int pad) {
  std::string dots;
  for (int i = 0; i < pad; ++i) dots += "./";
  return path.front() == '/' ? "/" + dots + path.substr(1) : dots + path;
}

// The child's environment: ours, with GLIBC_TUNABLES extended by `tunable` (none when empty).
// Allocator tunables move whole classes of allocations (fastbins off, a lower mmap threshold), which
// reaches layouts that the small perturbations (padded path, one kept block) do not.
std::vector<std::string> childEnv(const char* tunable) {
  std::vector<std::string> env;
  std::string old;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "GLIBC_TUNABLES=", 15) == 0)
      old = *e + 15;
    else
      env.emplace_back(*e);
  }
  if (*tunable) old = old.empty() ? tunable : old + ":" + tunable;
  if (!old.empty()) env.push_back("GLIBC_TUNABLES=" + old);
  return env;
}

std::vector<char*> pointers(std::vector<std::string>& v) {
  std::vector<char*> p;
  for (auto& s : v) p.push_back(s.data());
  p.push_back(nullptr);
  return p;
}

// Runs the player on one network at another heap layout (attempt `k`: its -j path padded, its heap
// shifted, every third attempt or so under allocator tunables); true when the child wrote an engine.
bool rebuild(const RecheckArgs& a, uint32_t network, int k, const std::string& engine) {
  static const int kPads[] = {3, 20, 11, 6, 30, 1, 15, 8, 25, 13, 36, 4};
  static const char* const kTunables[] = {
      "", "", "glibc.malloc.mxfast=0", "", "glibc.malloc.mmap_threshold=65536", "glibc.malloc.tcache_count=0"};
  const size_t i = static_cast<size_t>(k - 1);
  const std::string capture = a.capture.empty() ? a.capture : paddedPath(a.capture, kPads[i % std::size(kPads)]);
  std::vector<std::string> args = {
      "/proc/self/exe",        "-j",           capture,          "-q", "-o", engine, "--network",
      std::to_string(network), "--heap-shift", std::to_string(k)};
  if (!a.lib.empty()) args.insert(args.end(), {"--lib", a.lib});
  args.insert(args.end(), a.options.begin(), a.options.end());
  std::vector<std::string> env = childEnv(kTunables[i % std::size(kTunables)]);
  std::vector<char*> argv = pointers(args), envp = pointers(env);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return false;
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(status) && WEXITSTATUS(status) == exits::player::kOk;  // no --check in a child: 0 = engine written
}

// XXH3-128 and size of a file (mapped, read once).
bool hashFile(const std::string& path, Hash128& h, uint64_t& size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return false;
  struct stat st {};
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
  void* p = ok ? ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  ::close(fd);
  if (p == MAP_FAILED) return false;
  size = static_cast<uint64_t>(st.st_size);
  h = hash128(p, size);
  ::munmap(p, size);
  return true;
}

}  // namespace

Recheck recheckNetwork(const RecheckArgs& args, uint32_t network, const Hash128& first, uint64_t firstSize,
                       const Hash128& captured, uint64_t capturedSize, const std::string& output, int attempts) {
  Recheck r;
  std::set<std::tuple<uint64_t, uint64_t, uint64_t>> seen = {{first.hi, first.lo, firstSize}};
  for (int shift = 1; shift <= attempts; ++shift) {
    const std::string tmp = tempEngine(output);
    if (tmp.empty()) break;
    Hash128 h;
    uint64_t size = 0;
    const bool built = rebuild(args, network, shift, tmp) && hashFile(tmp, h, size);
    if (!built) ++r.failed;
    if (built) {
      ++r.builds;
      seen.insert({h.hi, h.lo, size});
      if (h == captured && size == capturedSize) {
        if (!output.empty() && ::rename(tmp.c_str(), output.c_str()) == 0) {
          r.verdict = Recheck::Verdict::Matched;
          r.distinct = static_cast<int>(seen.size());
          return r;
        }
        if (output.empty()) r.verdict = Recheck::Verdict::Matched;
      }
    }
    ::unlink(tmp.c_str());
    if (r.verdict == Recheck::Verdict::Matched) break;
  }
  r.distinct = static_cast<int>(seen.size());
  if (r.verdict != Recheck::Verdict::Matched && r.distinct > 1) r.verdict = Recheck::Verdict::Nondeterministic;
  return r;
}

void shiftHeap(int shift) {
  // One allocation, kept (reachable) for the process's life, so that every later allocation of the
  // library lands elsewhere. Two kinds alternate: small blocks (the length of a path the player keeps
  // flips some networks) and large ones below malloc's mmap threshold (128 KiB) that move the brk heap.
  static const size_t kSizes[] = {24, 64 << 10, 40, 16 << 10, 72, 112 << 10, 104, 40 << 10};
  static std::unique_ptr<char[]> kept;
  kept = std::make_unique<char[]>(kSizes[static_cast<size_t>(shift - 1) % std::size(kSizes)]);
}

}  // namespace trtrace::replay
