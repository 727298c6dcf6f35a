/*
 * ncclsim.c: a simulated NCCL and CUDA driver API in one shared library (test fixture).
 *
 * The commcost addon loads this file as both ncclPath and cudaPath. It exports the nccl* and cu*
 * symbols the addon uses plus `commcostSimulated`, so every run against it is labelled simulated.
 *
 * Model
 * - One process = one rank = one device. Device memory is a counter per process: cuMemAlloc and
 *   communicators (COMMCOST_SIM_COMM_BYTES at creation, COMMCOST_SIM_CONNECT_BYTES at the first
 *   collective) consume it; cuMemGetInfo reports it.
 * - ncclGetUniqueId starts (once per process) a rendezvous server on 127.0.0.1:<ephemeral> (or
 *   on COMMCOST_SIM_ADDR:<ephemeral>) and writes its address and a random 64-bit communicator tag
 *   into the 128-byte id.
 * - Init, split, allreduce and finalize are rendezvous: each rank connects to the server, sends
 *   (tag, seq, nranks, rank, payload) and blocks until all nranks have arrived for that (tag, seq);
 *   then every rank gets all payloads back. A rank that never calls blocks the others forever.
 *   Costs (sleeps) are applied after the rendezvous completes.
 * - ncclCommAbort is local: it shuts down the socket of a thread of this process blocked in a
 *   rendezvous on that communicator, which then returns ncclRemoteError.
 *
 * - The device "stream" is one queue per process served by a background thread: ncclAllReduce
 *   only enqueues (validation and the HANG/FAIL hooks run in the call); the stream thread does the
 *   rendezvous and the cost sleep; cuStreamSynchronize waits until the queue is empty. A failed op
 *   sets the communicator's async error (ncclCommGetAsyncError). Sleeps on the stream end early
 *   when the communicator is aborted, revoked or shrunk with NCCL_SHRINK_ABORT.
 * - Connect (COMMCOST_SIM_CONNECT_MS / _CONNECT_BYTES) happens at the first collective (runtime
 *   connect, NCCL >= 2.22 default) or inside init/split/shrink/grow when NCCL_RUNTIME_CONNECT=0,
 *   NCCL_CUMEM_ENABLE=0 (NCCL enables runtime connect only with cuMem) or COMMCOST_SIM_VERSION <
 *   22200. A 1-rank communicator never pays its time; it pays its memory only when connecting
 *   inside creation (NVIDIA/nccl#2363: a one-rank communicator with NCCL_RUNTIME_CONNECT=0 allocates
 *   buffers it never uses).
 * - Memory per communicator (the many-comms experiment's curve): every communicator made without
 *   sharing charges COMMCOST_SIM_COMM_BYTES (200 MiB) at creation and its connection buffers when it
 *   connects; a split child of a parent with splitShare (or NCCL_COMM_SPLIT_SHARE_RESOURCES=1)
 *   charges nothing, so N such children stay flat while N communicators of their own grow linearly.
 *   The connection buffers are COMMCOST_SIM_CONNECT_BYTES (60 MiB) at NCCL's defaults, scaled as
 *   NCCL's are: a quarter (LL/LL128) fixed, three quarters (the Simple protocol) in proportion to
 *   NCCL_BUFFSIZE / 4 MiB, all in proportion to the communicator's channels / 16, where the channels
 *   are 16 raised to the config's minCTAs and capped at its maxCTAs (NCCL_MIN_CTAS / NCCL_MAX_CTAS
 *   override the config, as in NCCL; a split child keeps its parent's). maxP2pPeers is accepted and
 *   changes nothing: P2P buffers are made on demand by send/recv, which no experiment runs. Plausible
 *   shapes, never figures: runs on this library are labelled SIMULATED.
 * - ncclBroadcast is a collective like ncclAllReduce (one rendezvous of all ranks, the same lazy
 *   connect on first use; the root's float32 value lands in every rank's receive range). ncclSend
 *   and ncclRecv are point-to-point: each is a rendezvous of the two ranks of its pair only (its own
 *   tag, the pair's seq: the k-th send or recv with a peer meets the peer's k-th with it), and the
 *   first one with a peer pays that peer's connect, COMMCOST_SIM_P2P_CONNECT_MS (20), always at first
 *   use (NCCL_RUNTIME_CONNECT=0 connects the collective rings at creation, never the peers); with
 *   oneself nothing is connected. In a group they run at the call like every collective.
 * - Non-blocking init (config.blocking = 0) returns ncclInProgress at once and runs on its own
 *   thread; ncclCommAbort interrupts it.
 * - Groups (simGroup.c, as NCCL's group.cc): ncclGroupStart/End count a per-thread depth. Inside a
 *   group, ncclCommInitRank, ncclCommInitRankConfig and ncclCommSplit return ncclSuccess at once with
 *   the communicator pointer set but not usable (ncclAllReduce on it: ncclInvalidUsage); the
 *   outermost ncclGroupEnd runs every queued creation, each on its own thread (so one thread may
 *   create several ranks of one communicator: one process, several simulated devices), and returns
 *   when all are done with the first error. With non-blocking communicators it marks them
 *   ncclInProgress, runs them in the background and returns ncclInProgress; ncclCommGetAsyncError
 *   reports ncclInProgress until each is done. A group mixing blocking and non-blocking
 *   communicators is refused (ncclInvalidArgument), a call refused inside a group fails its
 *   ncclGroupEnd too, and ncclGroupEnd outside a group is ncclInvalidUsage. ncclCommInitAll(comms,
 *   ndev, devlist) = ncclGetUniqueId + one grouped init per device (devlist within
 *   COMMCOST_SIM_GPUS, no repeats). Not modelled: grouped shrink/grow/destroy/abort (they run at
 *   the call, as outside a group), collectives queued in a group (they run at the call), and the
 *   device: the ranks of one process share its memory counter and its one-time kernel load.
 * - Version gates inside the library (symbols are always exported): ncclCommGetUniqueId and
 *   ncclCommGrow answer ncclInvalidUsage below 22902, ncclCommSuspend/Resume/MemStats below 22907,
 *   ncclCommInitRankScalable below 22304 (its ids: the first names the communicator; every rank's nId
 *   and ids must match, else ncclInvalidUsage on every rank; the cost is the init's)
 *   (lastError "... is not supported in simulated 2.28.9"). The addon itself refuses these calls
 *   with ARG when the loaded version is older than the function's first release.
 *   Build with -DCOMMCOST_SIM_LEGACY (dist/native/libnccl-sim-legacy.so) for a library that lacks
 *   every symbol newer than 2.19 (InitRankScalable, shrink, grow, revoke, windows, suspend), default version 2.26.2.
 * - Cold first creation: the first communicator a process creates (init, split, shrink or grow)
 *   pays COMMCOST_SIM_KERNELS_MS once more, the CUDA module ("kernel") load NCCL does in its first
 *   communicator (0 by default, so other tests' first inits are unchanged; one value, or a comma
 *   list by rank in the new communicator: rank r pays item r, ranks beyond the list the last
 *   item), after the rendezvous like every cost.
 * - NCCL's own log: with NCCL_DEBUG=INFO (or TRACE) and NCCL_DEBUG_SUBSYS unset or naming INIT
 *   (or ALL; a leading ^ excludes), ncclCommInitRank/Config write NCCL-like INFO lines, among them
 *   from version 2.23.4 on "Init timings - <fn>: rank R nranks N total T (kernels K, alloc 0.00,
 *   bootstrap B, allgathers 0.00, topo 0.00, graphs 0.00, connections 0.00, rest X)" (seconds,
 *   measured: bootstrap = the rendezvous, kernels = the kernel load, rest = the remainder), to
 *   NCCL_DEBUG_FILE (%h host, %p pid, %% a percent sign) or else stdout. Test hook:
 *   COMMCOST_SIM_INIT_TIMINGS_GARBLED=1 writes an unreadable "Init timings" line before each one.
 * - In-flight work and its data (the drain and drop checks): cuEventRecord puts a marker on the
 *   stream behind the work already queued; cuEventQuery answers CUDA_ERROR_NOT_READY (600) until
 *   the stream thread reaches it, so work is observably in flight while the stream's host-side
 *   timer (rendezvous + bytes / COMMCOST_SIM_BW_GBPS) runs. Device data is modelled as uniform
 *   float32 ranges: cuMemsetD32/D8 write one, a float32-sum allreduce that completes writes its
 *   receive range with the sum of every rank's value (carried in its rendezvous), cuMemcpyDtoH_v2
 *   reads them back; an allreduce dropped by ncclCommRevoke, ncclCommAbort or NCCL_SHRINK_ABORT
 *   before it finished writes nothing.
 * - CUDA graphs: cuStreamBeginCapture_v2 .. cuStreamEndCapture records the allreduces enqueued in
 *   between (not run; each one recorded costs COMMCOST_SIM_CAPTURE_MS, 0 by default, so a test
 *   can tell a timed capture from none); cuGraphInstantiateWithFlags costs COMMCOST_SIM_GRAPH_MS; cuGraphLaunch
 *   enqueues the recorded ops again (each launch is a new rendezvous).
 *
 * Environment (read once, at first use): COMMCOST_SIM_ADDR (IPv4 dotted address, e.g. 10.1.2.3:
 * the rendezvous server binds to it and the unique id carries it, so ranks on other hosts or in
 * other network namespaces can reach it; unset or empty = 127.0.0.1 as before; a value that is
 * not a unicast IPv4 address, or not an address of this host (bind: EADDRNOTAVAIL), fails
 * ncclGetUniqueId with ncclInvalidArgument and a lastError naming the variable and the value),
 * COMMCOST_SIM_VERSION, COMMCOST_SIM_GPUS,
 * COMMCOST_SIM_KERNELS_MS (0, see "Cold first creation"),
 * COMMCOST_SIM_COMM_BYTES, COMMCOST_SIM_CONNECT_BYTES, COMMCOST_SIM_INIT_MS, COMMCOST_SIM_SPLIT_MS,
 * COMMCOST_SIM_CONNECT_MS, COMMCOST_SIM_P2P_CONNECT_MS (20, one peer's connect), COMMCOST_SIM_BW_GBPS, COMMCOST_SIM_FINALIZE_MS, COMMCOST_SIM_DESTROY_MS,
 * COMMCOST_SIM_ABORT_MS, COMMCOST_SIM_UNIQUEID_MS, COMMCOST_SIM_CUINIT_MS, COMMCOST_SIM_JITTER,
 * COMMCOST_SIM_SHRINK_MS (20; NCCL_SHRINK_ABORT adds COMMCOST_SIM_ABORT_MS/2 of drain),
 * COMMCOST_SIM_GROW_MS (30), COMMCOST_SIM_REVOKE_MS (25: ncclCommRevoke returns ncclInProgress and
 * ncclCommGetAsyncError reports success after that long), COMMCOST_SIM_REGISTER_MS (0.05, each of
 * register and deregister), COMMCOST_SIM_REG_FIRST_MS (2: the first collective using a registered
 * buffer), COMMCOST_SIM_WINDOW_MS (3, collective window register), COMMCOST_SIM_WINDOW_DEREG_MS
 * (0.5), COMMCOST_SIM_MEMALLOC_MS (0, ncclMemAlloc), COMMCOST_SIM_SUSPEND_MS (1),
 * COMMCOST_SIM_RESUME_MS (5), COMMCOST_SIM_GRAPH_MS (0.3, cuGraphInstantiateWithFlags),
 * COMMCOST_SIM_CAPTURE_MS (0, each collective recorded during stream capture),
 * NCCL_RUNTIME_CONNECT (0 = connect inside creation), splitShare (config) and
 * NCCL_COMM_SPLIT_SHARE_RESOURCES (split children then take no memory and reuse the parent's
 * connections),
 * COMMCOST_SIM_DESTROY_BARRIER_VERSION (23102, i.e. 2.31.2; field case C5, pytorch/pytorch#194679:
 * when COMMCOST_SIM_VERSION is at least this, ncclCommDestroy of a communicator this rank shrank
 * with NCCL_SHRINK_ABORT waits until every rank of it has called ncclCommDestroy on it, the
 * intra-node barrier NCCL 2.31.2 reportedly added to destroy and that ncclCommAbort skips: the
 * survivors block forever when the excluded rank aborts the parent or never releases it. To be
 * counted, every ncclCommDestroy of a multi-rank communicator then announces itself to that
 * barrier without waiting. Nothing else waits there; below this version destroy stays local),
 * COMMCOST_SIM_ALGO_REFUSED (a NCCL_ALGO value, e.g. Tree: while NCCL_ALGO is exactly that,
 * ncclAllReduce fails with ncclInvalidUsage and NCCL's text "no algorithm/protocol available ...",
 * as NCCL does when the algorithms it may use cannot run the collective; unset: NCCL_ALGO is
 * accepted and changes nothing in the simulated costs),
 * COMMCOST_SIM_HANG="<fn>:<rank>", COMMCOST_SIM_FAIL="<fn>:<rank>" (every nccl* function that takes
 * a communicator or creates one; <rank> is the rank in the parent, or in the new communicator for
 * init and grow).
 *
 * Profiler plugin (region "Profiler plugin" below): with NCCL_PROFILER_PLUGIN=<path, or a name
 * for libnccl-profiler-<name>.so> the library dlopens it at the first creation (and dlcloses it when
 * the last communicator holding it is finalized, loading it again at the next creation) and takes ncclProfiler_v6, _v5 or
 * _v4, the newest the simulated version knows (v6 from 2.29.2, v5 from 2.28.3, v4 from 2.27.3;
 * ncclProfiler_v7 first only with the test knob COMMCOST_SIM_PROFILER_ABI=7, no release claimed;
 * older: none), the way NCCL does; unset or "none": no plugin. `init` runs at every creation after
 * the rendezvous (bootstrap) and before the connect, with the communicator's tag as commId; each
 * ncclAllReduce is a GroupApi span holding a CollApi span (v5+; v4: Group holding Coll), and the
 * first one on a communicator that is not connected waits inside the GroupApi span until its
 * connect is done (NCCL's lazy connect runs in the first group launch); `finalize` runs at the end
 * of ncclCommDestroy and ncclCommAbort. Without a plugin nothing changes.
 *
 * Files (one internal header, ncclsim_internal.h; nothing but EXPORT symbols leaves the library):
 *   ncclsim.c        this description, commcostSimulated, version/error queries, small comm queries
 *   simCore.c        settings, helpers, device memory counter, device data model
 *   simCuda.c        CUDA driver API, ncclMemAlloc/ncclMemFree
 *   simStream.c      the stream thread, CUDA events, CUDA graphs
 *   simBootstrap.c   the rendezvous server
 *   simComm.c        communicator state, hooks, rendezvous client, config, creation cost
 *   simProfiler.c    the profiler-plugin region
 *   simInit.c        ncclGetUniqueId, NCCL's log, ncclCommInitRank/Config, ncclCommInitAll
 *   simGroup.c       ncclGroupStart/End, the creations deferred to the group's end
 *   simReshape.c     split, shrink, grow, revoke, windows, suspend/resume, MemStats
 *   simCollectives.c registration, ncclAllReduce, ncclBroadcast, ncclSend, ncclRecv
 *   simTeardown.c    finalize, destroy, abort
 *
 * Plain C11 + pthreads; build: cc -std=c11 -O2 -fPIC -shared -pthread <every .c file of native/sim> -o libnccl-sim.so
 * (native/build.mjs).
 */
#include "ncclsim_internal.h"

EXPORT int commcostSimulated = 1;

/* ------------------------------------------------------------------------------------------ */
/* NCCL API                                                                                     */

EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  *version = settings()->version;
  return ncclSuccess;
}

EXPORT const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

EXPORT const char* ncclGetLastError(ncclComm_t comm) {
  (void)comm;
  return lastError;
}
EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (!validComm(comm) || !asyncError) return ncclInvalidArgument;
  pthread_mutex_lock(&comm->lock);
  if (comm->revoked && nowMs() < comm->revokeUntil) *asyncError = ncclInProgress;
  else *asyncError = comm->asyncError;
  pthread_mutex_unlock(&comm->lock);
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  if (!validComm(comm) || !count) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  if (!validComm(comm) || !rank) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}
