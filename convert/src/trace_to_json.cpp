// trtrace trace -> NVIDIA JSON+BIN, in the exact text layout NVIDIA's shim writes
// (docs/json-bin-layout.md §3, §13): json.dumps(indent=4, sort_keys=True, ensure_ascii=False),
// no trailing newline; object ids from one counter in order of first return; Weights ids per
// network in order of first use, {"id": N} for a repeated use; BIN = raw bytes in first-use order.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <unordered_set>

#include "common.h"
#include "trtrace/api_abi.h"
#include "trtrace/convert.h"
#include "trtrace/files.h"
#include "trtrace/hash.h"
#include "trtrace/reader.h"
#include "trtrace/text.h"
#include "trt_values.h"

namespace trtrace::convert {
namespace {

struct Node {
  enum T { Int, Dbl, Str, Bool, Obj, Arr, IntArr, DblArr } t = Int;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<std::pair<std::string, Node>> obj;
  std::vector<Node> arr;
  std::vector<int64_t> ia;
  std::vector<double> da;

  static Node integer(int64_t v) { Node n; n.t = Int; n.i = v; return n; }
  static Node dbl(double v) { Node n; n.t = Dbl; n.d = v; return n; }
  static Node str(std::string_view v) { Node n; n.t = Str; n.s = v; return n; }
  static Node boolean(bool v) { Node n; n.t = Bool; n.i = v; return n; }
  static Node object() { Node n; n.t = Obj; return n; }
  static Node ref(int64_t id) { Node n = object(); n.obj.emplace_back("object", integer(id)); return n; }
};

void appendInt(std::string& o, int64_t v) {
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, v);
  o.append(b, r.ptr);
}

void render(std::string& o, Node& n, int indent) {
  auto pad = [&](int k) { o.append(static_cast<size_t>(k), ' '); };
  switch (n.t) {
    case Node::Int: appendInt(o, n.i); break;
    case Node::Dbl: appendDouble(o, n.d); break;
    case Node::Str: appendJsonString(o, n.s); break;
    case Node::Bool: o += n.i ? "true" : "false"; break;
    case Node::Obj: {
      if (n.obj.empty()) { o += "{}"; break; }
      std::sort(n.obj.begin(), n.obj.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      o += "{\n";
      for (size_t k = 0; k < n.obj.size(); ++k) {
        if (k) o += ",\n";
        pad(indent + 4);
        appendJsonString(o, n.obj[k].first);
        o += ": ";
        render(o, n.obj[k].second, indent + 4);
      }
      o += '\n';
      pad(indent);
      o += '}';
      break;
    }
    case Node::Arr: case Node::IntArr: case Node::DblArr: {
      size_t count = n.t == Node::Arr ? n.arr.size() : n.t == Node::IntArr ? n.ia.size() : n.da.size();
      if (!count) { o += "[]"; break; }
      o += "[\n";
      for (size_t k = 0; k < count; ++k) {
        if (k) o += ",\n";
        pad(indent + 4);
        if (n.t == Node::Arr) render(o, n.arr[k], indent + 4);
        else if (n.t == Node::IntArr) appendInt(o, n.ia[k]);
        else appendDouble(o, n.da[k]);
      }
      o += '\n';
      pad(indent);
      o += ']';
      break;
    }
  }
}

class Output {
 public:
  // Writes to `fd` (a temporary file, trtrace/files.h); messages name `shown`, the file asked for.
  Output(int fd, const std::string& shown) : path_(shown) {
    const int own = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    f_ = own < 0 ? nullptr : ::fdopen(own, "wb");
    if (!f_) {
      if (own >= 0) ::close(own);
      throw Error(Error::Kind::Io, shown + ": cannot create (" + std::strerror(errno) + ")");
    }
    std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
  }
  ~Output() { if (f_) std::fclose(f_); }
  void write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) throw Error(Error::Kind::Io, path_ + ": write failed (" + std::strerror(errno) + ")");
    bytes_ += n;
  }
  void write(const std::string& s) { write(s.data(), s.size()); }
  void close() {
    FILE* f = f_;
    f_ = nullptr;
    if (std::fclose(f) != 0) throw Error(Error::Kind::Io, path_ + ": write failed (" + std::strerror(errno) + ")");
  }
  uint64_t bytes() const { return bytes_; }

 private:
  std::string path_;
  FILE* f_ = nullptr;
  uint64_t bytes_ = 0;
};

// NVIDIA's reference form {"id": N} means "the same host pointer again"; it is written only for the
// same pointer identity with the same type, count and content (a reader of the JSON cannot tell
// a different count apart, docs/json-bin-layout.md section 7).
struct WeightsKey {
  uint64_t ptr;  // pointer identity (0 = unknown: content alone)
  uint32_t kind, dtype;
  uint64_t count;
  Hash128 content;
  uint64_t length;
  bool operator<(const WeightsKey& o) const {
    return std::tie(ptr, kind, dtype, count, content.hi, content.lo, length) <
           std::tie(o.ptr, o.kind, o.dtype, o.count, o.content.hi, o.content.lo, o.length);
  }
};

bool inlineDecodable(uint32_t dtype) { return dtype <= 5 || dtype == 8; }

// The JSON value of inline weights NVIDIA writes as numbers (FLOAT, HALF, INT8, INT32, BOOL, UINT8, INT64).
Node inlineValues(const unsigned char* p, uint32_t dtype, uint64_t count) {
  Node arr;
  if (dtype == 0 || dtype == 1) {
    arr.t = Node::DblArr;
    arr.da.resize(count);
    for (uint64_t k = 0; k < count; ++k) {
      if (dtype == 0) { float f; std::memcpy(&f, p + 4 * k, 4); arr.da[k] = f; }
      else { uint16_t h; std::memcpy(&h, p + 2 * k, 2); arr.da[k] = lib::halfToDouble(h); }
    }
    return arr;
  }
  arr.t = Node::IntArr;
  arr.ia.resize(count);
  for (uint64_t k = 0; k < count; ++k) {
    switch (dtype) {
      case 3: { int32_t x; std::memcpy(&x, p + 4 * k, 4); arr.ia[k] = x; break; }
      case 8: { int64_t x; std::memcpy(&x, p + 8 * k, 8); arr.ia[k] = x; break; }
      case 2: arr.ia[k] = static_cast<int8_t>(p[k]); break;
      case 4: arr.ia[k] = p[k] != 0; break;
      default: arr.ia[k] = p[k]; break;
    }
  }
  return arr;
}

// One conversion: the trace's calls in order, each rendered as NVIDIA's record; weights go to the
// BIN in first-use order.
class TraceToJson {
 public:
  TraceToJson(const std::string& tracePath, const std::string& jsonPath, const TraceToJsonOptions& opt);
  Stats run();

 private:
  bool call(const CallView& c);
  bool argNode(const api::ParamDesc& p, const ValueView& v, uint32_t net, Node& n);
  Node weightsNode(const ValueView& v, uint32_t net);
  void toBin(Node& w, const void* p, size_t n);
  int64_t& slot(uint64_t h) {
    if (h >= ids_.size()) ids_.resize(std::max<size_t>(h + 1, ids_.size() * 2), 0);
    return ids_[h];
  }
  int64_t idOf(uint64_t h) {
    int64_t& s = slot(h);
    if (!s) s = ++nextId_;  // an object no recorded call returned: first sight
    return s - 1;
  }
  void finish();

  std::string tracePath_, jsonPath_, binPath_;
  const TraceToJsonOptions& opt_;
  Stats st_;
  std::unique_ptr<Reader> reader_;
  files::PendingOutputs outputs_;
  std::unique_ptr<Output> json_, bin_;
  std::vector<int64_t> ids_;  // trace handle -> NVIDIA object id + 1 (0 = none yet); handles are dense from 1
  int64_t nextId_ = 0;
  std::unordered_map<uint32_t, std::map<WeightsKey, int64_t>> weightIds_;  // per network
  std::unordered_map<uint32_t, int64_t> nextWeightId_;
  int64_t trtVersion_ = -1;
  uint64_t releasedAt_ = 0, index_ = 0;
  std::unordered_set<uint32_t> networks_;
  std::string out_ = "{\n    \"api_calls\": [";
  std::vector<std::pair<std::string, Node>> fields_;
};

TraceToJson::TraceToJson(const std::string& tracePath, const std::string& jsonPath, const TraceToJsonOptions& opt)
    : tracePath_(tracePath), jsonPath_(jsonPath), opt_(opt) {
  reader_ = Reader::open(tracePath);
  if (reader_->truncatedAt())
    throw Error(Error::Kind::Truncated, reader_->truncationMessage() + "; not converting a truncated trace");
  if (opt.requireCalls && reader_->callCount() == 0)
    throw Error(Error::Kind::Empty, tracePath + ": holds no calls (nothing to convert)");
  st_.traceBytes = reader_->mapping().size();
  binPath_ = opt.binPath.empty() ? binPathFor(jsonPath) : opt.binPath;
  json_ = std::make_unique<Output>(outputs_.add(jsonPath), jsonPath);
  bin_ = std::make_unique<Output>(outputs_.add(binPath_), binPath_);
}

void TraceToJson::toBin(Node& w, const void* p, size_t n) {
  w.obj.emplace_back("offset", Node::integer(static_cast<int64_t>(bin_->bytes())));
  bin_->write(p, n);
}

Node TraceToJson::weightsNode(const ValueView& v, uint32_t net) {
  Node w = Node::object();
  const uint32_t dtype = v.dtype();
  const uint64_t count = v.count();
  ++st_.weights;
  if (count == 0 || (v.kind() == ValueKind::WeightsInline && v.bytes().empty())) {  // empty
    w.obj.emplace_back("count", Node::integer(static_cast<int64_t>(count)));
    w.obj.emplace_back("id", Node::integer(-1));
    w.obj.emplace_back("type", Node::integer(dtype));
    return w;
  }
  WeightsKey key{v.weightsPtr(), static_cast<uint32_t>(v.kind()), dtype, count, {}, 0};
  if (v.kind() == ValueKind::WeightsBlob) key.content = v.blob().hash, key.length = v.blob().length;
  else if (v.kind() == ValueKind::WeightsInline) key.content = hash128(v.bytes().data(), v.bytes().size()), key.length = v.bytes().size();
  else if (!key.ptr) key.content.lo = v.seed();  // random: one pointer is one set of values
  auto& table = weightIds_[net];
  if (auto it = table.find(key); it != table.end()) {
    w.obj.emplace_back("id", Node::integer(it->second));
    return w;
  }
  const int64_t id = nextWeightId_[net]++;
  table.emplace(key, id);
  w.obj.emplace_back("count", Node::integer(static_cast<int64_t>(count)));
  w.obj.emplace_back("id", Node::integer(id));
  w.obj.emplace_back("type", Node::integer(dtype));
  if (v.kind() == ValueKind::WeightsRandom) {
    Node r = Node::object();
    r.obj.emplace_back("seed", Node::integer(static_cast<int64_t>(v.seed())));
    w.obj.emplace_back("random", std::move(r));
  } else if (v.kind() == ValueKind::WeightsBlob) {
    BlobView b = reader_->checkedBlob(v.blob());  // damaged weights are not passed on
    toBin(w, b.data(), b.size());
  } else if (!inlineDecodable(dtype)) {
    toBin(w, v.bytes().data(), v.bytes().size());  // NVIDIA cannot inline these types
  } else {
    if (v.bytes().size() < weightBytes(dtype, count))
      throw Error(Error::Kind::Corrupt, tracePath_ + ": inline weights shorter than their count");
    w.obj.emplace_back("inline", inlineValues(reinterpret_cast<const unsigned char*>(v.bytes().data()), dtype, count));
  }
  return w;
}

// One argument as NVIDIA writes it; false: NVIDIA writes none.
bool TraceToJson::argNode(const api::ParamDesc& p, const ValueView& v, uint32_t net, Node& n) {
  switch (v.kind()) {
    case ValueKind::Null: return false;
    case ValueKind::Bool: n = Node::boolean(v.asBool()); return true;
    case ValueKind::I64: case ValueKind::Enum: n = Node::integer(v.asI64()); return true;
    case ValueKind::U64: n = Node::integer(static_cast<int64_t>(v.asU64())); return true;
    case ValueKind::F32: case ValueKind::F64: n = Node::dbl(v.asF64()); return true;
    case ValueKind::String: n = Node::str(v.asString()); return true;
    case ValueKind::Dims: case ValueKind::I64Array:
      if (p.kind == api::Kind::Dims && (v.kind() == ValueKind::I64Array || v.ints().empty())) return false;  // empty/invalid Dims
      n.t = Node::IntArr;
      n.ia.assign(v.ints().begin(), v.ints().end());
      return true;
    case ValueKind::F32Array:
      n.t = Node::DblArr;
      n.da.assign(v.floats().begin(), v.floats().end());
      return true;
    case ValueKind::Handle:
      if (!v.asU64()) return false;
      n = Node::ref(idOf(v.asU64()));
      return true;
    case ValueKind::HandleArray:
      n.t = Node::Arr;
      for (uint64_t h : v.handles()) n.arr.push_back(h ? Node::ref(idOf(h)) : Node::object());
      return true;
    case ValueKind::Bytes: {
      abi::Permutation perm;
      if (p.structId != api::StructId::Permutation || v.bytes().size() != sizeof perm) return false;  // no NVIDIA encoding known
      std::memcpy(&perm, v.bytes().data(), sizeof perm);
      n.t = Node::IntArr;
      n.ia.assign(std::begin(perm.order), std::end(perm.order));
      return true;
    }
    case ValueKind::WeightsInline: case ValueKind::WeightsBlob: case ValueKind::WeightsRandom:
      n = weightsNode(v, net);
      return true;
  }
  return false;
}

bool TraceToJson::call(const CallView& c) {
  if (opt_.progress) opt_.progress(c.seq(), reader_->callCount());
  const api::ApiDesc* d = api::find(c.apiId());
  if (!d)
    throw Error(Error::Kind::Usage, tracePath_ + ": call #" + std::to_string(c.seq()) + " has API id " +
                                        std::to_string(c.apiId()) + ", unknown to this build");
  if (!opt_.allCalls && d->has(api::flag::kBuildIrrelevant)) {
    ++st_.skipped;
    return true;
  }
  if (d->id == api::kentry_createInferBuilder_INTERNAL && trtVersion_ < 0 && c.argCount() > 1)
    trtVersion_ = c.arg(1).asI64();
  fields_.clear();
  fields_.emplace_back("api_index", Node::integer(static_cast<int64_t>(index_)));
  fields_.emplace_back("class", Node::str(d->has(api::flag::kEntry) ? std::string_view() : d->interface));
  fields_.emplace_back("function", Node::str(d->method));
  fields_.emplace_back("object", Node::integer(c.receiver() ? idOf(c.receiver()) : -1));
  const uint32_t net = c.networkId();
  if (net) networks_.insert(net);
  for (uint32_t i = 0; i < d->nargs && i < c.argCount(); ++i) {
    const api::ParamDesc& p = d->params[i];
    if (p.lengthOf >= 0 || p.kind == api::Kind::Foreign || p.kind == api::Kind::Out) continue;  // NVIDIA omits them
    Node n;
    if (argNode(p, c.arg(i), net, n)) fields_.emplace_back(std::string(d->args[i]), std::move(n));
  }
  if (auto r = c.ret(); r && r->kind() == ValueKind::Handle && r->asU64() &&
                        (opt_.allCalls || d->result.iface != api::Iface::HostMemory) && !slot(r->asU64())) {
    slot(r->asU64()) = ++nextId_;
    fields_.emplace_back("return", Node::ref(nextId_ - 1));
  }
  // After a build its network's weights table goes (bounded memory over many networks); a later
  // repeat in that network would just be written again under a new id.
  if (d->id == api::kBuilder_buildSerializedNetwork) weightIds_.erase(net);
  Node rec = Node::object();
  rec.obj = std::move(fields_);
  out_ += index_ ? ",\n        " : "\n        ";
  render(out_, rec, 8);
  fields_ = std::move(rec.obj);
  ++index_;
  if (bin_->bytes() - releasedAt_ > (64u << 20) || (index_ & 0x3ffff) == 0) {
    releasedAt_ = bin_->bytes();  // bounded memory: the trace pages read so far leave the RSS
    files::releasePages(reader_->mapping().data(), reader_->mapping().size());
  }
  if (out_.size() > (1u << 20)) {
    json_->write(out_);
    out_.clear();
  }
  return true;
}

void TraceToJson::finish() {
  if (trtVersion_ < 0) {
    // From the header's library version "major.minor.patch[.build]".
    int a = 0, b = 0, p = 0;
    std::sscanf(std::string(reader_->header().libraryVersion).c_str(), "%d.%d.%d", &a, &b, &p);
    trtVersion_ = a * 10000 + b * 100 + p;
  }
  out_ += index_ ? "\n    ],\n" : "],\n";
  out_ += "    \"output_bin\": ";
  appendJsonString(out_, binPath_.substr(binPath_.rfind('/') + 1));
  out_ += ",\n    \"trt_version\": ";
  appendInt(out_, trtVersion_);
  out_ += "\n}";
  json_->write(out_);
  json_->close();
  bin_->close();
  outputs_.commit();
}

Stats TraceToJson::run() {
  auto t0 = std::chrono::steady_clock::now();
  reader_->forEachCall([&](const CallView& c) { return call(c); });
  finish();
  st_.calls = index_;
  st_.jsonBytes = json_->bytes();
  st_.binBytes = bin_->bytes();
  st_.networks = static_cast<uint32_t>(networks_.size());
  st_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st_;
}

}  // namespace

Stats traceToJson(const std::string& tracePath, const std::string& jsonPath, const TraceToJsonOptions& opt) {
  return TraceToJson(tracePath, jsonPath, opt).run();
}

}  // namespace trtrace::convert
