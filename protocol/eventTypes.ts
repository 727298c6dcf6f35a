/**
 * The messages of the wire protocol (see events.ts for the transport): the host's commands and
 * the agent's events, as types only. events.ts re-exports everything here; eventLines.ts and
 * eventShapes.ts import these types from here so that they never import events.ts (which
 * re-exports them).
 */

import type { HeartbeatEvent, KeepaliveCommand } from './liveness';
import type { ExperimentId, RunOptions } from './runOptions';

// ---------------------------------------------------------------------------------------------
// Host → agent

/** Host → agent: start a run. Sent once, right after the agent's `agent/hello`. */
export interface StartCommand {
  type: 'run/start';
  options: RunOptions;
  /**
   * A run over several hosts: this agent is the coordinator (node 0) and waits for
   * `nodes - 1` more agents to join (see {@link JoinCommand}); it answers `run/listening`.
   */
  cluster?: ClusterSpec;
  /**
   * This agent runs on a Slurm login node: it starts the run with
   * `srun <srunArgs> node agent.js rank` and relays rank 0's lines (remote-agent/slurm.ts).
   */
  slurm?: SlurmSpec;
}
/** How the agent on a Slurm login node starts the ranks. */
export interface SlurmSpec {
  /** srun options, one per element (e.g. "--partition=gpu", "--nodes=2"); never passed through a shell. */
  srunArgs: string[];
  /** srun on the login node (default: `srun` on PATH). */
  srunPath?: string;
}
/** Several hosts in one run (one agent per host, the coordinator on the first). */
export interface ClusterSpec {
  /** Hosts in the run, this one included (2 … 64). */
  nodes: number;
  /** Address the other hosts use to reach this one; default: every address this host has, tried in turn. */
  coordinatorAddress?: string;
}
/**
 * Host → agent on every host but the first of a cluster run: become node `index` of the run
 * whose coordinator answered `run/listening`. The agent connects, starts one rank process per
 * GPU when the coordinator asks, and exits when the run ends or the coordinator goes.
 */
export interface JoinCommand {
  type: 'node/join';
  /** The run's options (the node finds NCCL and its GPUs with them). */
  options: RunOptions;
  /** Position of this host in the run's host list (1 … nodes-1): ranks are placed in host order. */
  index: number;
  /** Where the coordinator listens: addresses tried in order, the port, the run's secret. */
  coordinator: { addresses: string[]; port: number; token: string };
}
/** Host → agent: stop the run, keep what was measured (the agent answers `run/done` partial). */
export interface CancelCommand {
  type: 'run/cancel';
}
/** Host → agent, every few seconds once the agent said hello: see {@link KeepaliveCommand} (liveness.ts). */
export type HostCommand = StartCommand | CancelCommand | JoinCommand | KeepaliveCommand;

// ---------------------------------------------------------------------------------------------
// Agent → host

/** The environment stamp every run carries (DESIGN.md, "Measurement method"). */
export interface EnvironmentStamp {
  hostname: string;
  /** GPU model per visible device, in ordinal order. */
  gpus: { ordinal: number; name: string; totalBytes: number; pciBusId: string }[];
  driverVersion: string;
  ncclVersion: string;
  ncclVersionCode: number;
  ncclPath: string;
  /** How the NCCL library was found: "explicit", "python-wheel", "loader", "cuda-folder", "simulated". */
  ncclSource: string;
  /** Optional NCCL symbols present in the loaded library. */
  ncclSymbols: Record<string, boolean>;
  /** `nvidia-smi topo -m` text when available, else a reason it is missing. */
  topology: string;
  /** Every NCCL_* and TORCH_NCCL_* variable of the agent's environment (also COMMCOST_SIM_* when simulated). */
  ncclEnv: Record<string, string>;
  /** Variables commcost set in every rank process as part of its method (UV_THREADPOOL_SIZE, MALLOC_ARENA_MAX); absent in runs made before commcost recorded it (their ranks ran without MALLOC_ARENA_MAX=1). */
  rankEnv?: Record<string, string>;
  /** Variables a variant ran with in rank processes of its own, beyond ncclEnv, keyed "<experiment> <variant>" (e.g. "split-share splitShare=0+env"). */
  variantEnv?: Record<string, Record<string, string>>;
  torchVersion?: string;
  commcostVersion: string;
  nodeVersion: string;
  platform: string;
  /** ISO 8601. */
  startedAt: string;
  /** True when the library is commcost's simulated NCCL: no figure of this run is a measurement. */
  simulated: boolean;
}

/** Agent → host, first line: who is speaking. */
export interface HelloEvent {
  type: 'agent/hello';
  protocolVersion: number;
  agentVersion: string;
  pid: number;
}

/** Agent → host: the environment was probed and the plan is fixed. */
export interface RunPlanEvent {
  type: 'run/plan';
  stamp: EnvironmentStamp;
  options: RunOptions;
  ranks: number;
  simulated: boolean;
  /** Experiments that will run, with their variants and steps. */
  experiments: { experiment: ExperimentId; variants: VariantPlan[] }[];
  /** A run over several hosts or launched processes: which ranks each node holds, in node order. */
  nodes?: NodePlan[];
}

/** One node (host) of a multi-node run. */
export interface NodePlan {
  index: number;
  hostname: string;
  /** The address the coordinator sees it at. */
  address: string;
  /** Global ranks on this node. */
  ranks: number[];
  /** GPU model of each of its ranks, in rank order. */
  gpus: string[];
}

/**
 * Agent → host, cluster runs only: the coordinator listens for the other hosts' agents. The
 * host passes this to each of them in a `node/join` (the token is the run's secret: it is not
 * saved in the run file).
 */
export interface ListeningEvent {
  type: 'run/listening';
  port: number;
  /** The coordinator's addresses, the most likely to be reachable first. */
  addresses: string[];
  token: string;
}

/** Node agent → host: it reached the coordinator and is ready to start ranks. */
export interface JoinedEvent {
  type: 'node/joined';
  /** The coordinator address that answered. */
  coordinator: string;
  hostname: string;
  /** Rank processes this node will hold (one per GPU). */
  slots: number;
}

export interface VariantPlan {
  /** e.g. "halves/splitShare=0". */
  variant: string;
  /** Variables this variant ran with in rank processes of its own (e.g. NCCL_RUNTIME_CONNECT=0), beyond the stamp's. */
  env?: Record<string, string>;
  /**
   * Set on a field-case variant whose hang is a result, not a failure (C4's subset-only split,
   * C6's blocking init, C5's combinations): what the hang shows. A hang-guard stop of this
   * variant is then reported with `expected: true` and leaves the run complete.
   */
  hangIsResult?: string;
  steps: StepPlan[];
  /** Ratios of two steps' medians the summary gives (e.g. cold-start's cold / warm). */
  ratios?: RatioPlan[];
  /**
   * Set when the variant reads NCCL's own `Init timings` log line beside its figures (cold-start):
   * the creations it names, in the order the process makes them (e.g. ["cold", "warm"]); `note`
   * says why NCCL's view will be missing when that is known at plan time (NCCL < 2.23.4).
   */
  ncclInitView?: { creations: string[]; note?: string };
}

/** A ratio of two steps of one variant: median of `of` / median of `to`, over recorded iterations. */
export interface RatioPlan {
  /** Stable id, e.g. "coldOverWarm". */
  id: string;
  /** Human label, e.g. "cold / warm (init + first collective)". */
  label: string;
  of: string;
  to: string;
}

/**
 * NCCL's own account of communicator creations, from its `Init timings` INFO line (NCCL ≥ 2.23.4):
 * per creation (`cold`, `warm`), part → ms. Parts are what that NCCL printed (total, kernels, alloc,
 * bootstrap, allgathers, topo, graphs, connections, rest); NCCL prints seconds with two decimals,
 * so every part moves in 10 ms steps. Each part is the MAX over ranks, as every step.
 */
export type NcclInitParts = Record<string, Record<string, number>>;

/** NCCL's view of a variant over its recorded iterations (VariantSummary.ncclInit). */
export interface NcclInitSummary {
  /** Per creation, part → median over the recorded iterations where every rank's line was read, ms. */
  medians: NcclInitParts;
  /** Per creation: recorded iterations where every rank's line was read. */
  iterations: Record<string, number>;
  /** Lines that named `Init timings` but could not be read, over all ranks and recorded iterations (skipped). */
  malformedLines: number;
  /** Why NCCL's view is missing or partial, when it is (e.g. "NCCL 2.21.5 predates the Init timings line (2.23.4)"). */
  note?: string;
}

/** What a step times. `derived` steps are sums of other steps per iteration. */
export interface StepPlan {
  /** Stable id inside the variant, e.g. "call", "first", "total", "steady". */
  step: string;
  /** Human label, e.g. "ncclCommSplit", "first 1 MiB allreduce". */
  label: string;
  /** call = the API call itself; first = first collective on a new communicator; toFirst = call + first; steady = a collective on a warm communicator; teardown = finalize/destroy/abort. */
  kind: 'call' | 'first' | 'toFirst' | 'steady' | 'teardown';
  /** For derived steps: the step ids summed per iteration. */
  sumOf?: string[];
}

/** Agent → host: the process's one-time start, measured once per rank and never mixed in. */
export interface StartupEvent {
  type: 'run/startup';
  /** Per rank: CUDA start (cuInit + primary context + stream + buffer), ms. */
  cudaInitMs: number[];
  /** First ncclGetUniqueId in rank 0's process (process one-time NCCL init), ms. */
  firstUniqueIdMs: number;
}

/** Agent → host: where the run is. */
export interface ProgressEvent {
  type: 'run/progress';
  experiment: ExperimentId;
  variant: string;
  /** 0-based iteration including warmups. */
  iteration: number;
  /** warmup + iterations. */
  total: number;
  warmup: boolean;
  /** Index of this experiment in the plan and the plan's length. */
  experimentIndex: number;
  experimentCount: number;
}

/**
 * Agent → host: one iteration of one variant. `steps` maps step id → the step's figure for this
 * iteration = MAX over ranks of each rank's host-monotonic duration (ms). Derived steps included.
 */
export interface SampleEvent {
  type: 'run/sample';
  experiment: ExperimentId;
  variant: string;
  iteration: number;
  warmup: boolean;
  steps: Record<string, number>;
  /** Per step, per rank duration in ms (rank order; null where a rank does not take part, e.g. the rank a shrink excludes). */
  perRank: Record<string, (number | null)[]>;
  /** Per rank device free-memory delta (bytes consumed, positive = memory taken) keyed by point, e.g. "afterCall", "afterFirst". */
  memoryBytes?: Record<string, number[]>;
  /** Barrier release skew of this iteration's first timed step: max − min release time across ranks, µs. */
  releaseSkewUs?: number;
  /**
   * Barrier release skew per timed step (each step is one barrier generation): max − min over
   * the ranks of the CLOCK_MONOTONIC time at which each rank's native worker thread saw the
   * release, µs. Absent for a step that only one rank timed.
   */
  stepSkewUs?: Record<string, number>;
  /**
   * NCCL's own account of its GPU memory (ncclCommMemStats, NCCL ≥ 2.29.7) at the memory points
   * where it was read, keyed like `memoryBytes`: each field the MAX over the ranks that reported
   * the point. Absent where the library lacks ncclCommMemStats (see `memStatsNote`, runFile.ts).
   */
  memStats?: Record<string, MemStatsBytes>;
  /**
   * Per rank counts of this iteration (rank order; null where a rank reported none), e.g.
   * `inFlightAtStart` (1 when work was in flight as the timed call began), `inFlightEnqueued`,
   * `inFlightCompleted` and `inFlightDropped` (the drop check of revoke and NCCL_SHRINK_ABORT).
   */
  counts?: Record<string, (number | null)[]>;
  /** NCCL's view of this iteration's creations (variants with VariantPlan.ncclInitView); a creation appears only when every rank's line was read. */
  ncclInit?: NcclInitParts;
}

/**
 * ncclCommMemStats of the communicators a rank holds at a memory point, summed, bytes:
 * ncclStatGpuMemSuspend (what ncclCommSuspend(NCCL_SUSPEND_MEM) would release),
 * ncclStatGpuMemPersist (what it keeps) and ncclStatGpuMemTotal (all GPU memory NCCL tracks).
 */
export interface MemStatsBytes {
  suspendableBytes: number;
  persistentBytes: number;
  totalBytes: number;
}

/** A count over every rank and recorded iteration of a variant (see SampleEvent.counts). */
export interface CountSummary {
  min: number;
  max: number;
  sum: number;
  /** Rank-iterations that reported it. */
  n: number;
}

/** Distribution of one step over the recorded iterations (ms). */
export interface StepStats {
  median: number;
  p90: number;
  min: number;
  max: number;
  mean: number;
  n: number;
}

/** Agent → host: everything recorded for one experiment, summarised. */
export interface ExperimentSummaryEvent {
  type: 'experiment/summary';
  experiment: ExperimentId;
  variants: VariantSummary[];
}

export interface VariantSummary {
  variant: string;
  /** Variables the variant ran with beyond the stamp's (see VariantPlan.env). */
  env?: Record<string, string>;
  steps: (StepPlan & { stats: StepStats; samples: number[] })[];
  /** Memory per point, median over recorded iterations of the per-GPU MAX, bytes. */
  memoryBytes?: Record<string, number>;
  /** ncclCommMemStats per point, each field the median over recorded iterations of the per-GPU MAX, bytes (see SampleEvent.memStats). */
  memStats?: Record<string, MemStatsBytes>;
  /** Counts over every rank and recorded iteration (see SampleEvent.counts). */
  counts?: Record<string, CountSummary>;
  /** The plan's ratios (VariantPlan.ratios) with their value, when both steps have figures. */
  ratios?: (RatioPlan & { value: number })[];
  /** NCCL's own view beside the figures (variants with VariantPlan.ncclInitView). */
  ncclInit?: NcclInitSummary;
}

/** Agent → host: an experiment that this host cannot run, and why. Not a failure. */
export interface SkippedEvent {
  type: 'experiment/skipped';
  experiment: ExperimentId;
  variant?: string;
  reason: string;
}

/** Reason codes of {@link ErrorEvent}; matched by code, never by message text. */
export type ErrorCode =
  | 'NO_GPU'
  | 'NCCL_NOT_FOUND'
  | 'LOAD_FAILED'
  | 'NCCL_ERROR'
  | 'CUDA_ERROR'
  | 'TIMEOUT'
  | 'RANK_EXITED'
  | 'BAD_COMMAND'
  | 'INTERNAL'
  // Runs over several hosts: a node did not join in time, or its agent went away mid-run.
  | 'NODE_UNREACHABLE'
  | 'NODE_LOST'
  // Raised on the host side, recorded in run files:
  | 'AGENT_EXITED'
  | 'CONNECTION_LOST'
  | 'PROTOCOL'
  // The agent sent nothing (not even its heartbeat) for the liveness deadline (liveness.ts).
  | 'AGENT_SILENT';

/** Where a failure happened. */
export interface ErrorWhere {
  host?: string;
  rank?: number;
  experiment?: ExperimentId;
  variant?: string;
  step?: string;
  iteration?: number;
}

/** Agent → host: what failed, where, why, and what to do. */
export interface ErrorEvent {
  type: 'run/error';
  code: ErrorCode;
  message: string;
  where: ErrorWhere;
  /** The library's error string and ncclGetLastError text, where there is one. */
  detail?: string;
  /** What the user can do about it. */
  hint?: string;
  /** True when the run cannot go on. */
  fatal: boolean;
  /** True for a hang-guard stop of a variant whose hang is the field case's result (VariantPlan.hangIsResult): not a failure. */
  expected?: boolean;
}

/**
 * A run's wall time by what it was spent on, ms; the parts add up to the wall time. Rank sessions
 * are summed; within one, each figure is the MAX over its ranks.
 */
export interface WallSplit {
  /** Inside timed library calls (each step's span; warmups included). */
  timedMs: number;
  /** Inside untimed library calls the method needs (setup and cleanup around the timed calls). */
  setupMs: number;
  /** From the first rank process's spawn until every rank was ready (Node, addon, NCCL load, CUDA context, barrier). */
  processStartMs: number;
  /** From a session's end until its rank processes exited. */
  processExitMs: number;
  /** The rest: planning, the control channel and barrier between calls, JavaScript on the ranks, and what commcost does not count (torch's calls in c10d). */
  harnessMs: number;
}

/** Agent → host, last line. */
export interface DoneEvent {
  type: 'run/done';
  /** complete: all planned experiments ran; partial: cancelled or stopped early with results kept; failed: nothing useful. */
  status: 'complete' | 'partial' | 'failed';
  wallMs: number;
  /**
   * Time spent inside the NCCL/CUDA calls commcost's addon made (timed steps and their untimed
   * setup and cleanup, warmups included; per rank session the MAX over ranks), ms. Called
   * `measuredMs` before (run files keep it under that name too, see RunFile).
   */
  libraryMs: number;
  /** The run's wall time split by what it was spent on (docs/METHOD.md, "Harness efficiency"). */
  wallSplit?: WallSplit;
  endedAt: string;
}

/** Agent → host. `agent/heartbeat` (liveness.ts) keeps the link alive and is never folded into a run. */
export type AgentEvent =
  | HelloEvent
  | HeartbeatEvent
  | ListeningEvent
  | JoinedEvent
  | RunPlanEvent
  | StartupEvent
  | ProgressEvent
  | SampleEvent
  | ExperimentSummaryEvent
  | SkippedEvent
  | ErrorEvent
  | DoneEvent;
