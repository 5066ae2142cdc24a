"""The pip-installable trtrace (issue 18, "Done when"): `make wheel` builds dist/trtrace-*.whl
(manylinux, audited); README's "Install with pip" block then runs verbatim in a fresh virtual
environment in an empty folder -- pip installs only the wheel and the pinned tensorrt-rtx-cu13 (pip's
cache makes a second run offline) -- `trtrace capture -- python app.py` captures a real application
(tests/apps/pip_app.py: tensorrt_rtx only) and `tensorrt_player --check` rebuilds the same engine.
Once per supported library version (1.6.1 and 1.7.1, the pins of tools/requirements*.txt); the same
environment is also driven without activation (no VIRTUAL_ENV: the tools find the library beside
their own package) and through the Python API."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

from conftest import APPS, ASAN_RUNTIME, ROOT

# The wheel is a normal (uninstrumented) build of its own; the sanitizer run tests build-asan's programs.
pytestmark = pytest.mark.skipif(bool(ASAN_RUNTIME), reason="the wheel is not a sanitizer build")
PINS = {"1.6": ROOT / "tools" / "requirements.txt", "1.7": ROOT / "tools" / "requirements-1.7.txt"}


def readme_blocks():
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Install with pip\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```", section, re.S | re.M)
    assert len(blocks) == 2, "README.md: ## Install with pip holds the build block and the use block"
    return blocks


def pin(version):
    return re.search(r"^tensorrt-rtx-cu13==(\S+)$", PINS[version].read_text(), re.M).group(1)


def user_env(tmp_path):
    """A user's shell: the base Python on PATH, HOME for pip's cache, pip's own settings; nothing of ours."""
    keep = {k: v for k, v in os.environ.items() if k.startswith("PIP_") or k in ("HOME", "LANG", "TMPDIR")}
    base = pathlib.Path(getattr(sys, "_base_executable", sys.executable)).parent
    return dict(keep, PATH=f"{base}:/usr/local/bin:/usr/bin:/bin")


@pytest.fixture(scope="module")
def wheel():
    build, _ = readme_blocks()
    p = subprocess.run(["bash", "-e", "-c", build], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    wheels = sorted((ROOT / "dist").glob("trtrace-*.whl"))
    assert len(wheels) == 1 and "manylinux" in wheels[0].name, wheels
    return wheels[0]


@pytest.mark.parametrize("version", sorted(PINS))
def test_readme_install_block_in_a_fresh_environment(wheel, tmp_path, version):
    _, use = readme_blocks()
    default = pin("1.6")
    assert f"tensorrt-rtx-cu13=={default}" in use
    use = use.replace(f"tensorrt-rtx-cu13=={default}", f"tensorrt-rtx-cu13=={pin(version)}")
    (tmp_path / "dist").symlink_to(wheel.parent)
    (tmp_path / "app.py").write_text((APPS / "pip_app.py").read_text())
    env = user_env(tmp_path)
    p = subprocess.run(["bash", "-e", "-c", use], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"libtensorrt_rtx.so.1 {pin(version)} " in p.stderr, p.stderr  # capture named the library
    assert "identical to capture" in p.stdout, p.stdout
    assert (tmp_path / "m.engine").read_bytes() == (tmp_path / "app.engine").read_bytes()

    # Not activated: the programs of the environment, run by path, find its library beside them.
    venv = tmp_path / "venv" / "bin"
    run = lambda *cmd: subprocess.run([str(c) for c in cmd], cwd=tmp_path, capture_output=True, text=True, env=env)
    c = run(venv / "trtrace", "capture", "-o", "n.trtrace", "--", venv / "python", "app.py", "n_app.engine")
    assert (
        c.returncode == 0
        and f"tensorrt_rtx_libs/libtensorrt_rtx.so.1 {pin(version)} (tensorrt_rtx_libs of {venv / 'python'})"
        in c.stderr
    ), c.stderr  # the command's own library
    r = run(venv / "tensorrt_player", "-j", "n.trtrace", "-o", "n.engine", "--check")
    assert r.returncode == 0 and "identical to capture" in r.stdout, r.stdout + r.stderr
    assert f"{pin(version)} of trtrace's Python environment" in r.stderr, r.stderr  # beside its own package
    # The Python API of the installed wheel, and `python -m trtrace`.
    api = run(
        venv / "python",
        "-c",
        "import trtrace; t = trtrace.open('n.trtrace'); "
        "print(len(t.calls), [b.ok for b in t.builds], t.verify()['ok'])",
    )
    assert api.returncode == 0 and api.stdout.split(" ", 1)[1].strip() == "[True] True", api.stdout + api.stderr
    info = run(venv / "python", "-m", "trtrace", "info", "n.trtrace")
    assert info.returncode == 0 and f"calls:      {api.stdout.split()[0]} " in info.stdout, info.stdout + info.stderr


def test_python_package_is_typed(wheel):
    """The package ships py.typed; its annotations hold under mypy --strict (pinned, .wheelenv), with
    numpy's own types from the Python that runs the tests (the optional dependency it uses)."""
    assert (ROOT / "python" / "trtrace" / "py.typed").exists()
    p = subprocess.run(
        [
            str(ROOT / ".wheelenv" / "bin" / "mypy"),
            "--strict",
            "--no-incremental",
            "--python-executable",
            sys.executable,
            str(ROOT / "python" / "trtrace"),
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stdout + p.stderr
