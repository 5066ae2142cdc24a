// trtrace export --python (issue 17): DIR/build.py rebuilds the same engine(s) with the
// tensorrt_rtx bindings, no trtrace needed, one statement per recorded call (calls that only
// observe are comments), objects named by kind and ordinal (network_definition_0,
// convolution_layer_3); weights are DIR/weights/wN.npy, one per weights pointer of the capture
// (aliasing kept). The Python spelling of every call comes from the spec (api::ApiDesc
// pyForm/pyName, schema/gen_python.py py_spelling, checked against the real bindings by
// tests/test_export_bindings.py). A call the bindings cannot express one statement per call (a form
// None, weights numpy has no type for, weights marked random, a struct argument, an UNSUPPORTED
// call, a call on a null object, a string that is not UTF-8, ...) stops the export with one line
// naming the call: never a wrong script. Trace text reaches the script only through pyEscape.
#include "export_python.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "trtrace/api_abi.h"
#include "trtrace/api_table.h"
#include "trtrace/call_check.h"
#include "trtrace/error.h"
#include "trtrace/network_id.h"

namespace trtrace::cli {

namespace {

// Length of the valid UTF-8 sequence at s[i] (its code point in cp), 0 if there is none: overlong
// forms, surrogates and code points past U+10FFFF are not valid (Python could not encode them).
size_t utf8At(std::string_view s, size_t i, uint32_t& cp) {
  const auto c = uint8_t(s[i]);
  size_t n = 0;
  uint32_t least = 0;
  if (c >= 0xc2 && c <= 0xdf)
    n = 2, cp = c & 0x1fu, least = 0x80;
  else if (c >= 0xe0 && c <= 0xef)
    n = 3, cp = c & 0x0fu, least = 0x800;
  else if (c >= 0xf0 && c <= 0xf4)
    n = 4, cp = c & 0x07u, least = 0x10000;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto b = uint8_t(s[i + k]);
    if ((b & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (b & 0x3fu);
  }
  return cp < least || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ? 0 : n;
}

}  // namespace

std::string pyEscape(std::string_view s, bool* utf8) {
  std::string o;
  o.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const auto c = uint8_t(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      if (c == '"' || c == '\\') o += '\\';
      o += char(c);
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const size_t n = c >= 0x80 ? utf8At(s, i, cp) : 0;
    char b[16];
    if (n)
      std::snprintf(b, sizeof b, cp > 0xffff ? "\\U%08x" : "\\u%04x", unsigned(cp));
    else
      std::snprintf(b, sizeof b, "\\x%02x", unsigned(c));
    if (!n && c >= 0x80 && utf8) *utf8 = false;
    o += b;
    i += n ? n : 1;
  }
  return o;
}

const std::string_view kScriptPrelude =
    "import argparse\nimport pathlib\nimport sys\n\nimport numpy as np\nimport tensorrt_rtx as trt\n\n"
    "HERE = pathlib.Path(__file__).resolve().parent\n"
    "parser = argparse.ArgumentParser()\n"
    "parser.add_argument(\"--out\", default=\"engine\", help=\"engine file (several networks: <out>0, <out>1, ...)\")\n"
    "cli = parser.parse_args()\n"
    "logger = trt.Logger(trt.Logger.WARNING)\n"
    "failed = 0\n\n\n"
    "def weights(name):\n    return np.load(HERE / \"weights\" / f\"{name}.npy\")\n\n\n"
    "def read(obj, name):\n"
    "    \"\"\"A read back the app made, through a property: the same library call (it may change the library's\n"
    "    state). The bindings raise where the library answered with its error value, which the app only saw.\"\"\"\n"
    "    try:\n"
    "        getattr(obj, name)\n"
    "    except (RuntimeError, ValueError):\n"
    "        pass\n\n\n"
    "def read_call(method, *args):\n"
    "    \"\"\"A read back the app made, through a method (see read).\"\"\"\n"
    "    try:\n"
    "        method(*args)\n"
    "    except (RuntimeError, ValueError):\n"
    "        pass\n\n\n"
    "def engine_path(network):\n"
    "    return cli.out if NETWORKS == 1 else f\"{cli.out}{network}\"\n\n\n"
    "class EngineStream(trt.IStreamWriter):\n"
    "    \"\"\"The writer of a streamed build (build_serialized_network_to_stream): the engine goes to its "
    "file.\"\"\"\n\n"
    "    def __init__(self, network):\n"
    "        trt.IStreamWriter.__init__(self)\n"
    "        self.path = engine_path(network)\n"
    "        self.file = open(self.path, \"wb\")\n"
    "        self.nbytes = 0\n"
    "        streams[network] = self\n\n"
    "    def write(self, data):\n"
    "        self.file.write(data)\n"
    "        self.nbytes += len(data)\n"
    "        return len(data)\n\n\n"
    "streams = {}\n\n\n"
    "def stream(network):\n"
    "    return EngineStream(network)\n\n\n"
    "def save(engine, network):\n"
    "    \"\"\"A build's result: its engine (None: failed), or a streamed build's True/False.\"\"\"\n"
    "    global failed\n"
    "    streamed = streams.pop(network, None)\n"
    "    if streamed is not None:\n"
    "        streamed.file.close()\n"
    "    if engine is None or engine is False:\n"
    "        print(f\"network {network}: build failed\", file=sys.stderr)\n"
    "        failed = 1\n"
    "        if streamed is not None:\n"
    "            pathlib.Path(streamed.path).unlink()\n"
    "        return\n"
    "    path, nbytes = engine_path(network), streamed.nbytes if streamed is not None else engine.nbytes\n"
    "    if streamed is None:\n"
    "        with open(path, \"wb\") as f:\n"
    "            f.write(engine)\n"
    "    print(f\"network {network}: engine {path} ({nbytes} bytes)\")\n\n\n";

const std::string_view kScriptEnd = "\nsys.exit(failed)\n";

namespace {

std::string snakeCase(std::string_view camel) {
  std::string o;
  for (size_t i = 0; i < camel.size(); ++i) {
    const char c = camel[i];
    const bool upper = c >= 'A' && c <= 'Z';
    if (upper && i &&
        (!(camel[i - 1] >= 'A' && camel[i - 1] <= 'Z') ||
         (i + 1 < camel.size() && camel[i + 1] >= 'a' && camel[i + 1] <= 'z')))
      o += '_';
    o += upper ? char(c - 'A' + 'a') : c;
  }
  return o;
}

std::string pyFloat(double v, bool single) {
  if (std::isnan(v)) return "float(\"nan\")";
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "-float(\"inf\")";
  char b[40];
  std::snprintf(b, sizeof b, single ? "%.9g" : "%.17g", v);  // round-trips the recorded value
  std::string s = b;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

template <class T>
std::string pyList(std::span<const T> xs, bool tuple, const std::function<std::string(T)>& f) {
  std::string o = tuple ? "(" : "[";
  for (size_t i = 0; i < xs.size(); ++i) o += (i ? ", " : "") + f(xs[i]);
  if (tuple && xs.size() == 1) o += ",";
  return o + (tuple ? ")" : "]");
}

// One .npy file to write: the weights of one pointer identity.
struct NpyFile {
  std::string name, descr;
  uint64_t count = 0, bytes = 0;
  std::optional<BlobRef> blob;  // else `inline_`
  std::vector<std::byte> inline_;
};

// Turns the calls of a trace into Python statements (see the file comment).
class PyScript {
 public:
  explicit PyScript(const Reader& r) : r_(r) {}
  void add(const CallView& c);
  void finish() const { checkJoined(); }
  std::string text(std::string_view source, uint32_t networks) const;
  const std::vector<NpyFile>& npys() const { return npys_; }
  size_t statements() const { return statements_; }

 private:
  [[noreturn]] void fail(const CallView& c, const std::string& why) const { fail(c.seq(), callName(c), why); }
  [[noreturn]] void fail(uint64_t seq, const std::string& call, const std::string& why) const {
    throw Inexpressible(r_.path() + ": call #" + std::to_string(seq) + " (" + call +
                        "): cannot be written with the tensorrt_rtx Python API (" + why + ")");
  }
  // Names in messages come from this build's table, never from the trace's own descriptors.
  static std::string callName(const CallView& c) {
    const api::ApiDesc* d = api::find(c.apiId());
    return d ? std::string(d->interface) + "::" + std::string(d->method) : "api#" + std::to_string(c.apiId());
  }
  std::string var(const CallView& c, uint64_t h) const;
  static std::string argLabel(const CallView& c, size_t i) {
    const api::ApiDesc* d = api::find(c.apiId());
    return "argument " + (d && i < d->nargs ? std::string(d->args[i]) : std::to_string(i));
  }
  std::string bind(uint64_t h, std::string_view type);  // a variable for handle h, named after its type
  std::string receiver(const CallView& c, const api::ApiDesc& d) const;
  void observe(const CallView& c, const api::ApiDesc& d, const std::string& self);
  std::string value(const CallView& c, const api::ApiDesc& d, size_t i, const ValueView& v);
  std::string string(const CallView& c, size_t i, std::string_view s) const;
  std::string enumerator(const CallView& c, size_t i, uint32_t type, int64_t value) const;
  std::string weights(const CallView& c, const ValueView& v);
  std::string structValue(const CallView& c, const api::ApiDesc& d, size_t i, const ValueView& v) const;
  std::string args(const CallView& c, const api::ApiDesc& d, size_t from = 0);
  void read(const CallView& c, const api::ApiDesc& d, const std::string& self);
  void join(const CallView& c, const api::ApiDesc& d, const std::string& self);
  void checkJoined() const;

  // Calls of a Joined form waiting for the rest of their selectors (key: receiver and the other
  // arguments, as written).
  struct Joining {
    uint64_t seq;                     // the first of them, for a message
    std::string call;                 // Interface::method
    std::vector<std::string> values;  // per selector enumerator; empty: not set yet
  };

  const Reader& r_;
  std::unordered_map<uint64_t, std::string> vars_;
  std::unordered_map<std::string, size_t> ordinals_;
  std::unordered_map<uint64_t, size_t> byPtr_;            // weights pointer identity -> npys_ index
  std::vector<std::pair<std::string, Joining>> joining_;  // in order of their first call
  std::vector<NpyFile> npys_;
  std::string body_;
  size_t statements_ = 0;
};

std::string PyScript::var(const CallView& c, uint64_t h) const {
  auto it = vars_.find(h);
  if (it == vars_.end()) fail(c, "object " + std::to_string(h) + " is not created by any call the script makes");
  return it->second;
}

// A new variable for object `h` (0: a null result, not remembered), named by its interface
// ("handle:ConvolutionLayer") and ordinal; `result` where the spec names none (a trace may record a
// handle for a call that returns none).
std::string PyScript::bind(uint64_t h, std::string_view type) {
  const std::string base = type.empty() ? "result" : snakeCase(type);
  std::string name = base + "_" + std::to_string(ordinals_[base]++);
  if (h) vars_[h] = name;
  return name;
}

// The receiver's variable. A statement on an object needs one the script made; an entry point
// (New) has none, and a comment (Observe) names an unknown one by its handle.
std::string PyScript::receiver(const CallView& c, const api::ApiDesc& d) const {
  if (d.pyForm == api::PyForm::New) return "";
  if (d.pyForm == api::PyForm::Observe || d.pyForm == api::PyForm::Read || d.pyForm == api::PyForm::ReadCall) {
    const auto it = vars_.find(c.receiver());
    return it != vars_.end() ? it->second : "@" + std::to_string(c.receiver());
  }
  if (!c.receiver()) fail(c, "a call on a null object");
  return var(c, c.receiver());
}

// A comment: what the app read back (C++ spelling, recorded values), escaped as a whole.
void PyScript::observe(const CallView& c, const api::ApiDesc& d, const std::string& self) {
  std::string a;
  for (size_t i = 0; i < c.argCount(); ++i) a += (i ? ", " : "") + c.arg(i).toString();
  const std::optional<ValueView> ret = c.ret();
  body_ += "# " + pyEscape(self + "." + std::string(d.method) + "(" + a + ")" + (ret ? " -> " + ret->toString() : "")) +
           "\n";
}

std::string PyScript::string(const CallView& c, size_t i, std::string_view s) const {
  bool utf8 = true;
  std::string lit = "\"" + pyEscape(s, &utf8) + "\"";
  if (!utf8) fail(c, argLabel(c, i) + ": a string that is not UTF-8 (the bindings take str)");
  return lit;
}

std::string PyScript::enumerator(const CallView& c, size_t i, uint32_t type, int64_t value) const {
  const std::string_view e = api::enumName(type), n = api::enumeratorName(type, value);
  if (e.empty() || n.empty()) fail(c, argLabel(c, i) + ": an enumerator this build does not know");
  return "trt." + std::string(e) + "." + std::string(n.substr(n[0] == 'k' ? 1 : 0));
}

std::string PyScript::weights(const CallView& c, const ValueView& v) {
  const auto type = abi::DataType(int32_t(v.dtype()));
  const std::string descr(abi::numpyType(type));
  if (v.count() == 0) return "trt.Weights(" + enumerator(c, 0, api::kEnumDataType, v.dtype()) + ")";
  if (descr.empty()) fail(c, "weights of a type numpy has no dtype for");
  if (v.kind() == ValueKind::WeightsRandom)
    fail(c, "weights the capture marked random (their values are not in the trace)");
  auto it = v.weightsPtr() ? byPtr_.find(v.weightsPtr()) : byPtr_.end();
  if (it != byPtr_.end()) {
    const NpyFile& f = npys_[it->second];
    if (f.descr != descr || f.count != v.count()) fail(c, "one weights pointer used with another type or count");
    return "trt.Weights(" + f.name + ")";
  }
  NpyFile f{"w" + std::to_string(npys_.size()), descr, v.count(), abi::weightBytes(type, int64_t(v.count())), {}, {}};
  if (v.kind() == ValueKind::WeightsBlob)
    f.blob = v.blob();
  else
    f.inline_.assign(v.bytes().begin(), v.bytes().end());
  if ((f.blob ? f.blob->length : f.inline_.size()) < f.bytes) fail(c, "weights shorter than their count");
  body_ += f.name + " = weights(\"" + f.name + "\")\n";
  if (v.weightsPtr()) byPtr_[v.weightsPtr()] = npys_.size();
  npys_.push_back(std::move(f));
  return "trt.Weights(" + npys_.back().name + ")";
}

std::string PyScript::value(const CallView& c, const api::ApiDesc& d, size_t i, const ValueView& v) {
  const bool foreign = i < d.nargs && d.params[i].kind == api::Kind::Foreign;
  switch (v.kind()) {
    case ValueKind::Null: return "None";
    case ValueKind::Bool:
      // A build's application object is its engine writer (the spec's build role): the script's own.
      if (foreign && v.asBool() && d.has(api::flag::kBuild))
        return "stream(" + std::to_string(shownNetwork(c.networkId())) + ")";
      if (foreign && v.asBool()) fail(c, argLabel(c, i) + ": an application object");
      return foreign ? "None" : v.asBool() ? "True" : "False";
    case ValueKind::I64: return std::to_string(v.asI64());
    case ValueKind::U64: return std::to_string(v.asU64());
    case ValueKind::F32: return pyFloat(v.asF64(), true);
    case ValueKind::F64: return pyFloat(v.asF64(), false);
    case ValueKind::String: return string(c, i, v.asString());
    case ValueKind::Enum: return enumerator(c, i, v.typeId(), v.asI64());
    case ValueKind::Dims: return pyList<int64_t>(v.ints(), true, [](int64_t x) { return std::to_string(x); });
    case ValueKind::Handle: return v.asU64() ? var(c, v.asU64()) : "None";
    case ValueKind::HandleArray:
      return pyList<uint64_t>(v.handles(), false, [&](uint64_t h) { return h ? var(c, h) : std::string("None"); });
    case ValueKind::I64Array: return pyList<int64_t>(v.ints(), false, [](int64_t x) { return std::to_string(x); });
    case ValueKind::F32Array: return pyList<float>(v.floats(), false, [](float x) { return pyFloat(x, true); });
    case ValueKind::WeightsInline:
    case ValueKind::WeightsBlob:
    case ValueKind::WeightsRandom: return weights(c, v);
    case ValueKind::Bytes: return structValue(c, d, i, v);
  }
  fail(c, argLabel(c, i) + ": a " + std::string(kindName(v.kind())) + " value");
}

// A struct the trace holds as its bytes, in the bindings' spelling of that struct (the spec says
// which struct the parameter is). A Permutation is written whole: trt.Permutation([...]) pads a
// shorter list with zeros, so all eight entries give the library the recorded bytes.
std::string PyScript::structValue(const CallView& c, const api::ApiDesc& d, size_t i, const ValueView& v) const {
  const bool permutation =
      i < d.nargs && d.params[i].kind == api::Kind::Struct && d.params[i].structId == api::StructId::Permutation;
  if (!permutation || v.bytes().size() != sizeof(abi::Permutation)) fail(c, argLabel(c, i) + ": a bytes value");
  abi::Permutation perm;
  std::memcpy(&perm, v.bytes().data(), sizeof perm);
  return "trt.Permutation(" + pyList<int32_t>(perm.order, false, [](int32_t x) { return std::to_string(x); }) + ")";
}

// The arguments in the bindings' order (an output the library fills is not one). A count the spec pairs with an array
// ([len=]/[bytes=]: ParamDesc::lengthOf) is not written: the bindings take the sequence alone
// (add_concatenation(inputs), add_einsum(inputs, equation)); add() has checked that it is the sequence's length.
std::string PyScript::args(const CallView& c, const api::ApiDesc& d, size_t from) {
  std::string o;
  for (size_t i = from; i < c.argCount(); ++i)
    if (i >= d.nargs || (d.params[i].lengthOf < 0 && d.params[i].kind != api::Kind::Out))
      o += (o.empty() ? "" : ", ") + value(c, d, i, c.arg(i));
  return o;
}

// One recorded call as one statement (or comment) of the script.
void PyScript::add(const CallView& c) {
  const api::ApiDesc* d = api::find(c.apiId());
  if (!d) fail(c, "an API this build does not know");
  if (c.status() == CallStatus::Unsupported) fail(c, "recorded as UNSUPPORTED: its arguments are not in the trace");
  if (const std::string bad = callProblem(r_, c); !bad.empty())  // verify's and the player's check
    throw Error(Error::Kind::Corrupt,
                r_.path() + ": call #" + std::to_string(c.seq()) + " (" + callName(c) + "): " + bad);
  const std::string self = receiver(c, *d), py(d->pyName);
  std::string s;
  switch (d->pyForm) {
    case api::PyForm::None: fail(c, "no one-statement counterpart in the bindings");
    case api::PyForm::Observe: return observe(c, *d, self);
    case api::PyForm::Read:
    case api::PyForm::ReadCall: return read(c, *d, self);
    case api::PyForm::Joined: return join(c, *d, self);
    case api::PyForm::Delete:
      s = "del " + self;
      vars_.erase(c.receiver());
      break;
    case api::PyForm::New: s = "trt." + py + "(logger)"; break;
    case api::PyForm::Get: s = self + "." + py; break;
    case api::PyForm::Property: s = self + "." + py + " = " + args(c, *d); break;
    case api::PyForm::Method: s = self + "." + py + "(" + args(c, *d) + ")"; break;
  }
  // Only an expression has a result (a trace may record a handle for `del` or a setter too).
  const bool expression =
      d->pyForm == api::PyForm::New || d->pyForm == api::PyForm::Get || d->pyForm == api::PyForm::Method;
  const std::optional<ValueView> ret = c.ret();
  const uint64_t made = expression && ret && ret->kind() == ValueKind::Handle ? ret->asU64() : 0;
  // A build (the spec's role, recorded outcome or not) is saved; a failed build's None is kept too:
  // save() reports it.
  const bool build = d->has(api::flag::kBuild);
  if (build) checkJoined();
  std::string result;
  if (made || (build && expression))
    result = bind(made, d->pyForm == api::PyForm::New ? d->pyName : api::ifaceName(d->result.iface));
  body_ += (result.empty() ? "" : result + " = ") + s + "\n";
  ++statements_;
  if (!result.empty() && build) body_ += "save(" + result + ", " + std::to_string(shownNetwork(c.networkId())) + ")\n";
}

// A read back: the same library call through the bindings (it may change the library's state:
// Tensor.getDimensions runs shape inference), after a comment of what the app read; the prelude's
// read()/read_call() keep a binding's exception at the library's error value from ending the
// script. On an object the script does not hold, only the comment.
void PyScript::read(const CallView& c, const api::ApiDesc& d, const std::string& self) {
  observe(c, d, self);
  if (self.empty() || self[0] == '@') return;
  const std::string a = d.pyForm == api::PyForm::ReadCall ? args(c, d) : "";
  body_ += d.pyForm == api::PyForm::ReadCall
               ? "read_call(" + self + "." + std::string(d.pyName) + (a.empty() ? "" : ", " + a) + ")\n"
               : "read(" + self + ", \"" + std::string(d.pyName) + "\")\n";
  ++statements_;
}

// A Joined call (OptimizationProfile::setDimensions -> set_shape(name, min, opt, max)): buffered
// under its receiver and other arguments until every enumerator of its selector (the enum
// parameter, enumerators 0, 1, ...) has a value, then written once, the values in enum order. The
// bindings raise where the library returned false, so a refused call cannot be written.
void PyScript::join(const CallView& c, const api::ApiDesc& d, const std::string& self) {
  size_t sel = d.nargs;
  for (size_t i = 0; i < d.nargs && sel == d.nargs; ++i)
    if (d.params[i].kind == api::Kind::Enum) sel = i;
  if (sel + 2 != d.nargs || c.argCount() != d.nargs) fail(c, "a joined call without a selector before its value");
  if (const auto ret = c.ret(); ret && ret->kind() == ValueKind::Bool && !ret->asBool())
    fail(c, "the library refused it; " + std::string(d.pyName) + " raises ValueError there");
  const ValueView s = c.arg(sel);
  size_t n = 0;
  while (n < 64 && !api::enumeratorName(d.params[sel].enumId, int64_t(n)).empty()) ++n;
  if (s.kind() != ValueKind::Enum || s.asI64() < 0 || size_t(s.asI64()) >= n)
    fail(c, argLabel(c, sel) + ": not a selector");
  std::string key = self + "." + std::string(d.pyName) + "(";
  for (size_t i = 0; i < sel; ++i) key += value(c, d, i, c.arg(i)) + ", ";
  auto it = std::find_if(joining_.begin(), joining_.end(), [&](const auto& j) { return j.first == key; });
  if (it == joining_.end())
    it = joining_.insert(joining_.end(), {key, Joining{c.seq(), callName(c), std::vector<std::string>(n)}});
  it->second.values[size_t(s.asI64())] = value(c, d, sel + 1, c.arg(sel + 1));
  if (std::any_of(it->second.values.begin(), it->second.values.end(), [](const std::string& v) { return v.empty(); }))
    return;
  std::string line = it->first;
  for (size_t i = 0; i < n; ++i) line += (i ? ", " : "") + it->second.values[i];
  body_ += line + ")\n";
  ++statements_;
  joining_.erase(it);
}

// Before a build and at the end: a joined call still missing selectors cannot be written (the
// bindings set them all at once).
void PyScript::checkJoined() const {
  if (joining_.empty()) return;
  const Joining& j = joining_.front().second;
  fail(j.seq, j.call,
       "only some selectors set; the bindings set all " + std::to_string(j.values.size()) + " in one call");
}

std::string PyScript::text(std::string_view source, uint32_t networks) const {
  const std::string doc =
      "#!/usr/bin/env python3\n"
      "\"\"\"Rebuilds the engine(s) of " +
      pyEscape(source) +
      " with the tensorrt_rtx Python API, without trtrace.\n\n"
      "Written by `trtrace export`: one statement per recorded call (calls that only read something back\n"
      "are comments), weights in weights/*.npy beside this file. Edit it to experiment.\n"
      "    python3 build.py --out ENGINE     (several networks: ENGINE0, ENGINE1, ...)\n\"\"\"\n";
  return doc + std::string(kScriptPrelude) + "NETWORKS = " + std::to_string(networks) + "\n" + body_ +
         std::string(kScriptEnd);
}
// The .npy (format 1.0) header of a flat array.
std::string npyHeader(const NpyFile& f) {
  std::string dict =
      "{'descr': '" + f.descr + "', 'fortran_order': False, 'shape': (" + std::to_string(f.count) + ",), }";
  const size_t total = 10 + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  std::string h = "\x93NUMPY\x01";
  h += '\0';
  h += char(dict.size() & 0xff);
  h += char(dict.size() >> 8);
  return h + dict;
}

void writeFile(const std::string& path, const std::string& head, const void* data, size_t n) {
  FILE* f = std::fopen(path.c_str(), "wxe");
  bool ok = f && std::fwrite(head.data(), 1, head.size(), f) == head.size() && (!n || std::fwrite(data, 1, n, f) == n);
  ok = f && std::fclose(f) == 0 && ok;
  if (!ok) throw Error(Error::Kind::Io, path + ": cannot write (" + std::strerror(errno) + ")");
}

// DIR must be new or empty: an earlier export (or anything else) is not overwritten.
void checkDir(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) {
    if (errno == ENOENT) return;
    throw Error(Error::Kind::Io, dir + ": cannot open (" + std::strerror(errno) + ")");
  }
  bool empty = true;
  while (dirent* e = readdir(d))
    if (std::strcmp(e->d_name, ".") && std::strcmp(e->d_name, "..")) empty = false;
  closedir(d);
  if (!empty) throw Error(Error::Kind::Usage, dir + ": not empty (not overwriting it; name a new folder)");
}

// Files written under a temporary folder beside DIR, renamed to DIR when all are complete.
class PendingDir {
 public:
  explicit PendingDir(const std::string& dir) : dir_(dir) {
    std::string t = dir + ".tmp-XXXXXX";
    if (!mkdtemp(t.data())) throw Error(Error::Kind::Io, dir + ": cannot create (" + std::strerror(errno) + ")");
    temp_ = t;
  }
  ~PendingDir() {
    if (temp_.empty()) return;
    for (const std::string& f : made_) unlink(f.c_str());
    rmdir((temp_ + "/weights").c_str());
    rmdir(temp_.c_str());
  }
  std::string path(const std::string& rel) { return made_.emplace_back(temp_ + "/" + rel); }
  void commit() {
    if (std::rename(temp_.c_str(), dir_.c_str()) != 0)
      throw Error(Error::Kind::Io, dir_ + ": cannot create (" + std::strerror(errno) + ")");
    temp_.clear();
  }
  const std::string& temp() const { return temp_; }

 private:
  std::string dir_, temp_;
  std::vector<std::string> made_;
};

}  // namespace

ExportResult exportPython(const Reader& r, const std::string& source, const std::string& dir) {
  checkDir(dir);
  PyScript script(r);
  uint32_t networks = 0;
  r.forEachCall([&](const CallView& c) {
    networks = std::max(networks, c.networkId());
    script.add(c);
    return true;
  });
  script.finish();
  if (r.callCount() == 0) throw Error(Error::Kind::Empty, source + ": no calls to export");
  PendingDir out(dir);
  if (!script.npys().empty() && mkdir((out.temp() + "/weights").c_str(), 0755) != 0)
    throw Error(Error::Kind::Io, dir + "/weights: cannot create (" + std::strerror(errno) + ")");
  ExportResult res;
  for (const NpyFile& f : script.npys()) {
    BlobView b;
    if (f.blob) b = r.checkedBlob(*f.blob);
    writeFile(out.path("weights/" + f.name + ".npy"), npyHeader(f), f.blob ? b.data() : f.inline_.data(), f.bytes);
    res.weightBytes += f.bytes;
  }
  writeFile(out.path("build.py"), script.text(source, networks), nullptr, 0);
  out.commit();
  res.statements = script.statements();
  res.weightsFiles = script.npys().size();
  return res;
}

}  // namespace trtrace::cli
