"""The Python spelling of each API id in the tensorrt_rtx bindings (trtrace export --python):
knowledge the generator hands to the CLI through api::ApiDesc (pyForm, pyName) and to the bindings
conformance test (apigen.py --python-names)."""

from __future__ import annotations

import re

from apimodel import DESTROY, K, all_methods, classify, params_info


def snake(name):
    """addConvolutionNd -> add_convolution_nd, setNbGroups -> set_num_groups (the bindings' `num_`)."""
    out = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    out = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", out).lower()
    return re.sub(r"(^|_)nb_", r"\1num_", out)


def bound_params(spec, m):
    """The parameters of `m` the bindings take: a count the spec pairs with an array ([len=] or
    [bytes=], ParamDesc::lengthOf) is not one -- the bindings take the sequence alone
    (add_concatenation(inputs)) -- nor is an output the library fills or the count of one."""
    infos = params_info(spec, m)
    counts = {p.ann.get("len") or p.ann.get("bytes") for p in m.params}
    return [p for p, info in zip(m.params, infos) if info.length_of < 0 and info.kind != "Out" and p.name not in counts]


def is_read(spec, m):
    """A call that only reads a value back (not an object): a const method, or a getX, returning a
    value. The library may still change state in it (Tensor.getDimensions runs shape inference), so
    export makes the same read through the bindings where they have one (forms Read, ReadCall)."""
    k = classify(spec, m.ret, m.ret_ann)
    return m.interface != "entry" and k not in (K.HANDLE, K.HANDLES, K.VOID) and (m.const or m.name.startswith("get"))


def read_spelling(spec, m, name):
    """(form, name) of a read: an argument-less getX/isX is the property x (the setter's property
    name when the interface has one: Tensor.getDimensions -> shape), anything else the method."""
    if bound_params(spec, m) or not m.name.startswith(("get", "is")):
        return "ReadCall", name or snake(m.name)
    if name:
        return "Read", name
    if m.name.startswith("is"):
        return "Read", snake(m.name)
    setter = next((x for x in spec.interfaces[m.interface].methods if x.name == "set" + m.name[3:]), None)
    form, pyname = py_spelling(spec, setter) if setter else ("", "")
    return "Read", pyname if form == "Property" else snake(m.name[3:])


def py_spelling(spec, m):
    """(form, name): how export writes a call of `m` in Python (api::PyForm). The rule: a method is
    its snake_case name; a setX of one bound parameter (bound_params) whose interface has a getX or
    isX of none is the property x; an argument-less getX returning an object is the property x; a
    read (is_read) is made through the bindings' property or method (read_spelling); the destroy is
    `del`. `python` lines of the overrides list rename (the form stays), make it a method
    (`name()`), join calls that differ in a selector (`name(joined)`), a comment (`(comment)`: a call the bindings cannot make the same way, which cannot
    change the build) or, with `-`, not expressible; entry points are expressible only there (form
    New: the class built from the script's logger)."""
    name = spec.python.get(f"{m.interface}.{m.name}")
    if name == "-":
        return "None", ""
    if name == "(comment)":
        return "Observe", snake(m.name)
    if name and name.endswith("(joined)"):
        return "Joined", name[: -len("(joined)")]
    read = is_read(spec, m)
    if name and name.endswith("()"):
        return ("ReadCall" if read else "Method"), name[:-2]
    if m.name == DESTROY:
        return "Delete", ""
    if m.interface == "entry":
        return ("New", name) if name else ("None", "")
    if read:
        return read_spelling(spec, m, name)
    names = {x.name: x for x in spec.interfaces[m.interface].methods}
    k = classify(spec, m.ret, m.ret_ann)
    getter = next((names.get(p + m.name[3:]) for p in ("get", "is") if names.get(p + m.name[3:])), None)
    if m.name.startswith("set") and len(bound_params(spec, m)) == 1 and getter and not bound_params(spec, getter):
        return "Property", name or snake(m.name[3:])
    if m.name.startswith("get") and not m.params and k in (K.HANDLE, K.HANDLES):
        return "Get", name or snake(m.name[3:])
    return "Method", name or snake(m.name)


def python_names(spec):
    """Every API id's Python spelling, for the conformance test against the real bindings."""
    from apimodel import param_info

    out = []
    for m in all_methods(spec):
        form, name = py_spelling(spec, m)
        out.append(
            {
                "id": m.api_id,
                "interface": m.interface,
                "method": m.name,
                "form": form,
                "name": name,
                "since": m.added or spec.versions[0][1],
                "args": [param_info(spec, p.type, p.ann).text for p in m.params],
            }
        )
    return out


# C++ declarations gen_table puts into api_table.h.
PYFORM_ENUM = [
    "// How a call is written in Python with the tensorrt_rtx bindings (gen_python.py py_spelling).",
    "enum class PyForm : uint8_t {",
    "  None,      // not expressible one statement per call",
    "  Method,    // obj.name(args)",
    "  Property,  // obj.name = arg (a setter)",
    "  Get,       // obj.name (an argument-less getter of an object)",
    "  Read,      // obj.name (a read through the bindings' property: the same library call)",
    "  ReadCall,  // obj.name(args) (a read through the bindings' method: the same library call)",
    "  Joined,    // obj.name(key, v0, v1, ...): calls differing only in an enum selector, one per key (set_shape)",
    "  Observe,   // a comment: a read the bindings cannot make the same way, or a callback that cannot change the build",
    "  Delete,    // del obj",
    "  New,       // trt.name(logger): an entry point that creates the object",
    "};",
    "",
]
