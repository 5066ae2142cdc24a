"""Long work reports progress on stderr (bytes or calls, percent, rate, ETA): trtrace verify,
rewrite, convert (both ways) and tensorrt_player. Shown on a terminal, or with TRTRACE_PROGRESS=1;
never into a pipe by default (so one-line errors stay one line)."""
import os
import re
import subprocess

import pytest

from conftest import PLAYER, TRTRACE, capture, trt_lib

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
        ([TRTRACE, "verify", trace], BYTES_LINE, f"trtrace verify {trace}"),
        ([TRTRACE, "rewrite", "--raw", trace, d / "r.trtrace"], BYTES_LINE, f"trtrace rewrite {d / 'r.trtrace'}"),
        ([TRTRACE, "convert", trace, d / "c.json"], CALLS_LINE, f"trtrace convert {trace}"),
        ([TRTRACE, "convert", d / "c.json", d / "back.trtrace"], BYTES_LINE, f"trtrace convert {d / 'c.json'}"),
        ([PLAYER, "-j", trace, "-o", d / "e.engine", "--lib", trt_lib(), "-q"], CALLS_LINE, f"tensorrt_player {trace}"),
    ]


@pytest.mark.parametrize("i", range(5), ids=["verify", "rewrite", "trace_to_json", "json_to_trace", "player"])
def test_long_work_reports_progress_when_asked(trace, i):
    cmd, pattern, label = cases(trace)[i]
    got = reports(run(cmd, True), pattern, label)
    assert len(got) >= 2, f"no progress reports from {cmd}"
    # The amount done never goes back, and never passes the total.
    done = [amount(g.split(": ", 1)[1].split(" / ")[0]) for g in got]
    total = [amount(g.split(" / ")[1].split(" (")[0]) for g in got]
    assert done == sorted(done), got
    assert all(d <= t for d, t in zip(done, total)), got
    assert all(int(re.search(r"\((\d+)%\)", g).group(1)) <= 100 for g in got)


def amount(text):
    """'1.50 KiB' -> 1536.0, '12 calls' -> 12.0."""
    num, unit = text.split()
    return float(num) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40, "calls": 1}[unit]


@pytest.mark.parametrize("i", range(5), ids=["verify", "rewrite", "trace_to_json", "json_to_trace", "player"])
def test_no_progress_into_a_pipe_by_default(trace, i):
    cmd, pattern, label = cases(trace)[i]
    lines = run(cmd, False)
    assert not any(ln.startswith(label + ":") and "ETA" in ln for ln in lines), lines
