"""Long work reports progress on stderr (bytes or calls, percent, rate, ETA): trtrace verify,
rewrite, convert (both ways) and tensorrt_player. Shown on a terminal, or with TRTRACE_PROGRESS=1;
never into a pipe by default (so one-line errors stay one line). Each counted phase ends at 100%; the
player names its phases (decoding weights, replaying calls, building network N, writing the engine
of network N), and the library's build, which it cannot count, is a phase with the time spent
(issue 24: not "97%, ETA 0 s" for minutes)."""

import os
import re
import subprocess

import pytest

from conftest import PLAYER, TRTRACE, capture, trt_lib
from test_decode_cache import compressed_capture

AMOUNT = r"[\d.]+ (?:B|KiB|MiB|GiB|TiB)"
BYTES_LINE = rf"{{label}}: {AMOUNT} / {AMOUNT} \(\d+%\), {AMOUNT}/s, ETA (?:\d+ s|\?)"
CALLS_LINE = r"{label}: \d+ calls / \d+ calls \(\d+%\), \d+ calls/s, ETA (?:\d+ s|\?)"


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    d = tmp_path_factory.mktemp("progress")
    capture("build_cnn.py", d / "c.trtrace", "--out", d / "app.engine", "--networks", 2)
    return d / "c.trtrace"


def run(cmd, progress):
    env = dict(os.environ)
    env.pop("TRTRACE_PROGRESS", None)
    if progress:
        env.update(TRTRACE_PROGRESS="1", TRTRACE_PROGRESS_INTERVAL_MS="0")  # a report per record
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr.splitlines()


def reports(lines, pattern, label):
    rx = re.compile(pattern.format(label=re.escape(label)))
    return [ln for ln in lines if rx.fullmatch(ln)]


def cases(trace):
    d = trace.parent
    return [
        ([TRTRACE, "verify", trace], BYTES_LINE, f"trtrace verify {trace}: checking blocks"),
        (
            [TRTRACE, "rewrite", "--raw", trace, d / "r.trtrace"],
            BYTES_LINE,
            f"trtrace rewrite {d / 'r.trtrace'}: copying weights",
        ),
        ([TRTRACE, "convert", trace, d / "c.json"], CALLS_LINE, f"trtrace convert {trace}: converting calls"),
        (
            [TRTRACE, "convert", d / "c.json", d / "back.trtrace"],
            BYTES_LINE,
            f"trtrace convert {d / 'c.json'}: writing weights",
        ),
        (
            [PLAYER, "-j", trace, "-o", d / "e.engine", "--lib", trt_lib(), "-q"],
            CALLS_LINE,
            f"tensorrt_player {trace}: replaying calls",
        ),
    ]


@pytest.mark.parametrize("i", range(5), ids=["verify", "rewrite", "trace_to_json", "json_to_trace", "player"])
def test_long_work_reports_progress_when_asked(trace, i):
    cmd, pattern, label = cases(trace)[i]
    got = reports(run(cmd, True), pattern, label)
    assert len(got) >= 2, f"no progress reports from {cmd}"
    # The amount done never goes back, and never passes the total.
    done = [amount(g.rsplit(": ", 1)[1].split(" / ")[0]) for g in got]
    total = [amount(g.split(" / ")[1].split(" (")[0]) for g in got]
    assert done == sorted(done), got
    assert all(d <= t for d, t in zip(done, total)), got
    assert all(int(re.search(r"\((\d+)%\)", g).group(1)) <= 100 for g in got)
    # The phase ends complete: its last report is all of it.
    assert got[-1].endswith("ETA 0 s") and "(100%)" in got[-1] and done[-1] == total[-1], got[-1]


def amount(text):
    """'1.50 KiB' -> 1536.0, '12 calls' -> 12.0."""
    num, unit = text.split()
    return float(num) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "calls": 1}[unit]


@pytest.mark.parametrize("i", range(5), ids=["verify", "rewrite", "trace_to_json", "json_to_trace", "player"])
def test_no_progress_into_a_pipe_by_default(trace, i):
    cmd, pattern, label = cases(trace)[i]
    lines = run(cmd, False)
    assert not any(ln.startswith(label + ":") and "ETA" in ln for ln in lines), lines


@pytest.mark.parametrize("which", ["compressed", "two_networks"])
def test_player_names_its_phases_and_times_each_build(trace, tmp, which):
    """Decoding (compressed weights), the calls, each network's build and its engine's write, in
    that order per network; the builds as phases with the time spent, never a percentage."""
    networks = [0] if which == "compressed" else [0, 1]
    if which == "compressed":
        trace = compressed_capture(tmp)
    label = f"tensorrt_player {trace}"
    cmd = [PLAYER, "-j", trace, "-o", tmp / "p.engine", "--lib", trt_lib(), "-q", "--decode-cache", "temp"]
    lines = [ln for ln in run(cmd, True) if ln.startswith(label + ": ")]
    phases = [ln[len(label) + 2 :].split(": ", 1)[0] for ln in lines]
    named = [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p]  # each run of a phase once
    want = ["decoding weights"] if which == "compressed" else []
    want.append("replaying calls")
    for n in networks:
        want += [f"building network {n}", f"writing the engine of network {n}", "replaying calls"]
    assert named == want, named
    for phase in ("decoding weights", "replaying calls")[which != "compressed" :]:
        assert "(100%)" in [ln for ln in lines if f": {phase}: " in ln][-1], phase
    for n in networks:
        build = [ln for ln in lines if ln.startswith(f"{label}: building network {n}: ")]
        assert all(
            re.fullmatch(rf"{re.escape(label)}: building network {n}: (\d+ s elapsed|done in \d+\.\d s)", ln)
            for ln in build
        ), build
        assert build[0].endswith(": 0 s elapsed") and build[-1].split(": ")[-1].startswith("done in "), build


def test_a_failed_phase_does_not_claim_100_percent(trace, tmp):
    """A replay that stops (here: its output cannot be written) ends no phase at 100% after it."""
    cmd = [PLAYER, "-j", trace, "-o", tmp / "no" / "such" / "folder" / "e.engine", "--lib", trt_lib(), "-q"]
    env = dict(os.environ, TRTRACE_PROGRESS="1", TRTRACE_PROGRESS_INTERVAL_MS="0")
    proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, env=env)
    assert proc.returncode == 1, proc.stderr
    calls = [ln for ln in proc.stderr.splitlines() if ": replaying calls: " in ln]
    assert not any("(100%)" in ln for ln in calls), calls
    assert not any(": done in " in ln for ln in proc.stderr.splitlines() if ": writing the engine" in ln)
