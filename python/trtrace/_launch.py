"""Console scripts of the wheel: ``trtrace`` and ``tensorrt_player`` run the bundled programs."""

from __future__ import annotations

import os
import sys

from ._native import tool


def _exec(name: str) -> None:
    exe = tool(name)
    os.execv(exe, [name, *sys.argv[1:]])


def trtrace() -> None:
    """``trtrace ...``: the bundled C++ CLI (info, verify, capture, ...); its ``bench`` runs this
    interpreter's ``trtrace.bench``."""
    os.environ.setdefault("TRTRACE_PYTHON", sys.executable)
    _exec("trtrace")


def player() -> None:
    """``tensorrt_player ...``: the bundled player."""
    _exec("tensorrt_player")
