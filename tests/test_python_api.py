"""The Python API (issue 18): `trtrace.open(path)` reads a real capture through the C++ reader
(libtrtrace_c.so), the same checks as the tools: calls with arguments by name (the names the tools
print), builds and their outcome, weights as zero-copy NumPy views of raw blobs and decoded arrays of
compressed ones, `verify()` as `trtrace verify`, `trtrace.replay` as the player."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import ROOT, TRTRACE, capture

sys.path.insert(0, str(ROOT / "python"))
os.environ["PATH"] = f"{TRTRACE.parent}:{os.environ['PATH']}"  # the tools beside the trtrace on PATH
import trtrace  # noqa: E402


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """A raw capture of build_cnn.py (2 networks) and the same trace with zstd-compressed blobs."""
    d = tmp_path_factory.mktemp("pyapi")
    raw = d / "raw.trtrace"
    capture("build_cnn.py", raw, "--out", d / "app.engine", "--networks", "2", env={"TRTRACE_ZSTD_LEVEL": "0"})
    comp = d / "comp.trtrace"
    subprocess.run(
        [str(TRTRACE), "rewrite", str(raw), str(comp), "--compress", "--level", "19"], check=True, capture_output=True
    )
    return d, raw, comp


def mapped_ranges(path):
    """Address ranges of /proc/self/maps that map `path`."""
    out = []
    for line in open("/proc/self/maps"):
        parts = line.split()
        if len(parts) >= 6 and parts[5] == str(path):
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            out.append((lo, hi))
    return out


def test_calls_have_the_names_and_values_the_tools_print(traces):
    d, raw, _ = traces
    dump = subprocess.run(
        [str(TRTRACE), "dump", str(raw)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    with trtrace.open(raw) as t:
        assert len(t.calls) == len(dump) == len(t)
        for call, line in zip(t.calls, dump):
            assert f" {call.name}(" in line and line.startswith(f"#{call.seq} ")
            for name in call.args:
                assert f"{name}=" in line, (name, line)
        conv = next(c for c in t.calls if c.method == "addConvolutionNd")
        assert conv.args["nbOutputMaps"].value == 8 and conv.args["nbOutputMaps"].spec
        assert conv.args["kernelWeights"].kind == "WeightsBlob" and conv.result.kind == "Handle"
        assert t.header["library"] == "tensorrt_rtx"


def test_iterating_a_trace_reads_its_calls_in_batches(traces):
    """`for c in trace` holds one batch of calls at a time (a trace of millions of calls need not fit
    as Python objects); the batches, however small, give the calls `calls` gives."""
    d, raw, _ = traces
    with trtrace.open(raw) as t:
        streamed = [(c.seq, c.name, c.network) for c in t._stream(batch=5)]
        assert [(c.seq, c.name, c.network) for c in t] == streamed
        assert t._calls is None  # iterating kept nothing
        assert streamed == [(c.seq, c.name, c.network) for c in t.calls] and len(streamed) == len(t)


def test_builds_networks_and_weights(traces):
    d, raw, _ = traces
    with trtrace.open(raw) as t:
        assert [n.index for n in t.networks] == [0, 1]
        assert len(t.builds) == 2 and all(b.ok for b in t.builds)
        for i, b in enumerate(t.builds):
            assert b.network == i and b.engine_size == (d / f"app.engine{i}").stat().st_size
            assert t.networks[i].builds == [b]
        kernel = next(c for c in t.networks[0].calls if c.method == "addConvolutionNd").args["kernelWeights"].value
        assert kernel.dtype == "kFLOAT" and kernel.count == 8 * 3 * 3 * 3 and kernel.storage == "blob"
        expected = np.random.default_rng(1234).standard_normal((8, 3, 3, 3)).astype(np.float32)  # build_cnn.py's
        a = kernel.array()
        assert a.dtype == np.float32 and np.array_equal(a, expected.ravel())
        # Zero-copy: the array's memory is the trace's mapping.
        addr = a.__array_interface__["data"][0]
        assert any(lo <= addr < hi for lo, hi in mapped_ranges(raw.resolve())), "not a view of the mapping"
        half = [w for w in t.weights if w.dtype == "kHALF"]
        assert half and half[0].array().dtype == np.float16


def spec_numpy_dtypes():
    """The API spec's `numpy DataType kX=descr ...` line: NumPy's dtype of each weight type it has."""
    line = next(
        l
        for l in (ROOT / "schema" / "api" / "90-overrides.api").read_text().splitlines()
        if l.startswith("numpy DataType ")
    )
    return dict(item.split("=", 1) for item in line.split()[2:])


def test_numpy_dtypes_are_the_specs(traces):
    """Weights.numpy_dtype is the spec's (as `trtrace export` writes .npy files); a type the spec gives
    NumPy no dtype for (BF16, FP8, ...) reads as its bytes."""
    _, raw, _ = traces
    spec = spec_numpy_dtypes()
    assert "kBF16" not in spec and spec["kHALF"] == "<f2"
    with trtrace.open(raw) as t:
        seen = {w.dtype: w.numpy_dtype for w in t.weights}
    assert {"kFLOAT", "kHALF"} <= seen.keys()
    for dtype, descr in seen.items():
        assert descr == spec.get(dtype, "|u1"), (dtype, descr)


def test_compressed_blobs_decode_to_the_same_arrays(traces):
    d, raw, comp = traces
    with trtrace.open(raw) as r, trtrace.open(comp) as c:
        blobs = [w for w in c.weights if w.storage == "blob"]
        info = json.loads(
            subprocess.run(
                [str(TRTRACE), "info", "--json", str(comp)], capture_output=True, text=True, check=True
            ).stdout
        )
        assert info["weights"]["compressed_blobs"] > 0
        for a, b in zip(r.weights, c.weights):
            if a.storage == "blob":
                assert np.array_equal(a.array(), b.array())
        assert blobs


def test_same_checks_as_the_tools(traces, tmp_path):
    """A damaged blob: the array is refused with the player's line; verify() is `trtrace verify`'s."""
    d, raw, _ = traces
    data = bytearray(raw.read_bytes())
    with trtrace.open(raw) as t:
        w = next(w for w in t.weights if w.storage == "blob" and w.nbytes > 1000)
        a = w.array()
        addr = a.__array_interface__["data"][0]
        lo = next(lo for lo, hi in mapped_ranges(raw.resolve()) if lo <= addr < hi)
        offset = addr - lo  # the file is mapped from offset 0
    data[offset + 100] ^= 0xFF
    bad = tmp_path / "bad.trtrace"
    bad.write_bytes(bytes(data))
    tool = subprocess.run([str(TRTRACE), "verify", str(bad)], capture_output=True, text=True)
    assert tool.returncode == 2
    with trtrace.open(bad) as t:
        rep = t.verify()
        assert not rep["ok"] and rep["corrupt"]
        assert tool.stderr.splitlines()[0] == f"trtrace: corrupt: {rep['issues'][0]['what']}"
        w = next(w for w in t.weights if w.storage == "blob" and w.nbytes > 1000)
        with pytest.raises(trtrace.TraceError) as e:
            w.array()
        assert e.value.kind == "corrupt" and "content does not match its hash (damaged weights)" in str(e.value)
    garbage = tmp_path / "garbage.trtrace"
    garbage.write_bytes(b"GARBAGE!" + bytes(4096))
    info = subprocess.run([str(TRTRACE), "info", str(garbage)], capture_output=True, text=True)
    with pytest.raises(trtrace.TraceError) as e:
        trtrace.open(garbage)
    assert info.stderr.strip() == f"trtrace: {e.value}" and e.value.kind == "corrupt"


def test_replay_rebuilds_the_engines(traces, tmp_path):
    d, raw, _ = traces
    rep = trtrace.replay(raw, output=tmp_path / "r.engine", check=True)
    assert [n["vs_capture"] for n in rep["networks"]] == ["identical", "identical"]
    for i in range(2):
        assert (tmp_path / f"r.engine{i}").read_bytes() == (d / f"app.engine{i}").read_bytes()
    with pytest.raises(trtrace.ReplayError) as e:
        trtrace.replay(tmp_path / "missing.trtrace")
    assert e.value.code == 1 and "cannot open" in str(e.value)


def test_readme_python_block_runs(traces, tmp_path):
    """README "Python API": the block runs as shown, on a capture named m.trtrace in its folder."""
    import re

    d, raw, _ = traces
    text = (ROOT / "README.md").read_text().split("\n### Python API\n", 1)[1]
    block = re.search(r"^```python\n(.*?)^```", text, re.S | re.M).group(1)
    (tmp_path / "m.trtrace").symlink_to(raw)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    p = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert "[(0, True, " in p.stdout and p.stdout.rstrip().endswith("True")
    assert (tmp_path / "m.engine0").is_file() and (tmp_path / "m.engine1").is_file()
