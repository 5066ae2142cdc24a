"""Weights changed after add*() and before the build (issue 23, class 10), on the real library.

TensorRT reads weights at build time, so an app may fill or change its arrays in place after passing
them (tests/apps/change_weights_before_build.py). The capture must record what the library read:
before each build it reads every weight the network's layers hold again and, for each that changed,
records a setter call on that layer with the new bytes, marked as synthesized (docs/design.md,
"Weights"). The first bytes, gone before a capture worker read them, are stored Replaced, not Lost
(docs/format.md). The player then builds the app's engine(s) exactly.
"""

import re

import pytest

from conftest import capture, play, trtrace

POLICIES = {
    "none": {},
    "every_call": {"TRT_SHIM_FLUSH_AFTER_EVERY_CALL": "1"},
    "on_build": {"TRT_SHIM_FLUSH_ON_BUILD": "1"},
}
SYNTHESIZED = '"synthesized by the capture'


@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("rebuild", [False, True])
def test_weights_changed_before_the_build_replay_the_same_engine(tmp, policy, rebuild):
    trace = tmp / "t.trtrace"
    proc = capture(
        "change_weights_before_build.py",
        trace,
        "--out",
        tmp / "app",
        *(["--rebuild"] if rebuild else []),
        env=POLICIES[policy],
    )
    summary = [line for line in proc.stderr.splitlines() if line.startswith("trtrace:")]
    assert len(summary) == 1 and "released by the app" not in summary[0], summary
    verify = trtrace("verify", trace)
    assert verify.stdout.startswith(f"{trace}: OK") and "lost" not in verify.stdout, verify.stdout
    # The placeholders of the kernel and the big constant (blobs) stay queued until the drain after
    # the build (unless a worker happened to read them first), and no source holds them then:
    # Replaced. A flush after every call writes them at the call instead.
    replaced = "" if policy == "every_call" else r"(, [12] replaced before the build)?"
    assert re.search(rf"B{replaced}\)$", verify.stdout.rstrip()), verify.stdout
    info = trtrace("info", trace)
    assert "lost" not in info.stdout.lower(), info.stdout
    # The synthesized setters: the convolution's kernel and bias, both constants; before each build.
    lines = trtrace("dump", trace).stdout.splitlines()
    builds = [i for i, line in enumerate(lines) if "buildSerializedNetwork" in line]
    synthesized = [i for i, line in enumerate(lines) if SYNTHESIZED in line]
    assert len(builds) == (2 if rebuild else 1), lines
    assert sum(i < builds[0] for i in synthesized) == 4, lines
    first = [lines[i] for i in synthesized if i < builds[0]]
    for setter in ("ConvolutionLayer::setKernelWeights", "ConvolutionLayer::setBiasWeights"):
        assert sum(setter in line for line in first) == 1, first
    assert sum("ConstantLayer::setWeights" in line for line in first) == 2, first
    if rebuild:  # only the two constants changed again
        assert len(synthesized) == 6 and all("ConstantLayer::setWeights" in lines[i] for i in synthesized[4:]), lines
    if rebuild:
        # The player does not replay one network built twice yet, changed weights or not (it lets a
        # network's weights go after its first build): the capture side above is what is checked.
        return
    out = play(trace, tmp / "replay", "--check", check=False)
    assert out.returncode == 0, out.stderr
    assert "released by the app" not in out.stderr, out.stderr
    assert (tmp / "replay").read_bytes() == (tmp / "app").read_bytes()


def test_weights_released_before_a_network_never_built_stay_lost(tmp):
    """The other side of the rule: weights unmapped before the unbuilt network is destroyed are
    Lost (tests/test_capture_faults.py has the whole check); nothing is synthesized for them."""
    trace = tmp / "t.trtrace"
    proc = capture("release_weights_early.py", trace, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "released", proc.stderr
    assert " lost at capture" in trtrace("verify", trace).stdout
    assert SYNTHESIZED not in trtrace("dump", trace).stdout
