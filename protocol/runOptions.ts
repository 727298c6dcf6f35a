/**
 * The run's options as the host asks for them (`run/start`, `node/join`): the experiment ids of
 * the catalogue, the default sets, {@link RunOptions}, its defaults and the one set of limits
 * used by the CLI, the VS Code settings and the agent. Re-exported by events.ts.
 *
 * Imports nothing (protocol/ invariant).
 */

/** Experiment ids of the catalogue (DESIGN.md, "Experiment catalogue"). */
export const EXPERIMENT_IDS = [
  'init',
  'split',
  'shrink',
  'grow',
  'destroy',
  'abort',
  'revoke',
  'registration',
  'drain',
  'pool',
  'connect-mode',
  'suspend',
  'c10d',
  // Field cases (shared/cases): C2 (memory of K groups by splitShare); C4 and C6, each with one
  // variant expected to be stopped by the hang guard; C5 (ways to release a shrunk parent), whose
  // combinations either complete or are stopped by the hang guard, depending on the NCCL.
  'split-share',
  'split-subset',
  'shrink-abort',
  'init-abort',
  // A process's first communicator against a warm one, each in fresh rank processes (METHOD.md).
  'cold-start',
  // Memory and creation time of N = 1, 2, 4, 8, 16 communicators on the same GPUs (issue #29).
  'many-comms',
] as const;
export type ExperimentId = (typeof EXPERIMENT_IDS)[number];

/** The set run when the user does not choose. */
export const DEFAULT_EXPERIMENTS: readonly ExperimentId[] = ['init', 'split', 'destroy', 'abort'];

/**
 * The set run when the user does not choose and the run has one rank (a workstation with one
 * GPU): what one rank can show — the process's cold start against a warm init, the init call,
 * the connect mode, the teardown floors and suspend/resume where the library has it. `split`
 * stays in the list so that the run says plainly that it needs 2 GPUs (skipped with the reason).
 */
export const ONE_GPU_EXPERIMENTS: readonly ExperimentId[] = ['init', 'cold-start', 'split', 'destroy', 'abort', 'connect-mode', 'suspend'];

/**
 * How a new communicator is first used (issue #32): an allreduce (every experiment's `first` step
 * by default), a broadcast from rank 0 (a weight-sync group), or a send/recv pair between partner
 * ranks (pipeline stages, disaggregated prefill/decode: NCCL connects each peer lazily).
 */
export const FIRST_USE_KINDS = ['allreduce', 'broadcast', 'sendrecv'] as const;
export type FirstUseKind = (typeof FIRST_USE_KINDS)[number];

/**
 * The variant name of `variant` first used by `kind`: the allreduce keeps the name, another kind adds
 * `/first=<kind>` (`default/first=broadcast`, `whole/splitShare=0/first=sendrecv`).
 */
export function firstUseVariant(variant: string, kind: FirstUseKind): string {
  return kind === 'allreduce' ? variant : `${variant}/first=${kind}`;
}

/** The first-use kind a variant name says (`…/first=broadcast`), else 'allreduce'. */
export function firstUseOf(variant: string): FirstUseKind {
  const m = /\/first=([a-z]+)$/.exec(variant);
  const k = m?.[1];
  return (FIRST_USE_KINDS as readonly string[]).includes(k ?? '') ? (k as FirstUseKind) : 'allreduce';
}

/** What the host asks the agent to do. */
export interface RunOptions {
  /** Experiments in run order. */
  experiments: ExperimentId[];
  /** Recorded runs per step (default 10). */
  iterations: number;
  /** Unrecorded warmup runs per step (default 1). */
  warmup: number;
  /** Hang guard: seconds a step may take on all ranks before it is aborted (default 60). */
  deadlineSeconds: number;
  /** Explicit libnccl.so.2 path; empty = search (see remote-agent/ncclLocator.ts). */
  ncclPath?: string;
  /** Run against the simulated NCCL instead of a real one. */
  simulate?: boolean;
  /** Number of ranks (one process per GPU); default = visible GPU count. In a run over several hosts: ranks per host. */
  ranks?: number;
  /** Bytes of the first collective on a new communicator (default 1 MiB). */
  firstCollectiveBytes?: number;
  /** Bytes of the steady allreduce used as the bandwidth reference (default 64 MiB). */
  steadyBytes?: number;
  /**
   * The first uses the creation experiments (init, split) time after creating a communicator, in
   * order: 'allreduce' is the plain variants; 'broadcast' and 'sendrecv' add a variant each
   * (`firstUseVariant`), whose `first` step is that op and whose `steady` step the same op warm, so
   * that first − steady is its connect share. Absent = ['allreduce'] (the variants as before).
   */
  firstUse?: FirstUseKind[];
  /**
   * The Python on the GPU host that has torch (a path, or a command looked up on PATH), for the
   * c10d experiment and for finding NCCL in torch's wheel; absent = $COMMCOST_PYTHON, else
   * `python3` (remote-agent/environment.ts `hostPython`). Checked by {@link pythonOptionProblem}.
   */
  python?: string;
  /**
   * True when the user did not choose the experiments (the CLI without `--experiments`): the
   * agent may then adapt the default set to the host — one rank runs {@link ONE_GPU_EXPERIMENTS}
   * instead of {@link DEFAULT_EXPERIMENTS}. The run's recorded options carry the set that ran.
   */
  experimentsByDefault?: boolean;
  /**
   * The many-comms experiment's communicator counts N, ascending (default
   * {@link DEFAULT_COMM_COUNTS}): memory is marked and the k-th creation timed at each, and the
   * largest is how many communicators each iteration makes. Checked by {@link commCountsProblem}.
   */
  commCounts?: number[];
}

/** The many-comms experiment's default communicator counts. */
export const DEFAULT_COMM_COUNTS: readonly number[] = [1, 2, 4, 8, 16];

export const DEFAULT_RUN_OPTIONS: RunOptions = {
  experiments: [...DEFAULT_EXPERIMENTS],
  iterations: 10,
  warmup: 1,
  deadlineSeconds: 60,
  firstCollectiveBytes: 1 << 20,
  steadyBytes: 64 << 20,
};

/** An inclusive range of a numeric option. */
export interface OptionLimit {
  min: number;
  max: number;
}

/**
 * The one set of limits of the run options, inclusive: the CLI's flags, the VS Code settings
 * (package.json `contributes.configuration` must carry the same minimum/maximum) and the agent's
 * own check of `run/start` all use these.
 */
export const OPTION_LIMITS = {
  /** Recorded runs per step. */
  iterations: { min: 1, max: 100_000 },
  /** Unrecorded warmup runs per step. */
  warmup: { min: 0, max: 1_000 },
  /** Hang guard per step, seconds (one day at most). */
  deadlineSeconds: { min: 1, max: 86_400 },
  /** Rank processes (one per GPU). */
  ranks: { min: 1, max: 1_024 },
  /** Bytes of the first collective and of the steady allreduce (4 B to 16 GiB). */
  collectiveBytes: { min: 4, max: 16 * 2 ** 30 },
  /** Kinds in the `firstUse` option (each of FIRST_USE_KINDS at most once). */
  firstUseKinds: { min: 1, max: FIRST_USE_KINDS.length },
  /** Characters of the `python` option (a path on the GPU host). */
  pythonChars: { min: 1, max: 4_096 },
  /** Each communicator count of the many-comms experiment (the largest is made every iteration). */
  commCount: { min: 1, max: 64 },
  /** How many counts `commCounts` may list. */
  commCounts: { min: 1, max: 8 },
} as const satisfies Record<string, OptionLimit>;

/** True when `value` is a number within `limit` (and a whole number when `integer`). */
export function withinLimit(value: unknown, limit: OptionLimit, integer: boolean): value is number {
  return typeof value === 'number' && Number.isFinite(value) && (!integer || Number.isInteger(value)) && value >= limit.min && value <= limit.max;
}

/**
 * What is wrong with `value` as the `python` run option (a non-empty string of at most
 * OPTION_LIMITS.pythonChars characters, without NUL or line break), or undefined when it is fine.
 * Whether that Python exists is only known on the GPU host (the c10d experiment is then skipped).
 * @returns a phrase to follow the option's name, e.g. "contains a line break".
 */
export function pythonOptionProblem(value: unknown): string | undefined {
  const { min, max } = OPTION_LIMITS.pythonChars;
  if (typeof value !== 'string') return 'is not text';
  if (value.length < min) return 'is empty';
  if (value.length > max) return `is ${value.length} characters long (at most ${max})`;
  if (value.includes('\0')) return 'contains a NUL character';
  if (/[\n\r]/.test(value)) return 'contains a line break';
  return undefined;
}

/**
 * What is wrong with `value` as the `commCounts` run option (1 to 8 whole numbers from 1 to 64,
 * strictly ascending), or undefined when it is fine.
 * @returns a phrase to follow the option's name, e.g. "must be ascending, got 4,2".
 */
export function commCountsProblem(value: unknown): string | undefined {
  const { min, max } = OPTION_LIMITS.commCount;
  const n = OPTION_LIMITS.commCounts;
  if (!Array.isArray(value)) return 'is not a list of communicator counts';
  if (value.length < n.min || value.length > n.max) return `must list ${n.min} to ${n.max} counts, got ${value.length}`;
  if (!value.every((v) => withinLimit(v, OPTION_LIMITS.commCount, true))) return `must be whole numbers from ${min} to ${max}, got ${value.map(String).join(',')}`;
  if (value.some((v: number, i) => i > 0 && v <= (value[i - 1] as number))) return `must be strictly ascending, got ${value.join(',')}`;
  return undefined;
}

/**
 * What is wrong with `value` as the `firstUse` run option (a non-empty list of FIRST_USE_KINDS without
 * repeats), or undefined when it is fine.
 * @returns a phrase to follow the option's name, e.g. "names an unknown kind \"gather\"".
 */
export function firstUseOptionProblem(value: unknown): string | undefined {
  if (!Array.isArray(value)) return 'is not a list';
  const { min, max } = OPTION_LIMITS.firstUseKinds;
  if (value.length < min || value.length > max) return `has ${value.length} kinds (${min} to ${max})`;
  for (const k of value) if (!(FIRST_USE_KINDS as readonly unknown[]).includes(k)) return `names an unknown kind ${JSON.stringify(k)} (known: ${FIRST_USE_KINDS.join(', ')})`;
  if (new Set(value).size !== value.length) return 'names a kind twice';
  return undefined;
}
