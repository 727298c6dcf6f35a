/**
 * The typed face of the native addon (native/, `commcost.node`) and its loader.
 *
 * Only native/ touches NCCL and CUDA. Every timed figure the agent reports comes from the `ms`
 * of one of these calls: host CLOCK_MONOTONIC taken in native code immediately around the
 * library call (collectives include the stream synchronize). When a barrier generation `gen`
 * is passed, the worker thread first waits for the coordinator's barrier release, then times.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface LoadInfo {
  ncclPath: string;
  cudaPath: string;
  ncclVersionCode: number;
  /** e.g. "2.28.9". */
  ncclVersion: string;
  /** cuDriverGetVersion, e.g. 13000. */
  driverVersion: number;
  /** True when the loaded library exports `commcostSimulated` (commcost's simulated NCCL). */
  simulated: boolean;
  /** Optional NCCL symbol → present. */
  symbols: Record<string, boolean>;
}

export interface DeviceInfo {
  ordinal: number;
  name: string;
  totalBytes: number;
  pciBusId: string;
}

export interface Timed {
  /** Duration of the call, host monotonic clock, ms. */
  ms: number;
  /** CLOCK_MONOTONIC ns at which the barrier released this rank (when a gen was passed). */
  releaseNs?: number;
}

export interface CommConfig {
  blocking?: 0 | 1;
  splitShare?: 0 | 1;
}

export interface MemInfo {
  freeBytes: number;
  totalBytes: number;
}

/** Errors thrown or rejected by the addon. */
export interface NativeError extends Error {
  code: 'LOAD' | 'NCCL' | 'CUDA' | 'BARRIER' | 'ARG';
  /** The library function that failed, e.g. "ncclCommSplit". */
  call: string;
  /** ncclResult_t or CUresult. */
  result?: number;
  /** ncclGetErrorString / cuGetErrorString. */
  libraryError?: string;
  /** ncclGetLastError text. */
  lastError?: string;
  /** file:line in native/. */
  where: string;
}

export interface NativeBinding {
  load(opts: { ncclPath: string; cudaPath?: string }): LoadInfo;
  deviceCount(): number;
  deviceInfo(ordinal: number): DeviceInfo;
  initDevice(ordinal: number, bufferBytes: number): Promise<Timed>;
  getUniqueId(gen?: number): Promise<Timed & { id: Buffer }>;
  commInitRank(nranks: number, id: Buffer, rank: number, config?: CommConfig, gen?: number): Promise<Timed & { comm: number }>;
  commSplit(comm: number, color: number, key: number, config?: CommConfig | null, gen?: number): Promise<Timed & { comm: number | null }>;
  allReduce(comm: number, bytes: number, gen?: number): Promise<Timed>;
  commFinalize(comm: number, gen?: number): Promise<Timed>;
  commDestroy(comm: number, gen?: number): Promise<Timed>;
  commAbort(comm: number, gen?: number): Promise<Timed>;
  abortAll(): number;
  memInfo(): MemInfo;
  commCount(comm: number): number;
  commUserRank(comm: number): number;
  barrierConnect(host: string, port: number, rank: number): void;
  barrierWait(gen: number): Promise<Timed>;
  nop(gen?: number): Promise<Timed>;
  monotonicNs(): number;
}

/** True when `e` is an error raised by the addon. */
export function isNativeError(e: unknown): e is NativeError {
  return e instanceof Error && typeof (e as Partial<NativeError>).call === 'string';
}

/** The library error text of a native error, for messages: "ncclCommSplit: unhandled system error (last: ...)" . */
export function describeNativeError(e: unknown): string {
  if (!isNativeError(e)) return e instanceof Error ? e.message : String(e);
  const parts = [e.message];
  if (e.lastError && !e.message.includes(e.lastError)) parts.push(`last error: ${e.lastError}`);
  return parts.join('; ');
}

/** Folder that holds the agent bundle (`agent.js`) and its `native/` folder. */
export function agentDir(): string {
  return __dirname;
}

/** Candidate paths of the addon, in the order tried. */
export function addonCandidates(): string[] {
  const fromEnv = process.env.COMMCOST_ADDON;
  return [
    ...(fromEnv ? [fromEnv] : []),
    path.join(__dirname, 'native', 'commcost.node'),
    path.join(__dirname, '..', 'dist', 'native', 'commcost.node'),
  ];
}

/** Path of the simulated NCCL (+ CUDA driver) library shipped next to the addon. */
export function simulatedLibraryPath(): string {
  for (const candidate of addonCandidates()) {
    const sim = path.join(path.dirname(candidate), 'libnccl-sim.so');
    if (fs.existsSync(sim)) return sim;
  }
  return path.join(__dirname, 'native', 'libnccl-sim.so');
}

let cached: NativeBinding | undefined;

/**
 * Loads the addon once.
 * @throws Error naming every path tried when no addon loads.
 */
export function loadBinding(): NativeBinding {
  if (cached) return cached;
  const tried: string[] = [];
  for (const candidate of addonCandidates()) {
    if (!fs.existsSync(candidate)) {
      tried.push(`${candidate} (missing)`);
      continue;
    }
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      cached = require(candidate) as NativeBinding;
      return cached;
    } catch (e) {
      tried.push(`${candidate} (${e instanceof Error ? e.message : String(e)})`);
    }
  }
  throw new Error(
    `the commcost native addon did not load; tried: ${tried.join('; ')}. Rebuild with \`npm run build\` or redeploy the agent`,
  );
}
