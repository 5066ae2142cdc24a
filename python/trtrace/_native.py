"""Where trtrace's native parts are, and the ctypes binding of its C interface (trace/capi/trtrace_c.h).

The wheel holds them inside this package (``trtrace/bin``, ``trtrace/lib``). From a source build or
an install prefix, they are found beside the ``trtrace`` program on PATH (``<prefix>/bin/trtrace``
-> ``<prefix>/lib/libtrtrace_c.so``), the rule ``trtrace capture`` uses to find the shim.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import shutil
from typing import Optional

_HERE = pathlib.Path(__file__).resolve().parent


def prefixes() -> list[pathlib.Path]:
    """Install prefixes to look in, in order: this package (the wheel), then the trtrace on PATH."""
    out = [_HERE]
    found = shutil.which("trtrace")
    if found:
        out.append(pathlib.Path(found).resolve().parent.parent)
    return out


def tool(name: str) -> str:
    """The path of a bundled program (``trtrace``, ``tensorrt_player``)."""
    for p in prefixes():
        exe = p / "bin" / name
        if exe.is_file() and os.access(exe, os.X_OK):
            return str(exe)
    raise FileNotFoundError(f"trtrace: {name}: not installed (neither in {_HERE / 'bin'} nor beside a trtrace on PATH)")


_lib: Optional[ctypes.CDLL] = None


def lib() -> ctypes.CDLL:
    """The C interface, loaded once, with its function signatures declared."""
    global _lib
    if _lib is not None:
        return _lib
    for p in prefixes():
        so = p / "lib" / "libtrtrace_c.so"
        if so.is_file():
            break
    else:
        raise FileNotFoundError(
            f"trtrace: libtrtrace_c.so: not installed (neither in {_HERE / 'lib'} nor beside a trtrace on PATH)"
        )
    c = ctypes.CDLL(str(so))
    vp, u64, errp, intp = (
        ctypes.c_void_p,
        ctypes.c_uint64,
        ctypes.POINTER(ctypes.c_void_p),
        ctypes.POINTER(ctypes.c_int),
    )
    sigs = {
        "trtrace_open": (vp, [ctypes.c_char_p, errp, intp]),
        "trtrace_close": (None, [vp]),
        "trtrace_free": (None, [vp]),
        "trtrace_header_json": (vp, [vp, errp, intp]),
        "trtrace_calls_json": (vp, [vp, u64, u64, errp, intp]),
        "trtrace_blob": (
            ctypes.c_int,
            [vp, u64, u64, u64, ctypes.POINTER(vp), ctypes.POINTER(u64), ctypes.POINTER(vp), errp, intp],
        ),
        "trtrace_blob_release": (None, [vp]),
        "trtrace_verify_json": (vp, [vp, errp, intp]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(c, name)
        f.restype, f.argtypes = res, args
    _lib = c
    return c


def take_string(ptr: Optional[int]) -> str:
    """A string the C interface allocated, decoded and released."""
    if not ptr:
        return ""
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        lib().trtrace_free(ptr)
