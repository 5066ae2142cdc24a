"""trtrace diff, strip and extract (issue 17 items 2-4), on captures of the real library.

diff: a trace and its NVIDIA-JSON round trip are equivalent (exit 0); one changed attribute is
reported at its call (seq, API, argument, both values) and as a changed layer; changed weights by
hash; added layers. strip: the output replays (same structure, other numbers), keeps aliasing, and
holds no 16-byte window of any original (floating) weight; real ONNX networks whose shapes come from
integer constants still replay, those being kept. extract: each network of a two-network capture
replays alone to the app's engine of that network, with only what it needs.
"""

import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import ROOT, SHIM, TRTRACE, capture, play, trtrace

# A one-layer network whose LeakyReLU alpha is the app's argument: two captures differ in one call.
ALPHA_APP = """
import sys
import tensorrt_rtx as trt
logger = trt.Logger(trt.Logger.ERROR)
builder = trt.Builder(logger)
net = builder.create_network(0)
x = net.add_input("x", trt.float32, (1, 4))
act = net.add_activation(x, trt.ActivationType.LEAKY_RELU)
act.alpha = float(sys.argv[2])
net.mark_output(act.get_output(0))
engine = builder.build_serialized_network(net, builder.create_builder_config())
open(sys.argv[1], "wb").write(bytes(engine))
"""


def diff(a, b, *args):
    return subprocess.run([str(TRTRACE), "diff", str(a), str(b), *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def two_nets(tmp_path_factory):
    """A two-network capture of build_cnn.py and the app's engines (prefix)."""
    d = tmp_path_factory.mktemp("two")
    capture("build_cnn.py", d / "t.trtrace", "--out", d / "app.engine", "--networks", 2)
    return d, d / "t.trtrace"


def test_help_of_each_command():
    for cmd in ("diff", "strip", "extract"):
        p = trtrace(cmd, "--help")
        assert "Usage:" in p.stdout and "--json" in p.stdout, p.stdout


def test_diff_of_the_nvidia_json_round_trip_is_equivalent(two_nets):
    d, t = two_nets
    trtrace("convert", t, d / "t.json")
    trtrace("convert", d / "t.json", d / "back.trtrace")
    p = diff(t, d / "back.trtrace")
    assert p.returncode == 0 and p.stdout.startswith("equivalent: "), p.stdout + p.stderr
    assert json.loads(diff(t, d / "back.trtrace", "--json").stdout)["equivalent"] is True


def test_diff_names_the_one_changed_attribute(tmp_path):
    app = tmp_path / "alpha.py"
    app.write_text(ALPHA_APP)
    for name, alpha in (("a", "0.25"), ("b", "0.5")):
        e = {"LD_PRELOAD": str(SHIM), "TRT_SHIM_OUTPUT_FILE": str(tmp_path / f"{name}.trtrace")}
        subprocess.run(
            [sys.executable, str(app), str(tmp_path / f"{name}.engine"), alpha],
            check=True,
            env={**__import__("os").environ, **e},
        )
    p = diff(tmp_path / "a.trtrace", tmp_path / "b.trtrace")
    assert p.returncode == 1, p.stdout + p.stderr
    first = next(line for line in p.stdout.splitlines() if line.startswith("first divergent call: "))
    assert "ActivationLayer::setAlpha: alpha: F32 0.25 vs F32 0.5" in first, p.stdout
    assert "network 0: 1 layers vs 1: 0 added, 0 removed, 1 changed" in p.stdout, p.stdout
    j = json.loads(diff(tmp_path / "a.trtrace", tmp_path / "b.trtrace", "--json").stdout)
    assert j["equivalent"] is False and len(j["differences"]) == 1
    d = j["differences"][0]
    assert d["seq"][0] == d["seq"][1] and d["argument"] == "alpha" and (d["a"], d["b"]) == ("F32 0.25", "F32 0.5")
    net = next(n for n in j["networks"] if n["network"] == "0")
    assert [c["type"] for c in net["changed"]] == ["ActivationLayer"] and not net["changed"][0]["weights_changed"]
    assert net["changed"][0]["removed"] == ["setAlpha(0.25)"] and net["changed"][0]["added"] == ["setAlpha(0.5)"]


def test_diff_reports_changed_weights_and_added_layers(two_nets, tmp_path):
    d, t = two_nets
    capture("build_cnn.py", tmp_path / "seed.trtrace", "--out", tmp_path / "s.engine", "--networks", 2, "--seed", 7)
    j = json.loads(diff(t, tmp_path / "seed.trtrace", "--json").stdout)
    for n in ("0", "1"):
        net = next(x for x in j["networks"] if x["network"] == n)
        assert net["added"] == net["removed"] == []
        assert {c["type"] for c in net["changed"]} == {"ConvolutionLayer", "ConstantLayer"}
        assert all(c["weights_changed"] for c in net["changed"])
    capture(
        "build_cnn.py",
        tmp_path / "fail.trtrace",
        "--out",
        tmp_path / "f.engine",
        "--networks",
        2,
        "--fail",
        check=False,
    )
    p = diff(t, tmp_path / "fail.trtrace")
    assert p.returncode == 1
    assert p.stdout.count("2 added, 0 removed") == 2, p.stdout
    assert "+ layer B:L9 ConstantLayer" in p.stdout and "+ layer B:L10 ElementWiseLayer" in p.stdout, p.stdout


def test_diff_cannot_compare_is_exit_2(two_nets, tmp_path):
    d, t = two_nets
    p = diff(t, tmp_path / "missing.trtrace")
    assert (
        p.returncode == 2
        and p.stderr.strip() == f"trtrace: {tmp_path / 'missing.trtrace'}: cannot open (No such file or directory)"
    )


def windows(data, n=16):
    """Hashes of every n-byte window of data that is not one repeated byte (those say nothing)."""
    return {hash(data[i : i + n]) for i in range(len(data) - n + 1) if data[i : i + n].count(data[i]) != n}


def found(windows_of_weights, data, n=16):
    return sum(1 for i in range(len(data) - n + 1) if hash(data[i : i + n]) in windows_of_weights)


@pytest.mark.parametrize("app,args", [("build_cnn.py", ["--networks", "2"]), ("build_aliased_weights.py", [])])
def test_strip_replays_keeps_aliasing_and_no_weight_survives(tmp_path, app, args):
    t, out = tmp_path / "t.trtrace", tmp_path / "s.trtrace"
    # Every weight a blob, so NVIDIA's BIN (trtrace convert) holds all original weight bytes.
    capture(app, t, "--out", tmp_path / "app.engine", *args, env={"TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN": "0"})
    t2 = tmp_path / "t2.trtrace"  # and the same capture with inline weights, for the call log path
    capture(app, t2, "--out", tmp_path / "app2.engine", *args)
    trtrace("convert", "--all-calls", t, tmp_path / "w.json")
    weights = windows((tmp_path / "w.bin").read_bytes())
    for src in (t, t2):
        out.unlink(missing_ok=True)
        r = trtrace("strip", src, "-o", out, "--json")
        rep = json.loads(r.stdout)
        assert rep["replaced"] > 0 and rep["kept"] == 0
        # Stored raw (blobs and call log), every byte of the output is in plain sight.
        for name, trace in (("original", src), ("stripped", out)):
            raw = tmp_path / f"{name}.raw.trtrace"
            raw.unlink(missing_ok=True)
            trtrace("rewrite", trace, raw, "--raw", "--log-level", "0")
            hits = found(weights, raw.read_bytes())
            # The scan finds them in the original (unless all its weights are one repeated byte: zeros).
            assert (hits > 0 or not weights) if name == "original" else (hits == 0), (name, hits)
        p = play(out, tmp_path / "s.engine", "--check", check=False)
        assert p.returncode in (0, 4), p.stdout + p.stderr
        # Same structure: every engine has the size of the app's (docs: strip).
        for f in sorted(tmp_path.glob("app.engine*")):
            assert (tmp_path / f.name.replace("app", "s")).stat().st_size == f.stat().st_size, f.name
        # Aliasing kept: the diff reports contents only, and maps equal contents to equal contents.
        j = json.loads(diff(src, out, "--json").stdout)
        assert j["differences"] and not any("aliasing" in x["b"] for x in j["differences"])
        assert all(x["api"] != "(end)" and "eights" in x["a"] for x in j["differences"])


def test_strip_keep_below_and_zeros(two_nets, tmp_path):
    d, t = two_nets
    r = json.loads(trtrace("strip", t, "-o", tmp_path / "k.trtrace", "--keep-below", "100", "--zeros", "--json").stdout)
    assert r["kept"] > 0 and r["replaced"] > 0 and r["kept_bytes"] < 100 * r["kept"]
    p = play(tmp_path / "k.trtrace", tmp_path / "k.engine", "--check", check=False)
    assert p.returncode in (0, 4), p.stdout + p.stderr


# Real ONNX networks (the corpus's onnx 1.17 data) whose builds compute shapes from INT32/INT64
# constants: the reshape targets of a Conv1d, of a BatchNorm1d and of squeezenet's flatten.
STRIP_NETWORKS = (
    "pytorch-converted/test_Conv1d/model.onnx",
    "pytorch-converted/test_BatchNorm1d_3d_input_eval/model.onnx",
    "light/light_squeezenet.onnx",
)
LEARNED_TYPES = {0, 1, 2, 6, 7, 9, 10, 11}  # DataType: FLOAT HALF INT8 FP8 BF16 INT4 FP4 E8M0
WEIGHTS_TYPE = re.compile(r"^Weights\w+ weights\[type (\d+) ")


@pytest.mark.parametrize("model", STRIP_NETWORKS)
def test_strip_keeps_integer_weights_so_real_networks_replay(tmp_path, model):
    """strip replaces the learned weights (floating and quantized types) and keeps integer and bool
    ones, the shapes, axes and indices the build depends on (docs: strip): the stripped capture of
    each network builds. --all-types replaces those too, and the build then fails."""
    path = pathlib.Path(os.environ.get("TRTRACE_ONNX_DATA") or ROOT / ".deps" / "onnx-1.17-data") / model
    if not path.is_file():
        pytest.skip(f"{path}: no onnx backend test data (tools/setup.sh could not fetch onnx==1.17.0)")
    t, out = tmp_path / "t.trtrace", tmp_path / "s.trtrace"
    capture("../corpus/onnx_app.py", t, path, "--out", tmp_path / "app.engine")
    rep = json.loads(trtrace("strip", t, "-o", out, "--json").stdout)
    assert rep["replaced"] > 0 and rep["kept_integer"] > 0 and rep["kept"] == 0, rep
    p = play(out, tmp_path / "s.engine", "--check", check=False)
    assert p.returncode in (0, 4), p.stdout + p.stderr
    # Only learned weights changed: every difference is one of their values.
    changed = [WEIGHTS_TYPE.match(x["a"]) for x in json.loads(diff(t, out, "--json").stdout)["differences"]]
    assert changed and all(m and int(m.group(1)) in LEARNED_TYPES for m in changed), changed
    all_types = tmp_path / "a.trtrace"
    rep = json.loads(trtrace("strip", t, "-o", all_types, "--all-types", "--json").stdout)
    assert rep["kept_integer"] == 0 and rep["replaced"] > 0, rep
    p = play(all_types, tmp_path / "a.engine", check=False)
    assert p.returncode == 2 and "the build failed, but it succeeded at capture" in p.stderr, p.stdout + p.stderr


@pytest.mark.parametrize("network", [0, 1])
def test_extract_each_network_replays_to_its_engine(two_nets, tmp_path, network):
    d, t = two_nets
    out = tmp_path / "n.trtrace"
    r = json.loads(trtrace("extract", t, "--network", network, "-o", out, "--json").stdout)
    assert r["network"] == network and 0 < r["calls"] < r["of"]
    play(out, tmp_path / "n.engine")
    assert (tmp_path / "n.engine").read_bytes() == (d / f"app.engine{network}").read_bytes()
    # Only what that network needs: its calls (as many as in IN), one config, one build, its blobs.
    info = json.loads(trtrace("info", out, "--json").stdout)
    orig = json.loads(trtrace("info", t, "--json").stdout)
    assert info["networks"] == {"0": orig["networks"][str(network)]}, info
    dump = trtrace("dump", out).stdout
    assert dump.count("Builder::createBuilderConfig") == 1 and dump.count("buildSerializedNetwork") == 1
    assert r["blobs"] == 3 and r["blobs"] < orig["weights"]["unique_blobs"], (r, orig["weights"])


def test_extract_of_a_network_it_does_not_have(two_nets, tmp_path):
    d, t = two_nets
    p = trtrace("extract", t, "--network", 2, "-o", tmp_path / "x.trtrace", check=False)
    assert p.returncode == 1 and p.stderr.strip() == f"trtrace: --network 2: {t} has networks 0 to 1"
    assert not (tmp_path / "x.trtrace").exists()
