#!/usr/bin/env python3
"""Independent reference for commcost's GPU proof (not the product's code path).

Calls NCCL and the CUDA driver directly through ctypes, one process per GPU, with the same
method as commcost (barrier before each timed call, host monotonic time around the call,
collectives include the stream synchronize, MAX across ranks, 1 warmup + N recorded, median
and p90) but none of its code: the barrier is multiprocessing.Barrier, not commcost's TCP one.

Usage: reference.py --nccl /path/libnccl.so.2 [--ranks 2] [--iterations 10] [--warmup 1] [--json out.json]
                    [--only init,split,shrink,destroy,abort,revoke,window]
--only picks the sections and their order; they run one after another in the same processes,
by default in the order of commcost's own session.
Prints one JSON object: {"ncclPath", "ncclVersionCode", "ranks", "order" (the sections that ran, in order),
"steps": {"init/call": {median, p90, min, max, n, samples (ms per recorded iteration)}, ...}}.
"""
import argparse
import ctypes
import json
import multiprocessing as mp
import sys
import time

FIRST_BYTES = 1 << 20
# The order of commcost's own session for the proof's experiments (init, split, shrink, destroy,
# abort, revoke, registration run one after another in the same rank processes).
SECTIONS = ("init", "split", "shrink", "destroy", "abort", "revoke", "window")
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


def rank_main(rank, nranks, nccl_path, cuda_path, iterations, warmup, barrier, id_queues, results, only):
    try:
        run_rank(rank, nranks, nccl_path, cuda_path, iterations, warmup, barrier, id_queues, results, only)
    except BaseException as e:  # report instead of leaving the others waiting
        results.put((rank, {"error": f"rank {rank}: {type(e).__name__}: {e}"}))
        barrier.abort()
        raise


def run_rank(rank, nranks, nccl_path, cuda_path, iterations, warmup, barrier, id_queues, results, only):
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

    def section_init():
        for i in range(warmup + iterations):
            uid = unique_id()
            free0 = free_bytes()
            ms, comm = timed(lambda: init(uid))
            record("init/call", i, ms)
            ms, _ = timed(lambda: allreduce(comm, FIRST_BYTES))
            record("init/first", i, ms)
            record("memory/init/afterFirstMiB", i, (free0 - free_bytes()) / 2**20)
            nccl.ncclCommDestroy(comm)

    version = ctypes.c_int()
    nccl.ncclGetVersion(ctypes.byref(version))

    def has(name, since):
        return version.value >= since and hasattr(nccl, name)

    if rank == 0:
        for section, ok, why in (
            ("shrink", has("ncclCommShrink", 22703) and nranks >= 2, "needs NCCL >= 2.27.3 and 2 ranks or more"),
            ("revoke", has("ncclCommRevoke", 22807), "needs NCCL >= 2.28.7"),
            ("window", has("ncclCommWindowRegister", 22703) and hasattr(nccl, "ncclMemAlloc"), "needs NCCL >= 2.27.3"),
        ):
            if section in only and not ok:
                print(f"reference: {section} skipped: {why} (library version code {version.value})", file=sys.stderr)

    def init_config(uid, split_share):
        # ncclConfig_t as a plain buffer: every int field NCCL_CONFIG_UNDEF_INT, pointers NULL.
        cfg = (ctypes.c_int * 24)(*([-(2**31)] * 24))
        ctypes.memmove(ctypes.byref(cfg, 0), ctypes.byref(ctypes.c_size_t(96)), 8)
        cfg[2], cfg[3] = ctypes.c_int(0xCAFEBEEF - 2**32).value, 23007
        cfg[4] = 1  # blocking
        cfg[8] = cfg[9] = 0  # netName (offset 32) = NULL
        cfg[10] = split_share  # offset 40
        cfg[12] = cfg[13] = 0  # commName (offset 48) = NULL
        comm = ctypes.c_void_p()
        check(nccl.ncclCommInitRankConfig(ctypes.byref(comm), nranks, uid, rank, ctypes.byref(cfg)), "ncclCommInitRankConfig")
        return comm

    nccl.ncclCommInitRankConfig.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, UniqueId, ctypes.c_int, ctypes.c_void_p]

    def warm():
        comm = init(unique_id())
        allreduce(comm, FIRST_BYTES)
        return comm

    # destroy: finalize + destroy of a warm communicator
    def section_destroy():
        for i in range(warmup + iterations):
            comm = warm()
            ms, _ = timed(lambda: check(nccl.ncclCommFinalize(comm), "ncclCommFinalize"))
            record("destroy/finalize", i, ms)
            ms, _ = timed(lambda: check(nccl.ncclCommDestroy(comm), "ncclCommDestroy"))
            record("destroy/destroy", i, ms)

    # abort, then re-init and its first collective
    def section_abort():
        for i in range(warmup + iterations):
            comm = warm()
            ms, _ = timed(lambda: check(nccl.ncclCommAbort(comm), "ncclCommAbort"))
            record("abort/abort", i, ms)
            uid = unique_id()
            ms, fresh = timed(lambda: init(uid))
            record("abort/reinit", i, ms)
            ms, _ = timed(lambda: allreduce(fresh, FIRST_BYTES))
            record("abort/first", i, ms)
            nccl.ncclCommDestroy(fresh)

    # shrink: drop the last rank (it does not call), NCCL_SHRINK_DEFAULT
    def section_shrink():
        if has("ncclCommShrink", 22703) and nranks >= 2:
            nccl.ncclCommShrink.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_int]
            excluded = (ctypes.c_int * 1)(nranks - 1)
            for i in range(warmup + iterations):
                parent = warm()
                if rank == nranks - 1:
                    barrier.wait(timeout=120)
                    barrier.wait(timeout=120)
                else:
                    child = ctypes.c_void_p()
                    ms, _ = timed(lambda: check(nccl.ncclCommShrink(parent, excluded, 1, ctypes.byref(child), None, 0), "ncclCommShrink"))
                    record("shrink/call", i, ms)
                    ms, _ = timed(lambda: allreduce(child, FIRST_BYTES))
                    record("shrink/first", i, ms)
                    nccl.ncclCommDestroy(child)
                nccl.ncclCommDestroy(parent)

    # revoke until quiet, then destroy
    def section_revoke():
        if has("ncclCommRevoke", 22807):
            nccl.ncclCommGetAsyncError.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]

            def revoke_until_quiet(comm):
                r = nccl.ncclCommRevoke(comm, 0)
                if r not in (0, 7):
                    check(r, "ncclCommRevoke")
                state = ctypes.c_int(7)
                while state.value == 7:
                    check(nccl.ncclCommGetAsyncError(comm, ctypes.byref(state)), "ncclCommGetAsyncError")

            for i in range(warmup + iterations):
                comm = warm()
                ms, _ = timed(lambda: revoke_until_quiet(comm))
                record("revoke/revoke", i, ms)
                ms, _ = timed(lambda: check(nccl.ncclCommDestroy(comm), "ncclCommDestroy"))
                record("revoke/destroy", i, ms)

    # window registration of a 64 MiB ncclMemAlloc buffer (collective)
    def section_window():
        if has("ncclCommWindowRegister", 22703) and hasattr(nccl, "ncclMemAlloc"):
            nccl.ncclCommWindowRegister.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int]
            nccl.ncclCommWindowDeregister.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
            nccl.ncclMemAlloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]
            comm = warm()
            wbuf = ctypes.c_void_p()
            check(nccl.ncclMemAlloc(ctypes.byref(wbuf), STEADY_BYTES), "ncclMemAlloc")
            for i in range(warmup + iterations):
                win = ctypes.c_void_p()
                ms, _ = timed(lambda: check(nccl.ncclCommWindowRegister(comm, wbuf, STEADY_BYTES, ctypes.byref(win), 0), "ncclCommWindowRegister"))
                record("window/register", i, ms)
                if win.value:
                    ms, _ = timed(lambda: check(nccl.ncclCommWindowDeregister(comm, win), "ncclCommWindowDeregister"))
                    record("window/deregister", i, ms)
                else:
                    barrier.wait(timeout=120)
            nccl.ncclCommDestroy(comm)

    def section_split():
        for shape, split_share in (("halves", 0), ("whole", 0), ("whole-share1", 1)):
            parent = init_config(unique_id(), split_share)
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

    # In the order asked for (default: commcost's session order): what a process did before a
    # section can change its figures.
    sections = {"init": section_init, "split": section_split, "shrink": section_shrink, "destroy": section_destroy,
                "abort": section_abort, "revoke": section_revoke, "window": section_window}
    for name in only:
        sections[name]()
    results.put((rank, out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nccl", required=True)
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--cuda", default="libcuda.so.1", help="CUDA driver library (the simulated NCCL for a dry run)")
    ap.add_argument("--json")
    ap.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections to measure, of: {', '.join(SECTIONS)}")
    args = ap.parse_args()
    only = list(dict.fromkeys(n.strip() for n in args.only.split(",") if n.strip()))  # in the order given
    if not only:
        ap.error(f"--only: name at least one section of: {', '.join(SECTIONS)}")
    unknown = [n for n in only if n not in SECTIONS]
    if unknown:
        ap.error(f"--only: unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(args.ranks)
    id_queues = [ctx.Queue() for _ in range(args.ranks)]
    results = ctx.Queue()
    procs = [ctx.Process(target=rank_main, args=(r, args.ranks, args.nccl, args.cuda, args.iterations, args.warmup, barrier, id_queues, results, only)) for r in range(args.ranks)]
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
    keys = sorted({k for out in per_rank.values() for k in out})
    # The MAX over the ranks that took part (the rank a shrink excludes has no entry).
    combined = {k: [max(per_rank[r][k][i] for r in per_rank if k in per_rank[r]) for i in range(args.iterations)] for k in keys}
    # Totals per iteration: the sum of the parts (each the MAX across ranks), as commcost defines them.
    totals = {
        "init": ("init/call", "init/first"),
        "split/halves": ("split/halves/call", "split/halves/first"),
        "split/whole": ("split/whole/call", "split/whole/first"),
        "split/whole-share1": ("split/whole-share1/call", "split/whole-share1/first"),
        "shrink": ("shrink/call", "shrink/first"),
        "destroy": ("destroy/finalize", "destroy/destroy"),
        "abort": ("abort/reinit", "abort/first"),
        "revoke": ("revoke/revoke", "revoke/destroy"),
    }
    for prefix, parts in totals.items():
        if all(p in combined for p in parts):
            combined[f"{prefix}/total"] = [sum(v) for v in zip(*(combined[p] for p in parts))]
    version = ctypes.c_int()
    ctypes.CDLL(args.nccl).ncclGetVersion(ctypes.byref(version))
    # The sections that ran, in their order (a section the library lacks is skipped and left out).
    ran = [n for n in only if any(k.startswith(n + "/") for k in combined)]
    report = {"ncclPath": args.nccl, "ncclVersionCode": version.value, "ranks": args.ranks, "order": ran,
              "steps": {k: {**stats(v), "samples": v} for k, v in combined.items()}}
    text = json.dumps(report, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
