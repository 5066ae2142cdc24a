"""``trtrace bench``: repeated replays of captured builds, timed per phase, across variants.

Each run is a fresh ``tensorrt_player --json`` process, so nothing carries over between runs. The
player reports when each of its phases ended on CLOCK_MONOTONIC, the clock ``time.monotonic_ns`` reads
here, so a run's phases (start, open, library, decode, dispatch, build, write, check, exit) add up to
its wall time as this process measures it from the fork to the wait. A variant is a library
(``--lib``) or a builder setting (``--set``); runs of the variants alternate (A B A B ...) so that the
machine's drift falls on all of them. The method, the statistics and the JSON schema: docs/bench.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional, Sequence

from . import _native

SCHEMA = "trtrace-bench/1"
PHASES = ("start", "open", "library", "decode", "dispatch", "build", "write", "check", "exit")

# Exit codes (docs/errors.md, "trtrace bench").
EXIT_OK, EXIT_USAGE, EXIT_FAILED_RUNS, EXIT_REGRESSION, EXIT_INTERRUPTED = 0, 1, 2, 4, 130  # EXIT_USAGE: bad input
EXIT_COMMAND_LINE = 64  # a command line that does not parse: every trtrace tool's (docs/errors.md)
# The player's exit codes bench tells apart (cli/exit_codes.h, exits::player).
PLAYER_FAILURE_REPRODUCED, PLAYER_NOTHING_WRITTEN = 3, 6


class BenchError(Exception):
    """A usage or input error: one line, exit 1."""


@dataclasses.dataclass(frozen=True)
class Variant:
    lib: Optional[str]
    sets: tuple[str, ...]

    @property
    def label(self) -> str:
        parts = [f"lib={self.lib}"] if self.lib else []
        parts += list(self.sets)
        return " ".join(parts) or "default"


@dataclasses.dataclass
class Run:
    trace: str
    variant: int
    index: int
    warmup: bool
    status: str = "ok"  # ok | build-failed | setting-rejected | error | timeout | crash
    exit_code: Optional[int] = None
    message: str = ""
    wall: float = 0.0
    phases: dict[str, float] = dataclasses.field(default_factory=dict)
    cpu_user: float = 0.0
    cpu_sys: float = 0.0
    peak_rss: int = 0  # bytes
    engines: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    decode_cache: str = ""
    calls: int = 0
    library: dict[str, Any] = dataclasses.field(default_factory=dict)
    settings: list[dict[str, Any]] = dataclasses.field(default_factory=list)


# ---- one replay -------------------------------------------------------------------------------
def player_command(player: str, trace: str, v: Variant, network: Optional[int], out: str) -> list[str]:
    cmd = [player, "-j", trace, "-o", out, "--json", "-q"]
    if v.lib:
        cmd += ["--lib", v.lib, "--ignore-version"]
    for s in v.sets:
        cmd += ["--set", s]
    if network is not None:
        cmd += ["--network", str(network)]
    return cmd


def _wait(pid: int, timeout: Optional[float]) -> tuple[int, Any, int, bool]:
    """wait4 in a thread (a blocking wait measures the exit to the nanosecond); the whole process
    group is killed at the timeout."""
    box: dict[str, Any] = {}

    def reap() -> None:
        _, status, usage = os.wait4(pid, 0)
        box.update(status=status, usage=usage, t=time.monotonic_ns())

    t = threading.Thread(target=reap, daemon=True)
    t.start()
    t.join(timeout)
    timed_out = t.is_alive()
    if timed_out:
        os.killpg(pid, signal.SIGKILL)
        t.join()
    return box["status"], box["usage"], box["t"], timed_out


def _seconds(a: int, b: int) -> float:
    return max(0, b - a) / 1e9


def _phases(j: dict[str, Any], spawn: int, reaped: int) -> dict[str, float]:
    p = j["phases"]
    ns = _seconds
    replay = ns(p["decoded_ns"], p["replayed_ns"])
    return {
        "start": ns(spawn, p["start_ns"]),
        "open": ns(p["start_ns"], p["opened_ns"]),
        "library": ns(p["opened_ns"], p["library_ns"]),
        "decode": ns(p["library_ns"], p["decoded_ns"]),
        "dispatch": max(0.0, replay - p["build_s"] - p["write_s"]),
        "build": p["build_s"],
        "write": p["write_s"],
        "check": ns(p["replayed_ns"], p["checked_ns"]),
        "exit": ns(p["checked_ns"], reaped),
    }


def _classify(run: Run, code: int, j: Optional[dict[str, Any]], err: str) -> None:
    last = err.strip().splitlines()[-1] if err.strip() else ""
    if code < 0:
        run.status, run.message = "crash", f"killed by signal {-code}"
    elif code == PLAYER_FAILURE_REPRODUCED:
        run.status, run.message = "build-failed", last or "the build failed"
    elif code == PLAYER_NOTHING_WRITTEN and j is not None:
        pass  # a capture without a build: its replay is measured all the same (no engine to write)
    elif code != 0 or j is None:
        run.status, run.message = "error", last or f"exit {code}"
    elif any(s.get("rejected") for s in j.get("settings", [])):
        run.status, run.message = "setting-rejected", "the library refused a --set value"


def run_once(
    player: str, trace: str, v: Variant, network: Optional[int], timeout: Optional[float], workdir: str, run: Run
) -> Run:
    rundir = tempfile.mkdtemp(dir=workdir)
    out = os.path.join(rundir, "engine")
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        spawn = time.monotonic_ns()
        proc = subprocess.Popen(
            player_command(player, trace, v, network, out),
            stdout=so,
            stderr=se,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        status, usage, reaped, timed_out = _wait(proc.pid, timeout)
        proc.returncode = os.waitstatus_to_exitcode(status)
        so.seek(0)
        se.seek(0)
        text, err = so.read().decode("utf-8", "replace"), se.read().decode("utf-8", "replace")
    run.wall, run.exit_code = (reaped - spawn) / 1e9, proc.returncode
    run.cpu_user, run.cpu_sys, run.peak_rss = usage.ru_utime, usage.ru_stime, usage.ru_maxrss * 1024
    j = _json_or_none(text)
    if timed_out:
        run.status, run.message = "timeout", f"killed after {timeout:g} s"
        return run
    _classify(run, proc.returncode, j, err)
    if j is not None and "phases" in j:
        run.phases = _phases(j, spawn, reaped)
        run.engines = [
            {"network": n["network"], "ok": n["ok"], "size": n["size"], "xxh3": n["xxh3"]} for n in j["networks"]
        ]
        run.decode_cache, run.calls = j["decode_cache"]["how"], j["calls"]
        run.library, run.settings = j.get("library", {}), j.get("settings", [])
    shutil.rmtree(rundir, ignore_errors=True)  # the engines' hashes are kept; the bytes are not needed
    return run


def _json_or_none(text: str) -> Optional[dict[str, Any]]:
    try:
        j = json.loads(text)
        return j if isinstance(j, dict) else None
    except ValueError:
        return None


# ---- the plan: which runs, in which order -----------------------------------------------------
def expand_traces(paths: Sequence[str]) -> list[str]:
    """Files as given; a folder: every capture in it (traces, NVIDIA JSON), sorted."""
    out: list[str] = []
    for p in paths:
        path = pathlib.Path(p)
        if path.is_dir():
            found = sorted(str(f) for f in path.iterdir() if f.is_file() and (f.suffix in (".trtrace", ".json")))
            if not found:
                raise BenchError(f"{p}: no capture in this folder (*.trtrace, *.json)")
            out += found
        elif path.is_file():
            out.append(str(path))
        else:
            raise BenchError(f"{p}: cannot open (No such file or directory)")
    return out


def variants_of(libs: Sequence[str], sets: Sequence[str]) -> list[Variant]:
    """Every library times every combination of the --set values (each --set: Method=V1,V2,...)."""
    axes: list[list[str]] = []
    for s in sets:
        name, eq, values = s.partition("=")
        if not eq or not values:
            raise BenchError(f"--set {s}: expected Interface::method=V1,V2,...")
        axes.append([f"{name}={x}" for x in values.split(",")])
    combos = list(itertools.product(*axes)) if axes else [()]
    choices: list[Optional[str]] = list(libs) or [None]
    return [Variant(lib, tuple(c)) for lib in choices for c in combos]


def check_settings(player: str, trace: str, variants: Sequence[Variant]) -> None:
    """Every --set value is read by the player (the API spec's names and types) before any run."""
    for v in variants:
        if not v.sets:
            continue
        cmd = [player, "-j", trace, "--validate-set"] + [x for s in v.sets for x in ("--set", s)]
        r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if r.returncode != 0:
            raise BenchError(
                (r.stderr.strip().splitlines() or [f"--set: refused (exit {r.returncode})"])[0].removeprefix(
                    "tensorrt_player: "
                )
            )


def schedule(traces: Sequence[str], nvar: int, warmup: int, runs: int) -> list[Run]:
    """Warmups first, then the measured runs, the variants interleaved: A B A B ..."""
    plan = []
    for t in traces:
        for i in range(warmup + runs):
            plan += [Run(t, v, i, i < warmup) for v in range(nvar)]
    return plan


# ---- running ----------------------------------------------------------------------------------
class Progress:
    """Runs done / total and the ETA on stderr (a terminal, or TRTRACE_PROGRESS=1)."""

    def __init__(self, total: int) -> None:
        env = os.environ.get("TRTRACE_PROGRESS")
        self.on = env == "1" or (env != "0" and sys.stderr.isatty())
        self.total, self.done, self.t0 = total, 0, time.monotonic()

    def step(self, r: Run) -> None:
        self.done += 1
        if not self.on:
            return
        el = time.monotonic() - self.t0
        eta = el / self.done * (self.total - self.done)
        end = "\r" if sys.stderr.isatty() and self.done < self.total else "\n"
        sys.stderr.write(
            f"trtrace bench: run {self.done}/{self.total} ({r.status}), elapsed {el:.0f} s, ETA {eta:.0f} s{end}"
        )
        sys.stderr.flush()


def execute(
    plan: list[Run], player: str, variants: Sequence[Variant], opts: argparse.Namespace
) -> tuple[list[Run], bool]:
    """Runs the plan, --jobs at a time; with --min-time, more rounds of one run per variant (the same
    interleaving) until every variant of each trace has that much measured wall time. Ctrl-C stops
    it and keeps what was measured."""
    done: list[Run] = []
    progress = Progress(len(plan))
    with tempfile.TemporaryDirectory(prefix="trtrace-bench-") as work:

        def one(r: Run) -> Run:
            return run_once(player, r.trace, variants[r.variant], opts.network, opts.timeout, work, r)

        try:
            with ThreadPoolExecutor(max_workers=opts.jobs) as pool:
                batch = plan
                while batch:
                    for r in pool.map(one, batch):
                        done.append(r)
                        progress.step(r)
                    batch = _more_runs(done, len(variants), opts.min_time)
                    progress.total += len(batch)
        except KeyboardInterrupt:
            sys.stderr.write("\ntrtrace bench: interrupted; reporting the runs measured so far\n")
            return done, True
    return done, False


def _more_runs(done: list[Run], nvar: int, min_time: Optional[float], cap: int = 1000) -> list[Run]:
    """--min-time: one more run of every variant of each trace whose variants have not all spent it."""
    if not min_time:
        return []
    more = []
    for t in dict.fromkeys(r.trace for r in done):
        mine = [r for r in done if r.trace == t and not r.warmup]
        spent = [sum(r.wall for r in mine if r.variant == v) for v in range(nvar)]
        nxt = max((r.index for r in done if r.trace == t), default=0) + 1
        if min(spent) < min_time and len(mine) < cap:
            more += [Run(t, v, nxt, False) for v in range(nvar)]
    return more


# ---- the command and the Python API ------------------------------------------------------------
def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            x = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a {'whole ' if kind is int else ''}number") from None
        if not (0 < x <= (10**6 if kind is int else 7 * 86400)) or x != x:
            raise argparse.ArgumentTypeError(f"'{text}' is out of range")
        return x

    return parse


class _Parser(argparse.ArgumentParser):
    """Command-line errors as every trtrace tool gives them: one line with the tool's prefix, exit 64."""

    def error(self, message: str) -> Any:
        sys.stderr.write(f"trtrace: bench: {message} (see trtrace bench --help)\n")
        sys.exit(EXIT_COMMAND_LINE)


_OUTPUT_FORMATS = {".json": "json", ".csv": "csv", ".md": "md", ".png": "plot", ".html": "plot"}


def _output_format(path: str) -> tuple[str, str]:
    """-o F: (F, the report form its suffix names); another suffix does not parse."""
    fmt = _OUTPUT_FORMATS.get(os.path.splitext(path)[1].lower())
    if fmt is None:
        raise argparse.ArgumentTypeError(f"'{path}': name a .json, .csv, .md, .png or .html file")
    return path, fmt


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="trtrace bench",
        description="Repeated replays of captured builds, timed per phase, "
        "across library versions and builder settings (docs/bench.md).",
    )
    p.add_argument(
        "traces", nargs="+", metavar="TRACE", help="traces or NVIDIA JSON captures; a folder: every capture in it"
    )
    p.add_argument(
        "--lib", action="append", default=[], help="a libtensorrt_rtx.so.1 to replay with (a variant; repeatable)"
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--runs", type=_positive(int), default=None, help="measured runs per variant and trace (default 10)")
    g.add_argument(
        "--min-time", type=_positive(float), default=None, help="measure until each variant has spent S seconds"
    )
    p.add_argument(
        "--warmup", type=int, default=1, choices=range(0, 101), metavar="N", help="unmeasured runs first (default 1)"
    )
    p.add_argument("--network", type=int, default=None, help="replay only this network (0, 1, ...)")
    p.add_argument(
        "--set",
        action="append",
        default=[],
        dest="sets",
        metavar="Interface::method=V1,V2,...",
        help="a builder setting; each value is a variant (repeatable: every combination)",
    )
    p.add_argument("--jobs", type=_positive(int), default=1, help="concurrent replays (throughput over many traces)")
    p.add_argument(
        "--timeout", type=_positive(float), default=None, help="seconds before a run is killed (a 'timeout' run)"
    )
    p.add_argument(
        "--alpha", type=float, default=0.05, help="significance level after Holm's adjustment (default 0.05)"
    )
    p.add_argument(
        "--min-effect", type=float, default=0.01, help="smallest ratio change called a difference (default 0.01)"
    )
    p.add_argument(
        "-o",
        "--output",
        action="append",
        default=[],
        type=_output_format,
        metavar="F",
        help="write the report to F, in the form its name ends with: .json, .csv, .md, or the plot: .png, "
        ".html (repeatable)",
    )
    for fmt in ("json", "csv", "md"):
        p.add_argument(f"--{fmt}", metavar="F", help=f"write the report as {fmt.upper()} to F (as -o F.{fmt})")
    p.add_argument("--plot", metavar="F.png|F.html", help="write the plot (PNG, or a self-contained HTML page)")
    p.add_argument(
        "--compare", metavar="BASELINE.json", help="exit 4 when a figure is slower than in this earlier --json"
    )
    p.add_argument("--player", help=argparse.SUPPRESS)
    return p


def _write(path: str, data: bytes, inputs: Sequence[str]) -> None:
    """Complete or not at all: an unguessable temporary file beside it (O_EXCL), renamed into place."""
    target = os.path.abspath(path)
    if any(os.path.exists(i) and os.path.exists(target) and os.path.samefile(i, target) for i in inputs):
        raise BenchError(f"{path}: is the input {path} (not overwriting it)")
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target) or ".", prefix=".trtrace-bench-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            umask = os.umask(0)
            os.umask(umask)
            os.fchmod(f.fileno(), 0o666 & ~umask)  # as an ordinary output, not mkstemp's 0600
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise


def bench(
    traces: Sequence[str],
    *,
    libs: Sequence[str] = (),
    runs: Optional[int] = None,
    min_time: Optional[float] = None,
    warmup: int = 1,
    network: Optional[int] = None,
    sets: Sequence[str] = (),
    jobs: int = 1,
    timeout: Optional[float] = None,
    alpha: float = 0.05,
    min_effect: float = 0.01,
    player: Optional[str] = None,
) -> dict[str, Any]:
    """``trtrace bench`` from Python: the same measurement, returned as the JSON document (docs/bench.md)."""
    from . import bench_report as report

    player = player or _native.tool("tensorrt_player")
    opts = argparse.Namespace(network=network, timeout=timeout, jobs=jobs, min_time=min_time)
    paths = expand_traces(traces)
    variants = variants_of(libs, sets)
    check_settings(player, paths[0], variants)
    nruns = runs if runs is not None else (3 if min_time else 10)
    t0 = time.monotonic()
    done, interrupted = execute(schedule(paths, len(variants), warmup, nruns), player, variants, opts)
    elapsed = time.monotonic() - t0
    options = {
        "runs": nruns,
        "min_time": min_time,
        "warmup": warmup,
        "network": network,
        "jobs": jobs,
        "timeout": timeout,
        "alpha": alpha,
        "min_effect": min_effect,
    }
    return report.document(
        done, variants, [report.trace_facts(t) for t in paths], options, elapsed, interrupted, sys.argv, player
    )


def main(argv: Optional[Sequence[str]] = None) -> int:
    from . import bench_report as report

    a = parser().parse_args(argv)
    try:
        doc = bench(
            a.traces,
            libs=a.lib,
            runs=a.runs,
            min_time=a.min_time,
            warmup=a.warmup,
            network=a.network,
            sets=a.sets,
            jobs=a.jobs,
            timeout=a.timeout,
            alpha=a.alpha,
            min_effect=a.min_effect,
            player=a.player,
        )
        for path, fmt in ((a.json, "json"), (a.csv, "csv"), (a.md, "md"), (a.plot, "plot"), *a.output):
            if path:
                _write(path, _render(fmt, path, doc), doc_inputs(doc, a))
        sys.stdout.write(report.terminal(doc))
        late = report.regressions(doc, _load_baseline(a.compare), a.alpha, a.min_effect) if a.compare else []
    except (BenchError, OSError, ValueError) as e:
        sys.stderr.write(f"trtrace: bench: {e}\n")
        return EXIT_USAGE
    for line in late:
        sys.stderr.write(f"trtrace: bench: regression: {line}\n")
    if doc["interrupted"]:
        return EXIT_INTERRUPTED
    if late:
        return EXIT_REGRESSION
    return EXIT_FAILED_RUNS if any(r["failures"] for r in doc["results"]) else EXIT_OK


def _render(fmt: str, path: str, doc: dict[str, Any]) -> bytes:
    from . import bench_plot, bench_report as report

    if fmt == "json":
        return json.dumps(doc, indent=1).encode()
    if fmt == "csv":
        return report.csv_text(doc).encode()
    if fmt == "md":
        return report.markdown(doc).encode()
    return bench_plot.write(path, doc)


def doc_inputs(doc: dict[str, Any], a: argparse.Namespace) -> list[str]:
    return [t["path"] for t in doc["traces"]] + ([a.compare] if a.compare else [])


def _load_baseline(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            doc: dict[str, Any] = json.load(f)
            return doc
    except ValueError as e:
        raise BenchError(f"{path}: not JSON ({e})") from None


if __name__ == "__main__":
    sys.exit(main())
