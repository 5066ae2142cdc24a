"""The shim's C entry points come from the spec (schema/api/00-library.api, generated into
capture_entries.inc), like methods do (issue 24): every function symbol of each supported
libtensorrt_rtx.so.1 is declared in the spec and exported by the shim, save the spec's `unexported`
ones (each with its reason); an application that calls one runs in the drop-in layout and under
LD_PRELOAD, gets the real library's answer, and the call is recorded as the spec says."""

import json
import shutil
import subprocess
import sys

import pytest

from conftest import ASAN_RUNTIME, BIN, ROOT, SHIM, drop_in_dir, trt_lib_dir, trtrace

GEN = ROOT / "schema" / "apigen.py"
ENTRY_APP = BIN / "entry_app"
# Every supported library version: the environments tools/setup.sh makes.
VENVS = [ROOT / ".deps" / "venv", ROOT / ".deps" / "venv-1.7"]


def library_of(venv):
    libs = sorted(venv.glob("lib/python*/site-packages/tensorrt_rtx_libs/libtensorrt_rtx.so.1"))
    if not libs:
        pytest.skip(f"{venv}: no tensorrt_rtx_libs (tools/setup.sh makes it)")
    return libs[0]


def function_symbols(lib):
    """Defined dynamic function symbols (nm types T, W, i); data symbols (B, D, R, ...) are not entries."""
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
    return {f[2] for f in (line.split() for line in out.splitlines()) if len(f) == 3 and f[1] in ("T", "W", "i")}


def spec_entries():
    proc = subprocess.run(
        [sys.executable, str(GEN), "--spec", str(ROOT / "schema" / "api"), "--entries"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout)


@pytest.mark.parametrize("venv", VENVS, ids=lambda v: v.name)
def test_spec_declares_exactly_the_library_function_symbols(venv):
    real = function_symbols(library_of(venv))
    spec = spec_entries()
    exported = {e["name"] for e in spec["exported"]}
    assert all(reason.strip() for reason in spec["unexported"].values())
    assert real - exported - set(spec["unexported"]) == set(), "declare each in schema/api/00-library.api"
    assert exported - real == set(), "the spec declares entry points this library lacks"


@pytest.mark.parametrize("venv", VENVS, ids=lambda v: v.name)
def test_shim_exports_every_function_symbol_of_the_library(venv):
    missing = function_symbols(library_of(venv)) - function_symbols(SHIM) - set(spec_entries()["unexported"])
    assert missing == set()


def entry_app(*args, env):
    return subprocess.run([str(ENTRY_APP), *map(str, args)], capture_output=True, text=True, env=env)


def reference_env():
    return {"LD_LIBRARY_PATH": str(trt_lib_dir()), "PATH": "/usr/bin:/bin"}


def drop_in_env(tmp, trace):
    _, env = drop_in_dir(tmp)
    return dict(env, PATH="/usr/bin:/bin", TRT_SHIM_OUTPUT_FILE=str(trace))


def preload_env(trace):
    return dict(reference_env(), LD_PRELOAD=str(SHIM), TRT_SHIM_OUTPUT_FILE=str(trace))


def recorded(trace):
    """The trace's calls as `trtrace dump` prints them (one line each)."""
    return trtrace("dump", trace).stdout.splitlines()


@pytest.mark.parametrize("layout", ["drop_in", "ld_preload"])
def test_set_internal_library_path_is_answered_and_recorded(tmp, layout):
    folder = tmp / "libs"
    folder.mkdir()
    for path in (folder, tmp / "missing"):
        ref = entry_app("library-path", path, env=reference_env())
        assert ref.returncode == 0, ref.stderr
        trace = tmp / f"{layout}-{path.name}.trtrace"
        env = drop_in_env(tmp, trace) if layout == "drop_in" else preload_env(trace)
        proc = entry_app("library-path", path, env=env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == ref.stdout  # the real library's answer (1, then 0)
        calls = [c for c in recorded(trace) if "setInternalLibraryPath" in c]
        answer = "true" if ref.stdout.strip().endswith("1") else "false"
        assert len(calls) == 1 and f'"{path}"' in calls[0] and f"-> {answer}" in calls[0], calls
        assert "UNSUPPORTED" not in calls[0]


@pytest.mark.parametrize("layout", ["drop_in", "ld_preload"])
def test_private_api_call_is_answered_and_recorded_unsupported(tmp, layout):
    version = entry_app("version", env=reference_env())
    assert version.returncode == 0, version.stderr
    args = ("private-api", 0, version.stdout.split(": ")[1].strip())  # an id the library does not know
    ref = entry_app(*args, env=reference_env())
    assert ref.returncode == 0, ref.stderr
    trace = tmp / "private.trtrace"
    proc = entry_app(*args, env=drop_in_env(tmp, trace) if layout == "drop_in" else preload_env(trace))
    assert proc.returncode == 0 and proc.stdout == ref.stdout, proc.stderr
    calls = [c for c in recorded(trace) if "getPrivateApi_INTERNAL" in c]
    assert len(calls) == 1 and "UNSUPPORTED" in calls[0], calls


def test_pass_through_entry_points_answer_as_the_library(tmp):
    ref = entry_app("version", env=reference_env())
    assert ref.returncode == 0 and ref.stdout.startswith("getInferLibVersion: "), ref.stderr
    proc = entry_app("version", env=drop_in_env(tmp, tmp / "v.trtrace"))
    assert proc.returncode == 0 and proc.stdout == ref.stdout, proc.stderr


@pytest.mark.skipif(
    bool(ASAN_RUNTIME), reason="a link check of the shim's own sources: the compiler runs under ASan's preload"
)
def test_hand_written_entry_point_missing_fails_the_link(tmp):
    """`override capture entry.NAME` without its code in capture/overrides.cpp: an undefined symbol
    of the shim, which links with -z defs (capture/CMakeLists.txt)."""
    spec = tmp / "api"
    shutil.copytree(ROOT / "schema" / "api", spec)
    with open(spec / "90-overrides.api", "a") as f:
        f.write("override capture entry.setInternalLibraryPath\n")
    out = tmp / "gen"
    gen = subprocess.run(
        [sys.executable, str(GEN), "--spec", str(spec), "--out", str(out)], capture_output=True, text=True
    )
    assert gen.returncode == 0, gen.stderr
    text = (out / "capture_entries.inc").read_text()
    assert "setInternalLibraryPath(char const* path);  // capture/overrides.cpp" in text
    # The generated declarations and references alone, in a shared library linked as the shim is.
    hand = [ln for ln in text.splitlines() if ln.endswith("// capture/overrides.cpp") or "kHandWrittenEntries" in ln]
    src = tmp / "entries.cpp"
    src.write_text(
        '#include <cstdint>\n#define TRTRACE_EXPORT __attribute__((visibility("default")))\n' + "\n".join(hand) + "\n"
    )
    link = subprocess.run(
        [
            "c++",
            "-std=c++17",
            "-O2",
            "-fPIC",
            "-shared",
            "-fvisibility=hidden",
            "-Wl,-z,defs",
            str(src),
            "-o",
            str(tmp / "entries.so"),
        ],
        capture_output=True,
        text=True,
    )
    assert link.returncode != 0
    assert "undefined reference to `setInternalLibraryPath'" in link.stderr
    assert "undefined reference to `createInferBuilder_INTERNAL'" in link.stderr
