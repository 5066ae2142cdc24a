"""NVIDIA's shim C interface and its other variables (issue 14, docs/json-bin-layout.md "The shim's
C interface"; the signatures and results are those of NVIDIA's shim): trtShimSetOutputJsonFile / trtShimGetOutputJsonFile with the shim loaded through
ctypes.CDLL(RTLD_GLOBAL) before TensorRT-RTX is imported and TRT_SHIM_NVINFER_LIB_NAME set only
afterwards (the environment is read at the first intercepted call); TRT_SHIM_SET_TACTIC_CACHE and
TRT_SHIM_FORCE_SINGLE_THREAD_API. Real library, real bindings."""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import APPS, PLAYER, ROOT, SHIM, assert_same_engines, trt_lib_dir

REAL = trt_lib_dir() / "libtensorrt_rtx.so.1"


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_SHIM_") and k != "LD_PRELOAD"}
    env.update(extra)
    return env


def ctypes_app(tmp, jsons, after=None, real=REAL, **env):
    args = [
        sys.executable,
        str(APPS / "ctypes_shim_app.py"),
        str(SHIM),
        str(real),
        str(tmp / "app.engine"),
        ",".join(map(str, jsons)),
    ] + ([str(after)] if after else [])
    return subprocess.run(args, capture_output=True, text=True, env=clean_env(**env), cwd=tmp)


def test_ctypes_load_then_set_json_gives_json_bin_and_trace(tmp_path):
    first, nodir, chosen = tmp_path / "first.json", tmp_path / "nodir" / "x.json", tmp_path / "cap.json"
    p = ctypes_app(tmp_path, [first, nodir, chosen])
    assert p.returncode == 0, p.stderr
    # Nothing set and no TRT_SHIM_OUTPUT_JSON_FILE: empty; then each set path, changed before any
    # flush; a path in a missing folder is refused (0, one line naming it), as NVIDIA's shim does.
    assert p.stdout.splitlines()[:7] == [
        "get: ",
        f"set {first}: 1",
        f"get: {first}",
        f"set {nodir}: 0",
        f"get: {first}",
        f"set {chosen}: 1",
        f"get: {chosen}",
    ]
    assert sum(str(nodir) in l for l in p.stderr.splitlines()) == 1, p.stderr
    assert not first.exists() and not (tmp_path / "capture.trtrace").exists()
    assert json.loads(chosen.read_text())["api_calls"]
    assert (tmp_path / "cap.bin").stat().st_size > 0
    trace = tmp_path / "cap.trtrace"  # no TRT_SHIM_OUTPUT_FILE: the trace sits beside the JSON
    app_engine = (tmp_path / "app.engine").read_bytes()
    for source in (trace, chosen):
        out = tmp_path / (source.suffix[1:] + ".engine")
        r = subprocess.run(
            [str(PLAYER), "-j", str(source), "-o", str(out), "--lib", str(REAL)], capture_output=True, text=True
        )
        assert r.returncode == 0, r.stderr
        assert out.read_bytes() == app_engine


def test_output_file_names_the_trace_when_set(tmp_path):
    p = ctypes_app(tmp_path, [tmp_path / "cap.json"], TRT_SHIM_OUTPUT_FILE=str(tmp_path / "t.trtrace"))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "t.trtrace").exists() and (tmp_path / "cap.json").exists()
    assert not (tmp_path / "cap.trtrace").exists()


def test_path_change_after_first_flush_is_refused_with_one_line(tmp_path):
    chosen, late = tmp_path / "cap.json", tmp_path / "late.json"
    p = ctypes_app(tmp_path, [chosen], after=late, TRT_SHIM_FLUSH_ON_BUILD="1")
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stderr.splitlines() if "trtShimSetOutputJsonFile" in l]
    assert len(lines) == 1 and str(late) in lines[0] and str(chosen) in lines[0], p.stderr
    assert p.stdout.splitlines()[-2:] == [f"set {late}: 0", f"get: {chosen}"]
    assert chosen.exists() and not late.exists()


def test_path_set_after_a_capture_started_without_json_is_refused_with_one_line(tmp_path):
    """A capture that started with no JSON path encoded no call for a JSON (docs/json-bin-layout.md §9,
    "Ours": each call is encoded once, as it is recorded): a set after the first recorded call is
    refused (0, one line naming the path); the trace alone is written."""
    late = tmp_path / "late.json"
    p = ctypes_app(tmp_path, [""], after=late)  # "": refused up front (not a file name), so none before the build
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stderr.splitlines() if str(late) in l]
    assert len(lines) == 1 and "started without a JSON+BIN export" in lines[0], p.stderr
    assert p.stdout.splitlines()[-2:] == [f"set {late}: 0", "get: "]
    assert not late.exists() and not (tmp_path / "late.bin").exists()
    assert (tmp_path / "capture.trtrace").exists()


def test_tactic_cache_is_accepted_with_one_note_and_changes_nothing(tmp_path):
    env = clean_env(
        LD_PRELOAD=str(SHIM),
        TRT_SHIM_OUTPUT_FILE=str(tmp_path / "t.trtrace"),
        TRT_SHIM_SET_TACTIC_CACHE=str(tmp_path / "tc.bin"),
    )
    p = subprocess.run(
        [sys.executable, str(APPS / "build_cnn.py"), "--out", str(tmp_path / "e.engine")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert p.returncode == 0, p.stderr
    assert sum("TRT_SHIM_SET_TACTIC_CACHE" in l for l in p.stderr.splitlines()) == 1, p.stderr
    assert not (tmp_path / "tc.bin").exists()  # as NVIDIA's shim: nothing written (no-op on TensorRT-RTX)


def test_force_single_thread_api_captures_threaded_builds(tmp_path):
    trace = tmp_path / "t.trtrace"
    env = clean_env(
        LD_PRELOAD=str(SHIM),
        TRT_SHIM_OUTPUT_FILE=str(trace),
        TRT_SHIM_FORCE_SINGLE_THREAD_API="1",
        TRT_SHIM_DUMP_API="1",
    )
    p = subprocess.run(
        [
            sys.executable,
            str(APPS / "build_cnn.py"),
            "--out",
            str(tmp_path / "e.engine"),
            "--networks",
            "3",
            "--threads",
            "3",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert p.returncode == 0, p.stderr
    # One call at a time, process-wide: the enter/exit lines of all threads form one stack, each
    # at its thread's nesting depth (two spaces a level), so no thread's call starts inside another's.
    stack = []
    for line in p.stderr.splitlines():
        text = line[len("trtrace: ") :]
        if not line.startswith("trtrace: ") or not text.lstrip().startswith(("enter ", "exit ")):
            continue
        depth = (len(text) - len(text.lstrip())) // 2
        word, name = text.split(None, 1)
        if word == "enter":
            assert depth == len(stack), line
            stack.append(name)
        else:
            assert stack and stack.pop() == name and depth == len(stack), line
    assert not stack
    r = subprocess.run(
        [str(PLAYER), "-j", str(trace), "-o", str(tmp_path / "r.engine"), "--lib", str(REAL)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert_same_engines(
        [tmp_path / f"r.engine{i}" for i in range(3)], [tmp_path / f"e.engine{i}" for i in range(3)], threaded=True
    )


def chosen_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("trtrace: real library: ")]


def welcome_run(tmp_path, code, python=sys.executable, **env):
    """Runs `code` (Python) with TRT_SHIM_PRINT_WELCOME; returns (process, the one 'real library' line)."""
    e = clean_env(TRT_SHIM_OUTPUT_FILE=str(tmp_path / "t.trtrace"), TRT_SHIM_PRINT_WELCOME="1")
    e.pop("VIRTUAL_ENV", None)
    e.update(env)
    p = subprocess.run([str(python), "-c", code], capture_output=True, text=True, env=e)
    assert p.returncode == 0, p.stderr
    lines = chosen_lines(p.stderr)
    assert len(lines) == 1, p.stderr
    return p, lines[0]


def build_app(tmp_path, preload_real=False):
    return (
        "import ctypes, runpy, sys\n"
        + (f"ctypes.CDLL({str(REAL)!r}, mode=ctypes.RTLD_GLOBAL)\n" if preload_real else "")
        + f"sys.argv = ['app', '--out', {str(tmp_path / 'e.engine')!r}]\n"
        f"runpy.run_path({str(APPS / 'build_cnn.py')!r}, run_name='__main__')\n"
    )


LINE = r"trtrace: real library: tensorrt_rtx (\d+\.\d+\.\d+\.\d+), \S*/libtensorrt_rtx\.so\.1 \((.*)\)"


@pytest.mark.parametrize("how", ["global", "private", "env"])
def test_shim_names_the_library_it_chose(tmp_path, how):
    """The shim's discovery order (libinfo/library.h, shared with the player): TRT_SHIM_NVINFER_LIB_NAME;
    else the library the application loaded (globally, or privately as Python's bindings do); said in
    one line under TRT_SHIM_PRINT_WELCOME."""
    extra = {"TRT_SHIM_NVINFER_LIB_NAME": str(REAL)} if how == "env" else {}
    _, line = welcome_run(tmp_path, build_app(tmp_path, preload_real=how == "global"), LD_PRELOAD=str(SHIM), **extra)
    m = re.fullmatch(LINE, line)
    assert m and m.group(2) == ("TRT_SHIM_NVINFER_LIB_NAME" if how == "env" else "the application's, already loaded"), (
        line
    )


def test_shim_first_finds_the_virtual_environments_library(tmp_path):
    """Nothing loaded yet (the shim's own entry point called first, the ctypes way): the active
    virtual environment's tensorrt_rtx_libs."""
    code = f"import ctypes\nshim = ctypes.CDLL({str(SHIM)!r}, ctypes.RTLD_GLOBAL)\nprint(shim.getInferLibVersion())\n"
    p, line = welcome_run(tmp_path, code, VIRTUAL_ENV=str(REAL.parents[4]))
    m = re.fullmatch(LINE, line)
    assert m and re.fullmatch(r"tensorrt_rtx_libs 1\.\d+\.\d+\.\d+ of the active virtual environment", m.group(2)), line
    assert int(p.stdout) // 100 == int(m.group(1).split(".")[0]) * 100 + int(m.group(1).split(".")[1])


VENV17 = ROOT / ".deps" / "venv-1.7"


@pytest.mark.skipif(not (VENV17 / "bin" / "python").exists(), reason="tools/setup.sh installs TensorRT-RTX 1.7")
def test_the_applications_library_wins_over_the_virtual_environment(tmp_path):
    """A 1.7 application captured with the 1.6 environment active: the shim uses the library the
    application loaded (1.7), never the environment's other version."""
    code = (
        f"import runpy, sys\nsys.argv = ['app', {str(tmp_path / 'e.engine')!r}]\n"
        f"runpy.run_path({str(APPS / 'squeeze_app.py')!r}, run_name='__main__')\n"
    )
    _, line = welcome_run(
        tmp_path, code, python=VENV17 / "bin" / "python", LD_PRELOAD=str(SHIM), VIRTUAL_ENV=str(ROOT / ".deps" / "venv")
    )
    m = re.fullmatch(LINE, line)
    assert m and m.group(1).startswith("1.7.") and m.group(2) == "the application's, already loaded", line


def test_no_library_line_without_welcome_or_dump(tmp_path):
    env = clean_env(LD_PRELOAD=str(SHIM), TRT_SHIM_OUTPUT_FILE=str(tmp_path / "t.trtrace"))
    p = subprocess.run(
        [sys.executable, str(APPS / "build_cnn.py"), "--out", str(tmp_path / "e.engine")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert p.returncode == 0 and not chosen_lines(p.stderr), p.stderr


@pytest.mark.parametrize("real_name", ["libtensorrt_rtx_real.so.1", "libtensorrt_rtx.real"])
def test_drop_in_into_a_pip_package_folder_is_refused_with_one_line(tmp_path, real_name):
    """pip's tensorrt_rtx_libs/__init__ preloads every *.so* of its folder and the bindings bind to
    libtensorrt_rtx.so.1 by SONAME: the real library renamed to *.so* silently satisfies them, renamed
    otherwise the bindings cannot import. The shim, loaded there under the library's name, says so."""
    site = tmp_path / "site"
    libs = site / "tensorrt_rtx_libs"
    libs.mkdir(parents=True)
    for pkg in ("tensorrt_rtx", "tensorrt_rtx_bindings"):
        (site / pkg).symlink_to(REAL.parents[1] / pkg)
    shutil.copy(REAL.parent / "__init__.py", libs)
    (libs / "libtensorrt_onnxparser_rtx.so.1").symlink_to(REAL.parent / "libtensorrt_onnxparser_rtx.so.1")
    shutil.copy(SHIM, libs / "libtensorrt_rtx.so.1")
    (libs / real_name).symlink_to(REAL)
    trace = tmp_path / "t.trtrace"
    env = clean_env(
        PYTHONPATH=str(site), TRT_SHIM_OUTPUT_FILE=str(trace), TRT_SHIM_NVINFER_LIB_NAME=str(libs / real_name)
    )
    p = subprocess.run(
        [sys.executable, str(APPS / "build_cnn.py"), "--out", str(tmp_path / "e.engine")],
        capture_output=True,
        text=True,
        env=env,
    )
    lines = [l for l in p.stderr.splitlines() if l.startswith("trtrace:")]
    assert len(lines) == 1 and "drop-in into a Python package folder does not capture" in lines[0], p.stderr
    assert str(libs / "libtensorrt_rtx.so.1") in lines[0] and "LD_PRELOAD" in lines[0]
    assert not trace.exists()
