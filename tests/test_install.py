"""`cmake --install` + find_package(trtrace) (issue 18): this build installed into a fresh prefix, and
tests/consumer (a project outside the tree) configured, built and run against it on a real capture."""

import json
import re
import subprocess

from conftest import ASAN_RUNTIME, BUILD, ROOT, TRTRACE, cpp_app, drop_in_dir


def run(*cmd, tool=False, **kw):
    """Runs cmd; `tool`: a build tool (cmake, make, the compiler), which a sanitizer run's preload
    (conftest.py puts its runtime into every process) must not reach: `env -u LD_PRELOAD`."""
    wrap = ["env", "-u", "LD_PRELOAD"] if tool and ASAN_RUNTIME else []
    p = subprocess.run([*wrap, *(str(c) for c in cmd)], capture_output=True, text=True, **kw)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))}:\n{p.stdout}\n{p.stderr}"
    return p.stdout


def test_installed_package_builds_a_consumer_that_reads_a_trace(tmp_path):
    prefix = tmp_path / "prefix"
    run("cmake", "--install", BUILD, "--prefix", prefix, tool=True)
    for f in (
        "bin/trtrace",
        "bin/tensorrt_player",
        "lib/libtensorrt_shim.so",
        "lib/libtrtrace_c.so",
        "lib/cmake/trtrace/trtraceConfig.cmake",
        "include/trtrace/reader.h",
        "include/trtrace/trtrace_c.h",
    ):
        assert (prefix / f).exists(), f
    _, env = drop_in_dir(tmp_path)
    trace = tmp_path / "app.trtrace"
    assert cpp_app(tmp_path / "app.engine", env=dict(env, TRT_SHIM_OUTPUT_FILE=str(trace))).returncode == 0
    build = tmp_path / "consumer"
    # A sanitizer build installs instrumented static libraries: the consumer is built the same way.
    cache = (BUILD / "CMakeCache.txt").read_text()
    sanitize = re.search(r"^TRTRACE_SANITIZE:STRING=(.*)$", cache, re.M)
    flags = (
        [f"-DCMAKE_{lang}_FLAGS=-fsanitize={sanitize.group(1)}" for lang in ("C", "CXX", "EXE_LINKER")]
        if sanitize and sanitize.group(1)
        else []
    )
    run("cmake", "-S", ROOT / "tests" / "consumer", "-B", build, f"-DCMAKE_PREFIX_PATH={prefix}", *flags, tool=True)
    run("cmake", "--build", build, "-j2", tool=True)
    info = json.loads(run(TRTRACE, "info", "--json", trace))
    out = run(build / "read_trace", trace).splitlines()
    assert (
        out[0] == f"{info['calls']} calls, {info['builds']} builds, {info['weights']['unique_blobs']} blobs, verify ok"
    )
    assert out[1] == "first: entry::createInferBuilder_INTERNAL"
    header = json.loads(run(build / "read_trace_c", trace))
    assert header["calls"] == info["calls"] and header["library_version"] == info["library_version"]
    # The installed trtrace runs from the prefix and finds its shim there.
    assert "capture" in run(prefix / "bin" / "trtrace", "capture", "--help")
