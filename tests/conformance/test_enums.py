"""Every enum of the API spec (schema/api/*.api) against the real library's Python bindings.

C++ enumerator kFOO_BAR is Python FOO_BAR; enums the bindings do not expose are skipped (listed in
the skip reason). Known spelling differences are in RENAMES.
"""

import os
import pathlib
import sys

import pytest

ROOT = pathlib.Path(os.environ.get("TRTRACE_ROOT", pathlib.Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(ROOT / "schema"))
import apispec  # noqa: E402

trt = pytest.importorskip("tensorrt_rtx")

SPEC = apispec.load(ROOT / "schema" / "api")

# (enum, C++ enumerator) -> Python attribute name, where it is not just the name without 'k'.
RENAMES = {("LayerType", "kKVCACHE_UPDATE"): "KV_CACHE_UPDATE"}
# Where the binding lives when it is not tensorrt_rtx.<Enum> (nested classes).
# nvinfer1::ErrorCode is ErrorCodeTRT in Python; tensorrt_rtx.ErrorCode is the ONNX parser's.
LOCATIONS = {"Severity": ("Logger", "Severity"), "ErrorCode": ("ErrorCodeTRT",), "OnnxErrorCode": ("ErrorCode",)}


def py_enum(name):
    path = LOCATIONS.get(name, (name,))
    obj = trt
    for part in path:
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def py_value(member):
    return int(member.value) if hasattr(member, "value") else int(member)


def test_spec_has_enums():
    assert len(SPEC.enums) > 50


@pytest.mark.parametrize("name", sorted(SPEC.enums))
def test_enum_matches_bindings(name):
    enum = SPEC.enums[name]
    py = py_enum(name)
    if py is None:
        pytest.skip(f"{name}: not in the tensorrt_rtx bindings")
    wrong, absent = [], []
    for cpp, value in enum.values:
        attr = RENAMES.get((name, cpp), cpp[1:] if cpp.startswith("k") else cpp)
        member = getattr(py, attr, None)
        if member is None:
            absent.append(cpp)
            continue
        if py_value(member) != value:
            wrong.append(f"{cpp} = {value} in the spec, {py.__name__}.{attr} = {py_value(member)}")
    assert not wrong, f"{name}: " + "; ".join(wrong)
    if absent and len(absent) == len(enum.values):
        pytest.fail(f"{name}: none of the spec's enumerators exists in the bindings: {absent}")
    # Enumerators the bindings do not expose (deprecated/hidden) are reported, not failed.
    if absent:
        print(f"{name}: not in the bindings: {', '.join(absent)}")


@pytest.mark.parametrize("name", sorted(SPEC.enums))
def test_bindings_have_no_extra_enumerators(name):
    """Every enumerator the bindings expose is in the spec (a spec missing a value is a spec error)."""
    py = py_enum(name)
    if py is None or not hasattr(py, "__members__"):
        pytest.skip(f"{name}: not in the tensorrt_rtx bindings")
    spec_values = {v for _, v in SPEC.enums[name].values}
    extra = [f"{k} = {py_value(m)}" for k, m in py.__members__.items() if py_value(m) not in spec_values]
    assert not extra, f"{name}: bindings have values the spec lacks: {extra}"
