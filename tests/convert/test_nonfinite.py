"""Non-finite weights through our JSON+BIN (issue 24), against the real TensorRT-RTX library.

JSON has no number for NaN or +-inf: NVIDIA's shim writes them as null and the value is lost. Our
writer (the shim's JSON export and `trtrace convert` trace -> JSON) puts weights holding such values
in the BIN instead of inline, which NVIDIA's layout allows for any weights (docs/json-bin-layout.md
§7): the app's exact bits come back, and the replay builds the app's engine. A non-finite scalar
argument has no such place: it is written as null with one warning line naming the call.
"""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(os.environ.get("TRTRACE_ROOT", pathlib.Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(ROOT / "tests"))
import nvidia_capture as nv  # noqa: E402
import conftest  # noqa: E402
from conftest import APPS, PLAYER, SHIM, TRTRACE, run_app  # noqa: E402

APP = APPS / "nonfinite_constant.py"
VALUES = [-np.inf, np.inf, np.nan, 1.0]


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def has_null(v):
    if isinstance(v, dict):
        return any(has_null(x) for x in v.values())
    return any(has_null(x) for x in v) if isinstance(v, list) else v is None


@pytest.fixture(scope="module")
def capture(tmp_path_factory):
    """The app's engine; our shim's trace and JSON+BIN of it; `trtrace convert` of the trace to JSON."""
    d = tmp_path_factory.mktemp("nonfinite")
    run_app(APP.name, "--out", d / "app.engine")
    ours = conftest.capture(
        APP.name,
        d / "ours.trtrace",
        "--out",
        d / "ours.engine",
        env={"TRT_SHIM_OUTPUT_JSON_FILE": str(d / "shim.json")},
    )
    assert "warning" not in ours.stderr, ours.stderr
    r = run([TRTRACE, "convert", d / "ours.trtrace", d / "convert.json"])
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    return d


@pytest.mark.parametrize("writer", ["shim", "convert"])
def test_our_json_keeps_nonfinite_weights(capture, tmp_path, writer):
    js = capture / f"{writer}.json"
    doc = nv.load(js)
    assert not has_null(doc), "a value was written as null"
    consts = [c for c in doc["api_calls"] if c["function"] == "addConstant"]
    want = {0: np.array(VALUES, np.float32), 1: np.array(VALUES, np.float16)}
    assert sorted(c["weights"]["type"] for c in consts) == [0, 1]
    for c in consts:
        w = c["weights"]
        assert "offset" in w and "inline" not in w, w  # in the BIN: NVIDIA's layout, exact bytes
        got = nv.weights_array(doc, w, js)
        assert got.tobytes() == want[w["type"]].tobytes(), (w, got)
    # back to a trace: no warning, and the replay builds the app's engine (also from the JSON itself)
    trace = tmp_path / "back.trtrace"
    r = run([TRTRACE, "convert", js, trace])
    assert r.returncode == 0 and "warning" not in r.stderr, r.stderr
    for cap in (trace, js):
        out = tmp_path / "replay.engine"
        p = run([PLAYER, cap, "-o", out, "--lib", nv.setting("TRTRACE_TRT_LIB"), "-q"])
        assert p.returncode == 0, p.stdout + p.stderr
        assert out.read_bytes() == (capture / "app.engine").read_bytes()


def test_the_shim_and_convert_write_the_same_json(capture):
    a = (capture / "shim.json").read_text().replace('"shim.bin"', '"<bin>"')
    b = (capture / "convert.json").read_text().replace('"convert.bin"', '"<bin>"')
    assert a == b
    assert (capture / "shim.bin").read_bytes() == (capture / "convert.bin").read_bytes()


def test_nonfinite_scalar_is_null_with_one_warning(tmp_path):
    """FillLayer.alpha = +inf (the library accepts it): no JSON number can hold it."""
    trace = tmp_path / "p.trtrace"
    env = dict(os.environ, LD_PRELOAD=str(SHIM), TRT_SHIM_OUTPUT_FILE=str(trace))
    app = run([sys.executable, APP, "--out", tmp_path / "p.engine", "--inf-parameter"], env=env)
    assert app.returncode == 0, app.stdout + app.stderr
    js = tmp_path / "p.json"
    r = run([TRTRACE, "convert", trace, js])
    assert r.returncode == 0, r.stderr
    warn = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    alpha = [c for c in nv.load(js)["api_calls"] if c["function"] == "setAlpha"]
    assert len(alpha) == 1 and alpha[0]["alpha"] is None
    assert (
        len(warn) == 1
        and (f'api_calls[{alpha[0]["api_index"]}] FillLayer::setAlpha argument "alpha" is NaN or infinite') in warn[0]
    ), r.stderr
