"""trtrace reduce (issue 17 item 1), on captures of the real library.

A 120-layer chain whose build fails at one Shuffle layer (tests/apps/build_failing_chain.py: the
library accepts every call and rejects the reshape only when it builds) is reduced to at most five
layers that fail with the same first library error line; every candidate is kept in --artifacts
with its verdict. Candidates that crash or hang the check are survived (child process, timeout).
A capture that does not fail is said so, exit 4 (docs/errors.md has the rows).
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ASAN_RUNTIME, BUILD, ROOT, TRTRACE, capture, play, trt_lib, trtrace


def reduce(*args, env=None):
    return subprocess.run(
        [str(TRTRACE), "reduce", *map(str, args)], capture_output=True, text=True, env=dict(os.environ, **(env or {}))
    )


def first_error(proc):
    """The first library error line the player prints under "build failed"."""
    lines = proc.stdout.splitlines()
    i = next(i for i, l in enumerate(lines) if ": build failed" in l)
    return lines[i + 1].strip()


def layers_of(trace):
    """Names the layers of a trace were given (every layer of the chain app is named)."""
    return {
        l.split('name="')[1].split('"')[0] for l in trtrace("dump", trace).stdout.splitlines() if "Layer::setName(" in l
    }


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
    assert (
        p.stdout.startswith(f"{tmp_path / 'min.trtrace'}: layers 120 → 1, calls ")
        and "still fails: exit 3: " in p.stdout
    )
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
    limit = 8 if ASAN_RUNTIME else 2  # the check's `trtrace dump` is slower under the sanitizers
    p = reduce(
        t,
        "-o",
        tmp_path / "min.trtrace",
        "--check",
        check,
        "--fail-code",
        1,
        "--timeout",
        limit,
        "--artifacts",
        art,
        "--json",
    )
    assert p.returncode == 0, p.stderr
    assert layers_of(tmp_path / "min.trtrace") == {"bad_reshape", "layer_2", "layer_3"}
    results = [r.split("\t")[5] for r in (art / "verdicts.tsv").read_text().splitlines()[1:]]
    assert any(r == f"exit 124: ran past --timeout {limit} s" for r in results), results
    assert any(r.startswith("exit 139") for r in results), results


SLEEPER = """
import os, sys, time
if sys.argv[2] == sys.argv[1]:
    sys.exit(1)  # the input itself fails
with open(sys.argv[3], "a") as f:
    f.write(f"{os.getpid()}\\n")
time.sleep(600)  # every candidate hangs until it is ended
"""


def alive(pid):
    """Whether the process runs (a zombie no one reaped has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_reduce_interrupted_ends_its_candidate_and_leaves_nothing(tmp_path, sig):
    """^C (SIGINT) or SIGTERM while a candidate runs: that candidate, in a process group of its own
    (which the terminal's ^C does not reach), is ended; the temporary candidates are removed and no
    output appears; one line, exit 128 + the signal."""
    t = tmp_path / "t.trtrace"
    capture("build_failing_chain.py", t, "--out", tmp_path / "e", "--layers", 6, "--bad", 3, check=False)
    (tmp_path / "sleeper.py").write_text(SLEEPER)
    (tmp_path / "tmp").mkdir()
    pids = tmp_path / "pids"
    quiet = "env ASAN_OPTIONS=detect_leaks=0 " if ASAN_RUNTIME else ""
    check = f"{quiet}{sys.executable} {tmp_path / 'sleeper.py'} {t} {{}} {pids}"
    out = tmp_path / "min.trtrace"
    p = subprocess.Popen(
        [str(TRTRACE), "reduce", t, "-o", out, "--check", check, "--fail-code", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, TMPDIR=str(tmp_path / "tmp")),
    )
    try:
        for _ in range(1200):  # (a hang guard, not a measurement: the first candidate's check starts)
            if pids.exists() and pids.read_text().endswith("\n") or p.poll() is not None:
                break
            time.sleep(0.05)
        assert p.poll() is None, p.communicate()
        p.send_signal(sig)
        stdout, stderr = p.communicate(timeout=120)
    finally:
        p.kill()
    assert p.returncode == 128 + sig, stderr
    name = signal.Signals(sig).name
    assert stderr.splitlines()[-1] == f"trtrace: reduce {t}: interrupted by {name}; nothing written", stderr
    assert stdout == "" and not out.exists()
    assert list((tmp_path / "tmp").iterdir()) == []
    for pid in map(int, pids.read_text().split()):
        assert not alive(pid), f"candidate check {pid} still runs"


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
    lines = block[next(i for i, l in enumerate(block) if "build_failing_chain.py" in l) :]
    assert [l.split()[1] for l in lines[1:]] == ["reduce", "export", "min_py/build.py"], lines
    (tmp_path / "build").symlink_to(BUILD)
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    env = {"HOME": str(tmp_path), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    p = subprocess.run(
        ["bash", "-c", "source build/env.sh\n" + "\n".join(lines)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert p.returncode == 1, p.stdout + p.stderr  # the exported script's build fails, as the app's did
    assert "min.trtrace: layers 120 → 1, " in p.stdout, p.stdout
    assert (tmp_path / "reduce-runs" / "verdicts.tsv").is_file() and (tmp_path / "min_py" / "weights").exists() is False
    assert (
        "network 0: build failed" in p.stderr and "Reshaping [4,16] to [3,5]" in p.stdout.split("min.trtrace: ")[-1]
    ), p.stderr


# reduce as a process supervisor (issue 23, class 8): a check judged by its own exit, whatever it
# leaves running; a hang that is its own verdict; an artifacts folder whose names cannot be planted.
GRANDCHILD_CHECK = """
import os, subprocess, sys
dump = subprocess.run([sys.argv[1], "dump", sys.argv[2]], capture_output=True, text=True).stdout
# Two processes that outlive the check holding its stdout: one in its process group, one in a session
# of its own (out of reach of a group kill); their ids go to a file, for the test to clean up.
for new_session in (False, True):
    p = subprocess.Popen(["sleep", "300"], start_new_session=new_session)
    with open(sys.argv[3], "a") as f:
        f.write(f"{p.pid}\\n")
sys.exit(1 if '"bad_reshape"' in dump else 0)
"""


def kill_all(pid_file):
    for pid in pid_file.read_text().split() if pid_file.exists() else []:
        try:
            os.kill(int(pid), 9)
        except ProcessLookupError:
            pass


def test_reduce_judges_a_check_by_its_exit_not_by_what_it_leaves_running(tmp_path):
    """A check that exits at once but leaves grandchildren holding its output: each candidate gets the
    check's own verdict (it made every candidate "time out", counted as failing: 12 -> 0 layers)."""
    t = tmp_path / "t.trtrace"
    capture("build_failing_chain.py", t, "--out", tmp_path / "e", "--layers", 6, "--bad", 3, check=False)
    (tmp_path / "check.py").write_text(GRANDCHILD_CHECK)
    pids = tmp_path / "pids"
    quiet = "env ASAN_OPTIONS=detect_leaks=0 " if ASAN_RUNTIME else ""
    check = f"{quiet}{sys.executable} {tmp_path / 'check.py'} {TRTRACE} {{}} {pids}"
    art = tmp_path / "art"
    try:
        p = reduce(t, "-o", tmp_path / "min.trtrace", "--check", check, "--timeout", 60, "--artifacts", art, "--json")
        assert p.returncode == 0, p.stderr
        assert layers_of(tmp_path / "min.trtrace") == {"bad_reshape"}, p.stderr
        rows = [r.split("\t") for r in (art / "verdicts.tsv").read_text().splitlines()[1:]]
        assert {r[1] for r in rows} == {"good", "bad"} and not any("--timeout" in r[5] for r in rows), rows
        # What the check left in its process group went with it; the one in its own session did not.
        group, session = [int(x) for x in pids.read_text().split()[:2]]
        assert not os.path.exists(f"/proc/{group}") or "Z" in open(f"/proc/{group}/stat").read().split()[2]
    finally:
        kill_all(pids)


HANG_CHECK = """
import subprocess, sys, time
dump = subprocess.run([sys.argv[1], "dump", sys.argv[2]], capture_output=True, text=True).stdout
if '"layer_2"' not in dump:
    time.sleep(600)
sys.exit(1 if '"bad_reshape"' in dump else 0)
"""


def test_reduce_counts_a_hang_as_its_own_verdict(tmp_path):
    """A candidate that runs past --timeout is not "still failing" (without --fail-code 124): removing
    layer_2 hangs the check, so layer_2 stays; the hang is kept in timeout/ and said once at the end."""
    t = tmp_path / "t.trtrace"
    capture("build_failing_chain.py", t, "--out", tmp_path / "e", "--layers", 6, "--bad", 4, check=False)
    (tmp_path / "check.py").write_text(HANG_CHECK)
    quiet = "env ASAN_OPTIONS=detect_leaks=0 " if ASAN_RUNTIME else ""
    art = tmp_path / "art"
    limit = 8 if ASAN_RUNTIME else 2
    p = reduce(
        t,
        "-o",
        tmp_path / "min.trtrace",
        "--check",
        f"{quiet}{sys.executable} {tmp_path / 'check.py'} {TRTRACE} {{}}",
        "--timeout",
        limit,
        "--artifacts",
        art,
    )
    assert p.returncode == 0, p.stderr
    assert layers_of(tmp_path / "min.trtrace") == {"bad_reshape", "layer_2"}, p.stderr
    rows = [r.split("\t") for r in (art / "verdicts.tsv").read_text().splitlines()[1:]]
    hung = [r for r in rows if r[5] == f"exit 124: ran past --timeout {limit} s"]
    assert hung and all(r[1] == "timeout" and (art / "timeout" / r[0]).is_file() for r in hung), rows
    assert f"candidates ran past --timeout {limit} s: counted as not failing" in p.stderr, p.stderr


PLANTING_CHECK = """
import os, sys
# Run on the input first (before reduce makes its artifacts folder): plant a link where the verdicts go.
art, victim = sys.argv[2], sys.argv[3]
if not os.path.exists(art):
    os.mkdir(art)
    os.symlink(victim, os.path.join(art, "verdicts.tsv"))
    os.symlink(os.path.dirname(victim), os.path.join(art, "good"))
sys.exit(1)
"""


def test_reduce_artifacts_never_follow_a_planted_link(tmp_path):
    """Names planted in --artifacts after its emptiness check are refused, never followed out of it: a
    link at verdicts.tsv overwrote the file it points to."""
    t = tmp_path / "t.trtrace"
    capture("build_failing_chain.py", t, "--out", tmp_path / "e", "--layers", 4, "--bad", 2, check=False)
    (tmp_path / "check.py").write_text(PLANTING_CHECK)
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "precious.txt"
    victim.write_text("keep me\n")
    art = tmp_path / "art"
    p = reduce(
        t,
        "-o",
        tmp_path / "min.trtrace",
        "--check",
        f"{sys.executable} {tmp_path / 'check.py'} {{}} {art} {victim}",
        "--artifacts",
        art,
    )
    assert p.returncode == 1, p.stdout + p.stderr
    assert p.stderr.splitlines()[-1].startswith(f"trtrace: --artifacts {art}: not empty"), p.stderr
    assert victim.read_text() == "keep me\n" and sorted(os.listdir(outside)) == ["precious.txt"]
    assert not (tmp_path / "min.trtrace").exists()


# The player tells reduce what failed as data (issue 26): its --json report carries each network's
# library errors, and reduce's default verdict reads them there, never the player's human text.
def test_player_json_carries_each_networks_errors(chain, tmp_path):
    text = play(chain, tmp_path / "t.engine", "-q", check=False)
    report = play(chain, tmp_path / "j.engine", "-q", "--json", check=False)
    assert text.returncode == report.returncode == 3, report.stdout + report.stderr
    (net,) = json.loads(report.stdout)["networks"]
    assert net["network"] == 0 and net["ok"] is False, net
    assert net["errors"] and net["errors"][0] == first_error(text), (net, text.stdout)


FAKE_PLAYER = """#!/bin/sh
# A player that reports a failure only in its --json report; its other output looks like another one.
echo 'network 7: build failed:' >&2
echo '  a decoy that no report holds' >&2
case " $* " in *" --json "*) ;; *) exit 0 ;; esac
printf '%s\\n' '{"capture": "x", "networks": [{"network": 0, "ok": true, "errors": []}, {"network": 1, "ok": false, "errors": ["(Unnamed Layer* 12) [Shuffle]: bad\\nreshape", "second"]}]}'
exit 3
"""


def test_reduce_reads_the_failure_from_the_players_json(chain, tmp_path):
    """reduce runs the tensorrt_player beside it: here one whose failure is only in its --json report."""
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "trtrace").write_bytes(TRTRACE.read_bytes())
    (tools / "tensorrt_player").write_text(FAKE_PLAYER)
    for t in ("trtrace", "tensorrt_player"):
        (tools / t).chmod(0o755)
    p = subprocess.run(
        [str(tools / "trtrace"), "reduce", str(chain), "-o", str(tmp_path / "min.trtrace"), "--json"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    # The first error of each failed network, escaped as a terminal shows it, unnamed layers unnumbered.
    assert json.loads(p.stdout)["failure"] == r"exit 3: network 1: (Unnamed Layer* #) [Shuffle]: bad\nreshape", p.stdout


def test_player_json_errors_keep_a_hostile_layer_name_inside_a_string(tmp_path):
    """A trace is untrusted: the library's error names the layer, and the name (quote, newline, ESC,
    non-ASCII) must stay inside one JSON string of the player's --json report."""
    trace = tmp_path / "h.trtrace"
    capture("hostile_failing_build.py", trace, "--out", tmp_path / "app.engine", check=False)
    report = play(trace, tmp_path / "p.engine", "-q", "--json", check=False)
    assert report.returncode == 3, report.stdout + report.stderr
    (net,) = json.loads(report.stdout)["networks"]
    assert net["ok"] is False and any('bad"layer\n\x1b[31m\u00e9' in e for e in net["errors"]), net
