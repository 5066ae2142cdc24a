"""Each fact in one place (issue 26): a scan of the tree for the rules that were written out more than
once, so that a second copy cannot come back; and the enum copies that must stay (FlatBuffers) held
against the schema by the build's static_asserts, checked here to cover every enumerator.

Each rule names its one place; a match anywhere else fails with the file and line."""

import re

import pytest

from conftest import ROOT

CPP = (".cpp", ".h", ".inc")
# Hand-written code and the generators (the generated code is theirs: build/ is not scanned).
TREE = [
    "capture",
    "replay",
    "libinfo",
    "cli",
    "trace",
    "convert",
    "schema",
    "python/trtrace",
    "bench",
    "tests/apps",
    "tests/conformance",
    "tests/tools",
    "tests/fuzz",
]


def sources(exts):
    for top in TREE:
        for p in sorted((ROOT / top).rglob("*")):
            if p.is_file() and p.suffix in exts and "__pycache__" not in p.parts:
                yield p


def matches(pattern, exts=CPP, allowed=()):
    """(file:line, text) of each line matching `pattern` outside the files `allowed` (relative paths)."""
    rx = re.compile(pattern)
    out = []
    for p in sources(exts):
        rel = str(p.relative_to(ROOT))
        if rel in allowed:
            continue
        for n, line in enumerate(p.read_text(errors="replace").splitlines(), 1):
            if rx.search(line):
                out.append(f"{rel}:{n}: {line.strip()}")
    return out


RULES = {
    # A public object is {vptr, V-pointer per level}: abi::vpointer (generated into api_abi.h).
    "V-pointer at field 1 + level": (
        r"void\s*\*\s*const\s*\*\s*>\s*\(.*\)\s*\[\s*1\s*[\]+]",
        CPP + (".py",),
        ["schema/gen_abi.py"],
    ),
    # Stand-in values for weights (player's random weights, strip's): lib::randomWeights.
    "random stand-in weights": (r"uniform_real_distribution", CPP, ["libinfo/trt_values.cpp"]),
    # Keeping the library's errors for the build record: lib::ErrorKeepingLogger.
    # (tests/apps/cpp_app.cpp is an application: its logger is the app's own.)
    "error-keeping logger": (
        r"public\s+(trtrace::)?abi::ILogger\b|errors_\.size\(\)\s*<",
        CPP,
        ["libinfo/error_logger.h", "libinfo/error_logger.cpp", "tests/apps/cpp_app.cpp"],
    ),
    # Trace network ids (from 1) against the numbers people see (from 0): trtrace/network_id.h.
    "trace network id - 1": (
        r"(?i)network(Id\(\))?\)*\s*[-+]\s*1\b|\bhighest\s*-\s*1\b|\bid\s*-\s*1\b",
        CPP,
        ["trace/include/trtrace/network_id.h"],
    ),
    # An interface's descriptor is named by the generator (kIface<Name>), never looked up by a string.
    "interface found by name": (r"findIface\s*\(", CPP + (".py",), []),
    # NumPy dtypes of weight types: the spec's `numpy` line (abi::numpyType; Python reads it from
    # libtrtrace_c), never a table of its own.
    "NumPy dtype table": (r"['\"]k(FLOAT|HALF|BF16|INT8)['\"]\s*:\s*['\"]", (".py",), []),
    # The player's failures reach reduce as data (--json "errors"), not scraped from its text.
    "player output scraped": (r"find\(\"[^\"]*build failed|find\(\"network \"", CPP, []),
    # Outcomes are enums: the player's verdicts, the decode cache's How.
    "verdict or cache outcome as a string": (
        r"(how|verdict|second|\bv)\s*==\s*\"(identical|different|nondeterministic|none|rebuilt|reused|built|temp|off)\"",
        CPP,
        [],
    ),
    # diff compares typed values, never the text it renders.
    "weights found in rendered text": (r"find\(\"weights\[", CPP, []),
    # Dims64's capacity: the spec's (lib::kMaxDims, from abi::Dims64).
    "kMaxDims written again": (r"kMaxDims\s*=|kMaxDims\s*\{", CPP, ["libinfo/trt_values.h"]),
}


@pytest.mark.parametrize("rule", list(RULES))
def test_rule_is_written_once(rule):
    pattern, exts, allowed = RULES[rule]
    found = matches(pattern, exts, allowed)
    assert not found, f"{rule}: written again (its one place: {allowed or 'generated'}):\n" + "\n".join(found)


def fbs_enum(name):
    text = (ROOT / "schema" / "trace.fbs").read_text()
    body = re.search(r"enum\s+" + name + r"\s*:\s*\w+\s*\{([^}]*)\}", text).group(1)
    body = re.sub(r"//[^\n]*", "", body)
    return [v.split("=")[0].strip() for v in body.split(",") if v.strip()]


@pytest.mark.parametrize("enum", ["ValueKind", "CallStatus"])
def test_schema_enum_copies_are_asserted_value_by_value(enum):
    """reader.h/writer.h copy these enums of trace.fbs: each enumerator has its static_assert in
    trace/src/views.cpp (a schema change that moves one fails the build), and the last is pinned."""
    views = (ROOT / "trace" / "src" / "views.cpp").read_text()
    values = fbs_enum(enum)
    assert values
    for v in values:
        assert f"TRTRACE_SAME_AS_SCHEMA({enum}, {v});" in views, f"{enum}::{v} has no static_assert"
    assert f"fb::{enum}::MAX) == static_cast<int>(trtrace::{enum}::{values[-1]})" in views
