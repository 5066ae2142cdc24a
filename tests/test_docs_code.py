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
        enums[ns] = [(n, int(v), c.strip()) for n, v, c in
                     re.findall(r"^\s*(k\w+) = (\d+),[ \t]*(?://(.*))?$", body, re.M)]
    usage = int(re.search(r"inline constexpr int kUsage = (\d+);", text).group(1))
    return enums, usage


def bench_codes():
    names, values = re.search(r"^(EXIT_\w+(?:, EXIT_\w+)*) = ([\d, ]+)$", BENCH_PY.read_text(), re.M).groups()
    return dict(zip(names.split(", "), (int(v) for v in values.split(", "))))


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
    codes = bench_codes()
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
        if v > 3:
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
