"""Every command the README shows runs verbatim: the "Use" block in a fresh shell (issue 14; every
```sh block under "## Use", joined, in `bash -e` with a clean environment, in a folder holding
`build` (this build tree) and `app.py`, a real application: build_cnn.py's network), the
"Debugging a failing build" block line by line with the exit status each line names, and
`make demo` (`make test` is what CI runs)."""

import os
import re
import subprocess

import pytest

from conftest import APPS, ASAN_RUNTIME, BUILD, ROOT

# The README's commands preload the shim into python3, which a sanitizer build's shim cannot enter
# without its runtime first: they are checked in the normal build.
pytestmark = pytest.mark.skipif(bool(ASAN_RUNTIME), reason="README commands run against the normal build")


def use_commands():
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Use\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```sh\n(.*?)^```", section, re.S | re.M)
    assert blocks, "README.md: no ```sh block under ## Use"
    return "\n".join(blocks)


def test_readme_use_block_runs_verbatim(tmp_path):
    (tmp_path / "build").symlink_to(BUILD)
    (tmp_path / "app.py").write_text(
        "import runpy, sys\n"
        f"sys.argv = ['app.py', '--out', 'app.engine']\n"
        f"runpy.run_path({str(APPS / 'build_cnn.py')!r}, run_name='__main__')\n"
    )
    env = {"HOME": str(tmp_path), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    p = subprocess.run(["bash", "-e", "-c", use_commands()], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, f"{p.stdout}\n{p.stderr}"
    assert (tmp_path / "model.trtrace").exists() and (tmp_path / "model.engine").exists()
    assert (tmp_path / "model.engine").read_bytes() == (tmp_path / "app.engine").read_bytes()


def debugging_lines():
    """The commands of the README's "Debugging a failing build" block, one per line, each with the
    exit status its comment names (`# exit N`; 0 when none is named)."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Debugging a failing build\n", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"^```[a-z]*\n(.*?)^```", section, re.S | re.M)[0]
    lines = [l for l in block.splitlines() if l.strip()]
    return [(l, int(m.group(1)) if (m := re.search(r"#\s*exit (\d+)", l)) else 0) for l in lines]


def test_readme_debugging_block_runs_verbatim(tmp_path):
    """Run from a folder that looks like the repository root (its build and tests), in one fresh
    shell: each line must end with the status its comment names."""
    (tmp_path / "build").symlink_to(BUILD)
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    script = ["set -u"]
    for i, (line, code) in enumerate(debugging_lines()):
        script.append(
            f'{line}\nrc=$?; [ $rc -eq {code} ] || {{ echo "line {i + 1}: exit $rc, README says {code}" >&2; exit 99; }}'
        )
    env = {"HOME": str(tmp_path), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    p = subprocess.run(["bash", "-c", "\n".join(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, f"{p.stdout}\n{p.stderr}"


def test_readme_make_demo_runs_verbatim():
    """`make demo`, verbatim, on the build tree under test (BUILD names it; `make test`, the other
    command, is what CI itself runs). The demo must say both engines are byte-identical."""
    env = dict(os.environ, BUILD=str(BUILD))
    p = subprocess.run(["bash", "-c", "make demo"], capture_output=True, text=True, env=env, cwd=ROOT)
    assert p.returncode == 0, f"{p.stdout}\n{p.stderr}"
    assert p.stdout.count("vs replayed engine: byte-identical") == 2, p.stdout
