// NVIDIA JSON+BIN -> trtrace trace.
//
// Streaming: a small hand-written scanner walks the top-level object. The api_calls elements are
// parsed by simdjson's DOM parser in batches of about kBatchBytes of whole records, wrapped as one
// JSON array (one pass over the bytes, one parse per batch); where a batch cannot be cut, one
// record at a time: the scanner finds its extent and simdjson parses it in place (the JSON is
// mapped with zero padding after its end). Memory is the largest batch's parse tape plus the
// writer's bounded blob queue; mapped pages already consumed are dropped as the conversion advances.
#include <simdjson.h>
#include <sys/stat.h>

#include <array>
#include <cstdio>
#include <limits>
#include <chrono>
#include <filesystem>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <algorithm>

#include "trtrace/hash.h"

#include "common.h"
#include "id_maps.h"
#include "trtrace/api_abi.h"
#include "trtrace/call_check.h"
#include "trtrace/convert.h"
#include "trtrace/files.h"
#include "trtrace/writer.h"
#include "trt_values.h"

namespace trtrace::convert {
namespace {

using simdjson::dom::element;
using simdjson::dom::object;

// ---- the top-level scanner ---------------------------------------------------------------------
struct Scanner {
  const char* p;
  size_t n;
  const std::string& path;
  size_t pos = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(Error::Kind::Corrupt, path + ": malformed JSON at byte " + std::to_string(pos) + ": " + what);
  }
  void ws() {
    while (pos < n && (p[pos] == ' ' || p[pos] == '\n' || p[pos] == '\r' || p[pos] == '\t')) ++pos;
  }
  char peek() {
    ws();
    if (pos >= n) fail("unexpected end of file");
    return p[pos];
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "', found '" + p[pos] + "'");
    ++pos;
  }
  // pos at '"': moves past the closing quote.
  void skipString() {
    const size_t open = pos;
    size_t i = pos + 1;
    for (;;) {
      const void* q = i < n ? std::memchr(p + i, '"', n - i) : nullptr;
      if (!q) {
        pos = open;
        fail("unterminated string");
      }
      size_t j = static_cast<size_t>(static_cast<const char*>(q) - p), k = j;
      while (k > open + 1 && p[k - 1] == '\\') --k;
      if ((j - k) % 2 == 0) {
        pos = j + 1;
        return;
      }
      i = j + 1;
    }
  }
  std::string_view string() {  // raw (escapes not decoded): for keys and file names
    if (peek() != '"') fail("expected a string");
    size_t b = pos;
    skipString();
    return {p + b + 1, pos - b - 2};
  }
  void skipValue() {
    char c = peek();
    if (c == '"') return skipString();
    if (c != '{' && c != '[') {
      size_t b = pos;
      while (pos < n && !std::strchr(",}] \t\r\n", p[pos])) ++pos;
      if (pos == b) fail("expected a value");
      return;
    }
    static const auto cls = [] {
      std::array<uint8_t, 256> t{};
      t['"'] = 1;
      t['{'] = t['['] = 2;
      t['}'] = t[']'] = 3;
      return t;
    }();
    const size_t open = pos;
    int64_t depth = 0;
    while (pos < n) {
      switch (cls[static_cast<unsigned char>(p[pos])]) {
        case 0: ++pos; break;
        case 1: skipString(); break;
        case 2:
          ++depth;
          ++pos;
          break;
        default:
          ++pos;
          if (--depth == 0) return;
      }
    }
    pos = open;
    fail(std::string("unterminated ") + (c == '{' ? "object" : "array"));
  }
};

// The last `"key": value` with a simple value in the final bytes of the file: NVIDIA's files
// sort keys, so output_bin/trt_version follow the (huge) api_calls array. Verified later.
std::optional<std::string> tailValue(const char* p, size_t n, std::string_view key) {
  size_t from = n > (64u << 10) ? n - (64u << 10) : 0;
  std::string_view tail(p + from, n - from);
  std::string pat = "\"" + std::string(key) + "\"";
  size_t k = tail.rfind(pat);
  if (k == std::string_view::npos) return std::nullopt;
  size_t i = k + pat.size();
  while (i < tail.size() && std::strchr(" \t\r\n", tail[i])) ++i;
  if (i >= tail.size() || tail[i] != ':') return std::nullopt;
  ++i;
  while (i < tail.size() && std::strchr(" \t\r\n", tail[i])) ++i;
  if (i >= tail.size()) return std::nullopt;
  if (tail[i] == '"') {
    size_t e = tail.find('"', i + 1);
    if (e == std::string_view::npos || tail.substr(i + 1, e - i - 1).find('\\') != std::string_view::npos)
      return std::nullopt;
    return std::string(tail.substr(i + 1, e - i - 1));
  }
  size_t e = i;
  while (e < tail.size() && (std::isdigit(static_cast<unsigned char>(tail[e])) || tail[e] == '-')) ++e;
  if (e == i) return std::nullopt;
  return std::string(tail.substr(i, e - i));
}

std::string dirOf(const std::string& path) {
  size_t s = path.rfind('/');
  return s == std::string::npos ? std::string() : path.substr(0, s + 1);
}

// ---- decoded arguments -------------------------------------------------------------------------
enum class K {
  Null,
  Bool,
  I64,
  U64,
  F32,
  F64,
  Enum,
  Str,
  Dims,
  Handle,
  Handles,
  I64Arr,
  F32Arr,
  Bytes,
  WInline,
  WBlob,
  WRandom
};

struct WeightsInfo {
  K k = K::WInline;
  uint32_t dtype = 0;
  uint64_t count = 0;
  std::string bytes;  // WInline
  BlobRef blob;       // WBlob
  uint64_t seed = 0;  // WRandom
  uint64_t ptr = 0;   // pointer identity: one per (network, NVIDIA id), which NVIDIA keys by host pointer
};

// `argument "name"` in a message, spelled only when a message is made (never per record).
struct ArgName {
  std::string_view name;
  std::string operator+(std::string_view what) const {
    return std::string("argument \"").append(name).append("\"").append(what);
  }
};

struct Arg {
  K k = K::Null;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  uint32_t t = 0;
  std::string_view s;
  std::vector<int64_t> ints;
  std::vector<uint64_t> hs;
  std::vector<float> fs;
  std::string bytes;
  WeightsInfo w;
  size_t length = 0;     // element count of an array-like argument (for the count that names it)
  bool derived = false;  // a count NVIDIA did not write: the length of the array that names it
};

class Converter {
 public:
  Converter(const std::string& jsonPath, const std::string& tracePath, const JsonToTraceOptions& o)
      : jsonPath_(jsonPath), tracePath_(tracePath), opt_(o), spec_(Spec::get()) {}

  Stats run();

 private:
  [[noreturn]] void fail(const std::string& what, Error::Kind kind = Error::Kind::Corrupt) const {
    throw Error(kind, jsonPath_ + ": api_calls[" + std::to_string(index_) + "]" +
                          (apiIndex_ >= 0 ? " (api_index " + std::to_string(apiIndex_) + ")" : "") + ": " + what);
  }
  void open(Scanner& s);
  void convertCalls(Scanner& s);
  void checkCalls();
  void convertOne(Scanner& s);
  size_t batchEnd(const Scanner& s) const;
  bool convertBatch(Scanner& s, size_t end);
  void convertParsed(element el);
  void convertRecord(object o);
  void readFields(const object& o);
  const api::ApiDesc& selectOverload(std::string_view cls, std::string_view fn);
  uint64_t callKey(const api::ApiDesc& d, uint64_t receiver);
  uint64_t resultHandle(const api::ApiDesc& d, uint64_t receiver, uint64_t memoKey, uint32_t net, const element* r);
  uint64_t handleOf(int64_t nvId, std::string_view what);
  uint32_t networkOfArg(const api::ApiDesc& d);
  void decode(const api::ApiDesc& d, uint32_t i, Arg& a, uint32_t net);
  void decodeArray(const api::ParamDesc& p, element e, Arg& a, std::string_view name);
  void decodeStruct(const api::ParamDesc& p, element e, Arg& a, std::string_view name);
  void deriveCounts(const api::ApiDesc& d);
  simdjson::dom::array arrayOf(element e, const ArgName& arg);
  int64_t objectId(element e, std::string_view name, const ArgName& arg, const char* notObject);
  void decodeWeights(element e, Arg& a, uint32_t net, std::string_view name);
  void decodeInline(element x, WeightsInfo& info, std::string_view name, const ArgName& arg);
  void emit(CallEncoder& e, const Arg& a);
  int64_t getInt(element e, std::string_view what);
  double getNumber(element e, std::string_view field, int64_t index = -1);
  void standIn(const api::ParamDesc& p, const NvidiaOmitted& o, std::string_view name, Arg& a);
  std::string place() const;

  std::string jsonPath_, tracePath_;
  JsonToTraceOptions opt_;
  const Spec& spec_;
  files::PendingOutputs outputs_;
  int traceFd_ = -1;  // the trace being written (a temporary in outputs_, or opt_.traceFd)
  std::unique_ptr<MappedFile> json_;
  std::shared_ptr<MappedFile> bin_;  // shared with opt_.inPlace, when given
  std::unique_ptr<Writer> writer_;
  std::string binPath_, binName_;
  std::optional<std::string> outputBin_;  // the JSON's output_bin, once read
  std::optional<int64_t> trtVersion_;
  bool binFromTail_ = false;
  Stats st_;
  size_t index_ = 0;
  int64_t apiIndex_ = -1;
  uint64_t pendingBlobBytes_ = 0;
  std::string call_;       // "Class::function" of the record being converted
  std::string firstNull_;  // where the first null number was (the warning names it)
  uint64_t omitted_ = 0;   // arguments NVIDIA's shim never writes, given the library's default
  std::string firstOmitted_;

  // State that mirrors the capture shim's: handles in creation order, network ids.
  // Trace handles are ours, dense from 1 (one per returned object): a vector. NVIDIA ids come from
  // the input, so they key hash maps: a hostile id (2^40) costs one entry, not a table that size.
  IdMap handles_;                // NVIDIA object id -> trace handle
  std::vector<uint32_t> netOf_;  // trace handle -> network id
  HashMap64 ownerOf_;            // trace handle -> the receiver of the create* call that made it
  uint64_t nextHandle_ = 0;
  uint32_t networks_ = 0;
  // XXH3 of (receiver, api, args) of getters/creators -> the handle they returned
  HashMap64 seen_;
  std::string key_;
  uint64_t newHandle(uint32_t net) {
    ++nextHandle_;
    if (netOf_.size() <= nextHandle_) netOf_.resize(std::max<size_t>(nextHandle_ + 1, netOf_.size() * 2), 0);
    netOf_[nextHandle_] = net;
    return nextHandle_;
  }
  uint32_t netOf(uint64_t h) const { return h < netOf_.size() ? netOf_[h] : 0; }
  std::unordered_map<uint32_t, std::unordered_map<int64_t, WeightsInfo>> weights_;  // per network, by id
  uint64_t weightsPtrs_ = 0;  // pointer identities handed out (one per weights id definition)
  std::vector<Arg> args_;
  // The record being converted, read in one pass (readFields): the fields every record has, its
  // argument fields, and (selectOverload) the argument field of each parameter, or null.
  struct Fields {
    std::optional<element> apiIndex, cls, fn, object, ret;
    std::vector<std::pair<std::string_view, element>> args;
    std::vector<const element*> ofParam;
  } fields_;
  simdjson::dom::parser parser_;
  static constexpr size_t kBatchBytes = 1u << 20;
  std::string separator_;          // between two records, as the file writes it: "}" ... "," ... "{"
  std::unique_ptr<char[]> batch_;  // "[" + a batch's records + "]" + simdjson's padding
  size_t batchCap_ = 0;
  unsigned batchFailures_ = 0;
};

Stats Converter::run() {
  auto t0 = std::chrono::steady_clock::now();
  json_ = std::make_unique<MappedFile>(jsonPath_, simdjson::SIMDJSON_PADDING, "JSON");
  st_.jsonBytes = json_->size();
  Scanner s{json_->data(), json_->size(), jsonPath_};
  if (s.peek() != '{') s.fail("the top level is not an object");
  ++s.pos;
  bool calls = false;
  if (s.peek() == '}') {
    ++s.pos;
  } else {
    for (;;) {
      std::string_view key = s.string();
      s.expect(':');
      if (key == "api_calls") {
        if (calls) s.fail("two api_calls arrays");
        calls = true;
        open(s);
        convertCalls(s);
      } else if (key == "output_bin") {
        std::string v(s.string());
        if (writer_ && !opt_.binPath.empty()) {
          // an explicit BIN wins
        } else if (writer_ && v != binName_) {
          throw Error(Error::Kind::Corrupt,
                      jsonPath_ + ": output_bin \"" + v + "\" differs from the BIN used (" + binPath_ + ")");
        }
        outputBin_ = v;
      } else if (key == "trt_version") {
        size_t b = s.pos;
        s.skipValue();
        trtVersion_ = std::strtoll(std::string(s.p + b, s.pos - b).c_str(), nullptr, 10);
      } else {
        s.skipValue();
      }
      char c = s.peek();
      ++s.pos;
      if (c == '}') break;
      if (c != ',') {
        --s.pos;
        s.fail("expected ',' or '}' in the top-level object");
      }
    }
  }
  s.ws();
  if (s.pos != s.n) s.fail("content after the top-level object");
  if (!calls)
    throw Error(Error::Kind::Corrupt, jsonPath_ + ": no \"api_calls\" array (not an NVIDIA TensorRT capture JSON?)");
  if (st_.calls == 0) throw Error(Error::Kind::Empty, jsonPath_ + ": api_calls is empty (no calls in it)");
  if (st_.nullNumbers)  // NVIDIA's shim writes NaN and +-inf as null: the value is lost at capture
    std::fprintf(stderr,
                 "trtrace: warning: %s: %llu null number(s) (NVIDIA writes non-finite values as null; first: %s); "
                 "converted to NaN\n",
                 jsonPath_.c_str(), static_cast<unsigned long long>(st_.nullNumbers), firstNull_.c_str());
  if (omitted_)  // a value NVIDIA's shim does not record: the library's default stands in
    std::fprintf(stderr,
                 "trtrace: warning: %s: %llu argument(s) NVIDIA's JSON never records (first: %s); the library's "
                 "default stands in\n",
                 jsonPath_.c_str(), static_cast<unsigned long long>(omitted_), firstOmitted_.c_str());
  writer_->close();
  if (!opt_.inPlace) checkCalls();  // in place (the player, openCapture): each reader checks each call
  auto ws = writer_->stats();
  st_.blobPuts = ws.blobPuts;
  st_.uniqueBlobs = ws.uniqueBlobs;
  st_.networks = networks_;
  writer_.reset();
  struct stat ts {};
  st_.traceBytes = ::fstat(traceFd_, &ts) == 0 ? static_cast<uint64_t>(ts.st_size) : 0;
  outputs_.commit(opt_.durable);
  st_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st_;
}

// The spec's checks of each converted call (trtrace/call_check.h), the ones `trtrace verify` and the
// player run, so that no trace they refuse is written: an array and the count that names it (a
// JSON may write "nbInputs" beside "inputs"; NVIDIA omits counts) must agree. Reads the written
// call log back (no weights are read); call i is api_calls[i].
void Converter::checkCalls() {
  const auto reader = Reader::open(traceFd_, tracePath_);
  reader->forEachCall([&](const CallView& c) {
    const std::string bad = arrayCountProblem(c);
    if (bad.empty()) return true;
    const api::ApiDesc* d = api::find(c.apiId());
    index_ = static_cast<size_t>(c.seq()), apiIndex_ = -1;
    fail(std::string(d->interface) + "::" + std::string(d->method) + ": " + bad);
  });
}

// At the api_calls array: resolve the BIN and the library version, create the writer.
void Converter::open(Scanner& s) {
  if (!outputBin_) {
    outputBin_ = tailValue(s.p, s.n, "output_bin");
    binFromTail_ = outputBin_.has_value();
  }
  if (!trtVersion_) {
    if (auto v = tailValue(s.p, s.n, "trt_version")) trtVersion_ = std::strtoll(v->c_str(), nullptr, 10);
  }
  if (!opt_.binPath.empty()) {
    binPath_ = opt_.binPath;
  } else if (outputBin_) {
    if (outputBin_->find('/') != std::string::npos)
      throw Error(Error::Kind::Corrupt, jsonPath_ + ": output_bin \"" + *outputBin_ + "\" is not a file name");
    binPath_ = dirOf(jsonPath_) + *outputBin_;
  } else {
    binPath_ = binPathFor(jsonPath_);
  }
  binName_ = outputBin_ ? *outputBin_ : binPath_.substr(binPath_.rfind('/') + 1);
  {
    std::error_code ec;
    if (!std::filesystem::exists(binPath_, ec)) {
      // No output_bin found and the document does not end like one: the JSON is cut (with its
      // output_bin); that is the fault to name, not the BIN guessed from the file name.
      std::string_view doc(s.p, s.n);
      const size_t last = doc.find_last_not_of(" \t\r\n");
      if (!outputBin_ && opt_.binPath.empty() && (last == std::string_view::npos || doc[last] != '}')) {
        Scanner end = s;
        end.pos = s.n;
        end.fail("unexpected end of file");
      }
      throw Error(Error::Kind::Io, jsonPath_ + ": its BIN file " + binPath_ +
                                       " is missing (pass the BIN path explicitly if it was moved)");
    }
  }
  bin_ = std::make_shared<MappedFile>(binPath_, 0, "BIN");
  st_.binBytes = bin_->size();
  if (opt_.inPlace) opt_.inPlace->keep = bin_;

  HeaderInfo h;
  h.producer = "trtrace-convert";
  h.producerVersion = TRTRACE_VERSION;
  h.libraryName = abi::kLibraryName;
  const int64_t v = trtVersion_.value_or(abi::kLibraryVersionInt);
  h.libraryVersion = v == abi::kLibraryVersionInt ? std::string(abi::kLibraryVersion)
                                                  : std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) +
                                                        "." + std::to_string(v % 100);
  h.settings = {{kSourceSetting, kSourceNvidiaJson}, {"json", jsonPath_}, {"bin", binPath_}};
  if (trtVersion_) h.settings.emplace_back("trt_version", std::to_string(*trtVersion_));
  WriterOptions wo;
  traceFd_ = opt_.traceFd >= 0 ? opt_.traceFd : outputs_.add(tracePath_);
  wo.fd = traceFd_;
  wo.path = tracePath_;
  wo.flush = FlushPolicy::AtClose;
  wo.zstdLevel = opt_.zstdLevel;
  wo.workerThreads = opt_.workerThreads;
  wo.durable = opt_.durable;
  if (opt_.inPlace) wo.storeBlobs = false, wo.logZstdLevel = 0;  // the player's log, read once, in memory
  writer_ = Writer::create(wo, h);
  lib::describeApis(*writer_);
}

void Converter::convertCalls(Scanner& s) {
  if (s.peek() != '[') s.fail("api_calls is not an array");
  ++s.pos;
  if (s.peek() == ']') {
    ++s.pos;
    return;
  }
  for (index_ = 0;;) {
    apiIndex_ = -1;
    if (s.peek() != '{') s.fail("api_calls[" + std::to_string(index_) + "] is not an object");
    const size_t end = batchEnd(s);
    if (end == 0 || !convertBatch(s, end)) convertOne(s);
    json_->release(s.pos);
    if (opt_.progress) opt_.progress(s.pos, s.n);
    char c = s.peek();
    ++s.pos;
    if (c == ']') break;
    if (c != ',') {
      --s.pos;
      s.fail("expected ',' or ']' in api_calls");
    }
  }
  apiIndex_ = -1;
}

// One record, the exact way: the scanner finds its extent, simdjson parses it in place. The first
// one also teaches the separator between records that batches are cut at.
void Converter::convertOne(Scanner& s) {
  const size_t start = s.pos;
  s.skipValue();
  element el;
  auto err = parser_.parse(s.p + start, s.pos - start, false).get(el);
  if (err) {
    throw Error(Error::Kind::Corrupt, jsonPath_ + ": malformed JSON in api_calls[" + std::to_string(index_) +
                                          "] (bytes " + std::to_string(start) + ".." + std::to_string(s.pos) +
                                          "): " + simdjson::error_message(err));
  }
  convertParsed(el);
  if (separator_.empty()) {  // "}" + whitespace + "," + whitespace + "{"
    Scanner t = s;
    t.ws();
    if (t.pos < t.n && t.p[t.pos] == ',') {
      ++t.pos;
      t.ws();
      if (t.pos < t.n && t.p[t.pos] == '{') separator_.assign(s.p + s.pos - 1, t.pos + 1 - (s.pos - 1));
    }
  }
}

// Where a batch that starts at s.pos may end (just past a record's closing brace): the first
// separator at least kBatchBytes on, else the last one; 0 if there is none, or if batches keep
// failing on this file's layout.
size_t Converter::batchEnd(const Scanner& s) const {
  if (separator_.empty() || batchFailures_ > 4) return 0;
  const char* sep = separator_.data();
  const size_t from = std::min(s.pos + kBatchBytes, s.n);
  if (const void* q = ::memmem(s.p + from, s.n - from, sep, separator_.size()))
    return static_cast<size_t>(static_cast<const char*>(q) - s.p) + 1;
  size_t last = 0;  // the end of the array: the last separator after s.pos
  for (const char* q = s.p + s.pos;
       (q = static_cast<const char*>(::memmem(q, s.n - (q - s.p), sep, separator_.size()))); ++q)
    last = static_cast<size_t>(q - s.p) + 1;
  return last;
}

// Records [s.pos, end) as one array. False (nothing converted) when those bytes are not whole
// records: a cut inside a string or a nested value leaves an unterminated string or unbalanced
// brackets, so the parse fails; the exact path then takes over.
bool Converter::convertBatch(Scanner& s, size_t end) {
  const size_t len = end - s.pos;
  if (batchCap_ < len + 2 + simdjson::SIMDJSON_PADDING) {
    batchCap_ = len + 2 + simdjson::SIMDJSON_PADDING;
    batch_ = std::make_unique<char[]>(batchCap_);
  }
  batch_[0] = '[';
  std::memcpy(batch_.get() + 1, s.p + s.pos, len);
  batch_[len + 1] = ']';
  element doc;
  simdjson::dom::array records;
  bool whole = !parser_.parse(batch_.get(), len + 2, false).get(doc) && !doc.get_array().get(records);
  for (auto it = records.begin(); whole && it != records.end(); ++it) whole = (*it).is_object();
  if (!whole) {
    ++batchFailures_;
    return false;
  }
  for (element el : records) {
    apiIndex_ = -1;
    convertParsed(el);
  }
  s.pos = end;
  return true;
}

void Converter::convertParsed(element el) {
  try {
    convertRecord(el.get_object().value_unsafe());
  } catch (const std::bad_alloc&) {  // one line naming the record, never a bare "std::bad_alloc"
    fail("out of memory converting this call", Error::Kind::Io);
  }
  ++st_.calls;
  ++index_;
}

int64_t Converter::getInt(element e, std::string_view what) {
  int64_t v;
  if (e.get_int64().get(v) == simdjson::SUCCESS) return v;
  bool b;
  if (e.get_bool().get(b) == simdjson::SUCCESS) return b;
  uint64_t u;
  if (e.get_uint64().get(u) == simdjson::SUCCESS) return static_cast<int64_t>(u);
  fail("'" + std::string(what) + "' is not an integer");
}

// A JSON number as a double. NVIDIA's shim (nlohmann::json) writes NaN and +-inf as null, so the
// value is lost: null becomes NaN (docs/json-bin-layout.md, §6), counted for one warning per file.
// `index` >= 0: element `index` of the inline weights of argument `field`.
double Converter::getNumber(element e, std::string_view field, int64_t index) {
  double v;
  if (e.get_double().get(v) == simdjson::SUCCESS) return v;
  const std::string where =
      "\"" + std::string(field) + "\"" + (index >= 0 ? ".inline[" + std::to_string(index) + "]" : "");
  if (!e.is_null()) fail("argument " + where + " is not a number");
  if (st_.nullNumbers++ == 0) firstNull_ = place() + " argument " + where;
  return std::numeric_limits<double>::quiet_NaN();
}

// The record being converted, for a warning: "api_calls[i] (api_index k) Class::function".
std::string Converter::place() const {
  return "api_calls[" + std::to_string(index_) + "]" +
         (apiIndex_ >= 0 ? " (api_index " + std::to_string(apiIndex_) + ")" : "") + " " + call_;
}

// An argument NVIDIA's JSON never has (common.h, kNvidiaOmits): the library's default.
void Converter::standIn(const api::ParamDesc& p, const NvidiaOmitted& o, std::string_view name, Arg& a) {
  a.k = K::Enum, a.t = p.enumId, a.i = o.value;
  if (omitted_++ == 0)
    firstOmitted_ = place() + " argument \"" + std::string(name) + "\", taken as " + std::string(o.name);
}

uint64_t Converter::handleOf(int64_t nvId, std::string_view what) {
  const uint64_t h = handles_.find(nvId);
  if (!h) fail(std::string(what) + " is object " + std::to_string(nvId) + ", which no earlier call returned");
  return h;
}

// The network a call belongs to when its receiver has none (Builder calls): the first object
// argument that has one (buildSerializedNetwork's network), as the capture shim does.
uint32_t Converter::networkOfArg(const api::ApiDesc& d) {
  for (uint32_t i = 0; i < d.nargs; ++i) {
    if (d.params[i].kind != api::Kind::Handle || !fields_.ofParam[i]) continue;
    int64_t id;
    if (fields_.ofParam[i]->at_key("object").get_int64().get(id) != simdjson::SUCCESS) continue;
    if (uint32_t n = netOf(handles_.find(id))) return n;
  }
  return 0;
}

// The overload of cls::fn the record names: the one naming every key, fewest extra parameters.
// Every field of the record, once (an object's fields are a list: each at_key walks it again).
// A key given twice counts where it first appears, as at_key would find it.
void Converter::readFields(const object& o) {
  Fields& f = fields_;
  f.apiIndex.reset(), f.cls.reset(), f.fn.reset(), f.object.reset(), f.ret.reset();
  f.args.clear();
  for (auto field : o) {
    const std::string_view k = field.key;
    std::optional<element>* fixed = k == "api_index"  ? &f.apiIndex
                                    : k == "class"    ? &f.cls
                                    : k == "function" ? &f.fn
                                    : k == "object"   ? &f.object
                                    : k == "return"   ? &f.ret
                                                      : nullptr;
    if (!fixed)
      f.args.emplace_back(k, field.value);
    else if (!*fixed)
      *fixed = field.value;
  }
}

// The overload of cls::fn the record names: the one naming every key, fewest extra parameters;
// binds fields_.ofParam to it.
const api::ApiDesc& Converter::selectOverload(std::string_view cls, std::string_view fn) {
  const std::vector<const api::ApiDesc*>& cands = spec_.lookup(cls.empty() ? "entry" : cls, fn);
  if (cands.empty())
    fail("unknown call " + std::string(cls) + "::" + std::string(fn) + " (not in the API spec of " + abi::kLibraryName +
             " " + abi::kLibraryVersion + ")",
         Error::Kind::Usage);
  const auto& keys = fields_.args;
  auto param = [&](const api::ApiDesc* c, std::string_view k) -> int64_t {
    for (uint32_t i = 0; i < c->nargs; ++i)
      if (c->args[i] == k) return i;
    return -1;
  };
  const api::ApiDesc* d = nullptr;
  size_t best = SIZE_MAX;
  for (const api::ApiDesc* c : cands) {
    const bool all = std::all_of(keys.begin(), keys.end(), [&](const auto& k) { return param(c, k.first) >= 0; });
    if (all && c->nargs - keys.size() < best) best = c->nargs - keys.size(), d = c;
  }
  if (d) {
    fields_.ofParam.assign(d->nargs, nullptr);
    for (const auto& [k, e] : keys)
      if (const auto*& slot = fields_.ofParam[param(d, k)]; !slot) slot = &e;
    return *d;
  }
  for (const auto& k : keys)
    if (param(cands[0], k.first) < 0)
      fail("\"" + std::string(k.first) + "\" is not a parameter of " + std::string(cls) + "::" + std::string(fn));
  fail("no overload of " + std::string(cls) + "::" + std::string(fn) + " matches the arguments");
}

void Converter::convertRecord(object o) {
  readFields(o);
  const Fields& f = fields_;
  if (f.apiIndex) apiIndex_ = getInt(*f.apiIndex, "api_index");
  std::string_view cls, fn;
  if (!f.cls || f.cls->get_string().get(cls) != simdjson::SUCCESS) fail("no \"class\" string");
  if (!f.fn || f.fn->get_string().get(fn) != simdjson::SUCCESS) fail("no \"function\" string");
  const int64_t receiverId = f.object ? getInt(*f.object, "object") : -1;
  call_.assign(cls.empty() ? "" : cls).append("::").append(fn);
  const api::ApiDesc& d = selectOverload(cls, fn);

  const uint64_t receiver = receiverId < 0 ? 0 : handleOf(receiverId, "the receiver");
  uint32_t net = 0;
  if (receiver) net = netOf(receiver);
  if (!net) net = networkOfArg(d);

  if (args_.size() < d.nargs) args_.resize(d.nargs);
  for (uint32_t i = 0; i < d.nargs; ++i) decode(d, i, args_[i], net);
  deriveCounts(d);
  // "The same call again" (getOutput(0) twice) returns a known object: only getters and creators
  // can (add* always make a new object). The memo's slot is fetched while the call is encoded.
  const bool memo = d.has(api::flag::kGetter) || d.has(api::flag::kCreator);
  const uint64_t memoKey = memo ? callKey(d, receiver) : 0;
  if (memo) seen_.prefetch(memoKey);

  CallEncoder& enc = writer_->beginCall(d.id, receiver, net);
  for (uint32_t i = 0; i < d.nargs; ++i) emit(enc, args_[i]);
  if (d.result.kind == api::Kind::Handle || f.ret)  // entry points' results are "foreign" (void*)
    enc.retHandle(resultHandle(d, receiver, memoKey, net, f.ret ? &*f.ret : nullptr));
  enc.endCall();
  if (pendingBlobBytes_ > (64u << 20)) {  // bounded: the BIN pages hashed so far leave the RSS
    writer_->drainBlobs();
    bin_->releaseAll();
    pendingBlobBytes_ = 0;
  }
}

// XXH3 of (receiver, api, arguments): "the same call again".
uint64_t Converter::callKey(const api::ApiDesc& d, uint64_t receiver) {
  key_.clear();
  key_.append(reinterpret_cast<const char*>(&receiver), 8).append(reinterpret_cast<const char*>(&d.id), 4);
  for (uint32_t i = 0; i < d.nargs; ++i) {
    const Arg& a = args_[i];
    key_.push_back(static_cast<char>(a.k));
    key_.append(reinterpret_cast<const char*>(&a.i), 8).append(reinterpret_cast<const char*>(&a.u), 8);
    key_.append(a.s);
    for (int64_t x : a.ints) key_.append(reinterpret_cast<const char*>(&x), 8);
    for (uint64_t x : a.hs) key_.append(reinterpret_cast<const char*>(&x), 8);
  }
  return hash128(key_.data(), key_.size()).lo;
}

// The trace handle of a call's returned object: the record's "return", else a known one.
// memoKey: callKey of a getter or creator (NVIDIA writes no return for a known object), else 0.
uint64_t Converter::resultHandle(const api::ApiDesc& d, uint64_t receiver, uint64_t memoKey, uint32_t net,
                                 const element* r) {
  const bool memo = d.has(api::flag::kGetter) || d.has(api::flag::kCreator);
  const uint64_t key = memoKey;
  const uint32_t resultNet = d.has(api::flag::kStartsNetwork) ? 0 : net;
  // The receiver's owner (NetworkDefinition::getBuilder): NVIDIA numbers it as a new object, our
  // capture and the library know it is the one that made the receiver.
  const uint64_t owner = d.has(api::flag::kReturnsOwner) && receiver ? ownerOf_.find(receiver) : 0;
  uint64_t h = 0;
  if (r) {
    element ro;
    if (r->at_key("object").get(ro) != simdjson::SUCCESS) fail("\"return\" without \"object\"");
    const int64_t nvId = getInt(ro, "return.object");
    if (nvId < 0) fail("\"return\" object id " + std::to_string(nvId) + " is negative");
    h = owner ? owner : newHandle(resultNet);
    handles_.set(nvId, h);
  } else if (owner) {
    h = owner;
  } else {
    const uint64_t known = memo ? seen_.find(key) : 0;
    if (known && !d.has(api::flag::kCreator)) {
      h = known;  // a known object returned again
    } else {
      // Not recorded by NVIDIA: the engine's IHostMemory, an object re-created at the address of
      // a deleted one (createBuilderConfig after delete: later records use the old id), or a
      // known object reached another way (getInput of a network input). A fresh handle binds
      // whatever the replay returns.
      h = newHandle(resultNet);
      if (known) handles_.rebind(known, h);
    }
  }
  if (memo) seen_.set(key, h);
  if (d.has(api::flag::kCreator) && receiver && h != receiver) ownerOf_.set(h, receiver);
  if (d.has(api::flag::kStartsNetwork) && !netOf(h)) netOf_[h] = ++networks_;
  return h;
}

// Argument i of a record, by what the spec says it is. An absent count whose array names it
// ([len=]) is left for deriveCounts; an absent optional value is Null.
void Converter::decode(const api::ApiDesc& d, uint32_t i, Arg& a, uint32_t net) {
  const api::ParamDesc& p = d.params[i];
  const std::string_view name = d.args[i];
  a.k = K::Null;
  a.i = 0, a.u = 0, a.f = 0, a.t = 0, a.s = {}, a.length = 0, a.derived = false;
  a.ints.clear(), a.hs.clear(), a.fs.clear(), a.bytes.clear();
  const bool present = fields_.ofParam[i] != nullptr;
  const element e = present ? *fields_.ofParam[i] : element();
  const ArgName arg{name};
  if (!present)
    if (const NvidiaOmitted* o = spec_.omitted(d.id, i)) return standIn(p, *o, name, a);
  using api::Kind;
  switch (p.kind) {
    case Kind::Foreign: a.k = K::Bool, a.i = 1; return;  // NVIDIA never writes application objects (loggers)
    case Kind::Out:
    case Kind::Void: return;
    case Kind::Dims: a.k = K::Dims; break;  // absent = nbDims 0 (NVIDIA omits empty Dims)
    case Kind::Weights:
      if (!present) a.k = K::WInline, a.w = WeightsInfo{};
      break;  // not observed: empty
    case Kind::I64:
    case Kind::U64:
      if (!present && p.lengthOf >= 0) {
        a.k = p.kind == Kind::I64 ? K::I64 : K::U64, a.derived = true;
        return;
      }
      [[fallthrough]];
    case Kind::Bool:
    case Kind::F32:
    case Kind::F64:
    case Kind::Enum:
      if (!present) fail(arg + " missing");
      break;
    case Kind::Struct:
      if (!present && p.structId == api::StructId::Permutation) fail(arg + " missing");
      break;
    default: break;
  }
  if (!present) return;
  switch (p.kind) {
    case Kind::Bool: a.k = K::Bool, a.i = getInt(e, name) != 0; break;
    case Kind::I64:
    case Kind::U64:
      a.k = p.kind == Kind::I64 ? K::I64 : K::U64;
      a.i = getInt(e, name), a.u = static_cast<uint64_t>(a.i);
      break;
    case Kind::F32:
    case Kind::F64: a.k = p.kind == Kind::F32 ? K::F32 : K::F64, a.f = getNumber(e, name); break;
    case Kind::Enum: a.k = K::Enum, a.t = p.enumId, a.i = getInt(e, name); break;
    case Kind::String:
      if (e.get_string().get(a.s) != simdjson::SUCCESS) fail(arg + " is not a string");
      a.k = K::Str;
      break;
    case Kind::Dims:
      for (element x : arrayOf(e, arg)) a.ints.push_back(getInt(x, name));
      if (a.ints.size() > lib::kMaxDims) fail(arg + " has more than " + std::to_string(lib::kMaxDims) + " dimensions");
      break;
    case Kind::Handle: a.k = K::Handle, a.u = handleOf(objectId(e, name, arg, " is not {\"object\": N}"), name); break;
    case Kind::Handles:
      a.k = K::Handles;
      for (element x : arrayOf(e, arg))
        a.hs.push_back(handleOf(objectId(x, name, arg, ": an element is not {\"object\": N}"), name));
      a.length = a.hs.size();
      break;
    case Kind::Array: decodeArray(p, e, a, name); break;
    case Kind::Struct: decodeStruct(p, e, a, name); break;
    case Kind::Weights: decodeWeights(e, a, net, name); break;
    default:  // bytes, strings: NVIDIA's encoding was never observed
      fail(arg + " of kind " + std::string(p.text) + " cannot be converted (encoding unknown)", Error::Kind::Usage);
  }
}

simdjson::dom::array Converter::arrayOf(element e, const ArgName& arg) {
  simdjson::dom::array arr;
  if (e.get_array().get(arr) != simdjson::SUCCESS) fail(arg + " is not an array");
  return arr;
}

int64_t Converter::objectId(element e, std::string_view name, const ArgName& arg, const char* notObject) {
  element id;
  if (e.at_key("object").get(id) != simdjson::SUCCESS) fail(arg + notObject);
  return getInt(id, name);
}

void Converter::decodeArray(const api::ParamDesc& p, element e, Arg& a, std::string_view name) {
  const ArgName arg{name};
  if (p.elem == api::Kind::F32) {
    a.k = K::F32Arr;
    for (element x : arrayOf(e, arg)) a.fs.push_back(static_cast<float>(getNumber(x, name)));
    a.length = a.fs.size();
  } else {
    a.k = K::I64Arr;
    for (element x : arrayOf(e, arg)) a.ints.push_back(getInt(x, name));
    a.length = a.ints.size();
  }
}

// Structs NVIDIA writes: Permutation as its order array. Others were never observed.
void Converter::decodeStruct(const api::ParamDesc& p, element e, Arg& a, std::string_view name) {
  const ArgName arg{name};
  if (p.structId != api::StructId::Permutation)
    fail(arg + " of kind " + std::string(p.text) + " cannot be converted (encoding unknown)", Error::Kind::Usage);
  a.k = K::Bytes;
  abi::Permutation perm{};
  size_t k = 0;
  for (element x : arrayOf(e, arg)) {
    if (k == std::size(perm.order)) fail(arg + ": more than " + std::to_string(k) + " entries");
    perm.order[k++] = static_cast<int32_t>(getInt(x, name));
  }
  a.bytes.assign(reinterpret_cast<const char*>(&perm), sizeof perm);
}

// Counts NVIDIA does not write ([len=] of an array argument): the array's length.
void Converter::deriveCounts(const api::ApiDesc& d) {
  for (uint32_t i = 0; i < d.nargs; ++i) {
    Arg& a = args_[i];
    if (!a.derived) continue;
    const size_t n = args_[static_cast<uint32_t>(d.params[i].lengthOf)].length;
    a.i = static_cast<int64_t>(n), a.u = n;
  }
}

// Inline weights: "count" numbers, encoded as the DataType stores them.
void Converter::decodeInline(element x, WeightsInfo& info, std::string_view name, const ArgName& arg) {
  simdjson::dom::array arr;
  if (x.get_array().get(arr) != simdjson::SUCCESS) fail(arg + ": \"inline\" is not an array");
  info.k = K::WInline;
  // The values are counted before anything is sized by "count" (a hostile count must not allocate).
  if (arr.size() != info.count)
    fail(arg + ": \"inline\" has " + std::to_string(arr.size()) + " values, count is " + std::to_string(info.count));
  info.bytes.reserve(weightBytes(info.dtype, info.count));
  uint64_t k = 0;
  for (element v : arr) {
    ++k;
    switch (info.dtype) {
      case 0:
      case 1: {
        const double dv = getNumber(v, name, static_cast<int64_t>(k - 1));
        if (info.dtype == 0) {
          float f = static_cast<float>(dv);
          info.bytes.append(reinterpret_cast<const char*>(&f), 4);
        } else {
          uint16_t h = lib::floatToHalf(dv);
          info.bytes.append(reinterpret_cast<const char*>(&h), 2);
        }
        break;
      }
      case 3: {
        int32_t i = static_cast<int32_t>(getInt(v, "inline"));
        info.bytes.append(reinterpret_cast<const char*>(&i), 4);
        break;
      }
      case 8: {
        int64_t i = getInt(v, "inline");
        info.bytes.append(reinterpret_cast<const char*>(&i), 8);
        break;
      }
      case 2:
      case 4:
      case 5: info.bytes.push_back(static_cast<char>(getInt(v, "inline"))); break;
      default:
        fail(arg + ": inline weights of DataType " + std::to_string(info.dtype) + " cannot be decoded",
             Error::Kind::Usage);
    }
  }
  if (k != info.count)
    fail(arg + ": \"inline\" has " + std::to_string(k) + " values, count is " + std::to_string(info.count));
}

void Converter::decodeWeights(element e, Arg& a, uint32_t net, std::string_view name) {
  const ArgName arg{name};
  object w;
  if (e.get_object().get(w) != simdjson::SUCCESS) fail(arg + " is not a Weights object");
  ++st_.weights;
  element x;
  int64_t id = -1;
  if (w.at_key("id").get(x) == simdjson::SUCCESS) id = getInt(x, "id");
  auto& table = weights_[net];
  if (w.at_key("count").get(x) != simdjson::SUCCESS) {
    // Reference form {"id": N}: the same weights as the first use of id N in this network.
    auto it = table.find(id);
    if (id < 0 || it == table.end())
      fail(arg + " refers to weights id " + std::to_string(id) + ", not defined earlier in this network");
    a.k = it->second.k, a.w = it->second;
    return;
  }
  WeightsInfo info;
  const int64_t count = getInt(x, "count");
  if (count < 0) fail(arg + ": negative count");
  if (count > (int64_t(1) << 56)) fail(arg + ": count " + std::to_string(count) + " is beyond any weights");
  info.count = static_cast<uint64_t>(count);
  if (w.at_key("type").get(x) != simdjson::SUCCESS) fail(arg + ": no \"type\"");
  info.dtype = static_cast<uint32_t>(getInt(x, "type"));
  const uint64_t nbytes = weightBytes(info.dtype, info.count);
  if (info.count > 0 && nbytes == 0)
    fail(arg + ": DataType " + std::to_string(info.dtype) + " is unknown to this build", Error::Kind::Usage);
  if (w.at_key("inline").get(x) == simdjson::SUCCESS) {
    decodeInline(x, info, name, arg);
  } else if (w.at_key("offset").get(x) == simdjson::SUCCESS) {
    const int64_t off = getInt(x, "offset");
    if (off < 0) fail(arg + ": negative offset " + std::to_string(off));
    if (static_cast<uint64_t>(off) > bin_->size() || nbytes > bin_->size() - static_cast<uint64_t>(off))
      fail(arg + ": weights at BIN offset " + std::to_string(off) + " (" + std::to_string(nbytes) +
           " bytes) end past the end of " + binPath_ + " (" + std::to_string(bin_->size()) +
           " bytes): short BIN or bad offset");
    info.k = K::WBlob;
    info.blob = writer_->putBlob(bin_->data() + off, nbytes, lib::blobHint(static_cast<abi::DataType>(info.dtype)));
    if (opt_.inPlace)
      opt_.inPlace->blobs.emplace(info.blob, std::span(reinterpret_cast<const std::byte*>(bin_->data()) + off, nbytes));
    pendingBlobBytes_ += nbytes;
  } else if (w.at_key("random").get(x) == simdjson::SUCCESS) {
    info.k = K::WRandom;
    element seed;
    if (x.at_key("seed").get(seed) == simdjson::SUCCESS) info.seed = static_cast<uint64_t>(getInt(seed, "seed"));
  } else if (info.count == 0 || id < 0) {
    info.k = K::WInline;  // empty Weights
  } else {
    fail(arg + ": Weights without \"inline\", \"offset\" or \"random\"");
  }
  if (id >= 0) {
    info.ptr = ++weightsPtrs_;
    table[id] = info;
  }
  a.k = info.k;
  a.w = std::move(info);
}

void Converter::emit(CallEncoder& e, const Arg& a) {
  switch (a.k) {
    case K::Null: e.argNull(); break;
    case K::Bool: e.argBool(a.i != 0); break;
    case K::I64: e.argI64(a.i); break;
    case K::U64: e.argU64(a.u); break;
    case K::F32: e.argF32(static_cast<float>(a.f)); break;
    case K::F64: e.argF64(a.f); break;
    case K::Enum: e.argEnum(a.t, a.i); break;
    case K::Str: e.argString(a.s); break;
    case K::Dims: e.argDims(a.ints); break;
    case K::Handle: e.argHandle(a.u); break;
    case K::Handles: e.argHandleArray(a.hs); break;
    case K::I64Arr: e.argI64Array(a.ints); break;
    case K::F32Arr: e.argF32Array(a.fs); break;
    case K::Bytes: e.argBytes({reinterpret_cast<const std::byte*>(a.bytes.data()), a.bytes.size()}); break;
    case K::WInline:
      e.argWeightsInline(a.w.dtype, a.w.count, {reinterpret_cast<const std::byte*>(a.w.bytes.data()), a.w.bytes.size()},
                         a.w.ptr);
      break;
    case K::WBlob: e.argWeightsBlob(a.w.dtype, a.w.count, a.w.blob, a.w.ptr); break;
    case K::WRandom: e.argWeightsRandom(a.w.dtype, a.w.count, a.w.seed, a.w.ptr); break;
  }
}

}  // namespace

Stats jsonToTrace(const std::string& jsonPath, const std::string& tracePath, const JsonToTraceOptions& o) {
  Converter c(jsonPath, tracePath, o);
  return c.run();
}

}  // namespace trtrace::convert
