"""trtrace: read and replay traces of TensorRT-RTX network builds from Python.

    import trtrace
    with trtrace.open("model.trtrace") as t:
        for call in t.calls:                     # every recorded call, in order
            print(call.name, call.args, call.result)
        for w in t.weights:                      # every weights argument
            a = w.array()                        # NumPy view of the trace's mapping (raw blob)
        print([b.ok for b in t.builds])
    trtrace.replay("model.trtrace", output="model.engine")

The reading goes through the same C++ reader as ``trtrace verify`` and ``tensorrt_player``
(libtrtrace_c.so, trace/capi/trtrace_c.h): a trace is checked as the tools check it, weights are
handed out only after their content hash matched (as the player does), ``Trace.verify()`` is
``trtrace verify``'s report, and ``replay`` runs the player itself. Argument names come from the
trace's own API descriptors and ``Value.spec`` (how an argument is recorded) from the API spec.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Union

import os

from . import _native

__all__ = ["open", "replay", "Trace", "Call", "Value", "Weights", "Build", "Network", "TraceError", "ReplayError"]
__version__ = "0.1.0"

PathLike = Union[str, "os.PathLike[str]"]


_SEQ_END = (1 << 64) - 1  # seqs are u64: a range of calls ends here at the latest


class TraceError(Exception):
    """A trace cannot be read: ``str(e)`` is the tools' one line; ``kind`` is "io", "corrupt",
    "truncated", "usage" or "empty" (``trtrace verify``'s exit codes 1, 2, 3 follow the same kinds)."""

    KINDS = {1: "io", 2: "corrupt", 3: "truncated", 4: "usage", 5: "empty"}

    def __init__(self, message: str, kind: int) -> None:
        super().__init__(message)
        self.kind = self.KINDS.get(kind, "io")


class ReplayError(Exception):
    """``tensorrt_player`` failed: ``code`` is its exit code (docs/errors.md), ``str(e)`` its first line."""

    def __init__(self, message: str, code: int, stderr: str) -> None:
        super().__init__(message)
        self.code = code
        self.stderr = stderr


def _check(result: Any, err: ctypes.c_void_p, kind: ctypes.c_int) -> Any:
    if not result and err.value:
        raise TraceError(_native.take_string(err.value), kind.value)
    return result


@dataclass(frozen=True)
class Weights:
    """A ``Weights`` value of a call: ``dtype`` (DataType name, e.g. "kFLOAT"), ``count`` elements,
    ``storage`` "blob" (in a blob of the trace), "inline" (bytes in the call) or "random" (only a seed
    was recorded); ``pointer`` is the identity of the application's values pointer (0 = unknown)."""

    trace: "Trace" = field(repr=False, compare=False)
    dtype: str
    count: int
    storage: str
    pointer: int
    nbytes: int
    hash: Optional[str] = None  # blob: 32 hex digits (XXH3-128), the blob's key with nbytes
    seed: Optional[int] = None  # random
    _numpy: str = field(default="", repr=False, compare=False)  # the API spec's NumPy dtype of dtype
    _key: Optional[tuple[int, int]] = field(default=None, repr=False, compare=False)
    _inline: Optional[bytes] = field(default=None, repr=False, compare=False)

    @property
    def numpy_dtype(self) -> str:
        """The NumPy dtype of one element (an array-interface descr, e.g. "<f4"), as the API spec
        gives it (``trtrace export`` writes the same); "|u1" where NumPy has no such type (BF16, FP8,
        E8M0; INT4 and FP4 packed two elements a byte): the bytes as the trace stores them."""
        return self._numpy or "|u1"

    def array(self) -> "Any":
        """The values as a 1-D NumPy array (read-only). A raw blob is a view of the trace's mapping
        (no copy, valid while the trace is open); a compressed blob is decoded into a buffer the
        array owns; inline values are copied from the call. Random weights have no stored values
        (ValueError). The blob's content hash is checked first (TraceError "corrupt" if damaged)."""
        import numpy as np

        if self.storage == "random":
            raise ValueError(
                f"weights of {self.count} {self.dtype} elements were recorded as random (seed {self.seed}): no values stored"
            )
        if self.storage == "inline":
            buf: Any = self._inline or b""
        else:
            assert self._key is not None
            buf = self.trace._blob(self._key[0], self._key[1], self.nbytes)
        dt = np.dtype(self.numpy_dtype)
        arr = np.frombuffer(buf, dtype=dt, count=len(buf) // dt.itemsize)
        arr.flags.writeable = False
        return arr


@dataclass(frozen=True)
class Value:
    """One argument or result: ``name`` (the API's parameter name), ``spec`` (how the API spec records
    it, e.g. "enum:DataType", "dims", "weights"; "" for an API this build does not know), ``kind`` (the
    trace's ValueKind, e.g. "I64", "Handle", "WeightsBlob"), ``value`` (number, string, list, handle;
    the Weights for weights) and ``enum`` ("DataType::kHALF") for enums."""

    name: str
    spec: str
    kind: str
    value: Any
    enum: Optional[str] = None


@dataclass(frozen=True)
class BuildOutcome:
    """What a build call returned at capture: ``ok``, the engine's size and XXH3-128, the errors the
    library logged."""

    ok: bool
    engine_size: int
    engine_hash: str
    errors: list[str]


@dataclass(frozen=True)
class Call:
    """One recorded call: ``name`` "Interface::method", ``args`` by parameter name, ``result``,
    ``status`` ("ok", "failed", "unsupported", "exception"), ``network`` (0-based as the player
    numbers networks; None outside a network), ``receiver`` (object handle; 0 for entry points),
    ``build`` the outcome recorded for a build call (None where the capture holds none: converted
    NVIDIA captures), ``is_build`` whether the call is a build (from the API spec, recorded or not)."""

    seq: int
    thread: int
    network: Optional[int]
    api: int
    interface: str
    method: str
    receiver: int
    args: dict[str, Value]
    result: Optional[Value]
    status: str
    message: str
    build: Optional[BuildOutcome]
    is_build: bool = False

    @property
    def name(self) -> str:
        return f"{self.interface}::{self.method}"


@dataclass(frozen=True)
class Build:
    """A build call and its outcome: ``network`` (0-based), ``seq`` of the call, ``ok``, engine size and
    hash, errors logged by the library (``ok`` None, size 0: the capture holds no outcome, as a converted
    NVIDIA capture)."""

    network: Optional[int]
    seq: int
    ok: Optional[bool]
    engine_size: int
    engine_hash: str
    errors: list[str]


@dataclass(frozen=True)
class Network:
    """One network of the trace (0-based, in creation order, as ``tensorrt_player`` numbers them)."""

    index: int
    calls: list[Call]

    @property
    def builds(self) -> list[Build]:
        return [_build_of(c) for c in self.calls if c.is_build]


def _build_of(c: Call) -> Build:
    b = c.build
    if b is None:
        return Build(c.network, c.seq, None, 0, "", [])
    return Build(c.network, c.seq, b.ok, b.engine_size, b.engine_hash, b.errors)


class Trace:
    """An open trace (see ``trtrace.open``). Close it (or use ``with``) when done; NumPy views of raw
    blobs point into its mapping, which stays mapped while any of them lives."""

    def __init__(self, path: PathLike) -> None:
        self._lib = _native.lib()
        err, kind = ctypes.c_void_p(), ctypes.c_int()
        self._handle: Optional[int] = None
        self._closed = False
        self._handle = _check(
            self._lib.trtrace_open(os.fsencode(path), ctypes.byref(err), ctypes.byref(kind)), err, kind
        )
        self.path = str(path)
        self.header: dict[str, Any] = json.loads(self._string(self._lib.trtrace_header_json))
        self._calls: Optional[list[Call]] = None

    # -- the C interface ------------------------------------------------------------------------
    def _ptr(self) -> int:
        if self._closed or not self._handle:
            raise ValueError(f"{self.path}: trace is closed")
        return self._handle

    def _string(self, fn: Any, *args: Any) -> str:
        err, kind = ctypes.c_void_p(), ctypes.c_int()
        p = _check(fn(self._ptr(), *args, ctypes.byref(err), ctypes.byref(kind)), err, kind)
        return _native.take_string(p)

    def _blob(self, hi: int, lo: int, length: int) -> Any:
        data, size, owner = ctypes.c_void_p(), ctypes.c_uint64(), ctypes.c_void_p()
        err, kind = ctypes.c_void_p(), ctypes.c_int()
        rc = self._lib.trtrace_blob(
            self._ptr(),
            hi,
            lo,
            length,
            ctypes.byref(data),
            ctypes.byref(size),
            ctypes.byref(owner),
            ctypes.byref(err),
            ctypes.byref(kind),
        )
        if rc != 0:
            raise TraceError(_native.take_string(err.value), kind.value)
        buf = (ctypes.c_ubyte * size.value).from_address(data.value or 0) if size.value else (ctypes.c_ubyte * 0)()
        setattr(buf, "_keep", self)  # a view keeps the trace (and its mapping) alive
        if owner.value:  # a decoded blob: its buffer is released when the last view goes
            setattr(buf, "_owner", _Owned(self._lib, owner.value))
        return buf

    # -- reading ----------------------------------------------------------------------------------
    def _value(self, v: dict[str, Any]) -> Value:
        kind = v["kind"]
        value = v.get("value")
        if kind.startswith("Weights"):
            storage = {"WeightsBlob": "blob", "WeightsInline": "inline", "WeightsRandom": "random"}[kind]
            nbytes = v.get("length", (v["count"] * v["bits"] + 7) // 8)
            key = (v["hash_hi"], v["hash_lo"]) if storage == "blob" else None
            value = Weights(
                self,
                v["dtype"],
                v["count"],
                storage,
                v["pointer"],
                nbytes,
                hash=f"{key[0]:016x}{key[1]:016x}" if key else None,
                seed=v.get("seed"),
                _numpy=v["numpy"],
                _key=key,
                _inline=bytes.fromhex(v["bytes"]) if storage == "inline" else None,
            )
        elif kind == "Bytes":
            value = bytes.fromhex(v["bytes"])
        return Value(v["name"], v["spec"], kind, value, v.get("enum"))

    def _call(self, c: dict[str, Any]) -> Call:
        b = c["build"]
        return Call(
            c["seq"],
            c["thread"],
            c["network"],
            c["api"],
            c["interface"],
            c["method"],
            c["receiver"],
            {a["name"]: self._value(a) for a in c["args"]},
            self._value(c["result"]) if c["result"] else None,
            c["status"],
            c["message"],
            BuildOutcome(b["ok"], b["engine_size"], b["engine_hash"], b["errors"]) if b else None,
            c["is_build"],
        )

    @property
    def calls(self) -> list[Call]:
        """Every call, in order (read once, then kept: for a trace of millions of calls, iterate the
        trace instead, which holds one batch at a time)."""
        if self._calls is None:
            self._calls = list(self._stream())
        return self._calls

    def _stream(self, batch: int = 4096) -> Iterator[Call]:
        """The calls in order, read `batch` at a time (each batch inflates only its segments)."""
        left, lo, span = len(self), 0, batch
        while left > 0:  # seqs may have gaps (a reduced trace keeps its calls' numbers): widen over them
            hi = min(lo + span, _SEQ_END)
            got = json.loads(self._string(self._lib.trtrace_calls_json, lo, hi))
            for c in got:
                yield self._call(c)
            left -= len(got)
            if not got and hi == _SEQ_END:  # the reader checks each segment's count: only damage gets here
                raise TraceError(f"{self.path}: holds fewer calls than its index says ({left} missing)", 2)
            lo, span = (got[-1]["seq"] + 1, batch) if got else (hi, span * 2)

    def __iter__(self) -> Iterator[Call]:
        """The calls in order; memory bounded by one batch unless `calls` was read already."""
        return iter(self._calls) if self._calls is not None else self._stream()

    def __len__(self) -> int:
        return int(self.header["calls"])

    @property
    def networks(self) -> list[Network]:
        """The networks, 0-based in creation order, each with its calls."""
        by: dict[int, list[Call]] = {}
        for c in self.calls:
            if c.network is not None:
                by.setdefault(c.network, []).append(c)
        return [Network(i, by[i]) for i in sorted(by)]

    @property
    def builds(self) -> list[Build]:
        """Every build call (by the API spec) with its recorded outcome."""
        return [_build_of(c) for c in self if c.is_build]

    @property
    def weights(self) -> list[Weights]:
        """Every weights argument or result, in call order (the same blob may appear several times)."""
        out = []
        for c in self:
            for v in [*c.args.values(), *([c.result] if c.result else [])]:
                if isinstance(v.value, Weights):
                    out.append(v.value)
        return out

    def verify(self) -> dict[str, Any]:
        """``trtrace verify``'s report: {"ok", "corrupt", "truncated", "segments", "calls", "blobs",
        "blob_bytes", "issues": [{"problem", "offset", "what"}]} (every block, checksum and blob hash)."""
        report: dict[str, Any] = json.loads(self._string(self._lib.trtrace_verify_json))
        return report

    def close(self) -> None:
        """No more reading through this object; the mapping goes when the last NumPy view of it does
        (views keep it alive, so they stay valid)."""
        self._closed = True
        self._calls = None

    def __enter__(self) -> "Trace":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if self._handle:
            self._lib.trtrace_close(self._handle)
            self._handle = None

    def __repr__(self) -> str:
        return f"<trtrace.Trace {self.path!r}: {self.header['calls']} calls, {self.header['library']} {self.header['library_version']}>"


class _Owned:
    """A decoded blob buffer of the C interface, released with the last array that uses it."""

    def __init__(self, lib: ctypes.CDLL, ptr: int) -> None:
        self._lib, self._ptr = lib, ptr

    def __del__(self) -> None:
        self._lib.trtrace_blob_release(self._ptr)


def open(path: PathLike) -> Trace:  # noqa: A001 (the module's verb, as in trtrace.open)
    """Opens a trace, or NVIDIA's JSON+BIN capture (read in place, as every tool reads it): TraceError
    (the tools' one line) when it cannot be read or is not a trace."""
    return Trace(path)


def replay(
    path: PathLike,
    output: Optional[PathLike] = None,
    *,
    check: bool = False,
    network: Optional[int] = None,
    lib: Optional[PathLike] = None,
    extra: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Rebuilds the engine(s) of a capture with ``tensorrt_player`` (the bundled one) on this Python
    environment's TensorRT-RTX (unless ``lib``): ``output`` is the engine file (several networks: ``<output>0``, ``<output>1``, ...). Returns the player's
    ``--json`` report; raises ReplayError with the player's exit code (docs/errors.md) and first line."""
    cmd = [_native.tool("tensorrt_player"), "-j", os.fspath(path), "--json", "-q"]
    if output is not None:
        cmd += ["-o", os.fspath(output)]
    if check:
        cmd.append("--check")
    if network is not None:
        cmd += ["--network", str(network)]
    if lib is not None:
        cmd += ["--lib", os.fspath(lib)]
    env = dict(os.environ)
    if "VIRTUAL_ENV" not in env and sys.prefix != sys.base_prefix:
        env["VIRTUAL_ENV"] = sys.prefix  # the player loads this environment's TensorRT-RTX
    proc = subprocess.run([*cmd, *extra], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise ReplayError(
            lines[0] if lines else f"tensorrt_player: exit {proc.returncode}", proc.returncode, proc.stderr
        )
    report: dict[str, Any] = json.loads(proc.stdout)
    return report
