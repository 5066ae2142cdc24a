// trtrace trace -> NVIDIA JSON+BIN, in the exact text layout NVIDIA's shim writes
// (docs/json-bin-layout.md §3, §13): json.dumps(indent=4, sort_keys=True, ensure_ascii=False),
// no trailing newline; object ids from one counter in order of first return; Weights ids per
// network in order of first use, {"id": N} for a repeated use; BIN = raw bytes in first-use order.
#include <fcntl.h>
#include <sys/mman.h>
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
#include "trtrace/convert.h"
#include "trtrace/files.h"
#include "trtrace/hash.h"
#include "trtrace/reader.h"

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

void appendString(std::string& o, std::string_view s) {
  o += '"';
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\r': o += "\\r"; break;
      case '\t': o += "\\t"; break;
      case '\b': o += "\\b"; break;
      case '\f': o += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", static_cast<unsigned char>(c));
          o += b;
        } else {
          o += c;
        }
    }
  }
  o += '"';
}

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
    case Node::Str: appendString(o, n.s); break;
    case Node::Bool: o += n.i ? "true" : "false"; break;
    case Node::Obj: {
      if (n.obj.empty()) { o += "{}"; break; }
      std::sort(n.obj.begin(), n.obj.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      o += "{\n";
      for (size_t k = 0; k < n.obj.size(); ++k) {
        if (k) o += ",\n";
        pad(indent + 4);
        appendString(o, n.obj[k].first);
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

}  // namespace

Stats traceToJson(const std::string& tracePath, const std::string& jsonPath, const TraceToJsonOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  Stats st;
  auto reader = Reader::open(tracePath);
  if (reader->truncatedAt())
    throw Error(Error::Kind::Truncated, reader->truncationMessage() + "; not converting a truncated trace");
  if (opt.requireCalls && reader->callCount() == 0)
    throw Error(Error::Kind::Empty, tracePath + ": holds no calls (nothing to convert)");
  st.traceBytes = reader->mapping().size();
  const std::string binPath = opt.binPath.empty() ? binPathFor(jsonPath) : opt.binPath;
  const std::string binName = binPath.substr(binPath.rfind('/') + 1);
  files::PendingOutputs outputs;
  Output json(outputs.add(jsonPath), jsonPath);
  Output bin(outputs.add(binPath), binPath);

  // Trace handle -> NVIDIA object id + 1 (0 = none yet); handles are dense from 1.
  std::vector<int64_t> ids;
  int64_t nextId = 0;
  auto slot = [&](uint64_t h) -> int64_t& {
    if (h >= ids.size()) ids.resize(std::max<size_t>(h + 1, ids.size() * 2), 0);
    return ids[h];
  };
  auto idOf = [&](uint64_t h) {
    int64_t& s = slot(h);
    if (!s) s = ++nextId;  // an object no recorded call returned: first sight
    return s - 1;
  };
  std::unordered_map<uint32_t, std::map<WeightsKey, int64_t>> weightIds;  // per network
  std::unordered_map<uint32_t, int64_t> nextWeightId;
  int64_t trtVersion = -1;
  uint64_t releasedAt = 0;
  std::unordered_set<uint32_t> networks;
  uint64_t index = 0;
  std::string out = "{\n    \"api_calls\": [";
  std::vector<std::pair<std::string, Node>> fields;

  auto weightsNode = [&](const ValueView& v, uint32_t net) {
    Node w = Node::object();
    const uint32_t dtype = v.dtype();
    const uint64_t count = v.count();
    ++st.weights;
    const bool empty = count == 0 || (v.kind() == ValueKind::WeightsInline && v.bytes().empty());
    if (empty) {
      w.obj.emplace_back("count", Node::integer(static_cast<int64_t>(count)));
      w.obj.emplace_back("id", Node::integer(-1));
      w.obj.emplace_back("type", Node::integer(dtype));
      return w;
    }
    WeightsKey key{v.weightsPtr(), static_cast<uint32_t>(v.kind()), dtype, count, {}, 0};
    if (v.kind() == ValueKind::WeightsBlob) key.content = v.blob().hash, key.length = v.blob().length;
    else if (v.kind() == ValueKind::WeightsInline) key.content = hash128(v.bytes().data(), v.bytes().size()), key.length = v.bytes().size();
    else if (!key.ptr) key.content.lo = v.seed();  // random: one pointer is one set of values
    auto& table = weightIds[net];
    if (auto it = table.find(key); it != table.end()) {
      w.obj.emplace_back("id", Node::integer(it->second));
      return w;
    }
    const int64_t id = nextWeightId[net]++;
    table.emplace(key, id);
    w.obj.emplace_back("count", Node::integer(static_cast<int64_t>(count)));
    w.obj.emplace_back("id", Node::integer(id));
    w.obj.emplace_back("type", Node::integer(dtype));
    auto toBin = [&](const void* p, size_t n) {
      w.obj.emplace_back("offset", Node::integer(static_cast<int64_t>(bin.bytes())));
      bin.write(p, n);
    };
    if (v.kind() == ValueKind::WeightsRandom) {
      Node r = Node::object();
      r.obj.emplace_back("seed", Node::integer(static_cast<int64_t>(v.seed())));
      w.obj.emplace_back("random", std::move(r));
    } else if (v.kind() == ValueKind::WeightsBlob) {
      BlobView b = reader->checkedBlob(v.blob());  // damaged weights are not passed on
      toBin(b.data(), b.size());
    } else if (!inlineDecodable(dtype)) {
      toBin(v.bytes().data(), v.bytes().size());  // NVIDIA cannot inline these types
    } else {
      auto b = v.bytes();
      const uint64_t need = weightBytes(dtype, count);
      if (b.size() < need) throw Error(Error::Kind::Corrupt, tracePath + ": inline weights shorter than their count");
      Node arr;
      const unsigned char* p = reinterpret_cast<const unsigned char*>(b.data());
      if (dtype == 0 || dtype == 1) {
        arr.t = Node::DblArr;
        arr.da.resize(count);
        for (uint64_t k = 0; k < count; ++k) {
          if (dtype == 0) { float f; std::memcpy(&f, p + 4 * k, 4); arr.da[k] = f; }
          else { uint16_t h; std::memcpy(&h, p + 2 * k, 2); arr.da[k] = halfToDouble(h); }
        }
      } else {
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
      }
      w.obj.emplace_back("inline", std::move(arr));
    }
    return w;
  };

  reader->forEachCall([&](const CallView& c) {
    if (opt.progress) opt.progress(c.seq(), reader->callCount());
    const api::ApiDesc* d = api::find(c.apiId());
    if (!d)
      throw Error(Error::Kind::Usage, tracePath + ": call #" + std::to_string(c.seq()) + " has API id " +
                                          std::to_string(c.apiId()) + ", unknown to this build");
    if (!opt.allCalls && (d->method == "~" || d->interface == "HostMemory")) {
      ++st.skipped;
      return true;
    }
    if (d->id == api::kentry_createInferBuilder_INTERNAL && trtVersion < 0 && c.argCount() > 1)
      trtVersion = c.arg(1).asI64();
    fields.clear();
    fields.emplace_back("api_index", Node::integer(static_cast<int64_t>(index)));
    fields.emplace_back("class", Node::str(d->interface == "entry" ? std::string_view() : d->interface));
    fields.emplace_back("function", Node::str(d->method));
    fields.emplace_back("object", Node::integer(c.receiver() ? idOf(c.receiver()) : -1));
    const uint32_t net = c.networkId();
    if (net) networks.insert(net);
    for (uint32_t i = 0; i < d->nargs && i < c.argCount(); ++i) {
      if (isDerivedCount(*d, i)) continue;
      const std::string_view kind = d->kinds[i];
      if (kind == "foreign" || kind == "out") continue;
      ValueView v = c.arg(i);
      Node n;
      switch (v.kind()) {
        case ValueKind::Null: continue;
        case ValueKind::Bool: n = Node::boolean(v.asBool()); break;
        case ValueKind::I64: case ValueKind::Enum: n = Node::integer(v.asI64()); break;
        case ValueKind::U64: n = Node::integer(static_cast<int64_t>(v.asU64())); break;
        case ValueKind::F32: case ValueKind::F64: n = Node::dbl(v.asF64()); break;
        case ValueKind::String: n = Node::str(v.asString()); break;
        case ValueKind::Dims: case ValueKind::I64Array:
          if (kind == "dims" && (v.kind() == ValueKind::I64Array || v.ints().empty())) continue;  // empty/invalid Dims
          n.t = Node::IntArr;
          n.ia.assign(v.ints().begin(), v.ints().end());
          break;
        case ValueKind::F32Array:
          n.t = Node::DblArr;
          n.da.assign(v.floats().begin(), v.floats().end());
          break;
        case ValueKind::Handle:
          if (!v.asU64()) continue;
          n = Node::ref(idOf(v.asU64()));
          break;
        case ValueKind::HandleArray:
          n.t = Node::Arr;
          for (uint64_t h : v.handles()) n.arr.push_back(h ? Node::ref(idOf(h)) : Node::object());
          break;
        case ValueKind::Bytes:
          if (kind != "struct:Permutation" || v.bytes().size() != 32) continue;  // no NVIDIA encoding known
          n.t = Node::IntArr;
          for (size_t k = 0; k < 8; ++k) {
            int32_t x;
            std::memcpy(&x, v.bytes().data() + 4 * k, 4);
            n.ia.push_back(x);
          }
          break;
        case ValueKind::WeightsInline: case ValueKind::WeightsBlob: case ValueKind::WeightsRandom:
          n = weightsNode(v, net);
          break;
      }
      fields.emplace_back(std::string(d->args[i]), std::move(n));
    }
    if (auto r = c.ret(); r && r->kind() == ValueKind::Handle && r->asU64() &&
                          (opt.allCalls || d->ret != "handle:HostMemory") && !slot(r->asU64())) {
      slot(r->asU64()) = ++nextId;
      fields.emplace_back("return", Node::ref(nextId - 1));
    }
    // After a build its network's weights table goes (bounded memory over many networks); a later
    // repeat in that network would just be written again under a new id.
    if (d->id == api::kBuilder_buildSerializedNetwork) weightIds.erase(net);
    Node rec = Node::object();
    rec.obj = std::move(fields);
    out += index ? ",\n        " : "\n        ";
    render(out, rec, 8);
    fields = std::move(rec.obj);
    ++index;
    if (bin.bytes() - releasedAt > (64u << 20) || (index & 0x3ffff) == 0) {
      // Bounded memory: drop the trace pages read so far from the RSS (re-read if needed again).
      releasedAt = bin.bytes();
      auto m = reader->mapping();
      const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
      uintptr_t lo = (reinterpret_cast<uintptr_t>(m.data()) + page - 1) / page * page;
      uintptr_t hi = (reinterpret_cast<uintptr_t>(m.data()) + m.size()) / page * page;
      if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED);
    }
    if (out.size() > (1u << 20)) {
      json.write(out);
      out.clear();
    }
    return true;
  });
  if (trtVersion < 0) {
    // From the header's library version "major.minor.patch[.build]".
    int a = 0, b = 0, p = 0;
    std::sscanf(std::string(reader->header().libraryVersion).c_str(), "%d.%d.%d", &a, &b, &p);
    trtVersion = a * 10000 + b * 100 + p;
  }
  out += index ? "\n    ],\n" : "],\n";
  out += "    \"output_bin\": ";
  appendString(out, binName);
  out += ",\n    \"trt_version\": ";
  appendInt(out, trtVersion);
  out += "\n}";
  json.write(out);
  json.close();
  bin.close();
  outputs.commit();
  st.calls = index;
  st.jsonBytes = json.bytes();
  st.binBytes = bin.bytes();
  st.networks = static_cast<uint32_t>(networks.size());
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace trtrace::convert
