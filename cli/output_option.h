// -o/--output on every subcommand that writes a file or folder (docs/errors.md, "Command lines"):
// one spelling of the output for every tool, with a subcommand's older form (a positional OUT, or
// export's --python DIR) kept as an alias of it. Header-only, as usage.h.
#pragma once
#include <cctype>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace trtrace::cli {

// Adds -o,--output to `sub`, written to `target`. With `alias` (a positional name such as "out", or
// an option such as "--python"), that form names the output too: given alone it is the output;
// given with -o, both must name the same path (else the command line does not parse: usage error,
// exit 64, nothing done). One of the two is required.
inline void addOutputOption(CLI::App* sub, std::string& target, const std::string& help,
                            const std::string& alias = "") {
  CLI::Option* output = sub->add_option("-o,--output", target, help);
  if (alias.empty()) {
    output->required();
    return;
  }
  auto aliasValue = std::make_shared<std::string>();
  CLI::Option* old = sub->add_option(alias, *aliasValue, "the same as -o/--output (kept as its alias)");
  std::string aliasName = alias;  // as --help shows it: a positional in capitals (OUT)
  if (alias[0] != '-')
    for (char& c : aliasName) c = char(std::toupper(static_cast<unsigned char>(c)));
  sub->parse_complete_callback([output, old, aliasValue, aliasName, &target] {
    if (!old->count()) {
      if (!output->count()) throw CLI::RequiredError("-o/--output (or " + aliasName + ")");
      return;
    }
    if (output->count() && target != *aliasValue)
      throw CLI::ValidationError("-o " + target + " and " + aliasName + " " + *aliasValue +
                                 " name different outputs (give one)");
    target = *aliasValue;
  });
}

}  // namespace trtrace::cli
