#!/usr/bin/env python3
"""Renders bench/run.sh's results (micro.json from micro_bench, e2e.json from bench/e2e.py) into
BENCHMARKS.md, between the markers <!-- bench:e2e begin --> ... <!-- bench:e2e end --> and
<!-- bench:micro begin --> ... <!-- bench:micro end -->. Everything outside the markers (other
engineers' sections, hand-written notes) is kept as it is; missing markers are appended.
--check: fail unless every table has numbers (the smoke test's only assertion; no timing limits).
"""

import argparse
import json
import pathlib
import random
import re
import statistics
import sys

GB = 1e9
MiB = 2**20


def med(xs):
    return statistics.median(xs)


def fmt_s(xs):
    return f"{min(xs):.2f} / {med(xs):.2f}"


def fmt_bytes(b):
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if b >= div:
            return f"{b / div:.2f} {unit}" if b < 10 * div else f"{b / div:.1f} {unit}"
    return f"{b} B"


def fmt_mib(b):
    return f"{b / MiB:,.0f} MiB"


# ------------------------------------------------------------------------------------------------
# micro_bench
# ------------------------------------------------------------------------------------------------
def micro_rows(micro):
    """{run_name: {'rate': [bytes/s per repetition], 'items': [...], 'counters': {...}}}"""
    rows = {}
    for b in micro.get("benchmarks", []):
        if b.get("run_type") == "aggregate" or b.get("error_occurred"):
            continue
        r = rows.setdefault(b["run_name"], {"rate": [], "items": [], "counters": {}})
        if "bytes_per_second" in b:
            r["rate"].append(b["bytes_per_second"])
        if "items_per_second" in b:
            r["items"].append(b["items_per_second"])
        for k in ("ratio", "bytes_per_call"):
            if k in b:
                r["counters"][k] = b[k]
    return rows


MICRO_WHAT = {
    "BM_Memcpy": "memcpy 64 MiB, one core (**the limit**)",
    "BM_XXH3_128": "XXH3-128 of 64 MiB (capture: the workers' key reads; the player's content check)",
    "BM_ReadAndHash/4096": "the same through process_vm_readv in 4 MiB pieces (a key read whose bytes are kept)",
    "BM_ReadAndHash/256": "the same in 256 KiB pieces (a key read only hashed: read ahead, a handoff's)",
    "BM_ByteGroup/2": "byte grouping, 2-byte elements (writer, before zstd)",
    "BM_ByteGroup/4": "byte grouping, 4-byte elements",
    "BM_ByteUngroup/2": "byte un-grouping, 2-byte elements (reader)",
    "BM_ByteUngroup/4": "byte un-grouping, 4-byte elements",
    "BM_ZstdCompress/-1": "zstd level -1 on byte-grouped N(0,0.02) fp32, 4 MiB chunks",
    "BM_ZstdCompress/1": "zstd level 1, same data (capture default)",
    "BM_ZstdCompress/3": "zstd level 3, same data",
    "BM_ZstdCompress/9": "zstd level 9, same data",
    "BM_ZstdDecompress/1": "zstd decompression of the level-1 frames",
    "BM_ZstdDecompress/3": "zstd decompression of the level-3 frames",
    "BM_EncodeCalls": "call encode: beginCall + 4 args + ret + endCall",
    "BM_DecodeCalls": "call decode: forEachCall reading 4 values",
}


def render_micro(micro, command):
    rows = micro_rows(micro)
    ctx = micro.get("context", {})
    mem = rows.get("BM_Memcpy", {}).get("rate") or [0]
    memcpy = med(mem)
    out = [
        "## Micro-benchmarks (`micro_bench`, Google Benchmark)",
        "",
        f"Run: {ctx.get('date', '?')}, {ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz "
        f"(2 cores shared with other work: figures vary run to run). Command: `{command}` "
        "(`build/bin/micro_bench --benchmark_repetitions=3`). Rates are the median (best) of the repetitions; "
        "every rate is also given as a fraction of the single-core memcpy of the same run "
        f"(**{memcpy / GB:.2f} GB/s**). Buffers are 64 MiB, beyond every cache.",
        "",
        "| benchmark | what | rate, median (best) | × memcpy | notes |",
        "|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        note = []
        if "ratio" in r["counters"]:
            note.append(f"ratio {r['counters']['ratio']:.3f}")
        if r["items"]:
            note.append(f"{med(r['items']) / 1e6:.2f} M calls/s")
        if "bytes_per_call" in r["counters"]:
            note.append(f"{r['counters']['bytes_per_call']:.0f} B/call in the file")
        rate = f"{med(r['rate']) / GB:.2f} GB/s ({max(r['rate']) / GB:.2f})" if r["rate"] else "-"
        frac = f"{med(r['rate']) / memcpy:.2f}" if r["rate"] and memcpy else "-"
        out.append(f"| {name} | {MICRO_WHAT.get(name, '')} | {rate} | {frac} | {', '.join(note)} |")
    return "\n".join(out), rows, memcpy


# ------------------------------------------------------------------------------------------------
# end to end
# ------------------------------------------------------------------------------------------------
def ratios(num, den, key="wall_s", den_key=None):
    """Per-repetition ratios (run i of one mode over run i of the other), min / median."""
    den_key = den_key or key
    xs = [a[key] / b[den_key] for a, b in zip(num, den) if b[den_key] > 0]
    return xs


def own_rate(r, runs):
    """Calls/s of the player's own work: dispatch time minus the library's time for the same calls,
    taken as the app's network-construction time when run alone (median)."""
    lib = med([x["network_s"] for x in r["runs"]["alone"]])
    own = med([y["dispatch_s"] for y in runs]) - lib
    if own <= 0:
        return f"> {runs[0]['calls'] / max(1e-6, lib) / 1e6:.1f} M (within noise)"
    return f"{runs[0]['calls'] / own / 1e6:.2f} M"


def render_e2e(e2e, memcpy, command):
    m = e2e["machine"]
    L = [
        "## End to end: capture, trace size, replay, conversion (`bench/e2e.py`)",
        "",
        f"Machine: {m['cpu']}, {m['cores']} cores (**shared with other work**: timings vary run to run), "
        f"{m['mem_gib']} GiB RAM, Linux {m['kernel']}, virtual disk (sequential write measured in this run: "
        f"{e2e.get('disk_write', {}).get('bytes_per_s', 0) / 1e6:.0f} MB/s, "
        f"{fmt_bytes(e2e.get('disk_write', {}).get('bytes', 0))} + fdatasync; into the page cache, no fdatasync: "
        f"{e2e.get('cache_write', {}).get('bytes_per_s', 0) / 1e6:.0f} MB/s). Date: {m['date']}. Command: `{command}` "
        f"(bench/run.sh → micro_bench, bench/e2e.py, bench/report.py; {e2e['reps']} repetitions per figure ("
        f"{max([len(x['runs'].get('ours', [])) for x in e2e.get('models', [])] or [e2e['reps']])} of each capture "
        f"mode), except the 8 GB model, run once; elapsed {e2e.get('elapsed_s', 0) / 60:.1f} min).",
        "",
        "App: `bench/models/transformer.py` (real `tensorrt_rtx` 1.6.1 Python app; N transformer-like blocks of "
        "hidden size H, weights N(0, 0.02) from a seeded generator; `--repeat 2` = every block's weights appear "
        "twice in separate buffers). Figures are min / median over the repetitions; ratios are taken within one "
        "repetition (the runs of one repetition are back to back) and then the median is given.",
        "",
        "### Capture, excluding the engine build (`--no-build`: the network is built, every weight handed to "
        "the library; the process's whole life is timed, incl. the shim's close at exit)",
        "",
        "| model | weights logical (unique) | app alone s | + our shim s | + NVIDIA shim s | ours / alone | "
        "NVIDIA / alone | peak RSS alone / ours / NVIDIA | written: ours / NVIDIA | ingestion on the app thread |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    models = e2e["models"]
    for r in models:
        a, o, n = r["runs"]["alone"], r["runs"]["ours"], r["runs"].get("nvidia", [])
        app = r["app"]
        ro = ratios(o, a)
        rn = ratios(n, a) if n else []
        # Ingestion: weight bytes over the app's network-construction time under the shim (the
        # weights are hashed and queued there; compression/writing run on the worker thread).
        ing = [app["weight_bytes"] / x["network_s"] for x in o if x["network_s"] > 0]
        ing_s = f"{med(ing) / GB:.2f} GB/s = {med(ing) / memcpy:.2f}× memcpy" if ing and memcpy else "-"
        L.append(
            f"| {r['name']} ({app['dtype']}, N={app['blocks']}, H={app['hidden']}) | {fmt_bytes(app['weight_bytes'])} "
            f"({fmt_bytes(app['unique_weight_bytes'])}) | {fmt_s([x['wall_s'] for x in a])} | "
            f"{fmt_s([x['wall_s'] for x in o])} | {fmt_s([x['wall_s'] for x in n]) if n else '-'} | "
            f"{med(ro):.3f} | {med(rn):.3f} | "
            if rn
            else f"| {r['name']} | {fmt_bytes(app['weight_bytes'])} | {fmt_s([x['wall_s'] for x in a])} | "
            f"{fmt_s([x['wall_s'] for x in o])} | - | {med(ro):.3f} | - | "
        )
        L[-1] += (
            f"{fmt_mib(med([x['rss'] for x in a]))} / {fmt_mib(med([x['rss'] for x in o]))} / "
            f"{fmt_mib(med([x['rss'] for x in n])) if n else '-'} | "
            f"{fmt_bytes(o[-1]['written'])} / {fmt_bytes(n[-1]['written']) if n else '-'} | {ing_s} |"
        )

    L += finisher_table(models) + [
        "",
        "### Trace size vs NVIDIA's JSON+BIN (same app, same run)",
        "",
        "| model | calls | calls part: ours / NVIDIA JSON | ratio | weights part: ours / NVIDIA BIN | ratio | "
        "whole: ours / NVIDIA | dedup ratio | compression ratio |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in models:
        t, nv = r["trace"], r.get("nvidia")
        p = t["parts"]
        w = t["weights"]
        if nv:
            L.append(
                f"| {r['name']} | {t['calls']:,} | {fmt_bytes(p['calls'])} / {fmt_bytes(nv['json'])} | "
                f"{p['calls'] / nv['json']:.3f} | {fmt_bytes(p['weights'])} / {fmt_bytes(nv['bin'])} | "
                f"{p['weights'] / max(1, nv['bin']):.3f} | {fmt_bytes(t['bytes'])} / {fmt_bytes(nv['json'] + nv['bin'])} | "
                f"{w['dedup_ratio']:.2f} | {w['compression_ratio']:.3f} |"
            )
        else:
            L.append(
                f"| {r['name']} | {t['calls']:,} | {fmt_bytes(p['calls'])} / - | - | {fmt_bytes(p['weights'])} / - | - | "
                f"{fmt_bytes(t['bytes'])} / - | {w['dedup_ratio']:.2f} | {w['compression_ratio']:.3f} |"
            )
    L += [
        "",
        "Calls part = header, call-log segments, footer index and framing; weights part = blob blocks. "
        "NVIDIA's calls part is the JSON (it also holds the inline weights of ≤ 8 elements); its BIN has no "
        "content dedup (pointer dedup within one network only) and no compression.",
    ]

    base = e2e.get("player_baseline", {}).get("rss", 0)
    L += [
        "",
        "### Replay: open, decode + dispatch, memory (`tensorrt_player --json`; these traces hold no "
        "build call, so the player's own work is measured alone)",
        "",
        f"RSS growth = the player's peak RSS minus its peak RSS on a 1-block H=16 trace "
        f"({fmt_mib(base)}: library + player). Raw = `trtrace rewrite --raw` of the same capture "
        "(weights are views into the mapping); compressed = `trtrace rewrite --compress` of it (every blob tried: "
        "the capture itself stores raw what is still queued when the app waits, so how much of it is compressed "
        "depends on the run), its weights decoded into the "
        'player\'s decode cache (docs/design.md, "Decode cache": a file mapped read-only, so they are page cache, '
        "not the player's memory): *built* = the first replay (every blob decoded, on every core), *reused* = the "
        "later ones (every blob hashed again). decode s = the cache's build or check time, before dispatch. "
        "calls/s = calls / dispatch time, which includes the "
        "library's own work in each call; the player's own calls/s subtracts the library's time for the same "
        "calls (the app's network-construction time when run alone).",
        "",
        "| model | trace | size | open ms (min / med) | calls | decode s (med) | dispatch s (min / med) | calls/s (median) | "
        "player's own calls/s | peak RSS | RSS growth | growth / weight bytes |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in models:
        rp = r.get("replay")
        if not rp:
            continue
        wb = r["app"]["weight_bytes"]
        for kind, x, runs in replay_kinds(rp):
            d = [y["dispatch_s"] for y in runs]
            cps = [y["calls"] / y["dispatch_s"] for y in runs if y["dispatch_s"] > 0]
            rss = med([y["rss"] for y in runs])
            grow = max(0, rss - base)
            L.append(
                f"| {r['name']} | {kind} | {fmt_bytes(x['bytes'])} | "
                f"{min(y['open_s'] for y in runs) * 1e3:.3f} / {med([y['open_s'] for y in runs]) * 1e3:.3f} | "
                f"{runs[0]['calls']:,} | {med([y.get('cache', {}).get('seconds', 0) for y in runs]):.2f} | "
                f"{min(d):.3f} / {med(d):.3f} | {med(cps) / 1e6:.2f} M | {own_rate(r, runs)} | {fmt_mib(rss)} | "
                f"{fmt_mib(grow)} | {grow / wb * 100:.1f}% |"
            )
    for r in models:
        sc = (r.get("replay") or {}).get("scaling")
        if sc:
            secs = {t: x["cache"]["seconds"] for t, x in sc.items()}
            nbytes = next(iter(sc.values()))["cache"].get("bytes", 0)
            cells = [
                f"{t} thread(s) {secs[t]:.2f} s ({nbytes / 1e9 / max(1e-9, secs[t]):.2f} GB/s"
                + (f", {secs['1'] / max(1e-9, secs[t]):.2f}× one thread)" if t != "1" and "1" in secs else ")")
                for t in sc
            ]
            L += [
                "",
                f"Decode scaling ({r['name']}, {fmt_bytes(nbytes)} decoded into a nameless cache file): "
                + ", ".join(cells)
                + ". The decode is one blob per thread, largest first. On this 2-core VM the "
                "first of these runs also pays the first touch of fresh page-cache pages, so the ratio overstates "
                'the scaling; "Decode scaling on 16 cores" below measures it (it meets the page cache\'s own '
                "write rate at 4 threads).",
            ]

    b = e2e.get("build_model")
    if b:
        app = b["app"]
        a, o, n = b["runs"]["alone"], b["runs"]["ours"], b["runs"].get("nvidia", [])
        L += [
            "",
            f"### With the engine build: {b['name']} ({app['dtype']}, N={app['blocks']}, H={app['hidden']}, "
            f"{fmt_bytes(app['weight_bytes'])} of weights, engine {fmt_bytes(app['engine_bytes'])})",
            "",
            "| | wall s (min / med) | peak RSS | engine build s (median) |",
            "|---|---|---|---|",
            f"| app alone | {fmt_s([x['wall_s'] for x in a])} | {fmt_mib(med([x['rss'] for x in a]))} | {med([x['build_s'] for x in a]):.2f} |",
            f"| app + our shim | {fmt_s([x['wall_s'] for x in o])} | {fmt_mib(med([x['rss'] for x in o]))} | {med([x['build_s'] for x in o]):.2f} |",
        ]
        if n:
            L.append(
                f"| app + NVIDIA shim | {fmt_s([x['wall_s'] for x in n])} | {fmt_mib(med([x['rss'] for x in n]))} | {med([x['build_s'] for x in n]):.2f} |"
            )
        for kind in ("raw", "compressed"):
            runs = b["replay"][kind]["runs"]
            own = [y["open_s"] + y["dispatch_s"] for y in runs]
            L.append(
                f"| player, {kind} trace | {fmt_s([y['wall_s'] for y in runs])} | {fmt_mib(med([y['rss'] for y in runs]))} | "
                f"{med([y['build_s'] for y in runs]):.2f} (player's own open + dispatch: {med(own):.3f} s = "
                f"{med(own) / max(1e-9, med([y['build_s'] for y in runs])) * 100:.1f}% of the build; engine "
                f"{'identical' if all(y['identical'] for y in runs) else 'DIFFERENT'} to the capture's) |"
            )

    conv = [(r["name"], r["convert"]) for r in models if r.get("convert")]
    L += ["", "### Conversion (`trtrace convert`)", ""]
    if conv:
        L += ["| model | JSON+BIN → trace MB/s (min / med) | trace → JSON+BIN MB/s |", "|---|---|---|"]
        for name, c in conv:
            cells = []
            for d in ("json_to_trace", "trace_to_json"):
                rates = [c[d]["input_bytes"] / 1e6 / max(1e-3, y["wall_s"]) for y in c[d]["runs"]]
                cells.append(f"{max(rates):.0f} / {med(rates):.0f}")
            L.append(f"| {name} | {cells[0]} | {cells[1]} |")
        L.append("\nMB/s = input bytes / the command's wall time.")
    else:
        L.append(
            "Not measured: `trtrace convert` did not exist in this build when the benchmarks ran (it is being written)."
        )
    errs = e2e.get("errors") or []
    if errs:
        L += ["", "Errors during the run: " + "; ".join(errs)]
    return "\n".join(L)


def replay_kinds(rp):
    """(label, replay entry, runs) for the raw trace and the compressed one, built and reused."""
    c = rp["compressed"]["runs"]
    out = [("raw", rp["raw"], rp["raw"]["runs"]), ("compressed, cache built", rp["compressed"], c[:1])]
    if len(c) > 1:
        out.append(("compressed, cache reused", rp["compressed"], c[1:]))
    return out


def per_weight_byte(r, grown):
    """The replay growth per added weight byte between r and another model of this run with the same
    calls (grown: name -> (calls, growth bytes, weight bytes)): what both share is per call."""
    calls, g0, w0 = grown.get(r["name"], (0, 0, 0))
    for name, (c, g, w) in grown.items():
        if name != r["name"] and c == calls and w != w0:
            return (
                f"; the same {calls:,} calls with {fmt_bytes(abs(w - w0))} {'more' if w > w0 else 'fewer'} weight "
                f"bytes ({name}) grow {fmt_bytes(abs(g - g0))} {'more' if g >= g0 else 'less'}: "
                f"{(g - g0) / (w - w0) * 100:.1f}% per weight byte"
            )
    return ""


def growth_reason(r, g, rg, app_base=0, grown=None):
    """Why a compressed trace's replay grew more than 5% of the weight bytes, from this run's figures."""
    w = r["trace"]["weights"]
    dup = w["logical_bytes"] - w["unique_bytes"]
    if dup > 0.05 * r["app"]["weight_bytes"]:
        return (
            f"{r['name']} {g * 100:.1f}% (raw trace {rg * 100:.1f}%): {fmt_bytes(dup)} of its weights are a second "
            "application pointer to bytes stored once; the player gives each such pointer a heap copy "
            "(Replayer::hold: the library tells weights apart by pointer), and the copy leaves the source pages "
            "mapped in too: copy (anonymous) + source (file-backed) = 2 × the duplicated bytes. Not the decode "
            "cache's: the raw trace grows the same; a second read-only mapping of the same file pages instead "
            "of the copy would make it free"
        )
    if rg > 0.05:
        app = med([x["rss"] for x in r["runs"]["alone"]]) - app_base - r["app"]["weight_bytes"]
        lib = (
            f"; the app alone grows {fmt_bytes(max(0, app))} beyond its own weights from the 1-block network to "
            f"this one ({max(0, app) / r['app']['weight_bytes'] * 100:.0f}% of the weight bytes: the library's "
            "state, and the app's Python objects)"
            if app_base
            else ""
        )
        return (
            f"{r['name']} {g * 100:.1f}%: the raw trace grows {rg * 100:.0f}% too: the library's own state for "
            f"{r['trace']['calls']:,} calls, not weights{lib}{per_weight_byte(r, grown or {})}"
        )
    return f"{r['name']} {g * 100:.1f}%"


def finisher_own(runs):
    """The largest memory a finisher held of its own over the runs: (peak RSS over its RSS at the
    fork, RssAnon grown since the fork), bytes."""
    fs = [f for x in runs for f in x.get("finishers", [])]
    if not fs:
        return None
    return (
        max(max(0, f["peak_rss"] - f["rss_at_fork"]) for f in fs),
        max(max(0, f["anon_at_end"] - f["anon_at_fork"]) for f in fs),
    )


def own_time(runs, alone):
    """What the capture added to the app's life, apart from the app's own weight generation (gen_s,
    before any library call, whose run-to-run spread on this VM is larger than the capture's cost):
    median(wall - gen) under the capture minus the same of the app alone."""
    return med([x["wall_s"] - x["gen_s"] for x in runs]) - med([x["wall_s"] - x["gen_s"] for x in alone])


def ratio_of(runs, alone):
    """The app's wall time under a capture over its time alone, estimated net of the spread of its
    own weight generation (gen_s, before any library call, the same work in both modes): 1 + the
    capture's own time (own_time) over the median wall time alone."""
    return 1 + own_time(runs, alone) / med([a["wall_s"] for a in alone])


def capture_ratio(r):
    """ratio_of our capture's runs of model r."""
    return ratio_of(r["runs"]["ours"], r["runs"]["alone"])


def ratio_interval(runs, alone, resamples=1000):
    """A 90% interval of ratio_of: each mode's runs resampled with replacement (bootstrap; a fixed
    seed, so that a report renders the same twice). None for fewer than 5 runs a mode."""
    if min(len(runs), len(alone)) < 5:
        return None
    rnd = random.Random(27)
    rs = sorted(ratio_of(rnd.choices(runs, k=len(runs)), rnd.choices(alone, k=len(alone))) for _ in range(resamples))
    return rs[resamples // 20], rs[resamples - 1 - resamples // 20]


def ratio_figure(r):
    """Model r's capture ratio as the targets table shows it: the raw median of the per-run ratios,
    the 90% interval, and where our capture forked no finisher (so that the synchronous mode ran the
    same code: the call-heavy models), that mode's ratio, the run's own control."""
    runs, alone, sync = r["runs"]["ours"], r["runs"]["alone"], r["runs"].get("sync")
    extra = [f"raw {med(ratios(runs, alone)):.3f}"]
    if iv := ratio_interval(runs, alone):
        extra.append(f"90% {iv[0]:.3f}–{iv[1]:.3f}")
    if sync and not any(x.get("finishers") for x in runs):
        extra.append(f"the same code again, synchronous: {ratio_of(sync, alone):.3f}")
    return f"{r['name']} {capture_ratio(r):.3f} ({'; '.join(extra)})"


def complete_vs_sync(ours, sync):
    """Per-run ratios: the time until our trace is complete over the synchronous capture's, each net
    of the app's weight generation (gen_s: before any library call, the same work in both modes,
    whose spread between runs on this VM, up to 0.7 s, is larger than the difference measured)."""
    return [
        (o["complete_s"] - o["gen_s"]) / (y["wall_s"] - y["gen_s"])
        for o, y in zip(ours, sync)
        if y["wall_s"] > y["gen_s"]
    ]


def finisher_table(models):
    """Issue 27: the app's clock (its exit) and the trace's (complete), against the synchronous capture."""
    rows = [m for m in models if m["runs"].get("sync")]
    if not rows:
        return []
    L = [
        "",
        "### Capture off the application's clock (issue 27): when the app exits, when its trace is complete",
        "",
        "*ours*: the default capture (weights still queued when the app would wait are written by a forked "
        "finisher, docs/design.md); *synchronous*: the same with `TRTRACE_FINISHER=0` (the app waits for "
        "every weight to be written). Trace complete = the app's exit plus the wait until the finisher removed its marker. Finisher "
        "own memory = its peak RSS over its RSS at the fork / its anonymous RSS grown since the fork (what it holds "
        "beyond the pages it shares with the app), the largest over the runs. The capture's own time = the "
        "median of (wall − the app's weight generation, `gen_s`, which runs before any library call) minus the same "
        "for the app alone: the part of the app's life a capture can change.",
        "",
        "| model | app alone s | ours: app exits s | ours: trace complete s | synchronous s | ours / alone | "
        "complete / synchronous | the same, net of gen_s | the capture's own time: ours / synchronous | "
        "finishers per run | finisher own memory |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        a, o, y = r["runs"]["alone"], r["runs"]["ours"], r["runs"]["sync"]
        own = finisher_own(o)
        L.append(
            f"| {r['name']} | {fmt_s([x['wall_s'] for x in a])} | {fmt_s([x['wall_s'] for x in o])} | "
            f"{fmt_s([x['complete_s'] for x in o])} | {fmt_s([x['wall_s'] for x in y])} | {med(ratios(o, a)):.3f} | "
            f"{med(ratios(o, y, 'complete_s', 'wall_s')):.3f} | {med(complete_vs_sync(o, y)):.3f} | "
            f"{own_time(o, a):.2f} s / {own_time(y, a):.2f} s | "
            f"{max(len(x.get('finishers', [])) for x in o)} | "
            f"{fmt_mib(own[0]) + ' / ' + fmt_mib(own[1]) if own else '-'} |"
        )
    return L


def render_targets(e2e, rows, memcpy):
    """Issue #8's targets against this run's figures."""
    models = e2e["models"]
    T = ["### Targets (issues #8, #16) against this run", "", "| target | this run | met |", "|---|---|---|"]
    cores = e2e["machine"]["cores"]

    def row(t, fig, ok, why=""):
        T.append(f"| {t} | {fig} | {'yes' if ok else '**NOT MET**' + (': ' + why if why else '')} |")

    heavy = [r for r in models if r["app"]["weight_bytes"] >= 5e8]
    if heavy:
        worst = max(heavy, key=capture_ratio)
        q = capture_ratio(worst)
        xxh = med(rows.get("BM_XXH3_128", {}).get("rate", [])) if rows.get("BM_XXH3_128") else 0
        alone = med([a["wall_s"] for a in worst["runs"]["alone"]])
        limit = (
            f"the physical limit measured in this run: {cores} cores, XXH3 {xxh / 1e9:.1f} GB/s. No weight "
            f"byte of {worst['name']}'s {fmt_bytes(worst['app']['weight_bytes'])} is hashed on its thread at "
            "its calls (the workers read, hash and write them, and past TRTRACE_FINISHER_MB queued at a drain, "
            "a finisher writes); at a handoff its thread reads, with the idle workers, the keys of the weights "
            "that may be repeats (trace/src/blob_handoff.cpp, readSuspects). Its "
            f"{cores} cores are shared with the workers; the "
            "capture's own time is "
            f"{own_time(worst['runs']['ours'], worst['runs']['alone']):.2f} s over its {alone:.2f} s"
            if xxh
            else ""
        )
        every = max(models, key=capture_ratio)
        q_every = capture_ratio(every)
        if q <= 1.05 < q_every:  # the weight-heavy models are met: what is left is on the app's thread
            sib = e2e.get("sibling_load")
            limit = (
                f"{every['name']}: what the capture adds is on the app's thread while it builds the network "
                f"(network_s {med([x['network_s'] for x in every['runs']['ours']]):.3f} s under the capture, "
                f"{med([x['network_s'] for x in every['runs']['alone']]):.3f} s alone: each call's draft, each "
                "object's registration and each weight's samples), at the network's deletion (its objects freed) "
                "and the close (the last batch encoded, the last segment compressed)"
                + (
                    f"; a busy loop with no memory traffic on another of the {cores} CPUs took the app's thread "
                    f"{sib['ratio']:.2f}× its time alone in this run (sibling_load, bench/e2e.py): "
                    + (
                        "the CPUs are not independent, so the time of the workers and of the call log's thread "
                        "beside the app costs it too (the physical limit of this machine)"
                        if sib["ratio"] >= 1.03
                        else "the CPUs ran independently then"
                    )
                    if sib
                    else ""
                )
            )
        row(
            "our capture ≤ 1.05× the app alone (no engine build), every model (net of the spread of the app's "
            "weight generation, gen_s: 1 + the capture's own time over the app's time alone; raw: the median of "
            "the per-run wall ratios)",
            f"worst weight-heavy model {worst['name']}: {q:.3f}×; all: " + ", ".join(ratio_figure(r) for r in models),
            q_every <= 1.05,
            limit,
        )
        nvh = [r for r in heavy if r["runs"].get("nvidia")]
        if nvh:
            faster = all(med(ratios(r["runs"]["ours"], r["runs"]["nvidia"])) < 1 for r in nvh)
            row(
                "faster than NVIDIA's shim on a weight-heavy model",
                ", ".join(
                    f"{r['name']}: ours/NVIDIA {med(ratios(r['runs']['ours'], r['runs']['nvidia'])):.2f}" for r in nvh
                ),
                faster,
            )
    if b := e2e.get("build_model"):
        bo, ba = (med([x["build_s"] for x in b["runs"][m]]) for m in ("ours", "alone"))
        row(
            "our capture ≤ 1.05× the app alone with the engine build (issue 27; net of gen_s, as above)",
            f"{ratio_figure(b)}; the engine build {bo:.2f} s under the capture, {ba:.2f} s alone",
            capture_ratio(b) <= 1.05,
            "the app's thread waits at the build: before it, the check reads the bytes of each weight the "
            "network holds (capture/weights_watch.cpp), and after it, the drain waits for the workers to read, "
            'hash and write the weights the build read (docs/design.md, "Weights")',
        )
    synced = [r for r in models if r["runs"].get("sync")]
    if synced:
        cr = [(r["name"], med(complete_vs_sync(r["runs"]["ours"], r["runs"]["sync"]))) for r in synced]
        raw = {r["name"]: med(ratios(r["runs"]["ours"], r["runs"]["sync"], "complete_s", "wall_s")) for r in synced}
        # A model no finisher ran for runs the same code in both modes: its ratio is the judge's own spread.
        controls = [(n, x) for (n, x), r in zip(cr, synced) if not any(o.get("finishers") for o in r["runs"]["ours"])]
        spread = "; ".join(
            f"{n} runs the same code in both modes (no finisher) and reads {x:.3f}×" for n, x in controls
        )
        row(
            "the trace complete no later than a synchronous capture's (issue 27; net of the app's weight "
            "generation, gen_s, in both)",
            ", ".join(f"{n} {x:.3f}× (raw {raw[n]:.3f}×)" for n, x in cr),
            max(x for _, x in cr) <= 1.0,
            "; ".join(
                p
                for p in (
                    "run-to-run spread on this shared VM exceeds the difference where a ratio is just over 1"
                    if max(x for _, x in cr) <= 1.05
                    else "",
                    f"the judge's own spread: {spread}" if spread else "",
                )
                if p
            ),
        )
        owns = [(r["name"], finisher_own(r["runs"]["ours"])) for r in synced]
        owns = [(n, o) for n, o in owns if o]
        if owns:
            row(
                "a finisher's own memory ≤ 64 MiB + its buffers (issue 27)",
                ", ".join(f"{n} anonymous {fmt_mib(o[1])} (RSS {fmt_mib(o[0])})" for n, o in owns),
                max(o[1] for _, o in owns) <= 64 << 20,  # anonymous: file pages read are the app's
            )
    callr = [(r["name"], r["trace"]["parts"]["calls"] / r["nvidia"]["json"]) for r in models if r.get("nvidia")]
    if callr:
        worst = max(x[1] for x in callr)
        row("call log ≤ 0.1× NVIDIA's JSON", ", ".join(f"{n} {x:.3f}" for n, x in callr), worst <= 0.1)
    ing = []
    for r in models:
        if r["app"]["weight_bytes"] >= 5e8:
            xs = [r["app"]["weight_bytes"] / x["network_s"] for x in r["runs"]["ours"] if x["network_s"] > 0]
            if xs:
                ing.append((r["name"], med(xs) / memcpy))
    if ing and memcpy:
        row(
            "weight ingestion ≥ 50% of memcpy bandwidth (app thread)",
            ", ".join(f"{n} {x * 100:.0f}%" for n, x in ing),
            min(x for _, x in ing) >= 0.5,
        )
    big = max((r for r in models if r.get("replay")), key=lambda r: r["trace"]["bytes"], default=None)
    if big:
        o = min(min(y["open_s"] for y in big["replay"][k]["runs"]) for k in ("raw", "compressed"))
        row(
            "trace open < 1 ms for a 10 GB trace",
            f"{o * 1e3:.3f} ms for {fmt_bytes(big['replay']['raw']['bytes'])} (raw) / "
            f"{fmt_bytes(big['replay']['compressed']['bytes'])} (compressed) (open reads the header + footer only)",
            o < 1e-3,
        )
    disp = []
    for r in models:
        # Call-heavy: per-call work, not the content check of the weights (part of dispatch: XXH3 of
        # every raw blob before the library sees it), dominates. calls-20k-h64 is weight-bound.
        if r.get("replay") and r["trace"]["calls"] >= 10000 and r["app"]["weight_bytes"] <= 2048 * r["trace"]["calls"]:
            runs = r["replay"]["raw"]["runs"]
            total = med([y["calls"] / y["dispatch_s"] for y in runs if y["dispatch_s"] > 0])
            lib = med([x["network_s"] for x in r["runs"]["alone"]])
            own_s = med([y["dispatch_s"] for y in runs]) - lib
            own = runs[0]["calls"] / own_s if own_s > 0 else float("inf")
            disp.append((r["name"], total, own))
    if disp:
        dec = rows.get("BM_DecodeCalls", {}).get("items")
        row(
            "dispatch ≥ 1M calls/s (decode + dispatch, raw trace)",
            "; ".join(
                f"{n}: {t / 1e6:.2f} M/s including the library's own work per call, "
                f"{'≫1' if o == float('inf') else f'{o / 1e6:.2f}'} M/s for the player's own decode + dispatch"
                for n, t, o in disp
            )
            + (f"; call decode alone (micro_bench): {med(dec) / 1e6:.1f} M/s" if dec else ""),
            min(o for _, _, o in disp) >= 1e6,
        )
    base = e2e.get("player_baseline", {}).get("rss", 0)
    grows = []
    for r in models:
        if r.get("replay") and r["app"]["weight_bytes"] >= 1e8:
            rss = med([y["rss"] for y in r["replay"]["raw"]["runs"]])
            grows.append((r["name"], max(0, rss - base) / r["app"]["weight_bytes"]))
    if grows:
        row(
            "player RSS growth ≤ 5% of weight bytes (raw traces)",
            ", ".join(f"{n} {g * 100:.1f}%" for n, g in grows),
            max(g for _, g in grows) <= 0.05,
        )
    cgrow = []
    for r in models:
        if r.get("replay"):
            rss = max(med([y["rss"] for y in runs]) for k, _, runs in replay_kinds(r["replay"]) if k != "raw")
            raw = med([y["rss"] for y in r["replay"]["raw"]["runs"]])
            cgrow.append(
                (
                    r["name"],
                    max(0, rss - base) / r["app"]["weight_bytes"],
                    max(0, raw - base) / r["app"]["weight_bytes"],
                )
            )
    if cgrow:
        # Judged as the raw row is, where weights (>= 100 MB), not the library's per-call state, are
        # what the player holds; the call-heavy models' growth is printed beside, with its reason.
        judged = {r["name"] for r in models if r["app"]["weight_bytes"] >= 1e8}
        bad = [(n, g, rg) for n, g, rg in cgrow if g > 0.05 and n in judged]
        light = [(n, g, rg) for n, g, rg in cgrow if g > 0.05 and n not in judged]
        by = {r["name"]: r for r in models}
        grown = {
            n: (by[n]["trace"]["calls"], g * by[n]["app"]["weight_bytes"], by[n]["app"]["weight_bytes"])
            for n, g, _ in cgrow
        }

        def reasons(rows):
            return "; ".join(
                growth_reason(by[n], g, rg, e2e.get("app_baseline", {}).get("rss", 0), grown) for n, g, rg in rows
            )

        shown = ", ".join(f"{n} {g * 100:.1f}%" for n, g, _ in cgrow if n in judged)
        if light:
            shown += f"; not judged (under 100 MB of weights, as in the raw row): {reasons(light)}"
        row(
            "player RSS growth ≤ 5% of weight bytes, compressed traces (decode cache; the worse of built and "
            "reused; models of 100 MB of weights or more, as for raw traces)",
            shown,
            not bad,
            reasons(bad),
        )
    sizes = [
        (
            r["name"],
            r["trace"]["bytes"] / (r["nvidia"]["json"] + r["nvidia"]["bin"]),
            r["trace"]["parts"]["weights"] / max(1, r["nvidia"]["bin"]),
        )
        for r in models
        if r.get("nvidia")
    ]
    if sizes:
        bad = [(n, x, w) for n, x, w in sizes if x > 1]
        row(
            "whole trace ≤ NVIDIA's JSON+BIN, every model",
            ", ".join(f"{n} {x:.3f}" for n, x, _ in sizes),
            not bad,
            "; ".join(
                f"{n}: weights part {w:.2f}× NVIDIA's BIN (per-blob framing of small weights)" for n, x, w in bad
            ),
        )
    conv = [
        (
            r["name"],
            med(
                [
                    r["convert"]["json_to_trace"]["input_bytes"] / max(1e-3, y["wall_s"])
                    for y in r["convert"]["json_to_trace"]["runs"]
                ]
            ),
        )
        for r in models
        if r.get("convert") and r["trace"]["calls"] >= 10000
    ]
    if conv:
        row(
            "JSON → trace conversion of call-heavy captures ≥ 500 MB/s (one parsing thread)",
            ", ".join(f"{n} {x / 1e6:.0f} MB/s" for n, x in conv),
            min(x for _, x in conv) >= 5e8,
            "per-record work on the parsing thread: each record's parse, its call's draft and the id and memo "
            "lookups (BENCHMARKS.md, Conversion; the FlatBuffers encoding is the call log's thread's); the wall "
            "time also holds the process's start and the BIN",
        )
    return "\n".join(T)


def replace_section(text, tag, body):
    begin, end = f"<!-- bench:{tag} begin -->", f"<!-- bench:{tag} end -->"
    block = f"{begin}\n{body}\n{end}"
    pat = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if pat.search(text):
        return pat.sub(lambda _: block, text)
    return text.rstrip("\n") + "\n\n" + block + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--micro", required=True)
    ap.add_argument("--e2e", required=True)
    ap.add_argument("--md", required=True)
    ap.add_argument("--command", default="make bench")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    micro = json.loads(pathlib.Path(a.micro).read_text())
    e2e = json.loads(pathlib.Path(a.e2e).read_text())
    micro_md, rows, memcpy = render_micro(micro, a.command)
    e2e_md = render_e2e(e2e, memcpy, a.command) + "\n\n" + render_targets(e2e, rows, memcpy)
    md = pathlib.Path(a.md)
    text = md.read_text() if md.exists() else "# Benchmarks\n"
    text = replace_section(text, "e2e", e2e_md)
    text = replace_section(text, "micro", micro_md)
    md.write_text(text)
    if a.check:
        problems = []
        if not memcpy:
            problems.append("no memcpy figure")
        for name in ("BM_XXH3_128", "BM_EncodeCalls", "BM_DecodeCalls"):
            if name not in rows:
                problems.append(f"no {name}")
        if not e2e["models"] or not e2e.get("build_model"):
            problems.append("no end-to-end results")
        for r in e2e["models"]:
            for mode, runs in r["runs"].items():
                if not runs or any(x["wall_s"] <= 0 and x["rss"] <= 0 for x in runs):
                    problems.append(f"{r['name']} {mode}: no numbers")
            if r["trace"]["calls"] <= 0 or r["trace"]["bytes"] <= 0:
                problems.append(f"{r['name']}: empty trace")
            if r.get("replay") and any(
                y["calls"] != r["trace"]["calls"] for k in ("raw", "compressed") for y in r["replay"][k]["runs"]
            ):
                problems.append(f"{r['name']}: replay dispatched another number of calls")
        b = e2e.get("build_model")
        if b and not all(y["identical"] for k in ("raw", "compressed") for y in b["replay"][k]["runs"]):
            problems.append("replayed engine differs from the capture's")
        if "nan" in e2e_md.lower():
            problems.append("NaN in the report")
        if problems:
            print("report.py: smoke check FAILED: " + "; ".join(problems), file=sys.stderr)
            return 1
        print(f"report.py: smoke check OK ({len(e2e['models'])} models, {len(rows)} micro-benchmarks)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
