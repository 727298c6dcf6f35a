#!/usr/bin/env python3
"""Independent reference for commcost's GPU proof (not the product's code path).

Calls NCCL and the CUDA driver directly through ctypes, one process per GPU, with the same
method as commcost (barrier before each timed call, host monotonic time around the call,
collectives include the stream synchronize, MAX across ranks, 1 warmup + N recorded, median
and p90) but none of its code: the barrier is multiprocessing.Barrier, not commcost's TCP one.

Usage: reference.py --nccl /path/libnccl.so.2 [--ranks 2] [--iterations 10] [--warmup 1] [--json out.json]
Prints one JSON object: {"ncclVersion", "steps": {"init/call": {...stats}, ...}}.
"""
import argparse
import ctypes
import json
import multiprocessing as mp
import sys
import time

FIRST_BYTES = 1 << 20
STEADY_BYTES = 64 << 20


class UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def check(result, what):
    if result != 0:
        raise RuntimeError(f"{what} failed with {result}")


def quantile(sorted_values, q):
    pos = (len(sorted_values) - 1) * q
    lo, hi = int(pos // 1), int(-(-pos // 1))
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def stats(values):
    s = sorted(values)
    return {"median": quantile(s, 0.5), "p90": quantile(s, 0.9), "min": s[0], "max": s[-1], "n": len(s)}


def rank_main(rank, nranks, nccl_path, cuda_path, iterations, warmup, barrier, id_queues, results):
    try:
        run_rank(rank, nranks, nccl_path, cuda_path, iterations, warmup, barrier, id_queues, results)
    except BaseException as e:  # report instead of leaving the others waiting
        results.put((rank, {"error": f"rank {rank}: {type(e).__name__}: {e}"}))
        barrier.abort()
        raise


def run_rank(rank, nranks, nccl_path, cuda_path, iterations, warmup, barrier, id_queues, results):
    cuda = ctypes.CDLL(cuda_path)
    nccl = ctypes.CDLL(nccl_path)
    check(cuda.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(dev), rank), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    buf = ctypes.c_uint64()
    check(cuda.cuMemAlloc_v2(ctypes.byref(buf), STEADY_BYTES), "cuMemAlloc")
    cuda.cuMemsetD8_v2.argtypes = [ctypes.c_uint64, ctypes.c_ubyte, ctypes.c_size_t]
    check(cuda.cuMemsetD8_v2(buf.value, 0, STEADY_BYTES), "cuMemset")
    stream = ctypes.c_void_p()
    check(cuda.cuStreamCreate(ctypes.byref(stream), 1), "cuStreamCreate")
    nccl.ncclCommInitRank.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId, ctypes.c_int]
    nccl.ncclAllReduce.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    nccl.ncclCommSplit.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
    nccl.ncclCommDestroy.argtypes = [ctypes.c_void_p]

    def unique_id():
        uid = UniqueId()
        if rank == 0:
            check(nccl.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
            for q in id_queues[1:]:
                q.put(ctypes.string_at(ctypes.addressof(uid), 128))
        else:
            ctypes.memmove(ctypes.byref(uid), id_queues[rank].get(timeout=120), 128)
        return uid

    def init(uid):
        comm = ctypes.c_void_p()
        check(nccl.ncclCommInitRank(ctypes.byref(comm), nranks, uid, rank), "ncclCommInitRank")
        return comm

    def allreduce(comm, nbytes):
        check(nccl.ncclAllReduce(buf.value, buf.value, nbytes // 4, 7, 0, comm, stream), "ncclAllReduce")
        check(cuda.cuStreamSynchronize(stream), "cuStreamSynchronize")

    def free_bytes():
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        check(cuda.cuMemGetInfo_v2(ctypes.byref(free), ctypes.byref(total)), "cuMemGetInfo")
        return free.value

    def timed(fn):
        barrier.wait(timeout=120)
        t0 = time.perf_counter_ns()
        out = fn()
        return (time.perf_counter_ns() - t0) / 1e6, out

    # Process one-time start, kept out of the figures (as commcost does).
    warm = init(unique_id())
    allreduce(warm, FIRST_BYTES)
    nccl.ncclCommDestroy(warm)

    out = {}

    def record(key, i, ms):
        if i >= warmup:
            out.setdefault(key, []).append(ms)

    for i in range(warmup + iterations):
        uid = unique_id()
        free0 = free_bytes()
        ms, comm = timed(lambda: init(uid))
        record("init/call", i, ms)
        ms, _ = timed(lambda: allreduce(comm, FIRST_BYTES))
        record("init/first", i, ms)
        record("memory/init/afterFirstMiB", i, (free0 - free_bytes()) / 2**20)
        nccl.ncclCommDestroy(comm)

    for shape in ("halves", "whole"):
        parent = init(unique_id())
        allreduce(parent, FIRST_BYTES)
        color = (0 if rank < nranks / 2 else 1) if shape == "halves" else 0
        for i in range(warmup + iterations):
            child = ctypes.c_void_p()
            free0 = free_bytes()
            ms, _ = timed(lambda: check(nccl.ncclCommSplit(parent, color, rank, ctypes.byref(child), None), "ncclCommSplit"))
            record(f"split/{shape}/call", i, ms)
            ms, _ = timed(lambda: allreduce(child, FIRST_BYTES))
            record(f"split/{shape}/first", i, ms)
            record(f"memory/split/{shape}/afterFirstMiB", i, (free0 - free_bytes()) / 2**20)
            nccl.ncclCommDestroy(child)
        nccl.ncclCommDestroy(parent)
    results.put((rank, out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nccl", required=True)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--cuda", default="libcuda.so.1", help="CUDA driver library (the simulated NCCL for a dry run)")
    ap.add_argument("--json")
    args = ap.parse_args()
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(args.ranks)
    id_queues = [ctx.Queue() for _ in range(args.ranks)]
    results = ctx.Queue()
    procs = [ctx.Process(target=rank_main, args=(r, args.ranks, args.nccl, args.cuda, args.iterations, args.warmup, barrier, id_queues, results)) for r in range(args.ranks)]
    for p in procs:
        p.start()
    per_rank = {}
    deadline = time.monotonic() + 900
    while len(per_rank) < len(procs):
        try:
            rank, out = results.get(timeout=1)
        except Exception:
            if time.monotonic() > deadline or any(p.exitcode not in (None, 0) for p in procs):
                for p in procs:
                    p.kill()
                sys.exit(f"reference: a rank died or timed out (exit codes {[p.exitcode for p in procs]})")
            continue
        if "error" in out:
            for p in procs:
                p.kill()
            sys.exit(out["error"])
        per_rank[rank] = out
    for p in procs:
        p.join(60)
    keys = [k for k in per_rank[0].keys()]
    combined = {k: [max(per_rank[r][k][i] for r in per_rank) for i in range(args.iterations)] for k in keys}
    # Totals per iteration: call + first (each the MAX across ranks), as commcost defines them.
    for prefix in ["init", "split/halves", "split/whole"]:
        combined[f"{prefix}/total"] = [a + b for a, b in zip(combined[f"{prefix}/call"], combined[f"{prefix}/first"])]
    version = ctypes.c_int()
    ctypes.CDLL(args.nccl).ncclGetVersion(ctypes.byref(version))
    report = {"ncclPath": args.nccl, "ncclVersionCode": version.value, "ranks": args.ranks, "steps": {k: stats(v) for k, v in combined.items()}}
    text = json.dumps(report, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
