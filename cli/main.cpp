// trtrace: inspect, verify and rewrite traces. Errors are one line: "trtrace: <message>".
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "commands.h"
#include "trtrace/error.h"

namespace trtrace::cli {
namespace {
std::vector<std::string> gCommand;
}
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
  CLI::App app{"trtrace: record/replay traces of TensorRT-RTX network builds"};
  app.require_subcommand(1);
  std::vector<Command> commands;
  for (auto add : kCommands) commands.push_back(add(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& c : commands)
      if (c.sub->parsed()) return c.run();
  } catch (const trtrace::Error& e) {
    std::fprintf(stderr, "trtrace: %s\n", e.what());
    switch (e.kind()) {
      case trtrace::Error::Kind::Corrupt: return kCorrupt;
      case trtrace::Error::Kind::Truncated: return kTruncated;
      default: return kError;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trtrace: %s\n", trtrace::describe(e).c_str());
    return kError;
  }
  return kError;
}
