/**
 * commcost native addon: NCCL and the CUDA driver loaded at run time (dlopen), every timed call
 * made from native code on a worker thread.
 *
 * Timing (DESIGN.md "Measurement method"): `ms` is CLOCK_MONOTONIC taken immediately around the
 * library call on the worker thread, after the barrier released (when `gen` is given).
 * Collectives include `cuStreamSynchronize`; a non-blocking communicator (config.blocking = 0) is
 * timed until `ncclCommGetAsyncError` reports success.
 *
 * Barrier: when a timed op gets `gen` (integer > 0), the worker first sends
 * {u32 0x52424343, u32 rank, u64 gen} (little-endian) on the connection made (and proved with the
 * session's secret) by `barrierConnect`,
 * blocks until the coordinator answers {u64 gen}, records `releaseNs`, then times the call.
 *
 * Errors: every failure is a `NativeError` (sync functions throw, async ones reject). A function
 * newer than the loaded NCCL (symbol missing, or the library's version older than the function's
 * first release) fails with code ARG: "ncclCommShrink is not in this NCCL (needs ≥ 2.27.3,
 * loaded 2.26.2)".
 */

/** What `load` found. */
export interface LoadInfo {
  /** File the NCCL library was loaded from (resolved by the dynamic loader). */
  ncclPath: string;
  /** File the CUDA driver library was loaded from. */
  cudaPath: string;
  /** `ncclGetVersion`, e.g. 22809. */
  ncclVersionCode: number;
  /** Version code as text, e.g. "2.28.9". */
  ncclVersion: string;
  /** `cuDriverGetVersion`, e.g. 13000. */
  driverVersion: number;
  /** True when the loaded NCCL library exports the symbol `commcostSimulated` (the simulated NCCL). */
  simulated: boolean;
  /**
   * Every optional NCCL symbol (ncclCommShrink, ncclCommGrow, …) and optional CUDA driver symbol
   * (cuStreamBeginCapture_v2, cuGraphInstantiateWithFlags, …) -> present in the library (dlsym).
   * Presence alone does not make a function callable: the addon also requires the loaded NCCL
   * version to be at least the function's first release (the simulated NCCL exports every symbol
   * whatever COMMCOST_SIM_VERSION says). Gate experiments on `ncclVersionCode`.
   */
  symbols: Record<string, boolean>;
  /**
   * The first load of this process: the dlopen of the CUDA driver library alone, then of the
   * NCCL library alone, host CLOCK_MONOTONIC ms (a later `load` with the same paths returns the
   * first load's figures). Optional for an addon older than these fields.
   */
  cudaLoadMs?: number;
  ncclLoadMs?: number;
}

/** What `initDevice` resolves with: the whole span and two of its parts, host monotonic ms. */
export interface DeviceStart extends Timed {
  /** cuInit alone. */
  cuInitMs?: number;
  /** cuDeviceGet + cuDevicePrimaryCtxRetain + cuCtxSetCurrent: the CUDA context creation. */
  contextMs?: number;
}

export interface DeviceInfo {
  ordinal: number;
  /** cuDeviceGetName. */
  name: string;
  /** cuDeviceTotalMem, bytes. */
  totalBytes: number;
  /** cuDeviceGetPCIBusId, e.g. "0000:18:00.0". */
  pciBusId: string;
}

export interface Timed {
  /** Call duration in milliseconds (float), host CLOCK_MONOTONIC around the library call. */
  ms: number;
  /** CLOCK_MONOTONIC in ns when the barrier released (only if `gen` was given); a Number, so precision loss is possible. */
  releaseNs?: number;
  /** Set when an in-flight window armed by {@link armInFlight} ran around this call. */
  inFlight?: InFlightReport;
}

/** What the in-flight window of {@link armInFlight} saw around one timed call. */
export interface InFlightReport {
  /**
   * The CUDA event recorded after the enqueues was not complete when the timed span began
   * (cuEventQuery answered CUDA_ERROR_NOT_READY): work was in flight when the call started.
   */
  atStart: boolean;
  /** Allreduces enqueued after the barrier, before the span. */
  enqueued: number;
  /** Their enqueue calls and the event record, ms (outside the span). */
  enqueueMs: number;
  /** The library call alone, ms; `ms` adds the stream synchronize when `untilQuiet`. */
  callMs: number;
}

/** One allreduce of an in-flight window: float32 sum of `bytes` from `buffer` (default 0). */
export interface InFlightOp {
  comm: number;
  bytes: number;
  buffer?: number;
  /** Out of place into this buffer at `recvOffset` (bytes, default 0); in place when absent. */
  recvBuffer?: number;
  recvOffset?: number;
}

/** ncclConfig_t fields commcost sets; others stay NCCL_CONFIG_UNDEF (library default). */
export interface CommConfig {
  /** 0 = non-blocking (the call is polled with ncclCommGetAsyncError inside the timed span). Needs NCCL ≥ 2.14.3. */
  blocking?: 0 | 1;
  /** 1 = ncclCommSplit children of this communicator share its resources. Needs NCCL ≥ 2.18.1. */
  splitShare?: 0 | 1;
  /** Fewest channels (CTAs) NCCL may use, ≥ 1. Needs NCCL ≥ 2.17.1. */
  minCTAs?: number;
  /** Most channels (CTAs) NCCL may use, ≥ 1 (and ≥ minCTAs: NCCL refuses otherwise). Needs NCCL ≥ 2.17.1. */
  maxCTAs?: number;
  /** Most peers a rank keeps P2P (send/recv) buffers for, ≥ 1 (default nRanks). Needs NCCL ≥ 2.30.3 (an older library ignores the field: the addon refuses it with ARG). */
  maxP2pPeers?: number;
}

export interface MemInfo {
  /** cuMemGetInfo free bytes on this process's device. */
  freeBytes: number;
  /** cuMemGetInfo total bytes. */
  totalBytes: number;
}

export interface NativeError extends Error {
  /** LOAD: library loading; NCCL / CUDA: a library call failed; BARRIER: barrier socket; ARG: bad argument or call order. */
  code: 'LOAD' | 'NCCL' | 'CUDA' | 'BARRIER' | 'ARG';
  /** The failing call, e.g. "ncclCommSplit", "cuMemAlloc_v2", "barrierWait". */
  call: string;
  /** ncclResult_t (code NCCL) or CUresult (code CUDA). */
  result?: number;
  /** ncclGetErrorString / cuGetErrorString of `result`. */
  libraryError?: string;
  /** ncclGetLastError text, when non-empty. */
  lastError?: string;
  /** Native source location, "file.cc:line". */
  where: string;
}

/**
 * Loads NCCL and the CUDA driver (dlopen, once per process). Sync.
 * Calling again with the same paths returns the same info; with other paths it throws.
 * @throws NativeError code LOAD with the dlerror text (which names the path)
 */
export function load(opts: { ncclPath: string; /** default "libcuda.so.1" */ cudaPath?: string }): LoadInfo;

/** cuInit + cuDeviceGetCount. Sync. */
export function deviceCount(): number;

/** Name, memory and PCI bus id of a device. Sync. */
export function deviceInfo(ordinal: number): DeviceInfo;

/**
 * The process's one-time CUDA start, timed as one span: cuInit, retain and set the primary
 * context, create the stream, allocate the device buffer of `bufferBytes` (memset 0) used by every
 * allReduce. Call once per process (a second call rejects with ARG). `cuInitMs` and `contextMs`
 * are parts of `ms` (see {@link DeviceStart}).
 */
export function initDevice(ordinal: number, bufferBytes: number, gen?: number): Promise<DeviceStart>;

/** ncclGetUniqueId; `id` is the 128-byte ncclUniqueId to send to the other ranks. */
export function getUniqueId(gen?: number): Promise<Timed & { id: Buffer }>;

/**
 * ncclCommInitRank (no config) or ncclCommInitRankConfig (config given, even `{}`).
 * @returns `comm`: a handle into the addon's communicator table
 */
export function commInitRank(
  nranks: number,
  id: Buffer,
  rank: number,
  config?: CommConfig,
  gen?: number,
): Promise<Timed & { comm: number }>;

/**
 * ncclCommInitRankScalable (NCCL ≥ 2.23.4): a communicator of `nranks` made with several unique
 * ids (nId = `ids.length`, 1 to `nranks`), which spread the bootstrap over as many roots; every
 * rank passes the same ids in the same order. `config` as commInitRank (absent: NULL config).
 * @returns `comm`: a handle into the addon's communicator table; `ms` the call (non-blocking: until ready)
 * @throws NativeError ARG (not in this NCCL or older than 2.23.4, no ids, more ids than ranks, an id not 128 bytes), NCCL
 */
export function commInitRankScalable(
  nranks: number,
  ids: readonly Buffer[],
  rank: number,
  config?: CommConfig,
  gen?: number,
): Promise<Timed & { comm: number }>;

/**
 * ncclCommSplit, collective over every rank of the parent. `color` -1 = NCCL_SPLIT_NOCOLOR: this
 * rank takes part but gets no communicator (the result's comm is null). `config` null or absent:
 * the child inherits the parent's config.
 */
export function commSplit(
  comm: number,
  color: number,
  key: number,
  config?: CommConfig | null,
  gen?: number,
): Promise<Timed & { comm: number | null }>;

/**
 * Device buffers: 0 is the addon's own collective buffer (allocated by initDevice); others come
 * from memAlloc. `kind` 'cuda' = cuMemAlloc_v2; 'nccl' = ncclMemAlloc (cuMem-backed, rounded up
 * to the allocation granularity; needed for windowRegister; NCCL ≥ 2.19.1). `bytes` > 0. Timed
 * span = the allocation call (no barrier). Needs initDevice.
 * @throws NativeError ARG (no device, bad kind, ncclMemAlloc not in this NCCL), CUDA / NCCL (out of memory)
 */
export function memAlloc(bytes: number, kind: 'cuda' | 'nccl'): Promise<Timed & { buffer: number }>;

/** cuMemFree_v2 or ncclMemFree of a memAlloc buffer; the handle is released when the call starts. Buffer 0 cannot be freed (ARG). */
export function memFree(buffer: number): Promise<Timed>;

/** Options of allReduce. */
export interface AllReduceOptions {
  /** Buffer handle (0 = initDevice's buffer, default; others from memAlloc). `bytes` must fit in it (else ARG). */
  buffer?: number;
  /**
   * true (default): timed span = ncclAllReduce + cuStreamSynchronize, then ncclCommGetAsyncError
   * is checked (outside the span). false: timed span = the enqueue only; the work stays in flight
   * on the addon's stream until streamSynchronize (for drain experiments).
   */
  sync?: boolean;
}

/**
 * float32 sum of `bytes` bytes in place on a device buffer (see AllReduceOptions).
 * @throws NativeError ARG (too many bytes, unknown buffer or comm), NCCL (call failed, an async
 *   error after the sync, or the communicator was aborted by abortAll meanwhile: result 6)
 */
export function allReduce(comm: number, bytes: number, gen?: number, opts?: AllReduceOptions): Promise<Timed>;

/**
 * ncclBroadcast of `bytes` bytes (float32) from `root` in place on initDevice's buffer, timed like
 * allReduce: the span is the call + cuStreamSynchronize (a non-blocking communicator polled to
 * done inside it), ncclCommGetAsyncError checked after. The first broadcast on a communicator pays
 * its lazy connect (NCCL ≥ 2.22, NCCL_RUNTIME_CONNECT unset) like the first allreduce.
 * @throws NativeError ARG (no ncclBroadcast in the library, too many bytes, root out of range, unknown comm), NCCL
 */
export function broadcast(comm: number, bytes: number, root: number, gen?: number): Promise<Timed>;

/**
 * A send/recv pair with `peer` (this rank's partner; itself on a 1-rank communicator): ncclGroupStart,
 * ncclSend of `bytes` from the start of initDevice's buffer, ncclRecv of `bytes` into the bytes after it,
 * ncclGroupEnd, cuStreamSynchronize, all in the timed span; `peer` must make the same call with this
 * rank. The first one with a peer pays that peer's lazy point-to-point connect (always at first use in
 * NCCL, whatever NCCL_RUNTIME_CONNECT says). 2 × `bytes` must fit in the buffer (else ARG).
 * @throws NativeError ARG (no ncclSend/ncclRecv, too many bytes, unknown comm), NCCL
 */
export function sendRecv(comm: number, peer: number, bytes: number, gen?: number): Promise<Timed>;

/** cuStreamSynchronize of the addon's stream: waits for every in-flight operation (allReduce sync=false). */
export function streamSynchronize(gen?: number): Promise<Timed>;

/**
 * ncclCommShrink (NCCL ≥ 2.27.3). Only the surviving ranks call (collective among them; an
 * excluded rank must not call); `excludeRanks` are ranks of the parent; survivors are renumbered
 * contiguously. `flags` 0 = NCCL_SHRINK_DEFAULT (no work may be in flight on the parent),
 * 1 = NCCL_SHRINK_ABORT (in-flight work on the parent is killed and its stream drained inside the
 * call). The parent stays allocated: destroy or abort it afterwards. `config` null/absent: the
 * child inherits the parent's. A non-blocking child is polled until ready inside the span.
 * @throws NativeError ARG "ncclCommShrink is not in this NCCL (needs ≥ 2.27.3, loaded …)", NCCL
 */
export function commShrink(
  comm: number,
  excludeRanks: number[],
  flags: 0 | 1,
  config?: CommConfig | null,
  gen?: number,
): Promise<Timed & { comm: number | null }>;

/**
 * ncclCommGetUniqueId (NCCL ≥ 2.29.2): called by exactly one existing rank (the grow
 * coordinator) before each commGrow; `id` (128 bytes) goes to the new ranks. Single use.
 * @throws NativeError ARG (not in this NCCL), NCCL
 */
export function commGetUniqueId(comm: number, gen?: number): Promise<Timed & { id: Buffer }>;

/**
 * ncclCommGrow (NCCL ≥ 2.29.2), collective over the old and the new ranks. Existing ranks:
 * `comm` = the parent, `id` null (the coordinator may pass its id), `rank` -1 (they keep their
 * rank). New ranks: `comm` null, `id` from commGetUniqueId, `rank` = its rank in the grown
 * communicator (≥ the parent's size). `nranks` = the new size. Destroy the parent afterwards.
 * A new rank needs initDevice first.
 * @throws NativeError ARG (not in this NCCL, bad comm/id/rank combination), NCCL
 */
export function commGrow(
  comm: number | null,
  nranks: number,
  id: Buffer | null,
  rank: number,
  config?: CommConfig | null,
  gen?: number,
): Promise<Timed & { comm: number }>;

/**
 * ncclCommRevoke(comm, NCCL_REVOKE_DEFAULT) then ncclCommGetAsyncError polled until not
 * InProgress (NCCL ≥ 2.28.7). Per rank. `ms` covers both (until quiet); `callMs` = the revoke call
 * alone. Afterwards collectives fail with ncclInvalidUsage (5), finalize and a second revoke with
 * ncclInvalidArgument (4); destroy, abort, split and shrink are allowed. The handle stays valid.
 * @throws NativeError ARG (not in this NCCL), NCCL
 */
export function commRevoke(comm: number, gen?: number): Promise<Timed & { callMs: number }>;

/**
 * ncclCommRegister of the first `bytes` of a buffer (NCCL ≥ 2.19.1); local, per communicator.
 * Since 2.21 it only records the range: the real registration lands in the first collective that
 * uses the buffer (measure that allReduce too). `handle` is the addon's registration handle.
 * @throws NativeError ARG (not in this NCCL, unknown buffer, bytes too large), NCCL
 */
export function commRegister(comm: number, buffer: number, bytes: number, gen?: number): Promise<Timed & { handle: number }>;

/** ncclCommDeregister of a commRegister handle of the same comm (NCCL ≥ 2.19.1); the handle is released when the call starts. */
export function commDeregister(comm: number, handle: number, gen?: number): Promise<Timed>;

/**
 * ncclCommWindowRegister (NCCL ≥ 2.27.3), collective over every rank of the comm; the buffer
 * must be cuMem memory (memAlloc kind 'nccl'). `flags`: NCCL_WIN_DEFAULT 0, NCCL_WIN_COLL_SYMMETRIC 1,
 * NCCL_WIN_STRICT_ORDERING 2 (2.29.7). `window` null when NCCL returned a NULL window (no
 * symmetric support on this communicator, 2.29.2+).
 * @throws NativeError ARG (not in this NCCL), NCCL (e.g. ncclInvalidArgument for non-cuMem memory)
 */
export function windowRegister(
  comm: number,
  buffer: number,
  bytes: number,
  flags: number,
  gen?: number,
): Promise<Timed & { window: number | null }>;

/** ncclCommWindowDeregister (local; no operation may use the window); the handle is released when the call starts. */
export function windowDeregister(comm: number, window: number, gen?: number): Promise<Timed>;

/**
 * ncclCommSuspend (NCCL ≥ 2.29.7); `flags` NCCL_SUSPEND_MEM = 1 releases the dynamic GPU
 * allocations while keeping the communicator. No operation may be in flight.
 * @throws NativeError ARG (not in this NCCL), NCCL
 */
export function commSuspend(comm: number, flags: number, gen?: number): Promise<Timed>;

/** ncclCommResume (NCCL ≥ 2.29.7): restores what commSuspend released. */
export function commResume(comm: number, gen?: number): Promise<Timed>;

/** ncclCommMemStats values of one communicator, bytes. */
export interface CommMemStats {
  /** ncclStatGpuMemSuspend: GPU memory that commSuspend(NCCL_SUSPEND_MEM) would release. */
  suspendableBytes?: number;
  /** ncclStatGpuMemPersist: GPU memory kept while suspended. */
  persistentBytes?: number;
  /** ncclStatGpuMemTotal: all GPU memory of the communicator. */
  totalBytes?: number;
  /** ncclStatGpuMemSuspended: the communicator is suspended. */
  suspended?: boolean;
}

/**
 * ncclCommMemStats where present (NCCL ≥ 2.29.7): bytes by stat; undefined when the library lacks
 * it (symbol missing or older version). Sync. @throws NativeError NCCL when a query fails
 */
export function commMemStats(comm: number): CommMemStats | undefined;

/**
 * The "switch" of a prewarmed pool: capture one float32 allReduce of `bytes` (≤ bufferBytes, on
 * buffer 0) on `comm` into a CUDA graph on the addon's stream (cuStreamBeginCapture_v2 in
 * CU_STREAM_CAPTURE_MODE_RELAXED / ncclAllReduce / cuStreamEndCapture), instantiate it
 * (cuGraphInstantiateWithFlags, flags 0), launch it once (cuGraphLaunch) and synchronize; the
 * graph is destroyed afterwards (outside the span). Driver API only (CUDA ≥ 11.4 driver).
 * ms = captureMs + instantiateMs + launchMs (launchMs includes the stream synchronize).
 * Capture must be uniform across ranks: every rank of `comm` calls it.
 * @throws NativeError ARG (a graph function missing from the driver), CUDA, NCCL
 */
export function graphAllReduce(
  comm: number,
  bytes: number,
  gen?: number,
): Promise<Timed & { captureMs: number; instantiateMs: number; launchMs: number }>;

/**
 * Non-blocking init (config.blocking = 0) that can be aborted while polling: ncclCommInitRankConfig,
 * then ncclCommGetAsyncError polled until success, or until abortAll() (from the JavaScript
 * thread) or `deadlineMs` after the call started, then ncclCommAbort. On success `comm` is a
 * handle and `aborted` false; otherwise `comm` null, `aborted` true, `ms` = start → abort
 * returned and `abortMs` the ncclCommAbort call alone (host monotonic ms; 0 when not aborted).
 * (An NCCL_COMM_BLOCKING=1 environment makes the init call itself block: not abortable.)
 * @throws NativeError NCCL when the init fails (the communicator is aborted first)
 */
export function commInitRankAbortable(
  nranks: number,
  id: Buffer,
  rank: number,
  deadlineMs: number,
  gen?: number,
): Promise<Timed & { comm: number | null; aborted: boolean; abortMs: number }>;

/** ncclCommFinalize (synchronizes with the peers). */
export function commFinalize(comm: number, gen?: number): Promise<Timed>;

/** ncclCommDestroy; the handle is released when the call starts (even if it fails). */
export function commDestroy(comm: number, gen?: number): Promise<Timed>;

/** ncclCommAbort; the handle is released when the call starts. */
export function commAbort(comm: number, gen?: number): Promise<Timed>;

/**
 * Hang guard: ncclCommAbort on every live communicator, from the JavaScript thread, while other
 * operations may be blocked on worker threads (they then reject with a NCCL error). Also makes
 * every commInitRankAbortable that is polling abort its communicator and resolve with
 * `aborted: true`. Sync.
 * @returns how many communicators of the table were aborted (pending abortable inits not counted)
 */
export function abortAll(): number;

/**
 * Arms the in-flight window of the next timed operation (the drain, revoke and NCCL_SHRINK_ABORT
 * experiments): on that op's worker thread, after the barrier released (when it has a `gen`) and
 * before its span starts, the allreduces of `ops` are enqueued on the addon's stream without a
 * synchronize, a CUDA event is recorded after them and queried; the op's result then carries
 * `inFlight` ({@link InFlightReport}). With `untilQuiet` the span also covers a
 * cuStreamSynchronize after the call, so `ms` ends when the GPU work is done and `inFlight.callMs`
 * is the call alone. One arming serves one timed op; arming again replaces an unused one. An
 * empty `ops` arms a window with nothing enqueued (atStart then tells whether earlier work was
 * still running). Sync.
 * @throws NativeError ARG (the driver lacks the event functions, bytes not a multiple of 4, a
 *   range that does not fit its buffer, unknown comm or buffer); an enqueue failure rejects the op
 */
export function armInFlight(ops: InFlightOp[], opts?: { untilQuiet?: boolean }): void;

/**
 * cuMemsetD32 of the first `bytes` (default: the whole buffer) of a memAlloc buffer (or 0) with
 * the float32 `value`; ordered before later work on the addon's stream. Sync.
 * @throws NativeError ARG (no device, unknown buffer, bytes not a multiple of 4 or too large), CUDA
 */
export function memFill(buffer: number, value: number, bytes?: number): void;

/**
 * The float32 values at byte `offsets` (multiples of 4) of a buffer, copied back with
 * cuMemcpyDtoH (after the work on the addon's stream): the drop check of in-flight work. Sync.
 * @throws NativeError ARG (no device, unknown buffer, offset not a multiple of 4 or outside), CUDA
 */
export function readFloats(buffer: number, offsets: number[]): number[];

/** cuMemGetInfo on this process's device (after initDevice). Sync. */
export function memInfo(): MemInfo;

/** ncclCommCount. Sync. */
export function commCount(comm: number): number;

/** ncclCommUserRank. Sync. */
export function commUserRank(comm: number): number;

/**
 * Connects (TCP_NODELAY) to the coordinator's barrier server as `rank` and sends the hello
 * {u32 0x48424343, u32 rank, 32 bytes `token`}: the rank session's secret (COMMCOST_SESSION_TOKEN),
 * without which the server closes the connection. Replaces a previous connection. Sync.
 * @throws NativeError code BARRIER (token not 32 characters, no connection) or ARG
 */
export function barrierConnect(host: string, port: number, rank: number, token: string): void;

/**
 * Maps the one-host release file `path` (COMMCOST_BARRIER_SHM: created by the coordinator, mode
 * 0600, header {u32 0x53424343, u32 worldSize}; native/src/shmBarrier.h) after barrierConnect:
 * from then on every barrier wait sends its arrival as a notice on the barrier socket and waits
 * for the release in shared memory (spin, then FUTEX_WAIT). Sync.
 * @returns the spin budget before sleeping, µs
 * @throws NativeError code BARRIER (cannot open or map it; not this user's 0600 file; other world size) or ARG
 */
export function barrierAttachShm(path: string, worldSize: number): number;

/** Waits at barrier `gen` (no library call): `ms` = 0, `releaseNs` set. Rejects with BARRIER on a closed socket or gen mismatch. */
export function barrierWait(gen: number): Promise<Timed>;

/** An empty timed op through the same worker path (harness-overhead benchmark). */
export function nop(gen?: number): Promise<Timed>;

/** CLOCK_MONOTONIC in ns (same clock as `releaseNs`), as a Number. */
export function monotonicNs(): number;
