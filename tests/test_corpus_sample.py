"""The corpus's stratified sample (tests/corpus/sample.txt: networks from every source folder,
chosen to cover scalars and empty dims, RNN/GRU/LSTM, LayerNorm, convolution nets, failed builds
and our own transformer exports) through both capture paths. Fails on any defect outcome
(run_corpus.OUTCOMES_OK are not defects); `make corpus` runs the whole corpus."""
import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent / "corpus"
sys.path.insert(0, str(HERE))
import exports  # noqa: E402  (tests/corpus/)
import run_corpus as rc  # noqa: E402


def test_sample_replays_on_both_paths(tmp_path):
    data = rc.data_dir()
    if not (data / "node").is_dir():
        pytest.skip(f"{data}: no onnx backend test data (tools/setup.sh could not fetch onnx==1.17.0)")
    nets = rc.select(rc.discover(data, exports.write_all(tmp_path / "own-models")), HERE / "sample.txt")
    paths = ("ours", "nvidia") if rc.nv.available() else ("ours",)
    lines = []
    results = rc.run(nets, tmp_path, os.cpu_count() or 2, paths, progress=lines.append)
    defects = [f"{r['source']}/{r['name']} [{p}] {r[p]['outcome']}: {r[p].get('reason', '')}\n    repro: {rc.repro(r, p, tmp_path)}"
               for r in results for p in paths if rc.is_defect(r, p)]
    assert not defects, f"{len(defects)} defect outcomes in {len(nets)} networks:\n" + "\n".join(defects)
