"""docs/errors.md, row by row: every bad input, every tool, the documented exit code and message.

The table is read from the document itself, so the two cannot drift: a row without a case here
fails, and a case here without a row fails. Beyond the row: a failing tool prints one line (verify:
one line per problem) and leaves no output behind.
"""

import json
import os
import pathlib
import re
import resource
import shutil
import struct
import subprocess
import sys

import pytest

from conftest import ASAN_RUNTIME, BIN, PLAYER, ROOT, TRTRACE, cpp_app, drop_in_dir, trt_lib
from test_versions import VENVS, capture as capture_on, libfile

DOC = ROOT / "docs" / "errors.md"
TRACE_READERS = [
    "tensorrt_player",
    "trtrace verify",
    "trtrace info",
    "trtrace dump",
    "trtrace convert",
    "trtrace rewrite",
    "trtrace diff",
    "trtrace strip",
    "trtrace extract",
    "trtrace reduce",
    "trtrace export",
]  # every tool that reads a trace
TOOLS = {
    *TRACE_READERS,
    "trtrace rewrite --salvage",
    "capture",
    "trtrace capture",
    "trtrace cache",
    "trtrace push",
    "trtrace pull",
}
# Inputs that claim huge sizes: their rows run with the address space capped at 1 GiB, so a tool that
# allocated by the claim would fail (or be killed) instead of printing the documented line.
MEMORY_CAPPED = {"random_count", "huge_json_ids"}
# Cases whose command adds arguments to the tool's usual one (the player and dump take --network).
EXTRA = {
    "network_missing": ["--network", "7"],
    "network_negative": ["--network", "-1"],
    "network_wraps": ["--network", "4294967296"],  # 2^32: must not wrap onto network 0
    "bad_option": ["--no-such-option"],
    "timeout_nan": ["--timeout", "nan"],
    "timeout_huge": ["--timeout", "1e30"],
    "no_counterpart": ["--ignore-version"],
}
# Cases whose documented output is a report, one line per item, then one divergence line.
REPORTS = {"no_counterpart"}
# Cases that need both library versions (tools/setup.sh); skipped without TensorRT-RTX 1.7.
VERSION_CASES = {"version_newer_trace", "version_older_trace", "no_counterpart"}


def rows():
    out = []
    in_catalogue = False
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            in_catalogue = line.strip() == "## Catalogue"
        if not in_catalogue or not line.startswith("| ") or line.startswith("| case") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        case, _, tool, code, message = cells
        assert tool in TOOLS, line
        out.append((case, tool, int(code), message))
    return out


ROWS = rows()


def blocks(data):
    """(type, offset, payload size) of each block (docs/format.md)."""
    pos, out = 64, []
    while pos + 32 <= len(data):
        magic, typ, _, size = struct.unpack_from("<IHHQ", data, pos)
        if magic != 0x4B425254:
            break
        out.append((typ, pos, size))
        pos = (pos + 32 + size + 7) & ~7
    return out


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """case -> (input path, extra player args, BIN path or None): one of each bad input."""
    d = tmp_path_factory.mktemp("errors")
    _, env = drop_in_dir(d)
    good = d / "good.trtrace"
    proc = cpp_app(d / "app.engine", env=dict(env, TRT_SHIM_OUTPUT_FILE=str(good), TRTRACE_ZSTD_LEVEL="0"))
    assert proc.returncode == 0, proc.stderr
    data = good.read_bytes()
    bl = blocks(data)
    seg = next(b for b in bl if b[0] == 2)
    blob = next(b for b in bl if b[0] == 3)

    def put(name, content):
        (d / name).write_bytes(content)
        return d / name

    def craft(*args):
        subprocess.run([str(BIN / "trace_craft"), *map(str, args)], check=True)
        return pathlib.Path(args[1])

    c = {
        "missing": d / "missing.trtrace",
        "empty": put("empty.trtrace", b""),
        "wrong_magic": put("magic.trtrace", b"GARBAGE!" + bytes(100)),
        "truncated": put("cut.trtrace", data[: len(data) // 2]),
    }
    subprocess.run([str(BIN / "trace_craft"), "major", str(good), str(d / "major.trtrace"), "3"], check=True)
    c["newer_major"] = d / "major.trtrace"
    x = bytearray(data)
    x[seg[1] + 32 + seg[2] // 2] ^= 0xFF
    c["corrupt_log"] = put("corrupt.trtrace", bytes(x))
    data_offset = struct.unpack_from("<Q", data, blob[1] + 32 + 32)[0]  # BlobRecord.dataOffset
    x = bytearray(data)
    x[blob[1] + 32 + data_offset] ^= 0xFF
    c["hash_mismatch"] = put("hash.trtrace", bytes(x))
    killed = cpp_app(
        d / "k.engine",
        env=dict(
            env,
            TRT_SHIM_OUTPUT_FILE=str(d / "unclosed.trtrace"),
            TRT_SHIM_FLUSH_AFTER_EVERY_CALL="1",
            TRTRACE_FAULT_KILL_AT_CALL="5",
        ),
    )
    assert killed.returncode == -9
    c["unclosed"] = d / "unclosed.trtrace"
    c["no_build"] = craft("names", d / "no_build.trtrace", "in", "in")  # -o given, no build: exit 6
    subprocess.run([str(TRTRACE), "convert", good, d / "good.json"], check=True, capture_output=True)
    js, bn = (d / "good.json").read_text(), (d / "good.bin").read_bytes()
    put("mal.json", js[: len(js) // 2].encode())
    put("mal.bin", bn)
    c["malformed_json"] = d / "mal.json"
    put("nobin.json", js.replace('"good.bin"', '"nobin.bin"').encode())
    c["missing_bin"] = d / "nobin.json"
    put("short.json", js.replace('"good.bin"', '"short.bin"').encode())
    put("short.bin", bn[:100])
    c["short_bin"] = d / "short.json"
    c["library_version"] = craft("version", d / "oldlib.trtrace", "1.3.0.35")
    c["unknown_api"] = craft("unknown-api", d / "unknown.trtrace")
    c["library_abi"] = c["library_missing"] = c["library_fifo"] = c["unwritable_output"] = good
    c["not_failing"] = c["fail_regex_invalid"] = c["artifacts_not_empty"] = c["export_dir_not_empty"] = good
    c["bad_option"] = c["timeout_nan"] = c["timeout_huge"] = good
    (d / "open_cache").mkdir()  # trtrace cache: a folder others may write in; a file; no folder
    os.chmod(d / "open_cache", 0o777)
    c["cache_folder_open"], c["cache_not_a_folder"], c["cache_no_folder"] = d / "open_cache", good, pathlib.Path("temp")
    os.mkfifo(d / "lib.fifo")
    c["unwritable_output_json"] = d / "good.json"
    c.update(hardening_inputs(d, env, good, data, bl, js, bn, put))
    c["random_count"] = craft("random-count", d / "random.trtrace", 1 << 33)
    for case, how in (
        ("object_type", "tensor-as-layer"),
        ("null_reference", "null-reference"),
        ("delete_owned", "delete-tensor"),
    ):
        c[case] = craft("misuse", d / f"{case}.trtrace", how)
    c["random_count_invalid"] = craft("random-count", d / "random_invalid.trtrace", (1 << 64) - 1)
    c["export_null_receiver"] = craft("null-receiver", d / "null_receiver.trtrace")
    c["export_not_utf8"] = craft("names", d / "not_utf8.trtrace", os.fsdecode(b"in\xffput"), "x")
    for case, how, n in (("footer_calls", "footer-calls", 1 << 62), ("footer_segment", "footer-segment", 7)):
        c[case] = d / f"{case}.trtrace"  # footers that lie (tests/tools/trace_lies)
        subprocess.run([str(BIN / "trace_lies"), how, str(c[case]), str(good), str(n)], check=True)
    c["array_count"] = craft("array-count", d / "array_count.trtrace", 5)
    c["api_descriptor"] = craft("api-descriptor", d / "api_descriptor.trtrace")
    put("array_count.bin", b"")
    c["array_count_json"] = put("array_count.json", concat_json(5, "array_count.bin").encode())
    big = re.sub(r'"(object|id)": 1(?=\D)', lambda m: f'"{m.group(1)}": {1 << 40}', js)
    put("bigids.json", big.replace('"good.bin"', '"bigids.bin"').encode())
    put("bigids.bin", bn)
    c["huge_json_ids"] = d / "bigids.json"
    c["disk_full"] = d / "disk_full.trtrace"  # the capture's output
    # trtrace capture: no command; a command that is not there; an output that is the command's input.
    c["capture_no_command"] = good
    c["capture_not_found"] = d / "no_such_program"
    c["capture_output_is_input"] = put("capture_app.py", b"print('an application')\n")
    c["capture_no_library"] = pathlib.Path("/bin/true")  # run where no TensorRT-RTX can be found
    # The player asked for one default capture name (NVIDIA's capture.json, our capture.trtrace)
    # that is absent, the other beside it.
    (d / "names").mkdir()
    shutil.copy(good, d / "names" / "capture.trtrace")
    c["json_missing_trace_beside"] = d / "names" / "capture.json"
    (d / "names2").mkdir()
    shutil.copy(d / "good.json", d / "names2" / "capture.json")
    c["trace_missing_json_beside"] = d / "names2" / "capture.trtrace"
    libs = {
        "library_abi": next(
            p
            for p in map(pathlib.Path, ["/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1"])
            if p.exists()
        ),
        "library_missing": d / "nope.so",
        "library_fifo": d / "lib.fifo",
    }
    if all((v / "bin" / "python").exists() for v in VENVS.values()):
        c["version_newer_trace"] = c["no_counterpart"] = capture_on("1.7", d)[0]
        c["version_older_trace"] = capture_on("1.6", d)[0]
        libs.update(
            version_newer_trace=libfile("1.6"), no_counterpart=libfile("1.6"), version_older_trace=libfile("1.7")
        )
    return d, c, libs


def concat_json(nb_inputs, bin_name):
    """NVIDIA JSON of 5 calls: a builder, a network, two inputs, then addConcatenation of both with
    `nb_inputs` written out (NVIDIA omits it; a hostile JSON may not)."""

    def call(i, cls, fn, obj, ret, **args):
        return dict(api_index=i, **{"class": cls, "function": fn, "object": obj, "return": {"object": ret}}, **args)

    calls = [
        call(0, "", "createInferBuilder_INTERNAL", -1, 0, version=10601),
        call(1, "Builder", "createNetworkV2", 0, 1, flags=0),
        call(2, "NetworkDefinition", "addInput", 1, 2, name="a", type=0, dimensions=[1, 4]),
        call(3, "NetworkDefinition", "addInput", 1, 3, name="b", type=0, dimensions=[1, 4]),
        call(
            4, "NetworkDefinition", "addConcatenation", 1, 4, inputs=[{"object": 2}, {"object": 3}], nbInputs=nb_inputs
        ),
    ]
    return json.dumps({"api_calls": calls, "output_bin": bin_name, "trt_version": 10601}, indent=4)


def hardening_inputs(d, env, good, data, bl, js, bn, put):
    """Inputs of issue 13's cases: special files, outputs over inputs, captures with nothing to do."""
    c = {}
    for case in ("output_is_input", "bin_output_is_input", "output_folder"):
        c[case] = put(f"{case}.trtrace", data)
    put("output_is_bin.json", js.replace('"good.bin"', '"output_is_bin.bin"').encode())
    put("output_is_bin.bin", bn)
    c["output_is_bin"] = d / "output_is_bin.json"
    os.mkfifo(d / "fifo.trtrace")
    c["fifo"] = d / "fifo.trtrace"
    (d / "folder.trtrace").mkdir()
    c["folder"] = d / "folder.trtrace"
    c["proc_file"] = pathlib.Path("/proc/self/status")
    c["trailing_garbage"] = put("garbage.trtrace", data + b"garbage!")
    c["no_calls"] = put("nocalls.trtrace", data[: bl[1][1]])  # the header block only: a cut, no call
    put(
        "noapi.json",
        re.sub(r'"api_calls": \[.*\n    \]', '"api_calls": []', js, flags=re.S)
        .replace('"good.bin"', '"noapi.bin"')
        .encode(),
    )
    put("noapi.bin", bn)
    c["empty_api_calls"] = d / "noapi.json"
    c["cut_json_no_bin"] = put("cutnobin.json", js[: len(js) // 2].encode())  # output_bin is in the lost half
    wide = js.replace('"index": 0', '"index": 4294967297', 1).replace('"good.bin"', '"wide.bin"')
    put("wide.json", wide.encode())
    put("wide.bin", bn)
    c["int32_overflow"] = d / "wide.json"
    two = d / "two.trtrace"
    proc = cpp_app(d / "two.engine", "--networks", 2, env=dict(env, TRT_SHIM_OUTPUT_FILE=str(two)))
    assert proc.returncode == 0, proc.stderr
    c["network_missing"] = c["network_negative"] = c["network_wraps"] = two
    return c


def command(case, tool, src, out_dir, lib):
    """(command line, output path or None) of a row: the tool's usual command on `src`, with the
    output (and --bin) the case needs. The capture's row runs the native app under the shim."""
    binp = src.with_suffix(".bin")
    if tool == "capture":
        return [BIN / "cpp_app", out_dir / "app.engine"], None
    if tool == "trtrace cache":  # src: the cache folder
        return [TRTRACE, "cache", "list", "--decode-cache", src], None
    if tool == "trtrace capture":  # the command: src, run by path (none for no_command)
        out = src if case == "capture_output_is_input" else out_dir / "c.trtrace"
        program = {"capture_no_command": [], "capture_output_is_input": [sys.executable, src]}.get(case, [src])
        return [TRTRACE, "capture", "-o", out, "--", *program], out
    out = {"output_is_input": src, "output_is_bin": binp, "output_folder": out_dir}.get(case)
    # push and pull: a closed port (these rows fail before any connection; test_registry.py has the registry)
    if tool == "trtrace push":
        return [TRTRACE, "push", "--plain-http", src, "127.0.0.1:9/trtrace-test/x:t"], None
    if tool == "trtrace pull":
        out = out or out_dir / "p.trtrace"
        return [TRTRACE, "pull", "--plain-http", "127.0.0.1:9/trtrace-test/x:t", "-o", out], out
    if tool == "tensorrt_player":
        out = out or out_dir / "o.engine"
        return [PLAYER, "-j", src, "-o", out, "--lib", lib, *EXTRA.get(case, [])], out
    if tool == "trtrace convert":
        out = out or out_dir / ("c.json" if src.suffix == ".trtrace" else "c.trtrace")
        return [TRTRACE, "convert", src, out, *(["--bin", src] if case == "bin_output_is_input" else [])], out
    if tool == "trtrace diff":  # the input against itself
        return [TRTRACE, "diff", src, src], None
    if tool in ("trtrace strip", "trtrace extract"):
        out = out or out_dir / "s.trtrace"
        network = EXTRA.get(case, ["--network", "0"]) if tool == "trtrace extract" else []
        return [TRTRACE, tool.split()[1], src, *network, "-o", out], out
    if tool == "trtrace reduce":  # the default check: the player, on `lib`
        out = out or out_dir / "min.trtrace"
        extra = {
            "fail_regex_invalid": ["--fail-regex", "("],
            "artifacts_not_empty": ["--artifacts", src.parent],
            **EXTRA,
        }
        return [TRTRACE, "reduce", src, "-o", out, "--lib", lib, *extra.get(case, [])], out
    if tool == "trtrace export":  # the output is a folder (new or empty)
        out = src.parent if case == "export_dir_not_empty" else out_dir / "py"
        return [TRTRACE, "export", src, "--python", out], out
    if tool.startswith("trtrace rewrite"):
        out = out or out_dir / "r.trtrace"
        return [TRTRACE, "rewrite", src, out, "--raw", *tool.split()[2:]], out
    return [TRTRACE, tool.split()[1], src, *EXTRA.get(case, [])], None


def pattern(message, file, out, lib, binp):
    if message == "(none)":
        return None
    text = message.strip("`")
    rx = ""
    tokens = {
        "<file>": re.escape(str(file)),
        "<out>": re.escape(str(out)),
        "<lib>": re.escape(str(lib)),
        "<bin>": re.escape(str(binp)),
        "<n>": r"\d+",
        "<hex>": "[0-9a-f]+",
        "…": ".*",
    }
    for part in re.split(r"(<file>|<out>|<lib>|<bin>|<n>|<hex>|…)", text):
        rx += tokens.get(part, re.escape(part))
    return re.compile(rx)


def test_every_case_has_rows_for_what_it_claims():
    cases = {r[0] for r in ROWS}
    traces = {
        "missing",
        "empty",
        "wrong_magic",
        "newer_major",
        "truncated",
        "unclosed",
        "no_build",
        "corrupt_log",
        "hash_mismatch",
        "library_version",
        "unknown_api",
        "trailing_garbage",
        "no_calls",
        "random_count",
        "object_type",
        "null_reference",
        "delete_owned",
        "version_newer_trace",
        "version_older_trace",
        "array_count",
        "api_descriptor",
        "footer_calls",
        "footer_segment",
    }
    others = {
        "malformed_json",
        "missing_bin",
        "short_bin",
        "library_abi",
        "library_missing",
        "library_fifo",
        "unwritable_output",
        "unwritable_output_json",
        "output_is_input",
        "bin_output_is_input",
        "output_is_bin",
        "output_folder",
        "fifo",
        "folder",
        "proc_file",
        "empty_api_calls",
        "cut_json_no_bin",
        "int32_overflow",
        "network_missing",
        "network_negative",
        "network_wraps",
        "random_count_invalid",
        "huge_json_ids",
        "array_count_json",
        "disk_full",
        "no_counterpart",
        "not_failing",
        "fail_regex_invalid",
        "artifacts_not_empty",
        "export_dir_not_empty",
        "export_null_receiver",
        "export_not_utf8",
        "capture_no_command",
        "capture_not_found",
        "capture_output_is_input",
        "capture_no_library",
        "json_missing_trace_beside",
        "trace_missing_json_beside",
        "bad_option",
        "timeout_nan",
        "timeout_huge",
        "cache_folder_open",
        "cache_not_a_folder",
        "cache_no_folder",
    }
    assert cases == traces | others
    # Every trace input is documented for the player and verify at least.
    for case in traces:
        tools = {r[1] for r in ROWS if r[0] == case}
        assert {"tensorrt_player", "trtrace verify"} <= tools, case
    # A file that is not a regular file: every tool that reads a trace refuses it.
    for case in ("fifo", "folder", "proc_file"):
        assert {r[1] for r in ROWS if r[0] == case} == set(TRACE_READERS), case


def snapshot(d, *paths):
    """Contents of the regular files among `paths` that live in the test folder `d`."""
    return {p: p.read_bytes() for p in paths if p.parent == d and p.is_file()}


@pytest.mark.parametrize("case,tool,code,message", ROWS, ids=[f"{r[0]}-{r[1].replace(' ', '_')}" for r in ROWS])
def test_documented_row(inputs, tmp_path, case, tool, code, message):
    d, c, libs = inputs
    if case in VERSION_CASES and case not in c:
        pytest.skip("tools/setup.sh installs both library versions")
    src = c[case]
    out_dir = tmp_path / ("nodir" if case.startswith("unwritable") else "out")
    if not case.startswith("unwritable"):
        out_dir.mkdir()
    lib = libs.get(case, trt_lib())
    cmd, out = command(case, tool, src, out_dir, lib)
    binp = src.with_suffix(".bin")
    before = snapshot(d, src, binp)
    env = None
    if tool == "capture":  # the native app under the shim (drop-in layout), its trace the output
        _, env = drop_in_dir(d)
        env = dict(
            os.environ,
            **env,
            TRT_SHIM_OUTPUT_FILE=str(src),
            TRT_SHIM_FLUSH_AFTER_EVERY_CALL="1",
            TRTRACE_FAULT_WRITE_FAIL="1:ENOSPC",
        )
    if case == "capture_no_library":  # no environment active, none on PATH, no loader path to one
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "LD_LIBRARY_PATH", "PATH")}
        env["PATH"] = "/usr/bin:/bin"
    cap = None
    if case in MEMORY_CAPPED and ASAN_RUNTIME:
        # ASan reserves terabytes of shadow address space, so an address-space cap kills it at start;
        # its own RSS limit bounds memory instead (a process over it dies, failing the row).
        env = dict(env or os.environ)
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":hard_rss_limit_mb=2048"
    elif case in MEMORY_CAPPED:
        cap = lambda: resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    # A tool that hangs (e.g. on a FIFO) fails the row instead of the run.
    proc = subprocess.run([str(x) for x in cmd], capture_output=True, text=True, timeout=300, env=env, preexec_fn=cap)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == code, f"{' '.join(map(str, cmd))}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
    rx = pattern(message, src, src if tool == "capture" else out, lib, binp)
    if rx is None:
        assert err == [], proc.stderr
    else:
        assert err and rx.fullmatch(err[0]), f"expected /{rx.pattern}/, got:\n{proc.stderr}"
        if case in REPORTS:
            assert "divergence at call #" in err[-1] and all(" does not have" in l for l in err[:-1]), proc.stderr
        elif case == "unclosed" and tool == "tensorrt_player":  # the warning, then what came of it
            assert len(err) == 2 and re.fullmatch(
                r"tensorrt_player: .*: nothing written to .*: no build among the 5 "
                r"calls replayed",
                err[1],
            ), proc.stderr
        elif tool != "trtrace verify":
            assert len(err) == 1, proc.stderr
    assert proc.returncode >= 0
    if tool == "capture":  # the app's build went on; the trace is a prefix
        assert (out_dir / "app.engine").read_bytes() == (d / "app.engine").read_bytes()
        assert subprocess.run([str(TRTRACE), "verify", str(src)], capture_output=True).returncode == 3
        return
    assert snapshot(d, src, binp) == before, "an input was changed"
    if code != 0 and out is not None and out_dir.exists():
        assert list(out_dir.iterdir()) == [], "output left behind"
    if case == "truncated" and tool == "tensorrt_player":
        assert not any(out_dir.iterdir())  # the prefix holds no build: no engine


def test_trust_weights_skips_the_hash_check(inputs, tmp_path):
    """--trust-weights (for a trace `verify` already passed) hands raw blobs over unchecked: the damaged
    blob of hash_mismatch then builds an engine, which --check reports as different (exit 4)."""
    d, c, libs = inputs
    out = tmp_path / "o.engine"
    proc = subprocess.run(
        [
            str(PLAYER),
            "-j",
            str(c["hash_mismatch"]),
            "-o",
            str(out),
            "--lib",
            str(trt_lib()),
            "--trust-weights",
            "--check",
            "-q",
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "DIFFERENT from capture" in proc.stdout + proc.stderr
    assert out.exists()


def test_rewrite_salvage_keeps_the_calls_before_the_damage(inputs, tmp_path):
    """--salvage drops the damaged blob and every call from the first one that uses it, says so, and
    writes a trace that verifies and replays (the calls before the damage)."""
    d, c, libs = inputs
    out = tmp_path / "s.trtrace"
    proc = subprocess.run(
        [str(TRTRACE), "rewrite", str(c["hash_mismatch"]), str(out), "--raw", "--salvage"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 2 and err[0].startswith("trtrace: salvage: ") and err[0].endswith(": dropped"), proc.stderr
    m = re.fullmatch(
        r"trtrace: salvage: .*: call #(\d+) uses blob [0-9a-f]+ \(damaged\): kept the (\d+) calls before "
        r"it, dropped the other (\d+)",
        err[1],
    )
    assert m and m.group(1) == m.group(2) and int(m.group(2)) > 0, err[1]
    v = subprocess.run([str(TRTRACE), "verify", str(out)], capture_output=True, text=True)
    assert v.returncode == 0 and f", {m.group(2)} calls," in v.stdout, v.stdout + v.stderr
    p = subprocess.run([str(PLAYER), "-j", str(out), "--lib", str(trt_lib()), "-q"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


SUBCOMMANDS = [
    "info",
    "dump",
    "verify",
    "rewrite",
    "convert",
    "diff",
    "strip",
    "extract",
    "reduce",
    "export",
    "capture",
    "cache",
]


@pytest.mark.parametrize("sub", SUBCOMMANDS + ["tensorrt_player"])
def test_command_line_errors_are_one_prefixed_line_and_exit_64(tmp_path, sub):
    """Every subcommand (and the player): an unknown option, a missing argument and a bad number are one
    line with the tool's prefix and the subcommand, exit 64 (CLI11's own codes were 104-114, bare);
    --help still exits 0 with the help on stdout."""
    tool = [str(PLAYER)] if sub == "tensorrt_player" else [str(TRTRACE), sub]
    prefix = "tensorrt_player: " if sub == "tensorrt_player" else f"trtrace: {sub}: "
    bad = [["--no-such-option", "x"], []]
    if sub in ("reduce",):
        bad += [["x", "-o", "y", "--timeout", v] for v in ("nan", "inf", "1e30", "-1", "0", "abc")]
        bad += [["x", "-o", "y", "--fail-code", "300"]]
    if sub == "tensorrt_player":
        bad += [["x", "--seed", "-1"], ["x", "--network", "1e30"]]
    if sub in ("strip",):
        bad += [["x", "-o", "y", "--keep-below", "-1"], ["x", "-o", "y", "--seed", "-1"]]
    if sub in ("convert",):
        bad += [["x", "y", "--threads", "100000"], ["x", "y", "--level", "99"]]
    if sub == "capture":
        bad = [["--no-such-option", "--", "true"], ["--no-such-option", "true"], ["true", "--", "true"]]
    for args in bad:
        p = subprocess.run([*tool, *args], capture_output=True, text=True, cwd=tmp_path)
        err = p.stderr.splitlines()
        assert p.returncode == 64 and len(err) == 1 and err[0].startswith(prefix), (args, p.returncode, p.stderr)
        assert err[0].endswith(" --help)") and p.stdout == "", (args, p.stderr)
    h = subprocess.run([*tool, "--help"], capture_output=True, text=True)
    assert h.returncode == 0 and "--help" in h.stdout and h.stderr == "", h.stderr


def test_trace_text_is_escaped_on_the_terminal(tmp_path):
    """Names from a trace (tests/apps/named_app.py hostile: a newline, ESC, CR, a line separator, ...)
    reach dump, info and diff escaped: one line per call, no control byte, no separator."""
    from conftest import capture

    hostile, benign = tmp_path / "h.trtrace", tmp_path / "b.trtrace"
    capture("named_app.py", hostile, tmp_path / "h.engine", "hostile")
    capture("named_app.py", benign, tmp_path / "b.engine", "benign")
    calls = int(
        re.search(
            r'"calls":(\d+)',
            subprocess.run([str(TRTRACE), "info", "--json", str(hostile)], capture_output=True, text=True).stdout,
        ).group(1)
    )
    runs = {
        "dump": [str(TRTRACE), "dump", str(hostile)],
        "info": [str(TRTRACE), "info", str(hostile)],
        "diff": [str(TRTRACE), "diff", str(hostile), str(benign)],
    }
    for name, cmd in runs.items():
        p = subprocess.run(cmd, capture_output=True)
        assert p.returncode in (0, 1), (name, p.stderr)
        text = p.stdout.decode("utf-8")  # valid UTF-8 throughout
        assert not re.search("[\x00-\x09\x0b-\x1f\x7f\x80-\x9f\u2028\u2029]", text), (name, text)
        if name == "dump":
            assert len(text.splitlines()) == calls and "\\x1b[31m" in text and "\\n" in text, text
