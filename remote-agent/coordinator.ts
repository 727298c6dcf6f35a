/**
 * Coordinator mode: plans the run, runs it in rank sessions (rankSession.ts: one rank process
 * per GPU, the TCP barrier and the unique-id hand-out, each step combined across ranks by MAX in
 * rankCombine.ts, the per-step deadline), summarises the recorded iterations and emits protocol
 * events. Options and library loading: runSetup.ts; the plan's shapes and its grouping into
 * sessions: sessionPlan.ts; multi-node placement: clusterPlacement.ts.
 *
 * Invariants: emits through `emit` only (main.ts writes those to stdout; nothing else does);
 * every rank process is owned by a RankSession and killed when the session ends, whatever way
 * it ends; a failure in one experiment loses nothing measured before it.
 */
import * as os from 'node:os';
import { ONE_GPU_EXPERIMENTS, type ExperimentId, type RunOptions } from '../protocol/events';
import { gatherNodes, type ClusterMode, type ClusterPlacement } from './clusterPlacement';
import { environmentStamp } from './environment';
import { CATALOGUE } from './experiments/catalogue';
import type { DeviceInfo, LoadInfo } from './nativeBinding';
import { emptyViewRecord } from './ncclInitTimings';
import type { NodeServer } from './nodeServer';
import { summarizeExperiment } from './rankCombine';
import { makePrivateDir, SESSION_DIR_ENV, SESSION_DIR_ERROR_ENV, type PrivateDir } from './privateDir';
import { RankSession } from './rankSession';
import { warmSpawnThreads } from './rankSpawner';
import { loadLibrary, normalizeOptions, RunSetupError, type NormalizedOptions } from './runSetup';
import { sessionUnits, type Emit, type Log, type PlannedExperiment, type SessionFailure, type VariantRecord } from './sessionPlan';

// The coordinator's public API, where its importers (main.ts, launched.ts, slurm.ts, tests) find it.
export { hasNvidiaDriver, loadLibrary, normalizeOptions, RunSetupError, type NormalizedOptions } from './runSetup';
export { sessionUnits, type PlannedExperiment, type SessionUnit } from './sessionPlan';
export type { ClusterMode } from './clusterPlacement';
export { isNativeError } from './nativeBinding';

/** Drives one run. Create one per `run/start`. */
export class Coordinator {
  private cancelled = false;
  private session: RankSession | undefined;
  /** Sums over rank sessions of the run/done figures, ms (WallSplit). */
  private libraryMs = 0;
  private timedMs = 0;
  private processStartMs = 0;
  private processExitMs = 0;
  private nodeServer: NodeServer | undefined;

  constructor(
    private readonly emit: Emit,
    private readonly log: Log,
    private readonly cluster?: ClusterMode,
  ) {}

  /** Stops the run: kills the rank processes, keeps what was measured (done = partial). */
  cancel(reason: string): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.log(`cancel: ${reason}`);
    this.session?.fail({ code: 'INTERNAL', message: `cancelled: ${reason}`, where: {} }, true);
  }

  /** Runs to the end and emits `run/done` last, whatever happens. Never throws. */
  async run(input: Partial<RunOptions>): Promise<void> {
    const started = Date.now();
    let status: 'complete' | 'partial' | 'failed' = 'failed';
    try {
      status = await this.runInner(input);
    } catch (e) {
      if (e instanceof RunSetupError) {
        this.emit({ type: 'run/error', code: e.code, message: e.message, where: { host: os.hostname() }, detail: e.detail, hint: e.hint, fatal: true });
      } else {
        this.emit({ type: 'run/error', code: 'INTERNAL', message: `agent error: ${e instanceof Error ? e.stack ?? e.message : String(e)}`, where: { host: os.hostname() }, fatal: true });
      }
      status = 'failed';
    }
    if (this.cancelled && status === 'complete') status = 'partial';
    this.nodeServer?.close(status);
    const wallMs = Date.now() - started;
    const setupMs = Math.max(0, this.libraryMs - this.timedMs);
    const wallSplit = {
      timedMs: this.timedMs,
      setupMs,
      processStartMs: this.processStartMs,
      processExitMs: this.processExitMs,
      harnessMs: Math.max(0, wallMs - this.timedMs - setupMs - this.processStartMs - this.processExitMs),
    };
    this.emit({ type: 'run/done', status, wallMs, libraryMs: this.libraryMs, wallSplit, endedAt: new Date().toISOString() });
  }

  private async runInner(input: Partial<RunOptions>): Promise<'complete' | 'partial' | 'failed'> {
    let options = normalizeOptions(input);
    // The threads that start rank processes boot while the library loads and the plan is made.
    void warmSpawnThreads();
    const { native, info, location } = loadLibrary(options);
    const count = native.deviceCount();
    if (count === 0) throw new RunSetupError('NO_GPU', `no GPU visible on ${os.hostname()} (cuDeviceGetCount = 0)`, 'check CUDA_VISIBLE_DEVICES and nvidia-smi');
    let ranks = options.ranks ?? count;
    if (ranks > count) throw new RunSetupError('BAD_COMMAND', `asked for ${ranks} ranks but ${os.hostname()} has ${count} GPUs`, 'ask for fewer ranks (one process per GPU)');
    const gpus: DeviceInfo[] = [];
    for (let i = 0; i < count; i++) gpus.push(native.deviceInfo(i));
    const stamp = environmentStamp(info, gpus, location.source, process.env, options.python);
    let cluster: ClusterPlacement | undefined;
    if (this.cluster) {
      cluster = await gatherNodes(this.cluster, options, info, gpus, ranks, {
        emit: this.emit,
        log: this.log,
        cancelled: () => this.cancelled,
        onServer: (server) => (this.nodeServer = server),
        onNodeLost: (failure) => this.session?.fail(failure),
      });
      ranks = cluster.places.length;
    }

    // One rank and no choice made: the one-GPU set (split stays, to be skipped with its reason).
    if (options.experimentsByDefault && ranks === 1) options = { ...options, experiments: [...ONE_GPU_EXPERIMENTS] };
    const planned: PlannedExperiment[] = [];
    const skipped: { experiment: ExperimentId; reason: string }[] = [];
    const skippedVariants: { experiment: ExperimentId; variant: string; reason: string }[] = [];
    for (const id of options.experiments) {
      const p = CATALOGUE[id].plan({ ranks, ncclVersionCode: info.ncclVersionCode, symbols: info.symbols, options, ...(cluster ? { nodeOfRank: cluster.nodeOfRank } : {}) });
      const module = CATALOGUE[id];
      for (const v of module.skippedVariants?.() ?? []) skippedVariants.push({ experiment: id, ...v });
      if ('skip' in p) skipped.push({ experiment: id, reason: p.skip });
      else planned.push({ experiment: id, variants: p.map((v) => ({ ...v, ...(module.variantEnv ? { env: module.variantEnv(v.variant) } : {}) })) });
    }
    // Variables a variant runs with beyond the stamp's (e.g. C2's NCCL_COMM_SPLIT_SHARE_RESOURCES=1), in the stamp too.
    const variantEnv: Record<string, Record<string, string>> = {};
    for (const w of planned) for (const v of w.variants) if (v.env && Object.keys(v.env).length > 0) variantEnv[`${w.experiment} ${v.variant}`] = v.env;
    if (Object.keys(variantEnv).length > 0) stamp.variantEnv = variantEnv;
    this.emit({ type: 'run/plan', stamp, options, ranks, simulated: info.simulated, experiments: planned, ...(cluster ? { nodes: cluster.nodes } : {}) });
    for (const s of [...skipped, ...skippedVariants]) this.emit({ type: 'experiment/skipped', ...s });

    // Run the plan in rank sessions; a failed session loses only its own experiment.
    this.plan = planned;
    this.total = options.warmup + options.iterations;
    for (const w of planned) for (const v of w.variants) this.records.set(`${w.experiment}|${v.variant}`, { plan: v, samples: {}, memory: {}, done: 0, ...(v.ncclInitView ? { nccl: emptyViewRecord() } : {}) });
    let failures = 0;
    let first = true;
    const failed = new Set<ExperimentId>();
    const queue = sessionUnits(planned, this.total);
    for (let unit = queue.shift(); unit && !this.cancelled; unit = queue.shift()) {
      const work = unit.work.filter((w) => !failed.has(w.experiment));
      if (work.length === 0) continue;
      const stop = await this.runSession(work, unit.env, ranks, options, info, first, cluster);
      first = false;
      if (stop === undefined) continue;
      const failedExperiment = stop.experiment;
      // A hang that is the field case's result is reported, not counted as a failure.
      if (!stop.expected) failures++;
      // A variant in processes of its own (variantEnv: field cases, connect-mode, c10d) fails
      // alone: the experiment's other variants still run, each in fresh processes.
      // A process set per iteration (processPerIteration) stops its experiment at the first failure.
      const alone = CATALOGUE[failedExperiment].variantEnv !== undefined && unit.work.length === 1 && unit.work[0]!.variants.length === 1 && unit.work[0]!.iteration === undefined;
      if (!alone) failed.add(failedExperiment);
      // Keep what the failed experiment measured: summarise its finished variants once nothing
      // more of it is to run.
      if (!alone || !queue.some((u) => u.work.some((w) => w.experiment === failedExperiment))) this.summarize(failedExperiment, true);
      // The experiments after it in the same session run in fresh processes.
      const rest = work.slice(work.findIndex((w) => w.experiment === failedExperiment) + 1);
      if (rest.length > 0) queue.unshift({ work: rest, env: unit.env });
    }
    if (this.cancelled) {
      for (const w of planned) this.summarize(w.experiment, true);
      return 'partial';
    }
    // An experiment whose failed variant was not its last is summarised with what finished.
    for (const w of planned) this.summarize(w.experiment, true);
    // A failure before any iteration was recorded (a rank lost at start) leaves nothing: failed, not partial.
    const anyRecorded = [...this.records.values()].some((r) => r.done > 0);
    return failures === 0 ? 'complete' : anyRecorded ? 'partial' : 'failed';
  }

  /** Per-variant records of recorded iterations, shared by every rank session of the run. */
  private readonly records = new Map<string, VariantRecord>();
  private plan: PlannedExperiment[] = [];
  private total = 0;
  private readonly summarized = new Set<ExperimentId>();

  /** Called by a session after each combined iteration. */
  private onCombined = (experiment: ExperimentId): void => this.summarize(experiment, false);

  /**
   * Emits an experiment's summary once every variant has all its iterations, or (force) with
   * the variants finished so far when the experiment cannot go on. At most once per experiment.
   */
  private summarize(experiment: ExperimentId, force: boolean): void {
    if (this.summarized.has(experiment)) return;
    const planned = this.plan.find((w) => w.experiment === experiment);
    if (!planned) return;
    const variants = summarizeExperiment(planned, this.records, this.total, force);
    if (!variants) return;
    this.summarized.add(experiment);
    this.emit({ type: 'experiment/summary', experiment, variants });
  }

  /**
   * Runs `work` in fresh rank processes with `env` added.
   * @returns the experiment that stopped the session, if any, and whether that stop was a hang
   * the variant's plan expects (VariantPlan.hangIsResult: the field case's result, not a failure).
   */
  private async runSession(
    work: PlannedExperiment[],
    env: Record<string, string>,
    ranks: number,
    options: NormalizedOptions,
    info: LoadInfo,
    reportStartup: boolean,
    cluster: ClusterPlacement | undefined,
  ): Promise<{ experiment: ExperimentId; expected: boolean } | undefined> {
    // A private folder the session's ranks share (c10d's FileStore), made here and removed below.
    let sessionDir: PrivateDir | undefined;
    if (work.some((w) => CATALOGUE[w.experiment].sessionDir)) {
      try {
        sessionDir = makePrivateDir('commcost-session-');
        env = { ...env, [SESSION_DIR_ENV]: sessionDir.path };
      } catch (e) {
        this.log(`no private folder for the session: ${(e as Error).message}`);
        env = { ...env, [SESSION_DIR_ERROR_ENV]: (e as Error).message };
      }
    }
    const session = new RankSession(ranks, options, info, work, env, this.records, this.onCombined, this.emit, this.log, reportStartup, this.plan, cluster);
    this.session = session;
    // The failure is reported as it happens, before the ranks are aborted and reaped (up to the
    // abort grace): the user hears of a hang at the deadline, not seconds after it.
    let reported: SessionFailure | undefined;
    const report = (f: SessionFailure): void => {
      if (reported || this.cancelled) return;
      reported = f;
      const plan = work.find((w) => w.experiment === f.where.experiment)?.variants.find((v) => v.variant === f.where.variant);
      const expected = f.code === 'TIMEOUT' && plan?.hangIsResult !== undefined;
      const hint = expected ? `${plan!.hangIsResult}: the hang guard ended it at the deadline, as this case expects` : f.hint;
      this.emit({ type: 'run/error', code: f.code, message: f.message, where: { host: os.hostname(), ...f.where }, detail: f.detail, hint, fatal: false, ...(expected ? { expected: true } : {}) });
    };
    session.onFailure = report;
    try {
      const result = await session.run();
      this.libraryMs += session.libraryMsMax;
      this.timedMs += session.timedMsMax;
      this.processStartMs += session.processStartMs;
      this.processExitMs += session.processExitMs;
      if (!result.failure) return undefined;
      const f = result.failure;
      const plan = work.find((w) => w.experiment === f.where.experiment)?.variants.find((v) => v.variant === f.where.variant);
      const expected = f.code === 'TIMEOUT' && plan?.hangIsResult !== undefined && !this.cancelled;
      report(f);
      const experiment = f.where.experiment ?? work[work.length - 1]?.experiment;
      return experiment === undefined ? undefined : { experiment, expected };
    } finally {
      this.session = undefined;
      sessionDir?.remove();
    }
  }
}
