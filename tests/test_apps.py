"""The real TensorRT-RTX library builds engines on this GPU-less machine (CPU-only AOT)."""

from conftest import run_app


def test_cnn_app_builds_engine(tmp):
    proc = run_app("build_cnn.py", "--out", tmp / "cnn.engine")
    assert (tmp / "cnn.engine").stat().st_size > 10_000, proc.stdout
    print(proc.stdout)


def test_cnn_app_is_deterministic(tmp):
    # docs/trt-rtx-notes.md: two builds of the same network give byte-identical engines.
    run_app("build_cnn.py", "--out", tmp / "a.engine")
    run_app("build_cnn.py", "--out", tmp / "b.engine")
    assert (tmp / "a.engine").read_bytes() == (tmp / "b.engine").read_bytes()


def test_two_networks_build_two_engines(tmp):
    run_app("build_cnn.py", "--out", tmp / "m.engine", "--networks", 2)
    e0, e1 = (tmp / "m.engine0").read_bytes(), (tmp / "m.engine1").read_bytes()
    assert e0 and e1 and e0 != e1


def test_failing_build_fails(tmp):
    proc = run_app("build_cnn.py", "--out", tmp / "f.engine", "--fail", check=False)
    assert proc.returncode == 1
    assert "broadcast" in proc.stdout + proc.stderr  # the Python logger prints to stdout
    assert not (tmp / "f.engine").exists()


def test_onnx_app_builds_engine(tmp):
    proc = run_app("build_onnx.py", "--out", tmp / "onnx.engine", "--model", tmp / "m.onnx")
    assert (tmp / "onnx.engine").stat().st_size > 10_000
    assert (tmp / "m.onnx").stat().st_size > 0
    print(proc.stdout)
