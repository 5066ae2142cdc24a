// The options push and pull share: how to reach the registry (docs/registry.md).
#pragma once
#include <CLI/CLI.hpp>

#include "trtrace/registry.h"

namespace trtrace::cli {

inline void addRegistryOptions(CLI::App* sub, registry::Options* o) {
  sub->add_flag("--plain-http", o->plainHttp, "Talk to the registry over http:// (a trusted host only)");
  sub->add_option("--ca-file", o->caFile, "PEM certificates trusted besides the system store")
      ->check(CLI::ExistingFile);
  sub->add_option(
      "--registry-config", o->configFile,
      "Docker/OCI config file holding the credentials (default: $DOCKER_CONFIG/config.json, ~/.docker/config.json)");
  sub->add_option("-j,--jobs", o->jobs, "Blobs transferred at once (default 4)")->check(CLI::Range(1u, 64u));
}

}  // namespace trtrace::cli
