#!/usr/bin/env python3
"""Traces in an OCI registry (docs/registry.md), measured against Debian's docker-registry on 127.0.0.1:
- dedup: ten captures of tests/apps/layered_weights.py, the first as it is and each later one with one
  layer's weights changed, pushed to one repository: what each push uploads, and how much the
  registry's storage grows over one capture's weights;
- throughput: push to an empty registry and pull of one capture, set against the disk's write rate
  (dd, fdatasync) and the registry's own rate over loopback (curl fetching the largest blob).
Renders the section between <!-- bench:registry begin --> and <!-- bench:registry end --> of
BENCHMARKS.md (--md; appended when missing). --smoke: small, checks that it runs and yields numbers.

    registry_bench.py --build BUILD --work DIR [--md BENCHMARKS.md] [--smoke]
"""

import argparse
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
APP = ROOT / "tests" / "apps" / "layered_weights.py"
MiB = 2**20

sys.path.insert(0, str(ROOT / "tests"))
from registry_server import Registry  # noqa: E402


def capture(build, out, *args):
    env = dict(os.environ, LD_PRELOAD=str(build / "lib" / "libtensorrt_shim.so"), TRT_SHIM_OUTPUT_FILE=str(out))
    asan = env.get("TRTRACE_ASAN_RUNTIME")  # a sanitizer tree's smoke run (make sanitize): its runtime first
    if asan:
        env["LD_PRELOAD"] = f"{asan}:libstdc++.so.6:{env['LD_PRELOAD']}"
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    subprocess.run(
        [sys.executable, str(APP), "--out", str(out.with_suffix(".engine")), *map(str, args)],
        env=env,
        check=True,
        capture_output=True,
    )
    return out


def trtrace(build, *args):
    t = time.monotonic()
    p = subprocess.run([str(build / "bin" / "trtrace"), *map(str, args)], capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"registry_bench: trtrace {' '.join(map(str, args))}: {p.stderr}")
    return p, time.monotonic() - t


def uploaded(stderr):
    m = re.search(r"(\d+) blobs: (\d+) uploaded \(([^)]*)\)", stderr)
    return int(m.group(2)), m.group(3)


def weights_bytes(build, trace):
    info = json.loads(trtrace(build, "info", "--json", trace)[0].stdout)
    return info["weights"]["stored_bytes"]


def dedup(build, work, reg, layers, size, n):
    rows, base_weights, after_first = [], 0, 0
    for k in range(n):
        t = capture(
            build,
            work / f"c{k}.trtrace",
            "--layers",
            layers,
            "--size",
            size,
            *(["--change", (k - 1) % layers] if k else []),
        )
        p, _ = trtrace(build, "push", "--plain-http", t, f"{reg.host}/bench/model:c{k}")
        blobs, up = uploaded(p.stderr)
        if k == 0:
            base_weights, after_first = weights_bytes(build, t), reg.bytes()
        rows.append((k, blobs, up))
        t.unlink()
        t.with_suffix(".engine").unlink()
    return {
        "layers": layers,
        "size": size,
        "weights": base_weights,
        "first": after_first,
        "growth": reg.bytes() - after_first,
        "rows": rows,
    }


def rate(nbytes, seconds):
    return nbytes / MiB / max(seconds, 1e-6)


def throughput(build, work, reg, layers, size):
    t = capture(build, work / "big.trtrace", "--layers", layers, "--size", size)
    n = t.stat().st_size
    _, push_s = trtrace(build, "push", "--plain-http", t, f"{reg.host}/bench/big:v1")
    out = work / "pulled.trtrace"
    ref = f"{reg.host}/bench/big:v1"
    _, direct_s = trtrace(build, "pull", "--plain-http", "--no-cache", ref, "-o", out)
    out.unlink()
    _, pull_s = trtrace(build, "pull", "--plain-http", ref, "-o", out)  # into the empty layer store, then out
    assert hashlib.sha256(out.read_bytes()).digest() == hashlib.sha256(t.read_bytes()).digest()
    out.unlink()
    _, again_s = trtrace(build, "pull", "--plain-http", ref, "-o", out)  # every layer already stored
    dd = work / "dd.bin"
    s = time.monotonic()
    subprocess.run(
        ["dd", "if=/dev/zero", f"of={dd}", "bs=1M", f"count={max(1, n // MiB)}", "conv=fdatasync"],
        check=True,
        capture_output=True,
    )
    disk = rate(max(1, n // MiB) * MiB, time.monotonic() - s)
    manifest = subprocess.run(
        [
            "curl",
            "-sf",
            "-H",
            "Accept: application/vnd.oci.image.manifest.v1+json",
            f"http://{reg.host}/v2/bench/big/manifests/v1",
        ],
        capture_output=True,
        check=True,
    ).stdout
    big = max(json.loads(manifest)["layers"], key=lambda l: l["size"])
    s = time.monotonic()
    subprocess.run(
        ["curl", "-sf", "-o", "/dev/null", f"http://{reg.host}/v2/bench/big/blobs/{big['digest']}"], check=True
    )
    loop = rate(big["size"], time.monotonic() - s)
    for f in (t, out, dd, t.with_suffix(".engine")):
        f.unlink()
    return {
        "bytes": n,
        "push": rate(n, push_s),
        "pull": rate(n, pull_s),
        "direct": rate(n, direct_s),
        "again": rate(n, again_s),
        "disk": disk,
        "loopback": loop,
    }


def render(d, tp, command):
    L = [
        f"Measured by `{command}` (bench/registry_bench.py) against Debian's docker-registry on 127.0.0.1, "
        f"filesystem storage. {len(d['rows'])} captures of `tests/apps/layered_weights.py` ({d['layers']} layers of "
        f"{d['size']}x{d['size']} fp32), each after the first with one layer's weights changed, pushed to one repository:",
        "",
        "| push | blobs uploaded | bytes uploaded |",
        "|---|---|---|",
    ]
    L += [f"| {k + 1} | {b} | {u} |" for k, b, u in d["rows"]]
    L += [
        "",
        f"One capture's weights: {d['weights'] / MiB:.2f} MiB; the registry after the first push: "
        f"{d['first'] / MiB:.2f} MiB; grown by the {len(d['rows']) - 1} later pushes: {d['growth'] / MiB:.2f} MiB = "
        f"**{d['growth'] / max(1, d['weights']):.2f}x one capture's weights** (each later push uploads the changed "
        f"weight, the call log and the config).",
        "",
        f"Throughput, one {tp['bytes'] / MiB:.0f} MiB capture (MiB/s): push to an empty registry {tp['push']:.0f}, "
        f"pull {tp['pull']:.0f} (into the layer store, then the output: each byte written twice), "
        f"pull --no-cache {tp['direct']:.0f} (straight to the output), pull again with every layer stored "
        f"{tp['again']:.0f} (a local copy); the disk's write rate (dd, fdatasync) {tp['disk']:.0f}; the registry's "
        f"own rate over loopback (curl, the largest blob) {tp['loopback']:.0f}.",
    ]
    return "\n".join(L)


def write_md(md, body):
    begin, end = "<!-- bench:registry begin -->", "<!-- bench:registry end -->"
    text = md.read_text() if md.exists() else ""
    block = f"{begin}\n{body}\n{end}"
    if begin in text and end in text:
        text = text[: text.index(begin)] + block + text[text.index(end) + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n## Traces in an OCI registry\n\n" + block + "\n"
    md.write_text(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True, type=pathlib.Path)
    ap.add_argument("--work", required=True, type=pathlib.Path)
    ap.add_argument("--md", type=pathlib.Path)
    ap.add_argument("--command", default="make bench")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    if not shutil.which("docker-registry"):
        sys.exit("registry_bench: docker-registry is missing (tools/setup.sh installs it)")
    a.work.mkdir(parents=True, exist_ok=True)
    os.environ["TRTRACE_OCI_CACHE"] = str(a.work / "oci-cache")  # the pulls' layer store: ours, never ~/.cache
    reg = Registry(a.work)
    try:
        d = dedup(a.build, a.work, reg, *((4, 256, 3) if a.smoke else (16, 512, 10)))
        tp = throughput(a.build, a.work, reg, *((2, 256) if a.smoke else (8, 2048)))
    finally:
        reg.stop()
        shutil.rmtree(a.work / "storage", ignore_errors=True)
        shutil.rmtree(a.work / "oci-cache", ignore_errors=True)
    body = render(d, tp, a.command)
    print(body)
    if a.md:
        write_md(a.md, body)


if __name__ == "__main__":
    main()
