"""Shared pytest fixtures: paths to the project's binaries, the real TensorRT-RTX library, apps."""

import atexit
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = pathlib.Path(os.environ.get("TRTRACE_ROOT", pathlib.Path(__file__).resolve().parents[1]))
BUILD = pathlib.Path(os.environ.get("TRTRACE_BUILD", ROOT / "build"))
BIN = pathlib.Path(os.environ.get("TRTRACE_BIN", BUILD / "bin"))
APPS = ROOT / "tests" / "apps"


# Sanitizer runs (`make sanitize`): the shim is built with ASan+UBSan, so every process that loads it
# needs the sanitizer runtime first in the link order. TRTRACE_ASAN_RUNTIME names that runtime; every
# child process this suite starts gets it at the head of LD_PRELOAD (one place, for all tests), and
# leak checks off for Python (the interpreter's own allocations at exit are not ours to judge; our
# C++ tools are leak-checked, with the library's own leaks suppressed in tests/lsan.supp).
ASAN_RUNTIME = os.environ.get("TRTRACE_ASAN_RUNTIME", "")

# The player decodes compressed weights into a decode cache (docs/design.md, "Decode cache"): the
# suite's caches go to a folder of its own, removed at exit, never to the user's ~/.cache.
_DECODE_CACHE = tempfile.mkdtemp(prefix="trtrace-test-cache-")
os.environ.setdefault("TRTRACE_DECODE_CACHE", _DECODE_CACHE)
atexit.register(shutil.rmtree, _DECODE_CACHE, True)


@pytest.fixture(autouse=True)
def _private_oci_cache(tmp_path, monkeypatch):
    """Each test's registry layer store and reference cache (docs/registry.md, "The cache") is its
    own: a layer another test fetched would hide this test's transfers, and ~/.cache is never used."""
    monkeypatch.setenv("TRTRACE_OCI_CACHE", str(tmp_path / "oci-cache"))


if ASAN_RUNTIME:
    _popen_init = subprocess.Popen.__init__

    def _sanitized_popen_init(self, args, *a, **kw):
        env = dict(kw.get("env") or os.environ)
        preload = env.get("LD_PRELOAD", "")
        if ASAN_RUNTIME not in preload.split(":"):
            # libstdc++ with it: ASan resolves its C++ exception interceptors at start-up.
            env["LD_PRELOAD"] = ":".join(p for p in (ASAN_RUNTIME, "libstdc++.so.6", preload) if p)
        # A Python interpreter gets no leak report at its exit, also when it is started through
        # another program (/usr/bin/time python ..., trtrace capture -- python ..., sh -c "exec python ...",
        # and `trtrace bench`, whose driver is Python).
        words = list(args) if isinstance(args, (list, tuple)) else str(args).split()
        bench = len(words) > 1 and os.path.basename(str(words[0])) == "trtrace" and str(words[1]) == "bench"
        # Nor do the linters the style test runs (ruff's own allocations at exit vary from run to run).
        tool = bool(words) and os.path.basename(str(words[0])) in ("ruff", "clang-format")
        if (
            bench
            or tool
            or any(os.path.basename(str(w)).startswith("python") or "/python" in str(w) for w in words[:8])
        ):
            env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
        kw["env"] = env
        _popen_init(self, args, *a, **kw)

    subprocess.Popen.__init__ = _sanitized_popen_init


# fork() of a multi-threaded process (the shim's writer workers, the library's threads) is safe with
# glibc's malloc, which is locked around fork; GCC 12's ASan allocator is not, so a child can inherit
# its lock held by another thread and hang. Fork tests therefore run in the normal build only.
no_fork_under_asan = pytest.mark.skipif(bool(ASAN_RUNTIME), reason="GCC 12's ASan allocator is not fork-safe")


def trt_lib_dir():
    import tensorrt_rtx_libs  # the wheel that carries libtensorrt_rtx.so.1

    return pathlib.Path(tensorrt_rtx_libs.__file__).parent


def run_app(app, *args, env=None, check=True, cwd=None):
    """Runs a test app with this Python; returns the CompletedProcess (text mode)."""
    cmd = [sys.executable, str(APPS / app), *map(str, args)]
    full_env = dict(os.environ)
    full_env.update(env or {})
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, cwd=cwd)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


SHIM = BUILD / "lib" / "libtensorrt_shim.so"
PLAYER = BIN / "tensorrt_player"
TRTRACE = BIN / "trtrace"


def trt_lib():
    return trt_lib_dir() / "libtensorrt_rtx.so.1"


def capture(app, out_trace, *args, env=None, check=True):
    """Runs a test app under our shim (LD_PRELOAD) writing `out_trace`; returns the process."""
    e = {"LD_PRELOAD": str(SHIM), "TRT_SHIM_OUTPUT_FILE": str(out_trace)}
    e.update(env or {})
    return run_app(app, *args, env=e, check=check)


def play(trace, out_engine, *args, check=True):
    """Runs tensorrt_player on `trace`; returns the process (text mode)."""
    cmd = [str(PLAYER), "-j", str(trace), "-o", str(out_engine), "--lib", str(trt_lib()), *map(str, args)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def trtrace(*args, check=True):
    proc = subprocess.run([str(TRTRACE), *map(str, args)], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"trtrace {' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )
    return proc


def info(trace, check=True):
    """`trtrace info --json` of `trace`, parsed."""
    return json.loads(trtrace("info", "--json", trace, check=check).stdout)


@pytest.fixture
def tmp(tmp_path):
    return tmp_path


def drop_in_dir(tmp):
    """The documented drop-in layout: the shim as libtensorrt_rtx.so.1, the real library renamed.
    Returns (lib folder, environment for an app that loads the library by soname)."""
    import shutil

    lib = tmp / "lib"
    lib.mkdir(exist_ok=True)
    if not (lib / "libtensorrt_rtx_orig.so.1").exists():
        os.symlink(trt_lib(), lib / "libtensorrt_rtx_orig.so.1")
        shutil.copy(SHIM, lib / "libtensorrt_rtx.so.1")
    return lib, {"LD_LIBRARY_PATH": str(lib), "TRT_SHIM_NVINFER_LIB_NAME": str(lib / "libtensorrt_rtx_orig.so.1")}


def cpp_app(*args, env, **kw):
    """Runs the native test app (tests/apps/cpp_app.cpp) with `env` added to this environment."""
    e = dict(os.environ)
    e.update(env)
    return subprocess.run([str(BIN / "cpp_app"), *map(str, args)], capture_output=True, text=True, env=e, **kw)


def assert_same_engines(replayed, app, threaded=False):
    """Each replayed engine file equals the app's of the same index. With `threaded`, the app's
    threads create their networks in an order the scheduler picks: the trace numbers networks in
    creation order (as NVIDIA's shim does), the app by thread, so only the multiset of engines is
    the same."""
    got, want = [p.read_bytes() for p in replayed], [p.read_bytes() for p in app]
    if threaded:
        got, want = sorted(got), sorted(want)
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"{replayed[i].name}: replay differs from the app's engine"
