"""Safety rules (issue #9, deliverable 6), checked on the real tools:
1. Names captured from the application (tensor, layer, network names) never become file paths:
   names that are absolute and relative paths create no file in capture, replay or conversion.
2. Outputs are written atomically: an existing output is replaced by rename (a hard link to the old
   file keeps the old bytes), and a failed run leaves an existing output untouched.
3. The player never loads a library named inside a capture: neither the header's library name nor
   a recorded setInternalLibraryPath; only --lib (or TRT_SHIM_NVINFER_LIB_NAME) is loaded.
"""

import os
import subprocess
import sys

from conftest import BIN, BUILD, PLAYER, SHIM, TRTRACE, cpp_app, drop_in_dir, play, trt_lib, trtrace

MARKER_LIB = BUILD / "lib" / "libtrtrace_marker.so"

NAMING_APP = r"""
import sys, numpy as np, tensorrt_rtx as trt
names = sys.argv[1:]
logger = trt.Logger(trt.Logger.WARNING)
builder = trt.Builder(logger)
net = builder.create_network()
net.name = names[0]
x = net.add_input(names[1], trt.float32, (1, 4))
c = net.add_constant((1, 4), trt.Weights(np.arange(4, dtype=np.float32)))
c.name = names[2]
add = net.add_elementwise(x, c.get_output(0), trt.ElementWiseOperation.SUM)
add.name = names[3]
y = add.get_output(0)
y.name = names[4]
net.mark_output(y)
engine = builder.build_serialized_network(net, builder.create_builder_config())
sys.exit(0 if engine else 1)
"""


def test_captured_names_are_never_file_paths(tmp):
    work = tmp / "work"
    work.mkdir()
    names = [
        str(tmp / "evil_network"),
        str(tmp / "evil_input"),
        "evil_relative",
        "../evil_up",
        str(tmp / "evil_dir" / "evil_output"),
    ]
    env = dict(
        os.environ,
        LD_PRELOAD=str(SHIM),
        TRT_SHIM_OUTPUT_FILE=str(work / "n.trtrace"),
        TRT_SHIM_OUTPUT_JSON_FILE=str(work / "n.json"),
    )
    proc = subprocess.run([sys.executable, "-c", NAMING_APP, *names], env=env, cwd=work, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    dump = trtrace("dump", work / "n.trtrace").stdout
    for n in names:
        assert f'"{n}"' in dump  # recorded as names ...
    play(work / "n.trtrace", work / "r.engine")  # ... replayed ...
    subprocess.run(
        [str(PLAYER), "-j", str(work / "n.json"), "-o", str(work / "j.engine"), "--lib", str(trt_lib())],
        check=True,
        capture_output=True,
        cwd=work,
    )
    trtrace("convert", work / "n.trtrace", work / "c.json")  # ... converted both ways
    trtrace("convert", work / "c.json", work / "c.trtrace")
    # ... and never opened as files, absolute or relative to the working directory.
    expected = {"n.trtrace", "n.json", "n.bin", "r.engine", "j.engine", "c.json", "c.bin", "c.trtrace"}
    assert {p.name for p in work.iterdir()} == expected
    assert sorted(p.name for p in tmp.iterdir()) == ["work"]


def test_player_replaces_an_engine_by_rename_and_keeps_it_on_failure(tmp):
    _, env = drop_in_dir(tmp)
    assert cpp_app(tmp / "app.engine", env=dict(env, TRT_SHIM_OUTPUT_FILE=str(tmp / "t.trtrace"))).returncode == 0
    out = tmp / "out.engine"
    out.write_bytes(b"old engine")
    os.link(out, tmp / "old.link")
    play(tmp / "t.trtrace", out)
    assert out.read_bytes() == (tmp / "app.engine").read_bytes()
    assert (tmp / "old.link").read_bytes() == b"old engine"  # a new file renamed over, not rewritten
    assert os.stat(out).st_ino != os.stat(tmp / "old.link").st_ino
    # A replay that fails (divergence) leaves the existing engine as it was, and no temporary file.
    subprocess.run([str(BIN / "trace_craft"), "unknown-api", str(tmp / "bad.trtrace")], check=True)
    before = out.read_bytes()
    proc = play(tmp / "bad.trtrace", out, check=False)
    assert proc.returncode == 2
    assert out.read_bytes() == before
    assert not [p for p in tmp.iterdir() if ".tmp." in p.name]


def test_convert_replaces_by_rename_and_keeps_outputs_on_failure(tmp):
    _, env = drop_in_dir(tmp)
    assert cpp_app(tmp / "app.engine", env=dict(env, TRT_SHIM_OUTPUT_FILE=str(tmp / "t.trtrace"))).returncode == 0
    (tmp / "x.json").write_text("old json")
    os.link(tmp / "x.json", tmp / "old.link")
    trtrace("convert", tmp / "t.trtrace", tmp / "x.json")
    assert (tmp / "old.link").read_text() == "old json" and (tmp / "x.json").read_text() != "old json"
    # A trace that cannot be converted (damaged call log): x.json and x.bin stay as they were.
    data = bytearray((tmp / "t.trtrace").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp / "bad.trtrace").write_bytes(bytes(data))
    json_before, bin_before = (tmp / "x.json").read_bytes(), (tmp / "x.bin").read_bytes()
    assert trtrace("convert", tmp / "bad.trtrace", tmp / "x.json", check=False).returncode != 0
    assert (tmp / "x.json").read_bytes() == json_before and (tmp / "x.bin").read_bytes() == bin_before
    assert not [p for p in tmp.iterdir() if ".tmp." in p.name]


def marker_env(tmp):
    return dict(os.environ, TRTRACE_MARKER=str(tmp / "LOADED"))


def test_player_never_loads_a_library_named_in_the_capture(tmp):
    assert MARKER_LIB.exists()
    env = marker_env(tmp)
    env.pop("TRT_SHIM_NVINFER_LIB_NAME", None)
    # The header names the marker library as the captured library.
    subprocess.run([str(BIN / "trace_craft"), "library-name", str(tmp / "named.trtrace"), str(MARKER_LIB)], check=True)
    proc = subprocess.run(
        [str(PLAYER), "-j", str(tmp / "named.trtrace"), "-o", str(tmp / "e"), "--lib", str(trt_lib())],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 6, proc.stderr  # replayed; the crafted capture holds no build: nothing written
    assert not (tmp / "LOADED").exists()
    # A recorded setInternalLibraryPath naming the marker's folder: not replayed, one line, exit 2.
    subprocess.run(
        [str(BIN / "trace_craft"), "set-library-path", str(tmp / "path.trtrace"), str(MARKER_LIB.parent)], check=True
    )
    proc = subprocess.run(
        [str(PLAYER), "-j", str(tmp / "path.trtrace"), "-o", str(tmp / "e"), "--lib", str(trt_lib())],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "setInternalLibraryPath names a path of the capturing machine; not replayed" in proc.stderr
    assert not (tmp / "LOADED").exists()
    # Control: the marker does show a load when the user names the library explicitly.
    proc = subprocess.run(
        [str(PLAYER), "-j", str(tmp / "named.trtrace"), "-o", str(tmp / "e"), "--lib", str(MARKER_LIB)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "libtrtrace_marker.so: no createInferBuilder_INTERNAL" in proc.stderr
    assert (tmp / "LOADED").exists()


def planted(victim, names, cmd, env):
    """Runs `cmd` from a shell that first plants a symlink to `victim` at each of `names`, where
    "{pid}" is the tool's pid (the shell execs it): the temporary names a tool could be guessed to
    use (the old ones were `<out>.tmp.<pid>` and `$TMPDIR/tensorrt_player.<pid>.trtrace[.tmp.<pid>]`)."""
    script = "".join(f'ln -s "$1" "{n}"; '.replace("{pid}", "$$") for n in map(str, names)) + 'shift; exec "$@"'
    return subprocess.run(
        ["sh", "-c", script, "sh", str(victim), *map(str, cmd)], env=env, capture_output=True, text=True
    )


def test_temporary_files_are_unguessable_and_follow_no_symlink(tmp):
    """Another user's symlink at a predictable temporary name must not redirect a write: every
    temporary is created O_EXCL|O_NOFOLLOW under a random name, and the player converts JSON input
    into a file with no name at all (nothing in $TMPDIR)."""
    _, env = drop_in_dir(tmp)
    assert cpp_app(tmp / "app.engine", env=dict(env, TRT_SHIM_OUTPUT_FILE=str(tmp / "t.trtrace"))).returncode == 0
    trtrace("convert", tmp / "t.trtrace", tmp / "t.json")
    victim, tmpdir = tmp / "victim", tmp / "tmpdir"
    victim.write_bytes(b"precious")
    tmpdir.mkdir()
    lib = str(trt_lib())
    runs = [
        (
            [PLAYER, "-j", tmp / "t.json", "-o", tmp / "e.engine", "--lib", lib],
            [
                tmpdir / "tensorrt_player.{pid}.trtrace",
                tmpdir / "tensorrt_player.{pid}.trtrace.tmp.{pid}",
                tmp / "e.engine.tmp.{pid}",
            ],
            tmp / "e.engine",
        ),
        (
            [TRTRACE, "convert", tmp / "t.trtrace", tmp / "c.json"],
            [tmp / "c.json.tmp.{pid}", tmp / "c.bin.tmp.{pid}"],
            tmp / "c.json",
        ),
        ([TRTRACE, "convert", tmp / "t.json", tmp / "c.trtrace"], [tmp / "c.trtrace.tmp.{pid}"], tmp / "c.trtrace"),
        (
            [TRTRACE, "rewrite", tmp / "t.trtrace", tmp / "r.trtrace", "--raw"],
            [tmp / "r.trtrace.tmp.{pid}"],
            tmp / "r.trtrace",
        ),
    ]
    for cmd, names, out in runs:
        proc = planted(victim, names, cmd, dict(os.environ, TMPDIR=str(tmpdir)))
        assert proc.returncode == 0, proc.stderr
        assert victim.read_bytes() == b"precious", f"{cmd[:2]} wrote through a planted symlink"
        assert out.is_file() and not out.is_symlink()
        links = [p for p in list(tmp.iterdir()) + list(tmpdir.iterdir()) if p.is_symlink()]
        assert len(links) == len(names)  # left as they were, and nothing else left over
        for p in links:
            p.unlink()
    assert list(tmpdir.iterdir()) == []
    assert (tmp / "e.engine").read_bytes() == (tmp / "app.engine").read_bytes()
    assert not [p for p in tmp.iterdir() if ".tmp." in p.name]


def test_a_failed_json_export_is_said_once_and_not_announced(tmp):
    """TRT_SHIM_OUTPUT_JSON_FILE in a folder that does not exist, rewritten after every call: one
    line says it cannot be written (not one per call), the trace and the app's build go on, and the
    closing summary does not name the JSON as written."""
    _, env = drop_in_dir(tmp)
    json_out = tmp / "nodir" / "x.json"
    proc = cpp_app(
        tmp / "app.engine",
        env=dict(
            env,
            TRT_SHIM_OUTPUT_FILE=str(tmp / "t.trtrace"),
            TRT_SHIM_OUTPUT_JSON_FILE=str(json_out),
            TRT_SHIM_FLUSH_AFTER_EVERY_CALL="1",
        ),
    )
    assert proc.returncode == 0 and (tmp / "app.engine").exists(), proc.stderr
    lines = [line for line in proc.stderr.splitlines() if str(json_out) in line]
    assert len(lines) == 1, proc.stderr
    assert "cannot create" in lines[0] and "not writing the JSON+BIN export" in lines[0]
    summary = [line for line in proc.stderr.splitlines() if line.startswith("trtrace: captured")]
    assert len(summary) == 1 and "x.json" not in summary[0], proc.stderr
    trtrace("verify", tmp / "t.trtrace")


def test_no_tool_writes_over_its_input_under_another_name(tmp):
    """The same file by device and inode, not by name: a hard link to the input, and the <engine>N
    name of a several-network replay, are refused before any work and leave the input as it was."""
    _, env = drop_in_dir(tmp)
    assert (
        cpp_app(tmp / "app.engine", "--networks", 2, env=dict(env, TRT_SHIM_OUTPUT_FILE=str(tmp / "out1"))).returncode
        == 0
    )
    data = (tmp / "out1").read_bytes()
    os.link(tmp / "out1", tmp / "alias.json")
    for cmd in (
        [TRTRACE, "convert", tmp / "out1", tmp / "alias.json"],
        [TRTRACE, "rewrite", tmp / "out1", tmp / "alias.json", "--raw"],
        [PLAYER, "-j", tmp / "out1", "-o", tmp / "out", "--lib", trt_lib()],
    ):  # network 1 -> out1
        proc = subprocess.run(list(map(str, cmd)), capture_output=True, text=True)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
        assert "is the input" in proc.stderr and "network" not in proc.stdout
        assert (tmp / "out1").read_bytes() == data
    assert not [p for p in tmp.iterdir() if ".tmp." in p.name or p.name == "out0"]
