// trtrace::convert: NVIDIA's JSON+BIN capture <-> trtrace trace (issue #7).
//
// jsonToTrace streams the JSON (one api_calls record at a time, parsed with simdjson), maps the
// BIN read-only and hands weight ranges to Writer::putBlob zero-copy (content-deduplicated), so
// memory stays bounded by the largest single record plus the writer's blob queue.
// traceToJson writes the layout NVIDIA's shim writes (docs/json-bin-layout.md §13): sorted keys,
// 4-space indent, no trailing newline, BIN = raw weight bytes in first-use order.
// Both directions write OUT (and the BIN) under temporary names and rename them only on success:
// (trtrace/files.h: never over one of their inputs, under unguessable temporary names);
// on any error (malformed JSON, missing/short BIN, bad offset, unknown call, no calls) they throw
// trtrace::Error with one line naming the file and the record, and leave no output behind.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "trtrace/reader.h"
#include "trtrace/writer.h"

namespace trtrace::convert {

// What a capture file is, by content (the file is opened as an input, files::openInput): the trace
// magic means a trace; a JSON document (first non-blank byte '{', after a UTF-8 byte order mark) or
// a file named *.json is NVIDIA's JSON; anything else is Other (each tool says which error names it
// best: the player opens it as a trace, `trtrace convert` reads it as JSON).
enum class FileKind { Trace, Json, Other };
FileKind detect(const std::string& path);

// The BIN NVIDIA's shim pairs with a JSON path: a trailing ".json" is replaced by ".bin", any other
// name gets ".bin" appended.
std::string binPathFor(const std::string& jsonPath);

struct Stats {
  uint64_t calls = 0;    // call records converted
  uint64_t skipped = 0;  // trace calls not written (traceToJson without allCalls)
  uint32_t networks = 0;
  uint64_t weights = 0;                    // Weights arguments converted
  uint64_t jsonBytes = 0;                  // JSON read or written
  uint64_t binBytes = 0;                   // BIN read or written
  uint64_t traceBytes = 0;                 // trace read or written
  uint64_t blobPuts = 0, uniqueBlobs = 0;  // jsonToTrace: putBlob calls / distinct blobs
  uint64_t nullNumbers = 0;                // jsonToTrace: JSON nulls where a number belongs, converted to NaN
  double seconds = 0;
};

struct JsonToTraceOptions {
  std::string binPath;                    // empty: the "output_bin" named in the JSON, beside the JSON
  int zstdLevel = kDefaultBlobZstdLevel;  // blob compression in the trace (0 = raw)
  int workerThreads = 1;                  // trace writer compression threads
  bool durable = false;                   // WriterOptions::durable
  bool quiet = true;
  std::function<void(uint64_t done, uint64_t total)> progress;  // JSON bytes parsed, per record
  // >= 0: write the trace into this open, empty file (e.g. files::memoryFile()) instead of
  // creating tracePath, which then only names it in messages.
  int traceFd = -1;
  // Given: the trace stores no weights (WriterOptions::storeBlobs false) and each blob is entered
  // here as a view into the mapped BIN, which inPlace->keep then holds: the player replays a JSON+BIN
  // capture from its calls and these views, no weight copied, compressed or decompressed.
  ExternalBlobs* inPlace = nullptr;
};
Stats jsonToTrace(const std::string& jsonPath, const std::string& tracePath, const JsonToTraceOptions& o = {});

struct TraceToJsonOptions {
  std::string binPath;   // empty: binPathFor(jsonPath)
  bool durable = false;  // fsync the JSON and the BIN before they are renamed into place
  // NVIDIA's shim records neither destructors nor calls on IHostMemory: they are left out unless
  // allCalls (then every call of the trace is written, with "function": "~" for deletions).
  bool allCalls = false;
  std::function<void(uint64_t done, uint64_t total)> progress;  // calls converted, per call
  bool requireCalls = false;  // a trace with no calls is an error (Error::Kind::Empty), not an empty JSON
};
Stats traceToJson(const std::string& tracePath, const std::string& jsonPath, const TraceToJsonOptions& o = {});

// The one way every reader of captures opens one (tensorrt_player, each trtrace tool, the C
// interface and so Python's trtrace.open): a trace is Reader::open(path); NVIDIA's JSON+BIN
// (detect() says Json) has its calls converted into a call log in memory (files::memoryFile;
// nothing on disk) while its weights stay in the mapped BIN, each blob a view
// (JsonToTraceOptions::inPlace, Reader::setExternalBlobs): nothing copied, compressed or
// decompressed. The reader's path() is "<path> (converted)". Anything else is opened as a trace,
// whose reader names what is wrong with it. Throws Error (one line naming the file and record).
std::unique_ptr<Reader> openCapture(const std::string& path);

// Whether a trace's calls came from NVIDIA's JSON (its header's "source" setting, which
// jsonToTrace writes). That layout writes a returned object only when it is new, so a returned
// handle there may stand for null (a failed getInput) or a known object reached another way.
bool fromNvidiaJson(const Reader& r);

}  // namespace trtrace::convert
