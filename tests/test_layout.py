"""The house's arrows (docs/design.md, "Layout"): the capture shim carries no JSON parser; the
converter is used only at the ends (the CLI and the player), never by the shim's own trace library."""
import re
import subprocess

from conftest import PLAYER, ROOT, SHIM


def test_shim_is_free_of_simdjson():
    needed = subprocess.run(["readelf", "-d", str(SHIM)], capture_output=True, text=True, check=True).stdout
    assert "NEEDED" in needed and "simdjson" not in needed
    symbols = subprocess.run(["nm", "-C", str(SHIM)], capture_output=True, text=True, check=True).stdout
    assert symbols.strip(), "nm found no symbols: the check would see nothing"
    assert not [l for l in symbols.splitlines() if "simdjson" in l]
    # The same look finds simdjson where it is linked (the player reads NVIDIA's JSON).
    player = subprocess.run(["nm", "-C", str(PLAYER)], capture_output=True, text=True, check=True).stdout
    assert "simdjson" in player


def test_the_trace_library_and_libinfo_never_reach_up():
    # trace/src (the container) and libinfo know nothing of the converter, the shim or the player.
    bad = []
    for folder in ("trace/src", "trace/include", "libinfo"):
        for p in (ROOT / folder).rglob("*"):
            if p.suffix in (".cpp", ".h"):
                for n, line in enumerate(p.read_text().splitlines(), 1):
                    if re.match(r'\s*#include\s+"(trtrace/convert\.h|shim\.h|session\.h|replayer\.h)"', line):
                        bad.append(f"{p.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bad, "\n".join(bad)
