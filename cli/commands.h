// The trtrace subcommands. Each one registers itself on the CLI11 app and returns the function
// that runs it. To add a subcommand (e.g. `convert`): write cli/cmd_<name>.cpp with an add<Name>
// function, declare it here and list it in kCommands (cli/CMakeLists.txt builds every cli/*.cpp).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "exit_codes.h"
#include "trtrace/progress.h"

namespace trtrace::cli {

using namespace trtrace::exits::tool;  // the subcommands' exit codes (exit_codes.h)

struct Command {
  CLI::App* sub = nullptr;
  std::function<int()> run;  // called after parsing when `sub` was chosen; returns the exit code
};

Command addInfo(CLI::App& app);
Command addDump(CLI::App& app);
Command addVerify(CLI::App& app);
Command addRewrite(CLI::App& app);
Command addConvert(CLI::App& app);
Command addDiff(CLI::App& app);
Command addStrip(CLI::App& app);
Command addExtract(CLI::App& app);
Command addReduce(CLI::App& app);
Command addExport(CLI::App& app);
Command addCapture(CLI::App& app);
Command addBench(CLI::App& app);
Command addCache(CLI::App& app);
Command addPush(CLI::App& app);
Command addPull(CLI::App& app);

inline constexpr Command (*kCommands[])(CLI::App&) = {addInfo,    addDump,  addVerify,  addRewrite, addConvert,
                                                      addDiff,    addStrip, addExtract, addReduce,  addExport,
                                                      addCapture, addBench, addCache,   addPush,    addPull};

// `trtrace capture [options] -- CMD ARGS...`: main() hands CLI11 the arguments before the first
// `--` and keeps the rest here, unparsed (they are the command's, options included).
const std::vector<std::string>& commandAfterSeparator();

using trtrace::humanBytes;  // trtrace/progress.h

}  // namespace trtrace::cli
