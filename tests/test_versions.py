"""Library versions (issue 14): capture on TensorRT-RTX 1.6.1 and 1.7.1 with the same shim, the
trace naming the real version and build id, and replay across versions both ways: refused with
one line naming both versions, or with --ignore-version every call the target library lacks
reported by name and count (divergence exit 2). Needs both venvs of tools/setup.sh."""

import json
import os
import re
import subprocess

import pytest

from conftest import APPS, PLAYER, ROOT, SHIM, TRTRACE

VENVS = {"1.6": ROOT / ".deps" / "venv", "1.7": ROOT / ".deps" / "venv-1.7"}
RELEASE = {"1.6": "1.6.1.120", "1.7": "1.7.1.116"}
pytestmark = pytest.mark.skipif(
    not all((v / "bin" / "python").exists() for v in VENVS.values()),
    reason="tools/setup.sh installs both library versions",
)


def libfile(ver):
    return next(VENVS[ver].glob("lib/python3*/site-packages/tensorrt_rtx_libs")) / "libtensorrt_rtx.so.1"


def build_id(path):
    out = subprocess.run(["readelf", "-n", str(path)], capture_output=True, text=True).stdout
    return re.search(r"Build ID: ([0-9a-f]+)", out).group(1)


def capture(ver, tmp):
    trace, engine = tmp / f"cap{ver}.trtrace", tmp / f"app{ver}.engine"
    env = dict(os.environ, LD_PRELOAD=str(SHIM), TRT_SHIM_OUTPUT_FILE=str(trace))
    env.pop("TRT_SHIM_NVINFER_LIB_NAME", None)
    p = subprocess.run(
        [str(VENVS[ver] / "bin" / "python"), str(APPS / "squeeze_app.py"), str(engine)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert p.returncode == 0, p.stderr
    assert "not capturing" not in p.stderr
    return trace, engine


def play(trace, ver, tmp, *extra):
    return subprocess.run(
        [str(PLAYER), "-j", str(trace), "-o", str(tmp / "out.engine"), "--lib", str(libfile(ver)), *extra],
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize("ver", ["1.6", "1.7"])
def test_capture_names_the_real_version_and_replays_identically(tmp_path, ver):
    trace, engine = capture(ver, tmp_path)
    info = json.loads(
        subprocess.run([str(TRTRACE), "info", str(trace), "--json"], capture_output=True, text=True, check=True).stdout
    )
    assert info["library_version"] == RELEASE[ver]
    assert info["library_build_id"] == build_id(libfile(ver))
    dump = subprocess.run([str(TRTRACE), "dump", str(trace)], capture_output=True, text=True, check=True).stdout
    assert ("addSqueezeV2" in dump) == (ver == "1.7") and "UNSUPPORTED" not in dump
    p = play(trace, ver, tmp_path, "--json")
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["library"]["version"] == RELEASE[ver] and out["library"]["chosen_by"] == "--lib"
    assert (tmp_path / "out.engine").read_bytes() == engine.read_bytes()


@pytest.mark.parametrize("src,dst", [("1.6", "1.7"), ("1.7", "1.6")])
def test_other_version_is_refused_with_one_line(tmp_path, src, dst):
    trace, _ = capture(src, tmp_path)
    p = play(trace, dst, tmp_path)
    assert p.returncode == 1
    lines = [ln for ln in p.stderr.splitlines() if "captured with" in ln]
    assert len(lines) == 1 and RELEASE[src] in lines[0] and RELEASE[dst] in lines[0] and "--ignore-version" in lines[0]
    assert not (tmp_path / "out.engine").exists()


def test_ignore_version_older_library_reports_newer_calls(tmp_path):
    trace, _ = capture("1.7", tmp_path)
    p = play(trace, "1.6", tmp_path, "--ignore-version")
    assert p.returncode == 2, p.stderr
    assert "1 call of NetworkDefinition::addSqueezeV2 (tensorrt_rtx 1.7)" in p.stderr
    assert re.search(r"divergence at call #\d+ \(NetworkDefinition::addSqueezeV2", p.stderr)
    assert not (tmp_path / "out.engine").exists()


def test_ignore_version_newer_library_replays_every_call(tmp_path):
    trace, _ = capture("1.6", tmp_path)
    p = play(trace, "1.7", tmp_path, "--ignore-version", "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["library"]["version"] == RELEASE["1.7"]
    assert (tmp_path / "out.engine").stat().st_size > 0
