// trtrace push TRACE REF: the trace as an OCI artifact in a registry (docs/registry.md); prints
// the manifest digest.
#include <cinttypes>
#include <cstdio>

#include "commands.h"
#include "registry_cli.h"
#include "summary.h"
#include "trtrace/convert.h"
#include "trtrace/error.h"
#include "trtrace/reader.h"

namespace trtrace::cli {
namespace {

struct PushOptions {
  std::string trace, ref;
  registry::Options o;
  uint64_t chunkMiB = 64;
};

// The manifest's annotations: what the trace holds, as `trtrace info` counts it.
std::map<std::string, std::string> annotationsOf(const std::string& path) {
  const auto r = Reader::open(path);
  const Summary s = summarise(*r);
  const HeaderView& h = r->header();
  return {{"org.trtrace.format", std::to_string(h.formatMajor) + "." + std::to_string(h.formatMinor)},
          {"org.trtrace.library", std::string(h.libraryName)},
          {"org.trtrace.library.version", std::string(h.libraryVersion)},
          {"org.trtrace.calls", std::to_string(s.calls)},
          {"org.trtrace.networks", std::to_string(s.perNet.size())},
          {"org.trtrace.builds", std::to_string(s.builds)},
          {"org.trtrace.bytes.logical", std::to_string(s.logical)},
          {"org.trtrace.bytes.unique", std::to_string(s.unique)},
          {"org.trtrace.bytes.stored", std::to_string(s.stored)}};
}

int run(PushOptions& p) {
  // The artifact is the trace file's own bytes (pull gives them back): a JSON+BIN capture is
  // converted first, so that what is pushed is what every tool reads.
  if (convert::detect(p.trace) == convert::FileKind::Json)
    throw Error(Error::Kind::Usage, p.trace + ": NVIDIA JSON+BIN; push takes a trace (trtrace convert " + p.trace +
                                        " -o TRACE.trtrace, then push that)");
  const registry::Reference ref = registry::Reference::parse(p.ref);
  p.o.chunkBytes = p.chunkMiB << 20;
  p.o.label = "trtrace push " + p.trace;
  const registry::PushResult r = registry::push(p.trace, ref, p.o, annotationsOf(p.trace));
  std::fprintf(stderr,
               "trtrace push: %s: %" PRIu64 " blobs: %" PRIu64 " uploaded (%s), %" PRIu64 " mounted, %" PRIu64
               " already there\n",
               ref.str().c_str(), r.blobs, r.uploaded, humanBytes(double(r.uploadedBytes)).c_str(), r.mounted,
               r.present);
  std::printf("%s\n", r.manifestDigest.c_str());
  return kOk;
}

}  // namespace

Command addPush(CLI::App& app) {
  auto p = std::make_shared<PushOptions>();
  CLI::App* sub =
      app.add_subcommand("push", "Push a trace to an OCI registry as an artifact; prints the manifest digest");
  sub->add_option("trace", p->trace, "Trace file (closed)")->required();
  sub->add_option("ref", p->ref, "[oci://]HOST[:PORT]/REPO[:TAG|@DIGEST]")->required();
  addRegistryOptions(sub, &p->o);
  sub->add_option("--mount-from", p->o.mountFrom, "Repositories of the same registry to mount missing blobs from");
  sub->add_option("--chunk-mib", p->chunkMiB, "Blobs over this many MiB go in PATCH chunks of this size (default 64)")
      ->check(CLI::Range(uint64_t(1), uint64_t(4096)));
  return {sub, [p] { return run(*p); }};
}

}  // namespace trtrace::cli
