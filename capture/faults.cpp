// Test fault injectors (faults.h).
#include "faults.h"

#include <signal.h>

#include <cerrno>
#include <cstdlib>
#include <string>

namespace trtrace::capture {

std::optional<WriteFaultSpec> parseWriteFault(const char* value) {
  const std::string s(value);
  const size_t colon = s.find(':');
  const std::string err = colon == std::string::npos ? "ENOSPC" : s.substr(colon + 1);
  char* end = nullptr;
  const long long n = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str() || (*end && *end != ':') || n < 0 || (err != "ENOSPC" && err != "EIO")) return std::nullopt;
  return WriteFaultSpec{n, err == "EIO" ? EIO : ENOSPC};
}

void Faults::configure(const EnvLookup& env) {
  if (env("TRTRACE_FAULT_KILL_AT_CALL")) killAtCall_ = envInt(env, "TRTRACE_FAULT_KILL_AT_CALL", -1);
  finisherStallMs_ = envInt(env, "TRTRACE_FAULT_FINISHER_STALL_MS", 0);
  finisherFail_ = envInt(env, "TRTRACE_FAULT_FINISHER_FAIL", 0) != 0;
  if (const char* v = env("TRTRACE_FAULT_WRITE_FAIL")) {
    if (const std::optional<WriteFaultSpec> f = parseWriteFault(v))
      writeFail_ = *f;
    else
      warnBadValue("TRTRACE_FAULT_WRITE_FAIL", v, "N or N:ENOSPC or N:EIO");
  }
}

void Faults::countCall() {
  const int64_t n = callsStarted_.fetch_add(1);
  if (n == killAtCall_.load(std::memory_order_relaxed)) raise(SIGKILL);
}

void Faults::finisherStarted() {
  if (finisherFail_) writeFail_ = {writes_.load(), ENOSPC};
}

std::function<int()> Faults::writeHook() {
  if (writeFail_.at < 0 && !finisherFail_) return {};
  return [this] { return writes_.fetch_add(1) == writeFail_.at ? writeFail_.err : 0; };
}

}  // namespace trtrace::capture
