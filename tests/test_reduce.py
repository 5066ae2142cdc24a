"""trtrace reduce (issue 17 item 1), on captures of the real library.

A 120-layer chain whose build fails at one Shuffle layer (tests/apps/build_failing_chain.py: the
library accepts every call and rejects the reshape only when it builds) is reduced to at most five
layers that fail with the same first library error line; every candidate is kept in --artifacts
with its verdict. Candidates that crash or hang the check are survived (child process, timeout).
A capture that does not fail is said so, exit 4 (docs/errors.md has the rows).
"""
import json
import os
import subprocess
import sys

import pytest

from conftest import ASAN_RUNTIME, BUILD, ROOT, TRTRACE, capture, play, trt_lib, trtrace


def reduce(*args, env=None):
    return subprocess.run([str(TRTRACE), "reduce", *map(str, args)], capture_output=True, text=True,
                          env=dict(os.environ, **(env or {})))


def first_error(proc):
    """The first library error line the player prints under "build failed"."""
    lines = proc.stdout.splitlines()
    i = next(i for i, l in enumerate(lines) if ": build failed" in l)
    return lines[i + 1].strip()


def layers_of(trace):
    """Names the layers of a trace were given (every layer of the chain app is named)."""
    return {l.split('name="')[1].split('"')[0] for l in trtrace("dump", trace).stdout.splitlines()
            if "Layer::setName(" in l}


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    d = tmp_path_factory.mktemp("chain")
    p = capture("build_failing_chain.py", d / "t.trtrace", "--out", d / "app.engine", check=False)
    assert p.returncode == 1 and "build FAILED" in p.stderr, p.stderr
    return d / "t.trtrace"


def test_reduce_shrinks_a_failing_120_layer_build_to_its_bad_layer(chain, tmp_path):
    orig = play(chain, tmp_path / "o.engine", "-q", check=False)
    assert orig.returncode == 3, orig.stdout + orig.stderr
    assert len(layers_of(chain)) == 120
    art, out = tmp_path / "art", tmp_path / "min.trtrace"
    p = reduce(chain, "-o", out, "--artifacts", art, "--lib", trt_lib(), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    rep = json.loads(p.stdout)
    assert rep["layers"][0] == 120 and rep["layers"][1] <= 5
    assert rep["calls"][1] < rep["calls"][0] and rep["weight_bytes"][0] > 0 == rep["weight_bytes"][1]
    assert "bad_reshape" in layers_of(out)
    again = play(out, tmp_path / "m.engine", "-q", check=False)
    assert again.returncode == 3 and first_error(again) == first_error(orig), again.stdout + again.stderr
    # Every candidate kept, sorted by verdict; one progress line each on stderr.
    rows = [r.split("\t") for r in (art / "verdicts.tsv").read_text().splitlines()[1:]]
    assert len(rows) == rep["candidates"] and {r[1] for r in rows} == {"good", "bad"}
    for name, verdict, *_ in rows:
        assert (art / verdict / name).is_file()
    assert sum(l.startswith("trtrace reduce: candidate ") for l in p.stderr.splitlines()) == len(rows)
    # No single removal keeps the failure: each one-layer-less candidate of the result passed.
    assert any(r[1] == "good" and int(r[2]) == rep["layers"][1] - 1 for r in rows)


def test_reduce_text_report_and_no_candidates_left_without_artifacts(chain, tmp_path):
    (tmp_path / "tmp").mkdir()
    p = reduce(chain, "-o", tmp_path / "min.trtrace", "--lib", trt_lib(), env={"TMPDIR": str(tmp_path / "tmp")})
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(f"{tmp_path / 'min.trtrace'}: layers 120 → 1, calls ") and "still fails: exit 3: " in p.stdout
    assert list((tmp_path / "tmp").iterdir()) == []


def test_reduce_keeps_each_failing_network_and_ignores_unnamed_layer_numbers(tmp_path):
    """Two networks of unnamed layers both fail (build_cnn.py --fail): the failure to keep is each
    network's first error line, with the "(Unnamed Layer* N)" number left out (it moves as layers go)."""
    t = tmp_path / "f.trtrace"
    capture("build_cnn.py", t, "--out", tmp_path / "f.engine", "--networks", 2, "--fail", check=False)
    out = tmp_path / "min.trtrace"
    p = reduce(t, "-o", out, "--lib", trt_lib(), "--json")
    assert p.returncode == 0, p.stdout + p.stderr
    rep = json.loads(p.stdout)
    assert rep["layers"][1] * 2 < rep["layers"][0], rep
    assert rep["failure"].startswith("exit 3: network 0: ") and "; network 1: " in rep["failure"], rep
    assert "(Unnamed Layer* #)" in rep["failure"], rep
    again = play(out, tmp_path / "m.engine", "-q", check=False)
    assert again.returncode == 3 and again.stdout.count(": build failed") == 2, again.stdout


# A --check that judges by the layers a candidate keeps: it fails (exit 1) while bad_reshape is
# there, hangs when layer_3 is gone and crashes (SIGSEGV) when layer_2 is gone -- the faults a real
# library can show on some candidate, but not on demand, hence this stand-in (a test double).
CHECK = """
import os, signal, subprocess, sys, time
dump = subprocess.run([sys.argv[1], "dump", sys.argv[2]], capture_output=True, text=True).stdout
if '"bad_reshape"' not in dump:
    sys.exit(0)
if '"layer_3"' not in dump:
    time.sleep(600)
if '"layer_2"' not in dump:
    signal.signal(signal.SIGSEGV, signal.SIG_DFL)  # under ASan (preloaded) its handler would exit 1 instead
    os.kill(os.getpid(), signal.SIGSEGV)
sys.exit(1)
"""


def test_reduce_survives_candidates_that_crash_or_hang(tmp_path):
    t = tmp_path / "t.trtrace"
    capture("build_failing_chain.py", t, "--out", tmp_path / "e", "--layers", 12, "--bad", 8, check=False)
    (tmp_path / "check.py").write_text(CHECK)
    # Under ASan (preloaded into every child) the check is a Python program whose interpreter's own
    # leaks at exit would make it exit 1: leak checks off for it, as conftest does for Python apps.
    quiet = "env ASAN_OPTIONS=detect_leaks=0 " if ASAN_RUNTIME else ""
    check = f"{quiet}{sys.executable} {tmp_path / 'check.py'} {TRTRACE} {{}}"
    art = tmp_path / "art"
    limit = 8 if ASAN_RUNTIME else 2   # the check's `trtrace dump` is slower under the sanitizers
    p = reduce(t, "-o", tmp_path / "min.trtrace", "--check", check, "--fail-code", 1, "--timeout", limit,
               "--artifacts", art, "--json")
    assert p.returncode == 0, p.stderr
    assert layers_of(tmp_path / "min.trtrace") == {"bad_reshape", "layer_2", "layer_3"}
    results = [r.split("\t")[5] for r in (art / "verdicts.tsv").read_text().splitlines()[1:]]
    assert any(r == f"exit 124: ran past --timeout {limit} s" for r in results), results
    assert any(r.startswith("exit 139") for r in results), results


def test_reduce_of_a_capture_that_does_not_fail(tmp_path):
    t = tmp_path / "t.trtrace"
    capture("build_failing_chain.py", t, "--out", tmp_path / "e", "--bad", -1)
    p = reduce(t, "-o", tmp_path / "min.trtrace", "--lib", trt_lib())
    assert p.returncode == 4 and p.stdout == "", p.stdout + p.stderr
    err = p.stderr.splitlines()
    assert len(err) == 1 and err[0].startswith(f"trtrace: {t}: does not fail (exit 0: "), p.stderr
    assert not (tmp_path / "min.trtrace").exists()


def test_reduce_help():
    p = trtrace("reduce", "--help")
    for opt in ("--check", "--fail-regex", "--fail-code", "--artifacts", "--timeout", "--lib", "--json"):
        assert opt in p.stdout


@pytest.mark.skipif(bool(ASAN_RUNTIME), reason="README commands preload the shim into python3: run in the normal build")
def test_readme_reduce_and_export_lines_run_verbatim(tmp_path):
    """README "Debugging a failing build": its lines from the capture of the failing chain on (capture,
    reduce, export, the exported script), as written, from a folder laid out like the repository
    root, after `source build/env.sh`."""
    text = (ROOT / "README.md").read_text().split("\n## Debugging a failing build\n", 1)[1]
    block = text.split("```\n", 2)[1].splitlines()
    lines = block[next(i for i, l in enumerate(block) if "build_failing_chain.py" in l):]
    assert [l.split()[1] for l in lines[1:]] == ["reduce", "export", "min_py/build.py"], lines
    (tmp_path / "build").symlink_to(BUILD)
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    env = {"HOME": str(tmp_path), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    p = subprocess.run(["bash", "-c", "source build/env.sh\n" + "\n".join(lines)], capture_output=True, text=True,
                       env=env, cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr      # the exported script's build fails, as the app's did
    assert "min.trtrace: layers 120 → 1, " in p.stdout, p.stdout
    assert (tmp_path / "reduce-runs" / "verdicts.tsv").is_file() and (tmp_path / "min_py" / "weights").exists() is False
    assert "network 0: build failed" in p.stderr and "Reshaping [4,16] to [3,5]" in p.stdout.split("min.trtrace: ")[-1], p.stderr
