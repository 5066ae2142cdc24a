"""The player's decode cache (docs/design.md, "Decode cache"; issue 16): compressed weights are
decoded once into a file that is mapped read-only, reused by later replays after a hash check,
rebuilt when damaged, bounded in size; every way gives the capture's engine."""

import json
import os
import subprocess

from conftest import PLAYER, ROOT, capture, trt_lib, trtrace

MODEL = ROOT / "bench" / "models" / "transformer.py"  # seeded N(0, 0.02) weights: they compress


def replay(trace, engine, *args, env=None):
    """tensorrt_player --json --check; returns (the JSON summary, stderr)."""
    cmd = [str(PLAYER), "-j", str(trace), "-o", str(engine), "--lib", str(trt_lib()), "--json", "-q", "--check", *args]
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=e)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert [n["vs_capture"] for n in out["networks"]] == ["identical"], out
    return out, p.stderr


def compressed_capture(tmp, name="c.trtrace", seed=1):
    """A capture of one block of H=256 (3 MiB of fp32 weights in 6 compressed blobs), engine built."""
    trace = tmp / name
    capture(MODEL, trace, "--blocks", 1, "--hidden", 256, "--seed", seed, "--out", tmp / "app.engine")
    info = json.loads(trtrace("info", "--json", trace).stdout)
    assert info["weights"]["compressed_blobs"] > 0, info["weights"]
    return trace


def cache_files(folder):
    return sorted(p for p in folder.iterdir() if p.suffix == ".tdc") if folder.exists() else []


def test_cache_is_built_then_reused_with_the_same_engine(tmp):
    trace, folder = compressed_capture(tmp), tmp / "cache"
    first, _ = replay(trace, tmp / "a.engine", "--decode-cache", folder)
    c = first["decode_cache"]
    assert c["how"] == "built" and c["blobs"] > 0 and c["failed"] == 0, c
    assert cache_files(folder) == [folder / os.path.basename(c["path"])]
    second, _ = replay(trace, tmp / "b.engine", "--decode-cache", folder)
    assert second["decode_cache"]["how"] == "reused" and second["decode_cache"]["path"] == c["path"]
    assert (tmp / "a.engine").read_bytes() == (tmp / "b.engine").read_bytes() == (tmp / "app.engine").read_bytes()


def test_environment_names_the_folder(tmp):
    trace, folder = compressed_capture(tmp), tmp / "env-cache"
    out, _ = replay(trace, tmp / "a.engine", env={"TRTRACE_DECODE_CACHE": str(folder)})
    assert out["decode_cache"]["how"] == "built" and len(cache_files(folder)) == 1


def test_damaged_cache_file_is_detected_and_rebuilt(tmp):
    trace, folder = compressed_capture(tmp), tmp / "cache"
    path = replay(trace, tmp / "a.engine", "--decode-cache", folder)[0]["decode_cache"]["path"]
    with open(path, "r+b") as f:  # one bit of the first blob's decoded bytes
        f.seek(4096)
        b = f.read(1)
        f.seek(4096)
        f.write(bytes([b[0] ^ 1]))
    out, err = replay(trace, tmp / "b.engine", "--decode-cache", folder)
    assert out["decode_cache"]["how"] == "rebuilt", out
    assert "at offset 4096 does not match its hash; rebuilt" in err
    assert replay(trace, tmp / "c.engine", "--decode-cache", folder)[0]["decode_cache"]["how"] == "reused"


def test_cut_or_foreign_cache_file_is_rebuilt(tmp):
    trace, folder = compressed_capture(tmp), tmp / "cache"
    path = replay(trace, tmp / "a.engine", "--decode-cache", folder)[0]["decode_cache"]["path"]
    os.truncate(path, os.path.getsize(path) - 1)
    out, err = replay(trace, tmp / "b.engine", "--decode-cache", folder)
    assert out["decode_cache"]["how"] == "rebuilt" and "header or length does not match" in err
    with open(path, "r+b") as f:
        f.write(b"NOTACACHE")
    assert replay(trace, tmp / "c.engine", "--decode-cache", folder)[0]["decode_cache"]["how"] == "rebuilt"


def test_trust_weights_takes_a_reused_file_unchecked(tmp):
    """--trust-weights skips the hash check of a reused file (as of raw blobs): documented, and the
    reason a damaged cache must be rebuilt by a replay without it."""
    trace, folder = compressed_capture(tmp), tmp / "cache"
    replay(trace, tmp / "a.engine", "--decode-cache", folder)
    out, _ = replay(trace, tmp / "b.engine", "--decode-cache", folder, "--trust-weights")
    assert out["decode_cache"]["how"] == "reused"


def test_folder_is_bounded_least_recently_used_first(tmp):
    folder = tmp / "cache"
    one, two = compressed_capture(tmp, "one.trtrace"), compressed_capture(tmp, "two.trtrace", seed=2)
    a = replay(one, tmp / "a.engine", "--decode-cache", folder)[0]["decode_cache"]
    assert a["how"] == "built" and 3 << 20 < os.path.getsize(a["path"]) < 4 << 20
    # Room for one file of 3 MiB, not for two.
    b = replay(two, tmp / "b.engine", "--decode-cache", folder, env={"TRTRACE_DECODE_CACHE_MB": "5"})[0]
    assert b["decode_cache"]["how"] == "built"
    assert cache_files(folder) == [folder / os.path.basename(b["decode_cache"]["path"])]  # a evicted


def test_weights_over_the_bound_go_to_a_temporary_file(tmp):
    trace, folder = compressed_capture(tmp), tmp / "cache"
    out, err = replay(
        trace,
        tmp / "a.engine",
        "--decode-cache",
        folder,
        env={"TRTRACE_DECODE_CACHE_MB": "1", "TRTRACE_DECODE_CACHE": "unused"},
    )
    assert out["decode_cache"]["how"] == "temp" and "TRTRACE_DECODE_CACHE_MB" in err and cache_files(folder) == []


def test_temp_and_off_give_the_same_engine(tmp):
    trace = compressed_capture(tmp)
    assert replay(trace, tmp / "a.engine", "--decode-cache", "temp")[0]["decode_cache"]["how"] == "temp"
    assert replay(trace, tmp / "b.engine", "--decode-cache", "off")[0]["decode_cache"]["how"] == "off"
    assert (tmp / "a.engine").read_bytes() == (tmp / "b.engine").read_bytes()


def test_unusable_folder_falls_back_to_a_temporary_file(tmp):
    trace = compressed_capture(tmp)
    (tmp / "file").write_text("not a folder")
    out, err = replay(trace, tmp / "a.engine", "--decode-cache", tmp / "file" / "cache")
    assert out["decode_cache"]["how"] == "temp" and "not a folder" in err and "into a temporary file" in err


def test_raw_trace_needs_no_cache(tmp):
    trace, folder = compressed_capture(tmp), tmp / "cache"
    trtrace("rewrite", trace, tmp / "raw.trtrace", "--raw")
    out, _ = replay(tmp / "raw.trtrace", tmp / "a.engine", "--decode-cache", folder)
    assert out["decode_cache"]["how"] == "none" and cache_files(folder) == []
