#!/usr/bin/env python3
"""Corpus runner: captures and replays every ONNX network of the corpus on both paths, then runs
every trtrace tool on our capture, and says per network, path and tool whether the result
reproduced the application.

For each network (tests/corpus/onnx_app.py parses and builds it on the CPU; the `torch` source's
networks are Torch-TensorRT-RTX compiling one PyTorch model, tests/apps/torch_app.py, run when
.deps/venv-torch exists and holds the library version of this run):
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
Tools (--tools, default all; tests/corpus/corpus_tools.py defines each check and its outcomes):
export, strip, extract, diff, api, reduce, each on our capture (made when the ours path did not run).
Each step is a child process with a timeout; networks run in parallel on a thread pool. Exit 1 when
any path or tool has a defect outcome; the markdown has one table per path and tool, rows by source.

  run_corpus.py [--sample tests/corpus/sample.txt] [--jobs N] [--out DIR] [--md docs/corpus.md]
                [--paths ours,nvidia] [--tools all|none|export,strip,...] [--reduce-timeout S]
"""

import argparse
import concurrent.futures
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
import nvidia_capture as nv  # noqa: E402  (tests/nvidia_capture.py: settings, NVIDIA shim environment)
import corpus_tools  # noqa: E402  (tests/corpus/: the tool checks)
from steps import Step, defect, read  # noqa: E402,F401  (tests/corpus/: child processes)

ROOT = nv.ROOT
BUILD = nv.BUILD
BIN = pathlib.Path(os.environ.get("TRTRACE_BIN", BUILD / "bin"))
SHIM = BUILD / "lib" / "libtensorrt_shim.so"
APP = HERE / "onnx_app.py"
TORCH_PYTHON = ROOT / ".deps" / "venv-torch" / "bin" / "python"  # tools/requirements-torch.txt
TORCH_APP = ROOT / "tests" / "apps" / "torch_app.py"  # Torch-TensorRT-RTX compiling one model per network
SOURCES = ("node", "pytorch-converted", "pytorch-operator", "simple", "light", "own", "torch")
OUTCOMES_OK = ("replay-identical", "failure-reproduced", "differs", "nvidia-shim-crash", "app-crash")
CLEAN = ("replay-identical", "failure-reproduced")  # outcomes whose work files are removed
PADS = (1, 9, 100, 1000, 4000)  # extra bytes of environment or argv in the second builds (confirm_nondeterminism)
# The app's second builds also hold a malloc'd block of these sizes (onnx_app.py --heap-shift): the
# environment lives on the stack, so only a heap block moves the library's allocations as a shim does.
HEAP_SHIFTS = (640, 8000, 24576, 65536, 98304)
PATHS = ("ours", "nvidia")
REDUCE_TIMEOUT = 120  # seconds one network's `trtrace reduce` may search (then "reduce-timeout")


def python():
    return nv.setting("TRTRACE_PYTHON") or sys.executable


def data_dir():
    return pathlib.Path(nv.setting("TRTRACE_ONNX_DATA") or ROOT / ".deps" / "onnx-1.17-data")


def trt_version(interpreter):
    code = "import tensorrt_rtx as t; print(t.__version__)"
    r = subprocess.run([str(interpreter), "-c", code], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else None


def torch_models():
    """The Torch-TensorRT-RTX models (torch_app.py --list) when .deps/venv-torch exists and its
    TensorRT-RTX is the one this run replays with (torch-tensorrt-rtx 2.14 pins 1.6.1), else ()."""
    if not TORCH_PYTHON.exists() or trt_version(TORCH_PYTHON) != trt_version(python()):
        return ()
    r = subprocess.run([str(TORCH_PYTHON), str(TORCH_APP), "--list"], capture_output=True, text=True)
    return tuple(r.stdout.split()) if r.returncode == 0 else ()


def discover(data, own=None, torch=()):
    """[(source, name, model)] for every .onnx under data/<source>/ and own/ (model: its path), then
    every Torch-TensorRT-RTX model in `torch` (model: its torch_app.py name), sorted."""
    nets = []
    for source in SOURCES:
        if source == "torch":
            nets += [("torch", name, name) for name in sorted(torch)]
            continue
        if source == "own" and own is None:
            continue
        base = pathlib.Path(own) if source == "own" else data / source
        if not base.is_dir():
            continue
        for model in sorted(base.rglob("*.onnx")):
            rel = model.relative_to(base)
            name = str(rel.parent if rel.name == "model.onnx" else rel.with_suffix(""))
            nets.append((source, name, model))
    return nets


class Network:
    """The work and results of one network; files live in `work` (kept only when something failed)."""

    def __init__(self, source, name, model, work, timeout, reduce_timeout=REDUCE_TIMEOUT):
        self.source, self.name, self.model, self.timeout = source, name, model, timeout
        self.work, self.reduce_timeout = work, reduce_timeout
        self.trtrace, self.python, self.lib = BIN / "trtrace", python(), nv.setting("TRTRACE_TRT_LIB")
        self.shim = SHIM
        self.nv_lossy = None  # the converter's warning when NVIDIA's JSON lost values (non-finite as null)
        self.alone = None  # Step of the app alone
        self._confirmed = None
        self._capture = None

    def tool(self, *args, env=None, timeout=None):
        return Step(list(args), env, timeout or self.timeout)

    def api_env(self):
        """The environment of a Python child using this checkout's trtrace package and build."""
        path = os.pathsep.join(p for p in (str(ROOT / "python"), os.environ.get("PYTHONPATH")) if p)
        return {"PYTHONPATH": path, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}

    def capture(self):
        """The app under our shim (once): work/ours.trtrace and work/ours-app.engine."""
        if self._capture is None:
            self._capture = self.app(
                self.work / "ours-app.engine",
                {"LD_PRELOAD": str(SHIM), "TRT_SHIM_OUTPUT_FILE": str(self.work / "ours.trtrace")},
            )
        return self._capture

    def app(self, engine, env=None, heap_shift=0):
        if self.source == "torch":
            cmd = [TORCH_PYTHON, TORCH_APP, "--model", self.model]
        else:
            cmd = [python(), APP, self.model]
        return Step(cmd + ["--out", engine, "--heap-shift", str(heap_shift)], env, self.timeout)

    def player(self, trace, engine, *extra, env=None):
        return self.tool(
            BIN / "tensorrt_player",
            "-j",
            trace,
            "-o",
            engine,
            "--lib",
            nv.setting("TRTRACE_TRT_LIB"),
            "--json",
            "-q",
            *extra,
            env=env,
        )

    def confirm_nondeterminism(self, trace=None, play_engine=None):
        """A reason when a second build shows the library's own nondeterminism, else None. The
        library's engine can depend on the process's heap layout, so the second builds change only
        that: the app alone with an extra environment variable and a heap block held during the
        build, the player with an output path of another length. Either finding is kept, so every
        later judge of the network (the tools' checks included) sees it."""
        if self._confirmed is None:
            self._confirmed = ""
            for n in PADS:
                again = self.work / "app-again.engine"
                self.app(again, {"TRTRACE_CORPUS_PAD": "x" * n}, heap_shift=HEAP_SHIFTS[PADS.index(n)])
                if read(again) != read(self.work / "app.engine"):
                    self._confirmed = (
                        f"app alone built again (environment +{n} bytes, heap shifted by "
                        f"{HEAP_SHIFTS[PADS.index(n)]} bytes): different bytes"
                    )
                    break
        if not self._confirmed and trace is not None:
            for n in PADS:
                again = self.work / f"play-again{'x' * n}.engine"
                self.player(trace, again)
                if read(again) != read(play_engine):
                    self._confirmed = f"player run again (output path +{n} bytes): different bytes"
                    break
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
                return {
                    "outcome": "build-fails-on-replay",
                    "reason": f"{ref_name} built; player: {play.first_error() if play.err.strip() else play.out.strip()[:200]}",
                }
            return {"outcome": "failure-reproduced"}
        if play.rc == 1:
            return defect("player-rejects", play)
        if play.rc == 2:
            return defect("divergence", play)
        if play.rc == 5:  # --check: rebuilds at other heap layouts disagreed (the player's own confirmation)
            return {"outcome": "differs", "reason": play.first_error()}
        if play.rc == 6:  # -o given, no build in the capture: the app's build call was not recorded
            return defect("no-build-in-capture", play)
        if play.rc not in (0, 4):
            return defect("player-fails", play)
        if not built_ok:
            return {
                "outcome": "failure-not-reproduced",
                "reason": f"the app's build failed; the player built an engine (exit {play.rc})",
            }
        if read(play_engine) == reference and play.rc == 0:
            return {"outcome": "replay-identical"}
        why = self.confirm_nondeterminism(trace, play_engine)
        if why:
            return {"outcome": "differs", "reason": why}
        return {
            "outcome": "engine-differs",
            "reason": f"player engine != {ref_name} (player exit {play.rc}); second builds identical",
        }

    def ours(self):
        trace, cap_engine, play_engine = (
            self.work / "ours.trtrace",
            self.work / "ours-app.engine",
            self.work / "ours-play.engine",
        )
        cap = self.capture()
        if cap.crashed() or cap.rc != self.alone.rc:
            return defect("capture-changes-app", cap, "app under our shim") | {
                "reason": f"app alone exit {self.alone.rc}, under our shim exit {cap.rc}: {cap.first_error()}"
            }
        if read(cap_engine) != read(self.work / "app.engine"):
            why = self.confirm_nondeterminism() or self.confirm_under_shim(cap_engine)
            if not why:
                return {
                    "outcome": "capture-changes-engine",
                    "reason": "the app's engine under our shim differs from the app alone's; second build identical",
                }
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
            return {
                "outcome": "nvidia-shim-crash",
                "reason": f"app alone exit {self.alone.rc}, under NVIDIA's shim exit {cap.rc}"
                f"{'' if cap_json.exists() else ', no JSON'}: {cap.first_error()}",
            }
        c = self.tool(BIN / "trtrace", "convert", "-q", cap_json, conv)
        if c.rc != 0:
            return defect("convert-fails", c)
        self.nv_lossy = next((l for l in c.err.splitlines() if "null number(s)" in l), None)
        bad = self.check_trace(conv)
        if bad:
            return bad
        play = self.player(conv, play_engine)
        return self.judge_replay(play, conv, play_engine, read(nv_engine), "the engine under NVIDIA's shim")

    def run(self, paths, tools=()):
        t0 = time.monotonic()
        self.work.mkdir(parents=True, exist_ok=True)
        self.alone = self.app(self.work / "app.engine")
        res = {"source": self.source, "name": self.name, "model": str(self.model), "app_exit": self.alone.rc}
        if self.alone.crashed() or self.alone.rc not in (0, 2):
            bad = {"outcome": "app-crash", "reason": f"app alone: {defect('app', self.alone)['reason']}"}
            res.update({p: bad for p in paths + tuple(tools)})
        else:
            for p in paths:
                t1 = time.monotonic()
                try:
                    res[p] = getattr(self, p)()
                except Exception as e:  # a runner bug must not hide the other networks
                    res[p] = {"outcome": "runner-error", "reason": f"{type(e).__name__}: {e}"}
                res[p]["seconds"] = round(time.monotonic() - t1, 2)
            res.update(corpus_tools.run_tools(self, tools))
        res["seconds"] = round(time.monotonic() - t0, 2)
        return res


def ok_outcomes(column):
    """The outcomes of a path or tool column that are not defects."""
    return corpus_tools.OK_OUTCOMES.get(column, OUTCOMES_OK)


def is_defect(result, column):
    return result[column]["outcome"] not in ok_outcomes(column)


def is_clean(result, column):
    return result[column]["outcome"] in (CLEAN + corpus_tools.CLEAN)


TOOL_REPRO = {
    "export": "trtrace export t.trtrace --python py && python py/build.py --out x.engine && cmp x.engine e.engine",
    "strip": "trtrace strip t.trtrace -o s.trtrace && tensorrt_player -j s.trtrace -o s.engine",
    "extract": "trtrace extract t.trtrace --network 0 -o x.trtrace && tensorrt_player -j x.trtrace -o x.engine && cmp x.engine e.engine",
    "diff": "trtrace convert t.trtrace r.json && trtrace convert r.json r.trtrace && trtrace diff t.trtrace r.trtrace",
    "api": "PYTHONPATH=python python tests/corpus/api_check.py t.trtrace; trtrace verify t.trtrace",
    "reduce": "trtrace reduce t.trtrace -o r.trtrace --json && tensorrt_player -j r.trtrace -o r.engine",
}


def repro(result, column, out):
    """Commands that reproduce one network's path or tool by hand (for docs/corpus.md and findings)."""
    w = pathlib.Path(out) / "work" / result["source"] / result["name"]
    capture = (
        f"LD_PRELOAD=build/lib/libtensorrt_shim.so TRT_SHIM_OUTPUT_FILE=t.trtrace python tests/corpus/onnx_app.py "
        f"{result['model']} --out e.engine"
    )
    if column == "ours":
        return f"{capture} && trtrace verify t.trtrace && tensorrt_player -j t.trtrace -o p.engine --check  # kept: {w}"
    if column in TOOL_REPRO:
        return f"{capture}; {TOOL_REPRO[column]}  # kept: {w}"
    return (
        f"python tests/nvidia_capture.py --out nv.json -- tests/corpus/onnx_app.py {result['model']} --out e.engine && "
        f"trtrace convert nv.json nv.trtrace && tensorrt_player -j nv.trtrace -o p.engine  # kept: {w}"
    )


def summary_table(results, column):
    ok = ok_outcomes(column)
    outcomes = sorted({r[column]["outcome"] for r in results}, key=lambda o: (o not in ok, o))
    sources = [s for s in SOURCES if any(r["source"] == s for r in results)]
    rows = [f"| {column} | " + " | ".join(outcomes) + " | total | defects |", "|---" * (len(outcomes) + 3) + "|"]
    for s in sources + ["all"]:
        sel = [r for r in results if s in ("all", r["source"])]
        counts = [sum(r[column]["outcome"] == o for r in sel) for o in outcomes]
        bad = sum(is_defect(r, column) for r in sel)
        rows.append(
            f"| {'**all**' if s == 'all' else s} | " + " | ".join(str(c) for c in counts) + f" | {len(sel)} | {bad} |"
        )
    return rows


INTRO = (
    "Generated by `make corpus` (tests/corpus/run_corpus.py and tests/corpus/corpus_tools.py, whose docstrings "
    "define the outcomes). Each network is parsed and built on the CPU by tests/corpus/onnx_app.py: alone, under our "
    "shim (then `trtrace verify`, UNSUPPORTED records counted, `tensorrt_player --check`) and under NVIDIA's "
    "shim (then `trtrace convert`, `verify`, `tensorrt_player`); engines are compared byte for byte. "
    "When parsing fails the app still builds what the parser left, so the capture ends in a build "
    "whose outcome the replay must reproduce. Then every tool runs on our capture: export (build.py "
    "rebuilds the app's engine or its failure), strip (replays), extract (each network's engine), diff "
    "(equivalent to the trace's NVIDIA JSON round trip and to NVIDIA's capture converted), the Python API "
    "(agrees with `trtrace verify`, reads every weight) and reduce (where the build fails: the same failure, "
    "no more layers)."
)


def markdown(results, columns, meta):
    bad = {c: sum(is_defect(r, c) for r in results) for c in columns}
    lines = [
        "# Corpus: capture, replay and every tool on real ONNX networks",
        "",
        INTRO,
        "",
        f"{meta['networks']} networks, {meta['jobs']} workers, {meta['seconds']:.0f} s wall; "
        f"trtrace {meta['commit']} ({meta['build']}), library {meta['library']}; {meta['date']}.",
        "",
        "Defects: " + ", ".join(f"{c} {bad[c]}" for c in columns) + ".",
        "",
    ]
    for c in columns:
        kind = "Path" if c in PATHS else "Tool"
        lines += [f"## {kind} `{c}`", "", "Not defects: " + ", ".join(ok_outcomes(c)) + ".", ""]
        lines += summary_table(results, c) + [""]
        spent = sorted((r[c].get("seconds", 0.0), f"{r['source']}/{r['name']}") for r in results)
        if spent:
            lines += [
                f"Time: {sum(t for t, _ in spent):.0f} s in all, the longest {spent[-1][0]:.0f} s ({spent[-1][1]}).",
                "",
            ]
    lines += ["## Networks not OK", "", "| network | path or tool | outcome | reason |", "|---|---|---|---|"]
    for r in results:
        for c in columns:
            o = r[c]
            if not is_clean(r, c):
                reason = o.get("reason", "").replace("|", "\\|").replace("\n", " ")
                lines.append(f"| {r['source']}/{r['name']} | {c} | {o['outcome']} | {reason[:300]} |")
    return "\n".join(lines) + "\n"


def write_atomic(path, text):
    """Writes path whole or not at all: an unguessable temp file beside it, then renamed."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def run(
    nets,
    out,
    jobs,
    paths=PATHS,
    timeout=300,
    keep=False,
    progress=print,
    on_result=None,
    tools=(),
    reduce_timeout=REDUCE_TIMEOUT,
    tools_on=None,
):
    """Runs every network (the tools only on those in `tools_on`, a set of (source, name); None: all);
    returns the results in `nets` order."""
    out = pathlib.Path(out)
    results, lock, done = {}, threading.Lock(), [0]

    def one(net):
        source, name, model = net
        n = Network(source, name, model, out / "work" / source / name, timeout, reduce_timeout)
        r = n.run(tuple(paths), tools if tools_on is None or (source, name) in tools_on else ())
        columns = [c for c in (*paths, *tools) if c in r]
        if not keep and all(is_clean(r, c) for c in columns):
            shutil.rmtree(n.work, ignore_errors=True)
        with lock:
            done[0] += 1
            results[(source, name)] = r
            progress(
                f"[{done[0]:4d}/{len(nets)}] {source}/{name}: "
                + ", ".join(f"{c} {r[c]['outcome']}" for c in columns)
                + f" ({r['seconds']:.1f} s)"
            )
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


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data", type=pathlib.Path, default=None, help="onnx backend test data (default: $TRTRACE_ONNX_DATA)"
    )
    ap.add_argument("--out", type=pathlib.Path, default=BUILD / "corpus", help="work folder and results.json")
    ap.add_argument("--jobs", type=int, default=os.cpu_count())
    ap.add_argument("--sample", help="only the networks listed in this file (source/name per line)")
    ap.add_argument("--match", help="only networks whose source/name contains this text")
    ap.add_argument("--paths", default=",".join(PATHS), help="ours, nvidia, both (comma-separated) or none")
    ap.add_argument(
        "--tools",
        default="all",
        help="the tools run on our capture: all, none, or some of "
        + ",".join(corpus_tools.TOOLS)
        + " (comma-separated)",
    )
    ap.add_argument("--timeout", type=int, default=300, help="seconds per step")
    ap.add_argument(
        "--reduce-timeout",
        type=int,
        default=REDUCE_TIMEOUT,
        help="seconds one network's `trtrace reduce` may search (then outcome reduce-timeout)",
    )
    ap.add_argument("--keep", action="store_true", help="keep every network's files, not only failed ones")
    ap.add_argument("--md", help="also write the markdown table here (e.g. docs/corpus.md)")
    ap.add_argument(
        "--retry",
        type=pathlib.Path,
        help="a results.json: run again only its networks that were not "
        "clean (e.g. replay-identical, failure-reproduced) on every path and tool, keep the others' results",
    )
    ap.add_argument("--outcomes", help="with --retry: only networks with one of these outcomes (comma-separated)")
    args = ap.parse_args()
    args.paths = choose(ap, args.paths, PATHS, "--paths")
    args.tools = choose(ap, args.tools, corpus_tools.TOOLS, "--tools")
    return args


def choose(ap, text, allowed, option):
    """The names of a comma-separated option, in `allowed` order ("all" and "none" as said)."""
    names = {"all": set(allowed), "none": set()}.get(text, set(filter(None, text.split(","))))
    unknown = names - set(allowed)
    if unknown:
        ap.error(f"{option}: unknown {', '.join(sorted(unknown))} (choose from {', '.join(allowed)}, all, none)")
    return tuple(n for n in allowed if n in names)


def retry_split(nets, results_json, columns, outcomes):
    """(networks to run again, {(source, name): kept result}) for --retry."""
    prev = json.loads(results_json.read_text())["results"]
    want = set(outcomes.split(",")) if outcomes else None
    clean = {
        (r["source"], r["name"])
        for r in prev
        if all(c in r and (is_clean(r, c) or want and r[c]["outcome"] not in want) for c in columns)
    }
    nets = [n for n in nets if (n[0], n[1]) not in clean]
    rerun = {(n[0], n[1]) for n in nets}
    return nets, {(r["source"], r["name"]): r for r in prev if (r["source"], r["name"]) not in rerun}


def main():
    args = parse_args()
    import exports  # tests/corpus/exports.py: our own transformer-style networks

    data = args.data or data_dir()
    if not (data / "node").is_dir():
        print(f"run_corpus: {data}: no onnx backend test data (run tools/setup.sh)", file=sys.stderr)
        return 77
    paths = args.paths
    if "nvidia" in paths and not nv.available():
        print(f"run_corpus: {nv.unavailable_reason()}; only our path runs", file=sys.stderr)
        paths = tuple(p for p in paths if p != "nvidia")
    columns = paths + args.tools
    own = exports.write_all(args.out / "own-models")
    torch = torch_models()
    nets = discover(data, own, torch)
    if args.sample:
        nets = select(nets, args.sample)
    if args.match:
        nets = [n for n in nets if args.match in f"{n[0]}/{n[1]}"]
    kept = {}
    if args.retry:
        nets, kept = retry_split(nets, args.retry, columns, args.outcomes)
    t0 = time.time()
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    meta = {
        "networks": len(nets),
        "jobs": args.jobs,
        "library": nv.setting("TRTRACE_TRT_LIB"),
        "build": str(BUILD),
        "commit": commit or "unknown",
        "paths": paths,
        "tools": args.tools,
        "date": time.strftime("%Y-%m-%d"),
        "seconds": 0.0,
    }

    order = {(s, n): i for i, (s, n, _) in enumerate(discover(data, own, torch))}

    def merged(results):  # with the --retry file's clean results, in corpus order
        return sorted(results + list(kept.values()), key=lambda r: order.get((r["source"], r["name"]), -1))

    def save(results):
        meta["seconds"] = time.time() - t0
        write_atomic(
            args.out / "results.json",
            json.dumps({"meta": meta | {"done": len(results)}, "results": merged(results)}, indent=1),
        )

    fresh = run(
        nets,
        args.out,
        args.jobs,
        paths,
        args.timeout,
        args.keep,
        on_result=save,
        tools=args.tools,
        reduce_timeout=args.reduce_timeout,
    )
    results = merged(fresh)
    meta["networks"] = len(results)
    save(fresh)
    if args.md:
        write_atomic(args.md, markdown(results, columns, meta))
    defects = {c: sum(is_defect(r, c) for r in results) for c in columns}
    print(
        f"run_corpus: {len(results)} networks, {sum(defects.values())} defect outcomes ("
        + ", ".join(f"{c} {n}" for c, n in defects.items())
        + f"); {args.out / 'results.json'}"
    )
    return 1 if any(defects.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
