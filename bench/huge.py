#!/usr/bin/env python3
"""Bigger than RAM (issue 16): an app whose weights are mmapped from a file larger than this
machine's memory is captured (the capture's defaults) and replayed (network construction, no
engine build), with each side's memory sampled from /proc: peak RSS, and its anonymous part (the
process's own memory; file-backed pages are page cache the kernel evicts under pressure). `make
bench` runs it after the end-to-end benchmarks.

    python3 bench/huge.py --build build --work DIR [--gib G (default: RAM + 1 GiB)] [--md BENCHMARKS.md]

Checks the free disk space first (weights file + trace, then trace + decode cache) and scales the
weights down, saying so, when the disk is short. The weights file is deleted after the capture,
the trace at the end; the decode cache is a nameless temporary file. Progress on stderr.
"""

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
APP = ROOT / "bench" / "models" / "mmap_weights.py"


def log(*a):
    print("[huge]", *a, file=sys.stderr, flush=True)


def status(pid):
    """RssAnon, RssFile, VmHWM of pid in bytes ({} once it is gone)."""
    try:
        text = pathlib.Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return {k: int(v) * 1024 for k, v in re.findall(r"^(RssAnon|RssFile|VmHWM):\s+(\d+) kB", text, re.M)}


def sampled(cmd, env, progress):
    """Runs cmd, sampling its memory every 0.2 s; returns (wall s, stdout, peaks)."""
    e = dict(os.environ)
    e.update(env)
    out = open(progress.with_suffix(".out"), "w+")
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=e, stdout=out, stderr=sys.stderr)
    peak = {"RssAnon": 0, "RssFile": 0, "VmHWM": 0}
    while p.poll() is None:
        for k, v in status(p.pid).items():
            peak[k] = max(peak[k], v)
        time.sleep(0.2)
    wall = time.perf_counter() - t0
    out.seek(0)
    text = out.read()
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited {p.returncode}")
    return wall, text, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--gib", type=float, default=0, help="weights in GiB (default: this machine's RAM + 1)")
    ap.add_argument("--md", default="")
    a = ap.parse_args()
    build = pathlib.Path(a.build).resolve()
    work = pathlib.Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    free = shutil.disk_usage(work).free
    gib, note = a.gib or float(int(ram / 2**30) + 1), ""
    need = lambda g: 2 * g * 2**30 + (8 << 30)  # weights + trace (≤ weights), then trace + cache; 8 GiB spare
    if need(gib) > free:
        gib = max(1.0, (free - (8 << 30)) / 2 / 2**30)
        note = (
            f"scaled down from {a.gib or int(ram / 2**30) + 1:g} GiB: {free / 2**30:.0f} GiB free on the disk: "
            f"**NOT bigger than RAM**"
        )
        log(note)
    weights, trace = work / "weights.f32", work / "huge.trtrace"
    python = os.environ.get("TRTRACE_PYTHON", sys.executable)
    res = {"ram": ram, "gib": gib, "note": note, "disk_free": free, "cores": os.cpu_count()}

    log(f"app alone, writing {gib:.1f} GiB of weights first (RAM {ram / 2**30:.1f} GiB)")
    wall, out, peak = sampled(
        [python, str(APP), "--weights", str(weights), "--gib", str(gib), "--make"], {}, work / "alone"
    )
    res["alone"] = {"wall_s": wall, "peak": peak, "app": json.loads(out.strip().splitlines()[-1])}
    log(f"capture under the shim -> {trace}")
    trace.unlink(missing_ok=True)  # an earlier run's: the shim never replaces a trace
    shim = {
        "LD_PRELOAD": str(build / "lib" / "libtensorrt_shim.so"),
        "TRT_SHIM_OUTPUT_FILE": str(trace),
        "TRTRACE_PROGRESS": "1",
        "TRTRACE_FINISHER_REPORT": str(work / "finisher.jsonl"),  # its memory, if a finisher completes the trace
    }
    (work / "finisher.jsonl").unlink(missing_ok=True)
    t_capture = time.perf_counter()
    wall, out, peak = sampled([python, str(APP), "--weights", str(weights)], shim, work / "capture")
    res["capture"] = {"wall_s": wall, "peak": peak, "app": json.loads(out.strip().splitlines()[-1])}
    # trtrace info waits for the trace's finisher (docs/design.md, "Finishing off the application's clock").
    info = json.loads(
        subprocess.run(
            [str(build / "bin" / "trtrace"), "info", "--json", str(trace)], capture_output=True, text=True, check=True
        ).stdout
    )
    res["trace_weights"] = info["weights"]
    res["capture"]["trace_bytes"] = trace.stat().st_size
    res["capture"]["complete_s"] = time.perf_counter() - t_capture
    reports = work / "finisher.jsonl"
    res["capture"]["finishers"] = [json.loads(x) for x in reports.read_text().splitlines()] if reports.exists() else []
    weights.unlink()
    log("replay (network construction; the trace holds no build call)")
    player = [
        str(build / "bin" / "tensorrt_player"),
        "-j",
        str(trace),
        "--lib",
        os.environ["TRTRACE_TRT_LIB"],
        "--json",
        "-q",
        "--decode-cache",
        "temp",
    ]
    wall, out, peak = sampled(player, {"TRTRACE_PROGRESS": "1"}, work / "replay")
    res["replay"] = {"wall_s": wall, "peak": peak, "player": json.loads(out.strip().splitlines()[-1])}
    trace.unlink()
    (work / "huge.json").write_text(json.dumps(res, indent=1))
    md = render(res)
    print(md)
    if a.md:
        p = pathlib.Path(a.md)
        text = p.read_text()
        begin, end = "<!-- bench:huge begin -->", "<!-- bench:huge end -->"
        block = f"{begin}\n{md}\n{end}"
        text = (
            re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
            if begin in text
            else text.rstrip("\n") + "\n\n" + block + "\n"
        )
        p.write_text(text)
    return 0


def finisher_line(c):
    """Issue 27: the trace completed by a finisher after the app's exit, and the finisher's own memory."""
    fs = c.get("finishers") or []
    if not fs:
        return "The app wrote its trace itself (no finisher: nothing was still queued when it would have waited)."
    own = max(max(0, f["peak_rss"] - f["rss_at_fork"]) for f in fs)
    anon = max(max(0, f["anon_at_end"] - f["anon_at_fork"]) for f in fs)
    return (
        f"The app exited after {c['wall_s']:.1f} s; its trace was complete after {c.get('complete_s', 0):.1f} s, "
        f'written by {len(fs)} finisher(s) (docs/design.md, "Finishing off the application\'s clock") whose own '
        f"memory (anonymous RSS grown since the fork) peaked at {anon / 2**20:.0f} MiB. Their RSS grew by up to "
        f"{own / 2**30:.1f} GiB more: the app's file-backed weight pages read through the mapping they inherited "
        "(clean page cache shared with the app, evicted under pressure, as the app's own above)."
    )


def render(r):
    G = 2**30
    wb = r["capture"]["app"]["weight_bytes"]
    rows = []
    for name, key in (
        ("app alone (writes the file, then builds the network)", "alone"),
        ("app + our shim", "capture"),
        ("tensorrt_player", "replay"),
    ):
        x = r[key]
        pk = x["peak"]
        rows.append(
            f"| {name} | {x['wall_s']:.1f} | {pk['VmHWM'] / G:.2f} GiB | {pk['RssAnon'] / 2**20:.0f} MiB "
            f"({pk['RssAnon'] / wb * 100:.2f}% of the weights) | {pk['RssFile'] / G:.2f} GiB |"
        )
    c = r["replay"]["player"].get("decode_cache", {})
    tw = r.get("trace_weights", {})
    decode = (
        f"decode cache `{c.get('how')}`, {c.get('bytes', 0) / G:.2f} GiB decoded on {c.get('threads')} threads "
        f"in {c.get('seconds', 0):.1f} s ({c.get('bytes', 0) / 1e6 / max(1e-9, c.get('seconds', 0)):.0f} MB/s)"
        if c.get("bytes")
        else "every blob raw: read in place, nothing decoded"
    )
    return "\n".join(
        [
            "## Bigger than RAM (`bench/huge.py`)",
            "",
            f"Command: `source build/env.sh && python3 bench/huge.py --build build --work /var/tmp/trtrace-huge "
            f"--md BENCHMARKS.md`, also run by `make bench` (weights of this machine's RAM + 1 GiB: {r['gib']:g} GiB). "
            f"Machine: {r['cores']} cores, {r['ram'] / G:.1f} GiB RAM, "
            f"{r['disk_free'] / G:.0f} GiB free disk. App: `bench/models/mmap_weights.py`, {r['capture']['app']['constants']} "
            f"constants of [4096, 4096] fp32 = **{wb / G:.2f} GiB of weights mmapped from a file** "
            f"({wb / r['ram']:.2f}× RAM){'; ' + r['note'] if r['note'] else ''}; network construction only. "
            f"Trace: {r['capture']['trace_bytes'] / G:.2f} GiB, {tw.get('compressed_blobs', 0)} of "
            f"{tw.get('unique_blobs', 0)} blobs compressed (the workers compress while the app runs and store raw "
            "what is still queued when it waits: here, at its exit). Memory sampled from "
            "/proc/<pid>/status every 0.2 s: peak RSS (VmHWM), peak anonymous RSS (the process's own memory), "
            "peak file-backed RSS (mapped page cache, evicted by the kernel under pressure).",
            "",
            "| run | wall s | peak RSS | peak anonymous RSS | peak file-backed RSS |",
            "|---|---|---|---|---|",
            *rows,
            "",
            f"Replay: {decode}; {r['replay']['player']['calls']:,} calls dispatched in "
            f"{r['replay']['player']['dispatch_s']:.2f} s.",
            "",
            finisher_line(r["capture"]),
            "",
            "Both sides' own memory stays flat (anonymous RSS well under 1% of the weights). The capture's file-backed "
            "RSS is the app's own mapping: the shim reads every weight page to hash and store it, and those pages "
            "stay mapped in the app until the kernel evicts them (clean page cache; the app alone never reads them, "
            "as it builds no engine). The player's is the trace's pages the library reads, released as they are "
            "hashed (and, for compressed blobs, the blobs being decoded: decoded bytes go to the cache file).",
        ]
    )


if __name__ == "__main__":
    sys.exit(main())
