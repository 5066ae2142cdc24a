"""What ``trtrace bench`` reports: the JSON document (schema ``trtrace-bench/1``, docs/bench.md), and
the terminal table, CSV, Markdown and plot made from it."""

from __future__ import annotations

import csv
import dataclasses
import datetime
import hashlib
import io
import os
import platform
from typing import Any, Optional, Sequence

from . import bench_stats as stats

FIGURES = (
    "wall",
    "start",
    "open",
    "library",
    "decode",
    "dispatch",
    "build",
    "write",
    "check",
    "exit",
    "cpu_user",
    "cpu_sys",
    "peak_rss",
)
TIMES = FIGURES[:10]  # the figures compared between variants (seconds)


# ---- facts beside the figures -----------------------------------------------------------------
def machine() -> dict[str, Any]:
    cpu, mem = platform.processor(), 0
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
        with open("/proc/meminfo") as f:
            mem = next((int(ln.split()[1]) * 1024 for ln in f if ln.startswith("MemTotal:")), 0)
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_bytes": mem,
        "load_at_start": list(os.getloadavg()),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def trace_facts(path: str, hash_limit: int = 1 << 30) -> dict[str, Any]:
    """Size, SHA-256 (files up to hash_limit: a huge trace is not read whole for its name), and what
    the trace says of itself when the Python API reads it."""
    size = os.path.getsize(path)
    facts: dict[str, Any] = {
        "path": path,
        "size": size,
        "sha256": None,
        "library_version": None,
        "calls": None,
        "weight_bytes": None,
    }
    if size <= hash_limit:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        facts["sha256"] = h.hexdigest()
    try:
        from . import open as open_trace

        with open_trace(path) as t:
            facts["library_version"], facts["calls"] = t.header.get("library_version"), t.header.get("calls")
            facts["weight_bytes"] = sum(w.nbytes for w in t.weights)
    except Exception:  # noqa: BLE001 -- a capture the Python API cannot read is still benchmarked
        pass
    return facts


# ---- the document -----------------------------------------------------------------------------
def _figure(r: Any, name: str) -> Optional[float]:
    if name == "wall":
        return float(r.wall)
    if name in ("cpu_user", "cpu_sys", "peak_rss"):
        return float(getattr(r, name))
    v = r.phases.get(name)
    return None if v is None else float(v)


def results(runs: Sequence[Any], traces: Sequence[str], nvar: int) -> list[dict[str, Any]]:
    out = []
    for t in traces:
        for v in range(nvar):
            mine = [r for r in runs if r.trace == t and r.variant == v and not r.warmup]
            ok = [r for r in mine if r.status == "ok"]
            failures: dict[str, int] = {}
            for r in mine:
                if r.status != "ok":
                    failures[r.status] = failures.get(r.status, 0) + 1
            hashes = sorted({e["xxh3"] for r in ok for e in r.engines if e["ok"]})
            out.append(
                {
                    "trace": t,
                    "variant": v,
                    "runs": len(mine),
                    "ok_runs": len(ok),
                    "failures": failures,
                    "figures": {f: stats.summary([x for r in ok if (x := _figure(r, f)) is not None]) for f in FIGURES},
                    "engine_hashes": hashes,
                    "engines_identical": len(hashes) <= 1,
                    "decode_cache": sorted({r.decode_cache for r in ok}),
                }
            )
    return out


def comparisons(
    runs: Sequence[Any], traces: Sequence[str], nvar: int, alpha: float, min_effect: float
) -> list[dict[str, Any]]:
    rows = []
    for t in traces:
        base = [r for r in runs if r.trace == t and r.variant == 0 and not r.warmup and r.status == "ok"]
        for v in range(1, nvar):
            other = [r for r in runs if r.trace == t and r.variant == v and not r.warmup and r.status == "ok"]
            for f in TIMES:
                c = stats.compare([_figure(r, f) or 0.0 for r in base], [_figure(r, f) or 0.0 for r in other])
                rows.append({"trace": t, "variant": v, "baseline": 0, "figure": f, **c})
    adjusted = stats.holm([r["p"] for r in rows])
    for r, p in zip(rows, adjusted):
        r["p_holm"] = p
        r["verdict"] = stats.verdict(r["ratio"], p, alpha, min_effect)
    return rows


def throughput(runs: Sequence[Any], facts: Sequence[dict[str, Any]], elapsed: float, jobs: int) -> dict[str, Any]:
    ok = [r for r in runs if not r.warmup and r.status == "ok"]
    weights = {f["path"]: f["weight_bytes"] or 0 for f in facts}
    per_trace = []
    for f in facts:
        mine = [r for r in ok if r.trace == f["path"]]
        per_trace.append(
            {
                "trace": f["path"],
                "ok_runs": len(mine),
                "wall_median": stats.summary([r.wall for r in mine]).get("median"),
                "build_median": stats.summary([r.phases.get("build", 0.0) for r in mine]).get("median"),
            }
        )
    return {
        "jobs": jobs,
        "elapsed_s": elapsed,
        "replays": len(ok),
        "traces_per_hour": len(ok) / elapsed * 3600 if elapsed > 0 else None,
        "weight_bytes_per_s": sum(weights.get(r.trace, 0) for r in ok) / elapsed if elapsed > 0 else None,
        "build_s_per_trace": sum(r.phases.get("build", 0.0) for r in ok) / len(ok) if ok else None,
        "per_trace": per_trace,
    }


def document(
    runs: Sequence[Any],
    variants: Sequence[Any],
    facts: Sequence[dict[str, Any]],
    options: dict[str, Any],
    elapsed: float,
    interrupted: bool,
    argv: Sequence[str],
    player: str,
) -> dict[str, Any]:
    traces = [f["path"] for f in facts]
    nvar = len(variants)
    vlist = []
    for i, v in enumerate(variants):
        libs = [r.library for r in runs if r.variant == i and r.library]
        lib = libs[0] if libs else {}
        captured = {f["library_version"] for f in facts if f["library_version"]}
        vlist.append(
            {
                "index": i,
                "label": v.label,
                "lib": v.lib,
                "sets": list(v.sets),
                "library": lib,
                "other_version": bool(lib.get("version")) and any(c != lib.get("version") for c in captured),
            }
        )
    return {
        "schema": "trtrace-bench/1",
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "command": list(argv),
        "player": player,
        "machine": machine(),
        "options": options,
        "traces": list(facts),
        "variants": vlist,
        "interrupted": interrupted,
        "runs": [dataclasses.asdict(r) for r in runs],
        "results": results(runs, traces, nvar),
        "comparisons": comparisons(runs, traces, nvar, options["alpha"], options["min_effect"]),
        "throughput": throughput(runs, facts, elapsed, options["jobs"]),
    }


# ---- renderings ------------------------------------------------------------------------------
def _ms(x: Optional[float]) -> str:
    return "-" if x is None else f"{x * 1e3:.1f}"


def table_rows(doc: dict[str, Any]) -> list[list[str]]:
    """One row per trace x variant x phase: median [95% CI] ms, mean ± sd, min, p90, n."""
    rows = [
        ["trace", "variant", "figure", "median ms", "95% CI ms", "mean ± sd ms", "min ms", "p90 ms", "n", "vs first"]
    ]
    cmp = {(c["trace"], c["variant"], c["figure"]): c for c in doc["comparisons"]}
    for res in doc["results"]:
        label = doc["variants"][res["variant"]]["label"]
        for f in TIMES:
            s = res["figures"][f]
            if not s.get("n"):
                continue
            c = cmp.get((res["trace"], res["variant"], f))
            vs = "" if not c or c["ratio"] is None else f"{c['ratio']:.3f}x {c['verdict']}"
            ci = s["median_ci95"]
            rows.append(
                [
                    os.path.basename(res["trace"]),
                    label,
                    f,
                    _ms(s["median"]),
                    f"{_ms(ci[0])}-{_ms(ci[1])}{'' if s['median_ci95_exact'] else ' (range)'}",
                    f"{_ms(s['mean'])} ± {_ms(s['stdev'])}",
                    _ms(s["min"]),
                    _ms(s["p90"]),
                    str(s["n"]),
                    vs,
                ]
            )
    return rows


def terminal(doc: dict[str, Any]) -> str:
    rows = table_rows(doc)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines += _notes(doc)
    return "\n".join(lines) + "\n"


def _notes(doc: dict[str, Any]) -> list[str]:
    out = []
    for res in doc["results"]:
        name, label = os.path.basename(res["trace"]), doc["variants"][res["variant"]]["label"]
        out.append(
            f"{name} [{label}]: {res['ok_runs']} of {res['runs']} runs measured"
            + (f"; failed: {', '.join(f'{k} x{v}' for k, v in res['failures'].items())}" if res["failures"] else "")
            + (
                ""
                if res["engines_identical"]
                else f"; engines differ between runs ({len(res['engine_hashes'])} distinct)"
            )
        )
        wall = res["figures"]["wall"]
        if wall.get("outliers"):
            out.append(
                f"  warning: {len(wall['outliers'])} statistical outlier(s) in wall time; consider more runs or a quieter machine"
            )
    for v in doc["variants"]:
        if v["other_version"]:
            out.append(
                f"note: variant [{v['label']}] replays a capture of another library version (as --ignore-version)"
            )
    t = doc["throughput"]
    if len(doc["traces"]) > 1 or t["jobs"] > 1:
        out.append(
            f"throughput: {t['replays']} replays in {t['elapsed_s']:.1f} s with {t['jobs']} jobs: "
            f"{t['traces_per_hour'] or 0:.0f} traces/hour, {(t['weight_bytes_per_s'] or 0) / 1e6:.1f} MB/s of weights, "
            f"{t['build_s_per_trace'] or 0:.2f} build s per trace"
        )
    if doc["interrupted"]:
        out.append("interrupted: the figures are of the runs measured before Ctrl-C")
    return out


def markdown(doc: dict[str, Any]) -> str:
    rows = table_rows(doc)
    md = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    md += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows[1:]]
    return "# trtrace bench\n\n" + "\n".join(md) + "\n\n" + "\n".join(f"- {n}" for n in _notes(doc)) + "\n"


def csv_text(doc: dict[str, Any]) -> str:
    """One row per run: its variant, status and every figure (seconds; peak RSS in bytes)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["trace", "variant", "label", "index", "warmup", "status", "exit_code", *FIGURES, "engine_xxh3"])
    for r in doc["runs"]:
        figs = [r["wall"], *(r["phases"].get(p, "") for p in FIGURES[1:10]), r["cpu_user"], r["cpu_sys"], r["peak_rss"]]
        w.writerow(
            [
                r["trace"],
                r["variant"],
                doc["variants"][r["variant"]]["label"],
                r["index"],
                r["warmup"],
                r["status"],
                r["exit_code"],
                *figs,
                ";".join(e["xxh3"] for e in r["engines"]),
            ]
        )
    return buf.getvalue()


def _run_figure(r: dict[str, Any], f: str) -> float:
    """A figure of a run as the JSON document holds it (seconds)."""
    return float(r["wall"] if f == "wall" else r["phases"].get(f, 0.0))


def regressions(doc: dict[str, Any], baseline: dict[str, Any], alpha: float, min_effect: float) -> list[str]:
    """--compare: each figure of each trace x variant label measured slower than in the baseline."""
    if baseline.get("schema") != "trtrace-bench/1":
        raise ValueError("not a trtrace bench JSON (schema trtrace-bench/1)")

    def runs_of(d: dict[str, Any]) -> dict[tuple[str, str], list[dict[str, Any]]]:
        out: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in d["runs"]:
            if not r["warmup"] and r["status"] == "ok":
                out.setdefault((os.path.basename(r["trace"]), d["variants"][r["variant"]]["label"]), []).append(r)
        return out

    now, then = runs_of(doc), runs_of(baseline)
    rows = []
    for key in sorted(now.keys() & then.keys()):
        for f in TIMES:
            rows.append(
                (key, f, stats.compare([_run_figure(r, f) for r in then[key]], [_run_figure(r, f) for r in now[key]]))
            )
    adjusted = stats.holm([c["p"] for _, _, c in rows])
    out = []
    for (key, f, c), p in zip(rows, adjusted):
        if stats.verdict(c["ratio"], p, alpha, min_effect) == "slower":
            out.append(
                f"{key[0]} [{key[1]}] {f}: {c['ratio']:.3f}x the baseline (95% CI {c['ci95'][0]:.3f}-{c['ci95'][1]:.3f}, p {p:.2g})"
            )
    return out
