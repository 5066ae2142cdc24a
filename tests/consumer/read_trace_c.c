/* Reads a trace with the installed C interface: prints the header JSON's call count line. */
#include <stdio.h>

#include "trtrace/trtrace_c.h"

int main(int argc, char** argv) {
  char* error = NULL;
  int kind = 0;
  if (argc != 2) return 2;
  trtrace_reader* r = trtrace_open(argv[1], &error, &kind);
  if (!r) {
    fprintf(stderr, "read_trace_c: %s\n", error);
    trtrace_free(error);
    return 1;
  }
  char* header = trtrace_header_json(r, &error, &kind);
  printf("%s\n", header ? header : "");
  trtrace_free(header);
  trtrace_close(r);
  return 0;
}
