// One validation of recorded calls against the spec (trtrace/call_check.h). Driven by the generated
// table alone: which parameter counts which array is api::ParamDesc::lengthOf, never a method name.
#include "trtrace/call_check.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>

#include "trtrace/api_abi.h"
#include "trtrace/api_table.h"

namespace trtrace {
namespace {

std::string fullName(std::string_view iface, std::string_view method) {
  return std::string(iface) + "::" + std::string(method);
}

std::string argName(const api::ApiDesc& d, uint32_t i) {
  return "argument " + std::to_string(i) + " (" + std::string(d.args[i]) + ")";
}

// The elements the player passes for an array parameter: what Replayer::argObjects / argArray /
// argBytes read from the value, whatever kind the trace says it is (a hostile trace may lie).
std::optional<uint64_t> elements(const api::ParamDesc& p, const ValueView& v) {
  switch (p.kind) {
    case api::Kind::Handles: return v.handles().size();
    case api::Kind::Array: return v.kind() == ValueKind::F32Array ? v.floats().size() : v.ints().size();
    case api::Kind::Bytes: return v.bytes().size();
    case api::Kind::Strings: {  // recorded NUL-separated, each string followed by its NUL
      auto b = v.bytes();
      return static_cast<uint64_t>(std::count(b.begin(), b.end(), std::byte{0}));
    }
    default: return std::nullopt;  // not an array: lengthOf never names it
  }
}

// Count argument `c` of `d` against the array it names; "" when they agree.
std::string pairProblem(const api::ApiDesc& d, const CallView& call, uint32_t c) {
  const auto a = static_cast<uint32_t>(d.params[c].lengthOf);
  if (a >= d.nargs || c >= call.argCount() || a >= call.argCount()) return {};  // a missing argument diverges
  const std::optional<uint64_t> n = elements(d.params[a], call.arg(a));
  if (!n) return {};
  const ValueView count = call.arg(c);
  // As the player reads an integer parameter: signed ones from i, unsigned ones from u.
  const bool isSigned = d.params[c].kind == api::Kind::I64;
  if (isSigned && count.asI64() < 0)
    return argName(d, c) + " is " + std::to_string(count.asI64()) + ", a negative count of " + argName(d, a);
  const uint64_t claimed = isSigned ? static_cast<uint64_t>(count.asI64()) : count.asU64();
  if (claimed == *n) return {};
  return argName(d, c) + " is " + std::to_string(claimed) + ", but " + argName(d, a) + " holds " + std::to_string(*n) +
         (*n == 1 ? " element" : " elements");
}

}  // namespace

bool isSpecLibrary(const Reader& reader) { return reader.header().libraryName == abi::kLibraryName; }

std::string apiDescriptorProblem(const ApiInfo& described) {
  const api::ApiDesc* d = api::find(described.id);
  if (!d) return {};
  const std::string here = fullName(d->interface, d->method);
  if (described.interfaceName != d->interface || described.methodName != d->method)
    return "the trace describes API id " + std::to_string(described.id) + " as " +
           fullName(described.interfaceName, described.methodName) + ", which is " + here;
  if (described.argNames.size() != d->nargs)
    return "the trace describes API id " + std::to_string(described.id) + " (" + here + ") with " +
           std::to_string(described.argNames.size()) + " arguments, it takes " + std::to_string(d->nargs);
  return {};
}

std::string arrayCountProblem(const CallView& call) {
  const api::ApiDesc* d = api::find(call.apiId());
  if (!d) return {};
  for (uint32_t i = 0; i < d->nargs; ++i)
    if (d->params[i].lengthOf >= 0)
      if (std::string p = pairProblem(*d, call, i); !p.empty()) return p;
  return {};
}

std::string callProblem(const Reader& reader, const CallView& call) {
  if (const ApiInfo* described = reader.api(call.apiId()))
    if (std::string p = apiDescriptorProblem(*described); !p.empty()) return p;
  return arrayCountProblem(call);
}

}  // namespace trtrace
