"""trtrace export --python (issue 17 item 5), on captures of the real library.

Every test app (the Python ones of tests/apps/ as tests/test_capture_replay.py captures them, and
the native C++ app in the drop-in layout) is captured, exported, and the exported build.py, run by
plain Python without trtrace, rebuilds engines byte-identical to the player's from the same trace.
A call the bindings cannot express stops the export with one line naming the call (exit 5).
"""

import os
import subprocess
import sys

import pytest

from conftest import ROOT, SHIM, capture, cpp_app, drop_in_dir, play, trtrace
from test_capture_replay import APP_CASES, engines

# python_forms: arrays whose count the bindings drop, Permutation properties, scales (issue 24);
# streamed: builds through an IStreamWriter (the script's own writer fills the engine file)
CASES = dict(
    APP_CASES,
    squeeze=("squeeze_app.py", []),
    python_forms=("python_forms_app.py", []),
    streamed=("build_to_stream.py", ["--networks", 2]),
)
CORPUS = ROOT / ".deps" / "onnx-1.17-data"
ONNX_APP = ROOT / "tests" / "corpus" / "onnx_app.py"


def export_and_rebuild(trace, tmp, networks):
    out = tmp / "py"
    p = trtrace("export", trace, "--python", out)
    assert p.stdout.startswith(f"{out}/build.py: "), p.stdout
    run = subprocess.run(
        [sys.executable, str(out / "build.py"), "--out", str(tmp / "py.engine")], capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    play(trace, tmp / "player.engine")
    for ours, theirs in zip(engines(tmp / "py.engine", networks), engines(tmp / "player.engine", networks)):
        assert ours.read_bytes() == theirs.read_bytes(), ours
    return out


def networks_of(args):
    return int(args[args.index("--networks") + 1]) if "--networks" in args else 1


@pytest.mark.parametrize("case", sorted(CASES))
def test_exported_script_rebuilds_the_same_engines(tmp, case):
    app, args = CASES[case]
    t = tmp / "app.trtrace"
    if app == "squeeze_app.py":
        capture(app, t, tmp / "app.engine")
    else:
        capture(app, t, "--out", tmp / "app.engine", *args)
    out = export_and_rebuild(t, tmp, networks_of(args))
    text = (out / "build.py").read_text()
    assert "import tensorrt_rtx as trt" in text and "trtrace" not in text.split('"""', 2)[2]  # standalone


def test_exported_script_of_the_cpp_app(tmp):
    _, env = drop_in_dir(tmp)
    t = tmp / "cpp.trtrace"
    proc = cpp_app(tmp / "app.engine", env=dict(env, TRT_SHIM_OUTPUT_FILE=str(t)))
    assert proc.returncode == 0, proc.stderr
    out = export_and_rebuild(t, tmp, 1)
    assert "del network_definition_0" in (out / "build.py").read_text()  # the app's deletes, in order


def test_export_refuses_a_call_it_cannot_write(tmp):
    """Weights marked random at capture have no values in the trace: no script can hold them."""
    t = tmp / "r.trtrace"
    capture(
        "build_cnn.py", t, "--out", tmp / "r.engine", env={"TRT_SHIM_MARK_AS_RANDOM_WEIGHTS_GREATER_EQUAL_THAN": "9"}
    )
    p = trtrace("export", t, "--python", tmp / "py", check=False)
    assert p.returncode == 5 and p.stdout == "", p.stdout + p.stderr
    err = p.stderr.splitlines()
    assert (
        len(err) == 1
        and err[0].startswith(f"trtrace: {t}: call #")
        and "(NetworkDefinition::addConvolutionNd): "
        "cannot be written with the tensorrt_rtx Python API (weights the capture marked random"
        in err[0]
    ), p.stderr
    assert not (tmp / "py").exists()


def test_export_help():
    p = trtrace("export", "--help")
    assert "--python" in p.stdout and "--json" in p.stdout


def test_a_failed_streamed_build_fails_the_same_way(tmp):
    t = tmp / "s.trtrace"
    capture("build_to_stream.py", t, "--out", tmp / "s.engine", "--fail", check=False)
    trtrace("export", t, "--python", tmp / "py")
    run = subprocess.run(
        [sys.executable, str(tmp / "py" / "build.py"), "--out", str(tmp / "py.engine")], capture_output=True, text=True
    )
    assert run.returncode == 1 and "network 0: build failed" in run.stderr, run.stdout + run.stderr
    assert not (tmp / "py.engine").exists()


def test_optimization_profile_shapes_are_one_set_shape(tmp):
    """OptimizationProfile::setDimensions for kMIN, kOPT and kMAX of one input: one set_shape."""
    t = tmp / "p.trtrace"
    models = tmp / "models"
    subprocess.run([sys.executable, str(ROOT / "tests" / "corpus" / "exports.py"), str(models)], check=True)
    app = onnx_capture(models / "gpt2_tiny_dynamic.onnx", t, tmp / "p.engine")
    assert app.returncode == 0, app.stdout + app.stderr
    text = (export_and_rebuild(t, tmp, 1) / "build.py").read_text()
    shapes = [l for l in text.splitlines() if ".set_shape(" in l]
    assert shapes and all(l.count("(") == 4 for l in shapes), shapes  # set_shape("ids", (min), (opt), (max))


def onnx_capture(model, trace, engine):
    """tests/corpus/onnx_app.py (the ONNX parser on the CPU) under our shim; the process."""
    env = dict(os.environ, LD_PRELOAD=str(SHIM), TRT_SHIM_OUTPUT_FILE=str(trace))
    return subprocess.run(
        [sys.executable, str(ONNX_APP), str(model), "--out", str(engine)], capture_output=True, text=True, env=env
    )


# Builds that fail after calls only reading something back: in the library such a read can change
# state (Tensor::getDimensions runs shape inference; the ONNX parser of 1.7 queries the builder's
# plugin registry), so build.py must make the same reads to fail the same way.
@pytest.mark.parametrize("net", ["node/test_range_float_type_positive_delta", "node/test_dft_axis"])
def test_reads_back_are_made_so_a_failure_reproduces(tmp, net):
    model = CORPUS / net / "model.onnx"
    if not model.exists():
        pytest.skip(f"{model}: the ONNX corpus is not installed (tools/setup.sh)")
    t = tmp / "n.trtrace"
    app = onnx_capture(model, t, tmp / "n.engine")
    assert app.returncode == 2, app.stdout + app.stderr  # onnx_app.py: the build failed
    dump = trtrace("dump", t).stdout
    want = [l for l in dump.splitlines() if "[FAILED]" in l][-1].split("Error Code", 1)[1].split(")")[0]
    trtrace("export", t, "--python", tmp / "py")
    run = subprocess.run(
        [sys.executable, str(tmp / "py" / "build.py"), "--out", str(tmp / "py.engine")], capture_output=True, text=True
    )
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stdout + run.stderr
    assert want in run.stdout + run.stderr, (want, run.stdout + run.stderr)
