// The error-keeping logger (error_logger.h).
#include "error_logger.h"

namespace trtrace::lib {

void ErrorKeepingLogger::log(abi::Severity severity, const char* msg) noexcept {
  if (msg && isError(severity)) {
    try {
      std::lock_guard<std::mutex> lk(mu_);
      if (errors_.size() < kMaxErrors) errors_.emplace_back(msg);
    } catch (...) {  // out of memory: the message is still passed on, never thrown into the library
    }
  }
  pass(severity, msg);
}

std::vector<std::string> ErrorKeepingLogger::takeErrors() {
  std::lock_guard<std::mutex> lk(mu_);
  std::vector<std::string> e;
  e.swap(errors_);
  return e;
}

}  // namespace trtrace::lib
