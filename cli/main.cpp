// trtrace: inspect, verify and rewrite traces. Errors are one line: "trtrace: <message>".
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "child_run.h"
#include "commands.h"
#include "trtrace/error.h"
#include "trtrace/finishing.h"
#include "trtrace/registry.h"
#include "trtrace/text.h"
#include "usage.h"

namespace trtrace::cli {
namespace {
std::vector<std::string> gCommand;

// "<subcommand> <its first argument>" (the input it reads), for a message that names neither.
std::string doing(const Command& c) {
  std::string s = c.sub->get_name();
  for (const CLI::Option* o : c.sub->get_options())
    if (o->get_positional() && !o->results().empty()) return s + " " + o->results().front();
  return s;
}

int runCommand(const Command& c) {
  try {
    return c.run();
  } catch (const Interrupted& e) {  // (child_run.h) what the command made is gone already
    std::fprintf(stderr, "trtrace: %s\n", topLevelMessage(e, doing(c)).c_str());
    return 128 + e.signal;
  } catch (const trtrace::Error& e) {
    std::fprintf(stderr, "trtrace: %s\n", topLevelMessage(e, doing(c)).c_str());
    switch (e.kind()) {
      case trtrace::Error::Kind::Corrupt: return kCorrupt;
      case trtrace::Error::Kind::Truncated: return kTruncated;
      case trtrace::Error::Kind::Finishing: return exits::tool::kStillFinishing;
      default: return kError;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trtrace: %s\n", topLevelMessage(e, doing(c)).c_str());
    return fromDamagedInput(e) ? kCorrupt : kError;
  }
}
// The traces pulled for this command's oci:// arguments, held while it runs (a partial one is
// removed when the process ends).
std::vector<registry::CachedTrace> gPulled;

// The oci:// arguments of a subcommand that reads traces, pulled into the reference cache
// (docs/registry.md, "Replay from a reference") and replaced by the cached file's path: info and
// dump read the call log only (no weight is fetched), the others the whole trace. Returns the exit
// code of a failed pull (one line said), or -1.
int pullReferences(std::vector<std::string>& args) {
  if (args.size() < 2 || args[1] == "push" || args[1] == "pull" || args[1] == "capture") return -1;
  registry::Need need;
  if (args[1] == "info" || args[1] == "dump") need.kind = registry::Need::Kind::CallLog;
  for (size_t i = 2; i < args.size(); ++i) {
    if (!registry::isReference(args[i])) continue;
    try {
      gPulled.push_back(
          registry::pullCached(registry::Reference::parse(args[i]), "trtrace " + args[1] + " " + args[i], need));
      args[i] = gPulled.back().path;
    } catch (const trtrace::Error& e) {
      std::fprintf(stderr, "trtrace: %s\n", terminalText(e.what()).c_str());
      if (args[1] == "diff") return exits::diff::kCannotCompare;
      return e.kind() == trtrace::Error::Kind::Corrupt ? kCorrupt : kError;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trtrace: %s\n", topLevelMessage(e, args[1] + " " + args[i]).c_str());
      if (args[1] == "diff") return exits::diff::kCannotCompare;
      return kError;
    }
  }
  return -1;
}

}  // namespace
const std::vector<std::string>& commandAfterSeparator() { return gCommand; }
}  // namespace trtrace::cli

int main(int argc, char** argv) {
  using namespace trtrace::cli;
  if (argc > 1 && std::strcmp(argv[1], "capture") == 0)  // trtrace capture [options] -- CMD ARGS...
    for (int i = 2; i < argc; ++i)
      if (std::strcmp(argv[i], "--") == 0) {
        gCommand.assign(argv + i + 1, argv + argc);
        argc = i;
        break;
      }
  std::vector<std::string> args(argv, argv + argc);
  if (const int rc = pullReferences(args); rc >= 0) return rc;
  std::vector<char*> argp;
  for (std::string& arg : args) argp.push_back(arg.data());
  argv = argp.data();
  CLI::App app{"trtrace: record/replay traces of TensorRT-RTX network builds"};
  app.set_version_flag("--version", versionLine("trtrace"));
  app.require_subcommand(1);
  std::vector<Command> commands;
  for (auto add : kCommands) commands.push_back(add(app));
  // Every subcommand reads traces: one that a finisher is still writing is waited for, unless
  // --no-wait (trtrace/finishing.h; exit code kStillFinishing).
  bool noWait = false;
  for (auto& c : commands)
    c.sub->add_flag("--no-wait", noWait,
                    "a trace still being finished by its capture's finisher: fail at once (exit 6) instead of "
                    "waiting for it (capture: do not wait for the trace the command wrote)");
  if (const int rc = parseCommandLine(app, argc, argv, "trtrace"); rc >= 0) return rc;
  trtrace::finishing::setWait(!noWait);
  for (auto& c : commands)
    if (c.sub->parsed()) return runCommand(c);
  return kError;
}
