"""Issue 23, classes 3, 7 and 9: a reader's memory is bounded by its input, not by what the input
declares; arrays the Python API returns keep their memory alive; a footer that lies is corruption.

The traces come from tests/tools/trace_lies (every check field right, only a declaration wrong): a
few KiB of zstd that declare a 1 GiB chunk or a 200 MiB segment, 256 MiB of zeros in honest 4 MiB
chunks, a lost blob, footers whose counts disagree with the log. Peak RSS is read with
/usr/bin/time (a process of its own, so the figure is the tool's alone, not a fork of pytest)."""

import os
import pathlib
import subprocess
import sys

import pytest

from conftest import BIN, PLAYER, ROOT, TRTRACE, trt_lib

LIES = BIN / "trace_lies"
MIB = 1 << 20
# docs/design.md: a decode thread holds at most 8 MiB; the tools decode on every core.
THREADS = os.cpu_count() or 1
BOUND = 64 * MIB + THREADS * 8 * MIB
PY = f"import sys; sys.path.insert(0, {str(ROOT / 'python')!r}); import trtrace\n"


def lie(*args):
    subprocess.run([str(LIES), *map(str, args)], check=True)
    return pathlib.Path(args[1])


def py_env():
    """The package finds libtrtrace_c.so beside the trtrace on PATH (this build's)."""
    return dict(os.environ, PATH=f"{TRTRACE.parent}:{os.environ['PATH']}")


def tools(trace):
    """name -> command line of every reading tool under test, on `trace`."""
    return {
        "verify": [TRTRACE, "verify", trace],
        "info": [TRTRACE, "info", trace],
        "dump": [TRTRACE, "dump", trace],
        "player": [PLAYER, "-j", trace, "--lib", trt_lib(), "-q"],
        "python verify": [sys.executable, "-c", PY + f"trtrace.open({str(trace)!r}).verify()"],
    }


def peak(cmd, tmp_path):
    """(exit code, peak RSS in bytes, stderr) of cmd."""
    rss = tmp_path / "rss"
    env = dict(py_env(), TRTRACE_DECODE_CACHE="temp")
    p = subprocess.run(
        ["/usr/bin/time", "-o", str(rss), "-f", "%M", *map(str, cmd)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    return p.returncode, int(rss.read_text().split()[-1]) * 1024, p.stderr


@pytest.fixture(scope="module")
def lies(tmp_path_factory):
    d = tmp_path_factory.mktemp("lies")
    small = lie("zero-blob", d / "small.trtrace", 100000, 65536)  # benign: the baseline of each tool
    return d, {
        "small": small,
        "huge_chunk": lie("zero-blob", d / "chunk.trtrace", 1 << 30, 1 << 30),  # 33 KB of file
        "huge_segment": lie("zero-segment", d / "segment.trtrace", 200 << 20),  # 7 KB of file
        "zeros_256m": lie("zero-blob", d / "zeros.trtrace", 256 << 20, 4 << 20),  # honest, 11 KB
        # byte-grouped as fp32 (transform 2), but 100,002 bytes are not whole 4-byte elements
        "ragged_grouping": lie("zero-blob", d / "ragged.trtrace", 100002, 65536, 2),
        "footer_calls": lie("footer-calls", d / "fcalls.trtrace", small, 1 << 62),
        "footer_segment": lie("footer-segment", d / "fseg.trtrace", small, 7),
        "lost": lie("lost-blob", d / "lost.trtrace", 1 << 20),
    }


@pytest.mark.skipif(not os.access("/usr/bin/time", os.X_OK), reason="/usr/bin/time measures peak RSS")
@pytest.mark.parametrize("case", ["huge_chunk", "huge_segment", "zeros_256m", "footer_calls", "footer_segment"])
def test_peak_memory_is_bounded_by_the_input(lies, tmp_path, case):
    """Every reading tool stays within its own footprint on a benign trace (for the player, the
    library's) + 64 MiB + threads x 8 MiB, whatever the trace declares; none of these blobs is used
    by a call, so no real weights are needed. A declaration out of bounds is corruption, said in one
    line: never a crash."""
    d, t = lies
    for name, cmd in tools(t[case]).items():
        base_code, base, base_err = peak(tools(t["small"])[name], tmp_path)
        assert base_code == 0, base_err
        code, rss, err = peak(cmd, tmp_path)
        assert code in (0, 1, 2), f"{name}: exit {code}\n{err}"
        assert rss <= base + BOUND, f"{name} on {case}: peak RSS {rss >> 20} MiB, {base >> 20} MiB on a benign trace"


def test_declarations_out_of_bounds_are_corruption(lies):
    """The 1 GiB chunk and the 200 MiB segment are refused before anything is allocated, and a
    byte-grouped blob whose sizes are not whole elements before anything is decoded; 256 MiB of
    zeros in 4 MiB chunks is a sound trace, decoded a chunk at a time."""
    d, t = lies
    for case, what in (
        ("huge_chunk", "blob record: chunk size out of range"),
        ("huge_segment", "compressed segment: size 209715200 out of range"),
        ("ragged_grouping", "blob record: sizes not whole elements of its byte grouping"),
    ):
        p = subprocess.run([str(TRTRACE), "verify", str(t[case])], capture_output=True, text=True)
        assert p.returncode == 2 and what in p.stderr.splitlines()[0], p.stderr
    p = subprocess.run([str(TRTRACE), "verify", str(t["zeros_256m"])], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def run_python(code, timeout=300):
    return subprocess.run(
        [sys.executable, "-c", PY + code], capture_output=True, text=True, env=py_env(), timeout=timeout
    )


def test_lost_blob_array_keeps_its_memory(lies):
    """Weights.array() of a Lost blob: zeros that stay readable while the array lives, also after
    the trace is closed and dropped (the array's base keeps its owner). Before: a view of pages
    unmapped before array() returned, and the interpreter died of SIGSEGV."""
    d, t = lies
    p = run_python(f"""
import gc
t = trtrace.open({str(t["lost"])!r})
w = t.weights[0]
a = w.array()
assert a.shape == (1 << 20,) and a.dtype.name == "float32", a
t.close(); del t, w; gc.collect()
assert not a.any() and a.sum() == 0
print("ok")
""")
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr


def test_python_refuses_a_footer_that_lies(lies):
    """trtrace.open of a footer claiming 2^62 calls: TraceError "corrupt" at once (accepted, it would
    keep Trace.calls from ever returning). A footer whose segment entry claims calls the segment does not
    hold: open works (O(1)), reading the calls fails "corrupt" naming the segment."""
    d, t = lies
    p = run_python(
        f"""
try:
    trtrace.open({str(t["footer_calls"])!r})
except trtrace.TraceError as e:
    print(e.kind, e)
t = trtrace.open({str(t["footer_segment"])!r})
try:
    t.calls
except trtrace.TraceError as e:
    print(e.kind, e)
""",
        timeout=120,
    )
    lines = p.stdout.splitlines()
    assert p.returncode == 0 and len(lines) == 2, p.stdout + p.stderr
    assert lines[0].startswith("corrupt ") and "footer: total_calls 4611686018427387904 is not the sum" in lines[0]
    assert (
        lines[1].startswith("corrupt ") and "segment 0 at offset" in lines[1] and "the index says 8 calls" in lines[1]
    )
