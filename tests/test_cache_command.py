"""`trtrace cache` (issue 24): path, size, list and clear manage the player's decode cache
(docs/design.md, "Decode cache"). `path` is the folder the player uses; the others see exactly the
cache's own files (its names, regular files of this user), trust the folder as the player does, and
`clear` removes nothing else: no link followed, no other file touched. The player says once, in one
line, when the folder holds more than 1 GiB."""

import json
import os
import subprocess

import pytest

from conftest import PLAYER, TRTRACE, trt_lib
from test_decode_cache import compressed_capture

KEY = "0123456789abcdef0123456789abcdef"  # a name of the cache's pattern: 32 hex digits + .tdc


def cache(*args, env=None, check=True):
    """trtrace cache ARGS in `env` (this environment plus it); returns the CompletedProcess."""
    e = dict(os.environ, **(env or {}))
    p = subprocess.run([str(TRTRACE), "cache", *map(str, args)], capture_output=True, text=True, env=e)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def replay(trace, env):
    """The player's replay of `trace` (no engine written), in this environment plus `env`: stderr lines."""
    p = subprocess.run(
        [str(PLAYER), "-j", str(trace), "--lib", str(trt_lib()), "-q"],
        capture_output=True,
        text=True,
        env=dict(os.environ, **env),
    )
    assert p.returncode == 0, p.stderr
    return p.stderr.splitlines()


def listing(folder):
    return json.loads(cache("list", "--json", "--decode-cache", folder).stdout)


@pytest.fixture
def replayed(tmp):
    """A compressed capture replayed with its cache in a fresh folder (named by the environment)."""
    trace, folder = compressed_capture(tmp), tmp / "cache"
    env = {"TRTRACE_DECODE_CACHE": str(folder)}
    replay(trace, env)
    return trace, folder, env


def test_path_is_the_folder_the_player_uses(tmp):
    env = {"HOME": str(tmp / "home"), "XDG_CACHE_HOME": "", "TRTRACE_DECODE_CACHE": ""}
    assert cache("path", env=env).stdout == f"{tmp / 'home' / '.cache' / 'trtrace'}\n"
    env["XDG_CACHE_HOME"] = str(tmp / "xdg")
    assert cache("path", env=env).stdout == f"{tmp / 'xdg' / 'trtrace'}\n"
    env["TRTRACE_DECODE_CACHE"] = str(tmp / "mine")
    assert cache("path", env=env).stdout == f"{tmp / 'mine'}\n"
    assert cache("path", "--decode-cache", tmp / "opt", env=env).stdout == f"{tmp / 'opt'}\n"
    # The player, in the same environment, builds its cache there.
    trace = compressed_capture(tmp)
    replay(trace, env)
    assert [p.suffix for p in (tmp / "mine").iterdir()] == [".tdc"]
    # No folder: one line, exit 1.
    p = cache("path", env={"TRTRACE_DECODE_CACHE": "temp"}, check=False)
    assert p.returncode == 1 and p.stderr.splitlines() == [
        "trtrace: cache: no cache folder: the decode cache is a nameless temporary file per replay"
    ], p.stderr


def test_size_and_list_show_the_replays_cache_file(replayed):
    trace, folder, env = replayed
    (made,) = [p for p in folder.iterdir()]
    got = listing(folder)
    assert got["folder"] == str(folder)
    assert [f["name"] for f in got["files"]] == [made.name]
    f = got["files"][0]
    assert f["bytes"] == made.stat().st_blocks * 512 == got["bytes"] > 0
    assert f["last_use"] == int(made.stat().st_mtime)
    assert f["trace"] in (str(trace.resolve()), None)  # recorded where the file system keeps user xattrs
    size = json.loads(cache("size", "--json", env=env).stdout)
    assert size["bytes"] == f["bytes"] and len(size["files"]) == 1
    text = cache("size", env=env).stdout
    assert text.startswith(f"{folder}: ") and text.endswith(" in 1 files\n"), text
    line = cache("list", env=env).stdout.splitlines()
    assert len(line) == 1 and made.name in line[0], line


def test_list_is_least_recently_used_first(replayed):
    trace, folder, env = replayed
    (made,) = folder.iterdir()
    older = folder / (KEY + ".tdc")
    older.write_bytes(b"x" * 5000)
    os.chmod(older, 0o600)
    os.utime(older, (1_000_000_000, 1_000_000_000))
    assert [f["name"] for f in listing(folder)["files"]] == [older.name, made.name]
    os.utime(made, (900_000_000, 900_000_000))
    assert [f["name"] for f in listing(folder)["files"]] == [made.name, older.name]


def test_clear_removes_only_the_caches_own_files(replayed, tmp):
    trace, folder, env = replayed
    (made,) = folder.iterdir()
    outside = tmp / "precious.tdc"
    outside.write_bytes(b"keep me")
    keep = {
        "link": folder / ("f" * 32 + ".tdc"),  # a link of the cache's name to a file outside
        "other_name": folder / "notes.txt",  # not a name the cache gives
        "folder": folder / ("d" * 32 + ".tdc"),  # the cache's name, a folder
        "new_temp": folder / ("c" * 32 + ".tdc.tmp.AbC123"),  # being written by a running replay
    }
    keep["link"].symlink_to(outside)
    keep["other_name"].write_text("mine")
    keep["folder"].mkdir()
    keep["new_temp"].write_bytes(b"in progress")
    if os.geteuid() == 0:  # the cache's name, another user's file (root can make one)
        keep["foreign"] = folder / ("e" * 32 + ".tdc")
        keep["foreign"].write_bytes(b"theirs")
        os.chown(keep["foreign"], 65534, 65534)
    assert [f["name"] for f in listing(folder)["files"]] == [made.name]
    out = cache("clear", env=env).stdout
    assert out.startswith(f"{folder}: removed 1 files ("), out
    assert not made.exists()
    assert outside.read_bytes() == b"keep me"
    assert all(os.path.lexists(p) for p in keep.values()), sorted(os.listdir(folder))
    assert cache("clear", env=env).stdout == f"{folder}: no cache files to remove\n"
    assert listing(folder)["files"] == []
    # The player rebuilds a cleared cache.
    replay(trace, env)
    assert len(listing(folder)["files"]) == 1


@pytest.mark.parametrize("mode", [0o777, 0o755, 0o1777])
@pytest.mark.parametrize("action", ["size", "list", "clear"])
def test_untrusted_folder_is_refused_in_the_players_words(tmp, mode, action):
    folder = tmp / "open"
    folder.mkdir()
    os.chmod(folder, mode)
    planted = folder / (KEY + ".tdc")
    planted.write_bytes(b"x")
    os.chmod(planted, 0o600)
    p = cache(action, "--decode-cache", folder, check=False)
    want = f"trtrace: decode cache: {folder}: mode {mode:04o} lets other users in: a cache folder must be private (yours, mode 0700)"
    assert p.returncode == 1 and p.stderr.splitlines() == [want] and p.stdout == "", p
    assert planted.exists()
    # The player refuses it with the same words (then decodes into a temporary file).
    line = [ln for ln in replay(compressed_capture(tmp), {"TRTRACE_DECODE_CACHE": str(folder)}) if "decode cache" in ln]
    assert line == [f"tensorrt_player: {want.split(': ', 1)[1]}; decoding into a temporary file"], line


def test_missing_folder_holds_nothing_and_is_not_made(tmp):
    folder = tmp / "never"
    assert cache("size", "--decode-cache", folder).stdout == f"{folder}: 0 B in 0 files\n"
    assert cache("list", "--decode-cache", folder).stdout == f"{folder}: no cache files\n"
    assert cache("clear", "--decode-cache", folder).stdout == f"{folder}: no cache files to remove\n"
    assert not folder.exists()


def test_player_says_once_when_the_cache_exceeds_1_gib(replayed):
    trace, folder, env = replayed
    assert not [ln for ln in replay(trace, env) if "GiB" in ln]  # a few MiB: nothing said
    # A file of the cache's name taking 1.1 GiB of disk (allocated, never written: fast). The bound
    # counts disk blocks, as `trtrace cache size` does: a sparse file would take none. It is the
    # least recently used, so a replay under the default bound (20 GiB) keeps it.
    big = folder / (KEY + ".tdc")
    fd = os.open(big, os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o600)
    try:
        os.posix_fallocate(fd, 0, 1100 << 20)
    finally:
        os.close(fd)
    os.utime(big, (1_000_000_000, 1_000_000_000))
    total = listing(folder)["bytes"]
    assert total > 1 << 30
    lines = [ln for ln in replay(trace, env) if "decode cache" in ln]
    assert len(lines) == 1, lines
    assert (
        lines[0].startswith(f"tensorrt_player: decode cache: {folder} holds ")
        and " in 2 files (over 1.00 GiB): "
        "`trtrace cache clear` empties it; TRTRACE_DECODE_CACHE_MB bounds it (now 20480)"
        in lines[0]
    ), lines
    assert big.exists()
    assert cache("clear", env=env).stdout.startswith(f"{folder}: removed 2 files (")
    assert not [ln for ln in replay(trace, env) if "decode cache" in ln]
