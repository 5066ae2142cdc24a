"""trtrace diff aligns the two traces' calls (issue 24 item 4), on captures of the real library.

tests/apps/diff_variants.py builds one network; each option changes it in one known way. The diff
must report exactly that change: two inserted layers are the four calls that made them (not every
later call, shifted); a dropped layer is its calls deleted plus the one call whose input changed; a
changed kernel is one changed call, its weights; the same network with its calls in another order,
where order cannot matter, is equivalent; a trace is equivalent to itself.
"""

import json
import subprocess

import pytest

from conftest import TRTRACE, capture

VARIANTS = {
    "base": [],
    "extra2": ["--extra-layers", 2],
    "drop": ["--drop", 3],
    "kernel": ["--kernel-seed", 5],
    "reordered": ["--names-last", "--config-first"],
}


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("variants")
    for name, args in VARIANTS.items():
        capture("diff_variants.py", d / f"{name}.trtrace", "--out", d / f"{name}.engine", *args)
    return {name: d / f"{name}.trtrace" for name in VARIANTS}


def diff(a, b, *args):
    return subprocess.run([str(TRTRACE), "diff", str(a), str(b), *map(str, args)], capture_output=True, text=True)


def diff_json(a, b):
    p = diff(a, b, "--json")
    assert p.returncode in (0, 1), p.stdout + p.stderr
    return p.returncode, json.loads(p.stdout)


def network(j, label="0"):
    return next(n for n in j["networks"] if n["network"] == label)


def test_two_inserted_layers_are_exactly_the_inserted_calls(traces):
    rc, j = diff_json(traces["base"], traces["extra2"])
    assert rc == 1 and not j["equivalent"]
    assert (j["inserted"], j["deleted"], j["changed"]) == (4, 0, 0), j
    d = j["differences"]
    assert [x["kind"] for x in d] == ["inserted"] * 4
    assert [x["api"] for x in d] == ["NetworkDefinition::addActivation", "Layer::setName"] * 2
    assert [x["b"] for x in d if x["api"] == "Layer::setName"] == ['B:L7.setName("extra0")', 'B:L8.setName("extra1")']
    assert all(x["seq"][0] is None and x["seq"][1] > 0 for x in d)
    net = network(j)
    assert net["layers"] == [8, 10] and net["added"] == ["B:L7 ActivationLayer", "B:L8 ActivationLayer"]
    assert net["removed"] == [] and net["changed"] == [] and net["calls_added"] == net["calls_removed"] == []
    text = diff(traces["base"], traces["extra2"]).stdout
    assert text.startswith("different: 4 call differences (4 inserted, 0 deleted, 0 changed;"), text
    assert "first divergent call: call #" in text and " only in B: NetworkDefinition::addActivation: " in text, text
    # The other way round: the same calls, deleted.
    rc, back = diff_json(traces["extra2"], traces["base"])
    assert (back["inserted"], back["deleted"], back["changed"]) == (0, 4, 0)
    assert network(back)["removed"] == ["L7 ActivationLayer", "L8 ActivationLayer"]


def test_a_deleted_layer_is_its_calls_and_the_input_that_changed(traces):
    rc, j = diff_json(traces["base"], traces["drop"])
    assert rc == 1
    assert (j["inserted"], j["deleted"], j["changed"]) == (0, 3, 1), j
    deleted = [x["a"] for x in j["differences"] if x["kind"] == "deleted"]
    assert deleted == ["network.addActivation(L3.getOutput(0), enum27:1)", 'L4.setName("chain3")', "L4.getOutput(0)"], (
        deleted
    )
    changed = [x for x in j["differences"] if x["kind"] == "changed"]
    assert len(changed) == 1 and changed[0]["api"] == "NetworkDefinition::addActivation"
    assert changed[0]["argument"] == "input" and (changed[0]["a"], changed[0]["b"]) == (
        "Handle L4.getOutput(0)",
        "Handle L3.getOutput(0)",
    )
    net = network(j)
    assert net["removed"] == ["L4 ActivationLayer"] and net["added"] == []
    assert [(c["layer"], c["name"], c["weights_changed"]) for c in net["changed"]] == [([5, 4], "chain4", False)]


def test_a_changed_kernel_is_one_changed_call(traces):
    rc, j = diff_json(traces["base"], traces["kernel"])
    assert rc == 1 and j["blob_sets_differ"]
    assert (j["inserted"], j["deleted"], j["changed"]) == (0, 0, 1), j
    [d] = j["differences"]
    assert d["kind"] == "changed" and d["seq"][0] == d["seq"][1]
    assert d["api"] == "NetworkDefinition::addConvolutionNd" and d["argument"] == "kernelWeights"
    assert d["a"].startswith("WeightsBlob weights[type 0 x108 #") and d["a"] != d["b"]
    [c] = network(j)["changed"]
    assert (c["type"], c["name"], c["weights_changed"]) == ("ConvolutionLayer", "conv", True)


def test_the_same_network_in_another_call_order_is_equivalent(traces):
    p = diff(traces["base"], traces["reordered"])
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith("equivalent: ") and "in another order" in p.stdout, p.stdout
    rc, j = diff_json(traces["base"], traces["reordered"])
    assert j["equivalent"] and j["moved"] == 7 and j["differences"] == []


def test_a_trace_is_equivalent_to_itself(traces):
    for name, t in traces.items():
        rc, j = diff_json(t, t)
        assert rc == 0 and j["equivalent"] and j["differences"] == [] and j["moved"] == 0, name
        assert all(n["added"] == n["removed"] == n["changed"] == [] for n in j["networks"]), name
