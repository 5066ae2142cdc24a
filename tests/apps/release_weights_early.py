#!/usr/bin/env python3
"""A real TensorRT-RTX client that gives its weights back before it destroys an unbuilt network.

TensorRT reads weights only when it builds, so an app that never builds a network may unmap them
at any time. This one adds --blobs constants of --mib MiB each, every one in its own anonymous
mapping (ctypes mmap: the memory is really gone afterwards, as with a file mapping closed early or
a large NumPy array freed), unmaps them all at once, then destroys the network without building.
A capture must not read those bytes after the unmap (it would crash the app) nor record the bytes
that were there afterwards; exit 0 and "released" on stdout when the app got through.
"""

import argparse
import ctypes
import sys

import numpy as np
import tensorrt_rtx as trt

PROT_READ, PROT_WRITE, MAP_PRIVATE, MAP_ANONYMOUS = 1, 2, 0x02, 0x20


def mapped_floats(libc, count, seed):
    """`count` random float32 values in an anonymous mapping of their own; (address, array)."""
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    addr = libc.mmap(None, count * 4, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        sys.exit("mmap failed")
    arr = np.frombuffer((ctypes.c_char * (count * 4)).from_address(addr), dtype=np.float32)
    arr[:] = np.random.default_rng(seed).random(count, dtype=np.float32)
    return addr, arr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--blobs", type=int, default=4)
    ap.add_argument("--mib", type=int, default=32)
    args = ap.parse_args()
    libc = ctypes.CDLL(None)
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    builder = trt.Builder(trt.Logger(trt.Logger.WARNING))
    net = builder.create_network()
    count = args.mib << 18  # float32 values in --mib MiB
    maps = []
    for i in range(args.blobs):
        addr, arr = mapped_floats(libc, count, seed=i)
        c = net.add_constant((count,), trt.Weights(arr))
        net.mark_output(c.get_output(0))
        maps.append(addr)
    for addr in maps:  # the weights are gone; the network was never built
        if libc.munmap(addr, count * 4) != 0:
            sys.exit("munmap failed")
    del net
    del builder
    print("released")


if __name__ == "__main__":
    main()
