/* trtrace_c: a small C interface over the trace reader (trace/include/trtrace/reader.h), for
 * languages that call C (the Python package `trtrace` uses it through ctypes). It applies the same
 * checks as the tools: trtrace_open is Reader::open (as every tool opens a trace), trtrace_blob
 * hands out weights only after their XXH3-128 matched their key (as the player does), and
 * trtrace_verify_json is `trtrace verify`'s report.
 *
 * Errors: functions that can fail take `char** error`; on failure they return NULL/non-zero and set
 * *error to one line (the tools' message), to be released with trtrace_free. Strings returned
 * (JSON documents, UTF-8, NUL-terminated) are released with trtrace_free too. */
#ifndef TRTRACE_C_H
#define TRTRACE_C_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct trtrace_reader trtrace_reader;

/* Error kinds (trtrace::Error::Kind + 1; 0 = no error). */
enum {
  TRTRACE_OK = 0,
  TRTRACE_IO = 1,
  TRTRACE_CORRUPT = 2,
  TRTRACE_TRUNCATED = 3,
  TRTRACE_USAGE = 4,
  TRTRACE_EMPTY = 5
};

/* Maps the trace at `path`; NULL on failure (*error, *kind set). */
trtrace_reader* trtrace_open(const char* path, char** error, int* kind);
void trtrace_close(trtrace_reader* r);
void trtrace_free(void* p);

/* {"path", "format", "closed", "truncation", "producer", "producer_version", "library",
 *  "library_version", "library_build_id", "host", "pid", "settings": {..}, "calls"} */
char* trtrace_header_json(const trtrace_reader* r, char** error, int* kind);

/* The calls with lo <= seq < hi as a JSON array, one object per call:
 * {"seq", "thread", "network" (0-based, null = none), "api", "interface", "method", "receiver",
 *  "args": [value...], "result": value or null, "status", "message", "build": null or
 *  {"ok", "engine_size", "engine_hash", "errors"}}
 * value: {"name", "spec" (how the API spec records it, "" if the trace's API is unknown to this
 * build), "kind" (ValueKind name), "value", and per kind: "enum" (Type::kNAME), "dtype" (DataType
 * name), "dtype_value", "bits" (per element), "numpy" (the API spec's NumPy dtype of the DataType, an
 * array-interface descr such as "<f4"; "" where NumPy has none), "count", "hash_hi", "hash_lo", "length", "seed",
 * "bytes" (hex, inline weights and byte strings), "pointer" (weights identity)} */
char* trtrace_calls_json(const trtrace_reader* r, uint64_t lo, uint64_t hi, char** error, int* kind);

/* The blob (hash, length): *data and *size point into the mapping for a raw blob (*owner = NULL:
 * valid while the reader is open), or into memory of their own: a decoded buffer, a lost blob's
 * zero pages (*owner != NULL: valid until trtrace_blob_release(*owner)). Its content hash is
 * checked first. 0 on success. */
int trtrace_blob(const trtrace_reader* r, uint64_t hash_hi, uint64_t hash_lo, uint64_t length, const void** data,
                 uint64_t* size, void** owner, char** error, int* kind);
void trtrace_blob_release(void* owner);

/* `trtrace verify`'s report: {"ok", "corrupt", "truncated", "closed", "segments", "calls",
 * "blobs", "blob_bytes", "issues": [{"problem", "offset", "what"}]} */
char* trtrace_verify_json(const trtrace_reader* r, char** error, int* kind);

#ifdef __cplusplus
}
#endif
#endif
