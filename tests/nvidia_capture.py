#!/usr/bin/env python3
"""Runs an application under NVIDIA's TensorRT-RTX capture shim (libtensorrt_shim.so) and reads
the JSON+BIN pair it writes. Used by the golden tests; docs/json-bin-layout.md describes the layout.

Library use:
    import nvidia_capture as nv
    if not nv.available(): pytest.skip(nv.unavailable_reason())
    json_path, bin_path, proc = nv.capture(["tests/apps/build_cnn.py", "--out", "e.engine"], "/tmp/cap.json")
    cap = nv.load(json_path)                       # dict: api_calls, output_bin, trt_version
    arr = nv.weights_array(cap, call["kernelWeights"], json_path)   # numpy array of the weights

CLI:
    python3 tests/nvidia_capture.py --out /tmp/cap.json [--env K=V ...] -- tests/apps/build_cnn.py --out e.engine

The environment comes from the process (build/env.sh sourced) or, where a variable is missing, from
build/env.sh itself, so the tests also run with a bare venv Python. Nothing here is NVIDIA code.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(os.environ.get("TRTRACE_ROOT", pathlib.Path(__file__).resolve().parents[1]))
BUILD = pathlib.Path(os.environ.get("TRTRACE_BUILD", ROOT / "build"))

# nvinfer1::DataType code -> (name, numpy dtype name or None, bits per element), as observed in
# the "type" field of captured Weights (docs/json-bin-layout.md, "dtype codes").
DTYPES = {
    0: ("kFLOAT", "float32", 32),
    1: ("kHALF", "float16", 16),
    2: ("kINT8", "int8", 8),
    3: ("kINT32", "int32", 32),
    4: ("kBOOL", "bool", 8),
    5: ("kUINT8", "uint8", 8),
    6: ("kFP8", None, 8),
    7: ("kBF16", None, 16),
    8: ("kINT64", "int64", 64),
    9: ("kINT4", None, 4),
    10: ("kFP4", None, 4),
    11: ("kE8M0", None, 8),
}


class ShimUnavailable(RuntimeError):
    """NVIDIA's capture shim (or the library it needs) is not installed here."""


def _parse_env_sh(path):
    """Variables exported by one generated env file (KEY -> value), {} when it is missing."""
    out = {}
    try:
        text = path.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("export ") or "=" not in line:
            continue
        key, val = line[len("export ") :].split("=", 1)
        val = val.strip()
        if len(val) >= 2 and val[0] == val[-1] and val[0] in "\"'":
            val = val[1:-1]
        if "$" not in val:  # skip PATH-style lines that expand other variables
            out[key.strip()] = val
    return out


def _env_sh():
    """The env file of the library version this Python runs (env-1.7.sh when its VIRTUAL_ENV is
    this interpreter's prefix), else env.sh: the build tree's, else build/'s."""
    folders = (BUILD, ROOT / "build")  # tools/setup.sh writes them into build/ (a sanitizer tree has none)
    for folder in folders:
        for name in ("env-1.7.sh", "env.sh"):
            env = _parse_env_sh(folder / name)
            if env and os.path.realpath(env.get("VIRTUAL_ENV", "")) == os.path.realpath(sys.prefix):
                return env
    return _parse_env_sh(BUILD / "env.sh") or _parse_env_sh(ROOT / "build" / "env.sh")


def lib_version():
    """major*10000 + minor*100 + patch of the tensorrt_rtx this Python imports (1.6.1 -> 10601), as
    getInferLibVersion() returns it and NVIDIA's JSON records it."""
    out = subprocess.run(
        [sys.executable, "-c", "import tensorrt_rtx; print(tensorrt_rtx.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split(".")
    return int(out[0]) * 10000 + int(out[1]) * 100 + int(out[2])


def setting(name):
    """A TRTRACE_* setting from the environment (an empty value counts: the shim is then off), else
    from build/env.sh when the variable is absent; '' when unknown."""
    if name in os.environ:
        return os.environ[name]
    return _env_sh().get(name, "")


def shim_path():
    return setting("TRTRACE_NVIDIA_SHIM")


def unavailable_reason():
    """None when a capture can run, else a one-line reason (for pytest.skip)."""
    shim = shim_path()
    if not shim:
        return "NVIDIA capture shim not installed ($TRTRACE_NVIDIA_SHIM is empty; see tools/setup.sh)"
    if not os.path.isfile(shim):
        return f"NVIDIA capture shim not found at {shim}"
    lib = setting("TRTRACE_TRT_LIB")
    if not lib or not os.path.isfile(lib):
        return "TensorRT-RTX library not found ($TRTRACE_TRT_LIB)"
    return None


def available():
    return unavailable_reason() is None


def bin_path_for(json_path):
    """The BIN path the shim derives from TRT_SHIM_OUTPUT_JSON_FILE: a trailing '.json' is replaced
    by '.bin', any other name gets '.bin' appended ('cap.json' -> 'cap.bin', 'x.txt' -> 'x.txt.bin')."""
    p = str(json_path)
    return pathlib.Path(p[:-5] + ".bin" if p.endswith(".json") else p + ".bin")


def shim_env(out_json, env_extra=None, base=None):
    """The environment for one capture run."""
    env = dict(os.environ if base is None else base)
    libdir = setting("TRTRACE_TRT_LIBDIR") or os.path.dirname(setting("TRTRACE_TRT_LIB"))
    stub = setting("TRTRACE_CUDA_STUB_DIR")  # the shim links libcuda.so.1; the stub stands in
    ld = [p for p in (libdir, stub, env.get("LD_LIBRARY_PATH", "")) if p]
    env["LD_LIBRARY_PATH"] = ":".join(ld)
    # Required: the default name (libtensorrt_rtx.so) is not shipped by the wheel -> the shim
    # prints "Cannot load libtensorrt_rtx.so" and the app crashes.
    env["TRT_SHIM_NVINFER_LIB_NAME"] = setting("TRTRACE_TRT_LIB")
    env["TRT_SHIM_OUTPUT_JSON_FILE"] = str(out_json)
    for key, val in (env_extra or {}).items():
        if val is None:
            env.pop(key, None)
        else:
            env[key] = str(val)
    env["LD_PRELOAD"] = shim_path()
    return env


def capture(app_args, out_json, env_extra=None, missing_ok=False, python=None, cwd=None, timeout=600):
    """Runs `app_args` under NVIDIA's shim, writing the capture to `out_json` (+ its .bin).

    app_args: a command line (list); when its first element ends in '.py' it is run with `python`
    (default: this interpreter). env_extra: TRT_SHIM_* and other variables (value None removes one).
    Returns (json_path, bin_path, proc) with proc a text-mode CompletedProcess (the shim prints its
    messages on stdout, errors on stderr). The app's exit status is not checked (a failing build
    exits non-zero). When the shim is not installed: returns None if missing_ok, else raises
    ShimUnavailable. Stale out_json/.bin files are removed first.
    """
    reason = unavailable_reason()
    if reason:
        if missing_ok:
            return None
        raise ShimUnavailable(reason)
    out_json = pathlib.Path(out_json).absolute()
    out_json.parent.mkdir(parents=True, exist_ok=True)
    bin_path = bin_path_for(out_json)
    for p in (out_json, bin_path):
        if p.exists():
            p.unlink()
    cmd = [str(a) for a in app_args]
    if cmd and cmd[0].endswith(".py"):
        cmd = [python or sys.executable] + cmd
    proc = subprocess.run(
        cmd, capture_output=True, text=True, cwd=cwd, timeout=timeout, env=shim_env(out_json, env_extra)
    )
    return out_json, bin_path, proc


def load(json_path):
    with open(json_path, encoding="utf-8") as f:
        return json.load(f)


def bin_of(cap, json_path):
    """The BIN file a capture refers to ("output_bin" is a file name relative to the JSON's folder)."""
    return pathlib.Path(json_path).absolute().parent / cap["output_bin"]


def weights_nbytes(w):
    bits = DTYPES[w["type"]][2]
    return (w["count"] * bits + 7) // 8  # sub-byte types: packed (unverified, see open questions)


def network_of(cap):
    """{object id: object id of the NetworkDefinition it belongs to} for networks and for every
    object returned by a call on a network or on an object of a network. There is no network key
    in the JSON; this follows the "return" chains."""
    net = {}
    for c in cap["api_calls"]:
        if "return" not in c:
            continue
        ret = c["return"]["object"]
        if c["class"] == "Builder" and c["function"] == "createNetworkV2":
            net[ret] = ret
        elif c["object"] in net:
            net[ret] = net[c["object"]]
    return net


def weights_by_id(cap):
    """{(network object id, weights id): full Weights record}. Weights ids are per network; a later
    use of the same host pointer in the same network is written as {"id": N} only (resolve it here)."""
    net, table = network_of(cap), {}
    for c in cap["api_calls"]:
        for val in c.values():
            if isinstance(val, dict) and "count" in val and val.get("id", -1) >= 0:
                table.setdefault((net.get(c["object"]), val["id"]), val)
    return table


def weights_bytes(cap, w, json_path):
    """Raw bytes of one full Weights record (offset or inline); None for random or empty weights."""
    if "offset" in w:
        with open(bin_of(cap, json_path), "rb") as f:
            f.seek(w["offset"])
            return f.read(weights_nbytes(w))
    if "inline" in w:
        import numpy as np

        dt = DTYPES[w["type"]][1]
        if dt is None:
            raise ValueError(f"inline weights of type {w['type']} are not decodable here")
        return np.asarray(w["inline"], dtype=dt).tobytes()
    return None


def weights_array(cap, w, json_path):
    import numpy as np

    raw = weights_bytes(cap, w, json_path)
    if raw is None:
        return None
    return np.frombuffer(raw, dtype=DTYPES[w["type"]][1])


def calls(cap, function=None, cls=None):
    return [
        c
        for c in cap["api_calls"]
        if (function is None or c["function"] == function) and (cls is None or c["class"] == cls)
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="capture JSON path (the .bin goes beside it)")
    ap.add_argument("--env", action="append", default=[], metavar="K=V", help="extra environment")
    ap.add_argument("--summary", action="store_true", help="print one line per recorded call")
    ap.add_argument("app", nargs=argparse.REMAINDER, help="-- app.py args...")
    args = ap.parse_args()
    app = args.app[1:] if args.app[:1] == ["--"] else args.app
    if not app:
        ap.error("no application given (put it after --)")
    env_extra = dict(kv.split("=", 1) for kv in args.env)
    try:
        json_path, bin_path, proc = capture(app, args.out, env_extra)
    except ShimUnavailable as e:
        print(f"nvidia_capture: {e}", file=sys.stderr)
        return 77
    sys.stdout.write(proc.stdout)
    sys.stderr.write(proc.stderr)
    if json_path.exists():
        cap = load(json_path)
        size = bin_path.stat().st_size if bin_path.exists() else 0
        print(
            f"nvidia_capture: {json_path}: {len(cap['api_calls'])} calls, trt_version "
            f"{cap.get('trt_version')}; {bin_path}: {size} bytes; app exit {proc.returncode}"
        )
        if args.summary:
            for c in cap["api_calls"]:
                print(
                    f"  {c['api_index']:5d} {c['class']}::{c['function']} object={c['object']}"
                    + (f" -> {c['return']['object']}" if "return" in c else "")
                )
    else:
        print(f"nvidia_capture: no JSON written; app exit {proc.returncode}", file=sys.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
