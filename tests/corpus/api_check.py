#!/usr/bin/env python3
"""The corpus's Python API check (corpus_tools.py, tool "api"): opens a trace with trtrace.open,
takes Trace.verify()'s report and reads every weight, then prints one JSON line:
{"ok": verify's ok, "issues": n, "weights": n, "bytes": total, "problem": first weight that did not
read back its recorded size, or null}. A trace that cannot be opened: {"ok": false, "open": message}.

  api_check.py TRACE
"""

import json
import sys

import trtrace


def main(path):
    try:
        t = trtrace.open(path)
    except trtrace.TraceError as e:
        print(json.dumps({"ok": False, "open": str(e), "kind": e.kind}))
        return 0
    with t:
        report = t.verify()
        n = total = 0
        problem = None
        for w in t.weights:
            n += 1
            if w.storage == "random":
                continue
            try:
                a = w.array()
            except (trtrace.TraceError, ValueError) as e:
                problem = problem or f"weights #{n - 1}: {e}"
                continue
            total += a.nbytes
            if a.nbytes != w.nbytes and problem is None:
                problem = f"weights #{n - 1}: {a.nbytes} bytes read, {w.nbytes} recorded"
    print(
        json.dumps(
            {
                "ok": bool(report["ok"]),
                "issues": len(report.get("issues", [])),
                "weights": n,
                "bytes": total,
                "problem": problem,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
