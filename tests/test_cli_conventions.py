"""The command-line conventions of both tools (issue 24, item 6), over every subcommand `trtrace
--help` lists (and the ones those list), never a hand-kept list of them:

- `-o/--output` names what a subcommand writes; an older spelling (a positional OUT, export's
  `--python DIR`) stays as its alias, and the two naming different outputs is a usage error;
- `--json` is machine-readable output wherever a subcommand reports (capture's NVIDIA JSON+BIN
  is `--nvidia-json`);
- `--version` on both tools; `--help` exits 0 with the help on stdout;
- a command line that does not parse: one line with the tool's prefix, exit 64 (docs/errors.md);
- the player given `-o` and a capture without a build says it wrote nothing, exit 6.
"""

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import BIN, PLAYER, TRTRACE, cpp_app, drop_in_dir, trt_lib

# What each subcommand does, which its --help must show: "output" (it writes a file or folder:
# -o/--output) and "json" (it reports: --json). A subcommand --help lists that is not here fails
# test_the_table_names_every_subcommand: a new one is classified when it is added.
KINDS = {
    "info": {"json"},
    "dump": {"json"},
    "verify": {"json"},
    "diff": {"json"},
    "cache": {"json"},
    "rewrite": {"output", "json"},
    "convert": {"output", "json"},
    "strip": {"output", "json"},
    "extract": {"output", "json"},
    "reduce": {"output", "json"},
    "export": {"output", "json"},
    "bench": {"output", "json"},
    "capture": {"output"},  # runs a command; its summary is the capture's own line
    "push": set(),  # prints the manifest digest, nothing else
    "pull": {"output"},
}


def env():
    # bench's --help is the Python side's: this interpreter (its environment has the packages).
    return dict(os.environ, TRTRACE_PYTHON=sys.executable, VIRTUAL_ENV=sys.prefix)


def run(*args, **kw):
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, env=env(), **kw)


def listed(help_text):
    """The subcommands a CLI11 help lists (its "Subcommands:" section)."""
    names, inside = [], False
    for line in help_text.splitlines():
        if line.startswith("Subcommands:"):
            inside = True
        elif inside and re.match(r"  \S", line):
            names.append(line.split()[0])
        elif inside and line and not line.startswith(" "):
            inside = False
    return names


def subcommands():
    """(path, help) of every subcommand, nested ones too (`cache list`)."""
    out, todo = [], [[n] for n in listed(run(TRTRACE, "--help").stdout)]
    while todo:
        path = todo.pop(0)
        h = run(TRTRACE, *path, "--help")
        out.append((path, h))
        todo += [path + [n] for n in listed(h.stdout)]
    return out


SUBS = subcommands()
TOP = [p[0] for p, _ in SUBS if len(p) == 1]


def test_the_table_names_every_subcommand():
    assert len(TOP) >= 10 and set(TOP) == set(KINDS), set(TOP) ^ set(KINDS)


@pytest.mark.parametrize("path,h", SUBS, ids=[" ".join(p) for p, _ in SUBS])
def test_help_documents_the_conventions(path, h):
    assert h.returncode == 0 and h.stderr == "" and "--help" in h.stdout, (path, h.returncode, h.stderr)
    kinds = KINDS[path[0]]
    parent = run(TRTRACE, path[0], "--help").stdout  # a nested subcommand takes its parent's options
    text = h.stdout + (parent if len(path) > 1 else "")
    if "output" in kinds:
        assert re.search(r"-o( \S+)?,( ?)--output", text), (path, text)
    else:
        assert "--output" not in text, path
    assert ("--json" in text) == ("json" in kinds), (path, text)


def test_top_level_help_and_version():
    for tool in (TRTRACE, PLAYER):
        h = run(tool, "--help")
        assert h.returncode == 0 and "--version" in h.stdout and h.stderr == "", h.stderr
        v = run(tool, "--version")
        assert v.returncode == 0 and v.stdout.startswith(f"{tool.name} ") and v.stderr == "", v.stderr
    h = run(PLAYER, "--help").stdout
    assert re.search(r"-o,--output", h) and "--json " in h


@pytest.mark.parametrize("path", [p for p, _ in SUBS] + [["tensorrt_player"]], ids=lambda p: " ".join(p))
def test_a_command_line_that_does_not_parse_is_one_prefixed_line_and_64(tmp_path, path):
    tool = [PLAYER] if path == ["tensorrt_player"] else [TRTRACE, *path]
    prefix = "tensorrt_player: " if path == ["tensorrt_player"] else f"trtrace: {path[0]}: "
    p = run(*tool, "--no-such-option", "x", cwd=tmp_path)
    err = p.stderr.splitlines()
    assert p.returncode == 64 and len(err) == 1 and err[0].startswith(prefix), (path, p.returncode, p.stderr)
    assert err[0].endswith(" --help)") and p.stdout == "" and not any(tmp_path.iterdir()), p.stderr


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    """A capture of tests/apps/cpp_app (one network, one build)."""
    d = tmp_path_factory.mktemp("cli")
    _, e = drop_in_dir(d)
    proc = cpp_app(d / "app.engine", env=dict(e, TRT_SHIM_OUTPUT_FILE=str(d / "good.trtrace")))
    assert proc.returncode == 0, proc.stderr
    return d / "good.trtrace"


# The subcommands whose output was a positional OUT or another option: (arguments before the
# output, the older form's arguments given the output, the output's name).
ALIASED = {
    "rewrite": (["--raw"], lambda o: [o], "r.trtrace"),
    "convert": ([], lambda o: [o], "c.json"),
    "export": ([], lambda o: ["--python", o], "py"),
}


@pytest.mark.parametrize("sub", sorted(ALIASED))
def test_output_is_o_and_the_older_form_is_its_alias(good, tmp_path, sub):
    before, older, name = ALIASED[sub]
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    p = run(TRTRACE, sub, good, *before, "-o", a / name)
    assert p.returncode == 0 and (a / name).exists(), p.stderr
    p = run(TRTRACE, sub, good, *before, *older(b / name))
    assert p.returncode == 0 and (b / name).exists(), p.stderr
    assert sorted(x.name for x in a.iterdir()) == sorted(x.name for x in b.iterdir())
    c = tmp_path / "c"
    c.mkdir()
    p = run(TRTRACE, sub, good, *before, "-o", c / name, *older(c / name))  # the same path twice: that path
    assert p.returncode == 0 and (c / name).exists(), p.stderr
    d = tmp_path / "d"
    d.mkdir()
    for args in (["-o", d / name, *older(d / "other")], []):  # two different outputs; none
        p = run(TRTRACE, sub, good, *before, *args)
        err = p.stderr.splitlines()
        assert p.returncode == 64 and len(err) == 1 and err[0].startswith(f"trtrace: {sub}: "), (args, p.stderr)
        assert not any(d.iterdir()), "written although the command line did not parse"


def test_json_reports_parse(good, tmp_path):
    """--json: one JSON document on stdout (dump: one per call), the same facts as the text."""
    v = json.loads(run(TRTRACE, "verify", good, "--json").stdout)
    assert v["status"] == "ok" and v["calls"] > 0 and v["issues"] == []
    c = run(TRTRACE, "convert", good, "-o", tmp_path / "c.json", "--json")
    j = json.loads(c.stdout)
    assert c.returncode == 0 and j["direction"] == "trace_to_json" and j["networks"] == 1, c.stderr
    r = run(TRTRACE, "rewrite", good, "-o", tmp_path / "r.trtrace", "--compress", "--json")
    j = json.loads(r.stdout)
    assert r.returncode == 0 and j["output"] == str(tmp_path / "r.trtrace") and j["calls"] == v["calls"], r.stderr
    d = run(TRTRACE, "dump", good, "--json")
    calls = [json.loads(line) for line in d.stdout.splitlines()]
    assert d.returncode == 0 and len(calls) == v["calls"], d.stderr
    assert [c["seq"] for c in calls] == sorted(c["seq"] for c in calls) and all(c["status"] == "Ok" for c in calls)
    builds = [c for c in calls if c["build"] is not None]
    assert len(builds) == 1 and builds[0]["build"]["ok"] and builds[0]["network"] == 0, builds
    assert any(c["api"] == "NetworkDefinition::addInput" and c["args"][0]["name"] == "name" for c in calls)


def test_capture_json_is_not_the_nvidia_layout(tmp_path):
    """capture's NVIDIA JSON+BIN is --nvidia-json: --json (a report, in every other tool) is refused in
    one line that names it, before the command runs."""
    p = run(TRTRACE, "capture", "-o", tmp_path / "c.trtrace", "--json", "--", "touch", tmp_path / "ran", cwd=tmp_path)
    err = p.stderr.splitlines()
    assert p.returncode == 64 and len(err) == 1 and "--nvidia-json" in err[0], p.stderr
    assert not any(tmp_path.iterdir())


def test_player_says_when_o_gets_nothing(tmp_path):
    """-o given and no build in the capture: one line, exit 6, no engine; without -o the same replay
    asked for nothing and exits 0; --json still reports (no network)."""
    trace = tmp_path / "nobuild.trtrace"
    subprocess.run([str(BIN / "trace_craft"), "names", str(trace), "in", "in"], check=True)
    out = tmp_path / "o.engine"
    p = run(PLAYER, "-j", trace, "-o", out, "--lib", trt_lib(), "-q", "--json")
    err = p.stderr.splitlines()
    assert p.returncode == 6 and len(err) == 1, p.stderr
    assert err[0] == f"tensorrt_player: {trace}: nothing written to {out}: no build among the 4 calls replayed"
    assert json.loads(p.stdout)["networks"] == [] and not out.exists()
    p = run(PLAYER, "-j", trace, "--lib", trt_lib(), "-q")
    assert p.returncode == 0 and p.stderr == "", p.stderr


def test_dump_json_keeps_one_call_a_line_whatever_the_names(tmp_path):
    """Names from a trace are hostile text: a newline, ESC or a byte that is not UTF-8 in a tensor's
    name stays inside its JSON string (escaped), so each call is still one line of valid JSON."""
    trace = tmp_path / "names.trtrace"
    subprocess.run([str(BIN / "trace_craft"), "names", str(trace), os.fsdecode(b"a\nb\x1b[31m\xffc"), "x"], check=True)
    d = subprocess.run([str(TRTRACE), "dump", str(trace), "--json"], capture_output=True)
    lines = d.stdout.splitlines()
    text = subprocess.run([str(TRTRACE), "dump", str(trace)], capture_output=True).stdout.splitlines()
    assert d.returncode == 0 and len(lines) == len(text) == 4, d.stderr
    calls = [json.loads(line.decode("utf-8")) for line in lines]
    name = calls[2]["args"][0]["value"]  # addInput(name, ...): as the text line shows it, quoted
    assert "\n" in name and "\x1b" in name and calls[2]["network"] == 0
