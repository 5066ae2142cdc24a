"""The docs hold what the code holds: docs/errors.md's exit-code table against the tools' exit codes
(cli/exit_codes.h, python/trtrace/bench.py), docs/format.md's version and tables against
trace/include/trtrace/format.h and schema/trace.fbs, and no history narrated in sources or docs
(git holds it). Source text only: nothing is built or run."""

import re

from conftest import ROOT

EXIT_CODES = ROOT / "cli" / "exit_codes.h"
ERRORS_MD = ROOT / "docs" / "errors.md"
FORMAT_H = ROOT / "trace" / "include" / "trtrace" / "format.h"
FORMAT_MD = ROOT / "docs" / "format.md"
TRACE_FBS = ROOT / "schema" / "trace.fbs"
BENCH_PY = ROOT / "python" / "trtrace" / "bench.py"


# -- exit codes ------------------------------------------------------------------------------------


def exit_enums():
    """{namespace: [(name, code, comment)]} of cli/exit_codes.h's enums, and its kUsage."""
    text = EXIT_CODES.read_text()
    enums = {}
    for ns, body in re.findall(r"namespace (\w+) \{\s*enum Exit : int \{(.*?)\};", text, re.S):
        enums[ns] = [
            (n, int(v), c.strip()) for n, v, c in re.findall(r"^\s*(k\w+) = (\d+),[ \t]*(?://(.*))?$", body, re.M)
        ]
    usage = int(re.search(r"inline constexpr int kUsage = (\d+);", text).group(1))
    return enums, usage


def bench_codes():
    """{EXIT_NAME: code} of bench.py's module-level EXIT_* assignments (bench's codes are its Python side's)."""
    import ast

    codes = {}
    for node in ast.parse(BENCH_PY.read_text()).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], (ast.Name, ast.Tuple)):
            target, value = node.targets[0], node.value
            pairs = zip(target.elts, value.elts) if isinstance(target, ast.Tuple) else [(target, value)]
            codes.update({t.id: v.value for t, v in pairs if t.id.startswith("EXIT_")})
    return codes


def exit_table():
    """{tool: {code: cell}} of docs/errors.md's exit-code table (non-empty cells only)."""
    lines = ERRORS_MD.read_text().split("Exit codes:", 1)[1].strip().splitlines()
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[0] == "tool", header
    codes = [int(c) for c in header[1:]]
    table = {}
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == len(header), line[:80]
        table[cells[0]] = {code: cell for code, cell in zip(codes, cells[1:]) if cell}
    return table


def subcommands(tool):
    """'`trtrace strip`, `extract`' -> ['strip', 'extract']; '`tensorrt_player`' -> ['tensorrt_player']."""
    names = re.findall(r"`([^`]+)`", tool)
    return [n.split()[-1] for n in names]


def test_exit_enums_give_each_number_one_meaning():
    enums, _ = exit_enums()
    assert {"player", "tool", "diff"} <= set(enums), enums.keys()
    for ns, values in enums.items():
        codes = [v for _, v, _ in values]
        assert len(codes) == len(set(codes)), f"{ns}: a number with two names: {values}"


def test_player_exit_codes_match_the_table():
    enums, _ = exit_enums()
    row = exit_table()["`tensorrt_player`"]
    assert set(row) == {v for _, v, _ in enums["player"]}, (sorted(row), enums["player"])


def test_diff_exit_codes_match_the_table():
    enums, _ = exit_enums()
    assert set(exit_table()["`trtrace diff`"]) == {v for _, v, _ in enums["diff"]}


def test_bench_exit_codes_match_the_table():
    _, usage = exit_enums()
    codes = {n: v for n, v in bench_codes().items() if v != usage}  # 64: every tool's, checked below
    row = exit_table()["`trtrace bench`"]
    table_codes = set(row) | {int(n) for n in re.findall(r"\b(\d{3}): ", " ".join(row.values()))}
    assert table_codes == set(codes.values()), (sorted(table_codes), codes)


def test_subcommand_exit_codes_match_the_table():
    """Every trtrace subcommand's cells name codes of exit_codes.h's `tool` enum; a code past
    kTruncated is its one subcommand's (the first word of its comment), and that row names it."""
    enums, _ = exit_enums()
    tool = {v: (n, c) for n, v, c in enums["tool"]}
    table = exit_table()
    own = {}  # code -> the subcommand that owns it
    for v, (name, comment) in tool.items():
        if v > 3 and not comment.startswith("every subcommand"):
            own[v] = comment.split(":")[0]
    seen = set()
    for row, cells in table.items():
        subs = subcommands(row)
        if not row.startswith("`trtrace") or subs[0] in ("diff", "bench"):
            continue
        for code in cells:
            if subs[0] == "capture" and code == 0:
                continue  # the command's own code
            assert code in tool, f"{row}: exit {code} is not in cli/exit_codes.h"
            if code in own:
                assert subs == [own[code]], f"{row}: exit {code} is {own[code]}'s ({tool[code][0]})"
            seen.add(code)
    assert seen == set(tool), f"codes no row documents: {sorted(set(tool) - seen)}"


def test_usage_exit_code_matches_the_text():
    _, usage = exit_enums()
    assert f"**{usage}** (sysexits' `EX_USAGE`)" in ERRORS_MD.read_text()


def test_no_other_exit_enum_in_the_tools():
    """The tools' exit codes are defined once: no enum of exit codes beside cli/exit_codes.h."""
    bad = []
    for folder in ("cli", "replay"):
        for p in (ROOT / folder).glob("*.[ch]*"):
            if p != EXIT_CODES and re.search(r"\benum\s+(class\s+)?Exit\b", p.read_text()):
                bad.append(str(p.relative_to(ROOT)))
    assert not bad, bad


# -- docs/format.md against format.h and trace.fbs ---------------------------------------------------

C_TYPES = {"char": "char", "uint8_t": "u8", "uint16_t": "u16", "uint32_t": "u32", "uint64_t": "u64"}


def format_h():
    return FORMAT_H.read_text()


def constant(name):
    m = re.search(rf"\b{name}\s*=\s*([^;]+);", format_h())
    expr = m.group(1).replace("uint64_t(", "(")
    assert re.fullmatch(r"[\w\s()<x]+", expr), expr
    return eval(expr)  # integers and shifts only (checked above)


def struct_fields(name):
    """[(field, doc type)] of a format.h struct: uint16_t versionMajor -> ('versionMajor', 'u16')."""
    body = re.search(rf"struct {name} \{{(.*?)\n\}};", format_h(), re.S).group(1)
    fields = []
    for ctype, field, n in re.findall(r"^\s*(\w+) (\w+)(?:\[(\d+)\])?;", body, re.M):
        fields.append((field, C_TYPES[ctype] + (f"[{n}]" if n else "")))
    return fields


def enum_values(name, text=None):
    """[(name, value)] of an enum of format.h (or of `text`), in order."""
    text = text or format_h()
    body = re.search(rf"enum (?:class )?{name}\b[^{{]*\{{(.*?)\n\}}", text, re.S).group(1)
    return [(n, int(v)) for n, v in re.findall(r"^\s*(\w+) = (\w+),", body, re.M)]


def enum_docs(name):
    """{enumerator: its comment} of a format.h enum: the comment lines before it and the one after it."""
    body = re.search(rf"enum (?:class )?{name}\b[^{{]*\{{(.*?)\n\}}", format_h(), re.S).group(1)
    docs, pending = {}, []
    for line in body.splitlines():
        m = re.match(r"\s*(\w+) = \w+,\s*(?://(.*))?$", line)
        if m:
            docs[m.group(1)], pending = " ".join(pending + [m.group(2) or ""]), []
        elif line.strip().startswith("//"):
            pending.append(line.strip()[2:])
    return docs


def md_table(after):
    """[(field, type)] of the first table of docs/format.md after the line starting with `after`."""
    text = FORMAT_MD.read_text()
    rest = text[text.index(after) :]
    rows = []
    for line in rest.splitlines()[1:]:
        line = line.strip()
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] not in ("field", "---"):
            rows.append((cells[0], cells[1]))
    return rows


def fbs_block(kind, name):
    return re.search(rf"^{kind} {name}\b[^{{]*\{{(.*?)^\}}", TRACE_FBS.read_text(), re.S | re.M).group(1)


def fbs_fields(kind, name):
    return re.findall(r"^\s*(\w+)\s*:", fbs_block(kind, name), re.M)


def test_format_version_matches():
    major, minor = constant("kVersionMajor"), constant("kVersionMinor")
    md = FORMAT_MD.read_text()
    assert md.splitlines()[0] == f"# The trtrace trace format (container version {major}.{minor})"
    text = md.split("## FileHeader", 1)[1]
    assert re.search(rf"\| versionMajor \| u16 \| container major version \({major};", text)
    assert re.search(rf"\| versionMinor \| u16 \| container minor version \({minor}\)", text)
    history = md.split("**History**", 1)[1].split("\n## ", 1)[0]
    for m in range(minor + 1):
        assert re.search(rf"\b{major}\.{m} —", history), f"docs/format.md History has no {major}.{m}"
    assert not re.search(rf"\b{major}\.{minor + 1} —", history)


def test_format_struct_tables_match():
    for struct, heading in (
        ("FileHeader", "## FileHeader"),
        ("BlockHeader", "## Blocks"),
        ("SegmentZstdHeader", "- **Zstd** (`flags` bit 0"),
    ):
        assert md_table(heading) == struct_fields(struct), struct


def test_format_block_types_and_flags_match():
    md = FORMAT_MD.read_text()
    types = enum_values("BlockType")
    listed = re.search(r"\| type \| u16 \| ([^|]*?) \(append-only\)", md).group(1)
    assert listed == ", ".join(f"{v} {n}" for n, v in types)
    for n, v in types:
        assert f"### {n} block (type {v})" in md, n
    flags = enum_values("BlockFlags")
    assert flags == [("kSegmentZstd", 1)] and "Only bit 0 is defined: `kSegmentZstd`" in md
    assert f'`0x{constant("kBlockMagic"):08X}` ("TRBK")' in md


def test_format_blob_encodings_and_transforms_match():
    md = FORMAT_MD.read_text()
    documented = dict(re.findall(r"^- \*\*(\w+)\*\* \(encoding (\d+)", md, re.M))
    encodings = enum_values("BlobEncoding")
    assert {n: int(v) for n, v in documented.items()} == dict(encodings)
    for n, v in encodings:  # the version that brought it, in both
        since_h = re.search(r"[Ss]ince (\d+\.\d+)", enum_docs("BlobEncoding")[n])
        since_md = re.search(rf"\*\*{n}\*\* \(encoding {v}, since (\d+\.\d+)\)", md)
        assert bool(since_h) == bool(since_md), n
        assert not since_h or since_h.group(1) == since_md.group(1), n
    transforms = enum_values("BlobTransform")
    m = re.search(r"\*\*Byte grouping\*\* \(transform (\d) = (\d)-byte elements, (\d) = (\d)-byte\)", md)
    assert [(int(m.group(1)), int(m.group(2))), (int(m.group(3)), int(m.group(4)))] == [
        (v, int(re.search(r"\d", n).group())) for n, v in transforms if v
    ], transforms
    record = [f for f, _ in struct_fields("BlobRecord")]
    listed = re.search(r"`BlobRecord`: ([^.]*)\.", md).group(1).replace("\n", " ")
    listed = re.sub(r" \([^)]*\)", "", listed.replace("hash (lo, hi)", "hashLo, hashHi"))
    assert [w.strip() for w in listed.split(",")] == record
    assert not re.search(r"encodings? \d+ (and|or) \d+", TRACE_FBS.read_text()), "trace.fbs lists blob encodings"


def test_format_sizes_match():
    """Each format.h limit that docs/format.md names is given there with its value."""
    md = FORMAT_MD.read_text()
    units = {"MiB": 1 << 20, "KiB": 1 << 10}
    checked = 0
    for name in ("kMaxSegmentRawSize", "kSmallBlobMax", "kMaxChunkRawSize"):
        value = constant(name)
        for m in re.finditer(rf"`{name}`", md):
            sizes = re.findall(r"(\d+) (MiB|KiB)", md[max(0, m.start() - 80) : m.start()])
            assert sizes and int(sizes[-1][0]) * units[sizes[-1][1]] == value, (name, md[m.start() - 80 : m.end()])
            checked += 1
    assert checked >= 3


def test_format_call_log_matches_the_schema():
    md = FORMAT_MD.read_text()
    kinds = [n for n, _ in enum_values("ValueKind", TRACE_FBS.read_text())]
    listed = re.search(r"the table in `schema/trace.fbs`\): (.*?)\. Type ids", md, re.S).group(1)
    listed = re.sub(r"\([^)]*\)", "", listed.replace("\n", " "))
    assert [w.strip() for w in listed.split(",")] == kinds
    statuses = [n for n, _ in enum_values("CallStatus", TRACE_FBS.read_text())]
    assert re.search(r"`status` \(([^)]*)\)", md).group(1).split() == [f"{n}," for n in statuses[:-1]] + statuses[-1:]
    call = re.search(r"- `Call`: (.*?)\n- \*\*Synthesized", md, re.S).group(1)
    named = [n for n in re.findall(r"`(\w+)`", call) if n[0].islower()]  # fields; `Value`, `Handle`: types
    assert [n for n in named if n in fbs_fields("table", "Call")] == named
    assert set(named) | {"unsupported_interface", "unsupported_slot"} >= set(fbs_fields("table", "Call"))
    seg = re.search(r"FlatBuffer `trtrace.fb.Segment`: (.*?)\.\n", md).group(1)
    assert re.findall(r"`(\w+)`", seg) == fbs_fields("table", "Segment")
    footer = re.search(r"FlatBuffer `trtrace.fb.Footer`: (.*?)\.\n\n", md, re.S).group(1)
    assert re.findall(r"`(\w+)`", footer) == fbs_fields("table", "Footer")


# -- no history in sources and docs -----------------------------------------------------------------

# Phrases that narrate how the tree changed ("was 8 MiB until issue 16", "as before", "the old
# behaviour"): git holds that. A format version ("since 2.3", "readers before 2.5") is the format's,
# not history, and stays. BENCHMARKS.md is a measurement log: its before -> after rows are data.
HISTORY = re.compile(
    r"\b(until|since|before|after|as of) issue #?\d+"
    r"|\bthe old (behaviou?r|way|code|format|layout|name)\b"
    r"|\bas before\b"
    r"|\bwas [^.;()\n]{0,40}\buntil\b"
    r"|\b(formerly|previously)\b"
    r"|\bno longer (crash|fail|hang|leak)"
    r"|\(before: "
    r"|\bused to\b",
    re.I,
)
CASED = re.compile(r"(^|[.:;(]\s+|^\s*(//|#)\s*)Before, ")
PASSIVE = re.compile(r"\b(is|are|be|been|being|was|were|gets?)\s+used to\b", re.I)
SUFFIXES = {".cpp", ".h", ".hpp", ".inc", ".c", ".py", ".md", ".txt", ".cmake", ".fbs", ".api", ".sh", ".toml", ".in"}
NOT_SCANNED = {"BENCHMARKS.md", "tests/test_docs_code.py"}


def repo_files():
    """Paths of the tree's files, relative to ROOT: tracked, and untracked but not ignored."""
    import subprocess

    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    return [name for name in out if name]


def scanned_files():
    for name in repo_files():
        p = ROOT / name
        if (
            name not in NOT_SCANNED
            and not name.startswith("dist/")
            and p.is_file()
            and (p.suffix in SUFFIXES or p.name in ("Makefile", "CMakeLists.txt"))
        ):
            yield name, p


def history_phrases(text):
    for line in text.splitlines():
        for m in list(HISTORY.finditer(line)) + list(CASED.finditer(line)):
            if m.group(0).lower() == "used to" and PASSIVE.search(line):
                continue
            yield line.strip()
            break


def test_the_history_scan_sees_the_forms():
    samples = [
        "(it was 8 MiB until issue 16: 4 MB of ...)",
        "decodes into memory on use (the old behaviour).",
        "is left out and reported, as before, when",
        "// Before, a reused cache left ~90% resident",
        "# since issue 12 the player keys by pointer",
        "the shim used to write JSON",
        "at once (before: accepted, and calls never returned)",
    ]
    assert [s for s in samples if not list(history_phrases(s))] == []
    legit = [
        "Readers before 2.5 ignore the field",
        "RawSmall (encoding 2, since 2.3)",
        "the buffer is used to hold",
        "bytes that no longer give their key",
        "(issue 17)",
    ]
    assert [s for s in legit if list(history_phrases(s))] == []


def test_no_history_in_sources_and_docs():
    bad = []
    n = 0
    for name, p in scanned_files():
        n += 1
        try:
            text = p.read_text()
        except UnicodeDecodeError:
            continue
        bad += [f"{name}: {line[:120]}" for line in history_phrases(text)]
    assert n > 100, "the scan saw almost nothing"
    assert not bad, "history belongs in git, not in comments or docs:\n" + "\n".join(bad)


# -- docs/design.md's layout names what is there ---------------------------------------------------------

DESIGN_MD = ROOT / "docs" / "design.md"
GENERATED = {"trtrace/api_abi.h", "trtrace/api_table.h", "capture_gen.inc", "replay_gen.inc"}


def test_design_layout_homes_exist():
    """Each file the layout's concept table names as a home exists, so the index cannot drift."""
    section = DESIGN_MD.read_text().split("## Layout: who uses whom", 1)[1].split("\n## ", 1)[0]
    rows = [l for l in section.splitlines() if l.startswith("| ") and not l.startswith("| concept")]
    assert len(rows) >= 15, "the layout's concept table is gone"
    names = repo_files()
    basenames = {n.rsplit("/", 1)[-1] for n in names}
    missing = []
    for row in rows:
        home = row.split("|")[2]
        for token in re.findall(r"`([^`]+)`", home):
            if "::" in token or token in GENERATED or token.startswith("-"):
                continue
            if "*" in token:
                found = list(ROOT.glob(token))
            elif "/" in token:
                found = (ROOT / token).exists() or any(n.endswith("/" + token) for n in names)  # an include/
            else:
                found = token in basenames
            if not found:
                missing.append(token)
    assert not missing, f"docs/design.md's layout names what is not there: {missing}"
