"""`trtrace capture [-o OUT] [--nvidia-json] [--] CMD ARGS...` (issue 18): runs a real application with the
shim installed beside the program preloaded, returns the application's exit code and prints what the
trace holds; `python -m trtrace capture` is the same command. Runs for each library version (the
1.7 suite runs with its own environment's python and VIRTUAL_ENV)."""

import json
import os
import subprocess
import sys

from conftest import APPS, ASAN_RUNTIME, PLAYER, ROOT, TRTRACE

PYTHON_PKG = ROOT / "python"


def clean_env(**extra):
    """The environment a user has: this Python's environment active, no LD_PRELOAD, no TRT_SHIM_*."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("TRT_SHIM_")}
    env["VIRTUAL_ENV"] = sys.prefix
    env["PATH"] = f"{os.path.dirname(sys.executable)}:{env['PATH']}"
    if ASAN_RUNTIME:  # the commands are Python: no leak report at its exit (conftest.py)
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    env.update(extra)
    return env


def capture(tmp_path, *args, app_args=(), prog=(str(TRTRACE),), env=None):
    cmd = [
        *prog,
        "capture",
        *args,
        "--",
        sys.executable,
        str(APPS / "build_cnn.py"),
        "--out",
        str(tmp_path / "app.engine"),
        *app_args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, env=env or clean_env(), cwd=tmp_path)


def test_capture_writes_a_trace_that_replays_to_the_same_engine(tmp_path):
    p = capture(tmp_path, "-o", "m.trtrace", app_args=("--networks", "2"))
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stderr.splitlines() if l.startswith("trtrace: capture:")]
    assert "libtensorrt_rtx.so.1" in lines[0] and "-> m.trtrace" in lines[0], p.stderr
    assert " 2 networks, 2 builds (2 ok), weights " in lines[-1], p.stderr  # the summary at the end
    info = json.loads(
        subprocess.run(
            [str(TRTRACE), "info", "--json", str(tmp_path / "m.trtrace")], capture_output=True, text=True, check=True
        ).stdout
    )
    assert f"{info['calls']} calls" in lines[-1] and info["builds_ok"] == 2
    r = subprocess.run(
        [str(PLAYER), "-j", "m.trtrace", "-o", "r.engine", "--check"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    assert r.returncode == 0, r.stderr
    for i in range(2):
        assert (tmp_path / f"r.engine{i}").read_bytes() == (tmp_path / f"app.engine{i}").read_bytes()


def test_capture_without_the_separator_takes_the_command_from_its_first_argument(tmp_path):
    # `trtrace capture [options] CMD ARGS`: capture's options come first; from the command on, every
    # argument is the command's, its own options included (--out here is build_cnn.py's).
    cmd = [
        str(TRTRACE),
        "capture",
        "-o",
        "m.trtrace",
        sys.executable,
        str(APPS / "build_cnn.py"),
        "--out",
        str(tmp_path / "app.engine"),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert " 1 networks, 1 builds (1 ok)" in p.stderr.splitlines()[-1], p.stderr
    assert (tmp_path / "m.trtrace").exists() and (tmp_path / "app.engine").exists()


def test_both_tools_say_their_version():
    for tool in (TRTRACE, PLAYER):
        p = subprocess.run([str(tool), "--version"], capture_output=True, text=True)
        assert p.returncode == 0 and p.stderr == "", p.stderr
        name, version, rest = p.stdout.strip().split(" ", 2)
        assert name == tool.name and version.count(".") == 2, p.stdout
        assert "trace format 2." in rest and "tensorrt_rtx 1.6" in rest and "1.7" in rest, p.stdout


def test_capture_returns_the_commands_exit_code(tmp_path):
    p = capture(tmp_path, "-o", "f.trtrace", app_args=("--fail",))  # the app's build fails: it exits 1
    plain = subprocess.run(
        [sys.executable, str(APPS / "build_cnn.py"), "--out", str(tmp_path / "x"), "--fail"],
        capture_output=True,
        text=True,
    )
    assert plain.returncode != 0 and p.returncode == plain.returncode, p.stderr
    assert "1 builds (0 ok)" in p.stderr.splitlines()[-1], p.stderr
    killed = subprocess.run(
        [str(TRTRACE), "capture", "-o", "k.trtrace", "--", "sh", "-c", "kill -TERM $$"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_env(),
    )
    assert killed.returncode == 128 + 15, killed.stderr  # as a shell reports a signal


def test_capture_nvidia_json_also_writes_nvidias_layout(tmp_path):
    p = capture(tmp_path, "-o", "j.trtrace", "--nvidia-json")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "j.trtrace").is_file() and (tmp_path / "j.json").is_file() and (tmp_path / "j.bin").is_file()
    r = subprocess.run(
        [str(PLAYER), "-j", "j.json", "-o", "r.engine"], cwd=tmp_path, capture_output=True, text=True, env=clean_env()
    )
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "r.engine").read_bytes() == (tmp_path / "app.engine").read_bytes()


def test_python_m_trtrace_capture_forwards_to_the_cli(tmp_path):
    env = clean_env(PYTHONPATH=str(PYTHON_PKG), PATH=f"{TRTRACE.parent}:{os.environ['PATH']}")
    p = capture(tmp_path, "-o", "py.trtrace", prog=(sys.executable, "-m", "trtrace"), env=env)
    assert p.returncode == 0, p.stderr
    assert "1 networks, 1 builds (1 ok)" in p.stderr.splitlines()[-1], p.stderr


def test_a_command_that_makes_no_call_is_not_a_capture(tmp_path):
    """Never exit 0 having done nothing: no TensorRT-RTX call, no trace, exit 1 and one line."""
    p = subprocess.run(
        [str(TRTRACE), "capture", "-o", "n.trtrace", "--", "true"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_env(),
    )
    assert p.returncode == 1
    assert (
        p.stderr.splitlines()[-1] == "trtrace: capture: true made no TensorRT-RTX call; no trace written to n.trtrace"
    )
    assert not (tmp_path / "n.trtrace").exists()


def test_the_shim_joins_what_is_preloaded_already(tmp_path):
    """A preload the user has (a sanitizer runtime must stay first) is kept, the shim after it, and
    the TRT_SHIM_OUTPUT_FILE the command sees is -o's."""
    env = clean_env(LD_PRELOAD="libstdc++.so.6")  # under ASan, conftest.py puts its runtime first
    p = subprocess.run(
        [str(TRTRACE), "capture", "-o", "s.trtrace", "--", "sh", "-c", 'echo "$LD_PRELOAD|$TRT_SHIM_OUTPUT_FILE"'],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    shim = TRTRACE.parent.parent / "lib" / "libtensorrt_shim.so"
    preload, out = p.stdout.strip().split("|")
    assert preload.split(":")[-1] == str(shim.resolve()) and "libstdc++.so.6" in preload.split(":")[:-1], p.stdout
    assert not ASAN_RUNTIME or preload.split(":")[0] == ASAN_RUNTIME, p.stdout
    assert out == "s.trtrace", p.stdout + p.stderr
    assert p.returncode == 1  # sh made no TensorRT-RTX call


# An app that builds, says so with its pid on stdout, then waits to be stopped.
WAITING_APP = """
import os, runpy, signal, sys
sys.argv = [sys.argv[1], "--out", sys.argv[2]]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as e:
    assert not e.code, e.code
print(f"built {os.getpid()}", flush=True)
signal.pause()
"""


def test_a_terminating_signal_goes_on_to_the_command(tmp_path):
    """SIGTERM or SIGHUP to `trtrace capture` is forwarded: the app is not left running orphaned, the
    launcher waits for it, prints the summary and exits as a shell reports the signal (128 + N)."""
    import signal

    (tmp_path / "app.py").write_text(WAITING_APP)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        out = tmp_path / f"s{int(sig)}.trtrace"
        p = subprocess.Popen(
            [
                str(TRTRACE),
                "capture",
                "-o",
                str(out),
                "--",
                sys.executable,
                str(tmp_path / "app.py"),
                str(APPS / "build_cnn.py"),
                str(tmp_path / "app.engine"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=clean_env(),
            cwd=tmp_path,
        )
        app = None
        try:
            line = "-"
            while line and not line.startswith("built "):  # the app's own lines come first
                line = p.stdout.readline()
            assert line.startswith("built "), "the app did not build"
            app = int(line.split()[1])
            p.send_signal(sig)
            assert p.wait(timeout=120) == 128 + int(sig)  # not the launcher killed by it (-sig)
            assert not os.path.exists(f"/proc/{app}"), "the app was left running"
            err = p.stderr.read()
            assert err.splitlines()[-1].startswith(f"trtrace: capture: {out}"), err  # the summary
            assert "1 builds (1 ok)" in err.splitlines()[-1], err  # the shim flushed as the signal ended the app
        finally:
            if app and os.path.exists(f"/proc/{app}"):
                os.kill(app, signal.SIGKILL)
            p.kill()
            p.wait()
