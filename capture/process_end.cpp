// The ways a process leaves without exit(), made to close its capture first (docs/design.md,
// "Output names"): exec* replaces the process image and _exit/_Exit skip the atexit handlers
// (Python's os._exit; multiprocessing's fork and forkserver workers end with it), so the trace
// would otherwise keep only what an earlier flush wrote. Defined here, these names come before
// the C library's when the shim is preloaded (or linked before libc by a drop-in app); each forwards
// to the next definition (dlsym RTLD_NEXT), resolved when the shim loads so that a vfork child
// calling them does no lookup. A process that loads the shim with dlopen (a native app that
// dlopens the drop-in library) does not reach these: TRT_SHIM_FLUSH_ON_BUILD=1 keeps its builds.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <vector>

#include "session.h"

#define TRTRACE_EXPORT __attribute__((visibility("default")))

using trtrace::capture::Session;

namespace {

using ExecV = int (*)(const char*, char* const[]);
using ExecVE = int (*)(const char*, char* const[], char* const[]);
using FExecVE = int (*)(int, char* const[], char* const[]);
using ExecVEAt = int (*)(int, const char*, char* const[], char* const[], int);
using Exit = void (*)(int);

template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

const ExecV gExecv = next<ExecV>("execv");
const ExecV gExecvp = next<ExecV>("execvp");
const ExecVE gExecve = next<ExecVE>("execve");
const ExecVE gExecvpe = next<ExecVE>("execvpe");
const FExecVE gFexecve = next<FExecVE>("fexecve");
const ExecVEAt gExecveat = next<ExecVEAt>("execveat");
const Exit gExit = next<Exit>("_exit");
const Exit gExitC = next<Exit>("_Exit");

// The trace closed, then the real exec (looked up now when called before the shim's initialisers);
// if it returns (failed), later calls go to a new trace.
template <class F, class... A>
int execThrough(F real, const char* name, A... args) {
  if (!real) real = next<F>(name);
  if (!real) {
    errno = ENOSYS;
    return -1;
  }
  Session::processEnding();
  const int rc = real(args...);
  const int saved = errno;
  Session::execFailed();
  errno = saved;
  return rc;
}

// The arguments of execl/execlp/execle after `first`, up to the null one, as an argv array.
std::vector<char*> argvOf(const char* first, va_list ap) {
  std::vector<char*> argv{const_cast<char*>(first)};
  while (argv.back()) argv.push_back(va_arg(ap, char*));
  return argv;
}

[[noreturn]] void exitThrough(Exit real, const char* name, int status) {
  Session::processEnding();
  if (!real) real = next<Exit>(name);
  if (real) real(status);
  ::syscall(SYS_exit_group, status);
  __builtin_unreachable();
}

}  // namespace

extern "C" {

TRTRACE_EXPORT int execv(const char* path, char* const argv[]) noexcept {
  return execThrough(gExecv, "execv", path, argv);
}
TRTRACE_EXPORT int execvp(const char* file, char* const argv[]) noexcept {
  return execThrough(gExecvp, "execvp", file, argv);
}
TRTRACE_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) noexcept {
  return execThrough(gExecve, "execve", path, argv, envp);
}
TRTRACE_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) noexcept {
  return execThrough(gExecvpe, "execvpe", file, argv, envp);
}
TRTRACE_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) noexcept {
  return execThrough(gFexecve, "fexecve", fd, argv, envp);
}
TRTRACE_EXPORT int execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) noexcept {
  return execThrough(gExecveat, "execveat", dirfd, path, argv, envp, flags);
}

TRTRACE_EXPORT int execl(const char* path, const char* arg, ...) noexcept {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = argvOf(arg, ap);
  va_end(ap);
  return execThrough(gExecv, "execv", path, argv.data());
}
TRTRACE_EXPORT int execlp(const char* file, const char* arg, ...) noexcept {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = argvOf(arg, ap);
  va_end(ap);
  return execThrough(gExecvp, "execvp", file, argv.data());
}
TRTRACE_EXPORT int execle(const char* path, const char* arg, ...) noexcept {
  va_list ap;
  va_start(ap, arg);
  std::vector<char*> argv = argvOf(arg, ap);
  char* const* envp = va_arg(ap, char* const*);
  va_end(ap);
  return execThrough(gExecve, "execve", path, argv.data(), envp);
}

TRTRACE_EXPORT void _exit(int status) { exitThrough(gExit, "_exit", status); }
TRTRACE_EXPORT void _Exit(int status) noexcept { exitThrough(gExitC, "_Exit", status); }

}  // extern "C"
