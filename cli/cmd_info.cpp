// trtrace info TRACE [--json]: calls, per-API counts, networks, builds and weight volumes.
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>

#include "commands.h"
#include "summary.h"
#include "trace_edit.h"
#include "trtrace/convert.h"
#include "trtrace/error.h"
#include "trtrace/format.h"
#include "trtrace/network_id.h"
#include "trtrace/reader.h"

namespace trtrace::cli {

namespace {

void printJson(const std::string* path, const Reader* r, const Summary& s) {
  auto& h = r->header();
  const auto& [calls, builds, buildsOk, perApi, perNet, refs, logical, inlineBytes, nBlobs, unique, stored, compressed,
               logStored, logCompressed, buildsUnrecorded] = s;
  const double dedup = s.dedup(), ratio = s.ratio();
  std::printf(
      "{\"path\":%s,\"closed\":%s,\"truncated_at\":%s,\"producer\":%s,\"producer_version\":%s,"
      "\"library\":%s,\"library_version\":%s,\"library_build_id\":%s,\"host\":%s,\"pid\":%" PRIu64
      ",\"format\":\"%u.%u\","
      "\"calls\":%" PRIu64 ",\"segments\":%zu,\"segments_compressed\":%" PRIu64 ",\"call_log_stored_bytes\":%" PRIu64
      ",\"builds\":%" PRIu64 ",\"builds_ok\":%" PRIu64 ",\"builds_not_recorded\":%" PRIu64 ",\"apis\":{",
      jsonString(*path).c_str(), r->closedCleanly() ? "true" : "false",
      r->truncatedAt() ? std::to_string(*r->truncatedAt()).c_str() : "null", jsonString(h.producer).c_str(),
      jsonString(h.producerVersion).c_str(), jsonString(h.libraryName).c_str(), jsonString(h.libraryVersion).c_str(),
      jsonString(h.libraryBuildId).c_str(), jsonString(h.host).c_str(), h.pid, h.formatMajor, h.formatMinor, calls,
      r->segmentCount(), logCompressed, logStored, builds, buildsOk, buildsUnrecorded);
  bool first = true;
  for (auto& [id, n] : perApi) {
    std::printf("%s%s:%" PRIu64, first ? "" : ",", jsonString(apiName(*r, id)).c_str(), n);
    first = false;
  }
  std::printf("},\"networks\":{");
  first = true;
  for (auto& [id, n] : perNet) {
    std::printf("%s\"%u\":%" PRIu64, first ? "" : ",", shownNetwork(id), n);
    first = false;
  }
  std::printf("},\"weights\":{\"references\":%" PRIu64 ",\"logical_bytes\":%" PRIu64 ",\"inline_bytes\":%" PRIu64
              ",\"unique_blobs\":%zu,\"unique_bytes\":%" PRIu64 ",\"stored_bytes\":%" PRIu64
              ",\"compressed_blobs\":%" PRIu64 ",\"dedup_ratio\":%.4f,\"compression_ratio\":%.4f}}\n",
              refs, logical, inlineBytes, size_t(nBlobs), unique, stored, compressed, dedup, ratio);
}

void printText(const std::string* path, const Reader* r, const Summary& s) {
  auto& h = r->header();
  const auto& [calls, builds, buildsOk, perApi, perNet, refs, logical, inlineBytes, nBlobs, unique, stored, compressed,
               logStored, logCompressed, buildsUnrecorded] = s;
  const double dedup = s.dedup(), ratio = s.ratio();
  const auto t = [](std::string_view text) { return terminalText(text); };  // the trace's strings are untrusted
  std::printf("trace:      %s (format %u.%u, %s)\n", t(*path).c_str(), h.formatMajor, h.formatMinor,
              r->closedCleanly() ? "closed" : "not closed");
  if (r->truncatedAt()) std::printf("truncated:  %s\n", t(r->truncationMessage()).c_str());
  std::printf("producer:   %s %s\nlibrary:    %s %s\nhost:       %s (pid %" PRIu64 ")\n", t(h.producer).c_str(),
              t(h.producerVersion).c_str(), t(h.libraryName).c_str(), t(h.libraryVersion).c_str(), t(h.host).c_str(),
              h.pid);
  if (!h.libraryBuildId.empty()) std::printf("build id:   %s\n", t(h.libraryBuildId).c_str());
  for (auto& [k, v] : h.settings) std::printf("setting:    %s=%s\n", t(k).c_str(), t(v).c_str());
  std::printf("calls:      %" PRIu64 " in %zu segments; builds: %" PRIu64 " (%" PRIu64 " ok%s)\n", calls,
              r->segmentCount(), builds, buildsOk,
              buildsUnrecorded ? (", " + std::to_string(buildsUnrecorded) + " outcome not recorded").c_str() : "");
  std::printf("call log:   %s stored (%" PRIu64 " of %zu segments zstd), %.1f B/call\n",
              humanBytes(double(logStored)).c_str(), logCompressed, r->segmentCount(),
              calls ? double(logStored) / double(calls) : 0.0);
  std::printf("networks:   %zu\n", perNet.size());
  for (auto& [id, n] : perNet) std::printf("  network %u: %" PRIu64 " calls\n", shownNetwork(id), n);
  std::printf("apis:\n");
  for (auto& [id, n] : perApi) std::printf("  %10" PRIu64 "  %s\n", n, t(apiName(*r, id)).c_str());
  std::printf("weights:    %" PRIu64 " references, logical %s, unique %s in %zu blobs, stored %s (%" PRIu64
              " compressed), inline %s\n",
              refs, humanBytes(double(logical)).c_str(), humanBytes(double(unique)).c_str(), size_t(nBlobs),
              humanBytes(double(stored)).c_str(), compressed, humanBytes(double(inlineBytes)).c_str());
  std::printf("ratios:     dedup %.2fx, compression %.2fx\n", dedup, ratio);
}

}  // namespace

Command addInfo(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("info", "Summarise a trace: calls, APIs, networks, weights");
  sub->add_option("trace", *path, "Trace file")->required();
  sub->add_flag("--json", *json, "Machine-readable output");
  return {sub, [=] {
            auto r = convert::openCapture(*path);
            if (r->truncatedAt() && *r->truncatedAt() <= sizeof(format::FileHeader))  // not even the header block
              throw Error(Error::Kind::Truncated, r->truncationMessage() + "; no capture in it");
            const Summary s = summarise(*r);
            if (*json)
              printJson(path.get(), r.get(), s);
            else
              printText(path.get(), r.get(), s);
            return kOk;
          }};
}

}  // namespace trtrace::cli
