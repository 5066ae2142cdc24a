// trtrace::Error: the one exception type of the trace library. Its message is a single line that
// names the file and the offset or field at fault; the CLI prints it as "trtrace: <message>".
#pragma once
#include <new>
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
    Finishing,  // --no-wait: the trace is still being finished by another process (trtrace/finishing.h)
  };
  Error(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  explicit Error(const std::string& message) : Error(Kind::Io, message) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// The line a tool prints for an exception that reached its top level: its message, except for the
// standard library's allocation failures, whose what() is a bare type name ("std::bad_alloc").
inline std::string describe(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e)) return "out of memory";
  if (dynamic_cast<const std::length_error*>(&e))
    return std::string("out of memory (size beyond any buffer: ") + e.what() + ")";
  return e.what();
}

}  // namespace trtrace
