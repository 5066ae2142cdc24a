// trtrace verify TRACE [--json]: structure, every checksum and blob hash, alignment, footer index.
// Exit 0 when sound, 2 when corrupt, 3 when only truncated (a crash mid-write, including a trace
// whose blocks are all sound but that was never closed: its calls are a clean prefix).
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "trtrace/convert.h"
#include "trtrace/text.h"
#include "trtrace/reader.h"

namespace trtrace::cli {

// --json: the report as one JSON object on stdout (the problems are on stderr all the same).
static void printJson(const std::string& path, const VerifyReport& rep) {
  std::string issues;
  for (const auto& i : rep.issues)
    issues += std::string(issues.empty() ? "" : ", ") + "{\"problem\": \"" +
              (i.problem == VerifyReport::Problem::Corrupt ? "corrupt" : "truncated") +
              "\", \"offset\": " + std::to_string(i.offset) + ", \"what\": " + jsonString(i.what) + "}";
  std::printf(
      "{\"file\": %s, \"status\": \"%s\", \"segments\": %llu, \"calls\": %llu, \"blobs\": %llu, "
      "\"blob_bytes\": %llu, \"lost_blobs\": %llu, \"lost_bytes\": %llu, \"replaced_blobs\": %llu, \"issues\": [%s]}\n",
      jsonString(path).c_str(),
      rep.ok()        ? "ok"
      : rep.corrupt() ? "corrupt"
                      : "truncated",
      (unsigned long long)rep.segments, (unsigned long long)rep.calls, (unsigned long long)rep.blobs,
      (unsigned long long)rep.blobBytes, (unsigned long long)rep.lostBlobs, (unsigned long long)rep.lostBytes,
      (unsigned long long)rep.replacedBlobs, issues.c_str());
}

static void printText(const std::string& path, const VerifyReport& rep, bool quiet) {
  // Truncated only: what is there is sound, and replays (tensorrt_player) up to the cut.
  const std::string prefix = rep.truncated() ? " (a clean prefix)" : "";
  // Lost blobs are not damage: the app released them before the capture read them (format.h).
  std::string lost = rep.lostBlobs ? ", " + std::to_string(rep.lostBlobs) + " lost at capture (" +
                                         humanBytes(double(rep.lostBytes)) + ", read as zeros)"
                                   : "";
  // Nor are Replaced ones: changed in place before any build read them, rebound before it (format.h).
  if (rep.replacedBlobs) lost += ", " + std::to_string(rep.replacedBlobs) + " replaced before the build";
  if (!quiet || !rep.ok())
    std::printf("%s: %s%s: %llu segments, %llu calls, %llu blobs (%s%s)\n", path.c_str(),
                rep.ok()        ? "OK"
                : rep.corrupt() ? "CORRUPT"
                                : "TRUNCATED",
                prefix.c_str(), (unsigned long long)rep.segments, (unsigned long long)rep.calls,
                (unsigned long long)rep.blobs, humanBytes(double(rep.blobBytes)).c_str(), lost.c_str());
}

Command addVerify(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto quiet = std::make_shared<bool>(false);
  auto json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("verify", "Check a trace's structure, checksums, blob hashes and alignment");
  sub->add_option("trace", *path, "Trace file")->required();
  sub->add_flag("-q,--quiet", *quiet, "Print problems only");
  sub->add_flag("--json", *json, "Machine-readable report: one JSON object on stdout");
  return {sub, [=] {
            auto r = convert::openCapture(*path);
            Progress progress("trtrace verify " + *path, "checking blocks", r->mapping().size());
            auto rep = verifyTrace(*r, [&](uint64_t done, uint64_t) { progress.update(done); });
            for (auto& i : rep.issues)
              std::fprintf(stderr, "trtrace: %s: %s\n",
                           i.problem == VerifyReport::Problem::Corrupt ? "corrupt" : "truncated",
                           terminalText(i.what).c_str());
            *json ? printJson(*path, rep) : printText(*path, rep, *quiet);
            return rep.ok() ? kOk : rep.corrupt() ? kCorrupt : kTruncated;
          }};
}

}  // namespace trtrace::cli
