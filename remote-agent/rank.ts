/**
 * Rank mode: one process per GPU, forked by the coordinator. It drives the native addon
 * through the experiment bodies (SPMD: every rank runs the same sequence), and reports each
 * iteration's per-step durations to the coordinator, which combines them across ranks.
 *
 * Invariants: this process never writes protocol lines (its stdout is forwarded to the
 * coordinator's stderr); it exits when the control connection closes, so no rank outlives
 * its coordinator.
 */
import * as net from 'node:net';
import { DEFAULT_RUN_OPTIONS, type MemStatsBytes, type RunOptions } from '../protocol/events';
import { CATALOGUE } from './experiments/catalogue';
import type { ProcessStart, RankContext } from './experiments/experiment';
import type { NcclInitParts } from '../protocol/events';
import { LineChannel } from './lineChannel';
import { describeNativeError, isNativeError, loadBinding, type NativeBinding, type Timed } from './nativeBinding';
import type { CoordinatorToRank, IterationReport, RankToCoordinator, RankWork } from './rankWire';

/** Identity of this rank, from the coordinator's environment. */
export interface RankIdentity {
  rank: number;
  worldSize: number;
  /** Device ordinal on this host. */
  localRank: number;
  coordinatorHost: string;
  coordinatorPort: number;
}

/** Reads the rank identity from COMMCOST_* variables. @throws Error when one is missing. */
export function rankIdentityFromEnv(env: NodeJS.ProcessEnv): RankIdentity {
  const need = (name: string): string => {
    const v = env[name];
    if (v === undefined || v === '') throw new Error(`rank mode needs ${name} in the environment`);
    return v;
  };
  const [host, port] = need('COMMCOST_COORDINATOR').split(/:(?=\d+$)/);
  return {
    rank: Number(need('COMMCOST_RANK')),
    worldSize: Number(need('COMMCOST_WORLD_SIZE')),
    localRank: Number(need('COMMCOST_LOCAL_RANK')),
    coordinatorHost: host ?? '127.0.0.1',
    coordinatorPort: Number(port),
  };
}

class RankRunner implements RankContext {
  readonly native: NativeBinding;
  options!: RankContext['options'];
  nodeOfRank?: number[];
  private gen = 0;
  private idKey = 0;
  private readonly idWaiters = new Map<number, (id: Buffer) => void>();
  private current: IterationReport | undefined;
  private memBaseline = 0;
  /** Every library call's duration so far, timed and untimed (harness-efficiency denominator), ms. */
  libraryMs = 0;
  /** Total of the timed calls' durations (warmups included), ms: the part of libraryMs inside timed spans. */
  timedMs = 0;
  private where: { experiment: string; variant: string; iteration: number } = { experiment: '', variant: '', iteration: -1 };
  /** Iterations this process has started, of any experiment (processStart.iterationsBefore). */
  private iterationsStarted = 0;
  /** Set by runRank once the process has loaded NCCL, started CUDA and (rank 0) made its first unique id. */
  startFigures: Omit<ProcessStart, 'iterationsBefore'> | undefined;

  constructor(
    readonly id: RankIdentity,
    private readonly channel: LineChannel<RankToCoordinator, CoordinatorToRank>,
  ) {
    this.native = loadBinding();
  }

  get rank(): number {
    return this.id.rank;
  }
  get worldSize(): number {
    return this.id.worldSize;
  }

  onId(key: number, id: string): void {
    this.idWaiters.get(key)?.(Buffer.from(id, 'base64'));
    this.idWaiters.delete(key);
  }

  uniqueId(): Promise<Buffer> {
    return this.sharedId(async () => (await this.untimed('ncclGetUniqueId', () => this.native.getUniqueId())).id);
  }

  async sharedId(produce: () => Promise<Buffer>, producer = 0): Promise<Buffer> {
    const key = ++this.idKey;
    if (this.rank === producer) {
      const id = await produce();
      this.channel.send({ t: 'id/publish', key, id: id.toString('base64') });
      return id;
    }
    const waiting = new Promise<Buffer>((resolve) => this.idWaiters.set(key, resolve));
    this.channel.send({ t: 'id/request', key });
    return waiting;
  }

  async timed<T extends Timed>(step: string, label: string, fn: (gen: number) => Promise<T>): Promise<T> {
    const gen = ++this.gen;
    this.channel.send({ t: 'begin', op: label, step, ...this.where });
    const result = await fn(gen);
    this.libraryMs += result.ms;
    this.timedMs += result.ms;
    this.channel.send({ t: 'end', op: label });
    if (this.current) {
      this.current.steps[step] = result.ms;
      if (result.releaseNs !== undefined) this.current.releaseNs[step] = result.releaseNs;
    }
    return result;
  }

  async sitOut(step: string): Promise<void> {
    const gen = ++this.gen;
    // Named as a hang message reads it: "rank 1 never reached X: it last finished the barrier of
    // step release of variant abort/destroy/excluded-exits, which it sits out".
    const op = `the barrier of step ${step} of variant ${this.where.variant}, which it sits out`;
    this.channel.send({ t: 'begin', op, step, ...this.where });
    await this.native.barrierWait(gen);
    this.channel.send({ t: 'end', op });
  }

  async untimed<T>(label: string, fn: () => Promise<T>): Promise<T> {
    this.channel.send({ t: 'begin', op: label, ...this.where });
    const result = await fn();
    const ms = (result as Partial<Timed> | undefined)?.ms;
    if (typeof ms === 'number') this.libraryMs += ms;
    this.channel.send({ t: 'end', op: label });
    return result;
  }

  get nextGeneration(): number {
    return this.gen + 1;
  }

  advanceGenerations(lastUsed: number): void {
    if (lastUsed < this.gen) throw new Error(`barrier generation went back from ${this.gen} to ${lastUsed}`);
    this.gen = lastUsed;
  }

  beginExternal(op: string): void {
    this.channel.send({ t: 'begin', op, ...this.where });
  }

  endExternal(op: string): void {
    this.channel.send({ t: 'end', op });
  }

  barrierAddress = '';

  get sessionId(): string {
    return `${this.id.coordinatorHost}-${this.id.coordinatorPort}`;
  }

  recordMemory(point: string, bytes: number): void {
    if (this.current) this.current.memory[point] = bytes;
  }

  markBaseline(): void {
    this.memBaseline = this.native.memInfo().freeBytes;
  }

  record(step: string, ms: number): void {
    if (this.current) this.current.steps[step] = ms;
  }

  markMemory(point: string, comms?: readonly number[]): void {
    if (this.current) this.current.memory[point] = this.memBaseline - this.native.memInfo().freeBytes;
    // NCCL's own account beside the free-memory delta, where the library has ncclCommMemStats.
    if (!this.current || !comms || comms.length === 0) return;
    let sum: MemStatsBytes | undefined;
    for (const comm of comms) {
      const m = this.native.commMemStats(comm);
      if (!m) return; // not in this NCCL: nothing recorded (the run says why: memStatsNote)
      sum ??= { suspendableBytes: 0, persistentBytes: 0, totalBytes: 0 };
      sum.suspendableBytes += m.suspendableBytes ?? 0;
      sum.persistentBytes += m.persistentBytes ?? 0;
      sum.totalBytes += m.totalBytes ?? 0;
    }
    if (sum) (this.current.memStats ??= {})[point] = sum;
  }

  count(name: string, value: number): void {
    if (this.current) (this.current.counts ??= {})[name] = value;
  }

  get processStart(): ProcessStart | undefined {
    if (!this.startFigures) return undefined;
    return { ...this.startFigures, iterationsBefore: Math.max(0, this.iterationsStarted - 1) };
  }

  recordNcclInit(views: NcclInitParts, malformedLines: number): void {
    if (this.current) this.current.ncclInit = { views, malformedLines };
  }

  /** Runs the planned work; reports every iteration; returns when all is done. */
  async run(work: RankWork[]): Promise<void> {
    const { warmup, iterations } = this.options;
    for (const { experiment, variants, iteration } of work) {
      const module = CATALOGUE[experiment as keyof typeof CATALOGUE];
      if (!module) throw new Error(`unknown experiment ${experiment}`);
      // A process set of its own per iteration (processPerIteration): only that iteration here.
      if (iteration !== undefined && !(Number.isInteger(iteration) && iteration >= 0 && iteration < warmup + iterations)) {
        throw new Error(`iteration ${iteration} of ${experiment} is outside 0..${warmup + iterations - 1}`);
      }
      const [from, to] = iteration === undefined ? [0, warmup + iterations] : [iteration, iteration + 1];
      for (const variant of variants) {
        this.where = { experiment, variant, iteration: -1 };
        const state: unknown = module.setup ? await module.setup(this, variant) : undefined;
        for (let i = from; i < to; i++) {
          this.iterationsStarted++;
          this.where = { experiment, variant, iteration: i };
          this.current = { t: 'iteration', rank: this.rank, experiment, variant, iteration: i, warmup: i < warmup, steps: {}, releaseNs: {}, memory: {}, libraryMs: 0 };
          this.memBaseline = this.native.memInfo().freeBytes;
          await module.iteration(this, variant, state);
          this.current.libraryMs = this.libraryMs;
          this.current.timedMs = this.timedMs;
          this.channel.send(this.current);
          this.current = undefined;
        }
        this.where = { experiment, variant, iteration: warmup + iterations };
        if (module.teardown) await module.teardown(this, variant, state);
      }
    }
  }

  errorMessage(e: unknown): RankToCoordinator {
    const native = isNativeError(e);
    return {
      t: 'error',
      code: native ? (e.code === 'CUDA' ? 'CUDA_ERROR' : e.code === 'NCCL' ? 'NCCL_ERROR' : 'INTERNAL') : 'INTERNAL',
      message: native ? `${e.call} failed on rank ${this.rank}` : e instanceof Error ? e.message : String(e),
      detail: describeNativeError(e) + (native ? ` (${e.where})` : ''),
      ...this.where,
    };
  }
}

/**
 * Ends this rank process at once (SIGKILL to itself). process.exit() is not enough here: at exit
 * Node joins its worker threads, so a library call that never returns (a hung NCCL call, a
 * rendezvous whose peer is gone) would keep the process alive forever, orphaned when the
 * coordinator is gone. Used only when the rank's run is over (abort, coordinator gone).
 */
function exitNow(): void {
  process.kill(process.pid, 'SIGKILL');
}

/**
 * Entry of rank mode. Connects the control channel, loads NCCL, starts CUDA, then runs what
 * the coordinator asks. Exits the process when done or when the coordinator goes away.
 */
export async function runRank(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const id = rankIdentityFromEnv(env);
  const socket = net.connect({ host: id.coordinatorHost, port: id.coordinatorPort });
  socket.setNoDelay(true);
  const channel = new LineChannel<RankToCoordinator, CoordinatorToRank>(socket);
  // No rank outlives its coordinator: a closed control channel ends the process at once.
  socket.on('close', () => exitNow());
  socket.on('error', () => exitNow());
  channel.send({ t: 'hello', rank: id.rank, pid: process.pid, token: env.COMMCOST_SESSION_TOKEN ?? '' });

  let runner: RankRunner | undefined;
  channel.onMessage((msg) => {
    switch (msg.t) {
      case 'start':
        void start(msg);
        break;
      case 'id':
        runner?.onId(msg.key, msg.id);
        break;
      case 'abort': {
        // Hang guard or cancel: abort every live communicator from this (free) JS thread, then go.
        try {
          runner?.native.abortAll();
        } finally {
          exitNow();
        }
        break;
      }
      case 'exit':
        process.exit(0);
    }
  });

  async function start(msg: Extract<CoordinatorToRank, { t: 'start' }>): Promise<void> {
    try {
      runner = new RankRunner(id, channel);
      runner.options = { ...DEFAULT_RUN_OPTIONS, ...msg.options } as RankContext['options'];
      if (msg.nodeOfRank) runner.nodeOfRank = msg.nodeOfRank;
      // Experiments that prepare the process before NCCL loads (cold-start: NCCL's log file).
      for (const w of msg.work) CATALOGUE[w.experiment as keyof typeof CATALOGUE]?.beforeLoad?.();
      const loaded = runner.native.load({ ncclPath: msg.ncclPath, cudaPath: msg.cudaPath });
      const bufferBytes = Math.max(runner.options.firstCollectiveBytes, runner.options.steadyBytes);
      const cuda = await runner.native.initDevice(id.localRank, bufferBytes);
      runner.native.barrierConnect(msg.barrierHost, msg.barrierPort, id.rank, env.COMMCOST_SESSION_TOKEN ?? '');
      runner.barrierAddress = `${msg.barrierHost}:${msg.barrierPort}`;
      // Every rank on one host: the release comes through shared memory (remote-agent/barrierServer.ts).
      if (env.COMMCOST_BARRIER_SHM) {
        const spinUs = runner.native.barrierAttachShm(env.COMMCOST_BARRIER_SHM, id.worldSize);
        if (id.rank === 0) process.stderr.write(`barrier: one-host release through shared memory (spin up to ${spinUs} µs, then FUTEX_WAIT)\n`);
      }
      // Process one-time NCCL start (bootstrap, plugins): measured once, never mixed in.
      let firstUniqueIdMs: number | undefined;
      if (id.rank === 0) firstUniqueIdMs = (await runner.native.getUniqueId()).ms;
      runner.startFigures = {
        ...(loaded.ncclLoadMs !== undefined ? { ncclLoadMs: loaded.ncclLoadMs } : {}),
        ...(cuda.cuInitMs !== undefined && cuda.contextMs !== undefined ? { cudaContextMs: cuda.cuInitMs + cuda.contextMs } : {}),
        ...(firstUniqueIdMs !== undefined ? { firstUniqueIdMs } : {}),
      };
      channel.send({ t: 'ready', rank: id.rank, cudaInitMs: cuda.ms, firstUniqueIdMs });
      await runner.run(msg.work);
      channel.send({ t: 'finished', libraryMs: runner.libraryMs, timedMs: runner.timedMs });
    } catch (e) {
      channel.send(runner ? runner.errorMessage(e) : { t: 'error', code: 'LOAD_FAILED', message: String(e) });
    }
  }
}

export type { RunOptions };
