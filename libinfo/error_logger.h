// The logger the real library's builder is given, by the shim and by the player: it keeps the
// library's error messages, which a build record carries (BuildResult.errors), and passes every
// message on, where the subclass says (the application's logger; the player's stderr).
#pragma once
#include <mutex>
#include <string>
#include <vector>

#include "trtrace/api_abi.h"

namespace trtrace::lib {

class ErrorKeepingLogger : public abi::ILogger {
 public:
  static constexpr size_t kMaxErrors = 64;  // kept per build: a library that floods costs no memory
  static bool isError(abi::Severity s) { return s == abi::Severity::kINTERNAL_ERROR || s == abi::Severity::kERROR; }

  void log(abi::Severity severity, const char* msg) noexcept final;
  // The errors logged since the last take, oldest first (the first kMaxErrors).
  std::vector<std::string> takeErrors();

 protected:
  // Every message, errors included, once kept (the library may log from its own threads).
  virtual void pass(abi::Severity severity, const char* msg) noexcept = 0;

 private:
  std::mutex mu_;
  std::vector<std::string> errors_;
};

}  // namespace trtrace::lib
