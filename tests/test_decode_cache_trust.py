"""The decode cache trusts no one (issue 23; docs/design.md, "Decode cache", trust model): a cache
folder is used only when it is private (owned by the player's user, mode 0700), a cache file only
when it is a regular file of that user that no one else may write. Anything else is refused in one
stderr line, or is simply not used; the replay goes on (a temporary file, or memory) and gives the
capture's engine. The player never hangs on a FIFO, never dies of SIGBUS or SIGXFSZ, and never
builds from bytes another user changed.

The suite runs as root, so "another user" is uid 65534 (nobody): files and folders are chowned to
it, and its changes are made by a process running as it."""

import itertools
import json
import os
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import types

import pytest

from conftest import PLAYER, ROOT, capture, trt_lib

MODEL = ROOT / "bench" / "models" / "transformer.py"  # seeded N(0, 0.02) weights: they compress
NOBODY = 65534
HANG = 120  # seconds: a replay here takes well under one; past this it hangs (a FIFO opened blocking)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make files of another user")


def play(trace, *args, env=None, limit_file_bytes=None):
    """tensorrt_player --json -q --check (no engine file: nothing else is written), in `env` (the
    whole environment; default this one); returns
    (exit status, the JSON summary or None, stderr lines)."""
    cmd = [str(PLAYER), "-j", str(trace), "--lib", str(trt_lib()), "--json", "-q", "--check", *map(str, args)]
    pre = None
    if limit_file_bytes is not None:

        def pre():
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_bytes, limit_file_bytes))

    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=HANG, preexec_fn=pre)
    lines = p.stdout.strip().splitlines()
    return p.returncode, json.loads(lines[-1]) if p.returncode == 0 and lines else None, p.stderr.splitlines()


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """A compressed capture, the engine it gives, and a good cache file of it (made by the player)."""
    d = tmp_path_factory.mktemp("cache-trust")
    trace = d / "c.trtrace"
    capture(MODEL, trace, "--blocks", 1, "--hidden", 256, "--seed", 1, "--out", d / "app.engine")
    rc, out, err = play(trace, "--decode-cache", d / "made")
    assert rc == 0 and out["decode_cache"]["how"] == "built", (rc, err)
    good = d / "made" / os.path.basename(out["decode_cache"]["path"])
    return types.SimpleNamespace(trace=trace, xxh3=out["networks"][0]["xxh3"], good=good, name=good.name, dir=d)


def assert_right_engine(rc, out, err):
    assert rc == 0, f"exit {rc} ({'signal ' + str(-rc) if rc < 0 else 'status'}): {err}"
    assert [n["vs_capture"] for n in out["networks"]] == ["identical"], out


def rewritten(good):
    """The good cache file's bytes with its first blob's first bytes changed (the header still matches)."""
    b = bytearray(good.read_bytes())
    for i in range(4096, 4096 + 64):
        b[i] ^= 0x5A
    return bytes(b)


def private_folder(path):
    path.mkdir(mode=0o700)
    os.chmod(path, 0o700)
    return path


def test_default_folder_is_created_private_and_refused_when_open(tmp, base):
    env = dict(os.environ, HOME=str(tmp / "home"))
    env.pop("TRTRACE_DECODE_CACHE", None)
    env.pop("XDG_CACHE_HOME", None)
    rc, out, err = play(base.trace, env=env)
    folder = tmp / "home" / ".cache" / "trtrace"
    assert_right_engine(rc, out, err)
    assert out["decode_cache"]["how"] == "built" and stat.S_IMODE(folder.stat().st_mode) == 0o700
    os.chmod(folder, 0o755)
    rc, out, err = play(base.trace, env=env)
    assert_right_engine(rc, out, err)
    assert out["decode_cache"]["how"] == "temp" and len(err) == 1, err
    assert err[0].startswith(
        f"tensorrt_player: decode cache: {folder}: mode 0755 lets other users in: "
        "a cache folder must be private (yours, mode 0700); decoding into a temporary file"
    ), err


def who(cases):
    return [f"{'nobody' if owner else 'root'}-{mode:04o}" for owner, mode in cases]


OPEN_FOLDERS = [(0, 0o777), (0, 0o1777), (0, 0o770), (0, 0o755), (NOBODY, 0o700), (NOBODY, 0o777)]
OPEN_FILES = [(0, 0o666), (0, 0o644), (0, 0o620), (NOBODY, 0o600)]


@pytest.mark.parametrize("owner,mode", OPEN_FOLDERS, ids=who(OPEN_FOLDERS))
def test_folder_others_can_enter_is_not_used(tmp, base, owner, mode):
    """A good cache file planted in a folder that is not private is never reused: another user could
    have written it, or could change it during the replay."""
    folder = tmp / "shared"
    folder.mkdir()
    shutil.copy(base.good, folder / base.name)
    os.chown(folder, owner, -1)
    os.chmod(folder, mode)
    rc, out, err = play(base.trace, "--decode-cache", folder, "--trust-weights")
    assert_right_engine(rc, out, err)
    assert out["decode_cache"]["how"] == "temp" and len(err) == 1, (out["decode_cache"], err)
    why = f"owned by uid {owner}, not by you (uid 0)" if owner else f"mode {mode:04o} lets other users in"
    assert err[0] == (
        f"tensorrt_player: decode cache: {folder}: {why}: a cache folder must be private (yours, "
        "mode 0700); decoding into a temporary file"
    ), err
    assert sorted(os.listdir(folder)) == [base.name]  # nothing written there


@pytest.mark.parametrize("owner,mode", OPEN_FILES, ids=who(OPEN_FILES))
def test_cache_file_others_could_write_is_rebuilt(tmp, base, owner, mode):
    folder = private_folder(tmp / "cache")
    planted = folder / base.name
    planted.write_bytes(rewritten(base.good))  # what another user could have made of it
    os.chown(planted, owner, -1)
    os.chmod(planted, mode)
    rc, out, err = play(base.trace, "--decode-cache", folder, "--trust-weights")
    assert_right_engine(rc, out, err)
    assert out["decode_cache"]["how"] == "rebuilt" and len(err) == 1, (out["decode_cache"], err)
    why = f"owned by uid {owner}, not by you (uid 0)" if owner else f"mode {mode:04o} lets other users in"
    assert err[0] == f"tensorrt_player: decode cache: {planted}: {why}: not trusted; rebuilt", err
    st = planted.stat()
    assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o600 and planted.read_bytes() == base.good.read_bytes()


def test_fifo_at_the_cache_name_is_not_waited_on(tmp, base):
    folder = private_folder(tmp / "cache")
    os.mkfifo(folder / base.name)
    rc, out, err = play(base.trace, "--decode-cache", folder)  # raises TimeoutExpired where it blocks
    assert_right_engine(rc, out, err)
    assert out["decode_cache"]["how"] == "rebuilt" and err == [
        f"tensorrt_player: decode cache: {folder / base.name}: not a regular file (a FIFO): not used; rebuilt"
    ], err
    assert stat.S_ISREG((folder / base.name).lstat().st_mode)


def test_python_replay_does_not_wait_on_a_fifo(tmp, base):
    """trtrace.replay runs the player: a FIFO at the cache's name does not hang it either."""
    folder = private_folder(tmp / "cache")
    os.mkfifo(folder / base.name)
    code = (
        "import json, sys, trtrace; r = trtrace.replay(sys.argv[1], check=True, lib=sys.argv[2], "
        "extra=('--decode-cache', sys.argv[3])); print(json.dumps(r['decode_cache']))"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), PATH=f"{PLAYER.parent}:{os.environ['PATH']}")
    p = subprocess.run(
        [sys.executable, "-c", code, str(base.trace), str(trt_lib()), str(folder)],
        capture_output=True,
        text=True,
        env=env,
        timeout=HANG,
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["how"] == "rebuilt"


def test_file_size_limit_falls_back_to_memory_and_leaves_no_file(tmp, base):
    """`ulimit -f` under the cache's size: no write is tried (it would raise SIGXFSZ, which kills)."""
    folder = private_folder(tmp / "cache")
    rc, out, err = play(base.trace, "--decode-cache", folder, limit_file_bytes=1 << 20)
    assert_right_engine(rc, out, err)
    assert out["decode_cache"]["how"] == "off" and len(err) == 1, (out["decode_cache"], err)
    assert err[0] == (
        "tensorrt_player: decode cache: the decoded weights (3.01 MiB) exceed the file size limit of "
        "1.00 MiB (ulimit -f); decoding into memory"
    ), err
    assert os.listdir(folder) == []


# ---- the property: any owner, mode, file type or change of the folder and of the file at the cache's
# name either is refused in one line or is not used; the engine is the capture's; the player lives.

FOLDERS = {  # name -> (owner, mode, reached through a symbolic link); private ones are used
    "private": (0, 0o700, False),
    "group_read": (0, 0o750, False),
    "world_read": (0, 0o755, False),
    "group_write": (0, 0o770, False),
    "world_write": (0, 0o777, False),
    "sticky": (0, 0o1777, False),
    "nobody_private": (NOBODY, 0o700, False),
    "nobody_open": (NOBODY, 0o777, False),
    "link_to_private": (0, 0o700, True),
    "link_to_open": (0, 0o777, True),
}
FILES = [
    "none",
    "good",
    "good_0644",
    "good_0666",
    "good_nobody",
    "rewritten",
    "rewritten_0666",
    "cut",
    "fifo",
    "link_to_good",
    "folder",
    "socket",
]
# What another user (nobody) can write, given an open descriptor: what is planted there.
CHANGEABLE = {"good_0644", "good_0666", "good_nobody", "rewritten_0666"}


def change_as_another_user(fd):
    """A process of another user (a fork that becomes nobody) that changes the file open as `fd`
    under the replay, over and over (cut to nothing, to half, restored, rewritten) until killed."""
    pid = os.fork()
    if pid:
        return pid
    try:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        data = os.pread(fd, max(os.fstat(fd).st_size, 8192), 0)
        bad = bytes(b ^ 0x5A for b in data[4096:8192])
        while True:
            os.ftruncate(fd, 0)
            os.ftruncate(fd, len(data) // 2)
            os.pwrite(fd, data, 0)
            os.pwrite(fd, bad, 4096)
    finally:
        os._exit(0)


def plant(base, folder, kind):
    """Makes `kind` at the cache's name in `folder`; returns the path planted (None for "none")."""
    p = folder / base.name
    if kind == "none":
        return None
    if kind.startswith("good") or kind.startswith("rewritten") or kind == "cut":
        data = base.good.read_bytes()
        p.write_bytes(
            rewritten(base.good) if kind.startswith("rewritten") else data[: len(data) // 2] if kind == "cut" else data
        )
        os.chmod(p, 0o666 if kind.endswith("0666") else 0o644 if kind.endswith("0644") else 0o600)
        if kind.endswith("nobody"):
            os.chown(p, NOBODY, -1)
    elif kind == "fifo":
        os.mkfifo(p)
    elif kind == "link_to_good":
        shutil.copy(base.good, folder.parent / "elsewhere.tdc")
        os.symlink(folder.parent / "elsewhere.tdc", p)
    elif kind == "folder":
        p.mkdir()
    elif kind == "socket":
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(p))
        s.close()
    return p


def make_folder(tmp, kind):
    owner, mode, linked = FOLDERS[kind]
    real = tmp / "real"
    real.mkdir()
    os.chmod(real, mode)
    os.chown(real, owner, -1)
    if not linked:
        return real, real
    os.symlink(real, tmp / "cache")
    return tmp / "cache", real


CASES = list(itertools.product(FOLDERS, FILES))


@pytest.mark.parametrize("folder_kind,file_kind", CASES, ids=[f"{a}-{b}" for a, b in CASES])
def test_cache_folder_property(tmp, base, folder_kind, file_kind):
    i = CASES.index((folder_kind, file_kind))
    trusted_folder = folder_kind in ("private", "link_to_private")
    trust = bool(i % 2)  # --trust-weights in every other case: it must not widen what is trusted
    if trusted_folder and file_kind == "rewritten" and trust:
        # The user's own file, changed by the user, taken unchecked because the user said so: the
        # documented meaning of --trust-weights (docs/design.md), not a case of this property.
        trust = False
    folder, real = make_folder(tmp, folder_kind)
    planted = plant(base, real, file_kind)
    before = os.lstat(planted) if planted else None
    attacker = None
    if planted and (file_kind in CHANGEABLE or (not trusted_folder and stat.S_ISREG(before.st_mode))):
        fd = os.open(planted, os.O_RDWR)  # as another user who opened it while it let them
        attacker = change_as_another_user(fd)
        os.close(fd)
    try:
        rc, out, err = play(base.trace, "--decode-cache", folder, *(["--trust-weights"] if trust else []))
    finally:
        if attacker:
            os.kill(attacker, signal.SIGKILL)
            os.waitpid(attacker, 0)
    assert_right_engine(rc, out, err)
    assert out["networks"][0]["xxh3"] == base.xxh3
    how = out["decode_cache"]["how"]
    if not trusted_folder:
        assert how == "temp" and len(err) == 1 and "a cache folder must be private" in err[0], (how, err)
    elif file_kind in ("none", "good"):
        assert how == ("reused" if file_kind == "good" else "built") and err == [], (how, err)
    else:
        assert (
            how in ("rebuilt", "temp")
            and len(err) == 1
            and str(real / base.name) in err[0].replace(str(folder), str(real))
        ), (how, err)
    if trusted_folder and how in ("built", "rebuilt", "reused"):
        st = os.lstat(real / base.name)
        assert stat.S_ISREG(st.st_mode) and st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o600
    if planted and how != "rebuilt" and how != "built":  # what was refused is left as it was found
        assert os.lstat(planted).st_ino == before.st_ino
    assert not [n for n in os.listdir(real) if ".tmp." in n]
