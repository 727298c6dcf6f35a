#!/usr/bin/env python3
"""Independent reference for commcost's GPU proof (not the product's code path).

Calls NCCL and the CUDA driver directly through ctypes, one process per GPU, with the same
method as commcost (barrier before each timed call, host monotonic time around the call,
collectives include the stream synchronize, MAX across ranks, 1 warmup + N recorded, median
and p90) but none of its code: the barrier is multiprocessing.Barrier, not commcost's TCP one.

Usage: reference.py --nccl /path/libnccl.so.2 [--ranks 2] [--iterations 10] [--warmup 1] [--json out.json]
                    [--only init,split,shrink,grow,destroy,abort,revoke,window,suspend]
--only picks the sections and their order; they run one after another in the same processes,
by default in the order of commcost's own session. A section the library or the rank count does
not allow (grow: ncclCommGrow and ncclCommGetUniqueId, NCCL >= 2.29.2, 2 ranks or more; suspend:
ncclCommSuspend and ncclCommResume, NCCL >= 2.29.7; symbols looked up by name) is skipped with the
reason on stderr ("reference: grow skipped: ...") and left out of "order".
Prints one JSON object: {"ncclPath", "ncclVersionCode", "ranks", "order" (the sections that ran, in order),
"skipped": {section: reason} (sections asked for that this library or rank count does not allow),
"steps": {"init/call": {median, p90, min, max, n, samples (ms per recorded iteration)}, ...}}.
"""
import argparse
import ctypes
import json
import multiprocessing as mp
import sys
import time

FIRST_BYTES = 1 << 20
# The order of commcost's own session for the proof's experiments (init, split, shrink, grow,
# destroy, abort, revoke, registration, suspend run one after another in the same rank processes:
# the catalogue's order, protocol/events.ts EXPERIMENT_IDS).
SECTIONS = ("init", "split", "shrink", "grow", "destroy", "abort", "revoke", "window", "suspend")
NCCL_IN_PROGRESS = 7
NCCL_SUSPEND_MEM = 0x01
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

    def shared_id(produce):
        # A 128-byte id made by rank 0 with produce(uid) and handed to every other rank (untimed).
        uid = UniqueId()
        if rank == 0:
            produce(uid)
            for q in id_queues[1:]:
                q.put(ctypes.string_at(ctypes.addressof(uid), 128))
        else:
            ctypes.memmove(ctypes.byref(uid), id_queues[rank].get(timeout=120), 128)
        return uid

    def unique_id():
        return shared_id(lambda uid: check(nccl.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId"))

    def until_ready(result, comm, what):
        # A call that answers ncclInProgress is done when ncclCommGetAsyncError stops saying so
        # (commcost's native waitReady does the same inside the timed call).
        if result == NCCL_IN_PROGRESS:
            nccl.ncclCommGetAsyncError.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
            state = ctypes.c_int(NCCL_IN_PROGRESS)
            while state.value == NCCL_IN_PROGRESS:
                check(nccl.ncclCommGetAsyncError(comm, ctypes.byref(state)), f"ncclCommGetAsyncError after {what}")
            result = state.value
        check(result, what)

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

    def why_not(since, symbols, min_ranks=1):
        # Why a section cannot run here (None when it can), in commcost's order of checks: the
        # version, then the symbols (looked up by name), then the rank count.
        v = version.value
        if v < since:
            return f"needs NCCL >= {since // 10000}.{since // 100 % 100}.{since % 100}, library has {v // 10000}.{v // 100 % 100}.{v % 100}"
        missing = [n for n in symbols if not hasattr(nccl, n)]
        if missing:
            return f"{', '.join(missing)} not in this library"
        if nranks < min_ranks:
            return f"needs {min_ranks} ranks or more (one per GPU; --ranks {nranks} given): grows a communicator of n-1 ranks to n"
        return None

    def grow_skip():
        return why_not(22902, ("ncclCommGrow", "ncclCommGetUniqueId"), 2)

    def suspend_skip():
        return why_not(22907, ("ncclCommSuspend", "ncclCommResume"))

    def can_grow():
        return grow_skip() is None

    def can_suspend():
        return suspend_skip() is None

    skipped = {}  # section -> reason, rank 0 only (reported in the JSON)
    if rank == 0:
        for section, ok, why in (
            ("shrink", has("ncclCommShrink", 22703) and nranks >= 2, "needs NCCL >= 2.27.3 and 2 ranks or more"),
            ("revoke", has("ncclCommRevoke", 22807), "needs NCCL >= 2.28.7"),
            ("window", has("ncclCommWindowRegister", 22703) and hasattr(nccl, "ncclMemAlloc"), "needs NCCL >= 2.27.3"),
            ("grow", can_grow(), grow_skip()),
            ("suspend", can_suspend(), suspend_skip()),
        ):
            if section in only and not ok:
                print(f"reference: {section} skipped: {why} (library version code {version.value})", file=sys.stderr)
                skipped[section] = why

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

    # grow (commcost's remote-agent/experiments/grow.ts): a communicator of the first n-1 ranks,
    # warmed by a collective, takes the last rank back. Rank 0 makes the grow id with
    # ncclCommGetUniqueId(parent); existing ranks call ncclCommGrow(parent, n, id on rank 0 else
    # NULL, -1), the new rank ncclCommGrow(NULL, n, id, n-1); then the first collective on the
    # grown communicator. Memory: free-memory delta from after the parent's warm collective.
    def section_grow():
        if not can_grow():
            return
        nccl.ncclCommGetUniqueId.argtypes = [ctypes.c_void_p, ctypes.POINTER(UniqueId)]
        nccl.ncclCommGrow.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(UniqueId), ctypes.c_int, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]
        joining = nranks - 1
        for i in range(warmup + iterations):
            uid = unique_id()
            parent = None
            if rank != joining:
                parent = ctypes.c_void_p()
                check(nccl.ncclCommInitRank(ctypes.byref(parent), nranks - 1, uid, rank), "ncclCommInitRank (parent of n-1)")
                allreduce(parent, FIRST_BYTES)
            free0 = free_bytes()
            grow_id = shared_id(lambda g: check(nccl.ncclCommGetUniqueId(parent, ctypes.byref(g)), "ncclCommGetUniqueId"))
            child = ctypes.c_void_p()

            def grow():
                if rank == joining:
                    r = nccl.ncclCommGrow(None, nranks, ctypes.byref(grow_id), joining, ctypes.byref(child), None)
                else:
                    r = nccl.ncclCommGrow(parent, nranks, ctypes.byref(grow_id) if rank == 0 else None, -1, ctypes.byref(child), None)
                until_ready(r, child, "ncclCommGrow")

            ms, _ = timed(grow)
            record("grow/call", i, ms)
            record("memory/grow/afterCallMiB", i, (free0 - free_bytes()) / 2**20)
            ms, _ = timed(lambda: allreduce(child, FIRST_BYTES))
            record("grow/first", i, ms)
            record("memory/grow/afterFirstMiB", i, (free0 - free_bytes()) / 2**20)
            nccl.ncclCommDestroy(child)
            if parent is not None:
                nccl.ncclCommDestroy(parent)

    # suspend (commcost's remote-agent/experiments/suspend.ts): a warm communicator over all ranks,
    # ncclCommSuspend(NCCL_SUSPEND_MEM), ncclCommResume, then the first collective after the resume.
    # Memory: free-memory delta from before the communicator was made, at each point.
    def section_suspend():
        if not can_suspend():
            return
        nccl.ncclCommSuspend.argtypes = [ctypes.c_void_p, ctypes.c_int]
        nccl.ncclCommResume.argtypes = [ctypes.c_void_p]
        for i in range(warmup + iterations):
            free0 = free_bytes()
            comm = warm()
            record("memory/suspend/warmMiB", i, (free0 - free_bytes()) / 2**20)
            ms, _ = timed(lambda: until_ready(nccl.ncclCommSuspend(comm, NCCL_SUSPEND_MEM), comm, "ncclCommSuspend"))
            record("suspend/suspend", i, ms)
            record("memory/suspend/afterSuspendMiB", i, (free0 - free_bytes()) / 2**20)
            ms, _ = timed(lambda: until_ready(nccl.ncclCommResume(comm), comm, "ncclCommResume"))
            record("suspend/resume", i, ms)
            record("memory/suspend/afterResumeMiB", i, (free0 - free_bytes()) / 2**20)
            ms, _ = timed(lambda: allreduce(comm, FIRST_BYTES))
            record("suspend/first", i, ms)
            record("memory/suspend/afterFirstMiB", i, (free0 - free_bytes()) / 2**20)
            nccl.ncclCommDestroy(comm)

    # In the order asked for (default: commcost's session order): what a process did before a
    # section can change its figures.
    sections = {"init": section_init, "split": section_split, "shrink": section_shrink, "destroy": section_destroy,
                "abort": section_abort, "revoke": section_revoke, "window": section_window,
                "grow": section_grow, "suspend": section_suspend}
    for name in only:
        sections[name]()
    results.put((rank, {"steps": out, "skipped": skipped}))


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
    skipped = {}
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
        per_rank[rank] = out["steps"]
        skipped.update(out["skipped"])
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
        "grow": ("grow/call", "grow/first"),
        # As commcost's suspend total: resume to first collective (the suspend call stands alone).
        "suspend": ("suspend/resume", "suspend/first"),
    }
    for prefix, parts in totals.items():
        if all(p in combined for p in parts):
            combined[f"{prefix}/total"] = [sum(v) for v in zip(*(combined[p] for p in parts))]
    version = ctypes.c_int()
    ctypes.CDLL(args.nccl).ncclGetVersion(ctypes.byref(version))
    # The sections that ran, in their order (a section the library lacks is skipped and left out).
    ran = [n for n in only if any(k.startswith(n + "/") for k in combined)]
    report = {"ncclPath": args.nccl, "ncclVersionCode": version.value, "ranks": args.ranks, "order": ran,
              "skipped": {n: skipped[n] for n in only if n in skipped},
              "steps": {k: {**stats(v), "samples": v} for k, v in combined.items()}}
    text = json.dumps(report, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
