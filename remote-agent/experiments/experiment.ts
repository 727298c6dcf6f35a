/**
 * The shape every experiment module has (one small file per experiment, like nccl-tests'
 * per-operation files): a plan made on the coordinator from what the host's NCCL and GPU count
 * allow, and an SPMD body run identically by every rank process.
 */
import type { ExperimentId, FirstUseKind, NcclInitParts, RunOptions, StepPlan, VariantPlan } from '../../protocol/events';
import type { CommConfig, NativeBinding, Timed } from '../nativeBinding';

/** The blocking config used for every communicator unless a variant says otherwise. */
import { versionCode, versionString } from '../../protocol/catalogue';

export { versionCode, versionString };

export const BLOCKING: CommConfig = { blocking: 1 };

/** What the coordinator knows when it plans. */
export interface PlanContext {
  ranks: number;
  /** Multi-node runs: the node index of each rank (rank order); absent on one host. */
  nodeOfRank?: number[];
  ncclVersionCode: number;
  symbols: Record<string, boolean>;
  options: RunOptions;
}

/** What a rank's experiment body can do. Every method that calls NCCL is guarded by the hang deadline. */
export interface RankContext {
  readonly rank: number;
  readonly worldSize: number;
  /** Multi-node runs: the node index of each rank (rank order); absent on one host. */
  readonly nodeOfRank?: number[];
  readonly options: Required<Pick<RunOptions, 'firstCollectiveBytes' | 'steadyBytes'>> & RunOptions;
  readonly native: NativeBinding;
  /**
   * A fresh NCCL unique id shared by all ranks: rank 0 calls ncclGetUniqueId and the
   * coordinator hands it to the others. Untimed.
   */
  uniqueId(): Promise<Buffer>;
  /**
   * A 128-byte id made by one rank (`producer`, default 0) with `produce` and handed by the
   * coordinator to every other rank (e.g. ncclCommGetUniqueId for a grow). Untimed.
   */
  sharedId(produce: () => Promise<Buffer>, producer?: number): Promise<Buffer>;
  /**
   * Runs one timed step: all ranks meet at the TCP barrier, then each times `fn` in native
   * code; the step's figure is later the MAX over ranks. `fn` receives the barrier generation.
   */
  timed<T extends Timed>(step: string, label: string, fn: (gen: number) => Promise<T>): Promise<T>;
  /**
   * This rank takes no part in a timed step (e.g. the rank a shrink excludes): it passes the
   * barrier so generations stay aligned, and records nothing for `step`.
   */
  sitOut(step: string): Promise<void>;
  /** Runs an untimed library call under the hang guard (setup and cleanup). */
  untimed<T>(label: string, fn: () => Promise<T>): Promise<T>;
  /**
   * Records the device memory taken since the iteration began (free-memory delta), under `point`;
   * with `comms`, also NCCL's own account of them (ncclCommMemStats summed over `comms`, NCCL ≥
   * 2.29.7; nothing where the library lacks it).
   */
  markMemory(point: string, comms?: readonly number[]): void;
  /**
   * Records a count of this iteration on this rank (e.g. `inFlightAtStart` 1 or 0): the run keeps
   * it per rank and its min, max and sum over ranks and recorded iterations.
   */
  count(name: string, value: number): void;
  /**
   * Moves the memory baseline to now, so later points count only what follows (e.g. the child
   * of a shrink, not the parent built earlier in the same iteration).
   */
  markBaseline(): void;
  /**
   * Records a figure this rank measured for `step` in this iteration without a call of its own:
   * a part returned by a native op (e.g. revoke's call alone), or a sum of timed calls.
   */
  record(step: string, ms: number): void;
  /**
   * For a program that takes the barrier itself (the c10d driver, as this rank): the next
   * generation it must use, and how far it got, so generations stay aligned on every rank.
   */
  readonly nextGeneration: number;
  advanceGenerations(lastUsed: number): void;
  /** Reports an external program's library call to the hang guard (`end` when it returned). */
  beginExternal(op: string): void;
  endExternal(op: string): void;
  /** The coordinator's address: with it, a store path or port unique to this rank session. */
  readonly sessionId: string;
  /** host:port of the timing barrier (for a program that takes it itself). */
  readonly barrierAddress: string;
  /** Records one memory figure (bytes taken since the iteration began) measured elsewhere. */
  recordMemory(point: string, bytes: number): void;
  /**
   * How this rank process started, measured before any experiment ran in it (rank.ts): the
   * dlopen of NCCL, cuInit + the CUDA context, rank 0's first ncclGetUniqueId (ms); and how many
   * iterations (of any experiment) this process ran before the current one. Absent in a context
   * that did not start a process.
   */
  readonly processStart?: ProcessStart;
  /**
   * Records NCCL's own view of this iteration's creations (label → part → ms, read from its
   * `Init timings` log lines) and how many such lines could not be read. Variants with
   * VariantPlan.ncclInitView only.
   */
  recordNcclInit?(views: NcclInitParts, malformedLines: number): void;
}

/** A rank process's start, measured once in it (RankContext.processStart). */
export interface ProcessStart {
  /** dlopen of the NCCL library alone, ms (absent with an addon that does not time it). */
  ncclLoadMs?: number;
  /** cuInit + cuDeviceGet + primary context retain + make current, ms (absent likewise). */
  cudaContextMs?: number;
  /** Rank 0 only: the process's first ncclGetUniqueId, ms. */
  firstUniqueIdMs?: number;
  /** Iterations of any experiment this process ran before the current one (0 = a fresh process). */
  readonly iterationsBefore: number;
}

/**
 * Builds a communicator over all ranks and runs its first collective (untimed): the starting
 * point of experiments that time what comes after creation.
 */
export async function warmCommunicator(rc: RankContext, config: CommConfig = BLOCKING, label = 'parent'): Promise<number> {
  const id = await rc.uniqueId();
  const { comm } = await rc.untimed(`ncclCommInitRankConfig (${label})`, () => rc.native.commInitRank(rc.worldSize, id, rc.rank, config));
  await rc.untimed(`allreduce (warm ${label})`, () => rc.native.allReduce(comm, rc.options.firstCollectiveBytes));
  return comm;
}

/**
 * The shrink steps shared by `shrink` and `shrink-abort`: the survivors time ncclCommShrink of
 * `parent` dropping the last rank (step `call`, shown as `label`) and the child's first collective
 * (step `first`, options.firstCollectiveBytes), with memory marked after each (`afterCall`,
 * `afterFirst`); the last rank takes no part and sits out both barriers.
 * @param flags NCCL_SHRINK_DEFAULT (0) or NCCL_SHRINK_ABORT (1).
 * @param onCall given the timed shrink call's result on a survivor (e.g. its in-flight window).
 * @returns the child communicator on a survivor; undefined on the excluded (last) rank.
 * @throws Error when ncclCommShrink returns no communicator on a survivor.
 */
export async function shrinkLastRank(rc: RankContext, parent: number, flags: 0 | 1, label: string, onCall?: (t: Timed) => void): Promise<number | undefined> {
  const excluded = rc.worldSize - 1;
  if (rc.rank === excluded) {
    await rc.sitOut('call');
    await rc.sitOut('first');
    return undefined;
  }
  const shrunk = await rc.timed('call', label, (gen) => rc.native.commShrink(parent, [excluded], flags, null, gen));
  onCall?.(shrunk);
  const child = shrunk.comm;
  if (child === null) throw new Error(`ncclCommShrink returned no communicator on surviving rank ${rc.rank}`);
  rc.markMemory('afterCall', [child]);
  await rc.timed('first', 'first allreduce', (gen) => rc.native.allReduce(child, rc.options.firstCollectiveBytes, gen));
  rc.markMemory('afterFirst', [child]);
  return child;
}

/**
 * `call` + `first` + their sum: the steps of every path that produces a new communicator; with a
 * first use other than allreduce, `warm` after them (the same op connected).
 */
export function creationSteps(options: RunOptions, label: string, total: string, kind: FirstUseKind = 'allreduce'): StepPlan[] {
  return [
    { step: 'call', label, kind: 'call' },
    firstStep(options, kind),
    { step: 'total', label: total, kind: 'toFirst', sumOf: ['call', 'first'] },
    ...(kind === 'allreduce' ? [] : [warmStep(options, kind)]),
  ];
}

export interface ExperimentModule<State = unknown> {
  id: ExperimentId;
  /**
   * Environment a variant needs, set before NCCL loads: such a variant runs in rank processes
   * of its own (NCCL reads most variables once per process).
   */
  variantEnv?(variant: string): Record<string, string> | undefined;
  /**
   * The session's ranks on one host share a folder (e.g. c10d's torch FileStore): the coordinator
   * makes a private one per rank session (remote-agent/privateDir.ts: mkdtemp, mode 0700, checked),
   * gives its path to the ranks in COMMCOST_SESSION_DIR and removes it when the session ends.
   */
  sessionDir?: boolean;
  /**
   * Each iteration runs in a fresh set of rank processes of its own (with `variantEnv`): the
   * coordinator starts one set per iteration, warmups included (cold-start).
   */
  processPerIteration?: true;
  /**
   * Runs in each rank process whose work includes this experiment, before NCCL and CUDA load
   * (e.g. pointing NCCL_DEBUG_FILE at a temporary folder).
   * @throws Error when the process cannot be prepared (the rank reports it and its session ends).
   */
  beforeLoad?(): void;
  /** Variants to run on this host, or the reason the experiment cannot run here. */
  plan(ctx: PlanContext): VariantPlan[] | { skip: string };
  /** Variants `plan` left out on this host, with why (reported as skipped, not failed). */
  skippedVariants?(): { variant: string; reason: string }[];
  /** Untimed preparation of one variant on every rank (e.g. the parent communicator). */
  setup?(rc: RankContext, variant: string): Promise<State>;
  /** One iteration of the variant; records its steps through `rc.timed`. */
  iteration(rc: RankContext, variant: string, state: State): Promise<void>;
  /** Untimed release of what `setup` built. */
  teardown?(rc: RankContext, variant: string, state: State): Promise<void>;
}

/** Human size: 1048576 → "1 MiB". */
export function formatBytes(bytes: number): string {
  if (bytes >= 1 << 30 && bytes % (1 << 30) === 0) return `${bytes / (1 << 30)} GiB`;
  if (bytes >= 1 << 20 && bytes % (1 << 20) === 0) return `${bytes / (1 << 20)} MiB`;
  if (bytes >= 1 << 10 && bytes % (1 << 10) === 0) return `${bytes / (1 << 10)} KiB`;
  return `${bytes} B`;
}

/** The words of one use of `kind`: "allreduce", "broadcast from rank 0", "send/recv pair". */
export function firstUseWords(kind: FirstUseKind): string {
  return kind === 'broadcast' ? 'broadcast from rank 0' : kind === 'sendrecv' ? 'send/recv pair' : 'allreduce';
}

/** The step "first collective on the new communicator" (an allreduce unless `kind` says otherwise). */
export function firstStep(options: RunOptions, kind: FirstUseKind = 'allreduce'): StepPlan {
  return { step: 'first', label: `first ${formatBytes(options.firstCollectiveBytes ?? 1 << 20)} ${firstUseWords(kind)}`, kind: 'first' };
}

/**
 * The step "the same op again, connected" of a first-use variant: first − warm is the share of the
 * first use that its connect took (the ring's for a broadcast, the peer's for a send/recv pair).
 */
export function warmStep(options: RunOptions, kind: FirstUseKind): StepPlan {
  return { step: 'warm', label: `warm ${formatBytes(options.firstCollectiveBytes ?? 1 << 20)} ${firstUseWords(kind)}`, kind: 'steady' };
}

/** The kinds of first use the run asks for (RunOptions.firstUse), allreduce when it names none. */
export function firstUseKinds(options: RunOptions): FirstUseKind[] {
  return options.firstUse && options.firstUse.length > 0 ? [...options.firstUse] : ['allreduce'];
}

/** This rank's partner in a send/recv pair: ranks 2k and 2k+1; the last rank of an odd count pairs with itself. */
export function sendRecvPeer(rank: number, worldSize: number): number {
  const peer = rank ^ 1;
  return peer < worldSize ? peer : rank;
}

/**
 * One use of `comm` of `kind` with options.firstCollectiveBytes: an allreduce, a broadcast from rank 0,
 * or a send/recv pair with this rank's partner in the communicator (`commRank` of `commSize`); timed
 * as `step` when `step` is given (the barrier, then the call and its stream sync), untimed otherwise.
 */
export async function useComm(rc: RankContext, comm: number, kind: FirstUseKind, step: string | null, label: string, commRank = rc.rank, commSize = rc.worldSize): Promise<void> {
  const bytes = rc.options.firstCollectiveBytes;
  const op = (gen?: number) =>
    kind === 'broadcast' ? rc.native.broadcast(comm, bytes, 0, gen)
      : kind === 'sendrecv' ? rc.native.sendRecv(comm, sendRecvPeer(commRank, commSize), bytes, gen)
        : rc.native.allReduce(comm, bytes, gen);
  if (step) await rc.timed(step, label, (gen) => op(gen));
  else await rc.untimed(label, () => op());
}

/**
 * The first use of a new communicator as a first-use variant times it: `first` (memory point
 * `afterFirst`), and for a kind other than allreduce `warm`, the same op once more.
 */
export async function timeFirstUse(rc: RankContext, comm: number, kind: FirstUseKind, commRank = rc.rank, commSize = rc.worldSize): Promise<void> {
  await useComm(rc, comm, kind, 'first', `first ${firstUseWords(kind)}`, commRank, commSize);
  rc.markMemory('afterFirst', [comm]);
  if (kind !== 'allreduce') await useComm(rc, comm, kind, 'warm', `warm ${firstUseWords(kind)}`, commRank, commSize);
}

/** Skip reason when the host's NCCL predates `needed` ("needs NCCL ≥ 2.18.1, host has 2.17.1"). */
export function needsNccl(ctx: PlanContext, needed: string): string | undefined {
  return ctx.ncclVersionCode < versionCode(needed)
    ? `needs NCCL ≥ ${needed}, host has ${versionString(ctx.ncclVersionCode)}`
    : undefined;
}

/** Skip reason when the library lacks an optional symbol ("ncclCommShrink is not in this NCCL"). */
export function needsSymbols(ctx: PlanContext, ...names: string[]): string | undefined {
  const missing = names.filter((n) => !ctx.symbols[n]);
  return missing.length > 0 ? `${missing.join(', ')} not in this NCCL (${versionString(ctx.ncclVersionCode)})` : undefined;
}

/** Skip reason when the run has fewer ranks than `n`. */
export function needsRanks(ctx: PlanContext, n: number): string | undefined {
  return ctx.ranks < n ? `needs ${n} GPUs, host has ${ctx.ranks}` : undefined;
}
