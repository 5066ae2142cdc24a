"""The house's arrows (docs/design.md, "Layout"): the capture shim carries no JSON parser; the
converter is used only at the ends (the CLI and the player), never by the shim's own trace library."""

import re
import subprocess

from conftest import BUILD, PLAYER, ROOT, SHIM


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


# The player's memory policy over the weights (decode cache, release batching, a second mapping of
# the same bytes) is replay/weights/'s (docs/design.md, "Layout"): the installed reader, trace/,
# keeps container access only (open, verify, views, a blob's bytes by key).
REPLAY_POLICY = re.compile(
    r"\b(useDecodeCache|releaseBlobs?(Now)?|DecodeCache\w*|listDecodeCache|clearDecodeCache)\b"
    r"|\bBlobView\s+alias\s*\(|Reader::alias\b"
)


def test_the_installed_reader_carries_no_replay_weights_policy():
    bad = []
    for p in (ROOT / "trace").rglob("*"):
        if p.suffix in (".cpp", ".h"):
            for n, line in enumerate(p.read_text().splitlines(), 1):
                if REPLAY_POLICY.search(line):
                    bad.append(f"{p.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bad, "\n".join(bad)
    archive = BUILD / "lib" / "libtrtrace_trace.a"
    symbols = subprocess.run(["nm", "-C", str(archive)], capture_output=True, text=True, check=True).stdout
    assert "trtrace::Reader::open" in symbols, "nm found no reader: the check would see nothing"
    assert not [l for l in symbols.splitlines() if REPLAY_POLICY.search(l) or "decode_cache" in l]
