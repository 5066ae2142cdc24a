#!/usr/bin/env python3
"""End-to-end benchmarks of capture and replay (issue #8), driven by bench/run.sh.

Runs bench/models/transformer.py (a real tensorrt_rtx app) alone, under our shim and under
NVIDIA's shim; replays the traces with tensorrt_player (raw and compressed); times `trtrace
convert` both ways when it exists; writes every measurement to one JSON file for bench/report.py.

Wall time is the parent's clock around the whole process (from exec to exit, so the shim's close
at exit is included); peak RSS comes from /usr/bin/time. Every figure is repeated --reps times (min and median kept).
"""

import argparse
import json
import os
import pathlib
import platform
import shutil
import statistics
import struct
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODEL = ROOT / "bench" / "models" / "transformer.py"

# name, model args, reps override (None = --reps), replay it, build the engine
FULL = [
    ("calls-20k", ["--blocks", "400", "--hidden", "32", "--dtype", "fp32"], None, True),
    # The same 21,208 calls with 3.8x the weights (64-256 KiB each): what replay memory does per
    # weight byte, apart from the per-call state both share.
    ("calls-20k-h64", ["--blocks", "400", "--hidden", "64", "--dtype", "fp32"], None, True),
    ("fp32-1g", ["--blocks", "20", "--hidden", "1024", "--dtype", "fp32"], None, True),
    ("fp16-1g-rep2", ["--blocks", "40", "--hidden", "1024", "--dtype", "fp16", "--repeat", "2"], None, True),
    ("bf16-1g-rep2", ["--blocks", "40", "--hidden", "1024", "--dtype", "bf16", "--repeat", "2"], None, True),
    ("fp32-8g", ["--blocks", "40", "--hidden", "2048", "--dtype", "fp32"], 1, True),
    # Mid-size (issue 27): 503 MB of fp16, where the player's fixed costs stop hiding its growth.
    ("fp16-512m", ["--blocks", "5", "--hidden", "2048", "--dtype", "fp16"], None, True),
]
FULL_BUILD = ("fp32-400m-build", ["--blocks", "8", "--hidden", "1024", "--dtype", "fp32"])
SMOKE = [
    ("smoke-fp32", ["--blocks", "2", "--hidden", "64", "--dtype", "fp32"], None, True),
    ("smoke-bf16-rep2", ["--blocks", "4", "--hidden", "64", "--dtype", "bf16", "--repeat", "2"], None, True),
]
SMOKE_BUILD = ("smoke-build", ["--blocks", "1", "--hidden", "64", "--dtype", "fp16"])
CAPTURE_REPS = 5  # at least, for each capture mode of a model without a reps override
# The call-heavy models run in half a second, and their bar (issue 27: <= 1.05x) is a difference of
# ~20 ms, inside one run's spread on a shared VM: more runs, so that the medians hold still.
CALL_HEAVY = {"calls-20k", "calls-20k-h64"}
CALL_HEAVY_CAPTURE_REPS = 15
TINY = ["--blocks", "1", "--hidden", "16", "--dtype", "fp32"]  # player RSS baseline


def log(*a):
    print("[e2e]", *a, file=sys.stderr, flush=True)


class Env:
    def __init__(self, build, work):
        self.build = pathlib.Path(build).resolve()
        self.work = pathlib.Path(work)
        self.env = dict(os.environ)
        self.python = self.env.get("TRTRACE_PYTHON") or sys.executable
        self.trt_lib = self.env["TRTRACE_TRT_LIB"]
        self.nv_shim = self.env.get("TRTRACE_NVIDIA_SHIM", "")
        self.shim = str(self.build / "lib" / "libtensorrt_shim.so")
        self.player = str(self.build / "bin" / "tensorrt_player")
        self.trtrace = str(self.build / "bin" / "trtrace")

    def timed(self, cmd, env=None, cwd=None):
        """Runs cmd under /usr/bin/time; returns (wall_s, peak_rss_bytes, stdout)."""
        tf = self.work / "time.txt"
        full = ["/usr/bin/time", "-f", "%e %M", "-o", str(tf)] + cmd
        e = dict(self.env)
        e.update(env or {})
        asan = e.get("TRTRACE_ASAN_RUNTIME")  # a sanitizer tree's smoke run (make sanitize): runtime first
        if asan and e.get("LD_PRELOAD"):
            e["LD_PRELOAD"] = f"{asan}:libstdc++.so.6:{e['LD_PRELOAD']}"
            e["ASAN_OPTIONS"] = e.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
        t0 = time.perf_counter()
        p = subprocess.run(full, env=e, cwd=cwd or self.work, capture_output=True, text=True)
        wall = time.perf_counter() - t0  # time's own %e has 10 ms steps: too coarse for short runs
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
        rss = tf.read_text().split()[-1]
        return wall, int(rss) * 1024, p.stdout

    def nv_env(self, json_path):
        return {
            "LD_LIBRARY_PATH": f"{self.env['TRTRACE_TRT_LIBDIR']}:{self.env.get('TRTRACE_CUDA_STUB_DIR', '')}",
            "TRT_SHIM_NVINFER_LIB_NAME": self.trt_lib,
            "TRT_SHIM_OUTPUT_JSON_FILE": str(json_path),
            "LD_PRELOAD": self.nv_shim,
        }


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("no JSON line in output: " + text[-500:])


def trace_parts(path):
    """Bytes of a trace by part: calls (header, segments, footer, framing) and weights (blob blocks)."""
    parts = {"calls": 64, "weights": 0}
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        off = 64
        while off + 32 <= size:
            f.seek(off)
            magic, btype, _flags, payload = struct.unpack("<IHHQ", f.read(16))
            if magic != 0x4B425254:
                break
            n = ((32 + payload + 7) // 8) * 8
            parts["weights" if btype == 3 else "calls"] += n
            off += n
    return parts


def stats(xs):
    return {"min": min(xs), "median": statistics.median(xs), "all": xs}


def rm(*paths):
    for p in paths:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def until_complete(trace, timeout=3600):
    """Seconds until `trace`'s finisher (if any) completed it: its marker gone (docs/design.md,
    "Finishing off the application's clock")."""
    marker = trace.with_name(trace.name + ".finishing")
    t0 = time.perf_counter()
    while marker.exists() and time.perf_counter() - t0 < timeout:
        time.sleep(0.005)
    return time.perf_counter() - t0


def finisher_reports(path):
    """The finishers' own lines (TRTRACE_FINISHER_REPORT), then the file removed."""
    try:
        lines = [json.loads(x) for x in pathlib.Path(path).read_text().splitlines() if x.strip()]
    except FileNotFoundError:
        return []
    rm(path)
    return lines


def capture_model(E, name, margs, reps, build):
    """App alone, + our shim, + our shim finishing synchronously (TRTRACE_FINISHER=0: the app waits
    for the trace), + NVIDIA's shim; reps runs each, interleaved."""
    w = E.work
    trace, nvjson, nvbin = w / f"{name}.trtrace", w / f"{name}.nv.json", w / f"{name}.nv.bin"
    args = [E.python, str(MODEL)] + margs + ([] if build else ["--no-build"])
    modes = ["alone", "sync", "ours"] + (["nvidia"] if E.nv_shim else [])  # ours last: its trace is replayed
    report = w / "finisher.jsonl"
    runs = {m: [] for m in modes}
    app = None
    for r in range(reps):
        for m in modes:
            rm(*{"ours": [trace, report], "sync": [trace], "nvidia": [nvjson, nvbin]}.get(m, []))
            subprocess.run(["sync"])  # earlier runs' dirty pages are not this run's cost
            env = {}
            if m == "ours":
                env = {"TRT_SHIM_OUTPUT_FILE": str(trace), "LD_PRELOAD": E.shim, "TRTRACE_FINISHER_REPORT": str(report)}
            elif m == "sync":
                env = {"TRT_SHIM_OUTPUT_FILE": str(trace), "LD_PRELOAD": E.shim, "TRTRACE_FINISHER": "0"}
            elif m == "nvidia":
                env = E.nv_env(nvjson)
            try:
                wall, rss, out = E.timed(args, env)
            except RuntimeError as e:
                if m != "nvidia":
                    raise
                log(f"{name}: NVIDIA's shim run failed, left out: {e}")
                runs["nvidia"].append({"failed": str(e)[-300:]})
                continue
            app = last_json(out)
            written, complete, finishers = 0, wall, []
            if m == "ours":
                complete = wall + until_complete(trace)
                finishers = finisher_reports(report)
            if m in ("ours", "sync"):
                written = os.path.getsize(trace)
            elif m == "nvidia":
                written = os.path.getsize(nvjson) + os.path.getsize(nvbin)
            runs[m].append(
                {
                    "wall_s": wall,
                    "rss": rss,
                    "written": written,
                    "network_s": app["network_s"],
                    "gen_s": app["gen_s"],
                    "build_s": app["build_s"],
                    "complete_s": complete,
                    "finishers": finishers,
                }
            )
            log(
                f"{name} rep {r} {m}: {wall:.2f} s (trace complete at {complete:.2f} s), {rss / 2**20:.0f} MiB, "
                f"network {app['network_s']:.3f} s, wrote {written / 2**20:.1f} MiB, {len(finishers)} finishers"
            )
    res = {"name": name, "args": margs, "build": build, "reps": reps, "app": app, "runs": runs}
    # Sizes of the last run's outputs (they stay for replay / conversion).
    info = json.loads(
        subprocess.run([E.trtrace, "info", "--json", str(trace)], capture_output=True, text=True, check=True).stdout
    )
    res["trace"] = {
        "bytes": os.path.getsize(trace),
        "parts": trace_parts(trace),
        "calls": info["calls"],
        "weights": info["weights"],
    }
    # The same trace, rewritten with every blob raw (the player's zero-copy case).
    runs_nv = runs.get("nvidia", [])
    if any("failed" in x for x in runs_nv):
        res["nvidia_failed"] = [x["failed"] for x in runs_nv if "failed" in x]
        del runs["nvidia"]
    if "nvidia" in runs:
        res["nvidia"] = {"json": os.path.getsize(nvjson), "bin": os.path.getsize(nvbin)}
    return res, trace, nvjson, nvbin


def player(E, trace, out_engine=None, cache=None, threads=None):
    """One replay; compressed weights go to the decode cache `cache` (a folder, temp or off;
    default: the run's own folder, so the first replay of a trace builds it and later ones reuse it)."""
    cmd = [
        E.player,
        "-j",
        str(trace),
        "--lib",
        E.trt_lib,
        "--json",
        "-q",
        "--decode-cache",
        str(cache or E.work / "decode-cache"),
    ]
    if out_engine:
        cmd += ["-o", str(out_engine), "--check"]
    wall, rss, out = E.timed(cmd, {"TRTRACE_DECODE_THREADS": str(threads)} if threads else None)
    j = last_json(out)
    return {
        "wall_s": wall,
        "rss": rss,
        "open_s": j["open_s"],
        "dispatch_s": j["dispatch_s"],
        "build_s": j["build_s"],
        "calls": j["calls"],
        "cache": j.get("decode_cache", {}),
        "identical": all(n.get("vs_capture") == "identical" for n in j["networks"]) if out_engine else None,
    }


def replay_model(E, trace, reps, build, scaling=False):
    """Raw and compressed replays (the compressed: first through a new decode cache, then reusing
    it); with `scaling`, the decode on 1 thread and on every core (nameless cache files, decoded anew).
    Both traces are rewrites of the capture: it stores raw whatever is still queued when the app
    waits, so how much of the capture itself is compressed depends on the run's timing."""
    res = {}
    raw, packed = trace.with_suffix(".raw.trtrace"), trace.with_suffix(".zstd.trtrace")
    for path, how in ((raw, "--raw"), (packed, "--compress")):
        subprocess.run([E.trtrace, "rewrite", str(trace), str(path), how], check=True, capture_output=True)
    shutil.rmtree(E.work / "decode-cache", ignore_errors=True)
    for kind, path in (("compressed", packed), ("raw", raw)):
        runs = [
            player(E, path, E.work / "replay.engine" if build else None)
            for _ in range(max(2, reps) if kind == "compressed" else reps)
        ]
        res[kind] = {"bytes": os.path.getsize(path), "runs": runs}
        log(
            f"replay {path.name}: open {runs[0]['open_s'] * 1e3:.3f} ms, dispatch {runs[0]['dispatch_s']:.3f} s, "
            f"build {runs[0]['build_s']:.3f} s, peak {runs[0]['rss'] / 2**20:.0f} MiB, "
            f"decode cache {runs[0]['cache'].get('how')} {runs[0]['cache'].get('seconds', 0):.2f} s"
        )
    if scaling:
        res["scaling"] = {str(t): player(E, packed, cache="temp", threads=t) for t in sorted({1, os.cpu_count() or 1})}
        log(
            "decode scaling: "
            + ", ".join(f"{t} threads {x['cache']['seconds']:.2f} s" for t, x in res["scaling"].items())
        )
    shutil.rmtree(E.work / "decode-cache", ignore_errors=True)
    rm(raw, packed, E.work / "replay.engine")
    return res


def disk_write(work, nbytes, sync=True):
    """This disk's sequential write bandwidth: nbytes of incompressible data, then fdatasync; with
    sync False, the page cache's: the same writes with nothing dirty before and no fdatasync (what a
    process pays to hand bytes to the kernel before it may exit)."""
    path = work / "disk-probe.bin"
    block = os.urandom(8 << 20)
    subprocess.run(["sync"])
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for _ in range(max(1, nbytes // len(block))):
            os.write(fd, block)
        if sync:
            os.fdatasync(fd)
    finally:
        os.close(fd)
    secs = time.perf_counter() - t0
    rm(path)
    subprocess.run(["sync"])
    return {
        "bytes": max(1, nbytes // len(block)) * len(block),
        "seconds": secs,
        "bytes_per_s": max(1, nbytes // len(block)) * len(block) / secs,
    }


def convert_available(E):
    p = subprocess.run([E.trtrace, "--help"], capture_output=True, text=True)
    return any(line.split()[:1] == ["convert"] for line in p.stdout.splitlines())


def convert_model(E, trace, nvjson, nvbin, reps):
    res = {}
    back = E.work / "conv.trtrace"
    outjson = E.work / "conv.json"
    for direction, src, dst, srcbytes in (
        ("json_to_trace", nvjson, back, os.path.getsize(nvjson) + os.path.getsize(nvbin)),
        ("trace_to_json", trace, outjson, os.path.getsize(trace)),
    ):
        runs = []
        for _ in range(reps):
            rm(dst, outjson.with_suffix(".bin"))
            wall, rss, _ = E.timed([E.trtrace, "convert", str(src), str(dst)])
            runs.append({"wall_s": wall, "rss": rss})
        res[direction] = {"input_bytes": srcbytes, "runs": runs}
        log(f"convert {direction}: {runs[0]['wall_s']:.2f} s")
    rm(back, outjson, outjson.with_suffix(".bin"))
    return res


def dirty_settings():
    """What the kernel lets writers leave dirty before they wait for the disk: vm.dirty_bytes, else
    vm.dirty_ratio percent of the memory that is available (read before the runs)."""
    vm = {}
    for k in ("dirty_ratio", "dirty_bytes"):
        try:
            vm[k] = int(pathlib.Path(f"/proc/sys/vm/{k}").read_text())
        except (OSError, ValueError):
            vm[k] = 0
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            vm["mem_available"] = int(line.split()[1]) * 1024
    return vm


def machine():
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "mem_gib": round(mem / 2**30, 1),
        "vm": dirty_settings(),
        "kernel": platform.release(),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "host": platform.node(),
    }


# A thread that only computes (no memory traffic), for sibling_load.
BURN = "import time\nend = time.time() + 60\nwhile time.time() < end:\n    pass\n"


def pinned(cpu):
    return lambda: os.sched_setaffinity(0, {cpu})


def sibling_load(E, reps, model_args):
    """The physical limit beside a one-threaded app: how much one busy thread on another CPU slows
    the app's own thread (calls-20k's network construction, that thread's CPU time; the app on CPU 0,
    a pure-ALU loop on CPU 1). Where the two CPUs share a core, each second the capture's threads
    run costs the app's thread a share of one, whatever they do."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    cmd = [E.python, str(MODEL)] + model_args + ["--no-build"]
    quiet, loaded = [], []
    for _ in range(reps):
        quiet.append(
            last_json(
                subprocess.run(cmd, env=E.env, capture_output=True, text=True, preexec_fn=pinned(cpus[0])).stdout
            )["network_cpu_s"]
        )
        burner = subprocess.Popen([E.python, "-c", BURN], preexec_fn=pinned(cpus[1]))
        try:
            time.sleep(0.1)
            p = subprocess.run(cmd, env=E.env, capture_output=True, text=True, preexec_fn=pinned(cpus[0]))
            loaded.append(last_json(p.stdout)["network_cpu_s"])
        finally:
            burner.kill()
            burner.wait()
    q, l = statistics.median(quiet), statistics.median(loaded)
    return {"quiet_cpu_s": q, "loaded_cpu_s": l, "ratio": l / q, "runs": reps, "model": " ".join(model_args)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated model names (default: all)")
    a = ap.parse_args()
    work = pathlib.Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    E = Env(a.build, work)
    models, build_model = (SMOKE, SMOKE_BUILD) if a.smoke else (FULL, FULL_BUILD)
    if a.only:
        keep = set(a.only.split(","))
        models = [m for m in models if m[0] in keep]
    reps = 1 if a.smoke else a.reps
    out = {
        "machine": machine(),
        "smoke": a.smoke,
        "reps": reps,
        "nvidia_shim": bool(E.nv_shim),
        "models": [],
        "errors": [],
    }
    t0 = time.time()

    # Player RSS baseline: a tiny trace; and the app's own on the same network (the library's state
    # for a network is measured as the app's growth beyond its weights).
    tiny = work / "tiny.trtrace"
    E.timed([E.python, str(MODEL)] + TINY + ["--no-build"], {"TRT_SHIM_OUTPUT_FILE": str(tiny), "LD_PRELOAD": E.shim})
    out["player_baseline"] = player(E, tiny)
    out["app_baseline"] = {"rss": E.timed([E.python, str(MODEL)] + TINY + ["--no-build"])[1]}
    rm(tiny)

    out["disk_write"] = disk_write(work, (64 << 20) if a.smoke else (2 << 30))
    out["cache_write"] = disk_write(work, (64 << 20) if a.smoke else (1 << 30), sync=False)
    log(
        f"disk write: {out['disk_write']['bytes_per_s'] / 1e6:.0f} MB/s; "
        f"page cache write: {out['cache_write']['bytes_per_s'] / 1e6:.0f} MB/s"
    )

    out["sibling_load"] = sibling_load(E, 1, TINY) if a.smoke else sibling_load(E, max(reps, 5), FULL[0][1])
    if out["sibling_load"]:
        log(f"sibling load: a busy CPU beside the app slows its thread {out['sibling_load']['ratio']:.3f}x")

    conv = convert_available(E)
    out["convert_available"] = conv
    for name, margs, r, replay in models:
        mreps = r or reps
        # The capture's modes are judged run against run (issue 27), where the VM's spread (the
        # page cache's speed; see BENCHMARKS.md) is larger than one replay figure's: more runs.
        creps = mreps if (r or a.smoke) else max(reps, CALL_HEAVY_CAPTURE_REPS if name in CALL_HEAVY else CAPTURE_REPS)
        res, trace, nvjson, nvbin = capture_model(E, name, margs, creps, build=False)
        if replay:
            res["replay"] = replay_model(
                E, trace, mreps, build=False, scaling=(name == models[0][0] if a.smoke else name == "fp32-1g")
            )
        if conv and E.nv_shim and os.path.exists(nvjson):
            try:
                res["convert"] = convert_model(E, trace, nvjson, nvbin, mreps)
            except Exception as e:  # the converter is work in progress elsewhere
                out["errors"].append(f"convert {name}: {e}")
                log(f"convert {name} failed: {e}")
        rm(trace, nvjson, nvbin)
        out["models"].append(res)
        pathlib.Path(a.out).write_text(json.dumps(out, indent=1))

    # Capture with the engine build, and replay with the build: player time vs the build itself.
    name, margs = build_model
    res, trace, nvjson, nvbin = capture_model(E, name, margs, reps, build=True)
    res["replay"] = replay_model(E, trace, reps, build=True)
    rm(trace, nvjson, nvbin)
    out["build_model"] = res
    out["elapsed_s"] = time.time() - t0
    pathlib.Path(a.out).write_text(json.dumps(out, indent=1))
    log(f"done in {out['elapsed_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
