#!/usr/bin/env python3
"""Throughput of `trtrace convert` (issue #7) on large synthetic NVIDIA-layout captures.

    python3 bench/convert_bench.py --build build [--gib 1.0] [--reps 3] [--keep DIR] [--update-md]

Generates, without TensorRT, three JSON+BIN captures in NVIDIA's exact text layout (sorted keys,
indent 4; docs/json-bin-layout.md), each about --gib GiB of JSON+BIN:
  calls    many small records (a matmul chain: addConstant/getOutput/addMatrixMultiply/setName),
           weights of 64 floats in the BIN           -> JSON parsing dominates
  inline   the same chain with every weight inline (4096 floats as JSON numbers, what
           TRT_SHIM_INLINE_WEIGHTS_LOWER_EQUAL_THAN=large gives) -> number parsing dominates
  weights  few records, 4 MiB weights in the BIN, every second one a repeat of an earlier one
           (content dedup)                            -> BIN hashing/writing dominates
and times `trtrace convert IN.json OUT.trtrace` (the default zstd level 1, and raw) and `trtrace convert OUT.trtrace
BACK.json` with /usr/bin/time (wall, peak RSS). MB/s = (JSON + BIN bytes) / wall seconds, for both
directions (the bytes of the NVIDIA-layout pair, the same for both). With --update-md the table goes
into BENCHMARKS.md between the <!-- convert:begin --> and <!-- convert:end --> markers.
"""

import argparse
import os
import pathlib
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]


def rec(fields, ind=8):
    """One api_calls record, keys sorted, json.dumps(indent=4) layout at depth 2."""
    pad, pad2 = " " * ind, " " * (ind + 4)
    lines = []
    for k in sorted(fields):
        lines.append(f'{pad2}"{k}": {fields[k]}')
    return pad + "{\n" + ",\n".join(lines) + "\n" + pad + "}"


def obj(n, ind):
    return "{\n" + " " * (ind + 8) + f'"object": {n}\n' + " " * (ind + 4) + "}"


def arr(vals, ind):
    p = " " * (ind + 8)
    return "[\n" + ",\n".join(p + v for v in vals) + "\n" + " " * (ind + 4) + "]"


def weights(ind, count, wid, offset=None, inline=None):
    p = " " * (ind + 8)
    f = {"count": str(count), "id": str(wid), "type": "0"}
    if offset is not None:
        f["offset"] = str(offset)
    if inline is not None:
        f["inline"] = "[\n" + ",\n".join(" " * (ind + 12) + v for v in inline) + "\n" + p + "]"
    return "{\n" + ",\n".join(f'{p}"{k}": {f[k]}' for k in sorted(f)) + "\n" + " " * (ind + 4) + "}"


def generate(path, kind, target_bytes, seed=1):
    rnd = random.Random(seed)
    binp = path.with_suffix(".bin")
    cols = {"calls": 8, "inline": 64, "weights": 1024}[kind]
    count = {"calls": 64, "inline": 4096, "weights": 1 << 20}[kind]
    layers = {"calls": 64, "inline": 16, "weights": 64}[kind]
    inline_vals = []
    if kind == "inline":  # distinct per layer: our writer would turn repeats into {"id": N}
        inline_vals = [[repr(rnd.uniform(-1, 1)) for _ in range(count)] for _ in range(layers)]
    payloads = []
    if kind != "inline":
        for i in range(8 if kind == "weights" else 64):
            payloads.append(
                os.urandom(count * 4)
                if kind == "weights"
                else struct.pack(f"{count}f", *(rnd.uniform(-1, 1) for _ in range(count)))
            )
    with open(path, "w") as js, open(binp, "wb") as bf:
        js.write('{\n    "api_calls": [\n')
        idx, nid, off, written = 0, 0, 0, 0
        out = []

        def emit(fields, ret=None):
            nonlocal idx, nid
            fields["api_index"] = str(idx)
            if ret:
                fields["return"] = obj(nid, 8)
                nid += 1
            out.append(rec(fields))
            idx += 1
            return nid - 1

        emit({"class": '""', "function": '"createInferBuilder_INTERNAL"', "object": "-1", "version": "10601"}, True)
        net_no = 0
        while written < target_bytes:
            net = emit({"class": '"Builder"', "function": '"createNetworkV2"', "object": "0", "flags": "0"}, True)
            prev = emit(
                {
                    "class": '"NetworkDefinition"',
                    "function": '"addInput"',
                    "object": str(net),
                    "name": '"x"',
                    "type": "0",
                    "dimensions": arr(["1", str(cols)], 8),
                },
                True,
            )
            wid = 0
            for layer in range(layers):
                if kind == "inline":
                    w = weights(8, count, wid, inline=inline_vals[layer])
                else:
                    # calls: 64 distinct payloads per network; weights: every second one a repeat
                    data = payloads[layer % len(payloads)] if (kind == "calls" or layer % 2) else os.urandom(count * 4)
                    bf.write(data)
                    w = weights(8, count, wid, offset=off)
                    off += len(data)
                    written += len(data)
                wid += 1
                c = emit(
                    {
                        "class": '"NetworkDefinition"',
                        "function": '"addConstant"',
                        "object": str(net),
                        "dimensions": arr([str(cols), str(count // cols)], 8),
                        "weights": w,
                    },
                    True,
                )
                t = emit({"class": '"Layer"', "function": '"getOutput"', "object": str(c), "index": "0"}, True)
                m = emit(
                    {
                        "class": '"NetworkDefinition"',
                        "function": '"addMatrixMultiply"',
                        "object": str(net),
                        "input0": obj(prev, 8),
                        "op0": "0",
                        "input1": obj(t, 8),
                        "op1": "0",
                    },
                    True,
                )
                prev = emit({"class": '"Layer"', "function": '"getOutput"', "object": str(m), "index": "0"}, True)
                emit(
                    {"class": '"Layer"', "function": '"setName"', "object": str(m), "name": f'"layer_{net_no}_{layer}"'}
                )
                if len(out) > 2000:
                    s = ",\n".join(out) + ",\n"
                    js.write(s)
                    written += len(s)
                    out.clear()
                if written >= target_bytes:
                    break
            emit(
                {"class": '"NetworkDefinition"', "function": '"markOutput"', "object": str(net), "tensor": obj(prev, 8)}
            )
            cfg = emit({"class": '"Builder"', "function": '"createBuilderConfig"', "object": "0"}, True)
            emit(
                {
                    "class": '"Builder"',
                    "function": '"buildSerializedNetwork"',
                    "object": "0",
                    "network": obj(net, 8),
                    "config": obj(cfg, 8),
                }
            )
            net_no += 1
        js.write(",\n".join(out))
        js.write('\n    ],\n    "output_bin": "' + binp.name + '",\n    "trt_version": 10601\n}')
    return idx


def timed(cmd):
    p = subprocess.run(["/usr/bin/time", "-f", "%e %M", *map(str, cmd)], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed:\n{p.stdout}\n{p.stderr}")
    wall, kb = p.stderr.strip().splitlines()[-1].split()
    return float(wall), int(kb) * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--gib", type=float, default=1.0, help="JSON+BIN size of each generated capture")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--kinds", default="calls,inline,weights")
    ap.add_argument("--keep", help="work folder to keep (default: a temporary one, deleted)")
    ap.add_argument("--update-md", action="store_true")
    a = ap.parse_args()
    trtrace = pathlib.Path(a.build) / "bin" / "trtrace"
    work = pathlib.Path(a.keep) if a.keep else pathlib.Path(tempfile.mkdtemp(prefix="convert_bench."))
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    try:
        for kind in a.kinds.split(","):
            js = work / f"{kind}.json"
            calls = generate(js, kind, int(a.gib * 2**30))
            jb, bb = js.stat().st_size, js.with_suffix(".bin").stat().st_size
            total = jb + bb
            res = {}
            for label, cmd, dst in (
                (
                    "json→trace (zstd 1, the default)",
                    [trtrace, "convert", "-q", js, work / "out.trtrace"],
                    work / "out.trtrace",
                ),
                (
                    "json→trace (raw)",
                    [trtrace, "convert", "-q", "--level", "0", js, work / "raw.trtrace"],
                    work / "raw.trtrace",
                ),
                (
                    "trace→json",
                    [trtrace, "convert", "-q", work / "out.trtrace", work / "back.json"],
                    work / "back.json",
                ),
            ):
                runs = []
                for _ in range(a.reps):
                    runs.append(timed(cmd))
                best = min(r[0] for r in runs)
                res[label] = (total / 1e6 / best, sorted(r[0] for r in runs)[len(runs) // 2], max(r[1] for r in runs))
            same = (work / "back.json").stat().st_size + (work / "back.bin").stat().st_size
            rows.append((kind, calls, jb, bb, res, same))
            print(
                f"{kind}: {calls} calls, JSON {jb / 2**20:.0f} MiB + BIN {bb / 2**20:.0f} MiB; "
                + "; ".join(
                    f"{k} {v[0]:.0f} MB/s (median {total / 1e6 / v[1]:.0f}), peak RSS {v[2] / 2**20:.0f} MiB"
                    for k, v in res.items()
                )
                + f"; JSON+BIN written back: {same / 2**20:.0f} MiB",
                flush=True,
            )
            for f in work.iterdir():
                f.unlink()
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    lines = [
        "| capture | calls | JSON + BIN | JSON→trace zstd 1 (default): MB/s, peak RSS | JSON→trace raw | trace→JSON | JSON+BIN written back |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, calls, jb, bb, res, same in rows:
        cells = [f"{v[0]:.0f} MB/s, {v[2] / 2**20:.0f} MiB" for v in res.values()]
        lines.append(
            f"| {kind} | {calls:,} | {jb / 2**20:.0f} MiB + {bb / 2**20:.0f} MiB | "
            + " | ".join(cells)
            + f" | {same / 2**20:.0f} MiB |"
        )
    table = "\n".join(lines)
    print(table)
    if a.update_md:
        md = ROOT / "BENCHMARKS.md"
        text = md.read_text()
        block = f"<!-- convert:begin -->\n{table}\n<!-- convert:end -->"
        text = re.sub(r"<!-- convert:begin -->.*?<!-- convert:end -->", lambda m: block, text, flags=re.S)
        md.write_text(text)


if __name__ == "__main__":
    sys.exit(main())
