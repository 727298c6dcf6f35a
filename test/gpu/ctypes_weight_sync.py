"""1xH200: a weight-sync communicator driven through ctypes, as vLLM's PyNcclCommunicator drives it.

No torch: libcuda.so.1 and libnccl (NCCL_LIB, by path) through ctypes. At one rank, per sync: a
unique id, ncclCommInitRank, the first ncclBroadcast of 1 MiB from rank 0, ncclCommDestroy (SYNCS
times, a new group per sync as RL weight refits do); then two one-rank communicators made inside
ncclGroupStart/ncclGroupEnd (the creation is paid at ncclGroupEnd), each first used by an
ncclAllReduce, then destroyed. Prints its own clock per step ("own:" lines, ms) so the trace's
figures can be set beside it; NCCL's Init timings come from NCCL_DEBUG=INFO when the caller sets it.
"""
import ctypes
import os
import time

SYNCS = int(os.environ.get("SYNCS", "3"))
COUNT = 1 << 18  # floats: 1 MiB


class NcclUniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]


def check(rc, what):
    if rc != 0:
        raise RuntimeError("%s returned %d" % (what, rc))


def ms(t0):
    return (time.perf_counter() - t0) * 1e3


def main():
    cuda = ctypes.CDLL(os.environ.get("CUDA_LIB", "libcuda.so.1"))
    nccl = ctypes.CDLL(os.environ["NCCL_LIB"])
    check(cuda.cuInit(0), "cuInit")
    dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
    check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    buf = ctypes.c_ulonglong(0)
    check(cuda.cuMemAlloc_v2(ctypes.byref(buf), ctypes.c_size_t(COUNT * 4)), "cuMemAlloc")
    data = ctypes.c_void_p(buf.value)
    for sync in range(SYNCS):
        uid = NcclUniqueId()
        check(nccl.ncclGetUniqueId(ctypes.byref(uid)), "ncclGetUniqueId")
        comm = ctypes.c_void_p()
        t0 = time.perf_counter()
        check(nccl.ncclCommInitRank(ctypes.byref(comm), 1, uid, 0), "ncclCommInitRank")  # site: weight-sync init
        t_init = ms(t0)
        t1 = time.perf_counter()
        check(nccl.ncclBroadcast(data, data, ctypes.c_size_t(COUNT), 7, 0, comm, None), "ncclBroadcast")  # site: first broadcast
        check(cuda.cuStreamSynchronize(None), "cuStreamSynchronize")
        t_first = ms(t1)
        t2 = time.perf_counter()
        check(nccl.ncclCommDestroy(comm), "ncclCommDestroy")  # site: weight-sync destroy
        print("own: sync %d init %.1f ms, first broadcast %.3f ms, destroy %.1f ms" % (sync, t_init, t_first, ms(t2)), flush=True)
    comms = [ctypes.c_void_p(), ctypes.c_void_p()]
    uids = [NcclUniqueId(), NcclUniqueId()]
    for u in uids:
        check(nccl.ncclGetUniqueId(ctypes.byref(u)), "ncclGetUniqueId")
    t0 = time.perf_counter()
    check(nccl.ncclGroupStart(), "ncclGroupStart")
    for c, u in zip(comms, uids):
        check(nccl.ncclCommInitRank(ctypes.byref(c), 1, u, 0), "ncclCommInitRank")  # site: grouped init
    t_calls = ms(t0)
    t1 = time.perf_counter()
    check(nccl.ncclGroupEnd(), "ncclGroupEnd")  # site: paid here
    print("own: grouped: 2 creating calls %.1f ms, ncclGroupEnd %.1f ms" % (t_calls, ms(t1)), flush=True)
    for c in comms:
        t1 = time.perf_counter()
        check(nccl.ncclAllReduce(data, data, ctypes.c_size_t(COUNT), 7, 0, c, None), "ncclAllReduce")  # site: grouped first use
        check(cuda.cuStreamSynchronize(None), "cuStreamSynchronize")
        print("own: grouped first allreduce %.3f ms" % ms(t1), flush=True)
    for c in comms:
        check(nccl.ncclCommDestroy(c), "ncclCommDestroy")
    print("ctypes weight sync done", flush=True)


if __name__ == "__main__":
    main()
