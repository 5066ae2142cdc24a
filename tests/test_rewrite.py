"""`trtrace rewrite --compress` never makes a trace larger (issue 24): each blob and each call-log
segment keeps IN's encoded form where re-encoding is not smaller, and where the layout (raw blobs'
4 KiB alignment, segments that sat in it) would still make the whole larger, OUT is a copy of IN.
Real captures: incompressible weights, and weights captured at zstd level 1 that level 3 (the
rewrite's default) does not shrink."""

import pytest

from conftest import ROOT, capture, play, trtrace

APP = ROOT / "tests" / "apps" / "build_mixed_weights.py"


def captured(tmp, name, *args, **env):
    trace = tmp / f"{name}.trtrace"
    capture(APP, trace, "--out", tmp / f"{name}.engine", *args, env=env)
    return trace


def rewritten(trace, out, *args):
    trtrace("rewrite", trace, out, "--compress", *args)
    trtrace("verify", out)
    return out


def replays_to_its_engine(tmp, trace, engine):
    play(trace, tmp / "replay.engine", "-q", "--check")
    assert (tmp / "replay.engine").read_bytes() == engine.read_bytes()


@pytest.mark.parametrize(
    "args",
    [[], ["--level", "1"], ["--level", "2"], ["--log-level", "1"], ["--no-byte-group"]],
    ids=["default", "level1", "level2", "log-level1", "no-byte-group"],
)
def test_rewrite_compress_of_a_level_1_capture_is_not_larger(tmp, args):
    trace = captured(tmp, "mixed", TRTRACE_ZSTD_LEVEL="1")
    out = rewritten(trace, tmp / "out.trtrace", *args)
    assert out.stat().st_size <= trace.stat().st_size
    replays_to_its_engine(tmp, out, tmp / "mixed.engine")


@pytest.mark.parametrize("flush", ["0", "1"], ids=["one-segment", "segment-per-call"])
def test_rewrite_compress_of_incompressible_weights_is_not_larger(tmp, flush):
    # Flushed after every call, the capture's small segments sit in the raw blobs' alignment padding.
    trace = captured(tmp, "random", "--incompressible", TRT_SHIM_FLUSH_AFTER_EVERY_CALL=flush)
    out = rewritten(trace, tmp / "out.trtrace")
    assert out.stat().st_size <= trace.stat().st_size
    replays_to_its_engine(tmp, out, tmp / "random.engine")
    again = rewritten(out, tmp / "again.trtrace")  # and a rewrite of the rewrite
    assert again.stat().st_size <= out.stat().st_size


def test_rewrite_compress_still_compresses_what_pays(tmp):
    raw = tmp / "raw.trtrace"
    trtrace("rewrite", captured(tmp, "mixed"), raw, "--raw")
    out = rewritten(raw, tmp / "out.trtrace", "--level", "19")
    assert out.stat().st_size < raw.stat().st_size * 0.9
    replays_to_its_engine(tmp, out, tmp / "mixed.engine")
