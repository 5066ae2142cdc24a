"""What the generators share: API ids (ids.lock), the list of recorded methods, C++ spelling,
and the typed description of every parameter (Kind, length-of, flags) that each output uses."""

from __future__ import annotations

import dataclasses
import enum
import pathlib
import sys

from apispec import SCALARS, Method, SpecError, Type

DESTROY = "~"  # synthetic method name: the application deleted the object


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
        lines = [
            "# trtrace API ids. APPEND-ONLY: ids never change meaning; removed methods keep theirs.",
            "# Regenerate with: python3 schema/apigen.py --spec schema/api --update-lock",
        ]
        lines += [f"enum {i} {k}" for k, i in sorted(locked_enum.items(), key=lambda kv: kv[1])]
        lines += [f"enum {e.type_id} {e.name}" for e in spec.enums.values() if e.name not in locked_enum]
        lines += [f"api {i} {k}" for k, i in sorted(locked_api.items(), key=lambda kv: kv[1])]
        lines += [f"api {m.api_id} {m.key}" for m in all_methods(spec) if m.key not in locked_api]
        lock_path.write_text("\n".join(lines) + "\n")
    elif new:
        print(
            f"apigen: note: {len(new)} ids not in {lock_path.name} (first: {new[0]}); "
            f"run `python3 schema/apigen.py --spec schema/api --update-lock` and commit it",
            file=sys.stderr,
        )


def entry_methods(spec):
    """C entry points recorded like methods of a pseudo-interface named 'entry'."""
    out = []
    for e in spec.entries:
        m = Method("entry", e.name, e.params, e.ret, False, e.mode, {"lib": e.lib})
        out.append(m)
    return out


def cbool(b):
    """A C++ bool literal."""
    return "true" if b else "false"


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
            ms.append(
                Method(
                    itf.name,
                    DESTROY,
                    [],
                    Type("void", text="void"),
                    False,
                    "unsupported" if itf.wrapped else "record",
                    {},
                    added=itf.added,
                )
            )
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


class K(enum.Enum):
    """What a parameter or result is, for recording and replay (the generator's own vocabulary)."""

    OUT = "out"  # an output pointer the library fills: recorded as nothing
    COUNT = "count"  # a returned array of foreign objects: recorded as its length
    STRING = "string"
    STRINGS = "strings"
    FOREIGN = "foreign"  # application objects and raw pointers: recorded as present/absent
    HANDLE = "handle"
    HANDLES = "handles"
    BYTES = "bytes"
    DIMS = "dims"
    WEIGHTS = "weights"
    STRUCT = "struct"
    ENUM = "enum"
    ENUMS = "enums"
    ARRAY = "array"
    VOID = "void"
    SCALAR = "scalar"


def classify(spec, t: Type, ann=None) -> K:
    """What a parameter/return is, for recording and replay."""
    ann = ann or {}
    base = spec.resolve(t.base)
    kind = spec.kind(t.base)
    if ann.get("out"):
        return K.OUT
    if ann.get("len") and t.ptr == 2 and kind == "opaque":
        return K.COUNT
    if t.base == "cstr" and t.ptr == 0:
        return K.STRING
    if t.base == "cstr" and t.ptr == 1:
        return K.STRINGS
    if kind == "interface" and spec.interfaces[base].abstract and not spec.interfaces[base].wrapped:
        return K.FOREIGN  # application-implemented callbacks cannot travel in a trace
    if kind == "interface":
        return K.HANDLES if t.ptr == 2 else K.HANDLE
    if kind == "opaque" or base in ("ptr", "cptr"):
        return K.BYTES if ann.get("bytes") else K.FOREIGN
    if kind == "struct":
        if t.ptr:
            return K.FOREIGN
        return {"Dims64": K.DIMS, "Weights": K.WEIGHTS}.get(base, K.STRUCT)
    if kind == "enum":
        return K.ENUMS if t.ptr else K.ENUM
    if t.ptr:
        return K.ARRAY if ann.get("len") else K.FOREIGN
    return K.VOID if base == "void" else K.SCALAR


def scalar_enc(spec, t: Type):
    base = spec.resolve(t.base)
    return {
        "bool": "Bool",
        "f32": "F32",
        "f64": "F64",
        "u8": "U64",
        "u16": "U64",
        "u32": "U64",
        "u64": "U64",
        "size": "U64",
    }.get(base, "I64")


# The C++ api::Kind of each value as it travels in a trace, and its text (what tools print).
_KIND_OF = {
    K.OUT: "Out",
    K.STRING: "String",
    K.STRINGS: "Strings",
    K.FOREIGN: "Foreign",
    K.HANDLE: "Handle",
    K.HANDLES: "Handles",
    K.BYTES: "Bytes",
    K.DIMS: "Dims",
    K.WEIGHTS: "Weights",
    K.STRUCT: "Struct",
    K.ENUM: "Enum",
    K.ENUMS: "Array",
    K.ARRAY: "Array",
    K.VOID: "Void",
    K.COUNT: "I64",
}
CPP_KINDS = [
    "Void",
    "Bool",
    "I64",
    "U64",
    "F32",
    "F64",
    "Enum",
    "String",
    "Strings",
    "Dims",
    "Weights",
    "Struct",
    "Handle",
    "Handles",
    "Array",
    "Bytes",
    "Out",
    "Foreign",
]


@dataclasses.dataclass
class ParamInfo:
    """The typed description of one parameter or result (api::ParamDesc in C++)."""

    kind: str  # one of CPP_KINDS
    elem: str = "Void"  # Array: the element's kind
    enum: str = ""  # Enum / Array of Enum: the enum's name
    struct: str = ""  # Struct / Dims / Weights: the struct's name
    iface: str = ""  # Handle / Handles: the interface's name
    length_of: int = -1  # this integer is the length of parameter length_of (NVIDIA does not write it)
    text: str = ""  # bool i64 u64 f32 f64 | enum:<E> | string | dims | weights | struct:<S> |
    #                           handle:<I> | handles:<I> | array:<scalar> | array:enum:<E> | bytes | strings |
    #                           out | foreign | void


def param_info(spec, t: Type, ann=None) -> ParamInfo:
    k = classify(spec, t, ann)
    base = spec.resolve(t.base)
    if k == K.SCALAR:
        kind = scalar_enc(spec, t)
        return ParamInfo(kind, text=kind.lower())
    info = ParamInfo(_KIND_OF[k], text=k.value)
    if k == K.COUNT:
        info.text = "i64"
    elif k == K.ENUM:
        info.enum, info.text = base, f"enum:{base}"
    elif k == K.ENUMS:
        info.elem, info.enum, info.text = "Enum", base, f"array:enum:{base}"
    elif k in (K.HANDLE, K.HANDLES):
        info.iface, info.text = base, f"{k.value}:{base}"
    elif k in (K.STRUCT, K.DIMS, K.WEIGHTS):
        info.struct = base
        info.text = f"struct:{base}" if k == K.STRUCT else k.value
    elif k == K.ARRAY:
        info.elem, info.text = scalar_enc(spec, t), f"array:{base}"
    return info


def params_info(spec, m):
    """ParamInfo of each parameter; a count its array names ([len=n], [bytes=n]) says whose length it is."""
    infos = [param_info(spec, p.type, p.ann) for p in m.params]
    index = {p.name: i for i, p in enumerate(m.params)}
    for i, p in enumerate(m.params):
        if infos[i].kind not in ("Handles", "Array", "Strings", "Bytes"):
            continue
        n = p.ann.get("len") or p.ann.get("bytes")
        if isinstance(n, str) and n in index and infos[index[n]].kind in ("I64", "U64"):
            infos[index[n]].length_of = i
    return infos


# Method flags (api::flag in C++): facts about a method its users must not guess from its name.
FLAGS = [
    ("kDestroy", "the application deleted the object ('~')"),
    ("kEntry", "a C entry point, not a method"),
    ("kGetter", "get*: the same call again may return the same object"),
    ("kSetter", "set*: changes one attribute"),
    ("kCreator", "create*: makes a new object; the same call again may return it again"),
    ("kStartsNetwork", "returns a NetworkDefinition: opens a network (its objects inherit its id)"),
    (
        "kMakesLayer",
        "a non-const method returning a layer: the call creates it (addActivation, Loop.addRecurrence, ...)",
    ),
    ("kBuildIrrelevant", "cannot change a build (deletions, the engine's HostMemory); NVIDIA's capture omits it"),
    (
        "kBuild",
        "builds an engine: a non-const method taking a NetworkDefinition and a BuilderConfig it may not change "
        "(buildSerializedNetwork, buildSerializedNetworkToStream)",
    ),
    (
        "kReturnsOwner",
        "returns the object whose create* call made the receiver (@owner): no new object, so a "
        "capture that numbers it anew (NVIDIA's) is mapped back to that object",
    ),
]
ENGINE_BYTES = "HostMemory"  # the interface of the serialized engine a build returns


def method_flags(spec, m):
    out = []
    if m.name == DESTROY:
        out.append("kDestroy")
    if m.interface == "entry":
        out.append("kEntry")
    for prefix, f in (("get", "kGetter"), ("set", "kSetter"), ("create", "kCreator")):
        if m.name.startswith(prefix):
            out.append(f)
    if classify(spec, m.ret, m.ret_ann) == K.HANDLE and spec.resolve(m.ret.base) == "NetworkDefinition":
        out.append("kStartsNetwork")
    if m.name == DESTROY or m.interface == ENGINE_BYTES:
        out.append("kBuildIrrelevant")
    if (
        classify(spec, m.ret, m.ret_ann) == K.HANDLE
        and not m.const
        and m.interface != "entry"
        and "Layer" in spec.interfaces[spec.resolve(m.ret.base)].chain
    ):
        out.append("kMakesLayer")
    if is_build(spec, m):
        out.append("kBuild")
    if m.notes.get("owner"):
        out.append("kReturnsOwner")
    return out


def is_build(spec, m):
    """A build entry point, by its signature alone: whether a call is a build never depends on the
    optional outcome a capture may hold (converted NVIDIA captures have none)."""
    takes = {spec.resolve(p.type.base) for p in m.params if p.type.ref or p.type.ptr}
    return not m.const and m.interface != "entry" and {"NetworkDefinition", "BuilderConfig"} <= takes


def len_expr(m, p):
    v = p.ann.get("len")
    return v if v is not None else "0"


def layer_type(spec, itf):
    """The LayerType enumerator an interface's getType() returns, by name (None for boundary bases)."""
    if itf.chain[0] != "Layer" or itf.level == 0 or "LayerType" not in spec.enums:
        return None
    want = itf.name[: -len("Layer")] if itf.name.endswith("Layer") else itf.name
    want = want.upper()
    for n, _ in spec.enums["LayerType"].values:
        flat = n[1:].replace("_", "")
        if flat == want or "IF" + flat == want:  # IfConditionalInput -> kCONDITIONAL_INPUT
            return n
    return None


def ident(m):
    return f"{m.interface}_{'destroy' if m.name == DESTROY else m.name}"


def assign_idents(spec):
    """m.ident: the C++ name of each API id's constant (api::k<ident>); overloads get _2, _3..."""
    seen = set()
    for m in all_methods(spec):
        name = ident(m)
        n, i = name, 2
        while n in seen:
            n, i = f"{name}_{i}", i + 1
        seen.add(n)
        m.ident = n


def check_overrides(spec):
    """Every override and hook names a recorded method of the spec: a typo is a generator error,
    not a silently generated default."""
    methods = {(m.interface, m.name): m for m in all_methods(spec)}
    for side, keys in spec.overrides.items():
        for key in sorted(keys):
            itf, _, name = key.partition(".")
            m = methods.get((itf, name))
            if m is None:
                raise SpecError(f"override {side} {key}: no such method in the spec")
            if m.mode != "record":
                raise SpecError(f"override {side} {key}: the method is !{m.mode}, nothing to override")
    for side, table in spec.hooks.items():
        for key in sorted(table):
            itf, _, name = key.partition(".")
            m = methods.get((itf, name))
            if m is None or m.interface == "entry":
                raise SpecError(f"hook {side} {key}: no such method in the spec")
            if m.mode != "record" or spec.interfaces[itf].wrapped:
                raise SpecError(f"hook {side} {key}: only recorded methods of pimpl interfaces take hooks")
            if key in spec.overrides[side]:
                raise SpecError(f"hook {side} {key}: the method is overridden as a whole")
