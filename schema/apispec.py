"""Parser and model of trtrace's API spec format (docs/api-spec.md).

One stream of declarations read from schema/api/*.api in file-name order. The model is what the
generator (apigen.py) and the tests consume; it knows nothing about C++ output.
"""

from __future__ import annotations

import dataclasses
import pathlib
import re

SCALARS = {
    "void": "void",
    "bool": "bool",
    "i8": "int8_t",
    "u8": "uint8_t",
    "i16": "int16_t",
    "u16": "uint16_t",
    "i32": "int32_t",
    "u32": "uint32_t",
    "i64": "int64_t",
    "u64": "uint64_t",
    "f32": "float",
    "f64": "double",
    "size": "std::size_t",
    "cstr": "char const*",
    "ptr": "void*",
    "cptr": "void const*",
}


class SpecError(Exception):
    pass


HOOK_POINTS = {"capture": ("pre", "post", "after"), "replay": ("pre", "post")}


@dataclasses.dataclass
class Type:
    """A parameter or return type: base name plus C-like qualifiers."""

    base: str  # scalar keyword, enum/struct/interface/opaque/alias name
    const: bool = False  # `T const...`
    ref: bool = False  # `T&` / `T const&`
    ptr: int = 0  # number of `*`
    inner_const: bool = False  # `T* const*`: the pointed-to pointers are const
    text: str = ""  # the spelling in the spec

    def __str__(self):
        return self.text


@dataclasses.dataclass
class Param:
    name: str
    type: Type
    ann: dict  # len=, bytes=, out, nullable


@dataclasses.dataclass
class Method:
    interface: str
    name: str
    params: list
    ret: Type
    const: bool
    mode: str  # record | passthrough | unsupported
    notes: dict  # destroys=param, since=X.Y (informational)
    ret_ann: dict = dataclasses.field(default_factory=dict)  # `-> T [len=param]`: returned array's length
    added: int = 0  # library version that has it: major*10000 + minor*100 (its `library` section)
    slot: int = 0  # vtable slot (after the two destructor slots of VRoot)
    api_id: int = -1
    line: str = ""
    where: str = ""  # file:line of the declaration, for error messages

    @property
    def key(self):
        """Stable identity used by ids.lock: interface, name and parameter types."""
        return f"{self.interface}.{self.name}({', '.join(p.type.text for p in self.params)})"


@dataclasses.dataclass
class Interface:
    name: str
    base: str | None
    abstract: bool
    methods: list
    dtor_slot: int | None = None  # abstract interfaces: position of `~()`
    wrapped: bool = False  # abstract, implemented by the library, wrapped and recorded by the shim
    added: int = 0  # library version that has it (its `library` section)

    @property
    def chain(self):
        return self._chain

    @property
    def level(self):
        return len(self._chain) - 1


@dataclasses.dataclass
class Enum:
    name: str
    underlying: str
    values: list  # [(name, int)]
    type_id: int = -1


@dataclasses.dataclass
class Struct:
    name: str
    fields: list  # [(name, Type, array_len or None)]


@dataclasses.dataclass
class Entry:
    name: str
    params: list
    ret: Type
    mode: str
    lib: str


@dataclasses.dataclass
class Spec:
    library: str = ""
    version: str = ""  # the base version (the first `library` line)
    versions: list = dataclasses.field(default_factory=list)  # [(text, code)], base first; code = major*10000+minor*100
    aliases: dict = dataclasses.field(default_factory=dict)
    opaques: list = dataclasses.field(default_factory=list)
    enums: dict = dataclasses.field(default_factory=dict)
    structs: dict = dataclasses.field(default_factory=dict)
    interfaces: dict = dataclasses.field(default_factory=dict)
    entries: list = dataclasses.field(default_factory=list)
    overrides: dict = dataclasses.field(default_factory=lambda: {"capture": set(), "replay": set()})
    hooks: dict = dataclasses.field(default_factory=lambda: {"capture": {}, "replay": {}})  # key -> points
    appowned: set = dataclasses.field(default_factory=set)  # objects the application deletes
    python: dict = dataclasses.field(default_factory=dict)  # Interface.method -> Python name, "-": none
    numpy: dict = dataclasses.field(default_factory=dict)  # DataType enumerator -> numpy dtype descr
    publics: dict = dataclasses.field(default_factory=dict)  # interface -> public virtual method names
    elementbits: dict = dataclasses.field(default_factory=dict)  # DataType enumerator -> bits per element
    unexported: dict = dataclasses.field(default_factory=dict)  # library function symbol -> why the shim lacks it

    def resolve(self, name):
        """Follows aliases to the underlying type name."""
        seen = set()
        while name in self.aliases:
            if name in seen:
                raise SpecError(f"alias cycle at {name}")
            seen.add(name)
            name = self.aliases[name].base
        return name

    def kind(self, name):
        name = self.resolve(name)
        if name in SCALARS:
            return "scalar"
        for k, table in (("enum", self.enums), ("struct", self.structs), ("interface", self.interfaces)):
            if name in table:
                return k
        if name in self.opaques:
            return "opaque"
        raise SpecError(f"unknown type '{name}'")

    def methods(self):
        for itf in self.interfaces.values():
            yield from itf.methods


_TYPE_RE = re.compile(r"^(?P<base>[A-Za-z_]\w*)(?P<rest>(\s*(const|\*|&))*)$")


def parse_type(text: str) -> Type:
    text = " ".join(text.split())
    m = _TYPE_RE.match(text)
    if not m:
        raise SpecError(f"bad type '{text}'")
    rest = m.group("rest").replace(" ", "")
    t = Type(base=m.group("base"), text=text)
    # Accepted shapes: T, T const, T&, T const&, T*, T const*, T* const*, T const* const*, T**
    toks = re.findall(r"const|\*|&", rest)
    i = 0
    if i < len(toks) and toks[i] == "const":
        t.const, i = True, i + 1
    while i < len(toks):
        tok = toks[i]
        if tok == "*":
            t.ptr += 1
        elif tok == "&":
            t.ref = True
        elif tok == "const":
            if t.ptr == 1 and i + 1 < len(toks) and toks[i + 1] == "*":
                t.inner_const = True
            else:
                raise SpecError(f"unsupported const placement in '{text}'")
        i += 1
    if t.ref and t.ptr:
        raise SpecError(f"pointer-to-reference types are not supported: '{text}'")
    return t


def _split_params(s: str):
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return [p.strip() for p in out]


def _parse_ann(s: str) -> dict:
    ann = {}
    for item in filter(None, (x.strip() for x in s.split(","))):
        if "=" in item:
            k, v = item.split("=", 1)
            ann[k.strip()] = v.strip()
        else:
            ann[item] = True
    return ann


def parse_params(s: str, where: str):
    params = []
    for p in _split_params(s):
        m = re.match(r"^(\w+)\s*:\s*([^\[]+?)\s*((\[[^\]]*\]\s*)*)$", p)
        if not m:
            raise SpecError(f"{where}: bad parameter '{p}'")
        ann = ",".join(re.findall(r"\[([^\]]*)\]", m.group(3) or ""))
        params.append(Param(m.group(1), parse_type(m.group(2)), _parse_ann(ann)))
    return params


_NOTE = r"@[\w.]+(?:\([^)]*\)|\s+[^@!\s(]+)?"  # @name, @name(value) or @name value
_METHOD_RE = re.compile(
    r"^(?P<name>~|\w+)\((?P<params>[^)]*)\)\s*(?P<const>const)?\s*(->\s*(?P<ret>[^!@]+?))?\s*"
    r"(?P<mode>!\w+)?\s*(?P<notes>(?:" + _NOTE + r"\s*)*)$"
)


def _parse_notes(s: str) -> dict:
    notes = {}
    for m in re.finditer(r"@([\w.]+)(\(([^)]*)\)|\s+([^@!\s(]+))?", s or ""):
        notes[m.group(1)] = m.group(3) or m.group(4) or True
    return notes


def parse(paths) -> Spec:
    spec = Spec()
    block = None  # current block object
    for path in paths:
        path = pathlib.Path(path)
        for lineno, raw in enumerate(path.read_text().splitlines(), 1):
            where = f"{path.name}:{lineno}"
            line = raw.split("#", 1)[0].rstrip()
            if not line.strip():
                continue
            try:
                if not line.startswith(" "):
                    block = _parse_top(spec, line.strip(), where)
                else:
                    _parse_member(spec, block, line.strip(), where)
            except SpecError as e:
                raise SpecError(f"{where}: {e}") from None
    _finish(spec)
    return spec


def _parse_top(spec: Spec, line: str, where: str):
    words = line.split()
    kw = words[0]
    if kw == "library":
        # The first line names the base version; each later one opens a delta section: what it
        # declares (appended methods, new interfaces) exists from that version on.
        if len(words) != 3 or not re.match(r"^\d+\.\d+\.\d+\.\d+$", words[2]):
            raise SpecError("bad library: expected `library NAME MAJOR.MINOR.PATCH.BUILD`")
        if spec.library and words[1] != spec.library:
            raise SpecError(f"library {words[1]}: the spec describes {spec.library}")
        major, minor = (int(x) for x in words[2].split(".")[:2])
        code = major * 10000 + minor * 100
        if spec.versions and code <= spec.versions[-1][1]:
            raise SpecError(f"library {words[2]}: versions must increase (after {spec.versions[-1][0]})")
        if spec.versions and major != spec.versions[0][1] // 10000:
            raise SpecError(f"library {words[2]}: another major version is another ABI, not a delta")
        spec.versions.append((words[2], code))
        if not spec.library:
            spec.library, spec.version = words[1], words[2]
        return None
    if kw == "extend":
        # extend NAME: methods appended to an interface's vtable by the current version section
        if len(words) != 2 or words[1] not in spec.interfaces:
            raise SpecError("bad extend: expected `extend Interface` naming a declared interface")
        if len(spec.versions) < 2:
            raise SpecError(f"extend {words[1]}: only a later `library` section appends to an interface")
        return spec.interfaces[words[1]]
    if kw == "alias":
        m = re.match(r"^alias\s+(\w+)\s*=\s*(.+)$", line)
        if not m:
            raise SpecError("bad alias")
        spec.aliases[m.group(1)] = parse_type(m.group(2))
        return None
    if kw == "opaque":
        for name in words[1:]:
            if name not in spec.opaques:
                spec.opaques.append(name)
        return None
    if kw == "enum":
        m = re.match(r"^enum\s+(\w+)\s*:\s*(\w+)$", line)
        if not m:
            raise SpecError("bad enum header")
        if m.group(1) in spec.enums:
            raise SpecError(f"enum {m.group(1)} declared twice")
        e = Enum(m.group(1), m.group(2), [])
        spec.enums[e.name] = e
        return e
    if kw == "struct":
        s = Struct(words[1], [])
        spec.structs[s.name] = s
        return s
    if kw == "interface":
        m = re.match(r"^interface\s+(\w+)(\s*:\s*(\w+))?(\s+abstract(\s+wrapped)?)?$", line)
        if not m:
            raise SpecError("bad interface header")
        if m.group(1) in spec.interfaces:
            raise SpecError(f"interface {m.group(1)} declared twice")
        itf = Interface(
            m.group(1),
            m.group(3),
            bool(m.group(4)),
            [],
            wrapped=bool(m.group(5)),
            added=spec.versions[-1][1] if spec.versions else 0,
        )
        spec.interfaces[itf.name] = itf
        return itf
    if kw == "public":
        m = re.match(r"^public\s+(\w+)\.(\w+)$", line)
        if not m:
            raise SpecError("bad public: expected `public Interface.method`")
        spec.publics.setdefault(m.group(1), []).append(m.group(2))
        return None
    if kw == "elementbits":
        # elementbits DataType kFLOAT=32 kHALF=16 ...: storage bits of one element of each type
        if len(words) < 3:
            raise SpecError("bad elementbits: expected `elementbits Enum kX=bits ...`")
        for item in words[2:]:
            name, _, bits = item.partition("=")
            if not bits.isdigit():
                raise SpecError(f"bad elementbits entry '{item}'")
            spec.elementbits[name] = int(bits)
        spec.elementbits_enum = words[1]
        return None
    if kw == "numpy":
        # numpy DataType kFLOAT=<f4 ...: the numpy dtype of a weight type (others: none in numpy)
        if len(words) < 3 or words[1] != getattr(spec, "elementbits_enum", None):
            raise SpecError("bad numpy: expected `numpy Enum kX=descr ...` after elementbits of that Enum")
        for item in words[2:]:
            name, _, descr = item.partition("=")
            if name not in spec.elementbits or not descr:
                raise SpecError(f"bad numpy entry '{item}'")
            spec.numpy[name] = descr
        return None
    if kw == "python":
        # python Interface.method NAME|-: the tensorrt_rtx bindings' spelling (trtrace export), or none
        if len(words) != 3 or "." not in words[1]:
            raise SpecError("bad python: expected `python Interface.method name|name()|(comment)|-`")
        spec.python[words[1]] = words[2]
        return None
    if kw == "unexported":
        # unexported SYMBOL REASON: a function symbol of the library the shim does not export (the
        # export-set test, tests/test_entry_points.py, accepts exactly these, each with its reason)
        if len(words) < 3 or not re.match(r"^\w+$", words[1]):
            raise SpecError("bad unexported: expected `unexported SYMBOL reason ...` (the reason is required)")
        spec.unexported[words[1]] = " ".join(words[2:])
        return None
    if kw == "appowned":
        spec.appowned.update(words[1:])
        return None
    if kw == "override":
        if len(words) != 3 or words[1] not in ("capture", "replay"):
            raise SpecError("bad override: expected `override capture|replay Interface.method`")
        spec.overrides[words[1]].add(words[2])
        return None
    if kw == "hook":
        # hook capture|replay Interface.method pre post [after]: hand-written code around the
        # generated call (capture: after = once the call is recorded)
        points = HOOK_POINTS.get(words[1]) if len(words) > 1 else None
        if len(words) < 4 or points is None or any(w not in points for w in words[3:]):
            raise SpecError(
                "bad hook: expected `hook capture Interface.method pre|post|after ...` "
                "or `hook replay Interface.method pre|post ...`"
            )
        spec.hooks[words[1]].setdefault(words[2], set()).update(words[3:])
        return None
    if kw == "entry":
        m = re.match(r"^entry\s+(\w+)\((.*?)\)\s*(->\s*([^!@]+?))?\s*(!\w+)?\s*((?:" + _NOTE + r"\s*)*)$", line)
        if not m:
            raise SpecError("bad entry")
        notes = _parse_notes(m.group(6))
        spec.entries.append(
            Entry(
                m.group(1),
                parse_params(m.group(2), where),
                parse_type(m.group(4) or "void"),
                (m.group(5) or "!record")[1:],
                notes.get("lib", "tensorrt_rtx"),
            )
        )
        return None
    raise SpecError(f"unknown declaration '{kw}'")


def _parse_member(spec: Spec, block, line: str, where: str):
    if isinstance(block, Enum):
        m = re.match(r"^(\w+)\s*=\s*(-?(0x[0-9a-fA-F]+|\d+))$", line)
        if not m:
            raise SpecError(f"bad enumerator '{line}'")
        block.values.append((m.group(1), int(m.group(2), 0)))
    elif isinstance(block, Struct):
        m = re.match(r"^(\w+)\s*:\s*(\w+)(\[(\d+)\])?$", line)
        if not m:
            raise SpecError(f"bad struct field '{line}'")
        block.fields.append((m.group(1), parse_type(m.group(2)), int(m.group(4)) if m.group(3) else None))
    elif isinstance(block, Interface):
        m = _METHOD_RE.match(line)
        if not m:
            raise SpecError(f"bad method '{line}'")
        if m.group("name") == "~":
            block.dtor_slot = len(block.methods)
            return
        mode = (m.group("mode") or "!record")[1:]
        if mode not in ("record", "passthrough", "unsupported"):
            raise SpecError(f"unknown mode !{mode}")
        ret, ret_ann = m.group("ret") or "void", {}
        if "[" in ret:  # `-> T [len=param]`
            ret, ann = ret.split("[", 1)
            ret_ann = _parse_ann(",".join(re.findall(r"([^\[\]]+)\]", "[" + ann)))
        block.methods.append(
            Method(
                block.name,
                m.group("name"),
                parse_params(m.group("params"), where),
                parse_type(ret),
                bool(m.group("const")),
                mode,
                _parse_notes(m.group("notes")),
                ret_ann=ret_ann,
                added=spec.versions[-1][1] if spec.versions else 0,
                line=line,
                where=where,
            )
        )
    else:
        raise SpecError("indented line outside a block")


def _finish(spec: Spec):
    for itf in spec.interfaces.values():
        chain, cur = [], itf
        while cur is not None:
            if cur.name in chain:
                raise SpecError(f"interface chain cycle at {cur.name}")
            chain.insert(0, cur.name)
            if cur.base is None:
                break
            if cur.base not in spec.interfaces:
                raise SpecError(f"interface {cur.name}: unknown base {cur.base}")
            cur = spec.interfaces[cur.base]
        itf._chain = chain
        for slot, m in enumerate(itf.methods):
            m.slot = slot
            if slot and m.added < itf.methods[slot - 1].added:  # cannot happen through `extend`; a guard
                raise SpecError(f"{m.where}: {m.key}: a later version's methods come last (append-only vtables)")
    # Every referenced type must exist; annotations must name real parameters.
    for m in spec.methods():
        try:
            for t in [m.ret] + [p.type for p in m.params]:
                spec.kind(t.base)
            names = {p.name for p in m.params}
            rl = m.ret_ann.get("len")
            if rl is not None and not any(p.name == rl and p.ann.get("out") and p.type.ptr == 1 for p in m.params):
                raise SpecError(f"{m.key}: -> [len={rl}] must name an [out] scalar pointer parameter")
            for p in m.params:
                for k in ("len", "bytes"):
                    v = p.ann.get(k)
                    if isinstance(v, str) and not v.isdigit() and v not in names:
                        raise SpecError(f"{m.key}: [{k}={v}] names no parameter")
        except SpecError as e:
            raise SpecError(f"{m.where}: {e}") from None
    for itf in spec.interfaces.values():
        if itf.wrapped and (itf.base or itf.dtor_slot != 0):
            raise SpecError(
                f"interface {itf.name}: a wrapped interface has no base and its `~()` comes first "
                f"(the shim's object puts its methods after its own destructor)"
            )
    for key in spec.python:
        itf_name, _, name = key.partition(".")
        itf = spec.interfaces.get(itf_name)
        if not (itf and any(m.name == name for m in itf.methods)) and not (
            itf_name == "entry" and any(e.name == name for e in spec.entries)
        ):
            raise SpecError(f"python {key}: no such method")
    for itf_name, names in spec.publics.items():
        itf = spec.interfaces.get(itf_name)
        if itf is None:
            raise SpecError(f"public {itf_name}: unknown interface")
        for n in names:
            if not any(m.name == n for m in itf.methods):
                raise SpecError(f"public {itf_name}.{n}: the interface has no such method")
    if spec.elementbits:
        e = spec.enums.get(getattr(spec, "elementbits_enum", ""))
        if e is None:
            raise SpecError("elementbits names an unknown enum")
        missing = [n for n, _ in e.values if n not in spec.elementbits]
        if missing:
            raise SpecError(f"elementbits {e.name}: no size for {', '.join(missing)}")
    for i, e in enumerate(spec.enums.values()):
        e.type_id = i + 1


def load(api_dir) -> Spec:
    files = sorted(pathlib.Path(api_dir).glob("*.api"))
    if not files:
        raise SpecError(f"{api_dir}: no *.api files")
    return parse(files)
