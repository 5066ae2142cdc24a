// trtrace convert IN -o OUT (or IN OUT): NVIDIA JSON+BIN <-> trace; the direction follows IN's content
// (convert::detect: a trace by its magic; anything else is read as NVIDIA's JSON, its BIN beside it).
#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>

#include "commands.h"
#include "output_option.h"
#include "trtrace/convert.h"
#include "trtrace/files.h"
#include "trtrace/text.h"

namespace trtrace::cli {

namespace {

void printText(const std::string& out, const char* dir, const convert::Stats& s) {
  const double in = double(s.jsonBytes + s.binBytes);
  std::printf(
      "%s: %s, %llu calls%s, %u networks, %llu weights; JSON %s + BIN %s, trace %s; %.3f s (%.1f MB/s of JSON+BIN)\n",
      out.c_str(), dir, (unsigned long long)s.calls,
      s.skipped ? (" (" + std::to_string(s.skipped) + " not recorded by NVIDIA's shim left out)").c_str() : "",
      s.networks, (unsigned long long)s.weights, humanBytes(double(s.jsonBytes)).c_str(),
      humanBytes(double(s.binBytes)).c_str(), humanBytes(double(s.traceBytes)).c_str(), s.seconds,
      s.seconds > 0 ? in / s.seconds / 1e6 : 0.0);
}

void printJson(const std::string& out, bool toJson, const convert::Stats& s) {
  std::printf(
      "{\"output\": %s, \"direction\": %s, \"calls\": %llu, \"left_out\": %llu, \"networks\": %u, "
      "\"weights\": %llu, \"json_bytes\": %llu, \"bin_bytes\": %llu, \"trace_bytes\": %llu, \"seconds\": %.6f}\n",
      jsonString(out).c_str(), toJson ? "\"trace_to_json\"" : "\"json_to_trace\"", (unsigned long long)s.calls,
      (unsigned long long)s.skipped, s.networks, (unsigned long long)s.weights, (unsigned long long)s.jsonBytes,
      (unsigned long long)s.binBytes, (unsigned long long)s.traceBytes, s.seconds);
}

}  // namespace

Command addConvert(CLI::App& app) {
  struct Opts {
    std::string in, out, bin;
    bool allCalls = false, quiet = false, sync = false, json = false;
    int level = kDefaultBlobZstdLevel, threads = std::clamp<int>(int(std::thread::hardware_concurrency()) - 1, 1, 8);
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand(
      "convert", "NVIDIA JSON+BIN capture -> trace, or trace -> NVIDIA JSON+BIN (direction from IN's content)");
  sub->add_option("in", o->in, "a trace, or NVIDIA's capture JSON (its BIN beside it)")->required();
  addOutputOption(sub, o->out, "the trace, or the JSON to write (the BIN goes beside it: x.json -> x.bin)", "out");
  sub->add_option("--bin", o->bin,
                  "the BIN to read (JSON input; default: output_bin beside the JSON) or write (JSON output)");
  sub->add_flag(
      "--all-calls", o->allCalls,
      "trace -> JSON: also write destructors (\"~\") and IHostMemory calls, which NVIDIA's shim does not record");
  sub->add_option("--level", o->level, "JSON -> trace: zstd level for the trace's blobs (0 = raw)")
      ->check(CLI::Range(0, 22))
      ->capture_default_str();
  sub->add_option("--threads", o->threads, "JSON -> trace: blob compression threads (default: the cores but one)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  sub->add_flag("--sync", o->sync, "wait until the output is on the disk (fsync) before it is renamed into place");
  sub->add_flag("-q,--quiet", o->quiet, "no summary line");
  sub->add_flag("--json", o->json, "the summary as one JSON object on stdout");
  return {sub, [o]() {
            convert::Stats s;
            const char* dir;
            const convert::FileKind kind = convert::detect(o->in);  // IN is open (checked) before OUT
            files::checkOutput(o->out);  // before any work: not IN, not a folder, in a writable folder
            if (kind == convert::FileKind::Trace) {
              convert::TraceToJsonOptions t;
              t.binPath = o->bin;
              t.allCalls = o->allCalls;
              t.durable = o->sync;
              t.requireCalls = true;  // converting nothing is an error
              Progress progress("trtrace convert " + o->in, "converting calls", 0, Progress::Unit::Calls);
              t.progress = [&](uint64_t done, uint64_t total) { progress.update(done, total); };
              s = convert::traceToJson(o->in, o->out, t);
              dir = "trace -> JSON+BIN";
            } else {
              convert::JsonToTraceOptions j;
              j.binPath = o->bin;
              j.zstdLevel = o->level;
              j.workerThreads = o->threads;
              j.durable = o->sync;
              Progress progress("trtrace convert " + o->in, "writing weights", 0);
              j.progress = [&](uint64_t done, uint64_t total) { progress.update(done, total); };
              s = convert::jsonToTrace(o->in, o->out, j);
              dir = "JSON+BIN -> trace";
            }
            if (o->json)
              printJson(o->out, kind == convert::FileKind::Trace, s);
            else if (!o->quiet)
              printText(o->out, dir, s);
            return kOk;
          }};
}

}  // namespace trtrace::cli
