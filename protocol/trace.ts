/**
 * The trace file of `commcost trace` (schema-versioned; saved in `.commcost/traces/`): what one
 * run of the user's own job paid per call site, merged from the profiler plugin's and the Python
 * hook's per-process records (client/trace/merge.ts). Times are ms unless named otherwise; memory
 * in bytes. Imports nothing.
 */

/** The trace file format version; a reader refuses other versions. */
export const TRACE_VERSION = 1;

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
  firstCollectiveSite: string | null;
  teardownSite: string | null;
  count: number;
  creation: TracePhaseStats | null;
  firstCollective: TracePhaseStats | null;
  connect: TracePhaseStats | null;
  teardown: TracePhaseStats | null;
  memoryBytes: number | null;
  cold: boolean;
  occurrences: TraceOccurrence[];
  notes: string[];
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
  sites: TraceSite[];
  /** Malformed records skipped, ambiguous joins, chained-plugin problems. */
  problems: string[];
}

/** Whether a trace's figures are simulated (the one rule, as `isSimulatedRun` is for runs). */
export function isSimulatedTrace(t: Pick<TraceFile, 'simulated'> | null | undefined): boolean {
  return !!t && t.simulated === true;
}
