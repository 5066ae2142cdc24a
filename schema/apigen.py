#!/usr/bin/env python3
"""Generates every per-method artefact from the API spec (docs/api-spec.md).

    apigen.py --spec schema/api --out <dir> [--update-lock]

Outputs (build tree, never committed):
  trtrace/api_abi.h       ABI declarations: enums, structs, aliases, apiv vtable classes
  trtrace/api_table.h     API ids (append-only, from schema/api/ids.lock), descriptor table
  api_table.cpp           names and argument names of every API id (self-describing traces)
  capture_gen.inc         capture shim: one recording wrapper class per interface + factories
  replay_gen.inc          player: one dispatch function per API id + the dispatch table

Ids: schema/api/ids.lock maps each method key (interface, name, parameter types) to its id.
Ids never move; a method missing from the lock gets the next free id (with a note to run
--update-lock so the assignment is committed). Removed methods keep their ids reserved.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import re
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import apispec  # noqa: E402
from apispec import SCALARS, Method, Param, SpecError, Type  # noqa: E402

DESTROY = "~"          # synthetic method name: the application deleted the object


# ------------------------------------------------------------------------------------------------
# ids.lock
# ------------------------------------------------------------------------------------------------
def assign_ids(spec, lock_path: pathlib.Path, update: bool):
    locked_api, locked_enum = {}, {}
    if lock_path.exists():
        for ln, line in enumerate(lock_path.read_text().splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            kind, num, key = line.split(" ", 2)
            table = locked_api if kind == "api" else locked_enum
            if key in table or int(num) in table.values():
                raise SpecError(f"{lock_path}:{ln}: duplicate {kind} '{key}' / id {num}")
            table[key] = int(num)
    new = []
    next_api = max(locked_api.values(), default=0) + 1
    for m in all_methods(spec):
        if m.key in locked_api:
            m.api_id = locked_api[m.key]
        else:
            m.api_id, next_api = next_api, next_api + 1
            new.append(m.key)
    next_enum = max(locked_enum.values(), default=0) + 1
    for e in spec.enums.values():
        if e.name in locked_enum:
            e.type_id = locked_enum[e.name]
        else:
            e.type_id, next_enum = next_enum, next_enum + 1
            new.append(f"enum {e.name}")
    if new and update:
        lines = ["# trtrace API ids. APPEND-ONLY: ids never change meaning; removed methods keep theirs.",
                 "# Regenerate with: python3 schema/apigen.py --spec schema/api --update-lock"]
        lines += [f"enum {i} {k}" for k, i in sorted(locked_enum.items(), key=lambda kv: kv[1])]
        lines += [f"enum {e.type_id} {e.name}" for e in spec.enums.values() if e.name not in locked_enum]
        lines += [f"api {i} {k}" for k, i in sorted(locked_api.items(), key=lambda kv: kv[1])]
        lines += [f"api {m.api_id} {m.key}" for m in all_methods(spec) if m.key not in locked_api]
        lock_path.write_text("\n".join(lines) + "\n")
    elif new:
        print(f"apigen: note: {len(new)} ids not in {lock_path.name} (first: {new[0]}); "
              f"run `python3 schema/apigen.py --spec schema/api --update-lock` and commit it",
              file=sys.stderr)


def entry_methods(spec):
    """C entry points recorded like methods of a pseudo-interface named 'entry'."""
    out = []
    for e in spec.entries:
        m = Method("entry", e.name, e.params, e.ret, False, e.mode, {"lib": e.lib})
        out.append(m)
    return out


def interposed(spec):
    """Interfaces whose objects the shim wraps: the library's pimpl classes and the `wrapped`
    abstract ones. Other abstract interfaces (application callbacks, the parser) are not interposed."""
    return [i for i in spec.interfaces.values() if not i.abstract or i.wrapped]


def all_methods(spec):
    """Every API id in declaration order: entries, then per interface its destroy + methods."""
    if not hasattr(spec, "_all"):
        ms = entry_methods(spec)
        for itf in interposed(spec):
            # A wrapped interface's destructor is protected: a deletion is never replayed.
            ms.append(Method(itf.name, DESTROY, [], Type("void", text="void"), False,
                             "unsupported" if itf.wrapped else "record", {}, added=itf.added))
            ms.extend(itf.methods)
        spec._all = ms
    return spec._all


# ------------------------------------------------------------------------------------------------
# C++ spelling
# ------------------------------------------------------------------------------------------------
class Cpp:
    def __init__(self, spec):
        self.spec = spec

    def base(self, name):
        if name in SCALARS:
            return SCALARS[name]
        k = self.spec.kind(name)
        if k == "interface" and name not in self.spec.aliases:
            return "I" + name
        return name

    def type(self, t: Type):
        s = self.base(t.base)
        if t.const:
            s += " const"
        if t.ptr == 2 and t.inner_const:
            s += "* const*"
        else:
            s += "*" * t.ptr
        if t.ref:
            s += "&"
        return s

    def params(self, m):
        return ", ".join(f"{self.type(p.type)} {p.name}" for p in m.params)


def classify(spec, t: Type, ann=None):
    """What a parameter/return is, for recording and replay."""
    ann = ann or {}
    base = spec.resolve(t.base)
    kind = spec.kind(t.base)
    if ann.get("out"):
        return "out"
    if ann.get("len") and t.ptr == 2 and kind == "opaque":
        return "count"            # a returned array of foreign objects: recorded as its length
    if t.base == "cstr" and t.ptr == 0:
        return "string"
    if t.base == "cstr" and t.ptr == 1:
        return "strings"
    if kind == "interface" and spec.interfaces[base].abstract and not spec.interfaces[base].wrapped:
        return "foreign"          # application-implemented callbacks cannot travel in a trace
    if kind == "interface":
        if t.ptr == 2:
            return "handles"
        return "handle"
    if kind == "opaque" or base in ("ptr", "cptr"):
        if ann.get("bytes"):
            return "bytes"
        return "foreign"
    if kind == "struct":
        if t.ptr:
            return "foreign"
        if base == "Dims64":
            return "dims"
        if base == "Weights":
            return "weights"
        return "struct"
    if kind == "enum":
        return "enums" if t.ptr else "enum"
    # scalars
    if t.ptr:
        return "array" if ann.get("len") else "foreign"
    if base == "void":
        return "void"
    return "scalar"


def arg_kind(spec, t: Type, ann=None):
    """Self-describing kind of a parameter or result: what a converter needs to map a value.
    bool i64 u64 f32 f64 | enum:<Enum> | string | dims | weights | struct:<Name> | handle:<Interface> |
    handles:<Interface> | array:<scalar> | bytes | strings | out | foreign | void"""
    k = classify(spec, t, ann)
    base = spec.resolve(t.base)
    if k == "count":
        return "i64"
    if k == "scalar":
        return {"Bool": "bool", "F32": "f32", "F64": "f64", "U64": "u64"}.get(scalar_enc(spec, t), "i64")
    if k in ("enum", "enums"):
        return f"{k[:-1] if k == 'enums' else k}:{base}" if k == "enum" else f"array:enum:{base}"
    if k in ("handle", "handles"):
        return f"{k}:{base}"
    if k == "struct":
        return f"struct:{base}"
    if k == "array":
        return f"array:{base}"
    return k


def scalar_enc(spec, t: Type):
    base = spec.resolve(t.base)
    return {"bool": "Bool", "f32": "F32", "f64": "F64", "u8": "U64", "u16": "U64", "u32": "U64",
            "u64": "U64", "size": "U64"}.get(base, "I64")


def len_expr(m, p):
    v = p.ann.get("len")
    return v if v is not None else "0"


# ------------------------------------------------------------------------------------------------
# api_abi.h
# ------------------------------------------------------------------------------------------------
def gen_abi(spec, cpp: Cpp):
    o = ["// Generated by schema/apigen.py from schema/api/*.api -- do not edit.",
         f"// ABI of {spec.library} {spec.version}: enums, structs and the vtable classes that cross",
         "// the library boundary. Public objects are opaque here: {vptr, impl pointer per chain level}.",
         "#pragma once", "#include <cstddef>", "#include <cstdint>", "#include <string_view>", "",
         "namespace trtrace::abi {", ""]
    o.append(f'inline constexpr char kLibraryName[] = "{spec.library}";')
    o.append(f'inline constexpr char kLibraryVersion[] = "{spec.version}";  // the base version')
    parts = [int(x) for x in spec.version.split(".")]
    o.append(f"inline constexpr int32_t kLibraryVersionInt = {parts[0] * 10000 + parts[1] * 100 + parts[2]};"
             "  // getInferLibVersion() encoding")
    o.append("// Every version the spec describes, oldest first (the base, then each delta section).")
    o.append("struct SpecVersion {")
    o.append('  const char* text;  // "major.minor.patch.build" of the release the facts were checked on')
    o.append("  int32_t code;      // major*10000 + minor*100 (getInferLibVersion() without the patch)")
    o.append("  int32_t build;     // getInferLibBuildVersion() of that release")
    o.append("};")
    o.append("inline constexpr SpecVersion kSpecVersions[] = {")
    for text, code in spec.versions:
        o.append(f'  {{"{text}", {code}, {int(text.split(".")[3])}}},')
    o.append("};")
    o.append(f"inline constexpr int kNumSpecVersions = {len(spec.versions)};")
    o.append("")
    for e in spec.enums.values():
        o.append(f"enum class {e.name} : {SCALARS[e.underlying]} {{")
        for n, v in e.values:
            o.append(f"  {n} = {v},")
        o.append("};")
    o.append("")
    for name in spec.structs:
        o.append(f"struct {name};")
    for name in spec.opaques:
        o.append(f"struct {name};")
    for name, itf in spec.interfaces.items():
        o.append(f"struct I{name};")
    for name, t in spec.aliases.items():
        o.append(f"using {name} = {cpp.type(t)};")
    o.append("")
    for s in spec.structs.values():
        o.append(f"struct {s.name} {{")
        for fname, ft, n in s.fields:
            o.append(f"  {cpp.type(ft)} {fname}{f'[{n}]' if n else ''};")
        o.append("};")
    o.append("")
    o.append("// Root of every vtable class: the virtual destructor takes the first two slots.")
    o.append("struct VRoot {\n  virtual ~VRoot() noexcept = default;\n};")
    o.append("// Root of every public object: its only virtual function is the destructor.")
    o.append("struct PublicRoot {\n  virtual ~PublicRoot() noexcept = default;\n};")
    for itf in spec.interfaces.values():
        if itf.abstract:
            o.append(f"struct I{itf.name} {{")
            for i, m in enumerate(itf.methods + [None]):
                if itf.dtor_slot == i:
                    o.append(f"  virtual ~I{itf.name}() noexcept = default;")
                if m is not None:
                    o.append(f"  virtual {cpp.type(m.ret)} {m.name}({cpp.params(m)}){' const' if m.const else ''} noexcept = 0;")
            o.append("};")
            continue
        o.append(f"struct V{itf.name} : VRoot {{")
        for m in itf.methods:
            o.append(f"  virtual {cpp.type(m.ret)} {m.name}({cpp.params(m)}){' const' if m.const else ''} noexcept = 0;")
        o.append("};")
    o.append("")
    o.append("// Chain level of each interface: public object field 1 + level holds its V-pointer.")
    o.append("template <class I> struct Level;")
    for itf in spec.interfaces.values():
        if not itf.abstract:
            o.append(f"template <> struct Level<I{itf.name}> {{ static constexpr int value = {itf.level}; using V = V{itf.name}; }};")
    if spec.elementbits:
        en = spec.elementbits_enum
        o.append(f"// Bytes of `count` elements of a {en} (sub-byte types pack; the last byte is rounded up).")
        o.append(f"constexpr uint64_t elementBits({en} t) {{")
        o.append("  switch (t) {")
        for n, bits in spec.elementbits.items():
            o.append(f"    case {en}::{n}: return {bits};")
        o.append("  }")
        o.append("  return 0;  // a value this spec does not know")
        o.append("}")
        o.append(f"constexpr uint64_t weightBytes({en} t, int64_t count) {{")
        o.append("  // Saturates instead of wrapping: a count from a hostile file yields a size no buffer can hold.")
        o.append("  if (count <= 0) return 0;")
        o.append("  const uint64_t n = static_cast<uint64_t>(count), bits = elementBits(t);")
        o.append("  return bits && n > (UINT64_MAX - 7) / bits ? UINT64_MAX : (n * bits + 7) / 8;")
        o.append("}")
        o.append(f"// The numpy dtype (array-interface descr) of a {en}; empty where numpy has none.")
        o.append(f"constexpr std::string_view numpyType({en} t) {{")
        o.append("  switch (t) {")
        for n, descr in spec.numpy.items():
            o.append(f'    case {en}::{n}: return "{descr}";')
        o.append("    default: return {};")
        o.append("  }")
        o.append("}")
    o.append("")
    o.append("}  // namespace trtrace::abi")
    return "\n".join(o) + "\n"


# ------------------------------------------------------------------------------------------------
# api_table.h / api_table.cpp
# ------------------------------------------------------------------------------------------------
def ident(m):
    return f"{m.interface}_{'destroy' if m.name == DESTROY else m.name}"


# The interfaces a network graph is made of, for tools that edit it (trtrace reduce): its tensors,
# and its layers (every interface derived from LAYER_BASE).
TENSOR_IFACE, LAYER_BASE = "Tensor", "Layer"


def role(spec, m, t: Type, ann=None, ret=False):
    """Graph role of a parameter or result (api::Role): Tensor(s), Layer, or NewLayer for the result
    of a non-const method returning a layer (a layer creator: addActivation, Loop.addRecurrence, ...)."""
    k = classify(spec, t, ann)
    if k not in ("handle", "handles"):
        return "Other"
    base = spec.resolve(t.base)
    if base == TENSOR_IFACE:
        return "Tensor" if k == "handle" else "Tensors"
    if k == "handle" and LAYER_BASE in spec.interfaces[base].chain:
        return "NewLayer" if ret and not m.const else "Layer"
    return "Other"


# ------------------------------------------------------------------------------------------------
# Python spelling of each API id in the tensorrt_rtx bindings (trtrace export --python)
# ------------------------------------------------------------------------------------------------
def snake(name):
    """addConvolutionNd -> add_convolution_nd, setNbGroups -> set_num_groups (the bindings' `num_`)."""
    out = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    out = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", out).lower()
    return re.sub(r"(^|_)nb_", r"\1num_", out)


def py_spelling(spec, m):
    """(form, name): how export writes a call of `m` in Python (api::PyForm). The rule: a method is
    its snake_case name; a one-argument setX whose interface has an argument-less getX or isX is the
    property x; an argument-less getX returning an object is the property x; a const method that
    returns a value (not an object) only observes (a comment); the destroy is `del`. `python` lines
    of the overrides list rename (the form stays), make it a method (`name()`), a comment (`(comment)`: an
    application callback that does not change the build) or, with `-`, not expressible;
    entry points are expressible only there (form New: the class built from the script's logger)."""
    key = f"{m.interface}.{m.name}"
    name = spec.python.get(key)
    if name == "-":
        return "None", ""
    if name == "(comment)":
        return "Observe", snake(m.name)
    if name and name.endswith("()"):
        return "Method", name[:-2]
    if m.name == DESTROY:
        return "Delete", ""
    if m.interface == "entry":
        return ("New", name) if name else ("None", "")
    names = {x.name: x for x in spec.interfaces[m.interface].methods}
    k = classify(spec, m.ret, m.ret_ann)
    getter = next((names.get(p + m.name[3:]) for p in ("get", "is") if names.get(p + m.name[3:])), None)
    if m.name.startswith("set") and len(m.params) == 1 and getter and not getter.params:
        return "Property", name or snake(m.name[3:])
    if m.name.startswith("get") and not m.params and k in ("handle", "handles"):
        return "Get", name or snake(m.name[3:])
    if m.const and k not in ("handle", "handles"):
        return "Observe", name or snake(m.name)
    return "Method", name or snake(m.name)


def python_names(spec):
    """Every API id's Python spelling, for the conformance test against the real bindings."""
    out = []
    for m in all_methods(spec):
        form, name = py_spelling(spec, m)
        out.append({"id": m.api_id, "interface": m.interface, "method": m.name, "form": form, "name": name,
                    "since": m.added or spec.versions[0][1],
                    "args": [arg_kind(spec, p.type, p.ann) for p in m.params]})
    return out


def gen_table_h(spec):
    ms = all_methods(spec)
    o = ["// Generated by schema/apigen.py -- do not edit.", "#pragma once", "#include <cstdint>",
         "#include <string_view>", "", "namespace trtrace::api {", "",
         "enum class Mode : uint8_t { Record, Passthrough, Unsupported };", "",
         "// What a parameter or result is in a network's graph, for tools that edit it (trtrace reduce).",
         "enum class Role : uint8_t {",
         "  Other,     // not a tensor or layer handle",
         "  Tensor,    // a tensor handle",
         "  Tensors,   // an array of tensor handles",
         "  Layer,     // a layer handle (an interface derived from Layer), e.g. getLayer's result",
         "  NewLayer,  // the result of a non-const method returning a layer: the call creates it",
         "};", "",
         "// How a call is written in Python with the tensorrt_rtx bindings (apigen.py py_spelling).",
         "enum class PyForm : uint8_t {",
         "  None,      // not expressible one statement per call",
         "  Method,    // obj.name(args)",
         "  Property,  // obj.name = arg (a setter)",
         "  Get,       // obj.name (an argument-less getter of an object)",
         "  Observe,   // a comment: a const call returning a value, or a callback that cannot change the build",
         "  Delete,    // del obj",
         "  New,       // trt.name(logger): an entry point that creates the object",
         "};", "",
         "// One entry per API id: what the trace's self-description and the tools print.",
         "struct ApiDesc {",
         "  uint32_t id;                 // append-only API id (schema/api/ids.lock)",
         "  std::string_view interface;  // 'NetworkDefinition', or 'entry' for C entry points",
         "  std::string_view method;     // method name; '~' = the application deleted the object",
         "  const std::string_view* args;  // parameter names",
         "  const std::string_view* kinds; // per parameter: how it is recorded (see argKind in apigen.py)",
         "  uint32_t nargs;",
         "  std::string_view ret;          // how the result is recorded (same vocabulary)",
         "  Mode mode;",
         "  int32_t slot;                // vtable slot after the destructor pair; -1 if none",
         "  int32_t since;               // first library version that has it (major*10000 + minor*100)",
         "  const Role* roles;           // per parameter: its role in the network graph",
         "  Role retRole;                // the result's role (NewLayer: the call creates a layer)",
         "  PyForm pyForm;               // how trtrace export writes it in Python (tensorrt_rtx bindings)",
         "  std::string_view pyName;     // the bindings' method, property or class name",
         "};", ""]
    seen = set()
    for m in ms:
        name = ident(m)
        n, i = name, 2
        while n in seen:
            n, i = f"{name}_{i}", i + 1
        seen.add(n)
        m.ident = n
        o.append(f"inline constexpr uint32_t k{n} = {m.api_id};")
    o.append("")
    for e in spec.enums.values():
        o.append(f"inline constexpr uint32_t kEnum{e.name} = {e.type_id};")
    o += ["", f"inline constexpr uint32_t kMaxApiId = {max(m.api_id for m in ms)};",
          "const ApiDesc* find(uint32_t id);  // nullptr for ids this build does not know",
          "const ApiDesc* all(uint32_t* count);",
          "std::string_view enumName(uint32_t typeId);",
          "std::string_view enumeratorName(uint32_t typeId, int64_t value);  // empty if unknown",
          "", "}  // namespace trtrace::api"]
    return "\n".join(o) + "\n"


def gen_table_cpp(spec):
    ms = sorted(all_methods(spec), key=lambda m: m.api_id)
    o = ["// Generated by schema/apigen.py -- do not edit.", '#include "trtrace/api_table.h"', "",
         "namespace trtrace::api {", "namespace {"]
    for m in ms:
        names = ", ".join(f'"{p.name}"' for p in m.params) or ""
        kinds = ", ".join(f'"{arg_kind(spec, p.type, p.ann)}"' for p in m.params)
        o.append(f"constexpr std::string_view a{m.api_id}[] = {{{names}}};" if names
                 else f"constexpr const std::string_view* a{m.api_id} = nullptr;")
        o.append(f"constexpr std::string_view k{m.api_id}[] = {{{kinds}}};" if kinds
                 else f"constexpr const std::string_view* k{m.api_id} = nullptr;")
        roles = ", ".join(f"Role::{role(spec, m, p.type, p.ann)}" for p in m.params)
        o.append(f"constexpr Role r{m.api_id}[] = {{{roles}}};" if roles
                 else f"constexpr const Role* r{m.api_id} = nullptr;")
    o.append("constexpr ApiDesc kTable[] = {")
    for m in ms:
        mode = {"record": "Record", "passthrough": "Passthrough", "unsupported": "Unsupported"}[m.mode]
        slot = m.slot if m.interface != "entry" and m.name != DESTROY else -1
        o.append(f'  {{{m.api_id}, "{m.interface}", "{m.name}", a{m.api_id}, k{m.api_id}, {len(m.params)}, '
                 f'"{arg_kind(spec, m.ret, m.ret_ann)}", Mode::{mode}, {slot}, {m.added or spec.versions[0][1]}, '
                 f'r{m.api_id}, Role::{role(spec, m, m.ret, m.ret_ann, ret=True)}, '
                 f'PyForm::{py_spelling(spec, m)[0]}, "{py_spelling(spec, m)[1]}"}},')
    o.append("};")
    o.append("struct EnumDesc { uint32_t id; std::string_view name; const std::pair<int64_t, std::string_view>* values; uint32_t n; };")
    for e in spec.enums.values():
        vals = ", ".join(f'{{{v}, "{n}"}}' for n, v in e.values)
        o.append(f"constexpr std::pair<int64_t, std::string_view> e{e.type_id}[] = {{{vals}}};")
    o.append("constexpr EnumDesc kEnums[] = {")
    for e in spec.enums.values():
        o.append(f'  {{{e.type_id}, "{e.name}", e{e.type_id}, {len(e.values)}}},')
    o.append("};")
    o += ["}  // namespace", "",
          "const ApiDesc* find(uint32_t id) {",
          "  // kTable is sorted by id; ids are dense except for reserved (removed) ones.",
          "  size_t lo = 0, hi = sizeof(kTable) / sizeof(kTable[0]);",
          "  while (lo < hi) {",
          "    size_t mid = (lo + hi) / 2;",
          "    if (kTable[mid].id < id) lo = mid + 1; else hi = mid;",
          "  }",
          "  return lo < sizeof(kTable) / sizeof(kTable[0]) && kTable[lo].id == id ? &kTable[lo] : nullptr;",
          "}",
          "const ApiDesc* all(uint32_t* count) {",
          "  *count = sizeof(kTable) / sizeof(kTable[0]);",
          "  return kTable;",
          "}",
          "std::string_view enumName(uint32_t typeId) {",
          "  for (const auto& e : kEnums) if (e.id == typeId) return e.name;",
          "  return {};",
          "}",
          "std::string_view enumeratorName(uint32_t typeId, int64_t value) {",
          "  for (const auto& e : kEnums) {",
          "    if (e.id != typeId) continue;",
          "    for (uint32_t i = 0; i < e.n; ++i) if (e.values[i].first == value) return e.values[i].second;",
          "  }",
          "  return {};",
          "}",
          "}  // namespace trtrace::api"]
    return "\n".join(o) + "\n"


# ------------------------------------------------------------------------------------------------
# capture_gen.inc: recording wrappers
# ------------------------------------------------------------------------------------------------
def enc_arg(spec, cpp, m, p):
    """C++ statement recording parameter p (before the call)."""
    k = classify(spec, p.type, p.ann)
    n = p.name
    if k == "scalar":
        return f"c.arg{scalar_enc(spec, p.type)}({n});"
    if k == "enum":
        return f"c.argEnum(api::kEnum{spec.resolve(p.type.base)}, static_cast<int64_t>({n}));"
    if k == "string":
        return f"c.argString({n});"
    if k == "dims":
        return f"c.argDims({n});"
    if k == "weights":
        return f"c.argWeights({n});"
    if k == "struct":
        return f"c.argStruct(&{n}, sizeof({n}));"
    if k == "handle":
        return f"c.argHandle({'&' if p.type.ref else ''}{n});"
    if k == "handles":
        return f"c.argHandles({n}, {len_expr(m, p)});"
    if k == "array":
        return f"c.argArray({n}, {len_expr(m, p)});"
    if k == "enums":
        return f"c.argArray(reinterpret_cast<const int32_t*>({n}), {len_expr(m, p)});"
    if k == "bytes":
        return f"c.argBytes({n}, {p.ann['bytes']});"
    if k == "strings":
        return f"c.argStrings({n}, {len_expr(m, p)});" if p.ann.get("len") else "c.argForeign(true);"
    if k == "out":
        return "c.argOut();"
    return "c.argForeign(true);" if p.type.ref else f"c.argForeign({n} != nullptr);"


def fwd_arg(spec, cpp, p):
    """Expression passing parameter p on to the real library (unwrapping our objects)."""
    k = classify(spec, p.type, p.ann)
    if k == "handle":
        it = cpp.base(p.type.base) + (" const" if p.type.const else "")
        if p.type.ref:
            return f"*static_cast<abi::{it}*>(unwrap(&{p.name}))"
        return f"static_cast<abi::{it}*>(unwrap({p.name}))"
    if k == "handles":
        return f"u_{p.name}.data()"
    return p.name


def ret_expr(spec, cpp, m):
    k = classify(spec, m.ret, m.ret_ann)
    if k == "count":
        n = m.ret_ann["len"]
        return f"(c.retI64({n} ? *{n} : 0), r)"
    if k == "handle":
        it = cpp.base(m.ret.base)
        target = f"abi::{it}" + (" const" if m.ret.const else "")
        if m.ret.ref:
            return f"*static_cast<{target}*>(c.retHandle(&r, kIface{m.ret.base}))"
        return f"static_cast<{target}*>(c.retHandle(r, kIface{m.ret.base}))"
    rec = {"scalar": f"c.ret{scalar_enc(spec, m.ret)}(r)",
           "enum": f"c.retEnum(api::kEnum{spec.resolve(m.ret.base)}, static_cast<int64_t>(r))",
           "string": "c.retString(r)", "dims": "c.retDims(r)"}.get(k)
    if rec:
        return f"({rec}, r)"
    return "(c.retOther(), r)"


def capture_method(spec, cpp, ov, itf, m, self_expr, real_expr, own_vtable):
    """One recording method: record the arguments, forward to `real_expr`, record the result."""
    o = []
    key = f"{itf.name}.{m.name}"
    sig = f"{cpp.type(m.ret)} {m.name}({cpp.params(m)}){' const' if m.const else ''} noexcept"
    sig = f"virtual {sig}" if own_vtable else f"{sig} override"
    args = ", ".join(fwd_arg(spec, cpp, p) for p in m.params)
    if key in ov["capture"]:
        if itf.wrapped:
            raise SpecError(f"override capture {key}: overrides of wrapped interfaces are not supported")
        fwd = ", ".join(p.name for p in m.params)
        return [f"  {sig} {{ return override_{itf.name}_{m.name}({self_expr}, {real_expr}{', ' if fwd else ''}{fwd}); }}"]
    if m.mode == "passthrough":
        return [f"  {sig} {{ return {real_expr}->{m.name}({args}); }}"]
    o.append(f"  {sig} {{")
    hints = [("&" if p.type.ref else "") + p.name for p in m.params
             if classify(spec, p.type, p.ann) == "handle"]
    hint = f", netHint({', '.join(hints)})" if hints else ""
    o.append(f"    Call c({self_expr}, api::k{m.ident}, {'true' if m.mode == 'unsupported' else 'false'}{hint});")
    for p in m.params:
        o.append(f"    {enc_arg(spec, cpp, m, p)}")
        if classify(spec, p.type, p.ann) == "handles":
            it = cpp.base(p.type.base)
            o.append(f"    Unwrapped<abi::{it}> u_{p.name}({p.name}, {len_expr(m, p)});")
    void = m.ret.base == "void" and not m.ret.ptr
    call = f"{real_expr}->{m.name}({args});"
    o.append(f"    {call}" if void else f"    {'auto' if not m.ret.ref else 'auto&'} r = {call}")
    for p in m.params:
        if m.notes.get("destroys") == p.name:
            o.append(f"    forget({'&' if p.type.ref else ''}{p.name});")
    o.append("    c.done();" if void else f"    return {ret_expr(spec, cpp, m)};")
    o.append("  }")
    return o


def gen_capture_wrapped(spec, cpp, ov, itf):
    """A wrapped abstract interface: our object is itself the interface. Object's destructor takes
    the first two vtable slots, then come these methods in spec order (the spec checks `~()` is
    first), each recording and forwarding to the real object."""
    o = [f"struct Obj{itf.name} final : Object {{",
         f"  abi::I{itf.name}* target() const {{ return static_cast<abi::I{itf.name}*>(real); }}"]
    for m in itf.methods:
        o += capture_method(spec, cpp, ov, itf, m, f"const_cast<Obj{itf.name}*>(this)", "target()", True)
    o.append(f"  explicit Obj{itf.name}(void* real) : Object(real, &kIface{itf.name}) {{}}")
    o.append("};")
    return o


def gen_capture(spec, cpp, ov):
    o = ["// Generated by schema/apigen.py -- do not edit. Included by capture/wrappers.cpp.",
         "// One recording wrapper per vtable class: record the arguments, forward to the real",
         "// object (our objects unwrapped), record and wrap the result.", ""]
    o.append("// Interface descriptors: name, chain length, factory.")
    for itf in interposed(spec):
        o.append(f"extern const Iface kIface{itf.name};")
    o.append("")
    for itf in interposed(spec):
        chain = itf.chain
        if itf.wrapped:
            o += gen_capture_wrapped(spec, cpp, ov, itf)
        else:
            o.append(f"struct Shim{itf.name} final : abi::V{itf.name} {{")
            o.append("  Object* self;")
            o.append(f"  explicit Shim{itf.name}(Object* s) : self(s) {{}}")
            o.append(f"  abi::V{itf.name}* real() const {{ return static_cast<abi::V{itf.name}*>(self->realImpl({itf.level})); }}")
            for m in itf.methods:
                o += capture_method(spec, cpp, ov, itf, m, "self", "real()", False)
            o.append("};")
            # The object: public layout {vptr, impl per level}, then the shims.
            since = ", ".join(str(m.added or spec.versions[0][1]) for m in itf.methods) or "0"
            o.append(f"inline constexpr int32_t kSince{itf.name}[] = {{{since}}};  // library version of each method")
            o.append(f"struct Obj{itf.name} final : Object {{")
            for lvl, name in enumerate(chain):
                o.append(f"  Shim{name} s{lvl}{{this}};")
            for pub in spec.publics.get(itf.name, []):
                # A virtual function of the public class after its destructor: same behaviour as the
                # vtable method of that name (recorded and forwarded by our shim).
                m = next(m for m in itf.methods if m.name == pub)
                fwd = ", ".join(p.name for p in m.params)
                o.append(f"  virtual {cpp.type(m.ret)} {m.name}({cpp.params(m)}){' const' if m.const else ''} noexcept "
                         f"{{ return s{len(chain) - 1}.{m.name}({fwd}); }}")
            o.append(f"  Obj{itf.name}(void* real) : Object(real, &kIface{itf.name}) {{")
            for lvl, name in enumerate(chain):
                o.append(f"    impl[{lvl}] = &s{lvl};")
                o.append(f'    extendVtable(&s{lvl}, "{name}", kSince{name}, {len(spec.interfaces[name].methods)}, {lvl});')
            o.append("  }")
            o.append("};")
        o.append(f'const Iface kIface{itf.name}{{"{itf.name}", {len(chain)}, {"true" if itf.name in spec.appowned else "false"}, api::k{itf.name}_destroy, '
                 f'[](void* real) -> Object* {{ return new Obj{itf.name}(real); }}}};')
        o.append("")
    o.append("extern const Iface* const kAllIfaces[] = {")
    for itf in interposed(spec):
        o.append(f"  &kIface{itf.name},")
    o.append("};")
    o.append("extern const size_t kNumIfaces = sizeof(kAllIfaces) / sizeof(kAllIfaces[0]);")
    o.append("")
    o.append("const Iface* findIface(std::string_view name) {")
    for itf in interposed(spec):
        o.append(f'  if (name == "{itf.name}") return &kIface{itf.name};')
    o.append("  return nullptr;")
    o.append("}")
    return "\n".join(o) + "\n"


def gen_capture_entries(spec, cpp):
    """The C entry points the shim exports: pass-through ones forward to the real library."""
    o = ["// Generated by schema/apigen.py -- do not edit. Included by capture/entry.cpp at global scope.", ""]
    for e in spec.entries:
        if e.lib != "tensorrt_rtx":
            continue
        ps = ", ".join(f"{cpp.type(p.type)} {p.name}" for p in e.params)
        names = ", ".join(p.name for p in e.params)
        types = ", ".join(cpp.type(p.type) for p in e.params)
        ret = cpp.type(e.ret)
        qual = lambda t: t if t in SCALARS.values() or t.startswith(("void", "char", "int", "uint", "float", "double", "bool", "std::")) else "trtrace::abi::" + t
        ps = ", ".join(f"{qual(cpp.type(p.type))} {p.name}" for p in e.params)
        types = ", ".join(qual(cpp.type(p.type)) for p in e.params)
        ret = qual(ret)
        if e.mode == "passthrough":
            o.append(f'extern "C" TRTRACE_EXPORT {ret} {e.name}({ps}) {{')
            o.append(f'  using Fn = {ret} (*)({types});')
            o.append(f'  static Fn fn = reinterpret_cast<Fn>(trtrace::capture::realSymbol("{e.name}"));')
            o.append('  if (!fn) return;' if ret == "void" else '  if (!fn) return {};')
            o.append(f'  return fn({names});')
            o.append("}")
        else:
            o.append(f'extern "C" TRTRACE_EXPORT {ret} {e.name}({ps});  // capture/entry.cpp')
    return "\n".join(o) + "\n"


# ------------------------------------------------------------------------------------------------
# replay_gen.inc: dispatch
# ------------------------------------------------------------------------------------------------
def dec_arg(spec, cpp, m, i, p):
    """C++ statement(s) declaring a_i, decoded from argument i of the recorded call."""
    k = classify(spec, p.type, p.ann)
    t = cpp.type(p.type)
    if k == "scalar" and scalar_enc(spec, p.type) in ("I64", "U64"):  # integers: range-checked once, here
        return f"auto a{i} = x.argInt<{t}>({i});"
    if k == "scalar":
        return f"auto a{i} = static_cast<{t}>(x.arg{scalar_enc(spec, p.type)}({i}));"
    if k == "enum":
        e = f"abi::{spec.resolve(p.type.base)}"
        return f"auto a{i} = static_cast<{e}>(x.argInt<std::underlying_type_t<{e}>>({i}));"
    if k == "string":
        return f"const char* a{i} = x.argString({i});"
    if k == "dims":
        return f"abi::Dims64 a{i} = x.argDims({i});"
    if k == "weights":
        return f"abi::Weights a{i} = x.argWeights({i});"
    if k == "struct":
        return f"abi::{spec.resolve(p.type.base)} a{i}{{}}; x.argStruct({i}, &a{i}, sizeof(a{i}));"
    if k == "handle":  # a reference may not be null
        it = cpp.base(p.type.base)
        ids = replay_iface_ids(spec)
        return (f"auto* a{i} = static_cast<abi::{it}*>(x.argObject({i}, {iface_id(ids, p.type.base)}, "
                f"{'true' if p.type.ref else 'false'}));")
    if k == "handles":
        it = cpp.base(p.type.base)
        ids = replay_iface_ids(spec)
        return (f"auto v{i} = x.argObjects({i}, {iface_id(ids, p.type.base)}); "
                f"auto* a{i} = reinterpret_cast<abi::{it}* const*>(v{i}.data());")
    if k in ("array", "enums"):
        base = cpp.base(p.type.base)
        return f"auto v{i} = x.argArray<{base}>({i}); auto* a{i} = v{i}.data();"
    if k == "bytes":
        return f"auto v{i} = x.argBytes({i}); auto* a{i} = v{i}.data();"
    if k == "out":
        return f"auto o{i} = x.outBuffer({i}); auto a{i} = reinterpret_cast<{t}>(o{i});"
    return f"{t} a{i} = nullptr;"


def replay_iface_ids(spec):
    """Interposed interface name -> the player's interface id (1, 2, ... in declaration order)."""
    return {itf.name: n + 1 for n, itf in enumerate(interposed(spec))}


def iface_id(ids, name):
    """The player's id of an interface a parameter or result names (kIf_None: not interposed, e.g.
    an application callback: bound and passed unchecked)."""
    return f"kIf_{name}" if name in ids else "kIf_None"


def call_arg(spec, p, i):
    k = classify(spec, p.type, p.ann)
    if k == "handle" and p.type.ref:
        return f"*a{i}"
    return f"a{i}"


def gen_override_decls(spec, cpp, ov, side):
    """Declarations of the hand-written exceptions, so their signatures always match the spec."""
    o = ["// Generated by schema/apigen.py -- do not edit. Hand-written in the overrides list's files.",
         "#pragma once", ""]
    for m in all_methods(spec):
        key = f"{m.interface}.{m.name}"
        if side == "capture" and key in ov["capture"]:
            itf = spec.interfaces[m.interface]
            params = cpp.params(m)
            o.append(f"{cpp.type(m.ret)} override_{m.interface}_{m.name}(Object* self, abi::V{itf.name}* real"
                     f"{', ' if params else ''}{params});")
        if side == "replay" and (key in ov["replay"] or m.interface == "entry") and m.mode == "record":
            o.append(f"void override_{m.interface}_{m.name}(Replayer& x);")
    return "\n".join(o) + "\n"


def replay_iface_table(spec):
    """The interface table of the player: one id per interposed interface, its base, whether the
    application deletes it, and (refineIface) the concrete layer interface of a layer bound at the
    base type, from the real object's getType(). Every handle is bound and checked against it."""
    itfs = interposed(spec)
    ids = replay_iface_ids(spec)
    o = ["// Interfaces of bound objects (0 = none): id, base id, name, deleted by the application.",
         "enum IfaceId : uint16_t { kIf_None = 0, " + ", ".join(f"kIf_{n} = {i}" for n, i in ids.items()) + " };",
         "const IfaceInfo kIfaces[] = {{\"\", 0, false},"]
    for itf in itfs:
        base = f"kIf_{itf.base}" if itf.base in ids else "kIf_None"
        o.append(f'  {{"{itf.name}", {base}, {"true" if itf.name in spec.appowned else "false"}}},')
    o.append("};")
    o.append("uint16_t refineIface(const void* real, uint16_t iface) {")
    if "Layer" in ids and "LayerType" in spec.enums:
        o.append("  if (iface != kIf_Layer) return iface;")
        o.append("  auto* v = static_cast<abi::VLayer*>(static_cast<void* const*>(real)[1]);")
        o.append("  switch (v->getType()) {")
        for itf in itfs:
            lt = _conf_layer_type(spec, itf)
            if lt and itf.name in ids:
                o.append(f"    case abi::LayerType::{lt}: return kIf_{itf.name};")
        o.append("    default: return iface;")
        o.append("  }")
    else:
        o.append("  (void)real;")
        o.append("  return iface;")
    o.append("}")
    o.append("")
    return o, ids


def gen_replay(spec, cpp, ov):
    o = ["// Generated by schema/apigen.py -- do not edit. Included by replay/replayer.cpp.",
         "// One function per API id: decode the recorded arguments, call the real object,",
         "// bind or check the result; every object is checked against the interface the spec names.", ""]
    table, ids = replay_iface_table(spec)
    o += table
    entries = []
    for m in all_methods(spec):
        fn = f"play_{m.api_id}"
        key = f"{m.interface}.{m.name}"
        if m.mode in ("passthrough", "unsupported"):
            continue  # nothing to replay; UNSUPPORTED records stop the player (or are skipped)
        entries.append((m, fn))
        o.append(f"// {m.key}")
        if key in ov["replay"] or m.interface == "entry":
            o.append(f"static void {fn}(Replayer& x) {{ override_{m.interface}_{m.name}(x); }}")
            continue
        if m.name == DESTROY:
            o.append(f"static void {fn}(Replayer& x) {{ x.destroyReceiver(kIf_{m.interface}); }}")
            continue
        itf = spec.interfaces[m.interface]
        o.append(f"static void {fn}(Replayer& x) {{")
        if itf.wrapped:
            o.append(f"  auto* self = static_cast<abi::I{itf.name}*>(x.receiverObject(kIf_{itf.name}));")
        else:
            o.append(f"  auto* self = static_cast<abi::V{itf.name}*>(x.receiverImpl({itf.level}, kIf_{itf.name}));")
        for i, p in enumerate(m.params):
            o.append(f"  {dec_arg(spec, cpp, m, i, p)}")
        args = ", ".join(call_arg(spec, p, i) for i, p in enumerate(m.params))
        k = classify(spec, m.ret, m.ret_ann)
        if m.ret.base == "void" and not m.ret.ptr:
            o.append(f"  self->{m.name}({args});")
        elif k == "handle":
            o.append(f"  auto&& r = self->{m.name}({args});")
            o.append(f"  x.bindResult({'&' if m.ret.ref else ''}r, {iface_id(ids, m.ret.base)});")
        elif k == "scalar" and spec.resolve(m.ret.base) == "bool":
            o.append(f"  x.checkBool(self->{m.name}({args}));")
        elif k in ("scalar", "enum"):
            o.append(f"  x.checkScalar(static_cast<int64_t>(self->{m.name}({args})));")
        elif k == "count":
            n = next(i for i, p in enumerate(m.params) if p.name == m.ret_ann["len"])
            o.append(f"  (void)self->{m.name}({args});")
            o.append(f"  x.checkScalar(*a{n});")
        else:
            o.append(f"  (void)self->{m.name}({args});")
        for i, p in enumerate(m.params):
            if "destroys" in m.notes and m.notes["destroys"] == p.name:
                o.append(f"  x.forgetArg({i});")
        o.append("}")
    o.append("")
    o.append("const Dispatch kDispatch[] = {")
    for m, fn in entries:
        o.append(f"  {{{m.api_id}, {fn}, {'true' if m.name == DESTROY else 'false'}}},")
    o.append("};")
    return "\n".join(o) + "\n"



# ------------------------------------------------------------------------------------------------
# conformance_gen.inc: conformance tests against the real library (tests/conformance)
# ------------------------------------------------------------------------------------------------
_CONF_SAMPLES = {   # per value type; the n-th round trip of that type in an interface takes the n-th
    "bool": ["true"],   # (distinct values, so that two getters swapped in the spec are caught)
    "f32": ["0.5f", "0.25f", "0.75f", "0.125f"], "f64": ["0.5", "0.25", "0.75"],
    "i32": ["2", "1", "3", "4"], "i64": ["3", "2", "4", "5"], "u32": ["2u", "1u", "4u"],
    "u64": ["uint64_t{1} << 20", "uint64_t{1} << 21"], "size": ["std::size_t{1} << 20", "std::size_t{1} << 21"],
    "cstr": ['"trtrace"', '"trtrace1"', '"trtrace2"'],
    "Dims64": ["Dims64{2, {3, 3}}", "Dims64{2, {1, 1}}", "Dims64{2, {2, 2}}", "Dims64{2, {1, 2}}", "Dims64{2, {2, 1}}"],
    "Weights": ["sampleWeights()"], "Permutation": ["Permutation{{1, 0, 2, 3, 4, 5, 6, 7}}"],
}


def _conf_value(spec, t: Type, n: int = 0):
    """(C++ local type, n-th sample expression) for a value the tests can make up, or None."""
    base = spec.resolve(t.base)
    if t.ptr:
        return None
    if t.base == "cstr":
        return "char const*", _CONF_SAMPLES["cstr"][n % 3]
    kind = spec.kind(t.base)
    if kind == "enum":
        vals = spec.enums[base].values   # non-first enumerators first (the first is often the default)
        return base, f"{base}::{vals[1 + n % (len(vals) - 1)][0] if len(vals) > 1 else vals[0][0]}"
    if kind == "struct":
        if base not in _CONF_SAMPLES:
            return None
        return base, _CONF_SAMPLES[base][n % len(_CONF_SAMPLES[base])]
    if kind != "scalar" or base in ("void", "ptr", "cptr"):
        return None
    samples = _CONF_SAMPLES.get(base, ["1"])
    return SCALARS[base], samples[n % len(samples)]


def _conf_same(spec, a: Type, b: Type):
    return spec.resolve(a.base) == spec.resolve(b.base) and a.ptr == b.ptr and (a.base == "cstr") == (b.base == "cstr")


def _conf_pairs(spec, itf):
    """setX/getX (or isX) pairs: the setter's parameters are the getter's (keys) plus one value
    parameter whose type the getter returns. Yields (setter, getter, value index)."""
    by_name = {}
    for m in itf.methods:
        by_name.setdefault(m.name, m)
    for s in itf.methods:
        if not s.name.startswith("set") or s.mode != "record":
            continue
        for gname in ("get" + s.name[3:], "is" + s.name[3:]):
            g = by_name.get(gname)
            if g is None or g.mode != "record" or g.ret.base == "void":
                continue
            for j, vp in enumerate(s.params):
                keys = s.params[:j] + s.params[j + 1:]
                if len(keys) != len(g.params) or not _conf_same(spec, vp.type, g.ret):
                    continue
                if not all(_conf_same(spec, k.type, q.type) for k, q in zip(keys, g.params)):
                    continue
                if _conf_value(spec, vp.type) is None or any(_conf_value(spec, k.type) is None for k in keys):
                    continue
                yield s, g, j
                break
            else:
                continue
            break


def _conf_mismatches(spec, itf):
    """setX(v)/getX() -> r of one interface whose value types differ (e.g. f64 vs f32): a spec error."""
    getters = {m.name: m for m in itf.methods}
    paired = {s.name for s, _, _ in _conf_pairs(spec, itf)}
    for s in itf.methods:
        g = getters.get("get" + s.name[3:]) if s.name.startswith("set") else None
        if g is None or s.name in paired or len(s.params) != len(g.params) + 1 or g.ret.base == "void":
            continue
        v = s.params[-1].type
        if _conf_value(spec, v) and _conf_value(spec, g.ret) and not g.ret.ref and not _conf_same(spec, v, g.ret):
            yield f"{itf.name}.{s.name} takes {v.text}, {g.name} returns {g.ret.text}"


def _conf_key_sample(spec, m, p):
    ctype, default = _conf_value(spec, p.type)
    if p.name == "index" and ctype == "int32_t":
        default = "0"
    return ctype, default


def _conf_layer_type(spec, itf):
    """The LayerType enumerator an interface's getType() returns, by name (None for boundary bases)."""
    if itf.chain[0] != "Layer" or itf.level == 0 or "LayerType" not in spec.enums:
        return None
    want = itf.name[:-len("Layer")] if itf.name.endswith("Layer") else itf.name
    want = want.upper()
    for n, _ in spec.enums["LayerType"].values:
        flat = n[1:].replace("_", "")
        if flat == want or "IF" + flat == want:    # IfConditionalInput -> kCONDITIONAL_INPUT
            return n
    return None


def gen_conformance(spec, cpp):
    """Conformance tests of the spec against the real library: counting call wrappers (one per
    vtable class), set/get round trips with type-driven sample values, probes of const queries,
    the expected LayerType of each layer interface, and one TEST per interface. Included twice by
    tests/conformance/conformance_test.cpp: first for the declarations, then (with
    TRTRACE_CONF_TESTS defined) for the tests, which call its hand-written recipes make(), extra()."""
    if not all(hasattr(m, "ident") for m in all_methods(spec)):
        gen_table_h(spec)                      # assigns m.ident
    itfs = interposed(spec)
    o = ["// Generated by schema/apigen.py -- do not edit. Included by tests/conformance/conformance_test.cpp",
         "// inside namespace trtrace::conf (with `using namespace trtrace::abi`).", "",
         "#ifndef TRTRACE_CONF_TESTS", "",
         "// Spec'd methods: record-mode methods of the library's vtable classes (the coverage denominator).",
         "struct SpecMethod { uint32_t id; const char* iface; const char* method; };",
         "inline constexpr SpecMethod kSpecMethods[] = {"]
    for itf in itfs:
        for m in itf.methods:
            if m.mode == "record":
                o.append(f'  {{api::k{m.ident}, "{itf.name}", "{m.name}"}},')
    o += ["};", ""]
    o.append("// Every LayerType enumerator of the spec.")
    o.append("inline constexpr LayerType kAllLayerTypes[] = {"
             + ", ".join(f"LayerType::{n}" for n, _ in spec.enums.get("LayerType", apispec.Enum("", "", [])).values) + "};")
    o.append("template <class I> struct LayerTypeOf;  // defined for layer interfaces with their own LayerType")
    for itf in itfs:
        lt = _conf_layer_type(spec, itf)
        if lt:
            o.append(f"template <> struct LayerTypeOf<I{itf.name}> {{ static constexpr LayerType value = LayerType::{lt}; }};")
    o.append("")
    o.append("// Counting call wrappers: C<Name>(publicObject) calls through the V-pointer of its chain level")
    o.append("// (field 1 + level of the public object); every call counts its API id with hit().")
    for itf in itfs:
        if itf.wrapped:  # the object is the interface: its methods are its own vtable
            o.append(f"struct C{itf.name} {{")
            o.append(f"  I{itf.name}* v_;")
            o.append(f"  explicit C{itf.name}(const void* obj) : v_(static_cast<I{itf.name}*>(const_cast<void*>(obj))) {{}}")
            for m in itf.methods:
                args = ", ".join(p.name for p in m.params)
                o.append(f"  {cpp.type(m.ret)} {m.name}({cpp.params(m)}) {{ hit(api::k{m.ident}); return v_->{m.name}({args}); }}")
            o.append("};")
            continue
        lv = itf.level
        base = f" : C{itf.base}" if itf.base else ""
        o.append(f"struct C{itf.name}{base} {{")
        o.append(f"  V{itf.name}* v{lv}_;")
        init = f"C{itf.base}(obj), " if itf.base else ""
        o.append(f"  explicit C{itf.name}(const void* obj) : {init}v{lv}_(static_cast<V{itf.name}*>("
                 f"static_cast<void* const*>(obj)[1 + {lv}])) {{}}")
        for m in itf.methods:
            args = ", ".join(p.name for p in m.params)
            o.append(f"  {cpp.type(m.ret)} {m.name}({cpp.params(m)}) {{ hit(api::k{m.ident}); "
                     f"return v{lv}_->{m.name}({args}); }}")
        o.append("};")
    o.append("")
    o.append("// Round trips: setX(sample) then getX() == sample. sample(key, default) applies the")
    o.append("// hand-written overrides; check() compares and notes setters that returned false.")
    for itf in itfs:
        o.append(f"inline void roundTrip(C{itf.name}& w) {{")
        for bad in _conf_mismatches(spec, itf):
            o.append(f'  ADD_FAILURE() << "spec: {bad}";')
        nth = {}
        for s, g, j in _conf_pairs(spec, itf):
            key = f"{itf.name}.{s.name}"
            vt, _ = _conf_value(spec, s.params[j].type)
            vt, vd = _conf_value(spec, s.params[j].type, nth.get(vt, 0))
            nth[vt] = nth.get(vt, 0) + 1
            o.append(f"  {{  // {s.name} / {g.name}")
            o.append(f'    constexpr std::string_view k = "{key}";')
            args = []
            for i, p in enumerate(s.params):
                if i == j:
                    o.append(f"    auto v = sample<{vt}>(k, {vd});")
                    args.append("v")
                else:
                    kt, kd = _conf_key_sample(spec, s, p)
                    o.append(f'    auto k{i} = sample<{kt}>("{key}#{p.name}", {kd});')
                    args.append(f"k{i}")
            gargs = ", ".join(a for a in args if a != "v")
            call = f"w.{s.name}({', '.join(args)})"
            if spec.resolve(s.ret.base) == "bool" and not s.ret.ptr:
                o.append(f"    bool accepted = {call};")
            else:
                o.append(f"    {call};")
                o.append("    bool accepted = true;")
            o.append(f"    check(k, accepted, w.{g.name}({gargs}), v);")
            o.append("  }")
        o.append("}")
    o.append("")
    o.append("// Probes: every other const query whose arguments the tests can make up (index 0, samples).")
    for itf in itfs:
        paired = {n for s, g, _ in _conf_pairs(spec, itf) for n in (s.name, g.name)}
        o.append(f"inline void probe(C{itf.name}& w) {{")
        for m in itf.methods:
            if m.name in paired or not m.const or m.mode != "record" or (m.ret.base == "void" and not m.ret.ptr):
                continue
            if any(_conf_value(spec, p.type) is None for p in m.params):
                continue
            args = []
            for p in m.params:
                kt, kd = _conf_key_sample(spec, m, p)
                args.append(f'sample<{kt}>("{itf.name}.{m.name}#{p.name}", {kd})')
            o.append(f'  probed("{itf.name}.{m.name}", w.{m.name}({", ".join(args)}));')
        o.append("}")
    o += ["", "#else  // TRTRACE_CONF_TESTS", "",
          "// One test per interface: make() (hand-written recipe) gives an instance; the generated part",
          "// checks the layer type, runs the round trips and probes; extra() adds the hand-written calls."]
    for itf in itfs:
        lt = _conf_layer_type(spec, itf)
        o.append(f"TEST(Conformance, {itf.name}) {{")
        o.append("  Ctx ctx;")
        o.append(f"  Made<I{itf.name}> made = make(ctx, Tag<I{itf.name}>{{}});")
        o.append("  if (!made.obj) {")
        o.append(f'    if (made.unavailable) GTEST_SKIP() << "{itf.name}: " << made.why;')
        o.append(f'    FAIL() << "{itf.name}: recipe gave no object: " << made.why << ctx.log.take();')
        o.append("  }")
        o.append(f"  C{itf.name} w(made.obj);")
        if lt:
            o.append(f"  checkLayer(ctx, CLayer(made.obj), made, LayerType::{lt});")
        o.append("  roundTrip(w);")
        o.append("  probe(w);")
        o.append("  extra(ctx, w, made);")
        o.append("}")
    o += ["", "#endif  // TRTRACE_CONF_TESTS"]
    return "\n".join(o) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", required=True, help="folder with *.api files (and ids.lock)")
    ap.add_argument("--out", help="output folder")
    ap.add_argument("--update-lock", action="store_true", help="append new ids to ids.lock")
    ap.add_argument("--drop", action="append", default=[], metavar="Interface.method",
                    help="leave a method out (tests: a shim that does not know a method the app calls)")
    ap.add_argument("--python-names", action="store_true",
                    help="print every API id's Python spelling as JSON (the bindings conformance test)")
    args = ap.parse_args()
    spec_dir = pathlib.Path(args.spec)
    try:
        spec = apispec.load(spec_dir)
        for key in args.drop:
            itf_name, method = key.split(".", 1)
            itf = spec.interfaces[itf_name]
            itf.methods = [m for m in itf.methods if m.name != method]
        assign_ids(spec, spec_dir / "ids.lock", args.update_lock)
        if args.python_names:
            print(json.dumps(python_names(spec)))
            return 0
        cpp = Cpp(spec)
        ov = spec.overrides
        files = {"trtrace/api_abi.h": gen_abi(spec, cpp), "trtrace/api_table.h": gen_table_h(spec),
                 "api_table.cpp": gen_table_cpp(spec), "capture_gen.inc": gen_capture(spec, cpp, ov),
                 "replay_gen.inc": gen_replay(spec, cpp, ov),
                 "capture_overrides.h": gen_override_decls(spec, cpp, ov, "capture"),
                 "capture_entries.inc": gen_capture_entries(spec, cpp),
                 "replay_overrides.h": gen_override_decls(spec, cpp, ov, "replay"),
                 "conformance_gen.inc": gen_conformance(spec, cpp)}
    except SpecError as e:
        print(f"apigen: error: {e}", file=sys.stderr)
        return 1
    if args.out:
        out = pathlib.Path(args.out)
        for rel, text in files.items():
            p = out / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if not p.exists() or p.read_text() != text:   # keep timestamps stable: no needless rebuilds
                p.write_text(text)
    n = len(all_methods(spec))
    print(f"apigen: {len(spec.interfaces)} interfaces, {n} API ids, {len(spec.enums)} enums", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
