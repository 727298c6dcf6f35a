/**
 * The trace file of `commcost trace` (schema-versioned; saved in `.commcost/traces/`): what one
 * run of the user's own job paid per call site, merged from the profiler plugin's and the Python
 * hook's per-process records (client/trace/merge.ts). Times are ms unless named otherwise; memory
 * in bytes. Imports nothing.
 */

/**
 * The trace file format version written. 2 added NCCL's view (`nccl` on occurrences and sites,
 * `ncclLog` on the file) and each occurrence's per-rank spans (`perRank`, the timeline); a reader
 * still accepts version 1 files, read as having neither (client/traceSchema.ts).
 */
export const TRACE_VERSION = 2;
/** Every version a reader accepts. */
export const TRACE_VERSIONS_READ: readonly number[] = [1, 2];

/**
 * NCCL's own breakdown of a creation, from its `Init timings` log line (NCCL ≥ 2.23.4, NCCL_DEBUG=INFO
 * with the INIT subsystem), beside commcost's figures as "NCCL's view". `parts` are ms (NCCL prints
 * seconds with two decimals, so 10 ms steps): `total`, `kernels`, `alloc`, `bootstrap`, `allgathers`,
 * `topo`, `graphs`, `connections`, `rest` as the line had them. On an occurrence: MAX over the ranks
 * whose line was read; on a site: the median over its occurrences that have one.
 */
export interface TraceNcclView {
  /** The creating function NCCL named ("ncclCommInitRankConfig", "ncclCommSplit"), when it did. */
  fn: string | null;
  parts: Record<string, number>;
  /** Ranks (occurrence) or occurrences (site) whose line was read. */
  n: number;
  /** How the log line was joined to the plugin's communicator: by NCCL's commId, or by order in the process (split children print none). */
  join: 'commId' | 'order';
}

/** One rank's spans in an occurrence, monotonic ms (the host's CLOCK_MONOTONIC): the timeline. */
export interface TraceRankSpans {
  /** The process's rank (the hook's), else its rank in this communicator. */
  rank: number | null;
  pid: number;
  host: string;
  /** The rank in this communicator, as NCCL gave it to the plugin. */
  commRank: number;
  /** The call that created it (Python window, native interposer window), or [plugin init, plugin init] when only the plugin saw it. */
  creation: [number, number] | null;
  /** When NCCL reached the plugin's init (after bootstrap and topology). */
  init: number;
  firstCollective: [number, number] | null;
  /** The plugin's first group span (the lazy connect); may run outside the call's window (background). */
  connect: [number, number] | null;
  teardown: [number, number] | null;
  /** When NCCL reached the plugin's finalize; null when it never did. */
  fin: number | null;
  cold: boolean;
}

/** Median, p90 and max over a site's occurrences of one phase (each occurrence: MAX over its ranks), ms. */
export interface TracePhaseStats {
  n: number;
  medianMs: number;
  p90Ms: number;
  maxMs: number;
}

/** One occurrence of a call site: the k-th call of it in every process, joined across ranks. */
export interface TraceOccurrence {
  index: number;
  /** Processes (ranks) that took part. */
  ranks: number;
  /** nranks of the communicator(s) made, as the plugin saw them. */
  commRanks: number[];
  commIds: string[];
  /** Each phase as MAX over ranks of each rank's window; null when not measured (said in `notes`). */
  creationMs: number | null;
  firstCollectiveMs: number | null;
  /** The plugin's first GroupApi span (NCCL ≥ 2.28; the Group span on 2.27): the lazy connect runs in it. */
  connectMs: number | null;
  teardownMs: number | null;
  /** Device free-memory drop from the plugin's init to the end of the first group, MAX over ranks; null when unknown. */
  memoryBytes: number | null;
  /** The first communicator of at least one of its processes (the process's one-time start is in it). */
  cold: boolean;
  /** Monotonic ms of each phase's start on the first rank (order checks, the timeline). */
  at: { creation: number | null; firstCollective: number | null; teardown: number | null };
  /** NCCL's view of this creation (v2); null when no log line was joined. */
  nccl: TraceNcclView | null;
  /** Each rank's spans (v2; empty in version 1 files). */
  perRank: TraceRankSpans[];
}

/**
 * Where a creation was paid when its call returned before the communicator was made (the C
 * interposer, client/trace/grouped.ts); absent on a site whose creations were paid in the call, and
 * in files written before it (the file version is unchanged: an optional field).
 * - `group`: the call was inside ncclGroupStart/End; the group's ncclGroupEnd paid it (`at`). The
 *   creation figure runs from the call to that ncclGroupEnd's return.
 * - `initAll`: ncclCommInitAll, NCCL's own group inside the call; the call paid it.
 * - `nonblocking`: config.blocking = 0: the call (or its group's ncclGroupEnd, `groupEnd`) returned
 *   ncclInProgress; the creation runs to the first ncclCommGetAsyncError that reported it done
 *   (`at`), and has no figure when no such poll was seen (`api` null).
 */
/** How a deferred creation is marked after its API in the trace's tables (CLI and HTML): " (grouped)". */
export const DEFERRED_MARK: Readonly<Record<TraceDeferred['kind'], string>> = { group: ' (grouped)', initAll: ' (own group)', nonblocking: ' (non-blocking)' };

/** How a Python site reached NCCL (TraceSite.binding). */
export type TraceBinding = 'ctypes' | 'cffi' | 'extension';

/** How a binding is marked after its API in the trace's tables (CLI and HTML): " [ctypes]". */
export const BINDING_MARK: Readonly<Record<TraceBinding, string>> = { ctypes: ' [ctypes]', cffi: ' [cffi]', extension: ' [C extension]' };

/**
 * A site's API as the trace's tables (CLI and HTML) write it: the call, then how NCCL was reached
 * (" [ctypes]"), whether it was lazy and how a deferred creation was paid (" (grouped)").
 */
export function siteApiText(s: Pick<TraceSite, 'api' | 'lazy' | 'deferred' | 'binding'>): string {
  return s.api + (s.binding ? BINDING_MARK[s.binding] : '') + (s.lazy ? ' (lazy)' : '') + (s.deferred ? DEFERRED_MARK[s.deferred.kind] : '');
}

export interface TraceDeferred {
  kind: 'group' | 'initAll' | 'nonblocking';
  /** The call that paid it or saw it done: ncclGroupEnd, ncclCommInitAll, ncclCommGetAsyncError; null when never seen. */
  api: string | null;
  /** That call's file:line (or object+offset); null when unknown. */
  at: string | null;
  /** A non-blocking creation inside a group: that group's ncclGroupEnd, file:line. */
  groupEnd?: string | null;
}

/** A call site: where the user's code created communicators (Python line, or a native frame). */
export interface TraceSite {
  key: string;
  /** 'python': the hook's first user frame; 'native': the plugin's first frame outside NCCL; 'unattributed': neither. */
  source: 'python' | 'native' | 'unattributed';
  api: string;
  file: string | null;
  line: number | null;
  func: string | null;
  /** The wrappers the call went through (innermost last), file:line. */
  chain: string[];
  /** Lazy group: the communicator was created at its first collective (this site is the group's creation). */
  lazy: boolean;
  /** The Ray actors whose processes ran this site (`Class@node ip`, sorted), when any process was a Ray worker. */
  actors?: string[];
  firstCollectiveSite: string | null;
  teardownSite: string | null;
  count: number;
  creation: TracePhaseStats | null;
  firstCollective: TracePhaseStats | null;
  connect: TracePhaseStats | null;
  teardown: TracePhaseStats | null;
  memoryBytes: number | null;
  cold: boolean;
  /** NCCL's view, median per part over the occurrences that have one (v2); null when none. */
  nccl: TraceNcclView | null;
  occurrences: TraceOccurrence[];
  notes: string[];
  /** The creation was paid after its call returned (a group's end, ncclCommInitAll, a non-blocking completion); absent: in the call. */
  deferred?: TraceDeferred;
  /**
   * How a Python site reached NCCL when not through torch (native/pyhook/): `ctypes` or `cffi` (a
   * foreign-function library; the site is named by the NCCL function), `extension` (a compiled
   * extension — Cython bindings, a CPython C extension — calling libnccl itself; the site is named
   * by the extension's function). Absent: torch's own call, a native site, or a file written before it.
   */
  binding?: TraceBinding;
  /**
   * The op of the communicator's first use, whose figure `firstCollective` is, in torch.distributed's
   * words (client/trace/firstUse.ts): `all_reduce`, `broadcast`, `all_gather`, `send`, `recv`, …, from
   * the Python hook's call or the profiler plugin's NCCL function (Broadcast → broadcast). Absent when
   * unknown (files written before it, or no first use seen).
   */
  firstUse?: string;
  /** One teardown call tore down this many communicators of its process (destroy_process_group() of the default group): the teardown figure is that call's, paid once for all; absent when one each. */
  teardownShared?: number;
}

/** One traced process. */
export interface TraceProcess {
  host: string;
  pid: number;
  rank: number | null;
  python: boolean;
  plugin: boolean;
  pluginAbi: number | null;
  ncclVersion: number | null;
  communicators: number;
  /** A Ray worker (native/pyhook/commcost_ray.py): the actor it hosted and the node it ran on; absent outside Ray. */
  ray?: TraceRayWorker;
}

/** A Ray worker process's identity, as Ray's runtime context gave it. */
export interface TraceRayWorker {
  /** Ray's node id (hex). */
  node: string;
  /** The node's IP address, when Ray said. */
  ip: string | null;
  /** The actor's class name; null in a task (no actor). */
  actor: string | null;
  actorId: string | null;
}

/**
 * Which clock the trace's timeline is in (`perRank` spans and `at`). Phase durations (creation,
 * first collective, connect, teardown) are always differences of one host's CLOCK_MONOTONIC, so
 * they never need an offset; only the timeline across hosts does.
 * - `monotonic`: the records came from one host: its CLOCK_MONOTONIC, shared by its processes.
 * - `wall-offsets`: several hosts: each host's monotonic times are shifted onto the `reference`
 *   host's by the difference of their (wall clock − monotonic) offsets, from the wall-clock stamp
 *   each process writes with a monotonic one at its start. The uncertainty is the hosts'
 *   wall-clock sync (NTP, PTP), which the trace cannot know.
 * Absent in files written before it (read as unknown).
 */
export interface TraceClock {
  kind: 'monotonic' | 'wall-offsets';
  /** Hosts the records came from (their host names). */
  hosts: number;
  /** The host whose monotonic clock the timeline is in (`wall-offsets`). */
  reference?: string;
  /** Per host: ms added to its monotonic times to put them on the reference's; null when its records had no wall-clock stamp (its timeline is left unshifted). */
  offsetsMs?: Record<string, number | null>;
  /** Largest spread of (wall clock − monotonic) among one host's processes, ms: how well the pairs were taken (and any NTP slew during the job). */
  pairSpreadMs?: number;
  /** In words, with the uncertainty. */
  note: string;
}

/**
 * The environment a trace was taken in, as a run's stamp says it (protocol/eventTypes.ts
 * `EnvironmentStamp`), from the profiler plugin's `proc` record of each process: what a reader needs to
 * compare a trace with a run or another trace. A field no process recorded is null (a plugin older than
 * this record, or a driver that does not say). Absent in files written before it.
 */
export interface TraceEnvironment {
  /** Host names the records came from. */
  hosts: string[];
  /** GPU model(s) of device 0 of each process, distinct, e.g. ["NVIDIA H200"]. */
  gpuModels: string[];
  /** Devices visible to a process (the largest count seen); null when unknown. */
  gpuCount: number | null;
  /** Processes (ranks) traced. */
  processes: number;
  /** NVIDIA kernel driver version (/proc/driver/nvidia/version), e.g. "570.86.15"; null when unknown. */
  driverVersion: string | null;
  /** CUDA driver API version (cuDriverGetVersion) as "12.8"; null when unknown. */
  cudaVersion: string | null;
  /** NCCL version(s) as "2.28.9", distinct. */
  ncclVersions: string[];
  /** The NCCL library the job loaded (the file that called the plugin), distinct. */
  ncclPaths: string[];
  /** How that NCCL was chosen: "simulated" (commcost's, --simulate) or "job" (the job's own, as its loader found it). */
  ncclSource: 'simulated' | 'job';
  /** The host `commcost trace` ran on. */
  tracedFrom: string;
}

/** The trace file. */
export interface TraceFile {
  kind: 'commcost-trace';
  version: number;
  command: string[];
  startedAt: string;
  endedAt: string;
  exitCode: number | null;
  signal: string | null;
  /** 'partial': the job failed, hung (deadline), was cancelled, or records are missing (`missing`). */
  status: 'complete' | 'partial';
  missing: string[];
  /** Every figure came from commcost's simulated NCCL (decided from the library's own mark). */
  simulated: boolean;
  host: string;
  ncclVersion: number | null;
  processes: TraceProcess[];
  /**
   * What NCCL's debug logs gave (v2): processes whose log was read, creations read, creations
   * joined to a communicator, and why there is no view when the log was not asked for (`note`);
   * null when no log file was found.
   */
  ncclLog: { processes: number; creations: number; joined: number; note?: string } | null;
  sites: TraceSite[];
  /** Malformed records skipped, ambiguous joins, chained-plugin problems. */
  problems: string[];
  /** The timeline's clock across hosts; absent in files written before it. */
  clock?: TraceClock;
  /** The environment stamp (GPUs, driver, CUDA, NCCL path and source, hosts); absent in files written before it. */
  environment?: TraceEnvironment;
}

/** Whether a trace's figures are simulated (the one rule, as `isSimulatedRun` is for runs). */
export function isSimulatedTrace(t: Pick<TraceFile, 'simulated'> | null | undefined): boolean {
  return !!t && t.simulated === true;
}

/** NCCL's version code (major·10000 + minor·100 + patch, NCCL ≥ 2.9; major·1000 + minor·100 + patch before) as "2.28.9"; "?" when unknown. */
export function ncclVersionText(code: number | null): string {
  if (code === null || !Number.isFinite(code) || code <= 0) return '?';
  if (code < 10000) return `${Math.floor(code / 1000)}.${Math.floor((code % 1000) / 100)}.${code % 100}`;
  return `${Math.floor(code / 10000)}.${Math.floor((code % 10000) / 100)}.${code % 100}`;
}

/** What a trace file without an environment stamp (written before commcost stamped traces) says in its place. */
export const ENVIRONMENT_NOT_RECORDED = 'not recorded in this trace file (written before commcost stamped traces with the GPUs, driver, CUDA and NCCL)';

/** The stamp in one line of words, e.g. "2× NVIDIA H200, driver 570.86.15, CUDA 12.8, NCCL 2.28.9 (/usr/lib/libnccl.so.2, the job's own), 2 processes on h1". */
export function environmentText(e: TraceEnvironment): string {
  if (e.ncclSource === 'simulated') {
    // No GPU, driver or CUDA took part: say what ran instead of "unknown" fields.
    const lib = e.ncclPaths.length ? ` (${e.ncclPaths.join(', ')})` : '';
    return `no GPU: commcost's simulated NCCL ${e.ncclVersions.join(', ') || '?'}${lib}, ${e.processes} process${e.processes === 1 ? '' : 'es'} on ${e.hosts.join(', ') || '?'}`;
  }
  const gpus = e.gpuModels.length ? `${e.gpuCount !== null ? `${e.gpuCount}× ` : ''}${e.gpuModels.join(' / ')}` : 'GPU model unknown';
  const nccl = `NCCL ${e.ncclVersions.join(', ') || '?'}${e.ncclPaths.length ? ` (${e.ncclPaths.join(', ')}, the job's own)` : ''}`;
  return `${gpus}, driver ${e.driverVersion ?? '?'}, CUDA ${e.cudaVersion ?? '?'}, ${nccl}, ${e.processes} process${e.processes === 1 ? '' : 'es'} on ${e.hosts.join(', ') || '?'}`;
}

/** The teardown cell's mark of a teardown call shared by several communicators ("shared by 3"), else "". */
export function sharedTeardownMark(s: Pick<TraceSite, 'teardownShared'>): string {
  return s.teardownShared && s.teardownShared > 1 ? ` (one call for ${s.teardownShared})` : '';
}
