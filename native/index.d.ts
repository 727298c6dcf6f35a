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
 * {u32 0x52424343, u32 rank, u64 gen} (little-endian) on the connection made by `barrierConnect`,
 * blocks until the coordinator answers {u64 gen}, records `releaseNs`, then times the call.
 *
 * Errors: every failure is a `NativeError` (sync functions throw, async ones reject).
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
  /** Every optional NCCL symbol (ncclCommShrink, ncclCommGrow, …) -> present in the library. */
  symbols: Record<string, boolean>;
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
}

/** ncclConfig_t fields commcost sets; others stay NCCL_CONFIG_UNDEF (library default). */
export interface CommConfig {
  /** 0 = non-blocking (the call is polled with ncclCommGetAsyncError inside the timed span). Needs NCCL ≥ 2.14.3. */
  blocking?: 0 | 1;
  /** 1 = ncclCommSplit children of this communicator share its resources. Needs NCCL ≥ 2.18.1. */
  splitShare?: 0 | 1;
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
 * allReduce. Call once per process (a second call rejects with ARG).
 */
export function initDevice(ordinal: number, bufferBytes: number, gen?: number): Promise<Timed>;

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
 * ncclCommSplit. `color` -1 = NCCL_SPLIT_NOCOLOR (the result's comm is null). `config` null or
 * absent: the child inherits the parent's config.
 */
export function commSplit(
  comm: number,
  color: number,
  key: number,
  config?: CommConfig | null,
  gen?: number,
): Promise<Timed & { comm: number | null }>;

/** float32 sum of `bytes` bytes (bytes ≤ bufferBytes) in place on the device buffer; timed span = enqueue + cuStreamSynchronize. */
export function allReduce(comm: number, bytes: number, gen?: number): Promise<Timed>;

/** ncclCommFinalize (synchronizes with the peers). */
export function commFinalize(comm: number, gen?: number): Promise<Timed>;

/** ncclCommDestroy; the handle is released when the call starts (even if it fails). */
export function commDestroy(comm: number, gen?: number): Promise<Timed>;

/** ncclCommAbort; the handle is released when the call starts. */
export function commAbort(comm: number, gen?: number): Promise<Timed>;

/**
 * Hang guard: ncclCommAbort on every live communicator, from the JavaScript thread, while other
 * operations may be blocked on worker threads (they then reject with a NCCL error). Sync.
 * @returns how many communicators were aborted
 */
export function abortAll(): number;

/** cuMemGetInfo on this process's device (after initDevice). Sync. */
export function memInfo(): MemInfo;

/** ncclCommCount. Sync. */
export function commCount(comm: number): number;

/** ncclCommUserRank. Sync. */
export function commUserRank(comm: number): number;

/** Connects (TCP_NODELAY) to the coordinator's barrier server as `rank`; replaces a previous connection. Sync. @throws NativeError code BARRIER */
export function barrierConnect(host: string, port: number, rank: number): void;

/** Waits at barrier `gen` (no library call): `ms` = 0, `releaseNs` set. Rejects with BARRIER on a closed socket or gen mismatch. */
export function barrierWait(gen: number): Promise<Timed>;

/** An empty timed op through the same worker path (harness-overhead benchmark). */
export function nop(gen?: number): Promise<Timed>;

/** CLOCK_MONOTONIC in ns (same clock as `releaseNs`), as a Number. */
export function monotonicNs(): number;
