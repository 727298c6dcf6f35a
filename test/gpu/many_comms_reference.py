#!/usr/bin/env python3
"""Independent check of one point of commcost's many-comms curve (issue #29): N one-process
communicators made by ncclCommInitRank on GPU 0, each warmed by a 1 MiB float32 allreduce, with the
GPU's memory read by nvidia-smi (memory.used) and cuMemGetInfo before and after. Plain ctypes over
libcuda.so.1 and the given libnccl.so.2 (no torch, no commcost code): the primary context is
retained and made current as commcost's addon does, so NCCL's CUDA runtime shares it.

Usage: many_comms_reference.py LIBNCCL [N] [ENV=VALUE ...]
Prints one JSON line: the library's version, N, the nvidia-smi delta (MiB), the cuMemGetInfo delta
(MiB), and each creation's call and first-allreduce times (ms, host monotonic).
"""
import ctypes
import json
import os
import subprocess
import sys
import time


def smi_used_mib(index=0):
    """memory.used of GPU `index` in MiB by nvidia-smi; None without nvidia-smi (a dry run)."""
    if os.environ.get("REFERENCE_NO_SMI") == "1":
        return None
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", str(index)],
                         capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[0])


def main():
    lib = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    for kv in sys.argv[3:]:
        k, v = kv.split("=", 1)
        os.environ[k] = v  # before NCCL loads: it reads its variables once
    # REFERENCE_CUDA_LIB: a dry run against commcost's simulated NCCL, which is also its CUDA driver.
    cuda = ctypes.CDLL(os.environ.get("REFERENCE_CUDA_LIB", "libcuda.so.1"))

    def ck(r, what):
        if r != 0:
            raise SystemExit(f"{what} failed: {r}")

    ck(cuda.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    ck(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    ck(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    ck(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    stream = ctypes.c_void_p()
    ck(cuda.cuStreamCreate(ctypes.byref(stream), 0), "cuStreamCreate")
    nbytes = 1 << 20
    buf = ctypes.c_uint64()
    ck(cuda.cuMemAlloc_v2(ctypes.byref(buf), ctypes.c_size_t(nbytes)), "cuMemAlloc_v2")
    ck(cuda.cuMemsetD8_v2(buf, 0, ctypes.c_size_t(nbytes)), "cuMemsetD8_v2")

    nccl = ctypes.CDLL(lib)
    version = ctypes.c_int()
    nccl.ncclGetVersion(ctypes.byref(version))

    class UniqueId(ctypes.Structure):
        _fields_ = [("internal", ctypes.c_char * 128)]

    nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId, ctypes.c_int]
    nccl.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    nccl.ncclCommDestroy.argtypes = [ctypes.c_void_p]

    # The process's one-time NCCL set-up (bootstrap, kernel load) before the "before" reading, as
    # commcost's recorded iterations follow a warmup iteration in the same process: one
    # communicator made, used and destroyed first.
    uid = UniqueId()
    ck(nccl.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
    warm = ctypes.c_void_p()
    ck(nccl.ncclCommInitRank(ctypes.byref(warm), 1, uid, 0), "ncclCommInitRank (warm-up)")
    ck(nccl.ncclAllReduce(ctypes.c_void_p(buf.value), ctypes.c_void_p(buf.value), nbytes // 4, 7, 0, warm, stream), "ncclAllReduce (warm-up)")
    ck(cuda.cuStreamSynchronize(stream), "cuStreamSynchronize")
    ck(nccl.ncclCommDestroy(warm), "ncclCommDestroy (warm-up)")
    uid = UniqueId()
    ck(nccl.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
    free0, total = ctypes.c_size_t(), ctypes.c_size_t()
    time.sleep(0.5)
    used0 = smi_used_mib()
    ck(cuda.cuMemGetInfo_v2(ctypes.byref(free0), ctypes.byref(total)), "cuMemGetInfo_v2")
    comms, calls, firsts = [], [], []
    for i in range(n):
        if i > 0:
            uid = UniqueId()
            ck(nccl.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        comm = ctypes.c_void_p()
        t0 = time.monotonic()
        ck(nccl.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0), "ncclCommInitRank")
        t1 = time.monotonic()
        ck(nccl.ncclAllReduce(ctypes.c_void_p(buf.value), ctypes.c_void_p(buf.value), nbytes // 4, 7, 0, comm, stream), "ncclAllReduce")
        ck(cuda.cuStreamSynchronize(stream), "cuStreamSynchronize")
        t2 = time.monotonic()
        comms.append(comm)
        calls.append(round((t1 - t0) * 1e3, 3))
        firsts.append(round((t2 - t1) * 1e3, 3))
    free1 = ctypes.c_size_t()
    ck(cuda.cuMemGetInfo_v2(ctypes.byref(free1), ctypes.byref(total)), "cuMemGetInfo_v2")
    time.sleep(0.5)
    used1 = smi_used_mib()
    for c in reversed(comms):
        nccl.ncclCommDestroy(c)
    v = version.value
    print(json.dumps({
        "ncclVersion": f"{v // 10000}.{(v % 10000) // 100}.{v % 100}",
        "library": lib,
        "env": sys.argv[3:],
        "N": n,
        "nvidiaSmiDeltaMiB": None if used0 is None else used1 - used0,
        "cuMemGetInfoDeltaMiB": round((free0.value - free1.value) / 2**20, 1),
        "callMs": calls,
        "firstMs": firsts,
    }))


if __name__ == "__main__":
    main()
