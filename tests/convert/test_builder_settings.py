"""Every builder-config setting on both capture paths (issue 24), against the real TensorRT-RTX
library of the running Python (1.6 here, 1.7 as builder_settings_1.7).

tests/apps/builder_settings.py sets every builder-config and optimization-profile setting the
Python API offers. Captured by our shim (trace and JSON+BIN) and by NVIDIA's shim, each capture
replays to the app's engine byte for byte, and `trtrace diff` finds our trace and the converted
NVIDIA capture equivalent. NVIDIA's JSON leaves out one argument (setRuntimePlatform's, whatever
its value: docs/json-bin-layout.md §4): the converter stands in the library's default and says so
in one warning line. Skips the NVIDIA half when its shim is not installed.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(os.environ.get("TRTRACE_ROOT", pathlib.Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(ROOT / "tests"))
import nvidia_capture as nv  # noqa: E402
from conftest import APPS, PLAYER, TRTRACE, capture, run_app  # noqa: E402

APP = APPS / "builder_settings.py"

# Setters of the spec the app does not call, each with why it cannot be part of a CPU-only build.
NOT_CALLED = {
    "BuilderConfig.setProfileStream": "takes a CUDA stream; a CPU-only build has none",
    "OptimizationProfile.setProfileStream": "takes a CUDA stream; a CPU-only build has none",
    "BuilderConfig.setTimingCache": "timing caches are no-ops in TensorRT-RTX (unsupported in the spec)",
    "OptimizationProfile.setShapeValuesV2": "needs a shape-tensor input; set_shape covers the profile ranges",
}


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def python_setters():
    """Interface.method of every BuilderConfig/OptimizationProfile setter the spec gives a Python
    spelling, for the library version this Python imports."""
    import tensorrt_rtx as trt

    major, minor = (int(x) for x in trt.__version__.split(".")[:2])
    names = json.loads(
        run(
            [sys.executable, ROOT / "schema" / "apigen.py", "--spec", ROOT / "schema" / "api", "--python-names"],
            check=True,
        ).stdout
    )
    return {
        f"{n['interface']}.{n['method']}"
        for n in names
        if n["interface"] in ("BuilderConfig", "OptimizationProfile")
        and n["since"] <= major * 10000 + minor * 100
        and n["method"].startswith(("set", "clear", "add", "reset"))
    }


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    """The app alone, under our shim (trace + JSON+BIN), and under NVIDIA's shim (when installed)."""
    d = tmp_path_factory.mktemp("settings")
    run_app(APP.name, "--out", d / "app.engine")
    capture(
        APP.name,
        d / "ours.trtrace",
        "--out",
        d / "ours.engine",
        env={"TRT_SHIM_OUTPUT_JSON_FILE": str(d / "ours.json")},
    )
    caps = {"dir": d, "engine": (d / "app.engine").read_bytes()}
    assert (d / "ours.engine").read_bytes() == caps["engine"]
    if nv.available():
        js, _, proc = nv.capture([APP, "--out", d / "nv.engine"], d / "nv.json", cwd=d)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        caps["nvidia"] = js
    return caps


def test_app_calls_every_setter(captures):
    calls = {
        f"{c['class']}.{c['function']}" for c in json.loads((captures["dir"] / "ours.json").read_text())["api_calls"]
    }
    missing = sorted(python_setters() - calls - set(NOT_CALLED))
    assert not missing, f"setters builder_settings.py does not call: {missing}"


@pytest.mark.parametrize("form", ["trace", "json"])
def test_our_capture_replays_identical(captures, tmp_path, form):
    cap = captures["dir"] / ("ours.trtrace" if form == "trace" else "ours.json")
    out = tmp_path / "replay.engine"
    p = run([PLAYER, cap, "-o", out, "--lib", nv.setting("TRTRACE_TRT_LIB"), "-q"])
    assert p.returncode == 0, p.stdout + p.stderr
    assert out.read_bytes() == captures["engine"]


def test_nvidia_capture_converts_and_replays_identical(captures, tmp_path):
    if "nvidia" not in captures:
        pytest.skip(nv.unavailable_reason())
    js = captures["nvidia"]
    records = json.loads(js.read_text())["api_calls"]
    platform = [c for c in records if c["function"] == "setRuntimePlatform"]
    assert len(platform) == 1 and "runtimePlatform" not in platform[0], "NVIDIA's JSON changed: update kNvidiaOmits"
    trace = tmp_path / "nv.trtrace"
    r = run([TRTRACE, "convert", js, trace])
    assert r.returncode == 0, r.stderr
    warn = r.stderr.strip().splitlines()
    assert len(warn) == 1 and warn[0].startswith("trtrace: warning: "), r.stderr
    assert (
        f"api_calls[{platform[0]['api_index']}] (api_index {platform[0]['api_index']}) BuilderConfig::setRuntimePlatform"
        f' argument "runtimePlatform", taken as kSAME_AS_BUILD'
    ) in warn[0], warn
    assert run([TRTRACE, "verify", trace]).returncode == 0
    d = run([TRTRACE, "diff", captures["dir"] / "ours.trtrace", trace])
    assert d.returncode == 0, d.stdout + d.stderr
    for cap in (trace, js):  # the converted trace, and the JSON read by the player directly
        out = tmp_path / "replay.engine"
        p = run([PLAYER, cap, "-o", out, "--lib", nv.setting("TRTRACE_TRT_LIB"), "-q"])
        assert p.returncode == 0, p.stdout + p.stderr
        assert out.read_bytes() == captures["engine"]
