"""Facts about NVIDIA's JSON+BIN capture format (docs/json-bin-layout.md), checked against NVIDIA's
own shim (libtensorrt_shim.so from onnxruntime-ep-nv-tensorrt-rtx-cu13 0.4.0) running the test apps.
Skipped when the shim is not installed. Captures are written under pytest's tmp dirs only."""

import json
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import nvidia_capture as nv  # noqa: E402

APPS = pathlib.Path(__file__).resolve().parent / "apps"
CNN = APPS / "build_cnn.py"

pytestmark = pytest.mark.skipif(not nv.available(), reason=str(nv.unavailable_reason()))


def run(tmp, name, *app_args, env=None):
    d = tmp / name
    d.mkdir(parents=True, exist_ok=True)
    args = [a.replace("{d}", str(d)) if isinstance(a, str) else a for a in app_args]
    json_path, bin_path, proc = nv.capture(args, d / "cap.json", env, cwd=d)
    assert json_path.exists(), f"no capture written:\n{proc.stdout}\n{proc.stderr}"
    return nv.load(json_path), json_path, bin_path, proc


def cnn_weights(seed, variant, fail=False):
    """Regenerates build_cnn.py's weights: same generator, same draw order as populate()."""
    rng = np.random.default_rng(seed + variant)
    hw = 16 + 4 * variant
    k = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    flat = 8 * (hw // 2) * (hw // 2)
    w16 = (rng.standard_normal((flat, 10)) * 0.05).astype(np.float16)
    bias = rng.standard_normal((1, 10)).astype(np.float32)
    return k, b, w16, bias


@pytest.fixture(scope="module")
def tmpd(tmp_path_factory):
    return tmp_path_factory.mktemp("nvcap")


@pytest.fixture(scope="module")
def cnn(tmpd):
    return run(tmpd, "cnn", CNN, "--out", "{d}/e.engine")


@pytest.fixture(scope="module")
def net2(tmpd):
    return run(tmpd, "net2", CNN, "--out", "{d}/e.engine", "--networks", 2)


LIB_VERSION = nv.lib_version()


def weight_args(call):
    return {k: v for k, v in call.items() if isinstance(v, dict) and "id" in v}


# --- top level and call records ---------------------------------------------------------------


def test_top_level_keys(cnn):
    cap, json_path, bin_path, proc = cnn
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(cap) == {"api_calls", "output_bin", "trt_version"}
    assert cap["output_bin"] == "cap.bin"  # a file name beside the JSON, not a path
    assert bin_path.name == "cap.bin" and bin_path.exists()
    assert cap["trt_version"] == LIB_VERSION  # getInferLibVersion() of the library this suite runs


def test_json_text_is_indent4_sorted_keys(cnn):
    _, json_path, _, _ = cnn
    text = json_path.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=4, sort_keys=True, ensure_ascii=False)


def test_messages_on_stdout(cnn):
    _, json_path, bin_path, proc = cnn
    out = proc.stdout.splitlines()
    assert f"Capturing API JSON to {json_path}" in out
    assert f'Capturing API BIN to "{bin_path}"' in out
    assert "Forcing single thread API" in out
    assert "Inlining weights count lower or equal to 8" in out
    assert proc.stderr == ""


def test_call_records(cnn):
    cap = cnn[0]
    calls = cap["api_calls"]
    assert [c["api_index"] for c in calls] == list(range(len(calls)))
    for c in calls:
        assert {"api_index", "class", "function", "object"} <= set(c)
    first = calls[0]
    assert first == {
        "api_index": 0,
        "class": "",
        "function": "createInferBuilder_INTERNAL",
        "object": -1,
        "return": {"object": 0},
        "version": LIB_VERSION,
    }
    assert calls[1]["function"] == "createNetworkV2" and calls[1]["flags"] == 0
    assert calls[1]["return"] == {"object": 1}
    inp = calls[2]
    assert inp["function"] == "addInput" and inp["name"] == "input0"
    assert inp["type"] == 0 and inp["dimensions"] == [1, 3, 16, 16]
    # Base-class methods carry the base class name; getters are recorded, their values are not.
    names = [(c["class"], c["function"]) for c in calls]
    assert ("Layer", "setName") in names and ("Tensor", "setName") in names
    assert ("Tensor", "getType") in names
    assert all("return" not in c for c in calls if c["function"] == "getType")
    # The build call names config and network; its result (IHostMemory) is not recorded.
    last = calls[-1]
    assert last["function"] == "buildSerializedNetwork" and "return" not in last
    assert last["network"] == {"object": 1} and last["config"] == {"object": calls[-2]["return"]["object"]}


def test_conv_kernel_weights_offset_into_bin(cnn):
    cap, json_path, bin_path, _ = cnn
    k, b, w16, bias = cnn_weights(1234, 0)
    conv = nv.calls(cap, "addConvolutionNd")[0]
    kw, bw = conv["kernelWeights"], conv["biasWeights"]
    assert kw == {"count": 216, "id": 0, "offset": 0, "type": 0}
    data = bin_path.read_bytes()
    assert data[kw["offset"] : kw["offset"] + 216 * 4] == k.tobytes()
    # 8 elements <= default threshold 8: inline, as float32 values widened to double
    assert set(bw) == {"count", "id", "inline", "type"} and bw["count"] == 8 and bw["id"] == 1
    assert np.array_equal(np.asarray(bw["inline"], np.float32), b)
    assert [float(v) for v in b] == bw["inline"]
    assert conv["kernelSize"] == [3, 3] and conv["nbOutputMaps"] == 8 and conv["input"] == {"object": 2}


def test_bin_is_headerless_unaligned_concatenation(cnn):
    cap, _, bin_path, _ = cnn
    k, b, w16, bias = cnn_weights(1234, 0)
    consts = nv.calls(cap, "addConstant")
    assert consts[0]["weights"] == {"count": 5120, "id": 2, "offset": 864, "type": 1}  # fp16
    assert consts[1]["weights"] == {"count": 10, "id": 3, "offset": 864 + 10240, "type": 0}
    assert bin_path.read_bytes() == k.tobytes() + w16.tobytes() + bias.tobytes()


# --- several networks -------------------------------------------------------------------------


def test_two_networks_object_ids_and_weight_ids(net2):
    cap, json_path, bin_path, proc = net2
    assert proc.returncode == 0
    calls = cap["api_calls"]
    nets = [c["return"]["object"] for c in nv.calls(cap, "createNetworkV2")]
    assert nets == [1, 2]
    # Object ids: one process-wide counter; every "return" introduces the next id.
    rets = [c["return"]["object"] for c in calls if "return" in c]
    assert rets == list(range(len(rets)))
    # No network key anywhere: the network is the receiving object of NetworkDefinition calls.
    text = json_path.read_text()
    assert "network_id" not in text and "networkId" not in text
    owner = nv.network_of(cap)
    convs = nv.calls(cap, "addConvolutionNd")
    assert [c["object"] for c in convs] == [1, 2]
    # Weight ids restart per network; BIN offsets continue across networks.
    ids = [[w["id"] for c in calls if c["object"] == n for w in weight_args(c).values()] for n in nets]
    assert ids[0] == ids[1] and sorted(ids[0]) == [0, 1, 2, 3]
    data = bin_path.read_bytes()
    expect = b""
    for variant, conv in enumerate(convs):
        k, b, w16, bias = cnn_weights(1234, variant)
        assert data[conv["kernelWeights"]["offset"] :][: k.nbytes] == k.tobytes()
        expect += k.tobytes() + w16.tobytes() + bias.tobytes()
    assert data == expect
    assert convs[1]["kernelWeights"]["offset"] == 11144
    # every tensor/layer maps back to its network through the return chains
    assert owner[convs[1]["return"]["object"]] == 2 and owner[convs[0]["return"]["object"]] == 1
    builds = nv.calls(cap, "buildSerializedNetwork")
    assert [c["network"]["object"] for c in builds] == [1, 2]


def test_flush_modes_write_the_same_final_files(tmpd, net2):
    ref_json, ref_bin = net2[1].read_bytes(), net2[2].read_bytes()
    for var in ("TRT_SHIM_FLUSH_AFTER_EVERY_CALL", "TRT_SHIM_FLUSH_ON_BUILD"):
        cap, json_path, bin_path, proc = run(tmpd, var, CNN, "--out", "{d}/e.engine", "--networks", 2, env={var: "1"})
        assert json_path.read_bytes() == ref_json and bin_path.read_bytes() == ref_bin, var


# --- failing build ----------------------------------------------------------------------------


def test_failing_build_record(tmpd, cnn):
    cap, json_path, bin_path, proc = run(tmpd, "fail", CNN, "--out", "{d}/e.engine", "--fail")
    assert proc.returncode == 1
    assert "broadcast" in proc.stdout
    calls = cap["api_calls"]
    last = calls[-1]
    # Nothing marks the failure: the build call looks exactly like a successful one.
    assert last["function"] == "buildSerializedNetwork" and "return" not in last
    ok_last = cnn[0]["api_calls"][-1]
    assert set(last) == set(ok_last)
    bad = [c for c in nv.calls(cap, "addConstant") if c["dimensions"] == [1, 7]]
    assert len(bad) == 1
    assert bad[0]["weights"] == {"count": 7, "id": 4, "inline": [1.0] * 7, "type": 0}
    assert bin_path.read_bytes() == cnn[2].read_bytes()  # same weights as the good build


# --- weights options --------------------------------------------------------------------------


def test_inline_threshold_zero_moves_bias_to_bin(tmpd):
    cap, _, bin_path, proc = run(
        tmpd, "inl0", CNN, "--out", "{d}/e.engine", env={"TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN": "0"}
    )
    conv = nv.calls(cap, "addConvolutionNd")[0]
    assert conv["biasWeights"] == {"count": 8, "id": 1, "offset": 864, "type": 0}
    assert "Inlining weights" not in proc.stdout  # no message for 0
    assert bin_path.stat().st_size == 11144 + 32


def test_inline_everything_leaves_bin_empty(tmpd):
    cap, json_path, bin_path, _ = run(
        tmpd, "inlbig", CNN, "--out", "{d}/e.engine", env={"TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN": "100000"}
    )
    assert bin_path.exists() and bin_path.stat().st_size == 0
    k, b, w16, bias = cnn_weights(1234, 0)
    fp16 = nv.calls(cap, "addConstant")[0]["weights"]
    assert fp16["type"] == 1 and "offset" not in fp16
    assert np.array_equal(np.asarray(fp16["inline"], np.float16), w16.reshape(-1))
    kw = nv.calls(cap, "addConvolutionNd")[0]["kernelWeights"]
    assert np.array_equal(nv.weights_array(cap, kw, json_path), k.reshape(-1))


def test_random_weights(tmpd):
    cap, _, bin_path, proc = run(
        tmpd, "rnd", CNN, "--out", "{d}/e.engine", env={"TRT_SHIM_MARK_AS_RANDOM_WEIGHTS_GREATER_EQUAL_THAN": "16"}
    )
    assert "Setting random weights for weights with count greater equal than 16" in proc.stdout
    conv = nv.calls(cap, "addConvolutionNd")[0]
    assert conv["kernelWeights"] == {"count": 216, "id": 0, "random": {"seed": 0}, "type": 0}
    bias = nv.calls(cap, "addConstant")[1]["weights"]
    assert bias == {"count": 10, "id": 3, "offset": 0, "type": 0}
    assert bin_path.stat().st_size == 40


def test_bad_threshold_value_falls_back_to_default(tmpd, cnn):
    cap, json_path, _, proc = run(
        tmpd, "bad", CNN, "--out", "{d}/e.engine", env={"TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN": "abc"}
    )
    assert "Inlining weights count lower or equal to 8" in proc.stdout and proc.stderr == ""
    assert json_path.read_bytes() == cnn[1].read_bytes()


# --- pointers, arrays, scalars (a tiny probe app written at test time) --------------------------

PROBE = r"""
import numpy as np, tensorrt_rtx as trt
b = trt.Builder(trt.Logger(trt.Logger.WARNING))
n = b.create_network()
x = n.add_input("x", trt.float32, (-1, 4))
shared = np.arange(16, dtype=np.float32)
c1 = n.add_constant((16,), trt.Weights(shared))
c2 = n.add_constant((16,), trt.Weights(shared))         # same pointer again
c3 = n.add_constant((16,), trt.Weights(shared.copy()))  # same bytes, other pointer
t_a = c1.get_output(0)
t_b = c1.get_output(0)                                  # same tensor again
cat = n.add_concatenation([t_a, c2.get_output(0), c3.get_output(0)])
sh = n.add_shuffle(cat.get_output(0))
sh.first_transpose = trt.Permutation([0])
sh.zero_is_placeholder = True
act = n.add_activation(sh.get_output(0), trt.ActivationType.LEAKY_RELU)
act.alpha = 0.1
n.add_constant((3,), trt.Weights(np.array([1, -2, 1 << 40], np.int64)))
n.add_constant((3,), trt.Weights(np.array([True, False, True])))
n.add_constant((), trt.Weights(np.array([2.0], np.float32)))
n.add_convolution_nd(x, 2, (1, 1), trt.Weights(np.ones((2, 1, 1, 1), np.float32)), trt.Weights())
n.add_einsum([t_a, t_a], "i,i->i")
"""


@pytest.fixture(scope="module")
def probe(tmpd):
    app = tmpd / "probe_app.py"
    app.write_text(PROBE)
    return run(tmpd, "probe", app)


def test_same_pointer_stored_once(probe):
    cap, json_path, bin_path, proc = probe
    assert proc.returncode == 0, proc.stderr
    w = [c["weights"] for c in nv.calls(cap, "addConstant")][:3]
    assert w[0] == {"count": 16, "id": 0, "offset": 0, "type": 0}
    assert w[1] == {"id": 0}  # reference only
    assert w[2] == {"count": 16, "id": 1, "offset": 64, "type": 0}  # no content dedup
    assert bin_path.read_bytes() == 2 * np.arange(16, dtype=np.float32).tobytes()


def test_known_object_is_returned_without_return_key(probe):
    cap = probe[0]
    c1 = nv.calls(cap, "addConstant")[0]["return"]["object"]
    gets = [c for c in nv.calls(cap, "getOutput") if c["object"] == c1]
    assert len(gets) == 2 and gets[0]["index"] == gets[1]["index"] == 0
    assert "return" in gets[0] and "return" not in gets[1]
    # ... and the concatenation names that tensor by the id of the first return
    assert nv.calls(cap, "addConcatenation")[0]["inputs"][0] == gets[0]["return"]


def test_argument_encodings(probe):
    cap = probe[0]
    assert nv.calls(cap, "addInput")[0]["dimensions"] == [-1, 4]
    cat = nv.calls(cap, "addConcatenation")[0]
    assert [set(t) for t in cat["inputs"]] == [{"object"}] * 3
    assert nv.calls(cap, "setFirstTranspose")[0]["permutation"] == [0, 0, 0, 0, 0, 0, 0, 0]
    assert nv.calls(cap, "setZeroIsPlaceholder")[0]["zeroIsPlaceholder"] is True
    assert nv.calls(cap, "setAlpha")[0]["alpha"] == float(np.float32(0.1))
    assert nv.calls(cap, "addActivation")[0]["type"] == 3  # enums are integers
    consts = nv.calls(cap, "addConstant")
    assert consts[3]["weights"] == {"count": 3, "id": 2, "inline": [1, -2, 1 << 40], "type": 8}
    assert consts[4]["weights"] == {"count": 3, "id": 3, "inline": [1, 0, 1], "type": 4}
    assert "dimensions" not in consts[5]  # empty Dims: key omitted
    conv = nv.calls(cap, "addConvolutionNd")[0]
    assert conv["biasWeights"] == {"count": 0, "id": -1, "type": 0}  # empty (null) Weights
    ein = nv.calls(cap, "addEinsum")[0]
    assert ein["equation"] == "i,i->i" and len(ein["inputs"]) == 2
