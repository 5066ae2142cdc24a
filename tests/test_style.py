"""The tree stays formatted as it was formatted once (issue 26): C++ by .clang-format, Python by
ruff (pyproject.toml [tool.ruff]; lint and format). A change that is not formatted fails here with
the command that formats it."""

import re
import shutil
import subprocess

import pytest

from conftest import ROOT

RUFF = ROOT / ".deps" / "venv" / "bin" / "ruff"  # pinned in tools/requirements.txt
CLANG_FORMAT = shutil.which("clang-format")  # Debian's, installed by tools/setup.sh


def tracked(*patterns):
    out = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return [f for f in out.stdout.splitlines() if f]


@pytest.mark.parametrize("args", [["check", "-q"], ["format", "--check", "-q"]], ids=["lint", "format"])
def test_python_is_ruff_clean(args):
    ruff = RUFF if RUFF.exists() else shutil.which("ruff")
    assert ruff, "ruff is missing: bash tools/setup.sh installs it"
    # The tracked files only: a test running beside this one may leave files of its own in the tree.
    p = subprocess.run([str(ruff), *args, *tracked("*.py")], cwd=ROOT, capture_output=True, text=True)
    fix = "check --fix" if args[0] == "check" else "format"
    assert p.returncode == 0, f"{p.stdout}{p.stderr}\nfix: .deps/venv/bin/ruff {fix} ."


def test_cpp_is_clang_formatted():
    assert CLANG_FORMAT, "clang-format is missing: bash tools/setup.sh installs it"
    sources = tracked("*.cpp", "*.h", "*.cc")
    p = subprocess.run([CLANG_FORMAT, "--dry-run", "-Werror", *sources], cwd=ROOT, capture_output=True, text=True)
    bad = sorted({line.split(":")[0] for line in p.stderr.splitlines() if ": error:" in line})
    assert p.returncode == 0 and not bad, f"not formatted: {bad}\nfix: clang-format -i {' '.join(bad)}"


def test_every_pytest_file_runs_in_ctest():
    """A test file no CMakeLists registers never runs in `make test` (nor in CI)."""
    registered = set()
    for cmake in (ROOT / "tests").rglob("CMakeLists.txt"):
        for m in re.finditer(r"trtrace_add_pytest(?:_17)?\(\s*\S+\s+(\S+?)\s*\)", cmake.read_text()):
            registered.add((cmake.parent / m.group(1)).resolve())
    files = {p.resolve() for p in (ROOT / "tests").rglob("test_*.py")}
    missing = sorted(str(p.relative_to(ROOT)) for p in files - registered)
    assert not missing, f"never run by ctest: {missing} (tests/CMakeLists.txt: trtrace_add_pytest)"
