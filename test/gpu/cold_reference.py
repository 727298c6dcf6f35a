#!/usr/bin/env python3
"""Independent reference for commcost's cold-start experiment at one rank (not the product's code).

Each iteration is a fresh Python process that loads NCCL and the CUDA driver through ctypes and
times, with time.perf_counter_ns around each call: the NCCL dlopen, cuInit + primary context,
the first ncclGetUniqueId, the first ncclCommInitRank (cold, NCCL's kernel load included), its
first 1 MiB allreduce (stream synchronize included), then a second init and first allreduce in
the same process (warm). One rank only: the multi-rank cold start is timed by commcost itself.

Usage: cold_reference.py --nccl /path/libnccl.so.2 [--iterations 5] [--json out.json]
Prints one JSON object: {"ncclPath", "iterations", "steps": {step: {median, min, max, n, samples}},
"ratios": {"coldOverWarm": median(cold)/median(warm)}} with every figure in ms.
"""
import argparse
import ctypes
import json
import statistics
import subprocess
import sys
import time

MiB = 1 << 20


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def check(result, what):
    if result != 0:
        raise RuntimeError(f"{what} failed with {result}")


def one_process(nccl_path):
    """Runs in a fresh process: returns {step: ms}."""
    ms = lambda t0: (time.perf_counter_ns() - t0) / 1e6
    out = {}
    cuda = ctypes.CDLL("libcuda.so.1")
    t0 = time.perf_counter_ns()
    nccl = ctypes.CDLL(nccl_path)
    out["ncclLoad"] = ms(t0)
    t0 = time.perf_counter_ns()
    check(cuda.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    out["cudaContext"] = ms(t0)
    buf = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(buf), MiB), "cuMemAlloc")
    stream = ctypes.c_void_p()
    check(cuda.cuStreamCreate(ctypes.byref(stream), 1), "cuStreamCreate")
    nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId, ctypes.c_int]
    nccl.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    nccl.ncclCommDestroy.argtypes = [ctypes.c_void_p]

    def init_and_first(prefix):
        uid = UniqueId()
        t0 = time.perf_counter_ns()
        check(nccl.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        if prefix == "cold":
            out["uniqueId"] = ms(t0)
        comm = ctypes.c_void_p()
        t0 = time.perf_counter_ns()
        check(nccl.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0), "ncclCommInitRank")
        out[f"{prefix}Init"] = ms(t0)
        t0 = time.perf_counter_ns()
        check(nccl.ncclAllReduce(buf.value, buf.value, MiB // 4, 7, 0, comm, stream), "ncclAllReduce")
        check(cuda.cuStreamSynchronize(stream), "cuStreamSynchronize")
        out[f"{prefix}First"] = ms(t0)
        out[prefix] = out[f"{prefix}Init"] + out[f"{prefix}First"]
        check(nccl.ncclCommDestroy(comm), "ncclCommDestroy")

    init_and_first("cold")
    init_and_first("warm")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nccl", required=True)
    ap.add_argument("--iterations", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(one_process(a.nccl)))
        return
    samples = {}
    for _ in range(a.iterations):
        p = subprocess.run([sys.executable, __file__, "--child", "--nccl", a.nccl], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            sys.exit(f"cold_reference: a fresh process failed: {p.stderr.strip()[-400:]}")
        for k, v in json.loads(p.stdout).items():
            samples.setdefault(k, []).append(v)
    steps = {k: {"median": statistics.median(v), "min": min(v), "max": max(v), "n": len(v), "samples": v} for k, v in samples.items()}
    result = {"ncclPath": a.nccl, "iterations": a.iterations, "steps": steps,
              "ratios": {"coldOverWarm": steps["cold"]["median"] / steps["warm"]["median"]}}
    text = json.dumps(result, indent=1)
    if a.json:
        with open(a.json, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
