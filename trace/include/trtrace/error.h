// trtrace::Error: the one exception type of the trace library. Its message is a single line that
// names the file and the offset or field at fault; the CLI prints it as "trtrace: <message>".
#pragma once
#include <stdexcept>
#include <string>

namespace trtrace {

class Error : public std::runtime_error {
 public:
  enum class Kind {
    Io,         // cannot read or write a file
    Corrupt,    // damaged or malformed input
    Truncated,  // a clean prefix, cut
    Usage,      // bad options; an output that would replace an input
    Empty,      // well-formed input with nothing to do in it (no calls)
  };
  Error(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  explicit Error(const std::string& message) : Error(Kind::Io, message) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

}  // namespace trtrace
