// NVIDIA's JSON records, one trace call at a time (trtrace/json_records.h): a small JSON tree per
// record (JsonNode), rendered as json.dumps(indent=4, sort_keys=True) renders it.
#include "trtrace/json_records.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <tuple>

#include "common.h"
#include "trtrace/api_abi.h"
#include "trtrace/text.h"
#include "trt_values.h"

namespace trtrace::convert {

struct JsonNode {
  enum T { Int, Dbl, Str, Bool, Obj, Arr, IntArr, DblArr } t = Int;
  int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<std::pair<std::string, JsonNode>> obj;
  std::vector<JsonNode> arr;
  std::vector<int64_t> ia;
  std::vector<double> da;

  static JsonNode integer(int64_t v) {
    JsonNode n;
    n.t = Int;
    n.i = v;
    return n;
  }
  static JsonNode dbl(double v) {
    JsonNode n;
    n.t = Dbl;
    n.d = v;
    return n;
  }
  static JsonNode str(std::string_view v) {
    JsonNode n;
    n.t = Str;
    n.s = v;
    return n;
  }
  static JsonNode boolean(bool v) {
    JsonNode n;
    n.t = Bool;
    n.i = v;
    return n;
  }
  static JsonNode object() {
    JsonNode n;
    n.t = Obj;
    return n;
  }
  static JsonNode ref(int64_t id) {
    JsonNode n = object();
    n.obj.emplace_back("object", integer(id));
    return n;
  }
};

namespace {

void appendInt(std::string& o, int64_t v) {
  char b[24];
  auto r = std::to_chars(b, b + sizeof b, v);
  o.append(b, r.ptr);
}

void render(std::string& o, JsonNode& n, int indent) {
  auto pad = [&](int k) { o.append(static_cast<size_t>(k), ' '); };
  switch (n.t) {
    case JsonNode::Int: appendInt(o, n.i); break;
    case JsonNode::Dbl: appendDouble(o, n.d); break;
    case JsonNode::Str: appendJsonString(o, n.s); break;
    case JsonNode::Bool: o += n.i ? "true" : "false"; break;
    case JsonNode::Obj: {
      if (n.obj.empty()) {
        o += "{}";
        break;
      }
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
    case JsonNode::Arr:
    case JsonNode::IntArr:
    case JsonNode::DblArr: {
      size_t count = n.t == JsonNode::Arr ? n.arr.size() : n.t == JsonNode::IntArr ? n.ia.size() : n.da.size();
      if (!count) {
        o += "[]";
        break;
      }
      o += "[\n";
      for (size_t k = 0; k < count; ++k) {
        if (k) o += ",\n";
        pad(indent + 4);
        if (n.t == JsonNode::Arr)
          render(o, n.arr[k], indent + 4);
        else if (n.t == JsonNode::IntArr)
          appendInt(o, n.ia[k]);
        else
          appendDouble(o, n.da[k]);
      }
      o += '\n';
      pad(indent);
      o += ']';
      break;
    }
  }
}

bool inlineDecodable(uint32_t dtype) { return dtype <= 5 || dtype == 8; }

// Whether every FLOAT/HALF element is a number JSON can hold: NaN and +-inf cannot be written
// inline (json.dumps and NVIDIA's shim write null, which loses the value).
bool allFinite(const unsigned char* p, uint32_t dtype, uint64_t count) {
  for (uint64_t k = 0; k < count; ++k) {
    if (dtype == 0) {
      float f;
      std::memcpy(&f, p + 4 * k, 4);
      if (!std::isfinite(f)) return false;
    } else if (dtype == 1) {
      uint16_t h;
      std::memcpy(&h, p + 2 * k, 2);
      if ((h & 0x7c00) == 0x7c00) return false;  // exponent all ones: inf or NaN
    }
  }
  return true;
}

// The JSON value of inline weights NVIDIA writes as numbers (FLOAT, HALF, INT8, INT32, BOOL, UINT8, INT64).
JsonNode inlineValues(const unsigned char* p, uint32_t dtype, uint64_t count) {
  JsonNode arr;
  if (dtype == 0 || dtype == 1) {
    arr.t = JsonNode::DblArr;
    arr.da.resize(count);
    for (uint64_t k = 0; k < count; ++k) {
      if (dtype == 0) {
        float f;
        std::memcpy(&f, p + 4 * k, 4);
        arr.da[k] = f;
      } else {
        uint16_t h;
        std::memcpy(&h, p + 2 * k, 2);
        arr.da[k] = lib::halfToDouble(h);
      }
    }
    return arr;
  }
  arr.t = JsonNode::IntArr;
  arr.ia.resize(count);
  for (uint64_t k = 0; k < count; ++k) {
    switch (dtype) {
      case 3: {
        int32_t x;
        std::memcpy(&x, p + 4 * k, 4);
        arr.ia[k] = x;
        break;
      }
      case 8: {
        int64_t x;
        std::memcpy(&x, p + 8 * k, 8);
        arr.ia[k] = x;
        break;
      }
      case 2: arr.ia[k] = static_cast<int8_t>(p[k]); break;
      case 4: arr.ia[k] = p[k] != 0; break;
      default: arr.ia[k] = p[k]; break;
    }
  }
  return arr;
}

}  // namespace

bool JsonRecords::WeightsKey::operator<(const WeightsKey& o) const {
  return std::tie(ptr, kind, dtype, count, content.hi, content.lo, length) <
         std::tie(o.ptr, o.kind, o.dtype, o.count, o.content.hi, o.content.lo, o.length);
}

JsonRecords::JsonRecords(std::string name, bool allCalls, BlobSource blobs, BinSink bin)
    : name_(std::move(name)), allCalls_(allCalls), blobs_(std::move(blobs)), bin_(std::move(bin)) {}
JsonRecords::~JsonRecords() = default;

int64_t& JsonRecords::slot(uint64_t h) {
  if (h >= ids_.size()) ids_.resize(std::max<size_t>(h + 1, ids_.size() * 2), 0);
  return ids_[h];
}

int64_t JsonRecords::idOf(uint64_t h) {
  int64_t& s = slot(h);
  if (!s) s = ++nextId_;  // an object no recorded call returned: first sight
  return s - 1;
}

void JsonRecords::toBin(JsonNode& w, const void* p, size_t n) {
  w.obj.emplace_back("offset", JsonNode::integer(static_cast<int64_t>(binBytes_)));
  bin_(p, n);
  binBytes_ += n;
}

JsonNode JsonRecords::weightsNode(const ValueView& v, uint32_t net) {
  JsonNode w = JsonNode::object();
  const uint32_t dtype = v.dtype();
  const uint64_t count = v.count();
  ++weights_;
  if (count == 0 || (v.kind() == ValueKind::WeightsInline && v.bytes().empty())) {  // empty
    w.obj.emplace_back("count", JsonNode::integer(static_cast<int64_t>(count)));
    w.obj.emplace_back("id", JsonNode::integer(-1));
    w.obj.emplace_back("type", JsonNode::integer(dtype));
    return w;
  }
  WeightsKey key{v.weightsPtr(), static_cast<uint32_t>(v.kind()), dtype, count, {}, 0};
  if (v.kind() == ValueKind::WeightsBlob)
    key.content = v.blob().hash, key.length = v.blob().length;
  else if (v.kind() == ValueKind::WeightsInline)
    key.content = hash128(v.bytes().data(), v.bytes().size()), key.length = v.bytes().size();
  else if (!key.ptr)
    key.content.lo = v.seed();  // random: one pointer is one set of values
  auto& table = weightIds_[net];
  if (auto it = table.find(key); it != table.end()) {
    w.obj.emplace_back("id", JsonNode::integer(it->second));
    return w;
  }
  const int64_t id = nextWeightId_[net]++;
  table.emplace(key, id);
  w.obj.emplace_back("count", JsonNode::integer(static_cast<int64_t>(count)));
  w.obj.emplace_back("id", JsonNode::integer(id));
  w.obj.emplace_back("type", JsonNode::integer(dtype));
  if (v.kind() == ValueKind::WeightsRandom) {
    JsonNode r = JsonNode::object();
    r.obj.emplace_back("seed", JsonNode::integer(static_cast<int64_t>(v.seed())));
    w.obj.emplace_back("random", std::move(r));
  } else if (v.kind() == ValueKind::WeightsBlob) {
    BlobView b = blobs_(v.blob());
    toBin(w, b.data(), b.size());
  } else if (!inlineDecodable(dtype)) {
    toBin(w, v.bytes().data(), v.bytes().size());  // NVIDIA cannot inline these types
  } else {
    if (v.bytes().size() < weightBytes(dtype, count))
      throw Error(Error::Kind::Corrupt, name_ + ": inline weights shorter than their count");
    const auto* p = reinterpret_cast<const unsigned char*>(v.bytes().data());
    if (allFinite(p, dtype, count))
      w.obj.emplace_back("inline", inlineValues(p, dtype, count));
    else
      toBin(w, p, static_cast<size_t>(weightBytes(dtype, count)));  // NaN, +-inf: exact in the BIN (§7)
  }
  return w;
}

// A NaN or +-inf argument (not weights): NVIDIA's layout has no place for it but a JSON number, so
// it is written as null, as NVIDIA's shim writes it, and the first one is said in one line.
void JsonRecords::lostNumber() {
  if (lostNumbers_++ == 0)
    std::fprintf(stderr,
                 "trtrace: warning: %s: api_calls[%llu] %s::%s argument \"%s\" is NaN or infinite: NVIDIA's JSON "
                 "cannot hold it, written as null (the trace keeps it)\n",
                 name_.c_str(), static_cast<unsigned long long>(index_), std::string(desc_->interface).c_str(),
                 std::string(desc_->method).c_str(), std::string(desc_->args[arg_]).c_str());
}

// One argument as NVIDIA writes it; false: NVIDIA writes none.
bool JsonRecords::argNode(const api::ParamDesc& p, const ValueView& v, uint32_t net, JsonNode& n) {
  switch (v.kind()) {
    case ValueKind::Null: return false;
    case ValueKind::Bool: n = JsonNode::boolean(v.asBool()); return true;
    case ValueKind::I64:
    case ValueKind::Enum: n = JsonNode::integer(v.asI64()); return true;
    case ValueKind::U64: n = JsonNode::integer(static_cast<int64_t>(v.asU64())); return true;
    case ValueKind::F32:
    case ValueKind::F64:
      if (!std::isfinite(v.asF64())) lostNumber();
      n = JsonNode::dbl(v.asF64());
      return true;
    case ValueKind::String: n = JsonNode::str(v.asString()); return true;
    case ValueKind::Dims:
    case ValueKind::I64Array:
      if (p.kind == api::Kind::Dims && (v.kind() == ValueKind::I64Array || v.ints().empty()))
        return false;  // empty/invalid Dims
      n.t = JsonNode::IntArr;
      n.ia.assign(v.ints().begin(), v.ints().end());
      return true;
    case ValueKind::F32Array:
      n.t = JsonNode::DblArr;
      n.da.assign(v.floats().begin(), v.floats().end());
      if (!std::all_of(n.da.begin(), n.da.end(), [](double x) { return std::isfinite(x); })) lostNumber();
      return true;
    case ValueKind::Handle:
      if (!v.asU64()) return false;
      n = JsonNode::ref(idOf(v.asU64()));
      return true;
    case ValueKind::HandleArray:
      n.t = JsonNode::Arr;
      for (uint64_t h : v.handles()) n.arr.push_back(h ? JsonNode::ref(idOf(h)) : JsonNode::object());
      return true;
    case ValueKind::Bytes: {
      abi::Permutation perm;
      if (p.structId != api::StructId::Permutation || v.bytes().size() != sizeof perm)
        return false;  // no NVIDIA encoding known
      std::memcpy(&perm, v.bytes().data(), sizeof perm);
      n.t = JsonNode::IntArr;
      n.ia.assign(std::begin(perm.order), std::end(perm.order));
      return true;
    }
    case ValueKind::WeightsInline:
    case ValueKind::WeightsBlob:
    case ValueKind::WeightsRandom: n = weightsNode(v, net); return true;
  }
  return false;
}

void JsonRecords::add(const CallView& c, std::string& out) {
  const api::ApiDesc* d = api::find(c.apiId());
  if (!d)
    throw Error(Error::Kind::Usage, name_ + ": call #" + std::to_string(c.seq()) + " has API id " +
                                        std::to_string(c.apiId()) + ", unknown to this build");
  if (!allCalls_ && d->has(api::flag::kBuildIrrelevant)) {
    ++skipped_;
    return;
  }
  if (d->id == api::kentry_createInferBuilder_INTERNAL && trtVersion_ < 0 && c.argCount() > 1)
    trtVersion_ = c.arg(1).asI64();
  JsonNode rec = JsonNode::object();
  auto& fields = rec.obj;
  fields.emplace_back("api_index", JsonNode::integer(static_cast<int64_t>(index_)));
  fields.emplace_back("class", JsonNode::str(d->has(api::flag::kEntry) ? std::string_view() : d->interface));
  fields.emplace_back("function", JsonNode::str(d->method));
  fields.emplace_back("object", JsonNode::integer(c.receiver() ? idOf(c.receiver()) : -1));
  const uint32_t net = c.networkId();
  if (net) networks_.insert(net);
  for (uint32_t i = 0; i < d->nargs && i < c.argCount(); ++i) {
    const api::ParamDesc& p = d->params[i];
    if (p.lengthOf >= 0 || p.kind == api::Kind::Foreign || p.kind == api::Kind::Out) continue;  // NVIDIA omits them
    JsonNode n;
    desc_ = d, arg_ = i;
    if (argNode(p, c.arg(i), net, n)) fields.emplace_back(std::string(d->args[i]), std::move(n));
  }
  if (auto r = c.ret(); r && r->kind() == ValueKind::Handle && r->asU64() &&
                        (allCalls_ || d->result.iface != api::Iface::HostMemory) && !slot(r->asU64())) {
    slot(r->asU64()) = ++nextId_;
    fields.emplace_back("return", JsonNode::ref(nextId_ - 1));
  }
  // After a build its network's weights table goes (bounded memory over many networks); a later
  // repeat in that network would just be written again under a new id.
  if (d->has(api::flag::kBuild)) weightIds_.erase(net);
  out += index_ ? ",\n        " : "\n        ";
  render(out, rec, 8);
  ++index_;
}

std::string JsonRecords::closing(const std::string& binName, std::string_view libraryVersion) const {
  int64_t version = trtVersion_;
  if (version < 0) {  // from the library version "major.minor.patch[.build]"
    int a = 0, b = 0, p = 0;
    std::sscanf(std::string(libraryVersion).c_str(), "%d.%d.%d", &a, &b, &p);
    version = a * 10000 + b * 100 + p;
  }
  std::string out = index_ ? "\n    ],\n" : "],\n";
  out += "    \"output_bin\": ";
  appendJsonString(out, binName.substr(binName.rfind('/') + 1));
  out += ",\n    \"trt_version\": ";
  appendInt(out, version);
  out += "\n}";
  return out;
}

}  // namespace trtrace::convert
