"""The ONNX parser's call surface (issue 12, class 3): every call the parser makes into the library
is in the API spec, so captures of parser apps hold no UNSUPPORTED record, NVIDIA's captures of
them convert, and both replay. Ops such as NonZero and RoiAlign make the parser ask the builder's
plugin registry for its creators (Builder::getPluginRegistry, PluginRegistry::getAllCreatorsRecursive)."""

import json
import pathlib
import sys

import pytest

from conftest import APPS, ROOT, capture, play, trtrace

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import nvidia_capture as nv  # noqa: E402

sys.path.insert(0, str(ROOT / "schema"))
import apigen  # noqa: E402
import apispec  # noqa: E402

CORPUS = ROOT / ".deps" / "onnx-1.17-data"


def unsupported(trace):
    return [ln for ln in trtrace("dump", trace).stdout.splitlines() if "UNSUPPORTED" in ln]


def nothing_to_write(trace, tmp):
    """The app parses and builds nothing: every call replays, and -o gets no engine (exit 6, one line)."""
    p = play(trace, tmp / "none.engine", check=False)
    assert p.returncode == 6 and p.stderr.splitlines()[-1].endswith("calls replayed"), p.stdout + p.stderr
    assert not (tmp / "none.engine").exists()


def test_plugin_registry_calls_are_recorded_and_replayed(tmp):
    trace = tmp / "ops.trtrace"
    capture("parse_onnx.py", trace, "--ops")
    assert unsupported(trace) == []
    dump = trtrace("dump", trace).stdout
    assert "Builder::getPluginRegistry" in dump
    # the creators are foreign objects: the call records how many the registry returned
    regs = [ln for ln in dump.splitlines() if "PluginRegistry::getAllCreatorsRecursive" in ln]
    assert len(regs) == 2 and all(" -> " in ln for ln in regs), regs
    trtrace("verify", trace)
    nothing_to_write(trace, tmp)  # no build; every call replays (no --skip-unsupported)


def test_nvidia_capture_of_plugin_registry_calls_converts_and_replays(tmp):
    reason = nv.unavailable_reason()
    if reason:
        pytest.skip(reason)
    js, _, proc = nv.capture([APPS / "parse_onnx.py", "--ops"], tmp / "cap.json", cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    names = {(c["class"], c["function"]) for c in nv.load(js)["api_calls"]}
    assert ("PluginRegistry", "getAllCreatorsRecursive") in names
    trace = tmp / "conv.trtrace"
    trtrace("convert", js, trace)
    assert unsupported(trace) == []
    nothing_to_write(trace, tmp)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"{CORPUS} not installed (tools/setup.sh)")
def test_backend_test_corpus_parses_without_unsupported_records(tmp):
    """Audit: the parser's calls on every model of the onnx 1.17 backend test data are in the spec."""
    trace = tmp / "corpus.trtrace"
    capture("parse_onnx.py", trace, "--corpus", CORPUS)
    # By API name (info reads every call's name and nothing else): the spec's UNSUPPORTED methods
    # (an unknown vtable slot would show as an API the spec does not have).
    spec = apispec.load(ROOT / "schema" / "api")
    modes = {f"{m.interface}::{m.name}": m.mode for m in apigen.all_methods(spec)}
    apis = json.loads(trtrace("info", "--json", trace).stdout)["apis"]
    assert "PluginRegistry::getAllCreatorsRecursive" in apis
    assert [a for a in apis if modes.get(a, "unknown") in ("unsupported", "unknown")] == []
