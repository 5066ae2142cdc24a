"""What the test apps share: the end of every app, writing the engine its build made.

The apps run as scripts (python tests/apps/X.py), so their own folder is on sys.path and they
import this module by name."""

import sys


def save_engine(engine, path, label=None):
    """Writes the serialized `engine` to `path`, then prints `label path (N bytes)` when a label is
    given. A build that failed gives no engine: "build FAILED" on stderr and nothing written.
    Returns the app's exit status (0 written, 1 failed)."""
    if engine is None:
        print("build FAILED", file=sys.stderr)
        return 1
    with open(path, "wb") as f:
        f.write(engine)
    if label:
        print(f"{label} {path} ({engine.nbytes} bytes)")
    return 0
