"""Torch-TensorRT-RTX as a front end (issue 24, item 7), on the real library.

torch-tensorrt-rtx 2.14 (.deps/venv-torch, tools/requirements-torch.txt: torch 2.14, TensorRT-RTX
1.6.1) compiles PyTorch models by building each network layer by layer through the tensorrt_rtx
Python API. tests/apps/torch_app.py compiles two torchvision models and one timm model (random
weights) with torch_tensorrt.dynamo.convert_exported_program_to_serialized_trt_engine, in one
process: three networks in one capture. Captured by our shim (`trtrace capture -- python app.py`, the
README's recipe) and by NVIDIA's, each replays to the app's engines.

No GPU is used. Torch-TensorRT-RTX needs one only for device queries (torch.cuda.get_device_capability,
get_device_properties, mem_get_info, ...) and to deserialize the engine it built; the app answers
those for a CPU-only build (its docstring lists each answer). None of them is a network-build call.
torch-tensorrt-rtx 2.14 requires TensorRT-RTX < 1.7, so there is no 1.7 variant of this suite.
"""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import APPS, ASAN_RUNTIME, PLAYER, ROOT, TRTRACE, trt_lib, trtrace

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import nvidia_capture as nv  # noqa: E402

VENV = ROOT / ".deps" / "venv-torch"
PYTHON = VENV / "bin" / "python"
APP = APPS / "torch_app.py"
MODELS = ["resnet18", "mobilenet_v3_small", "timm_vit_tiny"]

pytestmark = [
    pytest.mark.skipif(not PYTHON.exists(), reason=f"{VENV} not installed (tools/setup.sh; TRTRACE_SETUP_TORCH)"),
    # torch's own libraries (several GB, not ours) under the sanitizer runtime: the normal build
    # covers the shim on this app; the sanitizer builds cover it on the other apps.
    pytest.mark.skipif(bool(ASAN_RUNTIME), reason="torch is not run under the sanitizer runtime"),
]


def user_env():
    """A user's environment: venv-torch active, no LD_PRELOAD, no TRT_SHIM_*."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("TRT_SHIM_")}
    env["VIRTUAL_ENV"] = str(VENV)
    env["PATH"] = f"{VENV / 'bin'}:{env['PATH']}"
    return env


def app_args(out):
    return [str(APP), "--out", str(out), *(a for m in MODELS for a in ("--model", m))]


def venv_trt_lib():
    """The libtensorrt_rtx.so.1 venv-torch's bindings load (the app's library)."""
    code = "import os, tensorrt_rtx_libs as l; print(os.path.join(os.path.dirname(l.__file__), 'libtensorrt_rtx.so.1'))"
    return subprocess.run([str(PYTHON), "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def engines(prefix):
    return [pathlib.Path(f"{prefix}{i}").read_bytes() for i in range(len(MODELS))]


def replay(capture, out):
    """tensorrt_player --check with .deps/venv's library (the same 1.6.1 as venv-torch's)."""
    r = subprocess.run(
        [str(PLAYER), "-j", str(capture), "-o", str(out), "--lib", str(trt_lib()), "--check", "--json"],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("torch")


@pytest.fixture(scope="module")
def ours(work):
    """Our capture of the app: `trtrace capture -o t.trtrace -- python torch_app.py ...`."""
    p = subprocess.run(
        [str(TRTRACE), "capture", "-o", "t.trtrace", "--", str(PYTHON), *app_args(work / "app")],
        capture_output=True,
        text=True,
        cwd=work,
        env=user_env(),
    )
    assert p.returncode == 0, p.stdout + p.stderr
    return work / "t.trtrace", p


def test_device_queries_need_a_gpu_and_are_answered_for_a_cpu_only_build():
    """This machine has no GPU: Torch-TensorRT-RTX does not even import without the app's answers
    (it asks the device's compute capability at import). With them it builds (the tests below)."""
    code = "import torch; print(torch.cuda.is_available()); import torch_tensorrt"
    p = subprocess.run([str(PYTHON), "-c", code], capture_output=True, text=True, env=user_env())
    if p.stdout.startswith("True"):
        pytest.skip("a GPU is present: the device queries need no answers here")
    assert p.returncode != 0 and "Found no NVIDIA driver" in p.stderr, p.stdout + p.stderr[-2000:]


def test_our_capture_replays_identically(ours, work):
    trace, p = ours
    summary = p.stderr.splitlines()[-1]
    assert f"{len(MODELS)} networks, {len(MODELS)} builds ({len(MODELS)} ok)" in summary, p.stderr
    assert "libtensorrt_rtx.so.1 1.6.1" in p.stderr, p.stderr  # venv-torch's library, named first
    assert [line.split(":")[0] for line in p.stdout.splitlines() if ": built," in line] == MODELS, p.stdout
    # Layer by layer through the API: the CNNs' convolutions, the ViT's matrix multiplies and norms.
    dump = subprocess.run([str(TRTRACE), "dump", str(trace)], capture_output=True, text=True, check=True).stdout
    for method in (
        "NetworkDefinition::addConvolutionNd",
        "NetworkDefinition::addMatrixMultiply",
        "NetworkDefinition::addNormalization",
        "Builder::buildSerializedNetwork(",
    ):
        assert method in dump, method
    report = replay(trace, work / "replay")
    assert [n["vs_capture"] for n in report["networks"]] == ["identical"] * len(MODELS), report
    assert engines(work / "replay") == engines(work / "app")


@pytest.mark.skipif(not nv.available(), reason=str(nv.unavailable_reason()))
@pytest.mark.parametrize("index", range(len(MODELS)), ids=MODELS)
def test_nvidia_capture_replays_identically(ours, work, index):
    """NVIDIA's shim on the same app (its library: venv-torch's): the player rebuilds the app's
    engine from the JSON+BIN, and from its conversion to a trace. One model per process: with several
    compiles in one process NVIDIA's shim (EP 0.4.0) now and then records the second network's
    createInferBuilder_INTERNAL without its result and none of that network's calls (2 of 9 runs
    here); our shim records all three every time (the test above)."""
    name, tmp = MODELS[index], work / f"nv-{index}"
    tmp.mkdir()
    args = [str(APP), "--out", str(tmp / "app"), "--model", name, "--seed", str(index)]
    json_path, _, p = nv.capture(
        [str(PYTHON), *args], tmp / "nv.json", cwd=tmp, env_extra={"TRT_SHIM_NVINFER_LIB_NAME": venv_trt_lib()}
    )
    assert p.returncode == 0 and json_path.exists(), p.stdout + p.stderr[-2000:]
    app = (tmp / "app").read_bytes()
    assert app == engines(work / "app")[index], "the app built another engine under NVIDIA's shim than under ours"
    report = replay(json_path, tmp / "replay")
    assert len(report["networks"]) == 1 and (tmp / "replay").read_bytes() == app, report
    converted = tmp / "nv.trtrace"  # and through `trtrace convert`, as a trace of ours
    trtrace("convert", json_path, converted)
    assert replay(converted, tmp / "conv")["networks"][0]["size"] == len(app) and (tmp / "conv").read_bytes() == app
