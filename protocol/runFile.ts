/**
 * The saved result of one measurement run: `.commcost/runs/<timestamp>-<host>.json` in the
 * workspace, the CLI's `--json` output and the input of `commcost report`.
 *
 * A run file is built on the host side by folding the agent's events (client/runModel.ts), so
 * every figure in it came from an agent `run/sample` line. Files found in a workspace are
 * untrusted: read them with client/runFileSchema.ts, never by casting.
 */
import type {
  EnvironmentStamp,
  ErrorEvent,
  ExperimentId,
  NodePlan,
  RunOptions,
  SkippedEvent,
  StartupEvent,
  VariantSummary,
  WallSplit,
} from './events';

export const RUN_FILE_SCHEMA = 'commcost.run/1';

export interface RunFile {
  schema: typeof RUN_FILE_SCHEMA;
  /** `<startedAt compact>-<host>`, also the file name without `.json`. */
  id: string;
  /** The target as the user named it (`localhost`, an ssh alias, user@host:port). */
  host: string;
  /** True when measured on commcost's simulated NCCL: then no figure is a measurement. */
  simulated: boolean;
  /** running: still streaming; complete; partial: cancelled or stopped early, results kept; failed. */
  status: 'running' | 'complete' | 'partial' | 'failed';
  options: RunOptions;
  ranks: number;
  /** Runs over several hosts or launched processes: which ranks each node held. */
  nodes?: NodePlan[];
  stamp?: EnvironmentStamp;
  startup?: Omit<StartupEvent, 'type'>;
  experiments: RunExperiment[];
  skipped: Omit<SkippedEvent, 'type'>[];
  errors: Omit<ErrorEvent, 'type'>[];
  /**
   * The study's conclusions derived from this run's own figures (readings/verdict.ts), refreshed
   * after every experiment summary. Derived data: recomputed whenever a run is rendered.
   */
  verdict?: { id: string; text: string }[];
  /** Wall time of the whole run, ms. */
  wallMs?: number;
  /** Time inside the NCCL/CUDA calls commcost's addon made, timed and untimed (run/done's libraryMs), ms. */
  libraryMs?: number;
  /** Files written before libraryMs: the same figure under its old name (read it when libraryMs is absent). */
  measuredMs?: number;
  /** The wall time by what it was spent on (run/done's wallSplit), ms. */
  wallSplit?: WallSplit;
  endedAt?: string;
}

export interface RunExperiment {
  experiment: ExperimentId;
  /** Summaries per variant; filled when the experiment finished. */
  variants: VariantSummary[];
  /** Progress while running: iterations done / total over all variants. */
  done: number;
  total: number;
  /** Raw per-iteration samples as received (recorded ones only), variant → step → ms[]. */
  samples: Record<string, Record<string, number[]>>;
  /**
   * Barrier release skew of each recorded sample's generations, variant → step → µs[] (aligned
   * with `samples` where every sample had one; the sample event's `stepSkewUs`). Absent in files
   * written before it was saved.
   */
  releaseSkewUs?: Record<string, Record<string, number[]>>;
  /** finished: summary received; running; stopped: the run ended before its summary. */
  state: 'pending' | 'running' | 'finished' | 'stopped';
}

/** The parts of a run that can say it was simulated; loose, because run data may be untrusted. */
export interface SimulatedMarks {
  simulated?: unknown;
  stamp?: { simulated?: unknown; ncclSource?: unknown; ncclPath?: unknown } | null;
}

/**
 * The one rule for "this run's figures are not measurements": true when the run's own flag, the
 * environment stamp's flag, the stamp's NCCL source (`simulated`) or its NCCL path (a file named
 * `libnccl-sim*.so*`, commcost's simulated NCCL) says so. Any one is enough: a label must never be
 * lost because one field disagrees. Pure; used by the CLI, the HTML report, the webview and the
 * extension.
 */
export function isSimulatedRun(run: SimulatedMarks | null | undefined): boolean {
  if (!run || typeof run !== 'object') return false;
  if (run.simulated === true) return true;
  const s = run.stamp;
  if (!s || typeof s !== 'object') return false;
  if (s.simulated === true) return true;
  if (typeof s.ncclSource === 'string' && s.ncclSource.trim().toLowerCase() === 'simulated') return true;
  return typeof s.ncclPath === 'string' && /(^|[\\/])libnccl-sim[^\\/]*\.so(\.[^\\/]*)?$/i.test(s.ncclPath.trim());
}

/** Words for the memory points the experiments record (`markMemory`); other points are already words. */
const MEMORY_POINT_WORDS: Readonly<Record<string, string>> = {
  afterCall: 'after the call',
  afterFirst: 'after the first collective',
  afterFirstLarge: 'after the first large collective',
  afterFirstUse: 'after the first collective on the buffer',
  warm: 'warm, before suspend',
  afterSuspend: 'after suspend',
  afterResume: 'after resume',
};

/**
 * How a memory point reads in tables and charts: `afterCall` → "after the call", `afterFirst` →
 * "after the first collective"…; a point the table does not know (`pool after TP2`, `after 2
 * groups`) is returned as it is. Pure.
 */
export function memoryPointLabel(point: string): string {
  return Object.hasOwn(MEMORY_POINT_WORDS, point) ? MEMORY_POINT_WORDS[point]! : point;
}

/** First NCCL release with ncclCommMemStats (its symbol alone is not enough: the version must be too). */
export const MEM_STATS_SINCE = { code: 22907, version: '2.29.7' } as const;

/**
 * Why a run holds no ncclCommMemStats figures (NCCL's own account of its memory beside the
 * free-memory delta), read from the run's own stamp: the loaded NCCL predates 2.29.7 or lacks the
 * symbol. A simulated run's note speaks of the simulator, never of what NCCL of that version
 * exports. Undefined when the library had it (or the run has no stamp). Pure.
 * @returns e.g. "ncclCommMemStats is not in NCCL 2.28.9 (needs ≥ 2.29.7): memory is the free-memory delta only"
 */
export function memStatsNote(
  run: (SimulatedMarks & { stamp?: { ncclVersion?: unknown; ncclVersionCode?: unknown; ncclSymbols?: unknown; simulated?: unknown; ncclSource?: unknown; ncclPath?: unknown } | null }) | null | undefined,
): string | undefined {
  const s = run?.stamp;
  if (!s || typeof s !== 'object' || typeof s.ncclVersionCode !== 'number') return undefined;
  const symbols = s.ncclSymbols && typeof s.ncclSymbols === 'object' ? (s.ncclSymbols as Record<string, unknown>) : {};
  const version = typeof s.ncclVersion === 'string' ? s.ncclVersion : String(s.ncclVersionCode);
  if (s.ncclVersionCode >= MEM_STATS_SINCE.code && symbols.ncclCommMemStats === true) return undefined;
  // A simulated run's version and symbols are the simulator's, not a real library's: say what
  // commcost did, never what NCCL of that version exports.
  if (isSimulatedRun(run)) {
    const why = s.ncclVersionCode < MEM_STATS_SINCE.code ? `the run simulates NCCL ${version}, and commcost calls it only from ${MEM_STATS_SINCE.version}` : `the simulated library (as NCCL ${version}) does not provide it`;
    return `ncclCommMemStats was not called: ${why}; memory is the simulator's free-memory delta only`;
  }
  // The library exports the symbol but its version is below the one commcost calls it from: say
  // what commcost did (not call it), not that the library lacks it.
  if (symbols.ncclCommMemStats === true) return `ncclCommMemStats was not called: NCCL ${version} exports it, but commcost calls it only from ${MEM_STATS_SINCE.version}; memory is the free-memory delta only`;
  return `ncclCommMemStats is not in NCCL ${version} (the library does not export it; needs ≥ ${MEM_STATS_SINCE.version}): memory is the free-memory delta only`;
}
