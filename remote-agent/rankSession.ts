/**
 * A rank session: one set of fresh rank processes (one per rank, on this host or on the nodes
 * of a multi-node run) with its control server (hello with the session's secret, the unique-id
 * hand-out, iteration reports) and its barrier server. It combines each iteration across ranks
 * (rankCombine.ts), runs the hang guard every 100 ms, and stops and reaps every process it
 * started, whatever way it ends.
 *
 * Invariants: every rank process is owned by the session and killed when it ends; nothing is
 * counted from a connection before its hello proves the session's secret; a rank speaks only
 * for itself.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import * as net from 'node:net';
import type { ExperimentId } from '../protocol/events';
import { rankMessageProblem } from '../protocol/agentWire';
import { BarrierServer, ShmRelease } from './barrierServer';
import type { ClusterPlacement } from './clusterPlacement';
import { RANK_METHOD_ENV } from './environment';
import { findHang, type OpInFlight } from './hangGuard';
import { LineChannel, MAX_LINE_CHARS, PRE_AUTH_LINE_CHARS } from './lineChannel';
import { ListenerGuard } from './listenerGuard';
import type { LoadInfo } from './nativeBinding';
import { NODE_SILENCE_MS, startLocalRank, type RankHandle } from './nodes';
import { combineIteration, recordIteration } from './rankCombine';
import type { CoordinatorToRank, IterationReport, RankToCoordinator, RankWork } from './rankWire';
import type { NormalizedOptions } from './runSetup';
import type { Emit, Log, PlannedExperiment, SessionFailure, VariantRecord } from './sessionPlan';

/** The codes a rank may report an error with; any other is reported as INTERNAL. */
const RANK_ERROR_CODES = new Set<string>(['NO_GPU', 'NCCL_NOT_FOUND', 'LOAD_FAILED', 'NCCL_ERROR', 'CUDA_ERROR', 'TIMEOUT', 'RANK_EXITED', 'BAD_COMMAND', 'INTERNAL']);

/** True when `a` is the session secret `b` (constant time). */
function sameSecret(a: string, b: string): boolean {
  return a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

/** One set of rank processes with their control and barrier servers. */
export class RankSession {
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
    private readonly options: NormalizedOptions,
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
    // Each spawn is handed to a spawn thread (rankSpawner.ts; on other nodes, their node host):
    // the ranks start together and this loop does not wait for any fork or exec. processStartMs
    // runs from here until every rank is ready.
    for (let r = 0; r < this.ranks; r++) this.spawnRank(r, controlPort);
    this.log(`spawned ${this.ranks} rank process${this.ranks === 1 ? '' : 'es'} in ${(performance.now() - this.spawnedAt).toFixed(1)} ms (event loop time in the spawn calls)`);
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
        // Between two operations the rank was still inside the experiment it last began (or, before
        // its own first, the one the other ranks are in): the failure is that experiment's, so the
        // experiments after it run in fresh processes. Never charged to the session's last one.
        const within = op ?? this.lastBegin.get(rank) ?? [...this.current.values()][0] ?? [...this.lastBegin.values()][0];
        const lost = signal === 'NODE_LOST';
        this.fail({
          code: lost ? 'NODE_LOST' : 'RANK_EXITED',
          message: lost ? `rank ${rank}${where} is gone with its node${op ? ` during ${op.op}` : ''}` : `rank ${rank}${where} exited (${signal ?? `code ${code}`})${op ? ` during ${op.op}` : ''}`,
          hint: lost ? 'the node\'s agent or its connection ended' : 'see the log for the rank\'s last lines',
          where: { rank, ...(op ? { experiment: op.experiment as ExperimentId, variant: op.variant, iteration: op.iteration, step: op.step ?? op.op } : within ? { experiment: within.experiment as ExperimentId, variant: within.variant, iteration: within.iteration } : {}) },
        });
      },
    };
    this.children.push(place ? this.cluster!.server.spawn(place.node, rank, env, callbacks) : startLocalRank(env, callbacks));
  }

  private accept(socket: net.Socket, barrierPort: number): void {
    // Before its hello a connection may hold PRE_AUTH_LINE_CHARS, for HELLO_MS, and only so many
    // connections at once (listenerGuard.ts): a peer without the secret cannot fill memory.
    this.controlGuard.admit(socket);
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
    const combined = combineIteration(record, report, got);
    this.emit(combined.sample);
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
    recordIteration(record, combined);
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
      simulated: this.info.simulated,
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
