#!/usr/bin/env python3
"""Generates every per-method artefact from the API spec (docs/api-spec.md).

    apigen.py --spec schema/api --out <dir> [--update-lock]

Outputs (build tree, never committed), one module per file family:
  apimodel.py (ids, recorded methods, C++ spelling, typed parameter descriptions, flags) is what
  gen_abi, gen_table, gen_capture, gen_replay and gen_conformance share.
  trtrace/api_abi.h       ABI declarations: enums, structs, aliases, apiv vtable classes
  trtrace/api_table.h     API ids (append-only, from schema/api/ids.lock), descriptor table
  api_table.cpp           names and argument names of every API id (self-describing traces)
  capture_gen.inc         capture shim: one recording wrapper class per interface + factories
  replay_gen.inc          player: one dispatch function per API id + the dispatch table

Ids: schema/api/ids.lock maps each method key (interface, name, parameter types) to its id.
Ids never move; a method missing from the lock gets the next free id (with a note to run
--update-lock so the assignment is committed). Removed methods keep their ids reserved.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import apispec  # noqa: E402
from apimodel import Cpp, all_methods, assign_idents, assign_ids, check_overrides  # noqa: E402,F401
from apispec import SpecError  # noqa: E402
from gen_abi import gen_abi  # noqa: E402
from gen_capture import entries_json, gen_capture, gen_capture_entries, gen_capture_override_decls  # noqa: E402
from gen_conformance import gen_conformance  # noqa: E402
from gen_python import python_names  # noqa: E402
from gen_replay import gen_replay, gen_replay_override_decls  # noqa: E402
from gen_table import gen_table_cpp, gen_table_h  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", required=True, help="folder with *.api files (and ids.lock)")
    ap.add_argument("--out", help="output folder")
    ap.add_argument("--update-lock", action="store_true", help="append new ids to ids.lock")
    ap.add_argument(
        "--drop",
        action="append",
        default=[],
        metavar="Interface.method",
        help="leave a method out (tests: a shim that does not know a method the app calls)",
    )
    ap.add_argument(
        "--python-names",
        action="store_true",
        help="print every API id's Python spelling as JSON (the bindings conformance test)",
    )
    ap.add_argument(
        "--entries",
        action="store_true",
        help="print the C entry points and the unexported symbols as JSON (the export-set test)",
    )
    args = ap.parse_args()
    spec_dir = pathlib.Path(args.spec)
    try:
        spec = apispec.load(spec_dir)
        for key in args.drop:
            itf_name, method = key.split(".", 1)
            itf = spec.interfaces[itf_name]
            itf.methods = [m for m in itf.methods if m.name != method]
        assign_ids(spec, spec_dir / "ids.lock", args.update_lock)
        assign_idents(spec)
        check_overrides(spec)
        if args.python_names:
            print(json.dumps(python_names(spec)))
            return 0
        if args.entries:
            print(json.dumps(entries_json(spec)))
            return 0
        cpp = Cpp(spec)
        ov = spec.overrides
        files = {
            "trtrace/api_abi.h": gen_abi(spec, cpp),
            "trtrace/api_table.h": gen_table_h(spec),
            "api_table.cpp": gen_table_cpp(spec),
            "capture_gen.inc": gen_capture(spec, cpp, ov),
            "replay_gen.inc": gen_replay(spec, cpp, ov),
            "capture_overrides.h": gen_capture_override_decls(spec, cpp),
            "capture_entries.inc": gen_capture_entries(spec, cpp),
            "replay_overrides.h": gen_replay_override_decls(spec, cpp),
            "conformance_gen.inc": gen_conformance(spec, cpp),
        }
    except SpecError as e:
        print(f"apigen: error: {e}", file=sys.stderr)
        return 1
    if args.out:
        out = pathlib.Path(args.out)
        for rel, text in files.items():
            p = out / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            if not p.exists() or p.read_text() != text:  # keep timestamps stable: no needless rebuilds
                p.write_text(text)
    n = len(all_methods(spec))
    print(f"apigen: {len(spec.interfaces)} interfaces, {n} API ids, {len(spec.enums)} enums", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
