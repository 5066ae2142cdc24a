"""The README's "Use" block runs verbatim in a fresh shell (issue 14): every ```sh block under the
"## Use" heading, joined, in `bash -e` with a clean environment, in a folder holding `build` (this
build tree) and `app.py` (a real application: build_cnn.py's network)."""
import os
import re
import subprocess

from conftest import APPS, BUILD, ROOT


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
        f"runpy.run_path({str(APPS / 'build_cnn.py')!r}, run_name='__main__')\n")
    env = {"HOME": str(tmp_path), "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
    p = subprocess.run(["bash", "-e", "-c", use_commands()], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, f"{p.stdout}\n{p.stderr}"
    assert (tmp_path / "model.trtrace").exists() and (tmp_path / "model.engine").exists()
    assert (tmp_path / "model.engine").read_bytes() == (tmp_path / "app.engine").read_bytes()
