// The C interface over the trace reader (trtrace_c.h): thin wrappers that turn the reader's views
// into JSON and exceptions into one error line.
#include "trtrace_c.h"
#include "trtrace/network_id.h"
#include "trtrace/text.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "trtrace/api_abi.h"
#include "trtrace/api_table.h"
#include "trtrace/convert.h"
#include "trtrace/error.h"
#include "trtrace/reader.h"

#define TRTRACE_C_EXPORT extern "C" __attribute__((visibility("default")))

struct trtrace_reader {
  std::unique_ptr<trtrace::Reader> reader;
};

namespace {
using namespace trtrace;

char* dup(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

// Runs fn; an exception becomes *error (one line) and *kind. Returns whether fn succeeded.
template <class Fn>
bool guarded(char** error, int* kind, Fn&& fn) {
  int k = TRTRACE_OK;
  std::string msg;
  try {
    fn();
    return true;
  } catch (const Error& e) {
    k = static_cast<int>(e.kind()) + 1;
    msg = e.what();
  } catch (const std::exception& e) {
    k = TRTRACE_IO;
    msg = describe(e);
  } catch (...) {
    k = TRTRACE_IO;
    msg = "unknown error";
  }
  if (kind) *kind = k;
  if (error) *error = dup(msg);
  return false;
}

std::string str(std::string_view s) { return jsonString(s); }  // the one JSON string writer (trtrace/text.h)
std::string num(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  char b[40];
  std::snprintf(b, sizeof b, "%.17g", d);
  return b;
}
std::string hex(std::span<const std::byte> b) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (std::byte x : b) s += digits[uint8_t(x) >> 4], s += digits[uint8_t(x) & 15];
  return s;
}
template <class T, class F>
std::string list(std::span<const T> xs, F f) {
  std::string s = "[";
  for (size_t i = 0; i < xs.size(); ++i) s += (i ? "," : "") + f(xs[i]);
  return s + "]";
}

// One value as a JSON object (see trtrace_calls_json); enum names only for the spec'd library.
std::string valueJson(const Reader& r, const ValueView& v, std::string_view name, std::string_view spec) {
  const bool ours = r.header().libraryName == abi::kLibraryName;
  std::string s = "{\"name\":" + str(name) + ",\"spec\":" + str(spec) + ",\"kind\":" + str(kindName(v.kind()));
  auto weights = [&] {
    const auto dt = static_cast<abi::DataType>(v.dtype());
    s += ",\"dtype\":" + str(api::enumeratorName(api::kEnumDataType, v.dtype())) +
         ",\"dtype_value\":" + std::to_string(v.dtype()) + ",\"bits\":" + std::to_string(abi::elementBits(dt)) +
         ",\"count\":" + std::to_string(v.count()) + ",\"pointer\":" + std::to_string(v.weightsPtr()) +
         ",\"numpy\":" + str(abi::numpyType(dt));
  };
  switch (v.kind()) {
    case ValueKind::Null: s += ",\"value\":null"; break;
    case ValueKind::Bool: s += std::string(",\"value\":") + (v.asBool() ? "true" : "false"); break;
    case ValueKind::I64: s += ",\"value\":" + std::to_string(v.asI64()); break;
    case ValueKind::U64:
    case ValueKind::Handle: s += ",\"value\":" + std::to_string(v.asU64()); break;
    case ValueKind::F32:
    case ValueKind::F64: s += ",\"value\":" + num(v.asF64()); break;
    case ValueKind::String: s += ",\"value\":" + str(v.asString()); break;
    case ValueKind::Enum: {
      s += ",\"value\":" + std::to_string(v.asI64());
      auto type = api::enumName(v.typeId());
      auto e = api::enumeratorName(v.typeId(), v.asI64());
      if (ours && !type.empty() && !e.empty()) s += ",\"enum\":" + str(std::string(type) + "::" + std::string(e));
      break;
    }
    case ValueKind::Dims:
    case ValueKind::I64Array: s += ",\"value\":" + list(v.ints(), [](int64_t x) { return std::to_string(x); }); break;
    case ValueKind::HandleArray:
      s += ",\"value\":" + list(v.handles(), [](uint64_t x) { return std::to_string(x); });
      break;
    case ValueKind::F32Array: s += ",\"value\":" + list(v.floats(), [](float x) { return num(x); }); break;
    case ValueKind::Bytes: s += ",\"bytes\":" + str(hex(v.bytes())); break;
    case ValueKind::WeightsInline:
      weights();
      s += ",\"bytes\":" + str(hex(v.bytes()));
      break;
    case ValueKind::WeightsBlob:
      weights();
      s += ",\"hash_hi\":" + std::to_string(v.blob().hash.hi) + ",\"hash_lo\":" + std::to_string(v.blob().hash.lo) +
           ",\"length\":" + std::to_string(v.blob().length);
      break;
    case ValueKind::WeightsRandom:
      weights();
      s += ",\"seed\":" + std::to_string(v.seed());
      break;
  }
  return s + "}";
}

// The status in lower case ("ok", "failed", ...), as the Python API documents it.
std::string statusText(CallStatus s) {
  std::string t(statusName(s));
  for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return t;
}

// One call as a JSON object: names from the trace's own API descriptors, how each argument is
// recorded from this build's spec tables (when the trace is of the spec'd library).
std::string callJson(const Reader& r, const CallView& c) {
  const ApiInfo* a = r.api(c.apiId());
  const api::ApiDesc* d = r.header().libraryName == abi::kLibraryName ? api::find(c.apiId()) : nullptr;
  std::string s = "{\"seq\":" + std::to_string(c.seq()) + ",\"thread\":" + std::to_string(c.thread()) +
                  ",\"network\":" + networkLabel(c.networkId(), "null") + ",\"api\":" + std::to_string(c.apiId()) +
                  ",\"interface\":" + str(a ? a->interfaceName : "") + ",\"method\":" + str(a ? a->methodName : "") +
                  ",\"receiver\":" + std::to_string(c.receiver()) + ",\"args\":[";
  for (size_t i = 0; i < c.argCount(); ++i) {
    const std::string name =
        a && i < a->argNames.size() ? std::string(a->argNames[i]) : "argument " + std::to_string(i);
    s += (i ? "," : "") + valueJson(r, c.arg(i), name, d && i < d->nargs ? d->params[i].text : "");
  }
  s += "],\"result\":" + (c.ret() ? valueJson(r, *c.ret(), "result", d ? d->result.text : "") : std::string("null"));
  s += ",\"status\":" + str(statusText(c.status())) + ",\"message\":" + str(c.message()) +
       ",\"is_build\":" + (d && d->has(api::flag::kBuild) ? "true" : "false") + ",\"build\":";
  if (auto b = c.buildResult()) {
    s += std::string("{\"ok\":") + (b->ok ? "true" : "false") + ",\"engine_size\":" + std::to_string(b->engineSize) +
         ",\"engine_hash\":" + str(b->ok ? toHex(b->engineHash) : "") + ",\"errors\":[";
    for (size_t i = 0; i < b->errors.size(); ++i) s += (i ? "," : "") + str(b->errors[i]);
    s += "]}";
  } else {
    s += "null";
  }
  return s + "}";
}

}  // namespace

TRTRACE_C_EXPORT trtrace_reader* trtrace_open(const char* path, char** error, int* kind) {
  trtrace_reader* out = nullptr;
  guarded(error, kind, [&] { out = new trtrace_reader{convert::openCapture(path ? path : "")}; });
  return out;
}

TRTRACE_C_EXPORT void trtrace_close(trtrace_reader* r) { delete r; }
TRTRACE_C_EXPORT void trtrace_free(void* p) { std::free(p); }

TRTRACE_C_EXPORT char* trtrace_header_json(const trtrace_reader* r, char** error, int* kind) {
  char* out = nullptr;
  guarded(error, kind, [&] {
    const Reader& rd = *r->reader;
    const HeaderView& h = rd.header();
    std::string s = "{\"path\":" + str(rd.path()) + ",\"format\":\"" + std::to_string(h.formatMajor) + "." +
                    std::to_string(h.formatMinor) + "\",\"closed\":" + (rd.closedCleanly() ? "true" : "false") +
                    ",\"truncation\":" + str(rd.truncationMessage()) + ",\"producer\":" + str(h.producer) +
                    ",\"producer_version\":" + str(h.producerVersion) + ",\"library\":" + str(h.libraryName) +
                    ",\"library_version\":" + str(h.libraryVersion) + ",\"library_build_id\":" + str(h.libraryBuildId) +
                    ",\"host\":" + str(h.host) + ",\"pid\":" + std::to_string(h.pid) + ",\"settings\":{";
    for (size_t i = 0; i < h.settings.size(); ++i)
      s += (i ? "," : "") + str(h.settings[i].first) + ":" + str(h.settings[i].second);
    s += "},\"calls\":" + std::to_string(rd.callCount()) + "}";
    out = dup(s);
  });
  return out;
}

TRTRACE_C_EXPORT char* trtrace_calls_json(const trtrace_reader* r, uint64_t lo, uint64_t hi, char** error, int* kind) {
  char* out = nullptr;
  guarded(error, kind, [&] {
    std::string s = "[";
    bool first = true, more = true;
    // Only the segments that hold calls of [lo, hi) are inflated: a reader that pages through a big
    // trace in ranges reads each segment about once, not every segment before the range each time.
    const Reader& rd = *r->reader;
    for (size_t i = 0; i < rd.segmentCount() && more; ++i) {
      const SegmentInfo si = rd.segmentInfo(i);
      if (si.firstSeq + si.calls <= lo) continue;
      rd.forEachCallInSegment(i, [&](const CallView& c) {
        if (c.seq() >= hi) return more = false;
        if (c.seq() < lo) return true;
        s += (first ? "" : ",") + callJson(rd, c);
        first = false;
        return true;
      });
    }
    out = dup(s + "]");
  });
  return out;
}

TRTRACE_C_EXPORT int trtrace_blob(const trtrace_reader* r, uint64_t hashHi, uint64_t hashLo, uint64_t length,
                                  const void** data, uint64_t* size, void** owner, char** error, int* kind) {
  const bool ok = guarded(error, kind, [&] {
    BlobRef ref{{hashLo, hashHi}, length};
    auto view = std::make_unique<BlobView>(r->reader->checkedBlob(ref));
    *data = view->data();
    *size = view->size();
    *owner = nullptr;
    // Bytes outside the reader's mapping (decoded, or a lost blob's zero pages) live as long as the
    // view: the caller owns it.
    const std::span<const std::byte> m = r->reader->mapping();
    const auto* p = static_cast<const std::byte*>(view->data());
    if (view->size() && (p < m.data() || p + view->size() > m.data() + m.size())) *owner = view.release();
  });
  return ok ? 0 : -1;
}

TRTRACE_C_EXPORT void trtrace_blob_release(void* owner) { delete static_cast<BlobView*>(owner); }

TRTRACE_C_EXPORT char* trtrace_verify_json(const trtrace_reader* r, char** error, int* kind) {
  char* out = nullptr;
  guarded(error, kind, [&] {
    const Reader& rd = *r->reader;
    const VerifyReport rep = verifyTrace(rd);
    std::string s =
        std::string("{\"ok\":") + (rep.ok() ? "true" : "false") + ",\"corrupt\":" + (rep.corrupt() ? "true" : "false") +
        ",\"truncated\":" + (rep.truncated() ? "true" : "false") + ",\"segments\":" + std::to_string(rep.segments) +
        ",\"calls\":" + std::to_string(rep.calls) + ",\"blobs\":" + std::to_string(rep.blobs) +
        ",\"blob_bytes\":" + std::to_string(rep.blobBytes) + ",\"issues\":[";
    for (size_t i = 0; i < rep.issues.size(); ++i)
      s += std::string(i ? "," : "") +
           "{\"problem\":" + str(rep.issues[i].problem == VerifyReport::Problem::Corrupt ? "corrupt" : "truncated") +
           ",\"offset\":" + std::to_string(rep.issues[i].offset) + ",\"what\":" + str(rep.issues[i].what) + "}";
    out = dup(s + "]}");
  });
  return out;
}
