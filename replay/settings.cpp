#include "settings.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "trace_generated.h"
#include "trtrace/error.h"

namespace trtrace::replay {
namespace {

[[noreturn]] void bad(const std::string& text, const std::string& why) {
  throw Error(Error::Kind::Usage, "--set " + text + ": " + why);
}

// The method `Interface::method` of the spec, looked up in the generated table.
const api::ApiDesc* findMethod(std::string_view name) {
  const size_t colon = name.find("::");
  if (colon == std::string_view::npos) return nullptr;
  uint32_t n = 0;
  const api::ApiDesc* all = api::all(&n);
  for (uint32_t i = 0; i < n; ++i)
    if (all[i].interface == name.substr(0, colon) && all[i].method == name.substr(colon + 2) &&
        all[i].iface != api::Iface::None)
      return &all[i];
  return nullptr;
}

bool isScalar(api::Kind k) {
  using K = api::Kind;
  return k == K::Bool || k == K::I64 || k == K::U64 || k == K::F32 || k == K::F64 || k == K::Enum;
}

// The whole of `v` as an integer (base 10), or nothing.
std::optional<int64_t> integer(const std::string& v) {
  if (v.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (errno || *end) return std::nullopt;
  return x;
}

void parseValue(Setting& s, const api::ParamDesc& p) {
  using K = api::Kind;
  const std::string& v = s.value;
  if (p.kind == K::Enum) {
    const auto x = api::enumeratorValue(p.enumId, v);
    if (!x) bad(s.text, "'" + v + "' is not an enumerator of " + std::string(api::enumName(p.enumId)));
    s.i = *x;
  } else if (p.kind == K::Bool) {
    if (v != "true" && v != "false" && v != "1" && v != "0") bad(s.text, "'" + v + "' is not a bool (true or false)");
    s.i = v == "true" || v == "1";
  } else if (p.kind == K::F32 || p.kind == K::F64) {
    char* end = nullptr;
    s.f = std::strtod(v.c_str(), &end);
    if (v.empty() || *end || !std::isfinite(s.f)) bad(s.text, "'" + v + "' is not a finite number");
    s.isFloat = true;
  } else {
    const auto x = integer(v);
    if (!x || (p.kind == K::U64 && *x < 0))
      bad(s.text, "'" + v + "' is not " + (p.kind == K::U64 ? "an unsigned" : "an") + " integer");
    s.i = *x;
  }
}

fb::ValueKind valueKind(api::Kind k) {
  using K = api::Kind;
  switch (k) {
    case K::Bool: return fb::ValueKind::Bool;
    case K::U64: return fb::ValueKind::U64;
    case K::F32: return fb::ValueKind::F32;
    case K::F64: return fb::ValueKind::F64;
    case K::Enum: return fb::ValueKind::Enum;
    default: return fb::ValueKind::I64;
  }
}

}  // namespace

Setting parseSetting(const std::string& given) {
  Setting s;
  s.text = given;
  const size_t eq = given.find('=');
  if (eq == std::string::npos) bad(given, "expected Interface::method=VALUE");
  const std::string name = given.substr(0, eq);
  s.value = given.substr(eq + 1);
  s.api = findMethod(name);
  if (!s.api)
    bad(given, "no method " + name +
                   " in the API spec (names are Interface::method, e.g. BuilderConfig::setBuilderOptimizationLevel)");
  if (s.api->nargs != 1 || !isScalar(s.api->params[0].kind))
    bad(
        given, name + " does not take one scalar (bool, integer, float or enum): it takes (" + [&] {
          std::string t;
          for (uint32_t i = 0; i < s.api->nargs; ++i) t += (i ? ", " : "") + std::string(s.api->params[i].text);
          return t;
        }() + ")");
  parseValue(s, s.api->params[0]);
  return s;
}

CallView settingCall(const Setting& s, uint64_t receiver, uint32_t network, uint64_t seq, std::vector<uint8_t>& buf) {
  flatbuffers::FlatBufferBuilder b(256);
  const api::ParamDesc& p = s.api->params[0];
  const auto v = fb::CreateValue(b, valueKind(p.kind), s.isFloat ? 0 : s.i, s.isFloat ? 0 : static_cast<uint64_t>(s.i),
                                 s.isFloat ? s.f : 0, 0, p.kind == api::Kind::Enum ? p.enumId : 0);
  const auto args = b.CreateVector(&v, 1);
  fb::CallBuilder c(b);
  c.add_seq(seq);
  c.add_network(network);
  c.add_api(s.api->id);
  c.add_receiver(receiver);
  c.add_args(args);
  b.Finish(c.Finish());
  buf.assign(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  return CallView(flatbuffers::GetRoot<fb::Call>(buf.data()));
}

}  // namespace trtrace::replay
