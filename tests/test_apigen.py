"""The API spec drives everything: one added method reaches the shim, the player and the names;
ids are append-only; spec errors are one clear line."""

import shutil
import subprocess
import sys

from conftest import ROOT

GEN = ROOT / "schema" / "apigen.py"


def generate(spec_dir, out_dir, *extra):
    return subprocess.run(
        [sys.executable, str(GEN), "--spec", str(spec_dir), "--out", str(out_dir), *extra],
        capture_output=True,
        text=True,
    )


def copy_spec(tmp):
    spec = tmp / "api"
    shutil.copytree(ROOT / "schema" / "api", spec)
    return spec


def test_one_added_method_reaches_shim_player_and_names(tmp):
    spec = copy_spec(tmp)
    text = (spec / "30-interfaces.api").read_text()
    # Append a method to the end of the SoftMaxLayer vtable (one line, one place).
    text = text.replace("interface SoftMaxLayer : Layer\n", "interface SoftMaxLayer : Layer\n", 1)
    lines = text.splitlines()
    i = lines.index("interface SoftMaxLayer : Layer")
    j = i + 1
    while j < len(lines) and lines[j].startswith("  "):
        j += 1
    lines.insert(j, "  setTemperature(t: f32) -> bool")
    (spec / "30-interfaces.api").write_text("\n".join(lines) + "\n")
    proc = generate(spec, tmp / "out")
    assert proc.returncode == 0, proc.stderr
    assert "not in ids.lock" in proc.stderr  # new id assigned, lock update suggested
    out = tmp / "out"
    assert "setTemperature(float t) noexcept override" in (out / "capture_gen.inc").read_text()
    assert "self->setTemperature(a0)" in (out / "replay_gen.inc").read_text()
    assert '"SoftMaxLayer", "setTemperature"' in (out / "api_table.cpp").read_text()
    assert "virtual bool setTemperature(float t) noexcept = 0;" in (out / "trtrace" / "api_abi.h").read_text()


def test_ids_are_append_only(tmp):
    spec = copy_spec(tmp)
    lock_before = (spec / "ids.lock").read_text()
    # Insert a method at the START of an interface: existing ids must not move.
    text = (
        (spec / "30-interfaces.api")
        .read_text()
        .replace("interface SoftMaxLayer : Layer\n", "interface SoftMaxLayer : Layer\n  newFirst()\n", 1)
    )
    (spec / "30-interfaces.api").write_text(text)
    assert generate(spec, tmp / "out", "--update-lock").returncode == 0
    lock_after = (spec / "ids.lock").read_text()
    assert lock_after.startswith(lock_before.rstrip("\n").rsplit("\n", 0)[0][:200])
    before = {l.split(" ", 2)[2]: l.split(" ", 2)[1] for l in lock_before.splitlines() if l.startswith("api ")}
    after = {l.split(" ", 2)[2]: l.split(" ", 2)[1] for l in lock_after.splitlines() if l.startswith("api ")}
    assert all(after[k] == v for k, v in before.items())
    new_id = int(after["SoftMaxLayer.newFirst()"])
    assert new_id == max(int(v) for v in before.values()) + 1


def test_committed_lock_covers_the_spec(tmp):
    proc = generate(ROOT / "schema" / "api", tmp / "out")
    assert proc.returncode == 0, proc.stderr
    assert "not in ids.lock" not in proc.stderr, "run: python3 schema/apigen.py --spec schema/api --update-lock"


def test_spec_error_is_one_clear_line(tmp):
    spec = copy_spec(tmp)
    (spec / "99-bad.api").write_text("interface Oops\n  broken(x: NoSuchType)\n")
    proc = generate(spec, tmp / "out")
    assert proc.returncode == 1
    assert proc.stderr.strip() == "apigen: error: 99-bad.api:2: unknown type 'NoSuchType'" or (
        "99-bad.api" in proc.stderr and "NoSuchType" in proc.stderr and proc.stderr.count("\n") == 1
    )


# Hand-written C++ never tests an API's kind or name as a string: what a parameter is, whose length
# a count is, whether a method is a getter, creator or deletion comes typed from the generator
# (api::ParamDesc, api::flag). These patterns are the ways such a test is spelled.
_NAME_TESTS = [
    r'\b(method|interface|ret|text|kind)\s*(==|!=)\s*"',  # d->method == "~", kind == "foreign"
    r'"\s*(==|!=)\s*\w*(->|\.)(method|interface|ret|text)\b',  # "~" == d->method
    r"\b(method|interface|ret|text)\s*\.\s*(starts_with|ends_with|find|compare|rfind)\s*\(",
    r"\bkinds\s*\[",  # the old per-parameter kind strings
    r'"(handle|handles|array|enum|struct):',  # a kind spelled as text
    r'\b(enumName|ifaceName|enumeratorName)\([^)]*\)\s*(==|!=)\s*"',  # a type looked up by its name
    r'\b(iface|api|desc)\w*(->|\.)name\)?\s*(==|!=)\s*"',  # an interface known by its name
]


def hand_written_cpp():
    for top in ("capture", "replay", "convert", "trace", "libinfo", "cli", "tests", "bench"):
        folder = ROOT / top
        if folder.is_dir():
            yield from (p for p in folder.rglob("*") if p.suffix in (".cpp", ".h", ".inc", ".cc"))


def test_no_string_tests_on_api_kinds_or_names():
    import re

    found = []
    for path in hand_written_cpp():
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            code = line.split("//", 1)[0]
            if any(re.search(p, code) for p in _NAME_TESTS):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not found, "string tests on API kinds/names (use api::ParamDesc / api::flag):\n" + "\n".join(found)


def test_the_scan_sees_a_name_test(tmp):
    # The patterns catch the forms such string tests take (a guard against a scan that sees nothing).
    import re

    samples = [
        'if (d->method == "~") {',
        'd->ret != "handle:HostMemory"',
        'd->method.starts_with("get")',
        'kind == "struct:Permutation"',
        "d.kinds[i]",
        'if (api::enumName(t) == "DataType") return t;',
        'if (std::string_view(iface->name) == "NetworkDefinition") drain();',
    ]
    assert all(any(re.search(p, s) for p in _NAME_TESTS) for s in samples)


def test_unknown_override_name_is_a_generator_error(tmp):
    spec = copy_spec(tmp)
    with open(spec / "90-overrides.api", "a") as f:
        f.write("override replay Builder.buildSerializedNetwrok\n")
    proc = generate(spec, tmp / "out")
    assert proc.returncode == 1
    assert "Builder.buildSerializedNetwrok: no such method" in proc.stderr and proc.stderr.count("\n") == 1


def test_counts_know_their_array(tmp):
    # [len=nbInputs] reaches the descriptor: the count names its array (the converter skips it).
    proc = generate(ROOT / "schema" / "api", tmp / "out")
    assert proc.returncode == 0, proc.stderr
    table = (tmp / "out" / "api_table.cpp").read_text()
    line = next(l for l in table.splitlines() if '"NetworkDefinition", "addConcatenation"' in l)
    pid = line.split(", ")[4]
    descs = next(l for l in table.splitlines() if l.startswith(f"constexpr ParamDesc {pid}[]"))
    assert '"handles:Tensor"}' in descs and 'Iface::None, false, 0, "i64"}' in descs


def test_hooks_are_checked_and_declared(tmp):
    # A hook names a recorded method; a hook and an override of one method is an error; a valid
    # hook is declared with the spec's types and called by the generated wrapper around the call.
    for n, (line, error) in enumerate(
        (
            ("hook capture Builder.noSuchMethod pre", "no such method"),
            ("hook replay Builder.buildSerializedNetwork during", "bad hook"),
            ("override replay Builder.buildSerializedNetwork", "overridden as a whole"),
        )
    ):
        spec = copy_spec(tmp / str(n))
        with open(spec / "90-overrides.api", "a") as f:
            f.write(line + "\n")
        proc = generate(spec, tmp / "out")
        assert proc.returncode == 1 and error in proc.stderr and proc.stderr.count("\n") == 1, (line, proc.stderr)
    proc = generate(ROOT / "schema" / "api", tmp / "ok")
    assert proc.returncode == 0, proc.stderr
    decls = (tmp / "ok" / "capture_overrides.h").read_text()
    assert "void post_Builder_buildSerializedNetwork(Call& c, Object* self, IHostMemory* result" in decls
    wrapper = (tmp / "ok" / "capture_gen.inc").read_text()
    assert "pre_Builder_buildSerializedNetwork(c, self, network, config);" in wrapper
    assert "after_Builder_buildSerializedNetwork(s);" in wrapper
    replay = (tmp / "ok" / "replay_gen.inc").read_text()
    assert "if (post_Builder_buildSerializedNetwork(x, r)) {" in replay
