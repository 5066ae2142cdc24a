"""trtrace export on hostile traces (issue 23, class 1): build.py is code a person runs, so every
string from a trace -- layer and tensor names, strings read back, the trace's own path, bytes that
are not UTF-8 -- reaches it only as an escaped literal (or an escaped whole-line comment). The
exported script parses, has the same statement structure as the script of the same app with
benign names, rebuilds the same engine (the names reach the library byte for byte), and runs
nothing of the trace. What the bindings cannot express (a string that is not UTF-8, a call on a
null object) stops the export with one line, exit 5, and nothing written.
"""

import ast
import os
import shutil
import subprocess

from conftest import BIN, capture, trtrace
from test_export import export_and_rebuild


def craft(*args):
    subprocess.run([str(BIN / "trace_craft"), *args], check=True)


def named_trace(tmp, kind):
    t = tmp / f"{kind}.trtrace"
    capture("named_app.py", t, tmp / f"{kind}.engine", kind)
    return t


def script_of(out):
    data = (out / "build.py").read_bytes()
    assert all(b == 0x0A or 0x20 <= b < 0x7F for b in data), "build.py is not printable ASCII"
    return data.decode("ascii")


def shape(text):
    """The script's syntax tree with every string constant blanked: the generator's statements."""
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    return ast.dump(tree)


def test_hostile_names_stay_literals(tmp, monkeypatch):
    """Names that are Python code, quotes, backslashes, line ends and non-ASCII text: the script
    has the benign script's structure, runs nothing of them, and rebuilds the same engine."""
    benign = tmp / "benign"
    benign.mkdir()
    trtrace("export", named_trace(benign, "benign"), "--python", benign / "py")
    hostile = tmp / "hostile"
    hostile.mkdir()
    monkeypatch.chdir(hostile)  # where the injected os.system would leave its file
    out = export_and_rebuild(named_trace(hostile, "hostile"), hostile, 1)
    text = script_of(out)
    assert shape(text) == shape(script_of(benign / "py"))
    read_back = [line for line in text.splitlines() if "getName()" in line]
    assert len(read_back) == 3 and all(line.startswith("# ") for line in read_back), read_back  # escaped comments
    assert not (hostile / "PWNED").exists()


def test_trace_path_stays_a_literal(tmp):
    """The trace's own file name (in the docstring): quotes, a newline, a backslash, bytes that are
    not UTF-8."""
    src = tmp / "benign.trtrace"
    capture("named_app.py", src, tmp / "benign.engine", "benign")
    trtrace("export", src, "--python", tmp / "plain")
    odd = tmp / os.fsdecode(b'a"""\nraise SystemExit(3)\n#\\ \xff\xe9.trtrace')
    shutil.copy(src, odd)
    trtrace("export", odd, "--python", tmp / "odd")
    assert shape(script_of(tmp / "odd")) == shape(script_of(tmp / "plain"))


def test_read_back_bytes_are_escaped(tmp):
    """A string read back (a comment in build.py) holding a newline, code and invalid UTF-8."""
    craft("names", str(tmp / "plain.trtrace"), "x", "x")
    trtrace("export", tmp / "plain.trtrace", "--python", tmp / "plain")
    t = tmp / "r.trtrace"
    craft("names", str(t), "x", os.fsdecode(b'\xff\nimport os; os.system(\'touch PWNED\')\n"""'))
    trtrace("export", t, "--python", tmp / "py")
    text = script_of(tmp / "py")
    assert shape(text) == shape(script_of(tmp / "plain"))
    comments = [line for line in text.splitlines() if "getName" in line]
    assert len(comments) == 1 and comments[0].startswith("# ") and "\\xff" in comments[0], comments


def refused(tmp, t, why):
    p = trtrace("export", t, "--python", tmp / "py", check=False)
    err = p.stderr.splitlines()
    assert p.returncode == 5 and p.stdout == "" and len(err) == 1, (p.returncode, p.stdout, p.stderr)
    assert err[0].startswith(f"trtrace: {t}: call #") and why in err[0], err[0]
    assert not (tmp / "py").exists()


def test_name_that_is_not_utf8_is_refused(tmp):
    """The bindings take str: no Python script can pass these bytes on as a name."""
    t = tmp / "n.trtrace"
    craft("names", str(t), os.fsdecode(b"in\xffput"), "x")
    refused(
        tmp,
        t,
        "(NetworkDefinition::addInput): cannot be written with the tensorrt_rtx Python API "
        "(argument name: a string that is not UTF-8",
    )


def test_call_on_a_null_object_is_refused(tmp):
    t = tmp / "z.trtrace"
    craft("null-receiver", str(t))
    refused(tmp, t, "(Layer::setName): cannot be written with the tensorrt_rtx Python API (a call on a null object)")
