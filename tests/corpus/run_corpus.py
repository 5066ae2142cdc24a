#!/usr/bin/env python3
"""Corpus runner: captures and replays every ONNX network of the corpus on both paths and says,
per network and path, whether replay reproduced the application.

For each network (tests/corpus/onnx_app.py parses and builds it on the CPU):
  app alone                      -> engine E_app (or a build failure, exit 2)
  ours:   app under our shim     -> trace, engine E_cap; `trtrace verify`; UNSUPPORTED records
          (`trtrace dump`); `tensorrt_player --check=thorough --json` -> E_play
  nvidia: app under NVIDIA's shim -> JSON+BIN, engine E_nv; `trtrace convert`; `trtrace verify`;
          UNSUPPORTED records; `tensorrt_player --json` -> E_play, compared with E_nv
Engines are compared byte for byte. Outcomes (OUTCOMES_OK are not defects):
  replay-identical    the replay wrote the app's engine, byte for byte
  failure-reproduced  the app's build failed and the replay's failed the same way (player exit 3)
  differs             engines differ and a second build confirmed library nondeterminism: the app
                      alone, run again with a larger environment and heap, or the player, run again with a
                      longer output path, gave different bytes (the library's engine depends on the
                      process's heap layout, which argv and the environment shift; issue 12)
  nvidia-shim-crash   NVIDIA's shim crashed the app or wrote no capture (not our defect)
  app-crash           the app alone crashed or failed other than by a build failure (the library's
                      or the network's problem; neither path can be judged)
  anything else       a named defect of ours, with the first error line
Each step is a child process with a timeout; networks run in parallel on a thread pool.

  run_corpus.py [--sample tests/corpus/sample.txt] [--jobs N] [--out DIR] [--md docs/corpus.md]
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
import nvidia_capture as nv  # noqa: E402  (tests/nvidia_capture.py: settings, NVIDIA shim environment)

ROOT = nv.ROOT
BUILD = nv.BUILD
BIN = pathlib.Path(os.environ.get("TRTRACE_BIN", BUILD / "bin"))
SHIM = BUILD / "lib" / "libtensorrt_shim.so"
APP = HERE / "onnx_app.py"
SOURCES = ("node", "pytorch-converted", "pytorch-operator", "simple", "light", "own")
OUTCOMES_OK = ("replay-identical", "failure-reproduced", "differs", "nvidia-shim-crash", "app-crash")
CLEAN = ("replay-identical", "failure-reproduced")  # outcomes whose work files are removed
PADS = (1, 9, 100, 1000, 4000)  # extra bytes of environment or argv in the second builds (confirm_nondeterminism)
# The app's second builds also hold a malloc'd block of these sizes (onnx_app.py --heap-shift): the
# environment lives on the stack, so only a heap block moves the library's allocations as a shim does.
HEAP_SHIFTS = (640, 8000, 24576, 65536, 98304)


def python():
    return nv.setting("TRTRACE_PYTHON") or sys.executable


def data_dir():
    return pathlib.Path(nv.setting("TRTRACE_ONNX_DATA") or ROOT / ".deps" / "onnx-1.17-data")


def discover(data, own=None):
    """[(source, name, model path)] for every .onnx under data/<source>/ and own/, sorted."""
    nets = []
    for source in SOURCES:
        base = pathlib.Path(own) if source == "own" else data / source
        if source == "own" and own is None or not base.is_dir():
            continue
        for model in sorted(base.rglob("*.onnx")):
            rel = model.relative_to(base)
            name = str(rel.parent if rel.name == "model.onnx" else rel.with_suffix(""))
            nets.append((source, name, model))
    return nets


class Step:
    """One child process: rc (negative: killed by that signal; None: timed out), output, seconds."""

    def __init__(self, cmd, env=None, timeout=300):
        t0 = time.monotonic()
        full = dict(os.environ)
        full.update(env or {})
        try:
            p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, errors="replace",
                               env=full, timeout=timeout)
            self.rc, self.out, self.err = p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired as e:
            self.rc, self.out, self.err = None, "", f"timed out after {timeout} s"
        self.seconds = time.monotonic() - t0
        self.cmd = cmd

    def first_error(self):
        lines = [l.strip() for l in self.err.splitlines() if l.strip()]
        for prefix in ("tensorrt_player:", "trtrace:", "Traceback", "parse error:"):
            for l in lines:
                if l.startswith(prefix):
                    return lines[-1] if prefix == "Traceback" else l
        return lines[0] if lines else f"exit {self.rc}, nothing on stderr"

    def crashed(self):
        return self.rc is None or self.rc < 0


def read(path):
    try:
        return pathlib.Path(path).read_bytes()
    except OSError:
        return None


def defect(name, step, what=""):
    """A defect outcome from a failed step (timeout and crash are named as such)."""
    if step.rc is None:
        return {"outcome": "timeout", "reason": f"{what or name}: {step.first_error()}"}
    if step.rc < 0:
        return {"outcome": "crash", "reason": f"{what or name}: killed by signal {-step.rc}; {step.first_error()}"}
    return {"outcome": name, "reason": f"exit {step.rc}: {step.first_error()}"}


class Network:
    """The work and results of one network; files live in `work` (kept only when something failed)."""

    def __init__(self, source, name, model, work, timeout):
        self.source, self.name, self.model, self.timeout = source, name, model, timeout
        self.work = work
        self.alone = None  # Step of the app alone
        self._confirmed = None

    def app(self, engine, env=None, heap_shift=0):
        return Step([python(), APP, self.model, "--out", engine, "--heap-shift", str(heap_shift)], env, self.timeout)

    def tool(self, *args, env=None):
        return Step(list(args), env, self.timeout)

    def player(self, trace, engine, *extra, env=None):
        return self.tool(BIN / "tensorrt_player", "-j", trace, "-o", engine, "--lib", nv.setting("TRTRACE_TRT_LIB"),
                         "--json", "-q", *extra, env=env)

    def confirm_nondeterminism(self, trace=None, play_engine=None):
        """A reason when a second build shows the library's own nondeterminism, else None. The
        library's engine can depend on the process's heap layout, so the second builds change only
        that: the app alone with an extra environment variable and a heap block held during the
        build, the player with an output path of another length."""
        if self._confirmed is None:
            self._confirmed = ""
            for n in PADS:
                again = self.work / "app-again.engine"
                self.app(again, {"TRTRACE_CORPUS_PAD": "x" * n}, heap_shift=HEAP_SHIFTS[PADS.index(n)])
                if read(again) != read(self.work / "app.engine"):
                    self._confirmed = (f"app alone built again (environment +{n} bytes, heap shifted by "
                                       f"{HEAP_SHIFTS[PADS.index(n)]} bytes): different bytes")
                    break
        if not self._confirmed and trace is not None:
            for n in PADS:
                again = self.work / f"play-again{'x' * n}.engine"
                self.player(trace, again)
                if read(again) != read(play_engine):
                    return f"player run again (output path +{n} bytes): different bytes"
        return self._confirmed or None

    def confirm_under_shim(self, cap_engine):
        """A reason when the app under our shim, built again with a heap block held (another heap
        layout, as the shim's own allocations make), gives other bytes than its first build: then the
        shim did not decide the engine, the layout did. None when every build under it agrees."""
        for n in HEAP_SHIFTS:
            again, trace = self.work / "shim-again.engine", self.work / "shim-again.trtrace"
            self.app(again, {"LD_PRELOAD": str(SHIM), "TRT_SHIM_OUTPUT_FILE": str(trace)}, heap_shift=n)
            if read(again) != read(cap_engine):
                return f"app under our shim built again (heap shifted by {n} bytes): different bytes"
        return None

    def check_trace(self, trace):
        """A defect outcome when `trtrace verify` refuses the trace or it holds UNSUPPORTED records,
        else None (both paths check their trace so before replaying it)."""
        v = self.tool(BIN / "trtrace", "verify", "-q", trace)
        if v.rc != 0:
            return defect("verify-fails", v)
        n, first = self.unsupported(trace)
        if n is None:
            return first
        if n:
            return {"outcome": "unsupported-records", "reason": f"{n} UNSUPPORTED; first: {first[:200]}"}
        return None

    def unsupported(self, trace):
        """Count of UNSUPPORTED records in a trace, or a defect when `trtrace dump` fails."""
        d = self.tool(BIN / "trtrace", "dump", trace)
        if d.rc != 0:
            return None, defect("dump-fails", d)
        lines = [l for l in d.out.splitlines() if "[UNSUPPORTED" in l]
        return len(lines), lines[0] if lines else ""

    def judge_replay(self, play, trace, play_engine, reference, ref_name):
        """The outcome of a player run against the engine (or failure) the app's capture had."""
        if play.crashed():
            return defect("player-crash", play, "player")
        built_ok = reference is not None
        if play.rc == 3:
            if built_ok:
                return {"outcome": "build-fails-on-replay", "reason": f"{ref_name} built; player: {play.first_error() if play.err.strip() else play.out.strip()[:200]}"}
            return {"outcome": "failure-reproduced"}
        if play.rc == 1:
            return defect("player-rejects", play)
        if play.rc == 2:
            return defect("divergence", play)
        if play.rc == 5:  # --check: rebuilds at other heap layouts disagreed (the player's own confirmation)
            return {"outcome": "differs", "reason": play.first_error()}
        if play.rc not in (0, 4):
            return defect("player-fails", play)
        if not built_ok:
            return {"outcome": "failure-not-reproduced", "reason": f"the app's build failed; the player built an engine (exit {play.rc})"}
        if read(play_engine) == reference and play.rc == 0:
            return {"outcome": "replay-identical"}
        why = self.confirm_nondeterminism(trace, play_engine)
        if why:
            return {"outcome": "differs", "reason": why}
        return {"outcome": "engine-differs", "reason": f"player engine != {ref_name} (player exit {play.rc}); second builds identical"}

    def ours(self):
        trace, cap_engine, play_engine = self.work / "ours.trtrace", self.work / "ours-app.engine", self.work / "ours-play.engine"
        cap = self.app(cap_engine, {"LD_PRELOAD": str(SHIM), "TRT_SHIM_OUTPUT_FILE": str(trace)})
        if cap.crashed() or cap.rc != self.alone.rc:
            return defect("capture-changes-app", cap, "app under our shim") | {
                "reason": f"app alone exit {self.alone.rc}, under our shim exit {cap.rc}: {cap.first_error()}"}
        if read(cap_engine) != read(self.work / "app.engine"):
            why = self.confirm_nondeterminism() or self.confirm_under_shim(cap_engine)
            if not why:
                return {"outcome": "capture-changes-engine", "reason": "the app's engine under our shim differs from the app alone's; second build identical"}
        if not trace.exists():
            return {"outcome": "no-trace", "reason": cap.first_error()}
        bad = self.check_trace(trace)
        if bad:
            return bad
        play = self.player(trace, play_engine, "--check=thorough")  # heap-layout-dependent networks: up to 12 rebuilds
        return self.judge_replay(play, trace, play_engine, read(cap_engine), "the captured engine")

    def nvidia(self):
        cap_json, nv_engine = self.work / "nv.json", self.work / "nv-app.engine"
        conv, play_engine = self.work / "nv.trtrace", self.work / "nv-play.engine"
        env = nv.shim_env(cap_json, base={})
        cap = self.app(nv_engine, env)
        if cap.crashed() or cap.rc != self.alone.rc or not cap_json.exists():
            return {"outcome": "nvidia-shim-crash",
                    "reason": f"app alone exit {self.alone.rc}, under NVIDIA's shim exit {cap.rc}"
                              f"{'' if cap_json.exists() else ', no JSON'}: {cap.first_error()}"}
        c = self.tool(BIN / "trtrace", "convert", "-q", cap_json, conv)
        if c.rc != 0:
            return defect("convert-fails", c)
        bad = self.check_trace(conv)
        if bad:
            return bad
        play = self.player(conv, play_engine)
        return self.judge_replay(play, conv, play_engine, read(nv_engine), "the engine under NVIDIA's shim")

    def run(self, paths):
        t0 = time.monotonic()
        self.work.mkdir(parents=True, exist_ok=True)
        self.alone = self.app(self.work / "app.engine")
        res = {"source": self.source, "name": self.name, "model": str(self.model), "app_exit": self.alone.rc}
        if self.alone.crashed() or self.alone.rc not in (0, 2):
            bad = {"outcome": "app-crash", "reason": f"app alone: {defect('app', self.alone)['reason']}"}
            res.update({p: bad for p in paths})
        else:
            for p in paths:
                try:
                    res[p] = getattr(self, p)()
                except Exception as e:  # a runner bug must not hide the other networks
                    res[p] = {"outcome": "runner-error", "reason": f"{type(e).__name__}: {e}"}
        res["seconds"] = round(time.monotonic() - t0, 2)
        return res


def is_defect(result, path):
    return result[path]["outcome"] not in OUTCOMES_OK


def repro(result, path, out):
    """Commands that reproduce one network's path by hand (for docs/corpus.md and findings)."""
    w = pathlib.Path(out) / "work" / result["source"] / result["name"]
    if path == "ours":
        return (f"LD_PRELOAD=build/lib/libtensorrt_shim.so TRT_SHIM_OUTPUT_FILE=t.trtrace python tests/corpus/onnx_app.py "
                f"{result['model']} --out e.engine && trtrace verify t.trtrace && tensorrt_player -j t.trtrace -o p.engine --check  # kept: {w}")
    return (f"python tests/nvidia_capture.py --out nv.json -- tests/corpus/onnx_app.py {result['model']} --out e.engine && "
            f"trtrace convert nv.json nv.trtrace && tensorrt_player -j nv.trtrace -o p.engine  # kept: {w}")


def summary_table(results, path):
    outcomes = sorted({r[path]["outcome"] for r in results}, key=lambda o: (o not in OUTCOMES_OK, o))
    sources = [s for s in SOURCES if any(r["source"] == s for r in results)]
    rows = [f"| {path} | " + " | ".join(outcomes) + " | total |", "|---" * (len(outcomes) + 2) + "|"]
    for s in sources + ["all"]:
        sel = [r for r in results if s in ("all", r["source"])]
        counts = [sum(r[path]["outcome"] == o for r in sel) for o in outcomes]
        rows.append(f"| {'**all**' if s == 'all' else s} | " + " | ".join(str(c) for c in counts) + f" | {len(sel)} |")
    return rows


def markdown(results, paths, meta):
    lines = ["# Corpus: capture and replay of real ONNX networks", "",
             "Generated by `make corpus` (tests/corpus/run_corpus.py, whose docstring defines the outcomes). "
             "Each network is parsed and built on the CPU by tests/corpus/onnx_app.py: alone, under our shim "
             "(then `trtrace verify`, UNSUPPORTED records counted, `tensorrt_player --check`) and under NVIDIA's "
             "shim (then `trtrace convert`, `verify`, `tensorrt_player`); engines are compared byte for byte. "
             "When parsing fails the app still builds what the parser left, so the capture ends in a build "
             "whose outcome the replay must reproduce. Not defects: " + ", ".join(OUTCOMES_OK) + ".", "",
             f"{meta['networks']} networks, {meta['jobs']} workers, {meta['seconds']:.0f} s wall; "
             f"trtrace {meta['commit']} ({meta['build']}), library {meta['library']}; {meta['date']}.", ""]
    for p in paths:
        lines += [f"## Path `{p}`", ""] + summary_table(results, p) + [""]
    lines += ["## Networks not OK", "", "| network | path | outcome | reason |", "|---|---|---|---|"]
    for r in results:
        for p in paths:
            o = r[p]
            if o["outcome"] not in CLEAN:
                reason = o.get("reason", "").replace("|", "\\|").replace("\n", " ")
                lines.append(f"| {r['source']}/{r['name']} | {p} | {o['outcome']} | {reason[:300]} |")
    return "\n".join(lines) + "\n"


def write_atomic(path, text):
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def run(nets, out, jobs, paths=("ours", "nvidia"), timeout=300, keep=False, progress=print, on_result=None):
    """Runs every network; returns the results in `nets` order."""
    out = pathlib.Path(out)
    results, lock, done = {}, threading.Lock(), [0]

    def one(net):
        source, name, model = net
        n = Network(source, name, model, out / "work" / source / name, timeout)
        r = n.run(paths)
        if not keep and all(r[p]["outcome"] in CLEAN for p in paths):
            for f in n.work.iterdir():
                f.unlink()
            n.work.rmdir()
        with lock:
            done[0] += 1
            results[(source, name)] = r
            progress(f"[{done[0]:4d}/{len(nets)}] {source}/{name}: " + ", ".join(f"{p} {r[p]['outcome']}" for p in paths)
                     + f" ({r['seconds']:.1f} s)")
            if on_result:
                on_result([results[(s, nm)] for s, nm, _ in nets if (s, nm) in results])
        return r

    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, nets))
    return [results[(s, n)] for s, n, _ in nets]


def select(nets, sample_file):
    wanted = [l.split("#")[0].strip() for l in pathlib.Path(sample_file).read_text().splitlines()]
    wanted = [w for w in wanted if w]
    have = {f"{s}/{n}": (s, n, m) for s, n, m in nets}
    missing = [w for w in wanted if w not in have]
    if missing:
        raise ValueError(f"{sample_file}: not in the corpus: {', '.join(missing[:5])}")
    return [have[w] for w in wanted]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=pathlib.Path, default=None, help="onnx backend test data (default: $TRTRACE_ONNX_DATA)")
    ap.add_argument("--out", type=pathlib.Path, default=BUILD / "corpus", help="work folder and results.json")
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--sample", help="only the networks listed in this file (source/name per line)")
    ap.add_argument("--match", help="only networks whose source/name contains this text")
    ap.add_argument("--paths", default="ours,nvidia", help="ours, nvidia or both (comma-separated)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per step")
    ap.add_argument("--keep", action="store_true", help="keep every network's files, not only failed ones")
    ap.add_argument("--md", help="also write the markdown table here (e.g. docs/corpus.md)")
    ap.add_argument("--retry", type=pathlib.Path, help="a results.json: run again only its networks that were not "
                    "replay-identical or failure-reproduced on every path, keep the others' results")
    ap.add_argument("--outcomes", help="with --retry: only networks with one of these outcomes (comma-separated)")
    args = ap.parse_args()

    import exports  # tests/corpus/exports.py: our own transformer-style networks
    data = args.data or data_dir()
    if not (data / "node").is_dir():
        print(f"run_corpus: {data}: no onnx backend test data (run tools/setup.sh)", file=sys.stderr)
        return 77
    paths = tuple(args.paths.split(","))
    if "nvidia" in paths and not nv.available():
        print(f"run_corpus: {nv.unavailable_reason()}; only our path runs", file=sys.stderr)
        paths = tuple(p for p in paths if p != "nvidia")
    own = exports.write_all(args.out / "own-models")
    nets = discover(data, own)
    if args.sample:
        nets = select(nets, args.sample)
    if args.match:
        nets = [n for n in nets if args.match in f"{n[0]}/{n[1]}"]
    kept = {}
    if args.retry:
        prev = json.loads(args.retry.read_text())["results"]
        want = set(args.outcomes.split(",")) if args.outcomes else None
        clean = {(r["source"], r["name"]) for r in prev
                 if all(r.get(p, {}).get("outcome") in CLEAN or want and r[p]["outcome"] not in want for p in paths)}
        nets = [n for n in nets if (n[0], n[1]) not in clean]
        rerun = {(n[0], n[1]) for n in nets}
        kept = {(r["source"], r["name"]): r for r in prev if (r["source"], r["name"]) not in rerun}
    t0 = time.time()
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    meta = {"networks": len(nets), "jobs": args.jobs, "library": nv.setting("TRTRACE_TRT_LIB"),
            "build": str(BUILD), "commit": commit or "unknown",
            "date": time.strftime("%Y-%m-%d"), "seconds": 0.0}

    order = {(s, n): i for i, (s, n, _) in enumerate(discover(data, own))}

    def merged(results):  # with the --retry file's clean results, in corpus order
        return sorted(results + list(kept.values()), key=lambda r: order.get((r["source"], r["name"]), -1))

    def save(results):
        meta["seconds"] = time.time() - t0
        write_atomic(args.out / "results.json", json.dumps({"meta": meta | {"done": len(results)}, "results": merged(results)}, indent=1))

    fresh = run(nets, args.out, args.jobs, paths, args.timeout, args.keep, on_result=save)
    results = merged(fresh)
    meta["networks"] = len(results)
    save(fresh)
    if args.md:
        write_atomic(args.md, markdown(results, paths, meta))
    defects = [(r, p) for r in results for p in paths if is_defect(r, p)]
    print(f"run_corpus: {len(results)} networks, {len(defects)} defect outcomes; {args.out / 'results.json'}")
    return 1 if defects else 0


if __name__ == "__main__":
    sys.exit(main())
