#!/usr/bin/env python3
"""make bench, issue 25: `trtrace bench` measured on real captures, and bench's own cost.

Steps (each a `trtrace bench` run, whose JSON is kept in --out):
  1. same-library: one capture, the same TensorRT-RTX 1.6 library given twice as --lib; every phase
     should read "no significant difference".
  2. opt-level: `--set BuilderConfig::setBuilderOptimizationLevel=0,5` on a capture whose build time
     depends on that level; the build phase's ratio and its 95% interval.
  3. versions: the capture against 1.6 and 1.7 (the 1.7 run as --ignore-version).
  4. throughput: >= 20 corpus captures (ONNX backend test networks), --jobs 2.
  5. overhead: bench's own cost per run against a plain player run of the same trace, both timed
     from fork to wait here, interleaved: (bench's wall - the sum of its runs' walls) / runs, over the
     plain run's median wall.
Writes the Markdown section of BENCHMARKS.md between <!-- bench:replay --> markers (--md)."""

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def sh(cmd, **kw):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)


def capture(build, app_args, out, env):
    e = dict(env, LD_PRELOAD=str(build / "lib" / "libtensorrt_shim.so"), TRT_SHIM_OUTPUT_FILE=str(out))
    p = sh([sys.executable, *app_args], env=e)
    if not out.exists():
        raise SystemExit(f"capture of {app_args} failed: {p.stderr[-400:]}")
    return out


def bench(build, args, out):
    t0 = time.monotonic()
    p = sh([build / "bin" / "trtrace", "bench", *args, "--json", out])
    wall = time.monotonic() - t0
    if p.returncode not in (0, 2):
        raise SystemExit(f"trtrace bench {args}: exit {p.returncode}: {p.stderr[-400:]}")
    return json.loads(pathlib.Path(out).read_text()), wall, p.stdout


def overhead(build, trace, lib, runs, work):
    """bench's own cost, split as it is spent: a fixed cost per invocation (the interpreter, SciPy's
    import, the trace's facts, the statistics and report) and a cost per run (spawning and reaping
    the player, its JSON). Bench with `runs` and with 3 x `runs` runs, alternated with plain player
    runs over 3 rounds: the per-run cost is the difference of their own time (wall - the runs'
    walls) over the difference of runs; the plain runs' median is what it is compared with, and
    bench's measured runs against the plain ones show whether measuring slows the player."""
    plain, small, large, measured = [], [], [], []
    for _ in range(3):
        for _ in range(runs):
            t0 = time.monotonic_ns()
            sh(
                [
                    build / "bin" / "tensorrt_player",
                    "-j",
                    trace,
                    "-o",
                    work / "plain.engine",
                    "--json",
                    "-q",
                    "--lib",
                    lib,
                ]
            )
            plain.append((time.monotonic_ns() - t0) / 1e9)
        for n, into in ((runs, small), (3 * runs, large)):
            doc, wall, _ = bench(build, [trace, "--lib", lib, "--runs", n, "--warmup", 0], work / "own.json")
            into.append(wall - sum(r["wall"] for r in doc["runs"]))
            measured += [r["wall"] for r in doc["runs"] if r["status"] == "ok"]
    med, own_small, own_large = statistics.median(plain), statistics.median(small), statistics.median(large)
    per_run = (own_large - own_small) / (2 * runs)  # below 0: under the machine's noise
    return {
        "runs": runs,
        "plain_median_s": med,
        "bench_measured_median_s": statistics.median(measured),
        "per_run_s": per_run,
        "fixed_s": own_small - per_run * runs,
        "ratio": 1 + per_run / med,
        "measured_over_plain": statistics.median(measured) / med,
    }


def corpus_traces(build, env, work, n):
    data = ROOT / ".deps" / "onnx-1.17-data"
    models = sorted(data.glob("light/*.onnx"))[:4] + sorted(data.glob("node/test_*conv*/model.onnx"))
    models += sorted(data.glob("node/test_*relu*/model.onnx")) + sorted(data.glob("node/test_*pool*/model.onnx"))
    out = []
    for m in models:
        if len(out) >= n:
            break
        t = work / "corpus" / f"{len(out):02d}-{m.parent.name if m.name == 'model.onnx' else m.stem}.trtrace"
        t.parent.mkdir(exist_ok=True)
        try:
            out.append(
                capture(build, [ROOT / "tests" / "corpus" / "onnx_app.py", m, "--out", work / "corpus.engine"], t, env)
            )
        except SystemExit:
            continue
    return out


def verdicts(doc, figure=None):
    return {
        (c["figure"]): (c["ratio"], c["ci95"], c["verdict"])
        for c in doc["comparisons"]
        if figure in (None, c["figure"])
    }


def fmt_cmp(doc, figures=("wall", "library", "decode", "dispatch", "build", "write", "exit")):
    rows = ["| figure | ratio | 95% CI | verdict |", "|---|---|---|---|"]
    for f, (r, ci, v) in verdicts(doc).items():
        if f in figures and r is not None:
            rows.append(
                f"| {f} | {r:.3f} | {ci[0]:.3f}-{ci[1]:.3f} | {v} |"
                if ci and None not in ci
                else f"| {f} | {r:.3f} | - | {v} |"
            )
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, type=pathlib.Path)
    ap.add_argument("--work", required=True, type=pathlib.Path)
    ap.add_argument("--md", type=pathlib.Path)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--traces", type=int, default=20)
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    lib16 = os.environ["TRTRACE_TRT_LIB"]
    lib17 = ROOT / ".deps/venv-1.7/lib/python3.11/site-packages/tensorrt_rtx_libs/libtensorrt_rtx.so.1"
    model = ROOT / ".deps/onnx-1.17-data/light/light_resnet50.onnx"
    trace = capture(
        a.build,
        [ROOT / "tests/corpus/onnx_app.py", model, "--out", a.work / "app.engine"],
        a.work / "resnet50.trtrace",
        env,
    )
    same, _, _ = bench(a.build, [trace, "--lib", lib16, "--lib", lib16, "--runs", a.runs], a.work / "same.json")
    level, _, _ = bench(
        a.build,
        [trace, "--lib", lib16, "--set", "BuilderConfig::setBuilderOptimizationLevel=0,5", "--runs", a.runs],
        a.work / "level.json",
    )
    versions, _, _ = bench(
        a.build, [trace, "--lib", lib16, "--lib", lib17, "--runs", max(3, a.runs // 2)], a.work / "versions.json"
    )
    many = corpus_traces(a.build, env, a.work, a.traces)
    thr, _, _ = bench(
        a.build, [*many, "--lib", lib16, "--runs", 1, "--warmup", 0, "--jobs", 2], a.work / "throughput.json"
    )
    cost = overhead(a.build, trace, lib16, a.runs, a.work)
    (a.work / "overhead.json").write_text(json.dumps(cost))
    md = render(
        {"same": same, "level": level, "versions": versions, "throughput": thr, "overhead": cost}, len(many), a.runs
    )
    print(md)
    if a.md:
        text = a.md.read_text()
        begin, end = "<!-- bench:replay -->", "<!-- /bench:replay -->"
        if begin in text:
            text = text.split(begin)[0] + begin + "\n" + md + "\n" + end + text.split(end, 1)[1]
        else:
            text += f"\n{begin}\n{md}\n{end}\n"
        a.md.write_text(text)


def render(r, ntraces, runs):
    m = r["same"]["machine"]
    t = r["throughput"]["throughput"]
    c = r["overhead"]
    build = {v["variant"]: v for v in r["level"]["results"]}
    b0, b5 = build[0]["figures"]["build"], build[1]["figures"]["build"]
    return "\n".join(
        [
            "## Replay benchmarking (`trtrace bench`, issue 25)",
            "",
            f"Command: `make bench` (bench/replay_bench.py); {m['cpu']}, {m['cores']} cores, load at start "
            f"{m['load_at_start'][0]:.2f}. Capture: the ONNX backend suite's `light_resnet50` parsed and built by "
            f"tests/corpus/onnx_app.py under the shim; {runs} measured runs per variant, interleaved.",
            "",
            '**The same 1.6.1 library given twice** (`--lib L --lib L`): every phase should be "no significant difference".',
            "",
            fmt_cmp(r["same"]),
            "",
            f"**`--set BuilderConfig::setBuilderOptimizationLevel=0,5`**: build median {b0['median']:.3f} s "
            f"(95% CI {b0['median_ci95'][0]:.3f}-{b0['median_ci95'][1]:.3f}) at level 0, {b5['median']:.3f} s "
            f"({b5['median_ci95'][0]:.3f}-{b5['median_ci95'][1]:.3f}) at level 5; level 5 against level 0:",
            "",
            fmt_cmp(r["level"], ("wall", "build")),
            "",
            "**TensorRT-RTX 1.7.1 against 1.6.1** on the same 1.6 capture (replayed as --ignore-version):",
            "",
            fmt_cmp(r["versions"]),
            "",
            f"**Throughput** over {ntraces} corpus captures, `--jobs 2`, one run each: {t['replays']} replays in "
            f"{t['elapsed_s']:.1f} s = {t['traces_per_hour']:.0f} traces/hour, {t['weight_bytes_per_s'] / 1e6:.2f} MB/s of "
            f"weights ingested, {t['build_s_per_trace']:.2f} build s per trace (per-trace table in the run's throughput.json).",
            "",
            f"**bench's own cost** (bench with {c['runs']} and {3 * c['runs']} runs, alternated with plain player runs, 3 rounds): "
            f"{c['per_run_s'] * 1e3:.1f} ms per run{' (below the noise)' if c['per_run_s'] <= 0 else ''} (spawning and reaping the player, reading its JSON) against a plain "
            f"player run of {c['plain_median_s']:.3f} s: **ratio {c['ratio']:.4f}** (target <= 1.02); bench's own measured runs "
            f"have a median of {c['bench_measured_median_s']:.3f} s, {c['measured_over_plain']:.3f}x the plain runs' (measuring "
            f"does not slow the player beyond the machine's noise). Once per invocation, not per run: {c['fixed_s']:.2f} s "
            "(the interpreter, SciPy's import, the trace's SHA-256 and facts, the statistics and the report).",
        ]
    )


if __name__ == "__main__":
    main()
