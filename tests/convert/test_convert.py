"""NVIDIA JSON+BIN <-> trace conversion (issue #7), against the real TensorRT-RTX library.

1. NVIDIA's shim captures each test app -> `trtrace convert` -> tensorrt_player: the engines are
   byte-identical to the app's (also with the JSON given to the player directly).
2. Our trace -> JSON+BIN -> trace keeps every call and every blob hash (`trtrace diff` is the oracle).
3. Golden: our JSON+BIN of an app equals NVIDIA's JSON+BIN of the same app once what legitimately
   varies is masked (the BIN's file name; random-weights seeds) -- docs/json-bin-layout.md §15.
4. Bad input: one clear error line, non-zero exit, nothing left behind.
Skips what needs NVIDIA's shim when it is not installed. NVIDIA's output lives in pytest's tmp only.
"""

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(os.environ.get("TRTRACE_ROOT", pathlib.Path(__file__).resolve().parents[2]))
BUILD = pathlib.Path(os.environ.get("TRTRACE_BUILD", ROOT / "build"))
BIN = pathlib.Path(os.environ.get("TRTRACE_BIN", BUILD / "bin"))
APPS = ROOT / "tests" / "apps"
sys.path.insert(0, str(ROOT / "tests"))
import nvidia_capture as nv  # noqa: E402
from conftest import assert_same_engines  # noqa: E402

TRTRACE = BIN / "trtrace"
PLAYER = BIN / "tensorrt_player"
SHIM = BUILD / "lib" / "libtensorrt_shim.so"

# name -> (app, args, extra capture environment)
APPS_UNDER_TEST = {
    "cnn": ("build_cnn.py", [], {}),
    "onnx": ("build_onnx.py", [], {}),
    "multi": ("build_cnn.py", ["--networks", "2"], {}),
    "threads": ("build_cnn.py", ["--networks", "2", "--threads", "2"], {}),
    "inline_all": ("build_cnn.py", [], {"TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN": "100000"}),
    "bin_only": ("build_cnn.py", ["--networks", "2"], {"TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN": "0"}),
    # equal bytes behind distinct pointers (issue 12, class 2): ids are per pointer in NVIDIA's JSON
    "aliased": ("build_aliased_weights.py", [], {}),
    "nonfinite": ("build_cnn.py", ["--nonfinite"], {}),
}
REPLAYABLE = [
    "cnn",
    "onnx",
    "multi",
    "threads",
    "inline_all",
    "bin_only",
    "aliased",
]  # nonfinite: NVIDIA's JSON loses +-inf
# threads: interleaving differs per run; nonfinite: ours keeps NaN/+-inf weights in the BIN where
# NVIDIA writes null inline (test_nonfinite.py)
GOLDEN = ["cnn", "onnx", "multi", "inline_all", "bin_only"]


def trt_lib():
    return nv.setting("TRTRACE_TRT_LIB")


def run(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def engine_files(prefix):
    """The engine files an app or the player wrote for output `prefix` (the prefix itself, or it
    followed by a network index), sorted by name."""
    p = pathlib.Path(prefix)
    return [f for f in sorted(p.parent.glob(p.name + "*")) if f.name == p.name or f.name[len(p.name) :].isdigit()]


def engines(prefix):
    """{suffix: bytes} of engine_files(prefix)."""
    return {f.name[len(pathlib.Path(prefix).name) :]: f.read_bytes() for f in engine_files(prefix)}


@pytest.fixture(scope="module")
def nvidia(tmp_path_factory):
    """name -> (json path, app engine prefix): NVIDIA's capture of each app, made once."""
    reason = nv.unavailable_reason()
    if reason:
        pytest.skip(reason)
    base = tmp_path_factory.mktemp("nvidia")
    caps = {}
    for name, (app, args, env) in APPS_UNDER_TEST.items():
        d = base / name
        d.mkdir()
        eng = d / "app.engine"
        js, binp, proc = nv.capture([APPS / app, "--out", eng, *args], d / "cap.json", env_extra=env, cwd=d)
        assert proc.returncode == 0, f"{name}: app failed under NVIDIA's shim:\n{proc.stdout}\n{proc.stderr}"
        assert js.exists() and binp.exists(), f"{name}: NVIDIA's shim wrote no capture"
        caps[name] = (js, eng)
    return caps


def our_capture(tmp, name):
    """Our shim's trace of an app (same TRT_SHIM_* settings as the NVIDIA capture)."""
    app, args, env = APPS_UNDER_TEST[name]
    trace = tmp / f"{name}.trtrace"
    e = dict(os.environ, LD_PRELOAD=str(SHIM), TRT_SHIM_OUTPUT_FILE=str(trace), **env)
    proc = run([sys.executable, APPS / app, "--out", tmp / f"{name}.app.engine", *args], env=e)
    assert proc.returncode == 0, proc.stderr
    return trace


# ---- 1. NVIDIA capture -> trace -> player: the app's engine, byte for byte -----------------------
@pytest.mark.parametrize("name", REPLAYABLE)
def test_nvidia_capture_replays_identical(nvidia, tmp_path, name):
    js, app_engine = nvidia[name]
    assert engine_files(app_engine), "the app wrote no engine"
    trace = tmp_path / "conv.trtrace"
    r = run([TRTRACE, "convert", js, trace])
    assert r.returncode == 0, r.stderr
    assert run([TRTRACE, "verify", trace]).returncode == 0
    out = tmp_path / "replay.engine"
    p = run([PLAYER, "-j", trace, "-o", out, "--lib", trt_lib(), "-q"])
    assert p.returncode == 0, p.stdout + p.stderr
    assert engines(out).keys() == engines(app_engine).keys()  # the same names (one engine: no index)
    # A threaded app numbers its engines by thread, a trace its networks in creation order.
    assert_same_engines(engine_files(out), engine_files(app_engine), threaded=name == "threads")


@pytest.mark.parametrize("name", ["cnn", "multi"])
def test_player_reads_nvidia_json_directly(nvidia, tmp_path, name):
    """Issue 15: the player reads NVIDIA JSON straight into replay: its calls become a log in memory
    and its weights stay in the mapped BIN. Nothing is written to disk on the way: with $TMPDIR a
    folder that does not exist (where the old temporary trace could not be made) the replay works,
    and, on a folder that exists, leaves nothing there."""
    js, app_engine = nvidia[name]
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    for where in (tmpdir, tmp_path / "no-such-folder"):
        out = tmp_path / "replay.engine"
        p = run([PLAYER, "-j", js, "-o", out, "--lib", trt_lib(), "-q"], env=dict(os.environ, TMPDIR=str(where)))
        assert p.returncode == 0, p.stdout + p.stderr
        assert engines(out) == engines(app_engine)
    assert list(tmpdir.iterdir()) == [], "the player wrote into $TMPDIR"


def test_failing_build_is_a_reproduced_failure(nvidia, tmp_path):
    """--fail: NVIDIA's JSON does not record build outcomes. The converted build carries none, and
    the player takes the replay's failure as the app's: exit 3 and the library's errors, exactly as
    for our own trace of the same app (issue 12, class 4), never a divergence (2)."""
    reason = nv.unavailable_reason()
    d = tmp_path / "fail"
    d.mkdir()
    args = [APPS / "build_cnn.py", "--out", d / "app.engine", "--fail"]
    js, _, proc = nv.capture(args, d / "cap.json", cwd=d)
    assert proc.returncode != 0 and js.exists(), reason
    ours = tmp_path / "ours.trtrace"
    app = run([sys.executable, *args], env=dict(os.environ, LD_PRELOAD=str(SHIM), TRT_SHIM_OUTPUT_FILE=str(ours)))
    assert app.returncode != 0 and ours.exists(), app.stderr
    own = run([PLAYER, ours, "-o", tmp_path / "own.engine", "--lib", trt_lib(), "-q"])
    assert own.returncode == 3, own.stdout + own.stderr
    out = tmp_path / "replay.engine"
    for cap in (js, tmp_path / "conv.trtrace"):
        if cap.suffix == ".trtrace":
            assert run([TRTRACE, "convert", js, cap]).returncode == 0
        p = run([PLAYER, "-j", cap, "-o", out, "--lib", trt_lib(), "-q"])
        assert p.returncode == own.returncode, p.stdout + p.stderr
        assert "divergence" not in p.stderr, p.stderr
        assert "network 0: build failed (outcome not recorded in the capture: the replay's is taken" in p.stdout, (
            p.stdout
        )
        assert not engines(out)


# ---- 2. trace -> JSON+BIN -> trace ---------------------------------------------------------------
@pytest.mark.parametrize("name", ["cnn", "onnx", "multi", "threads", "inline_all", "bin_only", "aliased"])
def test_roundtrip_keeps_calls_and_blobs(tmp_path, name):
    trace = our_capture(tmp_path, name)
    # --all-calls: every call (destructors, IHostMemory calls too) goes through the JSON.
    js, back = tmp_path / "all.json", tmp_path / "all.trtrace"
    r = run([TRTRACE, "convert", "--all-calls", trace, js])
    assert r.returncode == 0, r.stderr
    r = run([TRTRACE, "convert", js, back])
    assert r.returncode == 0, r.stderr
    d = run([TRTRACE, "diff", "--all-calls", trace, back])
    assert d.returncode == 0, d.stdout + d.stderr
    # Default (NVIDIA's subset): every call NVIDIA's shim records is kept, identically.
    js2, back2 = tmp_path / "nv.json", tmp_path / "nv.trtrace"
    assert run([TRTRACE, "convert", trace, js2]).returncode == 0
    assert run([TRTRACE, "convert", js2, back2]).returncode == 0
    d = run([TRTRACE, "diff", trace, back2])  # leaves out the calls NVIDIA does not record
    assert d.returncode == 0, d.stdout + d.stderr
    # and the round-tripped trace still builds the app's engine(s)
    out = tmp_path / "replay.engine"
    p = run([PLAYER, "-j", back2, "-o", out, "--lib", trt_lib(), "-q"])
    assert p.returncode == 0, p.stdout + p.stderr
    app = tmp_path / f"{name}.app.engine"
    assert engines(out).keys() == engines(app).keys()
    assert_same_engines(engine_files(out), engine_files(app), threaded=name == "threads")


def test_trace_to_json_text_is_json_dumps(tmp_path):
    """Our writer's text is exactly Python's json.dumps(indent=4, sort_keys=True, ensure_ascii=False)."""
    trace = our_capture(tmp_path, "onnx")
    js = tmp_path / "x.json"
    assert run([TRTRACE, "convert", "--all-calls", trace, js]).returncode == 0
    text = js.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=4, sort_keys=True, ensure_ascii=False)
    doc = json.loads(text)
    assert sorted(doc) == ["api_calls", "output_bin", "trt_version"]
    assert doc["output_bin"] == "x.bin" and doc["trt_version"] == nv.lib_version()
    assert [c["api_index"] for c in doc["api_calls"]] == list(range(len(doc["api_calls"])))


def nulls(doc):
    """(api_index, argument, element) of every null inline weight value and null argument."""
    out = []
    for c in doc["api_calls"]:
        for k, v in c.items():
            if v is None:
                out.append((c["api_index"], k, None))
            elif isinstance(v, dict) and isinstance(v.get("inline"), list):
                out += [(c["api_index"], k, i) for i, x in enumerate(v["inline"]) if x is None]
    return out


def check_null_conversion(js, tmp_path):
    """JSON with nulls -> trace: one warning line naming the first null and the count; the nulls
    are NaN in the trace (written back exactly: in the BIN, no null); the trace replays."""
    want = nulls(json.loads(js.read_text()))
    assert len(want) == 3, want  # +inf fp32, -inf fp16, NaN
    trace = tmp_path / "nf.trtrace"
    r = run([TRTRACE, "convert", js, trace])
    assert r.returncode == 0, r.stderr
    warn = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert len(warn) == 1 and "3 null number(s)" in warn[0] and "converted to NaN" in warn[0], r.stderr
    i = want[0][0]
    assert f'api_calls[{i}] (api_index {i}) NetworkDefinition::addConstant argument "weights".inline[0]' in warn[0], (
        warn
    )
    back = tmp_path / "back.json"
    assert run([TRTRACE, "convert", trace, back]).returncode == 0
    doc = json.loads(back.read_text())
    assert nulls(doc) == []
    for api_index, key, _ in want:
        w = doc["api_calls"][api_index][key]
        assert np.isnan(nv.weights_array(doc, w, back)).any(), w
    p = run([PLAYER, trace, "-o", tmp_path / "nf.engine", "--lib", trt_lib(), "-q"])
    assert p.returncode == 0, p.stdout + p.stderr


def test_null_numbers_of_a_json_convert_to_nan(tmp_path):
    """A JSON holding null numbers (NVIDIA's non-finite values; ours keeps them in the BIN, issue 24)
    converts with one warning line, never a refusal (issue 12, class 4)."""
    trace = our_capture(tmp_path, "nonfinite")
    js = tmp_path / "ours.json"
    assert run([TRTRACE, "convert", trace, js]).returncode == 0
    assert nulls(json.loads(js.read_text())) == []
    doc = json.loads(js.read_text())  # NVIDIA's form of the same weights: null inline
    for c in doc["api_calls"]:
        w = c.get("weights")
        if isinstance(w, dict) and "offset" in w and w["count"] <= 8:
            vals = nv.weights_array(doc, w, js)
            if not np.isfinite(vals.astype(np.float64)).all():
                w.pop("offset")
                w["inline"] = [None if not np.isfinite(x) else float(x) for x in vals.astype(np.float64)]
    nulled = tmp_path / "nulled.json"
    nulled.write_text(json.dumps(doc, indent=4, sort_keys=True))  # its BIN: ours.bin, beside it
    check_null_conversion(nulled, tmp_path)


def test_null_numbers_of_nvidia_json_convert_to_nan(nvidia, tmp_path):
    """NVIDIA's capture of the same app has the nulls in the same places; it converts and replays."""
    check_null_conversion(nvidia["nonfinite"][0], tmp_path)


# ---- 3. golden: ours vs NVIDIA's -----------------------------------------------------------------
def mask(doc):
    """What legitimately differs between two captures of one app: the BIN's file name (a path),
    and the seed of random weights (NVIDIA writes 0, ours numbers them)."""
    doc = json.loads(json.dumps(doc))
    doc["output_bin"] = "<bin>"
    for c in doc["api_calls"]:
        for v in c.values():
            if isinstance(v, dict) and "random" in v:
                v["random"]["seed"] = "<seed>"
    return doc


def _remap(v, ids):
    if isinstance(v, dict):
        return {k: (ids.get(x, x) if k == "object" else _remap(x, ids)) for k, x in v.items()}
    return [_remap(x, ids) for x in v] if isinstance(v, list) else v


def follow_address_reuse(ours, theirs):
    """NVIDIA keys objects by address: an object the library hands out at the address of a freed
    one keeps the old id and its record has no `return` (docs/json-bin-layout.md §5). Our traces
    record no object addresses, so ours gets a new id there. Where theirs has no return and ours a
    new id N, ours is rewritten to their id (learnt at N's next use); nothing else is forgiven.
    Returns (ours rewritten, how many ids were rewritten)."""
    ids, pending, out = {}, set(), []
    for x, y in zip(ours["api_calls"], theirs["api_calls"]):
        x = _remap(x, ids)
        ret = x.get("return")
        if "return" not in y and isinstance(ret, dict) and set(ret) == {"object"}:
            pending.add(ret["object"])
            x = {k: v for k, v in x.items() if k != "return"}
        for k, v in x.items():
            w = y.get(k)
            if k != "return" and isinstance(v, dict) and v.get("object") in pending and isinstance(w, dict):
                ids[v["object"]] = w.get("object")
                pending.discard(v["object"])
                x = _remap(x, ids)
        out.append(x)
    return dict(ours, api_calls=out + ours["api_calls"][len(out) :]), len(ids) + len(pending)


@pytest.mark.parametrize("name", GOLDEN)
def test_golden_equals_nvidia(nvidia, tmp_path, name):
    nv_json, _ = nvidia[name]
    trace = our_capture(tmp_path, name)
    ours = tmp_path / "ours.json"
    r = run([TRTRACE, "convert", trace, ours])
    assert r.returncode == 0, r.stderr
    a, b = nv.load(ours), nv.load(nv_json)
    ma, mb = mask(a), mask(b)
    ma, forgiven = follow_address_reuse(ma, mb)
    if ma != mb:  # the first differing record, for the failure message
        for x, y in zip(ma["api_calls"], mb["api_calls"]):
            assert x == y, (x, y)
        assert len(ma["api_calls"]) == len(mb["api_calls"])
    assert ma == mb
    assert nv.bin_of(a, ours).read_bytes() == nv.bin_of(b, nv_json).read_bytes(), "BIN differs"
    if forgiven:  # the records match once rewritten; the text has their `return` lines too
        return
    # Text: identical once the BIN name is masked, except where nlohmann's double printing picks
    # another shortest digit string than Python (both parse to the same double; §3).
    ta = ours.read_text(encoding="utf-8").replace('"ours.bin"', '"<bin>"')
    tb = nv_json.read_text(encoding="utf-8").replace('"cap.bin"', '"<bin>"')
    la, lb = ta.split("\n"), tb.split("\n")
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        if x != y:
            assert float(x.strip().rstrip(",")) == float(y.strip().rstrip(",")), (x, y)


# ---- 4. bad input --------------------------------------------------------------------------------
@pytest.fixture
def good_pair(tmp_path):
    """A JSON+BIN pair written by our converter (no NVIDIA shim needed)."""
    trace = our_capture(tmp_path, "cnn")
    js = tmp_path / "in.json"
    assert run([TRTRACE, "convert", trace, js]).returncode == 0
    return js, tmp_path / "in.bin"


def assert_clean_failure(proc, out_dir, before, expect):
    assert proc.returncode != 0
    err = proc.stderr.strip()
    assert len(err.splitlines()) == 1, f"expected one error line, got:\n{err}"
    assert expect in err, err
    assert sorted(p.name for p in out_dir.iterdir()) == before, "output left behind"


BAD_CASES = {
    "truncated_json": (lambda js, b: js.write_bytes(js.read_bytes()[: len(js.read_bytes()) // 2]), "malformed JSON"),
    "garbage": (lambda js, b: js.write_bytes(b"\x00\x01 not json"), "malformed JSON"),
    "bad_record": (
        lambda js, b: js.write_text(js.read_text().replace('"api_index": 3,', '"api_index": 3,,', 1)),
        "malformed JSON",
    ),
    "no_api_calls": (lambda js, b: js.write_text('{"output_bin": "in.bin", "trt_version": 10601}'), 'no "api_calls"'),
    "missing_bin": (lambda js, b: b.unlink(), "missing"),
    "short_bin": (lambda js, b: b.write_bytes(b.read_bytes()[:100]), "past the end"),
    "bad_offset": (
        lambda js, b: js.write_text(js.read_text().replace('"offset": 864', '"offset": 999999', 1)),
        "past the end",
    ),
    "negative_offset": (
        lambda js, b: js.write_text(js.read_text().replace('"offset": 864', '"offset": -8', 1)),
        "negative offset",
    ),
    "unknown_call": (
        lambda js, b: js.write_text(js.read_text().replace('"addActivation"', '"addFrobnicate"', 1)),
        "unknown call",
    ),
    "dangling_object": (
        lambda js, b: js.write_text(
            js.read_text().replace(
                '"input": {\n                "object": 4', '"input": {\n                "object": 4000', 1
            )
        ),
        "no earlier call returned",
    ),
    "inline_count": (lambda js, b: js.write_text(js.read_text().replace('"count": 8,', '"count": 9,', 1)), "inline"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_json_input(good_pair, tmp_path, case):
    js, binp = good_pair
    edit, expect = BAD_CASES[case]
    before_text = js.read_bytes()
    edit(js, binp)
    if case not in ("missing_bin", "short_bin", "no_api_calls", "garbage", "truncated_json"):
        assert js.read_bytes() != before_text, "the edit did not apply"
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    r = run([TRTRACE, "convert", js, out_dir / "x.trtrace"])
    assert r.stderr.startswith("trtrace: "), r.stderr
    assert_clean_failure(r, out_dir, [], expect)
    # the player: the same one error, exit 1, no engine, no temporary trace
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    p = run(
        [PLAYER, "-j", js, "-o", out_dir / "e.engine", "--lib", trt_lib()], env=dict(os.environ, TMPDIR=str(tmpdir))
    )
    assert p.returncode == 1, p.stdout + p.stderr
    # The player reads *.json (or a file starting with '{') as NVIDIA JSON: the same error.
    assert_clean_failure(p, out_dir, [], expect)
    assert list(tmpdir.iterdir()) == []


def test_bad_trace_input(tmp_path):
    trace = our_capture(tmp_path, "cnn")
    data = bytearray(trace.read_bytes())
    bad = tmp_path / "bad.trtrace"
    bad.write_bytes(bytes(data[: len(data) // 2]))  # truncated
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    r = run([TRTRACE, "convert", bad, out_dir / "x.json"])
    assert_clean_failure(r, out_dir, [], "truncated")


def test_output_dir_missing(good_pair, tmp_path):
    js, _ = good_pair
    r = run([TRTRACE, "convert", js, tmp_path / "nodir" / "x.trtrace"])
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "nodir").exists()
