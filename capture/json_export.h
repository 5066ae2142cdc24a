// The capture shim's JSON+BIN export (TRT_SHIM_OUTPUT_JSON_FILE, docs/json-bin-layout.md §9): each
// recorded call is encoded once, as the writer appends it (Writer::onCall), by JsonRecords (the
// encoder of `trtrace convert`), into two spools; at each flush point the spooled records and
// weights go to the JSON and the BIN: the BIN append-only (NVIDIA's offsets), the JSON brought up
// to date in place (the new records where its closing part began, then the closing part again).
// The first flush creates both, complete, under their final names (temporary + rename). Work and bytes written grow
// linearly with the calls; the trace is never read back. A kill during a flush may leave the JSON cut: the trace
// (crash-safe) is the reference, and `trtrace convert` rebuilds the JSON from it.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "trtrace/json_records.h"

namespace trtrace::capture {

class JsonExport {
 public:
  // `tracePath` names the trace in messages; `libraryVersion` gives "trt_version" when no
  // createInferBuilder call does.
  JsonExport(const std::string& tracePath, std::string libraryVersion);
  ~JsonExport();
  JsonExport(const JsonExport&) = delete;
  JsonExport& operator=(const JsonExport&) = delete;

  // Writer::onCall: the call's record and new weights into the spools. A failure stops the export;
  // the next flush() reports it.
  void add(const CallView& c) noexcept;
  // A flush point: the JSON at `jsonPath` (and its BIN) brought up to date with every call added
  // so far; the first flush fixes the path. Throws Error (Io) on failure; later flushes then do nothing.
  void flush(const std::string& jsonPath);

  // The bytes of a weights blob the call being recorded on this thread references (Call::argWeights,
  // valid until the call ends); add() reads them. forgetBlobs: at the end of the thread's outermost call.
  static void noteBlob(const BlobRef& ref, const void* bytes);
  static void forgetBlobs();

  // Test hook (TRTRACE_TEST_JSON_COUNTS, session.cpp): records encoded, JSON and BIN bytes
  // written to their files, flushes: what shows the export's work is linear in the calls.
  std::string counts();

 private:
  class Spool;
  void firstFlush(const std::string& jsonPath, const std::string& closing);
  void stop(const std::string& why);

  std::mutex mu_;
  std::string libraryVersion_;
  convert::JsonRecords records_;
  std::unique_ptr<Spool> json_, bin_;                        // encoded since the last flush
  std::string error_;                                        // the first failure; the export stops
  std::string jsonPath_, binPath_;                           // fixed by the first flush
  int jsonFd_ = -1, binFd_ = -1;                             // the final files, after the first flush
  uint64_t jsonEnd_ = 0;                                     // where the JSON's closing part begins
  uint64_t jsonSize_ = 0, binSize_ = 0;                      // the files' sizes
  uint64_t jsonWritten_ = 0, binWritten_ = 0, flushes_ = 0;  // test hook counts
};

}  // namespace trtrace::capture
