// libtrtrace_marker.so: a library that proves it was loaded. Its constructor creates the file named
// by TRTRACE_MARKER. The safety tests name it inside captures and check the player never loads it.
#include <cstdio>
#include <cstdlib>

__attribute__((constructor)) static void trtraceMarkerLoaded() {
  if (const char* path = std::getenv("TRTRACE_MARKER")) {
    if (FILE* f = std::fopen(path, "w")) {
      std::fputs("loaded\n", f);
      std::fclose(f);
    }
  }
}
