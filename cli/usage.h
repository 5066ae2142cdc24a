// The command line of every tool (trtrace and tensorrt_player): how a command line that does not
// parse is reported, and the validators of numeric options. Header-only: the player includes it
// too (it links CLI11 but not the trtrace CLI).
//
// A CLI11 ParseError (unknown option, missing or extra argument, a value that does not convert or
// fails its validator) is one line "<tool>: <subcommand>: <message>" and exit kUsage (64, as
// sysexits' EX_USAGE; docs/errors.md), for every tool and subcommand alike. --help (and a
// subcommand's) still prints the help on stdout and exits 0.
#pragma once
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <CLI/CLI.hpp>

#include "exit_codes.h"
#include "trtrace/api_abi.h"
#include "trtrace/error.h"
#include "trtrace/format.h"
#include "trtrace/text.h"

namespace trtrace::cli {

using exits::kUsage;  // exit_codes.h

// What --version prints (both tools): the release, the trace format it writes, and the library
// versions the API spec describes.
inline std::string versionLine(const char* tool) {
  std::string libs;
  for (const auto& v : abi::kSpecVersions) libs += (libs.empty() ? "" : ", ") + std::string(v.text);
  return std::string(tool) + " " + TRTRACE_VERSION + " (trace format " + std::to_string(format::kVersionMajor) + "." +
         std::to_string(format::kVersionMinor) + "; " + abi::kLibraryName + " " + libs + ")";
}

// The subcommand being parsed when the error came, for the message ("" for a tool without them).
inline std::string failingCommand(const CLI::App& app) {
  std::string name;
  for (const CLI::App* sub : app.get_subcommands()) name = sub->get_name();
  return name;
}

// The one line of a command line that does not parse, "<tool>: <sub>: <message> (see <tool> <sub>
// --help)"; returns kUsage.
inline int usageError(const char* tool, const std::string& sub, const std::string& msg) {
  const std::string help = std::string(tool) + (sub.empty() ? "" : " " + sub) + " --help";
  std::fprintf(stderr, "%s: %s%s (see %s)\n", tool, sub.empty() ? "" : (sub + ": ").c_str(), terminalText(msg).c_str(),
               help.c_str());
  return kUsage;
}

// Parses argv; returns -1 when the tool should run, else the exit code to return.
inline int parseCommandLine(CLI::App& app, int argc, const char* const* argv, const char* tool) {
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --help-all, --version
    std::string msg = e.what();
    for (char& c : msg)
      if (c == '\n') c = ' ';
    while (!msg.empty() && msg.back() == ' ') msg.pop_back();
    return usageError(tool, failingCommand(app), msg.empty() ? std::string("bad command line") : msg);
  }
}

// A number of seconds: finite, above 0, at most a week (a longer limit is no limit, and a value
// past it, like 1e30, overflows the clocks it is added to).
inline const CLI::Validator kSeconds(
    [](std::string& s) -> std::string {
      char* end = nullptr;
      const double v = std::strtod(s.c_str(), &end);
      if (s.empty() || *end != '\0' || !std::isfinite(v)) return "\"" + s + "\" is not a number of seconds";
      if (v <= 0 || v > 7 * 24 * 3600.0) return s + " s is out of range (above 0, at most 604800 s: a week)";
      return {};
    },
    "SECONDS in (0, 604800]");

}  // namespace trtrace::cli

namespace trtrace::cli {

// The line for an exception that reached a tool's top level, `doing` naming the tool's work and its
// input ("dump t.trtrace"). A trtrace::Error's message is one line that names the file and offset
// already; the standard library's (bad_alloc, out_of_range from a substr, length_error from a
// reserve) name neither and are bare type or function names, so the line says what was being done
// and the kind of failure in words, the library's text only in parentheses. Escaped for a terminal:
// messages may echo names from a trace.
inline std::string topLevelMessage(const std::exception& e, const std::string& doing) {
  if (dynamic_cast<const Error*>(&e)) return terminalText(e.what());
  std::string what;
  if (dynamic_cast<const std::bad_alloc*>(&e))
    what = "out of memory";
  else if (dynamic_cast<const std::length_error*>(&e))
    what = "a size beyond any buffer (the input is likely damaged)";
  else if (dynamic_cast<const std::out_of_range*>(&e))
    what = "a value out of range (the input is likely damaged)";
  else if (dynamic_cast<const std::logic_error*>(&e))
    what = "an internal check failed (the input is likely damaged)";
  else
    return terminalText(doing + ": " + e.what());
  return terminalText(doing + ": " + what + " [" + e.what() + "]");
}

// A logic error from the standard library at the top level came from input no check caught:
// reported as corrupt input rather than as a failure to read it.
inline bool fromDamagedInput(const std::exception& e) {
  return dynamic_cast<const std::logic_error*>(&e) != nullptr && dynamic_cast<const Error*>(&e) == nullptr;
}

}  // namespace trtrace::cli
