"""The corpus runner's tool checks (run_corpus.py --tools): every trtrace tool on the trace our shim
captured of one network, each judged against what the application itself did.

  export   `trtrace export --python`, then the script alone: the app's engine byte for byte, or its
           build failure (the library's same error). A call export cannot write is a defect unless
           docs/export.md lists it (the tensorrt_rtx Python API truly lacks it), with its reason.
  strip    `trtrace strip`, then the player: an engine (other weights, so other bytes), or the same
           build failure as the capture.
  extract  `trtrace extract --network N` of each network, then the player: that network's engine, or
           its same build failure.
  diff     `trtrace diff` of the trace and its NVIDIA round trip (`trtrace convert` trace -> JSON+BIN
           -> trace, which must also replay to the app's engine or failure), and of the trace and the
           NVIDIA capture converted (when the nvidia path ran):
           "equivalent" (exit 0) both times. Where only the NVIDIA capture differs, and our own second
           capture of the app (another heap layout) differs from our first too, the app's calls vary
           from run to run (uninitialised struct tails, orders that follow heap addresses):
           "app-varies", not a defect of a tool. Where NVIDIA's JSON lost values (it writes NaN and
           +-inf as null; the converter warns), the NVIDIA capture cannot match: "nvidia-lossy".
  api      `trtrace.open` + `Trace.verify()` + every weight read (tests/corpus/api_check.py): agrees
           with `trtrace verify`, and every weight reads back its recorded size.
  reduce   only where the app's build failed: `trtrace reduce` (bounded by --reduce-timeout), then
           the player on the result fails with the same error, with no more layers.

An engine that differs from the app's is judged by the builds around it: where the app's second
builds or the player's rebuilds vary, or the derived step itself, run again, gives the app's engine
(RERUNS times at most; export's build.py at each of the player's heap layouts, HEAP_SHIFTS), the
library built one of its several engines ("differs"); a step that never gives the app's engine
while every other build does is a defect ("engine-differs").

Each check returns {"outcome", "reason"}; OK_OUTCOMES[tool] are not defects. "timeout" and "crash"
name a tool step that ran past its time or died by a signal (both defects) except for reduce,
whose "reduce-timeout" is its own outcome: the search was cut off, nothing was wrong.
"""

import json
import pathlib
import re
import shutil
import time

from steps import NOISE, defect, read

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXPORT_MD = ROOT / "docs" / "export.md"
TOOLS = ("export", "strip", "extract", "diff", "api", "reduce")
RERUNS = 3  # a derived step whose engine differs is run again this many times at most (rerun_nondeterminism)
# Bytes build.py keeps before it builds, one size per rerun: the heap layouts the player's own
# rebuilds try (`--heap-shift`, replay/recheck.cpp: small blocks, and large ones that move the brk
# heap), so that export's engine is judged at as many layouts as the player's.
HEAP_SHIFTS = (24, 64 << 10, 40, 16 << 10, 72, 112 << 10, 104, 40 << 10)
_COMMON_OK = ("failure-reproduced", "differs", "app-crash")
OK_OUTCOMES = {
    "export": ("identical", "cannot-express-listed") + _COMMON_OK,
    "strip": ("replays",) + _COMMON_OK,
    "extract": ("identical",) + _COMMON_OK,
    "diff": ("equivalent", "app-varies", "nvidia-lossy") + _COMMON_OK,
    "api": ("agrees",) + _COMMON_OK,
    "reduce": ("reduced", "minimal", "builds", "reduce-timeout") + _COMMON_OK,
}
CLEAN = ("identical", "replays", "equivalent", "agrees", "reduced", "minimal", "builds", "failure-reproduced")
CANNOT = re.compile(r"\(([A-Za-z_]\w*::[~\w]+)\): cannot be written with the tensorrt_rtx Python API")
RECORDED_ERROR = re.compile(r"Error Code \d+: [^|\n]*")
LISTED_ROW = re.compile(r"^\|\s*`([A-Za-z_]\w*::[~\w]+)`\s*\|\s*([^|]*\S[^|]*)\|")


def listed_cannot_express(path=EXPORT_MD):
    """{Interface::method: reason} from docs/export.md's table of calls the Python API lacks (rows
    `| \\`Interface::method\\` | reason |`; a row without a reason does not count)."""
    try:
        text = pathlib.Path(path).read_text()
    except OSError:
        return {}
    return {m.group(1): m.group(2).strip() for m in map(LISTED_ROW.match, text.splitlines()) if m}


def engines(path, n):
    """The engine files a player or build.py writes for n networks (-o X: X, or X0, X1, ...)."""
    path = pathlib.Path(path)
    return [path] if n == 1 else [path.with_name(path.name + str(i)) for i in range(n)]


class ToolChecks:
    """The checks of one network (a run_corpus.Network, whose capture under our shim they use).
    The corpus app builds one network and writes its engine: an engine of a derived run is compared
    with that one (alone or under our shim)."""

    def __init__(self, net):
        self.net, self.work = net, net.work
        self.trace = net.work / "ours.trtrace"
        self._networks = None
        self._failure = None
        self._replay_varies = None

    def built(self):
        return self.net.alone.rc == 0

    def networks(self):
        """How many networks the trace builds (trtrace info --json), or a defect outcome."""
        if self._networks is None:
            info = self.net.tool(self.net.trtrace, "info", "--json", self.trace)
            try:
                nets = json.loads(info.out).get("networks", {}) if info.rc == 0 else None
            except ValueError:
                nets = None
            self._networks = defect("info-fails", info) if nets is None else max(1, len([k for k in nets if k != "-"]))
        return self._networks

    def recorded_failure(self):
        """The library's error for the failed build, as our capture recorded it at the build call
        (`trtrace dump`: "... [FAILED] build failed | <messages>"): the last one that is not noise.
        Else the app's own last error. Another process's output must contain it: the library may
        report other errors around it, in another order."""
        if self._failure is None:
            d = self.net.tool(self.net.trtrace, "dump", self.trace)
            lines = [l for l in d.out.splitlines() if "[FAILED]" in l and " | " in l] if d.rc == 0 else []
            found = [
                m.strip() for l in lines for m in RECORDED_ERROR.findall(l.split(" | ", 1)[1]) if not NOISE.search(m)
            ]
            self._failure = found[-1] if found else self.net.alone.build_error() or ""
        return self._failure

    def references(self):
        """Engines that count as the app's own (alone and under our shim)."""
        return [b for b in (read(self.work / "app.engine"), read(self.work / "ours-app.engine")) if b is not None]

    def judge_engine(self, engine, what, step, rerun=None, reruns=RERUNS):
        """identical / differs (the library's nondeterminism confirmed) / engine-differs. `rerun(i)`,
        when given, makes the same engine again in a new process (output path i: another length,
        so another heap layout) and returns its path: see rerun_nondeterminism."""
        got = read(engine)
        if got is None:
            return {
                "outcome": "no-engine",
                "reason": f"{what} exit {step.rc} but wrote no engine {pathlib.Path(engine).name}",
            }
        if got in self.references():
            return {"outcome": "identical"}
        why = (
            self.net.confirm_nondeterminism()
            or self.replay_nondeterminism()
            or self.rerun_nondeterminism(what, rerun, reruns)
        )
        if why:
            return {"outcome": "differs", "reason": why}
        return {
            "outcome": "engine-differs",
            "reason": f"{what}'s engine != the app's; the app's second builds and the player's rebuilds identical",
        }

    def rerun_nondeterminism(self, what, rerun, times=RERUNS):
        """A reason when the step, run again (`times` at most), gives the app's engine: its first
        engine was then one of the several the library builds for this network, whose other builds
        (the app's second ones, the player's) happened to agree. A step that never gives the app's
        engine is a defect."""
        if rerun is None:
            return None
        for i in range(times):
            again = rerun(i)
            if again is not None and read(again) in self.references():
                return f"{what} run again ({i + 1} of {times}): the app's engine (library nondeterminism)"
        return None

    def replay_nondeterminism(self):
        """A reason when the player's own rebuilds of our capture at other heap layouts
        (`--check=thorough`) give several engines: then a derived run in another process (build.py,
        an extracted trace) may get any of them, and its bytes say nothing about the tool."""
        if self._replay_varies is None:
            play = self.net.player(self.trace, self.work / "thorough.engine", "--check=thorough")
            try:
                nets = json.loads(play.out).get("networks", []) if play.out.strip() else []
            except ValueError:
                nets = []
            varies = any(n.get("vs_capture") == "nondeterministic" for n in nets)
            self._replay_varies = (
                (
                    "the player's rebuilds of the capture at other heap layouts gave several engines "
                    "(library nondeterminism)"
                )
                if varies
                else ""
            )
        return self._replay_varies or None

    def judge_failure(self, step, what):
        """The app's build failed: the step must fail with the library's same error."""
        if step.crashed():
            return defect("crash", step, what)
        if step.rc == 0:
            return {"outcome": "failure-not-reproduced", "reason": f"the app's build failed; {what} exit 0"}
        want, got = self.recorded_failure(), step.build_error()
        if "Traceback" not in step.err and (want in step.err + step.out if want else got is None):
            return {"outcome": "failure-reproduced"}
        return {
            "outcome": "failure-differs",
            "reason": f"capture: {want or 'no build error'}; {what} (exit {step.rc}): {got or step.first_error()}",
        }

    def judge_replay(self, play, engine, what, trace=None):
        """A player run of a derived trace: the app's engine or its failure (player exit 3). `trace`:
        the derived trace, played again should its engine differ (judge_engine's rerun)."""
        if play.crashed():
            return defect("player-crash", play, "player")
        if not self.built() and play.rc == 3:
            return self.judge_failure(play, f"player on {what}")
        if not self.built() and play.rc in (0, 4, 5):
            return {
                "outcome": "failure-not-reproduced",
                "reason": f"the app's build failed; player on {what} exit {play.rc}",
            }
        if play.rc == 6:  # -o given, no build in the derived trace: the tool lost the app's build call
            return defect("no-build-in-trace", play)
        if play.rc == 3:
            return {
                "outcome": "build-fails-on-replay",
                "reason": f"the app built; player on {what}: {play.build_error() or play.first_error()}",
            }
        if play.rc not in (0, 4, 5):
            return defect("player-rejects" if play.rc == 1 else "divergence" if play.rc == 2 else "player-fails", play)
        if not engine:
            return {"outcome": "replays"}

        def rerun(i):
            again = self.work / f"{pathlib.Path(engine).stem}-again{'x' * (i * 37 + 1)}.engine"
            return again if self.net.player(trace, again).rc in (0, 4, 5) else None

        return self.judge_engine(engine, f"player on {what}", play, rerun if trace else None)

    # -- the tools ---------------------------------------------------------------------------------

    def export(self):
        out, engine = self.work / "py", self.work / "py.engine"
        shutil.rmtree(out, ignore_errors=True)
        e = self.net.tool(self.net.trtrace, "export", self.trace, "--python", out)
        if e.rc != 0:
            m = CANNOT.search(e.err)
            if e.rc == 5 and m:  # export: a call the Python API cannot express
                listed = listed_cannot_express()
                if m.group(1) in listed:
                    return {"outcome": "cannot-express-listed", "reason": f"{m.group(1)}: {listed[m.group(1)]}"}
                return {"outcome": "cannot-express", "reason": e.first_error()}
            return defect("export-fails", e, "export")
        run = self.net.tool(self.net.python, out / "build.py", "--out", engine)
        if not self.built():
            return self.judge_failure(run, "build.py")
        if run.rc != 0:
            return defect("build-py-fails", run, "build.py")
        n = self.networks()
        if isinstance(n, dict):
            return n

        def rerun(i):  # at another heap layout: HEAP_SHIFTS[i] bytes kept before build.py runs
            again = self.work / f"py-again{'x' * (i * 37 + 1)}.engine"
            script = str(out / "build.py")
            code = (
                f"import runpy, sys\nkept = bytearray({HEAP_SHIFTS[i]})\n"
                f"sys.argv = [{script!r}, '--out', {str(again)!r}]\nrunpy.run_path({script!r}, run_name='__main__')\n"
            )
            ok = self.net.tool(self.net.python, "-c", code).rc == 0
            return engines(again, n)[0] if ok else None

        return self.judge_engine(engines(engine, n)[0], "build.py", run, rerun, len(HEAP_SHIFTS))

    def strip(self):
        stripped = self.work / "stripped.trtrace"
        s = self.net.tool(self.net.trtrace, "strip", self.trace, "-o", stripped)
        if s.rc != 0:
            return defect("strip-fails", s, "strip")
        play = self.net.player(stripped, self.work / "stripped.engine")
        return self.judge_replay(play, None, "the stripped trace")

    def extract(self):
        n = self.networks()
        if isinstance(n, dict):
            return n
        for i in range(n):
            x = self.work / f"extract{i}.trtrace"
            s = self.net.tool(self.net.trtrace, "extract", self.trace, "--network", i, "-o", x)
            if s.rc != 0:
                return defect("extract-fails", s, f"extract --network {i}")
            play = self.net.player(x, self.work / f"extract{i}.engine")
            res = self.judge_replay(play, self.work / f"extract{i}.engine", f"network {i} extracted", x)
            if res["outcome"] not in ("identical", "failure-reproduced") or n == 1:
                return res
        return {"outcome": "identical"}

    def diff(self):
        rt_json, rt = self.work / "roundtrip.json", self.work / "roundtrip.trtrace"
        for args, name in (
            ((self.trace, rt_json), "roundtrip-to-json-fails"),
            (((rt_json, rt)), "roundtrip-from-json-fails"),
        ):
            c = self.net.tool(self.net.trtrace, "convert", "-q", *args)
            if c.rc != 0:
                return defect(name, c, "convert")
        play = self.net.player(rt, self.work / "roundtrip.engine")  # the round trip replays as the trace does
        replayed = self.judge_replay(play, self.work / "roundtrip.engine", "the JSON round trip", rt)
        if replayed["outcome"] not in ("identical", "failure-reproduced", "differs"):
            return {"outcome": f"roundtrip-{replayed['outcome']}", "reason": replayed.get("reason", "")}
        pairs = [(rt, "roundtrip-differs")]
        if (self.work / "nv.trtrace").exists():
            pairs.append((self.work / "nv.trtrace", "nvidia-capture-differs"))
        found = [f for f in (self.compare(other, name) for other, name in pairs) if f]  # both: the reason tells both
        if not found:
            return {"outcome": "equivalent"}
        if [f["outcome"] for f in found] == ["nvidia-capture-differs"] and self.net.nv_lossy:
            return {"outcome": "nvidia-lossy", "reason": f"{self.net.nv_lossy}; {found[0]['reason']}"}
        if [f["outcome"] for f in found] == ["nvidia-capture-differs"]:
            again = self.capture_again()
            varies = self.compare(again, "app-varies") if again else None
            if varies and varies["outcome"] == "app-varies":
                return {"outcome": "app-varies", "reason": f"{varies['reason']}; {found[0]['reason']}"}
        return {"outcome": found[0]["outcome"], "reason": "; ".join(f["reason"] for f in found)}

    def compare(self, other, name):
        """None when `trtrace diff` finds our trace and `other` equivalent, else an outcome `name`."""
        d = self.net.tool(self.net.trtrace, "diff", self.trace, other)
        if d.rc == 0:
            return None
        if d.rc != 1:
            return defect("diff-fails", d, "diff")
        lines = [l.strip() for l in d.out.splitlines() if l.strip()]
        return {"outcome": name, "reason": f"{name}: " + " / ".join(lines[:2])[:250]}

    def capture_again(self):
        """Our shim's second capture of the app, at another heap layout (work/again.trtrace), or None."""
        again = self.work / "again.trtrace"
        self.net.app(
            self.work / "again.engine",
            {"LD_PRELOAD": str(self.net.shim), "TRT_SHIM_OUTPUT_FILE": str(again)},
            heap_shift=8000,
        )
        return again if again.exists() else None

    def api(self):
        v = self.net.tool(self.net.trtrace, "verify", "-q", self.trace)
        a = self.net.tool(self.net.python, HERE / "api_check.py", self.trace, env=self.net.api_env())
        try:
            report = json.loads(a.out.strip().splitlines()[-1]) if a.rc == 0 else None
        except (ValueError, IndexError):
            report = None
        if report is None:
            return defect("api-fails", a, "trtrace.open")
        if report["ok"] != (v.rc == 0) or report.get("problem"):
            return {
                "outcome": "disagrees",
                "reason": f"trtrace verify exit {v.rc}; trtrace.open: {json.dumps(report)[:250]}",
            }
        return {"outcome": "agrees"}

    def reduce(self):
        if self.built():
            return {"outcome": "builds"}
        small = self.work / "reduced.trtrace"
        limit = self.net.reduce_timeout
        r = self.net.tool(
            self.net.trtrace,
            "reduce",
            self.trace,
            "-o",
            small,
            "--lib",
            self.net.lib,
            "--json",
            "--timeout",
            max(1, limit // 4),
            timeout=limit,
        )
        if r.rc is None:
            return {"outcome": "reduce-timeout", "reason": f"cut off after {limit} s"}
        if r.rc != 0:
            return defect("reduce-fails", r, "reduce")
        try:
            layers = json.loads(r.out)["layers"]
        except (ValueError, KeyError, TypeError):
            return {"outcome": "reduce-fails", "reason": f"no JSON report: {r.out[:200]}"}
        play = self.net.player(small, self.work / "reduced.engine")
        res = self.judge_replay(play, None, "the reduced trace")
        if res["outcome"] != "failure-reproduced":
            return res
        if layers[1] > layers[0]:
            return {"outcome": "more-layers", "reason": f"{layers[0]} -> {layers[1]} layers"}
        return {
            "outcome": "reduced" if layers[1] < layers[0] else "minimal",
            "reason": f"{layers[0]} -> {layers[1]} layers",
        }


def run_tools(net, tools):
    """{tool: outcome} for one network whose app already ran (net.alone) and whose trace our shim
    captured (work/ours.trtrace, made here when the ours path did not run)."""
    checks = ToolChecks(net)
    if net.alone.crashed() or net.alone.rc not in (0, 2):
        return {
            t: {"outcome": "app-crash", "reason": "the app alone failed other than by a build failure"} for t in tools
        }
    if not checks.trace.exists():
        net.capture()
    if not checks.trace.exists():
        return {t: {"outcome": "no-trace", "reason": "our capture wrote no trace (see the ours path)"} for t in tools}
    res = {}
    for t in tools:
        t0 = time.monotonic()
        try:
            res[t] = getattr(checks, t)()
        except Exception as e:  # a runner bug must not hide the other tools
            res[t] = {"outcome": "runner-error", "reason": f"{type(e).__name__}: {e}"}
        res[t]["seconds"] = round(time.monotonic() - t0, 2)
    return res
