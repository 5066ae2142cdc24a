"""The Python spelling trtrace export writes (schema/apigen.py py_spelling, with the `python` lines
of schema/api/90-overrides.api) checked against the REAL tensorrt_rtx bindings of the running
Python: every method, property and getter export can emit exists there with that form, and every
enumerator of an enum such a call takes exists as trt.Enum.NAME (its C++ name without the `k`)."""

import json
import subprocess
import sys

import tensorrt_rtx as trt

from conftest import ROOT

FORMS = ("Method", "Property", "Get", "Read", "ReadCall", "Joined")
METHODS = ("Method", "ReadCall", "Joined")


def names():
    p = subprocess.run(
        [sys.executable, str(ROOT / "schema" / "apigen.py"), "--spec", str(ROOT / "schema" / "api"), "--python-names"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(p.stdout)


def binding_class(interface):
    return getattr(trt, "I" + interface, None) or getattr(trt, interface, None)


def version_of_bindings():
    major, minor = (int(x) for x in trt.__version__.split(".")[:2])
    return major * 10000 + minor * 100


def test_every_call_export_can_write_exists_in_the_bindings():
    missing = []
    for n in names():
        if n["form"] not in FORMS or n["since"] > version_of_bindings():  # a newer library's method
            continue
        cls = binding_class(n["interface"])
        attr = getattr(cls, n["name"], None) if cls else None
        ok = attr is not None and (isinstance(attr, property) == (n["form"] not in METHODS))
        if ok and n["form"] == "Property":
            ok = attr.fset is not None
        if not ok:
            missing.append(f"{n['interface']}.{n['method']} -> {n['form']} {n['name']}")
    assert not missing, f"{len(missing)} spellings the bindings lack:\n" + "\n".join(missing)


def test_new_forms_are_binding_classes():
    for n in names():
        if n["form"] == "New":
            assert callable(getattr(trt, n["name"], None)), n


def test_enumerators_of_arguments_exist():
    # a Joined call's selector enum is not written: its values are the joined call's arguments, in order
    enums = {
        a.split(":", 1)[1]
        for n in names()
        if n["form"] in FORMS and n["form"] != "Joined"
        for a in n["args"]
        if a.startswith("enum:")
    }
    sys.path.insert(0, str(ROOT / "schema"))
    import apispec

    spec = apispec.load(ROOT / "schema" / "api")
    missing = [
        f"{e}.{v}"
        for e in sorted(enums)
        for v, _ in spec.enums[e].values
        if not hasattr(getattr(trt, e, None), v[1:] if v.startswith("k") else v)
    ]
    assert not missing, missing
