"""The Python API reads a 1 GB raw trace's weights without copying them (issue 18): a real capture
of bench/models/transformer.py (about 1.1 GB of fp32 weights, blobs stored raw), every weight read
through `Weights.array()`; the process's anonymous memory (RssAnon: what a copy would add; pages of
the trace's mapping are file-backed) grows by less than 5% of the weight bytes."""

import os
import sys

import numpy as np
import pytest

from conftest import ASAN_RUNTIME, ROOT, TRTRACE, capture

sys.path.insert(0, str(ROOT / "python"))
os.environ["PATH"] = f"{TRTRACE.parent}:{os.environ['PATH']}"
import trtrace  # noqa: E402

MODEL = ROOT / "bench" / "models" / "transformer.py"


def rss_anon():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no RssAnon in /proc/self/status")


@pytest.mark.skipif(bool(ASAN_RUNTIME), reason="a memory measurement of the normal build (ASan adds shadow memory)")
def test_weights_of_a_1gb_raw_trace_are_views(tmp_path):
    trace = tmp_path / "big.trtrace"
    # 22 blocks of hidden 1024, ffn 4096: 22 * 12,584,960 fp32 elements = 1.03 GiB of distinct weights.
    capture(
        os.path.relpath(MODEL, ROOT / "tests" / "apps"),
        trace,
        "--blocks",
        22,
        "--hidden",
        1024,
        "--no-build",
        env={"TRTRACE_ZSTD_LEVEL": "0"},
    )
    with trtrace.open(trace) as t:
        weights = [w for w in t.weights if w.storage == "blob"]
        total = sum(w.nbytes for w in weights)
        assert total >= 1 << 30
        before = rss_anon()
        arrays = [w.array() for w in weights]  # all alive at once
        checksum = sum(float(np.add.reduce(a, dtype=np.float64)) for a in arrays)  # every byte read
        growth = rss_anon() - before
        assert np.isfinite(checksum)
        assert growth < 0.05 * total, f"RssAnon grew by {growth} B for {total} B of weights"
