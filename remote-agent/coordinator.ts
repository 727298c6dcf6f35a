/**
 * Coordinator mode: plans the run, starts one rank process per GPU, hosts the TCP barrier and
 * the unique-id hand-out, combines each step across ranks (MAX), summarises the recorded
 * iterations, enforces the per-step deadline (hang guard) and emits protocol events.
 *
 * Invariants: emits through `emit` only (main.ts writes those to stdout; nothing else does);
 * every rank process is owned by a RankSession and killed when the session ends, whatever way
 * it ends; a failure in one experiment loses nothing measured before it.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import {
  DEFAULT_RUN_OPTIONS,
  EXPERIMENT_IDS,
  ONE_GPU_EXPERIMENTS,
  OPTION_LIMITS,
  pythonOptionProblem,
  withinLimit,
  type AgentEvent,
  type ErrorCode,
  type ExperimentId,
  type NodePlan,
  type RunOptions,
  type SampleEvent,
  type StepPlan,
  type VariantPlan,
  type VariantSummary,
} from '../protocol/events';
import { environmentStamp, hostPython, RANK_METHOD_ENV } from './environment';
import { CATALOGUE } from './experiments/catalogue';
import { BarrierServer, ShmRelease } from './barrierServer';
import { LineChannel, MAX_LINE_CHARS, PRE_AUTH_LINE_CHARS } from './lineChannel';
import { ListenerGuard } from './listenerGuard';
import { findHang, type OpInFlight } from './hangGuard';
import { rankMessageProblem } from '../protocol/agentWire';
import { isNativeError, loadBinding, simulatedLibraryPath, type DeviceInfo, type LoadInfo, type NativeBinding } from './nativeBinding';
import { locateNccl, searchedPlaces } from './ncclLocator';
import { hostAddresses, NODE_SILENCE_MS, NodeServer, placeRanks, runNodeHost, startLocalRank, type RankHandle, type RankPlace } from './nodes';
import { addExtras, combineExtras, summarizeExtras, type ExtrasRecord } from './iterationExtras';
import type { CoordinatorToRank, IterationReport, RankToCoordinator, RankWork } from './rankWire';
import { combineRanks, summarize } from './stats';
import { addIteration, combineRanksViews, emptyViewRecord, summarizeViews, type ViewRecord } from './ncclInitTimings';

/** A failure that ends the run before anything is measured. */
export class RunSetupError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly hint?: string,
    readonly detail?: string,
  ) {
    super(message);
  }
}

/**
 * Checks and completes the host's options.
 * @throws RunSetupError BAD_COMMAND naming the bad field and value.
 */
export function normalizeOptions(input: Partial<RunOptions>): Required<Omit<RunOptions, 'ncclPath' | 'ranks' | 'python'>> & RunOptions {
  const o = { ...DEFAULT_RUN_OPTIONS, ...input } as Required<Omit<RunOptions, 'ncclPath' | 'ranks' | 'python'>> & RunOptions;
  const bad = (what: string): never => {
    throw new RunSetupError('BAD_COMMAND', what, 'fix the option and run again');
  };
  if (!Array.isArray(o.experiments) || o.experiments.length === 0) bad('no experiments selected');
  for (const e of o.experiments) {
    if (!(EXPERIMENT_IDS as readonly string[]).includes(e)) bad(`unknown experiment "${String(e)}" (known: ${EXPERIMENT_IDS.join(', ')})`);
  }
  const L = OPTION_LIMITS;
  if (!withinLimit(o.iterations, L.iterations, true)) bad(`iterations must be an integer from ${L.iterations.min} to ${L.iterations.max}, got ${String(o.iterations)}`);
  if (!withinLimit(o.warmup, L.warmup, true)) bad(`warmup must be an integer from ${L.warmup.min} to ${L.warmup.max}, got ${String(o.warmup)}`);
  if (!withinLimit(o.deadlineSeconds, L.deadlineSeconds, false)) bad(`deadlineSeconds must be a number of seconds from ${L.deadlineSeconds.min} to ${L.deadlineSeconds.max}, got ${String(o.deadlineSeconds)}`);
  if (o.ranks !== undefined && !withinLimit(o.ranks, L.ranks, true)) bad(`ranks must be an integer from ${L.ranks.min} to ${L.ranks.max}, got ${String(o.ranks)}`);
  for (const k of ['firstCollectiveBytes', 'steadyBytes'] as const) {
    const v = o[k];
    if (!withinLimit(v, L.collectiveBytes, true)) bad(`${k} must be an integer from 4 to 16 GiB, got ${String(v)}`);
  }
  const pythonProblem = o.python === undefined ? undefined : pythonOptionProblem(o.python);
  if (pythonProblem) {
    const shown = typeof o.python === 'string' && o.python.length > 80 ? `${JSON.stringify(o.python.slice(0, 80))}…` : JSON.stringify(o.python) ?? String(o.python);
    bad(
      `python ${pythonProblem}, got ${shown}: give the path of the Python with torch on the GPU host (one line, ${L.pythonChars.min} to ${L.pythonChars.max} characters, no NUL), or leave python out to use $COMMCOST_PYTHON, else python3`,
    );
  }
  return o;
}

/** True when this host shows signs of an NVIDIA driver. */
export function hasNvidiaDriver(): boolean {
  if (fs.existsSync('/dev/nvidiactl')) return true;
  try {
    execFileSync('sh', ['-c', 'ldconfig -p 2>/dev/null | grep -q "libcuda\\.so\\.1"'], { timeout: 3000, stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

export interface PlannedExperiment {
  experiment: ExperimentId;
  variants: VariantPlan[];
  /** Only this iteration (0-based, warmups included): a process set per iteration (processPerIteration). */
  iteration?: number;
}

/** Per-variant accumulation of recorded iterations. */
interface VariantRecord {
  plan: VariantPlan;
  samples: Record<string, number[]>;
  memory: Record<string, number[]>;
  done: number;
  /** NCCL's view over the recorded iterations (plans with ncclInitView). */
  nccl?: ViewRecord;
  /** ncclCommMemStats and counts of the recorded iterations (iterationExtras.ts). */
  extras?: ExtrasRecord;
}

type Emit = (ev: AgentEvent) => void;
type Log = (line: string) => void;

/** What ended a rank session early. */
interface SessionFailure {
  code: ErrorCode;
  message: string;
  detail?: string;
  hint?: string;
  where: { rank?: number; experiment?: ExperimentId; variant?: string; iteration?: number; step?: string };
}

/**
 * A run whose ranks live on several nodes. `ssh`: this agent is node 0 of `nodes` hosts, each
 * with its own agent (joined by `node/join`). `launched`: every rank is a process an external
 * launcher started; this one is rank 0 and listens on a fixed port.
 */
export type ClusterMode =
  | { kind: 'ssh'; nodes: number; coordinatorAddress?: string }
  | { kind: 'launched'; worldSize: number; port: number; token: string; device: number };

/** The ranks of a multi-node run: its node server and where each rank runs. */
interface ClusterPlacement {
  server: NodeServer;
  /** Per rank: the node connection that starts it and the device. */
  places: RankPlace[];
  /** The hosts of the run (what the plan and run file show), in order. */
  nodes: NodePlan[];
  /** Per node connection: its host's index in `nodes` (launched processes on one host share it). */
  hostOf: number[];
  /** Per rank: its host's index (what topology-aware experiments split by). */
  nodeOfRank: number[];
}

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
      cluster = await this.gatherNodes(this.cluster, options, info, gpus, ranks);
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
    const finished = planned.variants.filter((v) => this.records.get(`${experiment}|${v.variant}`)?.done === this.total);
    if (finished.length < planned.variants.length && !force) return;
    if (finished.length === 0) return;
    this.summarized.add(experiment);
    const variants: VariantSummary[] = finished.map((v) => {
      const record = this.records.get(`${experiment}|${v.variant}`)!;
      const steps = v.steps
        .filter((st: StepPlan) => (record.samples[st.step]?.length ?? 0) > 0)
        .map((st: StepPlan) => ({ ...st, stats: summarize(record.samples[st.step]!), samples: record.samples[st.step]! }));
      const memoryBytes: Record<string, number> = {};
      for (const [point, values] of Object.entries(record.memory)) memoryBytes[point] = summarize(values).median;
      // Ratios of medians (e.g. cold-start's cold / warm), where both steps have figures.
      const median = (step: string): number | undefined => steps.find((st) => st.step === step)?.stats.median;
      const ratios = (v.ratios ?? []).flatMap((r) => {
        const [of, to] = [median(r.of), median(r.to)];
        return of !== undefined && to !== undefined && to > 0 ? [{ ...r, value: of / to }] : [];
      });
      const ncclInit = record.nccl && summarizeViews(record.nccl, v.ncclInitView?.creations ?? [], v.ncclInitView?.note);
      return { variant: v.variant, ...(v.env ? { env: v.env } : {}), steps, memoryBytes, ...(ratios.length > 0 ? { ratios } : {}), ...(ncclInit ? { ncclInit } : {}), ...summarizeExtras(record.extras) };
    });
    this.emit({ type: 'experiment/summary', experiment, variants });
  }

  /**
   * Multi-node runs: listens for the nodes, joins this host as node 0 (an in-process node host,
   * so its ranks start the same way as everyone's), waits for all of them within the deadline,
   * checks they load the same NCCL, and places the ranks.
   * @throws RunSetupError NODE_UNREACHABLE naming who joined, or BAD_COMMAND on mismatched nodes.
   */
  private async gatherNodes(mode: ClusterMode, options: ReturnType<typeof normalizeOptions>, info: LoadInfo, gpus: DeviceInfo[], localRanks: number): Promise<ClusterPlacement> {
    const token = mode.kind === 'launched' ? mode.token : randomBytes(16).toString('hex');
    const expected = mode.kind === 'launched' ? mode.worldSize : mode.nodes;
    const server = new NodeServer({ expected, token, port: mode.kind === 'launched' ? mode.port : 0, log: this.log });
    this.nodeServer = server;
    let port: number;
    try {
      port = await server.listen();
    } catch (e) {
      throw new RunSetupError('BAD_COMMAND', `cannot listen for the other nodes on port ${mode.kind === 'launched' ? mode.port : 0}: ${(e as Error).message}`, 'set COMMCOST_PORT to a free port (the same for every rank)');
    }
    if (mode.kind === 'ssh') {
      const addresses = mode.coordinatorAddress ? [mode.coordinatorAddress] : hostAddresses();
      this.emit({ type: 'run/listening', port, addresses, token });
    }
    const devices = mode.kind === 'launched' ? [mode.device] : [...Array(localRanks).keys()];
    const deadlineMs = options.deadlineSeconds * 1000;
    // This host is a node too. It ends when the server closes (end of the run).
    runNodeHost({
      addresses: ['127.0.0.1'],
      port,
      token,
      connectDeadlineMs: deadlineMs,
      log: this.log,
      hello: {
        ...(mode.kind === 'launched' ? { fixedRank: 0, worldSize: mode.worldSize } : { index: 0 }),
        slots: devices.length,
        devices,
        gpus: devices.map((d) => gpus[d]?.name ?? '?'),
        ncclVersion: info.ncclVersion,
        simulated: info.simulated,
      },
    }).catch((e: unknown) => this.log(`this host's node ended: ${(e as Error).message}`));
    let joined;
    try {
      joined = await server.waitForNodes(deadlineMs + 5000, () => this.cancelled);
    } catch (e) {
      if (this.cancelled) {
        throw new RunSetupError('NODE_UNREACHABLE', 'the run was cancelled while the other hosts were joining', 'if a host could not join, its own error says why');
      }
      throw new RunSetupError(
        'NODE_UNREACHABLE',
        (e as Error).message,
        mode.kind === 'launched'
          ? 'every rank must reach rank 0\'s node at COMMCOST_COORDINATOR_ADDR (or MASTER_ADDR / the first Slurm node) on COMMCOST_PORT'
          : 'set the coordinator address the other hosts can reach (--coordinator-address / commcost.coordinatorAddress)',
      );
    }
    const mismatch = joined.find((n) => n.hello.ncclVersion !== info.ncclVersion || n.hello.simulated !== info.simulated);
    if (mismatch) {
      throw new RunSetupError(
        'BAD_COMMAND',
        `node ${mismatch.hello.hostname} loads NCCL ${mismatch.hello.ncclVersion}${mismatch.hello.simulated ? ' (simulated)' : ''}, the coordinator ${info.ncclVersion}${info.simulated ? ' (simulated)' : ''}`,
        'every node of a run must load the same NCCL: give the path with --nccl',
      );
    }
    let places: RankPlace[];
    try {
      places = placeRanks(joined);
    } catch (e) {
      throw new RunSetupError('BAD_COMMAND', `cannot place the ranks: ${(e as Error).message}`, 'start one process per rank with the same world size');
    }
    server.onLost((n) => this.session?.fail({ code: 'NODE_LOST', message: `node ${n.hello.hostname} (${n.address}) went away`, hint: 'the node\'s agent or connection ended; its ranks are gone', where: {} }));
    // Hosts: each SSH agent is one; launched processes on the same host (by name) are one.
    const hostKeys: string[] = [];
    const hostOf = joined.map((n, i) => {
      const key = mode.kind === 'launched' ? `host:${n.hello.hostname}` : `node:${i}`;
      if (!hostKeys.includes(key)) hostKeys.push(key);
      return hostKeys.indexOf(key);
    });
    const nodes: NodePlan[] = hostKeys.map((_, index) => {
      const members = joined.map((_n, i) => i).filter((i) => hostOf[i] === index);
      const ranksHere = places.filter((p) => members.includes(p.node));
      const first = joined[members[0]!]!;
      return {
        index,
        hostname: first.hello.hostname,
        address: server.reachableAddress(members[0]!),
        ranks: ranksHere.map((p) => p.rank),
        gpus: ranksHere.map((p) => {
          const h = joined[p.node]!.hello;
          return h.gpus[h.devices.indexOf(p.device)] ?? '?';
        }),
      };
    });
    return { server, places, nodes, hostOf, nodeOfRank: places.map((p) => hostOf[p.node]!) };
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
    options: ReturnType<typeof normalizeOptions>,
    info: LoadInfo,
    reportStartup: boolean,
    cluster: ClusterPlacement | undefined,
  ): Promise<{ experiment: ExperimentId; expected: boolean } | undefined> {
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
    }
  }
}

/**
 * Loads the addon, then NCCL and the CUDA driver as `options` say (simulated, explicit path, or
 * found: ncclLocator.ts). Loading the same libraries again in one process is a no-op.
 * @throws RunSetupError NO_GPU, NCCL_NOT_FOUND or LOAD_FAILED with what to do.
 */
export function loadLibrary(options: RunOptions): { native: NativeBinding; info: LoadInfo; location: { path: string; source: string } } {
  const host = os.hostname();
  let location: { path: string; source: string };
  let cudaPath: string | undefined;
  if (options.simulate) {
    // The simulated library shows as many GPUs as ranks asked for, unless told otherwise.
    if (options.ranks !== undefined && process.env.COMMCOST_SIM_GPUS === undefined) process.env.COMMCOST_SIM_GPUS = String(options.ranks);
    location = { path: simulatedLibraryPath(), source: 'simulated' };
    cudaPath = location.path;
  } else {
    if (!hasNvidiaDriver()) {
      throw new RunSetupError(
        'NO_GPU',
        `no NVIDIA GPU driver on ${host}: /dev/nvidiactl and libcuda.so.1 not found`,
        'run on a GPU host, or use --simulate (the simulated NCCL; its figures are not measurements)',
      );
    }
    let found;
    try {
      found = locateNccl(options.ncclPath, process.env, options.python);
    } catch (e) {
      throw new RunSetupError('NCCL_NOT_FOUND', (e as Error).message, 'fix --nccl / commcost.ncclPath / COMMCOST_NCCL_PATH');
    }
    if (!found) {
      throw new RunSetupError(
        'NCCL_NOT_FOUND',
        `no libnccl.so.2 found on ${host}`,
        'install NCCL (e.g. pip install nvidia-nccl-cu12) or give its path with --nccl / commcost.ncclPath',
        `searched: ${searchedPlaces(options.ncclPath, hostPython(options.python)).join('; ')}`,
      );
    }
    location = found;
  }
  let native: NativeBinding;
  try {
    native = loadBinding();
  } catch (e) {
    throw new RunSetupError('LOAD_FAILED', `the commcost native addon did not load on ${host}`, 'see the detail: a missing prebuilt is built on the host with c++ (install a C++17 compiler), otherwise redeploy the agent', (e as Error).message);
  }
  try {
    const info = native.load({ ncclPath: location.path, ...(cudaPath ? { cudaPath } : {}) });
    return { native, info, location };
  } catch (e) {
    const text = e instanceof Error ? e.message : String(e);
    if (/libcuda/.test(text)) throw new RunSetupError('NO_GPU', `the CUDA driver did not load on ${host}`, 'install the NVIDIA driver, or use --simulate', text);
    throw new RunSetupError('LOAD_FAILED', `${location.path} did not load on ${host}`, 'give another NCCL with --nccl / commcost.ncclPath', text);
  }
}

/** Work that runs in one set of rank processes, with the environment it needs. */
export interface SessionUnit {
  work: PlannedExperiment[];
  env: Record<string, string>;
}

/**
 * Groups the plan into rank sessions: consecutive experiments that need no environment of
 * their own share one session; each variant that needs one (e.g. NCCL_RUNTIME_CONNECT=0)
 * gets fresh processes.
 */
export function sessionUnits(planned: PlannedExperiment[], iterationsPerVariant = 1): SessionUnit[] {
  const units: SessionUnit[] = [];
  let shared: SessionUnit | undefined;
  for (const p of planned) {
    const module = CATALOGUE[p.experiment];
    if (!module.variantEnv) {
      if (!shared) units.push((shared = { work: [], env: {} }));
      shared.work.push(p);
      continue;
    }
    shared = undefined;
    for (const v of p.variants) {
      const env = v.env ?? module.variantEnv(v.variant) ?? {};
      // processPerIteration: one set of fresh rank processes per iteration, warmups included.
      if (module.processPerIteration) {
        for (let i = 0; i < iterationsPerVariant; i++) units.push({ work: [{ experiment: p.experiment, variants: [v], iteration: i }], env });
      } else units.push({ work: [{ experiment: p.experiment, variants: [v] }], env });
    }
  }
  return units;
}

/** The codes a rank may report an error with; any other is reported as INTERNAL. */
const RANK_ERROR_CODES = new Set<string>(['NO_GPU', 'NCCL_NOT_FOUND', 'LOAD_FAILED', 'NCCL_ERROR', 'CUDA_ERROR', 'TIMEOUT', 'RANK_EXITED', 'BAD_COMMAND', 'INTERNAL']);

/** True when `a` is the session secret `b` (constant time). */
function sameSecret(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

/** One set of rank processes with their control and barrier servers. */
class RankSession {
  /** Per rank: total duration of its library calls so far (timed and untimed), ms. */
  private readonly libraryMs = new Map<number, number>();
  /** Per rank: total duration of its timed calls so far, ms. */
  private readonly timedMs = new Map<number, number>();
  /** performance.now() at the first spawn, when every rank was ready, when the session ended. */
  private spawnedAt = 0;
  private readyAt: number | undefined;
  /** From the first spawn until every rank was ready (until the end if they never were), ms. */
  processStartMs = 0;
  /** From the session's end until its rank processes exited, ms. */
  processExitMs = 0;
  private readonly control = net.createServer();
  private readonly controlGuard: ListenerGuard;
  private readonly barrier: BarrierServer;
  /** The one-host release (every rank on this host): unlinked once every rank is ready. */
  private readonly shmRelease: ShmRelease | undefined;
  private readonly children: RankHandle[] = [];
  private readonly channels = new Map<number, LineChannel<CoordinatorToRank, RankToCoordinator>>();
  private readonly ids = new Map<number, string>();
  private readonly idWaiters = new Map<number, number[]>();
  private readonly current = new Map<number, { op: string; since: number; experiment: string; variant: string; iteration: number; step?: string }>();
  private readonly lastDone = new Map<number, string>();
  /** Per rank: the last operation it began (where a stall between operations happened). */
  private readonly lastBegin = new Map<number, OpInFlight>();
  /** Unique-id key → the ranks waiting for it and since when (hang guard). */
  private readonly idWaitSince = new Map<number, { ranks: number[]; since: number }>();
  /** When the last message from any rank arrived, ms (hang guard: a stall between operations). */
  private lastHeard = Date.now();
  private readonly pending = new Map<string, IterationReport[]>();
  private readonly ready = new Map<number, { cudaInitMs: number; firstUniqueIdMs?: number }>();
  private finished = new Set<number>();
  private settle!: (r: { failure?: SessionFailure }) => void;
  private ended = false;
  private watchdog: NodeJS.Timeout | undefined;
  private readyDeadline = 0;
  private readonly deadlineMs: number;
  /**
   * The session's secret: handed to each rank process in its environment and required in its
   * hello, so that nothing else that reaches the control port (open on every interface in a
   * multi-node run) can speak for a rank.
   */
  private readonly secret = randomBytes(16).toString('hex');

  constructor(
    private readonly ranks: number,
    private readonly options: ReturnType<typeof normalizeOptions>,
    private readonly info: LoadInfo,
    private readonly work: PlannedExperiment[],
    private readonly env: Record<string, string>,
    private readonly records: Map<string, VariantRecord>,
    private readonly onCombined: (experiment: ExperimentId) => void,
    private readonly emit: Emit,
    private readonly log: Log,
    private readonly reportStartup: boolean,
    private readonly plan: PlannedExperiment[],
    private readonly cluster?: ClusterPlacement,
  ) {
    // Ranks on other nodes reach the control and barrier servers over the network.
    // Its connections must prove the same secret in their first frame (the barrier's hello).
    this.barrier = new BarrierServer({ worldSize: ranks, token: this.secret, host: cluster ? '0.0.0.0' : '127.0.0.1', onProtocolError: (m) => log(m) });
    this.controlGuard = new ListenerGuard('control channel', ranks, log);
    // Every rank on this host: the barrier releases through shared memory (TCP across hosts).
    this.shmRelease = cluster || process.env.COMMCOST_BARRIER_TCP === '1' ? undefined : ShmRelease.create(ranks);
    this.deadlineMs = options.deadlineSeconds * 1000;
  }

  async run(): Promise<{ failure?: SessionFailure }> {
    const outcome = new Promise<{ failure?: SessionFailure }>((resolve) => (this.settle = resolve));
    const barrierPort = await this.barrier.listen();
    this.control.on('connection', (socket) => this.accept(socket, barrierPort));
    await new Promise<void>((resolve) => this.control.listen(0, this.cluster ? '0.0.0.0' : '127.0.0.1', () => resolve()));
    const controlPort = (this.control.address() as net.AddressInfo).port;
    this.readyDeadline = Date.now() + this.deadlineMs;
    this.spawnedAt = performance.now();
    for (let r = 0; r < this.ranks; r++) this.spawnRank(r, controlPort);
    // spawn() forks this process synchronously: its cost is part of processStartMs.
    this.log(`spawned ${this.ranks} rank process${this.ranks === 1 ? '' : 'es'} in ${(performance.now() - this.spawnedAt).toFixed(1)} ms`);
    this.watchdog = setInterval(() => this.checkDeadlines(), 100);
    const result = await outcome;
    const endedAt = performance.now();
    this.processStartMs = (this.readyAt ?? endedAt) - this.spawnedAt;
    await this.shutdown(result.failure !== undefined);
    this.processExitMs = performance.now() - endedAt;
    return result;
  }

  /** Time spent inside library calls in this session (timed and untimed): the MAX over ranks of each rank's total, ms. */
  get libraryMsMax(): number {
    return Math.max(0, ...this.libraryMs.values());
  }

  /** Time spent inside timed calls in this session: the MAX over ranks of each rank's total, ms. */
  get timedMsMax(): number {
    return Math.max(0, ...this.timedMs.values());
  }

  /** Told of the session's failure as it happens (not of a cancel), before the ranks are stopped. */
  onFailure: ((failure: SessionFailure) => void) | undefined;

  /** Ends the session with a failure (hang, error, cancel). Idempotent. */
  fail(failure: SessionFailure, cancelled = false): void {
    if (this.ended) return;
    this.ended = true;
    this.log(`session ends: ${failure.message}`);
    if (!cancelled) this.onFailure?.(failure);
    this.settle(cancelled ? { failure: { ...failure, code: 'INTERNAL' } } : { failure });
  }

  /** The coordinator's address as rank `rank` reaches it. */
  private coordinatorHostFor(rank: number): string {
    if (!this.cluster) return '127.0.0.1';
    const node = this.cluster.places[rank]!.node;
    return this.cluster.server.nodes[node]!.coordinatorAddress;
  }

  private spawnRank(rank: number, controlPort: number): void {
    const place = this.cluster?.places[rank];
    const env: Record<string, string> = {
      COMMCOST_RANK: String(rank),
      COMMCOST_WORLD_SIZE: String(this.ranks),
      COMMCOST_LOCAL_RANK: String(place ? place.device : rank),
      ...this.env,
      COMMCOST_COORDINATOR: `${this.coordinatorHostFor(rank)}:${controlPort}`,
      COMMCOST_SESSION_TOKEN: this.secret,
      ...(this.shmRelease ? { COMMCOST_BARRIER_SHM: this.shmRelease.path } : {}),
      // One OS thread for every library call, one malloc arena (measured: see RANK_METHOD_ENV).
      ...RANK_METHOD_ENV,
    };
    // The simulated NCCL's rendezvous must be reachable from the other nodes too.
    if (place && this.info.simulated) env.COMMCOST_SIM_ADDR = this.cluster!.server.reachableAddress(place.node);
    const node = place ? this.cluster!.nodes[this.cluster!.hostOf[place.node]!]! : undefined;
    const where = node ? ` on ${node.hostname} (${node.address})` : '';
    const callbacks = {
      onLine: (line: string) => this.log(`[rank ${rank}] ${line}`),
      onExit: (code: number | null, signal: string | null) => {
        if (this.ended) return;
        const op = this.current.get(rank);
        const lost = signal === 'NODE_LOST';
        this.fail({
          code: lost ? 'NODE_LOST' : 'RANK_EXITED',
          message: lost ? `rank ${rank}${where} is gone with its node${op ? ` during ${op.op}` : ''}` : `rank ${rank}${where} exited (${signal ?? `code ${code}`})${op ? ` during ${op.op}` : ''}`,
          hint: lost ? 'the node\'s agent or its connection ended' : 'see the log for the rank\'s last lines',
          where: { rank, ...(op ? { experiment: op.experiment as ExperimentId, variant: op.variant, iteration: op.iteration, step: op.step ?? op.op } : {}) },
        });
      },
    };
    this.children.push(place ? this.cluster!.server.spawn(place.node, rank, env, callbacks) : startLocalRank(env, callbacks));
  }

  private accept(socket: net.Socket, barrierPort: number): void {
    // Before its hello a connection may hold PRE_AUTH_LINE_CHARS, for HELLO_MS, and only so many
    // connections at once (listenerGuard.ts): a peer without the secret cannot fill memory.
    if (!this.controlGuard.admit(socket)) return;
    socket.setNoDelay(true);
    let rank = -1;
    const channel = new LineChannel<CoordinatorToRank, RankToCoordinator>(
      socket,
      socket,
      (line, e) => this.log(`bad line from ${rank < 0 ? 'a connection without a hello' : `rank ${rank}`}: ${line.slice(0, 200)}${e instanceof Error ? ` (${e.message})` : ''}`),
      // A rank that died is reported by its exit (RANK_EXITED); its socket's error is only logged.
      (e) => this.log(`control channel of rank ${rank}: ${e.message}`),
    );
    channel.limitLines(PRE_AUTH_LINE_CHARS);
    channel.onMessage((msg) => {
      // Every message's shape is checked before one field is read (`null`, `42`, `steps: null`).
      const problem = rankMessageProblem(msg);
      if (problem) {
        this.log(`${rank < 0 ? 'a connection without a hello' : `rank ${rank}`} sent a malformed message: ${problem}`);
        if (rank < 0) socket.destroy();
        return;
      }
      if (msg.t === 'hello') {
        // A rank that connects after the session ended (a cancel during start-up) is told to go
        // now: closing its control channel ends it, instead of waiting for the shutdown's kill.
        if (this.ended) {
          socket.destroy();
          return;
        }
        if (typeof msg.token !== 'string' || !sameSecret(msg.token, this.secret) || !Number.isInteger(msg.rank) || msg.rank < 0 || msg.rank >= this.ranks || this.channels.has(msg.rank)) {
          this.log(`refused a rank connection claiming rank ${String(msg.rank)}`);
          socket.destroy();
          return;
        }
        rank = msg.rank;
        this.channels.set(rank, channel);
        this.controlGuard.authenticated(socket);
        channel.limitLines(MAX_LINE_CHARS);
        channel.send({
          t: 'start',
          options: this.options,
          work: this.work.map<RankWork>((w) => ({ experiment: w.experiment, variants: w.variants.map((v) => v.variant), ...(w.iteration !== undefined ? { iteration: w.iteration } : {}) })),
          barrierPort,
          barrierHost: this.coordinatorHostFor(msg.rank),
          ncclPath: this.info.ncclPath,
          cudaPath: this.info.cudaPath,
          ...(this.cluster ? { nodeOfRank: this.cluster.nodeOfRank } : {}),
        });
        return;
      }
      // Nothing counts before a valid hello; a rank speaks only for itself.
      if (rank < 0) return;
      this.lastHeard = Date.now();
      this.onRankMessage(rank, msg.t === 'iteration' ? { ...msg, rank } : msg);
    });
  }

  private onRankMessage(rank: number, msg: RankToCoordinator): void {
    switch (msg.t) {
      case 'ready':
        this.ready.set(rank, { cudaInitMs: msg.cudaInitMs, firstUniqueIdMs: msg.firstUniqueIdMs });
        // Every rank has mapped the release file (before its ready): nothing else may open it.
        if (this.ready.size === this.ranks) {
          this.shmRelease?.unlink();
          this.readyAt ??= performance.now();
        }
        if (this.ready.size === this.ranks && this.reportStartup) {
          const byRank = [...this.ready.entries()].sort((a, b) => a[0] - b[0]);
          this.emit({ type: 'run/startup', cudaInitMs: byRank.map(([, r]) => r.cudaInitMs), firstUniqueIdMs: this.ready.get(0)?.firstUniqueIdMs ?? 0 });
        }
        break;
      case 'begin': {
        const op = { op: msg.op, since: Date.now(), experiment: msg.experiment, variant: msg.variant, iteration: msg.iteration, step: msg.step };
        this.current.set(rank, op);
        this.lastBegin.set(rank, op);
        break;
      }
      case 'end':
        this.current.delete(rank);
        this.lastDone.set(rank, msg.op);
        break;
      case 'id/publish':
        this.ids.set(msg.key, msg.id);
        for (const r of this.idWaiters.get(msg.key) ?? []) this.channels.get(r)?.send({ t: 'id', key: msg.key, id: msg.id });
        this.idWaiters.delete(msg.key);
        this.idWaitSince.delete(msg.key);
        break;
      case 'id/request': {
        const id = this.ids.get(msg.key);
        if (id !== undefined) this.channels.get(rank)?.send({ t: 'id', key: msg.key, id });
        else {
          this.idWaiters.set(msg.key, [...(this.idWaiters.get(msg.key) ?? []), rank]);
          const w = this.idWaitSince.get(msg.key);
          if (w) w.ranks.push(rank);
          else this.idWaitSince.set(msg.key, { ranks: [rank], since: Date.now() });
        }
        break;
      }
      case 'iteration':
        this.onIteration(msg);
        break;
      case 'error': {
        // Only this session's experiments name where it failed (the run goes on with the next one).
        const experiment = this.work.some((w) => w.experiment === msg.experiment) ? (msg.experiment as ExperimentId) : undefined;
        this.fail({
          code: RANK_ERROR_CODES.has(msg.code) ? msg.code : 'INTERNAL',
          message: `${msg.message.slice(0, 4000)}${msg.experiment ? ` (${msg.experiment.slice(0, 100)} ${msg.variant?.slice(0, 100) ?? ''} iteration ${msg.iteration ?? '?'})` : ''}`,
          detail: msg.detail,
          hint: msg.code === 'NCCL_ERROR' ? 'run again with NCCL_DEBUG=WARN to see NCCL\'s own message in the log' : undefined,
          where: { rank, experiment, variant: msg.variant, iteration: msg.iteration, step: msg.op },
        });
        break;
      }
      case 'finished':
        this.libraryMs.set(rank, msg.libraryMs);
        if (msg.timedMs !== undefined) this.timedMs.set(rank, msg.timedMs);
        this.finished.add(rank);
        if (this.finished.size === this.ranks && !this.ended) {
          this.ended = true;
          this.settle({});
        }
        break;
      case 'hello':
        break;
    }
  }

  private onIteration(report: IterationReport): void {
    // Only this run's variants, and one report per rank and iteration, count.
    if (!this.records.has(`${report.experiment}|${report.variant}`)) return this.log(`rank ${report.rank} reported an iteration of an unknown variant: ignored`);
    const key = `${report.experiment}|${report.variant}|${report.iteration}`;
    if (this.pending.get(key)?.some((r) => r.rank === report.rank)) return this.log(`rank ${report.rank} reported ${key} twice: ignored`);
    const got = [...(this.pending.get(key) ?? []), report];
    if (got.length < this.ranks) {
      this.pending.set(key, got);
      return;
    }
    this.pending.delete(key);
    for (const r of got) {
      this.libraryMs.set(r.rank, r.libraryMs);
      if (r.timedMs !== undefined) this.timedMs.set(r.rank, r.timedMs);
    }
    const record = this.records.get(`${report.experiment}|${report.variant}`);
    if (!record) return;
    const byRank = [...got].sort((a, b) => a.rank - b.rank);
    const steps: Record<string, number> = {};
    const perRank: Record<string, (number | null)[]> = {};
    let skewUs = 0;
    const stepSkewUs: Record<string, number> = {};
    for (const plan of record.plan.steps) {
      if (plan.sumOf) continue;
      // The MAX over the ranks that took part (a shrink's excluded rank does not).
      const row = byRank.map((r) => r.steps[plan.step] ?? null);
      const values = row.filter((v): v is number => v !== null);
      if (values.length === 0) continue;
      perRank[plan.step] = row;
      steps[plan.step] = combineRanks(values);
      const releases = byRank.map((r) => r.releaseNs[plan.step]).filter((v): v is number => v !== undefined);
      if (releases.length > 1) {
        stepSkewUs[plan.step] = (Math.max(...releases) - Math.min(...releases)) / 1000;
        skewUs = Math.max(skewUs, stepSkewUs[plan.step]!);
      }
    }
    for (const plan of record.plan.steps) {
      if (!plan.sumOf) continue;
      const parts = plan.sumOf.map((s) => steps[s]);
      if (parts.every((v) => v !== undefined)) steps[plan.step] = parts.reduce((a, b) => a! + b!, 0)!;
    }
    // Per rank in rank order (0 where a rank has no such point, e.g. the rank a shrink excludes);
    // the summary takes the MAX over the ranks that did report the point.
    const memoryBytes: Record<string, number[]> = {};
    const reported: Record<string, number[]> = {};
    for (const point of new Set(byRank.flatMap((r) => Object.keys(r.memory ?? {})))) {
      memoryBytes[point] = byRank.map((r) => r.memory?.[point] ?? 0);
      reported[point] = byRank.flatMap((r) => (r.memory?.[point] === undefined ? [] : [r.memory[point]!]));
    }
    // NCCL's view (plans with ncclInitView): a creation counts when every rank read its line.
    const ncclInit = record.nccl ? combineRanksViews(byRank.map((r) => r.ncclInit?.views)) : undefined;
    if (record.nccl && ncclInit && !report.warmup) addIteration(record.nccl, ncclInit, byRank.reduce((n, r) => n + (r.ncclInit?.malformedLines ?? 0), 0));
    const extras = combineExtras(byRank); // ncclCommMemStats (MAX over ranks) and per-rank counts
    const sample: SampleEvent = {
      type: 'run/sample',
      experiment: report.experiment as ExperimentId,
      variant: report.variant,
      iteration: report.iteration,
      warmup: report.warmup,
      steps,
      perRank,
      memoryBytes,
      releaseSkewUs: skewUs,
      stepSkewUs,
      ...(ncclInit && Object.keys(ncclInit).length > 0 ? { ncclInit } : {}),
      ...extras,
    };
    this.emit(sample);
    const total = this.options.warmup + this.options.iterations;
    const experimentIndex = this.plan.findIndex((w) => w.experiment === report.experiment);
    this.emit({
      type: 'run/progress',
      experiment: report.experiment as ExperimentId,
      variant: report.variant,
      iteration: report.iteration,
      total,
      warmup: report.warmup,
      experimentIndex,
      experimentCount: this.plan.length,
    });
    if (!report.warmup) {
      for (const [s, v] of Object.entries(steps)) (record.samples[s] ??= []).push(v);
      for (const [p, v] of Object.entries(reported)) (record.memory[p] ??= []).push(Math.max(...v));
      record.extras = addExtras(record.extras, extras);
    }
    record.done++;
    this.onCombined(report.experiment as ExperimentId);
  }

  /** The hang guard (hangGuard.ts): every wait older than the deadline ends the session. */
  private checkDeadlines(): void {
    if (this.ended) return;
    // Over several nodes, a silent node explains a hang better than its ranks do.
    const silentNodes = (this.cluster?.server.silentNodes(2 * 1000) ?? []).map(({ node, silentMs }) => {
      const n = this.cluster!.nodes[this.cluster!.hostOf[node]!]!;
      return `node ${node} (${n.hostname} at ${n.address}, ranks ${n.ranks.join(', ')}) has not been heard from for ${(silentMs / 1000).toFixed(1)} s: its link may be cut`;
    });
    const hang = findHang({
      now: Date.now(),
      ranks: this.ranks,
      deadlineMs: this.deadlineMs,
      ready: this.ready,
      readyDeadline: this.readyDeadline,
      current: this.current,
      lastDone: this.lastDone,
      lastBegin: this.lastBegin,
      finished: this.finished,
      idWaits: this.idWaitSince,
      lastHeard: this.lastHeard,
      silentNodes,
    });
    if (hang) this.fail({ code: 'TIMEOUT', ...hang, where: { ...hang.where, experiment: hang.where.experiment as ExperimentId | undefined } });
  }

  /** Stops every rank process: abort what can be aborted, then kill. Waits until all are gone. */
  private async shutdown(abort: boolean): Promise<void> {
    if (this.watchdog) clearInterval(this.watchdog);
    for (const ch of this.channels.values()) ch.send(abort ? { t: 'abort' } : { t: 'exit' });
    const grace = abort ? 1500 : 5000;
    const timer = setTimeout(() => {
      for (const c of this.children) c.kill();
    }, grace);
    // A rank on a node whose link is cut never reports its exit: the node counts as lost after
    // NODE_SILENCE_MS (and kills its ranks itself); never wait longer than that.
    let waited: NodeJS.Timeout | undefined;
    const settled = await Promise.race([
      Promise.all(this.children.map((c) => c.done)).then(() => true),
      new Promise<false>((r) => (waited = setTimeout(() => r(false), grace + NODE_SILENCE_MS + 5000))),
    ]);
    clearTimeout(waited);
    if (!settled) this.log(`ranks ${this.children.map((c, r) => (c.exited ? -1 : r)).filter((r) => r >= 0).join(', ')} did not report their exit: their node is unreachable`);
    clearTimeout(timer);
    this.shmRelease?.unlink();
    this.barrier.close();
    this.control.close();
  }
}

export { isNativeError };
