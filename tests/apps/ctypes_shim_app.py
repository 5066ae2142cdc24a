#!/usr/bin/env python3
"""Drives the capture shim the way Torch-TensorRT drives NVIDIA's: loads it with
ctypes.CDLL(path, RTLD_GLOBAL) before importing TensorRT-RTX, names the real library in
TRT_SHIM_NVINFER_LIB_NAME only afterwards (os.environ), sets the JSON path through
trtShimSetOutputJsonFile, then builds build_cnn.py's network with the Python API.

usage: ctypes_shim_app.py SHIM REAL_LIB|- ENGINE_OUT JSON[,JSON...] [JSON_AFTER_BUILD]
Each JSON is set in turn before the build; JSON_AFTER_BUILD is set after it. Prints
"get: <path>" first and "set <path>: <result>" + "get: <path>" for each set. The signatures are
those of NVIDIA's shim: int trtShimSetOutputJsonFile(const char*) (1: taken, 0: not) and
size_t trtShimGetOutputJsonFile(char* buf, size_t size) (the length; the path copied into buf)."""

import ctypes
import os
import runpy
import sys

shim_path, real_lib, engine, json_before = sys.argv[1:5]
json_after = sys.argv[5] if len(sys.argv) > 5 else None
shim = ctypes.CDLL(shim_path, ctypes.RTLD_GLOBAL)
shim.trtShimGetOutputJsonFile.restype = ctypes.c_size_t
shim.trtShimGetOutputJsonFile.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
shim.trtShimSetOutputJsonFile.restype = ctypes.c_int
shim.trtShimSetOutputJsonFile.argtypes = [ctypes.c_char_p]


def get_json():
    n = shim.trtShimGetOutputJsonFile(None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    assert shim.trtShimGetOutputJsonFile(buf, n + 1) == n
    print("get:", buf.value.decode(), flush=True)


def set_json(path):
    print(f"set {path}:", shim.trtShimSetOutputJsonFile(path.encode()), flush=True)
    get_json()


get_json()
for p in json_before.split(","):
    set_json(p)
if real_lib != "-":  # "-": the shim finds the library itself (libinfo's order)
    os.environ["TRT_SHIM_NVINFER_LIB_NAME"] = real_lib  # after the shim is loaded, as Torch-TensorRT does
sys.argv = ["build_cnn.py", "--out", engine]
build_cnn = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "build_cnn.py"))
rc = build_cnn["main"]()
if json_after:
    set_json(json_after)
sys.exit(rc)
