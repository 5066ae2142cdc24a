// trtrace pull REF -o TRACE: a trace pushed with trtrace push, byte for byte (docs/registry.md).
#include <cstdio>

#include "commands.h"
#include "registry_cli.h"

namespace trtrace::cli {
namespace {

struct PullOptions {
  std::string ref, out;
  registry::Options o;
};

int run(PullOptions& p) {
  const registry::Reference ref = registry::Reference::parse(p.ref);
  p.o.label = "trtrace pull " + ref.str();
  const std::string digest = registry::pull(ref, p.out, p.o);
  std::printf("%s\n", digest.c_str());
  return kOk;
}

}  // namespace

Command addPull(CLI::App& app) {
  auto p = std::make_shared<PullOptions>();
  CLI::App* sub = app.add_subcommand("pull", "Pull a trace from an OCI registry; prints the manifest digest");
  sub->add_option("ref", p->ref, "[oci://]HOST[:PORT]/REPO[:TAG|@DIGEST]")->required();
  sub->add_option("-o,--output", p->out, "Trace file to write (appears complete or not at all)")->required();
  sub->add_flag("--no-cache", p->o.noCache,
                "Write each layer straight to the output: none kept in the cache (a failed pull starts over)");
  addRegistryOptions(sub, &p->o);
  return {sub, [p] { return run(*p); }};
}

}  // namespace trtrace::cli
