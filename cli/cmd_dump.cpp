// trtrace dump TRACE [--network N] [--range A:B] [--json]: one line per call.
#include <cctype>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "trace_edit.h"
#include "trtrace/api_abi.h"
#include "trtrace/api_table.h"
#include "trtrace/convert.h"
#include "trtrace/error.h"
#include "trtrace/network_id.h"
#include "trtrace/reader.h"
#include "trtrace/text.h"

namespace trtrace::cli {
namespace {

// "ok", or the status in capitals so that a failure stands out in a dump.
std::string statusText(CallStatus s) {
  if (s == CallStatus::Ok) return "ok";
  std::string t(statusName(s));
  for (char& ch : t) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return t;
}

// Enum values by name (DataType::kHALF) when the trace is of the library this build's spec
// describes (enum type ids are append-only, schema/api/ids.lock); otherwise as recorded.
std::string valueText(const Reader& r, const ValueView& v) {
  if (v.kind() == ValueKind::Enum && r.header().libraryName == abi::kLibraryName) {
    auto type = api::enumName(v.typeId());
    auto name = api::enumeratorName(v.typeId(), v.asI64());
    if (!type.empty() && !name.empty()) return std::string(type) + "::" + std::string(name);
  }
  return v.toString();
}

std::string callLine(const Reader& r, const CallView& c) {
  char buf[128];
  // Networks 0-based, as the player numbers them (trace ids start at 1; 0 = no network: "-").
  snprintf(buf, sizeof buf, "#%" PRIu64 " t=%" PRIu64 " net=", c.seq(), c.thread());
  std::string s = buf;
  s += networkLabel(c.networkId(), "-") + " ";
  const ApiInfo* a = r.api(c.apiId());
  s += a ? std::string(a->interfaceName) + "::" + std::string(a->methodName) : "api#" + std::to_string(c.apiId());
  snprintf(buf, sizeof buf, "(self=@0x%" PRIx64, c.receiver());
  s += c.receiver() ? buf : "(";
  for (size_t i = 0; i < c.argCount(); ++i) {
    if (i || c.receiver()) s += ", ";
    if (a && i < a->argNames.size()) s += std::string(a->argNames[i]) + "=";
    s += valueText(r, c.arg(i));
  }
  s += ")";
  if (auto v = c.ret()) s += " -> " + valueText(r, *v);
  s += " [" + statusText(c.status());
  if (c.status() == CallStatus::Unsupported)
    s += " " + std::string(c.unsupportedInterface()) + " slot " + std::to_string(c.unsupportedSlot());
  s += "]";
  if (auto b = c.buildResult()) {
    if (b->ok)
      s += " engine " + std::to_string(b->engineSize) + " B xxh3 " + toHex(b->engineHash);
    else
      s += " build failed";
    for (auto e : b->errors) s += " | " + std::string(e);
  } else if (isBuild(c)) {
    s += " build outcome not recorded";
  }
  if (!c.message().empty()) s += " \"" + std::string(c.message()) + "\"";
  return s;
}

// --json: the call as one JSON object (one line), the values as the text lines show them.
std::string callJson(const Reader& r, const CallView& c) {
  const ApiInfo* a = r.api(c.apiId());
  std::string s =
      "{\"seq\": " + std::to_string(c.seq()) + ", \"thread\": " + std::to_string(c.thread()) +
      ", \"network\": " + networkLabel(c.networkId(), "null") + ", \"api_id\": " + std::to_string(c.apiId()) +
      ", \"api\": " + (a ? jsonString(std::string(a->interfaceName) + "::" + std::string(a->methodName)) : "null") +
      ", \"self\": " + (c.receiver() ? std::to_string(c.receiver()) : "null") + ", \"args\": [";
  for (size_t i = 0; i < c.argCount(); ++i)
    s += std::string(i ? ", " : "") +
         "{\"name\": " + (a && i < a->argNames.size() ? jsonString(a->argNames[i]) : "null") +
         ", \"value\": " + jsonString(valueText(r, c.arg(i))) + "}";
  const auto ret = c.ret();
  s += "], \"ret\": " + (ret ? jsonString(valueText(r, *ret)) : "null") +
       ", \"status\": " + jsonString(statusName(c.status()));
  if (c.status() == CallStatus::Unsupported)
    s += ", \"unsupported\": {\"interface\": " + jsonString(c.unsupportedInterface()) +
         ", \"slot\": " + std::to_string(c.unsupportedSlot()) + "}";
  s += ", \"build\": ";
  if (auto b = c.buildResult()) {
    std::string errors;
    for (auto e : b->errors) errors += (errors.empty() ? "" : ", ") + jsonString(e);
    s += "{\"ok\": " + std::string(b->ok ? "true" : "false") + ", \"engine_size\": " + std::to_string(b->engineSize) +
         ", \"xxh3\": \"" + toHex(b->engineHash) + "\", \"errors\": [" + errors + "]}";
  } else {
    s += isBuild(c) ? "{\"outcome_recorded\": false}" : "null";
  }
  return s + ", \"message\": " + (c.message().empty() ? "null" : jsonString(c.message())) + "}";
}

}  // namespace

Command addDump(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto network = std::make_shared<std::optional<int64_t>>();
  auto range = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto* sub = app.add_subcommand("dump", "Print one line per call");
  sub->add_option("trace", *path, "Trace file")->required();
  sub->add_option("--network", *network, "Only calls of this network: 0, 1, ... in creation order (as the player)");
  sub->add_option("--range", *range, "Only calls with A <= seq < B (A:B, A:, :B)");
  sub->add_flag("--json", *json, "Machine-readable: one JSON object per call, one per line");
  return {sub, [=] {
            uint64_t lo = 0, hi = std::numeric_limits<uint64_t>::max();
            if (!range->empty()) {
              auto colon = range->find(':');
              try {
                if (colon == std::string::npos) throw std::invalid_argument("no colon");
                if (colon > 0) lo = std::stoull(range->substr(0, colon));
                if (colon + 1 < range->size()) hi = std::stoull(range->substr(colon + 1));
              } catch (const std::logic_error&) {
                throw Error(Error::Kind::Usage, "--range " + *range + ": expected A:B");
              }
            }
            auto r = convert::openCapture(*path);
            if (*network) checkNetwork(*r, **network);
            r->forEachCall([&](const CallView& c) {
              if (c.seq() >= hi) return false;
              if (c.seq() < lo || (*network && c.networkId() != traceNetworkId(uint64_t(**network)))) return true;
              if (*json)
                std::printf("%s\n", callJson(*r, c).c_str());  // JSON strings escape every control byte
              else
                std::printf("%s\n", terminalText(callLine(*r, c)).c_str());  // names, messages: untrusted text
              return true;
            });
            if (r->truncatedAt()) {
              std::fprintf(stderr, "trtrace: %s\n", terminalText(r->truncationMessage()).c_str());
              return kTruncated;
            }
            return kOk;
          }};
}

}  // namespace trtrace::cli
