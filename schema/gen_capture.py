"""capture_gen.inc, capture_entries.inc, capture_overrides.h: the shim's recording wrappers."""

from __future__ import annotations

from apispec import SCALARS, SpecError
from apimodel import K, all_methods, cbool, classify, interposed, len_expr, scalar_enc


# ------------------------------------------------------------------------------------------------
# capture_gen.inc: recording wrappers
# ------------------------------------------------------------------------------------------------
def enc_arg(spec, cpp, m, p):
    """C++ statement recording parameter p (before the call)."""
    k = classify(spec, p.type, p.ann)
    n = p.name
    if k == K.SCALAR:
        return f"c.arg{scalar_enc(spec, p.type)}({n});"
    if k == K.ENUM:
        return f"c.argEnum(api::kEnum{spec.resolve(p.type.base)}, static_cast<int64_t>({n}));"
    if k == K.STRING:
        return f"c.argString({n});"
    if k == K.DIMS:
        return f"c.argDims({n});"
    if k == K.WEIGHTS:
        return f"c.argWeights({n});"
    if k == K.STRUCT:
        return f"c.argStruct(&{n}, sizeof({n}));"
    if k == K.HANDLE:
        return f"c.argHandle({'&' if p.type.ref else ''}{n});"
    if k == K.HANDLES:
        return f"c.argHandles({n}, {len_expr(m, p)});"
    if k == K.ARRAY:
        return f"c.argArray({n}, {len_expr(m, p)});"
    if k == K.ENUMS:
        return f"c.argArray(reinterpret_cast<const int32_t*>({n}), {len_expr(m, p)});"
    if k == K.BYTES:
        return f"c.argBytes({n}, {p.ann['bytes']});"
    if k == K.STRINGS:
        return f"c.argStrings({n}, {len_expr(m, p)});" if p.ann.get("len") else "c.argForeign(true);"
    if k == K.OUT:
        return "c.argOut();"
    return "c.argForeign(true);" if p.type.ref else f"c.argForeign({n} != nullptr);"


def fwd_arg(spec, cpp, p):
    """Expression passing parameter p on to the real library (unwrapping our objects)."""
    k = classify(spec, p.type, p.ann)
    if k == K.HANDLE:
        it = cpp.base(p.type.base) + (" const" if p.type.const else "")
        if p.type.ref:
            return f"*static_cast<abi::{it}*>(unwrap(&{p.name}))"
        return f"static_cast<abi::{it}*>(unwrap({p.name}))"
    if k == K.HANDLES:
        return f"u_{p.name}.data()"
    return p.name


def ret_expr(spec, cpp, m):
    k = classify(spec, m.ret, m.ret_ann)
    if k == K.COUNT:
        n = m.ret_ann["len"]
        return f"(c.retI64({n} ? *{n} : 0), r)"
    if k == K.HANDLE:
        it = cpp.base(m.ret.base)
        target = f"abi::{it}" + (" const" if m.ret.const else "")
        if m.ret.ref:
            return f"*static_cast<{target}*>(c.retHandle(&r, kIface{m.ret.base}))"
        return f"static_cast<{target}*>(c.retHandle(r, kIface{m.ret.base}))"
    rec = {
        K.SCALAR: f"c.ret{scalar_enc(spec, m.ret)}(r)",
        K.ENUM: f"c.retEnum(api::kEnum{spec.resolve(m.ret.base)}, static_cast<int64_t>(r))",
        K.STRING: "c.retString(r)",
        K.DIMS: "c.retDims(r)",
    }.get(k)
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
        return [
            f"  {sig} {{ return override_{itf.name}_{m.name}({self_expr}, {real_expr}{', ' if fwd else ''}{fwd}); }}"
        ]
    if m.mode == "passthrough":
        return [f"  {sig} {{ return {real_expr}->{m.name}({args}); }}"]
    o.append(f"  {sig} {{")
    hooks = spec.hooks["capture"].get(key, set())
    fwd = ", ".join(p.name for p in m.params)
    if "after" in hooks:  # declared before the Call: destroyed after it, once the call is recorded
        o.append(
            f"    struct After {{ Object* s; ~After() {{ after_{itf.name}_{m.name}(s); }} }} after{{{self_expr}}};"
        )
    hints = [("&" if p.type.ref else "") + p.name for p in m.params if classify(spec, p.type, p.ann) == K.HANDLE]
    hint = f", netHint({', '.join(hints)})" if hints else ""
    o.append(f"    Call c({self_expr}, api::k{m.ident}, {'true' if m.mode == 'unsupported' else 'false'}{hint});")
    for p in m.params:
        o.append(f"    {enc_arg(spec, cpp, m, p)}")
        if classify(spec, p.type, p.ann) == K.HANDLES:
            it = cpp.base(p.type.base)
            o.append(f"    Unwrapped<abi::{it}> u_{p.name}({p.name}, {len_expr(m, p)});")
    if "pre" in hooks:
        o.append(f"    pre_{itf.name}_{m.name}(c, {self_expr}{', ' if fwd else ''}{fwd});")
    void = m.ret.base == "void" and not m.ret.ptr
    call = f"{real_expr}->{m.name}({args});"
    o.append(f"    {call}" if void else f"    {'auto' if not m.ret.ref else 'auto&'} r = {call}")
    if "post" in hooks:
        res = "" if void else ", r"
        o.append(f"    post_{itf.name}_{m.name}(c, {self_expr}{res}{', ' if fwd else ''}{fwd});")
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
    o = [
        f"struct Obj{itf.name} final : Object {{",
        f"  abi::I{itf.name}* target() const {{ return static_cast<abi::I{itf.name}*>(real); }}",
    ]
    for m in itf.methods:
        o += capture_method(spec, cpp, ov, itf, m, f"const_cast<Obj{itf.name}*>(this)", "target()", True)
    o.append(f"  explicit Obj{itf.name}(void* real) : Object(real, &kIface{itf.name}) {{}}")
    o.append("};")
    return o


def destroyed_ifaces(spec):
    """The interfaces a call destroys (`@destroys(param)`): their objects end apart from their owner."""
    return {
        p.type.base
        for itf in spec.interfaces.values()
        for m in itf.methods
        for p in m.params
        if m.notes.get("destroys") == p.name
    }


def gen_capture(spec, cpp, ov):
    destroyed = destroyed_ifaces(spec)
    o = [
        "// Generated by schema/apigen.py -- do not edit. Included by capture/wrappers.cpp.",
        "// One recording wrapper per vtable class: record the arguments, forward to the real",
        "// object (our objects unwrapped), record and wrap the result.",
        "",
    ]
    for itf in interposed(spec):
        chain = itf.chain
        if itf.wrapped:
            o += gen_capture_wrapped(spec, cpp, ov, itf)
        else:
            o.append(f"struct Shim{itf.name} final : abi::V{itf.name} {{")
            o.append("  Object* self;")
            o.append(f"  explicit Shim{itf.name}(Object* s) : self(s) {{}}")
            o.append(
                f"  abi::V{itf.name}* real() const {{ return static_cast<abi::V{itf.name}*>(self->realImpl({itf.level})); }}"
            )
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
                o.append(
                    f"  virtual {cpp.type(m.ret)} {m.name}({cpp.params(m)}){' const' if m.const else ''} noexcept "
                    f"{{ return s{len(chain) - 1}.{m.name}({fwd}); }}"
                )
            o.append(f"  Obj{itf.name}(void* real) : Object(real, &kIface{itf.name}) {{")
            for lvl, name in enumerate(chain):
                o.append(f"    impl[{lvl}] = &s{lvl};")
                o.append(
                    f'    static void* const ext{lvl} = extendedVtable(&s{lvl}, "{name}", kSince{name}, '
                    f"{len(spec.interfaces[name].methods)}, {lvl});"
                )
                o.append(f"    *reinterpret_cast<void**>(&s{lvl}) = ext{lvl};")
            o.append("  }")
            o.append("};")
        o.append(
            f'const Iface kIface{itf.name}{{"{itf.name}", {len(chain)}, {cbool(itf.name in spec.appowned)}, '
            f"{cbool(itf.name in spec.appowned or itf.name in destroyed)}, api::k{itf.name}_destroy, "
            f"[](void* real) -> Object* {{ return new Obj{itf.name}(real); }}}};"
        )
        o.append("")
    o.append("extern const Iface* const kAllIfaces[] = {")
    for itf in interposed(spec):
        o.append(f"  &kIface{itf.name},")
    o.append("};")
    o.append("extern const size_t kNumIfaces = sizeof(kAllIfaces) / sizeof(kAllIfaces[0]);")
    return "\n".join(o) + "\n"


def _entry_qual(cpp, t):
    """The C++ type of an entry point's parameter or result, spelled for global scope."""
    s = cpp.type(t)
    if s in SCALARS.values() or s.startswith(("void", "char", "int", "uint", "float", "double", "bool", "std::")):
        return s
    return "trtrace::abi::" + s


def _entry_head(cpp, m):
    """`extern "C"` signature of an entry point, and the real library's function pointer type."""
    ret = _entry_qual(cpp, m.ret)
    ps = ", ".join(f"{_entry_qual(cpp, p.type)} {p.name}" for p in m.params)
    types = ", ".join(_entry_qual(cpp, p.type) for p in m.params)
    return f'extern "C" TRTRACE_EXPORT {ret} {m.name}({ps})', f"{ret} (*)({types})"


def _entry_forward(cpp, m):
    """The first lines of a generated entry point: the real library's function, found once."""
    head, fn_type = _entry_head(cpp, m)
    none = "  if (!fn) return;" if m.ret.base == "void" and not m.ret.ptr else "  if (!fn) return {};"
    return [
        f"{head} {{",
        f"  using Fn = {fn_type};",
        f'  static Fn fn = reinterpret_cast<Fn>(trtrace::capture::realSymbol("{m.name}"));',
        none,
    ]


def _entry_recorded(spec, cpp, m):
    """A recorded (or UNSUPPORTED-recorded) entry point: the arguments, the real call, the result;
    nothing is recorded when the loaded library's version is not captured."""
    names = ", ".join(p.name for p in m.params)
    o = _entry_forward(cpp, m)
    o.append(f"  if (!trtrace::capture::captureThisVersion()) return fn({names});")
    o.append(
        f"  trtrace::capture::Call c(nullptr, trtrace::api::k{m.ident}, {'true' if m.mode == 'unsupported' else 'false'});"
    )
    for p in m.params:
        if classify(spec, p.type, p.ann) in (K.HANDLES, K.COUNT):
            raise SpecError(
                f"entry {m.name}: parameter {p.name} cannot be recorded by a generated entry point; "
                f"write it by hand (`override capture entry.{m.name}`)"
            )
        o.append(f"  {enc_arg(spec, cpp, m, p)}")
    args = ", ".join(fwd_arg(spec, cpp, p) for p in m.params)
    if m.ret.base == "void" and not m.ret.ptr:
        o += [f"  fn({args});", "}"]
    else:
        o += [f"  auto r = fn({args});", f"  return {ret_expr(spec, cpp, m)};", "}"]
    return o


def entry_exports(spec):
    """The C entry points of the real library the shim replaces, as the shim exports them: each
    with its mode and whether it is hand-written (`override capture entry.NAME`)."""
    hand = spec.overrides["capture"]
    return [
        (m, f"entry.{m.name}" in hand)
        for m in all_methods(spec)
        if m.interface == "entry" and m.notes.get("lib") == spec.library and m.name not in spec.unexported
    ]


def entries_json(spec):
    """What the export-set test compares with the real library: the shim's library, the C entry
    points the shim exports (name, mode, hand-written or not) and the symbols it does not, with why."""
    return {
        "library": spec.library,
        "exported": [{"name": m.name, "mode": m.mode, "hand_written": w} for m, w in entry_exports(spec)],
        "other_libraries": sorted(
            m.name for m in all_methods(spec) if m.interface == "entry" and m.notes.get("lib") != spec.library
        ),
        "unexported": spec.unexported,
    }


def gen_capture_entries(spec, cpp):
    """The C entry points the shim exports, one per `entry` of the shim's library: pass-through
    ones forward, the others record like methods do. The hand-written ones (capture/overrides.cpp)
    are declared and referenced from kHandWrittenEntries, so one missing fails the link (-z defs)."""
    o = ["// Generated by schema/apigen.py -- do not edit. Included by capture/overrides.cpp at global scope.", ""]
    hand = []
    for m, written in entry_exports(spec):
        if written:
            o.append(f"{_entry_head(cpp, m)[0]};  // capture/overrides.cpp")
            hand.append(m.name)
        elif m.mode == "passthrough":
            o += _entry_forward(cpp, m) + [f"  return fn({', '.join(p.name for p in m.params)});", "}"]
        else:
            o += _entry_recorded(spec, cpp, m)
    o.append("")
    o.append("// Referenced so that a hand-written entry point missing from capture/overrides.cpp is an")
    o.append("// undefined symbol: the shim links with -z defs.")
    o.append("extern void* const kHandWrittenEntries[];")
    refs = ", ".join(f"reinterpret_cast<void*>(&::{n})" for n in hand) or "nullptr"
    o.append(f"__attribute__((used)) void* const kHandWrittenEntries[] = {{{refs}}};")
    return "\n".join(o) + "\n"


def gen_capture_override_decls(spec, cpp):
    """Declarations of the hand-written exceptions (capture/overrides.cpp): whole-method overrides
    and hooks, so their signatures always match the spec."""
    o = ["// Generated by schema/apigen.py -- do not edit. Implemented in capture/overrides.cpp.", "#pragma once", ""]
    o.append("// Interface descriptors (capture_gen.inc): name, chain length, factory.")
    for itf in interposed(spec):
        o.append(f"extern const Iface kIface{itf.name};")
    o.append("")
    for m in all_methods(spec):
        if m.interface == "entry":  # entry points: declared in capture_entries.inc
            continue
        key = f"{m.interface}.{m.name}"
        params = cpp.params(m)
        more = f", {params}" if params else ""
        if key in spec.overrides["capture"]:
            o.append(
                f"{cpp.type(m.ret)} override_{m.interface}_{m.name}(Object* self, abi::V{m.interface}* real{more});"
            )
        hooks = spec.hooks["capture"].get(key, set())
        if "pre" in hooks:
            o.append("// Before the call is forwarded (its arguments are recorded).")
            o.append(f"void pre_{m.interface}_{m.name}(Call& c, Object* self{more});")
        if "post" in hooks:
            res = "" if m.ret.base == "void" and not m.ret.ptr else f", {cpp.type(m.ret)} result"
            o.append("// After the real call returned, before its result is recorded.")
            o.append(f"void post_{m.interface}_{m.name}(Call& c, Object* self{res}{more});")
        if "after" in hooks:
            o.append("// Once the call is recorded and the application is about to get the result.")
            o.append(f"void after_{m.interface}_{m.name}(Object* self) noexcept;")
    return "\n".join(o) + "\n"
