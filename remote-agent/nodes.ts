/**
 * Runs over several nodes: other hosts' agents (SSH) or the processes an external launcher
 * started (srun, mpirun, torchrun). The coordinator listens with a {@link NodeServer}; every
 * node runs {@link runNodeHost}, which connects, says what it holds, and starts the rank
 * processes placed on it when the coordinator asks, so each rank session still gets fresh
 * processes (a variant's NCCL_* environment is read once per process).
 *
 * Invariants: a node never outlives its coordinator (a closed connection kills its rank
 * processes and ends it); a node that does not present the run's token is refused; the rank
 * processes of a node are killed with SIGKILL (a hung NCCL call ignores anything gentler).
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import * as net from 'node:net';
import * as os from 'node:os';
import { rankProcessEnv } from './environment';
import { LineChannel, MAX_LINE_CHARS, PRE_AUTH_LINE_CHARS } from './lineChannel';
import { ListenerGuard } from './listenerGuard';
import { spawnRankProcess, warmSpawnThreads } from './rankSpawner';
import { coordinatorToNodeProblem, nodeMessageProblem } from '../protocol/agentWire';
import type { CoordinatorToNode, NodeToCoordinator } from './rankWire';

type Log = (line: string) => void;

/**
 * Either side of a node connection that hears nothing from the other for this long takes the
 * link as cut: the node kills its ranks and ends, the coordinator counts the node lost. A cut
 * link sends no reset, so without this a node would keep its ranks until TCP gives up
 * (minutes). Override with COMMCOST_NODE_SILENCE_MS. ms.
 */
export const NODE_SILENCE_MS = Number(process.env.COMMCOST_NODE_SILENCE_MS) > 0 ? Number(process.env.COMMCOST_NODE_SILENCE_MS) : 10_000;
const PING_MS = 1_000;

/** A rank process as the rank session sees it, wherever it runs. */
export interface RankHandle {
  /** Ends it now (SIGKILL). Safe to call again or after it ended. */
  kill(): void;
  /** True once it has exited. */
  readonly exited: boolean;
  /** Resolves when it has exited. */
  readonly done: Promise<void>;
}

export interface RankCallbacks {
  onLine(line: string): void;
  onExit(code: number | null, signal: string | null): void;
}

/** HMAC-SHA256 of `role|nonce` under the run's token: each side proves it knows the token without sending it. */
export function tokenProof(token: string, role: 'node' | 'coordinator', nonce: string): string {
  return createHmac('sha256', token).update(`${role}|${nonce}`).digest('hex');
}

function sameProof(a: unknown, b: string): boolean {
  return typeof a === 'string' && a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
}

/** The only variables a coordinator may add to a rank process's environment (no NODE_OPTIONS, PATH, LD_PRELOAD, …). */
export const SPAWN_ENV_ALLOWED = /^(COMMCOST_[A-Z0-9_]+|NCCL_[A-Z0-9_]+|TORCH_NCCL_[A-Z0-9_]+|UV_THREADPOOL_SIZE|MALLOC_ARENA_MAX)$/;

/** What is wrong with a node's hello, or undefined: every field typed as the wire says. */
export function helloProblem(h: Record<string, unknown>): string | undefined {
  const isInt = (x: unknown): boolean => Number.isInteger(x) && (x as number) >= 0;
  const strs = (x: unknown): boolean => Array.isArray(x) && x.every((v) => typeof v === 'string' && v.length <= 200);
  if (typeof h.nonce !== 'string' || h.nonce.length < 16 || h.nonce.length > 128) return 'no nonce';
  if (typeof h.hostname !== 'string' || h.hostname.length === 0 || h.hostname.length > 255) return 'no hostname';
  if (!isInt(h.slots) || (h.slots as number) < 1 || (h.slots as number) > 256) return '"slots" must be 1–256';
  if (!Array.isArray(h.devices) || h.devices.length !== h.slots || !h.devices.every(isInt)) return '"devices" must list one ordinal per slot';
  if (!strs(h.gpus) || (h.gpus as string[]).length !== h.slots) return '"gpus" must name one GPU per slot';
  if (typeof h.ncclVersion !== 'string' || typeof h.simulated !== 'boolean') return '"ncclVersion" and "simulated" are required';
  if (h.fixedRank !== undefined && !isInt(h.fixedRank)) return '"fixedRank" must be a whole number';
  if (h.worldSize !== undefined && (!isInt(h.worldSize) || (h.worldSize as number) < 1)) return '"worldSize" must be a whole number ≥ 1';
  if (h.index !== undefined && !isInt(h.index)) return '"index" must be a whole number';
  return undefined;
}

/** The agent script to start rank processes with (this bundle), or COMMCOST_AGENT_SCRIPT. */
export function agentScript(): string {
  return process.env.COMMCOST_AGENT_SCRIPT || require.main?.filename || process.argv[1]!;
}

/**
 * Starts `node agent.js rank` on this host with `env` added to this process's environment,
 * without blocking the event loop: the spawn runs on a spawn thread (rankSpawner.ts), so the
 * ranks of a session start at once, not one after another.
 * Its stdout and stderr lines go to `cb.onLine`; its exit to `cb.onExit` (code 127 when the
 * process could not be started at all).
 * @returns its handle at once, before the process exists
 */
export function startLocalRank(env: Record<string, string>, cb: RankCallbacks): RankHandle {
  return spawnRankProcess(process.execPath, [agentScript(), 'rank'], rankProcessEnv(process.env, env), cb);
}

/** Strips the IPv4-mapped prefix Node gives dual-stack sockets (`::ffff:10.0.0.2` → `10.0.0.2`). */
export function plainAddress(address: string | undefined): string {
  return (address ?? '').replace(/^::ffff:/, '');
}

const isLoopback = (a: string): boolean => a === '127.0.0.1' || a === '::1' || a.startsWith('127.');

/** This host's IPv4 addresses, non-loopback first: what other hosts may reach it by. */
export function hostAddresses(): string[] {
  const found: string[] = [];
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) found.push(a.address);
  }
  return [...found, os.hostname()];
}

/** One node that joined the run. */
export interface JoinedNode {
  hello: Extract<NodeToCoordinator, { t: 'node/hello' }>;
  /** The node's address as the coordinator sees it. */
  address: string;
  /** The coordinator's address as this node reaches it (its ranks connect there). */
  coordinatorAddress: string;
  channel: LineChannel<CoordinatorToNode, NodeToCoordinator>;
  socket: net.Socket;
}

/** Where one rank runs. */
export interface RankPlace {
  rank: number;
  node: number;
  /** Device ordinal on that node. */
  device: number;
}

/**
 * Places ranks on nodes. Launched processes (`fixedRank`) must cover 0 … worldSize-1 exactly
 * once, one slot each; SSH nodes are taken in `index` order, ranks numbered consecutively.
 * @returns one place per rank, in rank order.
 * @throws Error naming the missing or duplicated rank.
 */
export function placeRanks(nodes: Pick<JoinedNode, 'hello'>[]): RankPlace[] {
  const fixed = nodes.some((n) => n.hello.fixedRank !== undefined);
  const places: RankPlace[] = [];
  if (fixed) {
    nodes.forEach((n, node) => {
      if (n.hello.fixedRank === undefined) throw new Error(`node ${n.hello.hostname} has no rank, but the others were started by a launcher`);
      places.push({ rank: n.hello.fixedRank, node, device: n.hello.devices[0] ?? 0 });
    });
    places.sort((a, b) => a.rank - b.rank);
    places.forEach((p, i) => {
      if (p.rank !== i) throw new Error(p.rank < i ? `rank ${p.rank} joined twice` : `rank ${i} never joined`);
    });
    return places;
  }
  const order = nodes.map((n, node) => ({ n, node })).sort((a, b) => (a.n.hello.index ?? 0) - (b.n.hello.index ?? 0));
  for (const { n, node } of order) for (const device of n.hello.devices) places.push({ rank: places.length, node, device });
  return places;
}

export interface NodeServerOptions {
  /** Nodes to wait for (the coordinator's own node included). */
  expected: number;
  token: string;
  /** Port to listen on (0 = any). */
  port: number;
  /** Address to bind: every interface by default (other hosts must reach it). */
  bindAddress?: string;
  log: Log;
}

/** The coordinator's side: accepts node hosts until `expected` have joined. */
export class NodeServer {
  private readonly server = net.createServer((s) => this.accept(s));
  private readonly guard: ListenerGuard;
  readonly nodes: JoinedNode[] = [];
  private readonly waiters: (() => void)[] = [];
  private readonly exitHandlers = new Map<string, RankCallbacks>();
  private lostHandler: ((node: JoinedNode) => void) | undefined;
  private closed = false;
  /** A reason the run can never get its nodes (a mismatched world size): waiting stops at once. */
  private fatal: string | undefined;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly lastHeard = new Map<JoinedNode, number>();

  constructor(private readonly opts: NodeServerOptions) {
    this.guard = new ListenerGuard('node server', opts.expected, opts.log);
    this.heartbeat = setInterval(() => {
      const now = Date.now();
      for (const n of this.nodes) {
        n.channel.send({ t: 'node/ping' });
        if (now - (this.lastHeard.get(n) ?? now) > NODE_SILENCE_MS && !n.socket.destroyed) {
          this.opts.log(`node ${n.hello.hostname} (${n.address}) silent for ${NODE_SILENCE_MS / 1000} s: taken as lost`);
          n.socket.destroy();
        }
      }
    }, PING_MS);
    this.heartbeat.unref();
  }

  /** Starts listening. @returns the port. @throws Error when the port is taken. */
  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.opts.port, this.opts.bindAddress ?? '0.0.0.0', () => {
        this.server.off('error', reject);
        resolve();
      });
    });
    return (this.server.address() as net.AddressInfo).port;
  }

  /**
   * Waits until every expected node has joined.
   * @throws Error listing who joined, when `deadlineMs` passes first or `signal` aborts.
   */
  async waitForNodes(deadlineMs: number, isCancelled: () => boolean): Promise<JoinedNode[]> {
    const until = Date.now() + deadlineMs;
    while (this.nodes.length < this.opts.expected) {
      if (isCancelled()) throw new Error('cancelled while waiting for the other nodes');
      if (this.fatal) throw new Error(this.fatal);
      const left = until - Date.now();
      if (left <= 0) {
        const joined = this.nodes.map((n) => `${n.hello.hostname} (${n.address}${n.hello.fixedRank !== undefined ? `, rank ${n.hello.fixedRank}` : ''})`);
        throw new Error(`${this.nodes.length} of ${this.opts.expected} nodes joined within ${Math.round(deadlineMs / 1000)} s${joined.length ? `: ${joined.join(', ')}` : ''}`);
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    // Node order is rank order (launched) or host order (SSH), whatever order they joined in.
    this.nodes.sort((a, b) => (a.hello.fixedRank ?? a.hello.index ?? 0) - (b.hello.fixedRank ?? b.hello.index ?? 0));
    return this.nodes;
  }

  /** Nodes not heard from (heartbeat) for more than `ms`, with how long, ms. */
  silentNodes(ms: number): { node: number; silentMs: number }[] {
    const now = Date.now();
    return this.nodes.map((n, node) => ({ node, silentMs: now - (this.lastHeard.get(n) ?? now) })).filter((x) => x.silentMs > ms);
  }

  /** Called when a node's connection closes before the run ends. */
  onLost(handler: (node: JoinedNode) => void): void {
    this.lostHandler = handler;
  }

  /** Asks node `node` to start rank `rank` with `env`. */
  spawn(node: number, rank: number, env: Record<string, string>, cb: RankCallbacks): RankHandle {
    const n = this.nodes[node]!;
    let exited = false;
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    this.exitHandlers.set(`${node}|${rank}`, {
      onLine: cb.onLine,
      onExit: (code, signal) => {
        if (exited) return;
        exited = true;
        cb.onExit(code, signal);
        resolveDone();
      },
    });
    if (!n.channel.send({ t: 'node/spawn', rank, env })) this.exitHandlers.get(`${node}|${rank}`)!.onExit(null, 'NODE_LOST');
    return {
      kill: () => {
        if (!exited) n.channel.send({ t: 'node/kill', rank });
      },
      get exited() {
        return exited;
      },
      done,
    };
  }

  /** Tells every node the run is over (and how it ended) and stops listening. */
  close(status?: 'complete' | 'partial' | 'failed'): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    for (const n of this.nodes) {
      n.channel.send({ t: 'node/bye', ...(status ? { status } : {}) });
      n.socket.end();
    }
    this.server.close();
    // Ranks of a node that went away count as exited.
    for (const h of this.exitHandlers.values()) h.onExit(null, 'SIGKILL');
  }

  private accept(socket: net.Socket): void {
    // Before it has proved the token a connection may hold PRE_AUTH_LINE_CHARS, for HELLO_MS,
    // and only so many connections at once (listenerGuard.ts).
    if (!this.guard.admit(socket)) return;
    socket.setNoDelay(true);
    let joined: JoinedNode | undefined;
    let pending: { hello: Extract<NodeToCoordinator, { t: 'node/hello' }>; nonce: string } | undefined;
    const refuse = (reason: string): void => {
      this.opts.log(`refused a node from ${plainAddress(socket.remoteAddress)}: ${reason}`);
      channel.send({ t: 'node/refused', reason });
      socket.end();
    };
    const channel = new LineChannel<CoordinatorToNode, NodeToCoordinator>(
      socket,
      socket,
      (line, e) => this.opts.log(`bad line from a node at ${plainAddress(socket.remoteAddress)}: ${line.slice(0, 200)}${e instanceof Error ? ` (${e.message})` : ''}`),
      (e) => this.opts.log(`node connection ${plainAddress(socket.remoteAddress)}: ${e.message}`),
    );
    channel.limitLines(PRE_AUTH_LINE_CHARS);
    channel.onMessage((msg) => {
      // Every message's shape is checked before one field is read (`null`, `42`, `{"t":null}`).
      const malformed = nodeMessageProblem(msg);
      if (malformed) {
        if (!joined) return refuse(`malformed message: ${malformed}`);
        this.opts.log(`node ${joined.hello.hostname} sent a malformed message: ${malformed}`);
        return;
      }
      if (msg.t === 'node/hello') {
        if (joined || pending) return;
        const problem = helloProblem(msg as unknown as Record<string, unknown>);
        if (problem) return refuse(`malformed hello: ${problem}`);
        // Prove this side knows the token, and ask the node to prove it in turn.
        const nonce = randomBytes(16).toString('hex');
        pending = { hello: msg, nonce };
        channel.send({ t: 'node/challenge', proof: tokenProof(this.opts.token, 'coordinator', msg.nonce), nonce });
        return;
      }
      if (msg.t === 'node/auth') {
        if (joined || !pending) return;
        if (!sameProof(msg.proof, tokenProof(this.opts.token, 'node', pending.nonce))) return refuse('wrong token: this node is not part of the run');
        const hello = pending.hello;
        if (this.closed || this.nodes.length >= this.opts.expected) {
          channel.send({ t: 'node/refused', reason: `the run already has its ${this.opts.expected} nodes` });
          socket.end();
          return;
        }
        // A launched process must be a rank of this world, and the only one with that rank.
        const fixed = hello.fixedRank;
        const twin = fixed === undefined ? undefined : this.nodes.find((n) => n.hello.fixedRank === fixed);
        const badRank = fixed !== undefined && (!Number.isInteger(fixed) || fixed < 0 || fixed >= this.opts.expected);
        const badWorld = hello.worldSize !== undefined && hello.worldSize !== this.opts.expected;
        if (badWorld) {
          const reason = `rank ${String(fixed)} was started with a world size of ${String(hello.worldSize)}, rank 0 with ${this.opts.expected}: every process must be given the same (WORLD_SIZE / SLURM_NTASKS / OMPI_COMM_WORLD_SIZE)`;
          refuse(reason);
          // Waiting for the rest cannot help: the run cannot be formed.
          this.fatal ??= reason;
          for (const w of this.waiters.splice(0)) w();
          return;
        }
        if (badRank || twin) {
          const reason = badRank
            ? `rank ${String(fixed)} is not a rank of this run's world of ${this.opts.expected} (check WORLD_SIZE / SLURM_NTASKS / OMPI_COMM_WORLD_SIZE: every process must give the same)`
            : `rank ${String(fixed)} has already joined from ${twin!.address} (two processes were given the same rank)`;
          return refuse(reason);
        }
        joined = { hello, address: plainAddress(socket.remoteAddress), coordinatorAddress: plainAddress(socket.localAddress), channel, socket };
        this.guard.authenticated(socket);
        channel.limitLines(MAX_LINE_CHARS);
        this.nodes.push(joined);
        this.lastHeard.set(joined, Date.now());
        this.opts.log(`node ${this.nodes.length - 1}: ${hello.hostname} at ${joined.address}, ${hello.slots} rank(s)${hello.fixedRank !== undefined ? ` (rank ${hello.fixedRank})` : ''}`);
        channel.send({ t: 'node/welcome' });
        for (const w of this.waiters.splice(0)) w();
        return;
      }
      if (!joined) return;
      this.lastHeard.set(joined, Date.now());
      if (msg.t === 'node/pong') return;
      const index = this.nodes.indexOf(joined);
      const handler = this.exitHandlers.get(`${index}|${msg.rank}`);
      if (msg.t === 'node/log') handler?.onLine(msg.line);
      else if (msg.t === 'node/exit') {
        handler?.onExit(msg.code, msg.signal);
        this.exitHandlers.delete(`${index}|${msg.rank}`);
      }
    });
    socket.on('close', () => {
      if (!joined || this.closed) return;
      const index = this.nodes.indexOf(joined);
      // Every rank it held is gone with it.
      for (const [key, h] of [...this.exitHandlers.entries()]) {
        if (key.startsWith(`${index}|`)) {
          h.onExit(null, 'NODE_LOST');
          this.exitHandlers.delete(key);
        }
      }
      this.lostHandler?.(joined);
    });
  }

  /**
   * The address other nodes can reach `node` at: what the coordinator sees, except for a node
   * that came over loopback (the coordinator's own), which others reach at the coordinator's
   * address on their network.
   */
  reachableAddress(node: number): string {
    const n = this.nodes[node]!;
    if (!isLoopback(n.address)) return n.address;
    const remote = this.nodes.find((m) => !isLoopback(m.address));
    return remote ? remote.coordinatorAddress : n.address;
  }
}

export interface NodeHostOptions {
  /** Coordinator addresses, tried in turn. */
  addresses: string[];
  port: number;
  /** Everything the hello says about this node except the nonce, pid and hostname. */
  hello: Omit<Extract<NodeToCoordinator, { t: 'node/hello' }>, 't' | 'nonce' | 'pid' | 'hostname'>;
  token: string;
  /** How long to keep trying to reach the coordinator (it may not be listening yet), ms. */
  connectDeadlineMs: number;
  log: Log;
  /** Called once the coordinator accepted this node, with the address that answered. */
  onJoined?(address: string): void;
}

/** Why a node host ended. */
export class NodeHostError extends Error {
  constructor(
    readonly code: 'NODE_UNREACHABLE' | 'NODE_REFUSED',
    message: string,
  ) {
    super(message);
  }
}

function tryConnect(host: string, port: number, timeoutMs: number): Promise<net.Socket | Error> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(new Error(`${host}:${port}: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.once('error', (e) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(new Error(`${host}:${port}: ${e.message}`));
    });
  });
}

/**
 * A node's side: reaches the coordinator (each address in turn, again and again until the
 * deadline), joins (each side proves it knows the run's token: HMAC challenges, the token is
 * never sent), then starts and kills rank processes as told (only COMMCOST_*, NCCL_*,
 * TORCH_NCCL_*, UV_THREADPOOL_SIZE and MALLOC_ARENA_MAX may be set in their environment). Resolves when the
 * coordinator says bye or its connection closes, after every rank process of this node has
 * been killed, with how the run ended ('lost' when the connection closed without a bye).
 * @throws NodeHostError NODE_UNREACHABLE naming every address tried, or NODE_REFUSED with the coordinator's reason.
 */
export async function runNodeHost(opts: NodeHostOptions): Promise<'complete' | 'partial' | 'failed' | 'lost'> {
  const until = Date.now() + opts.connectDeadlineMs;
  // The threads that start this node's rank processes boot while it joins.
  void warmSpawnThreads();
  let socket: net.Socket | undefined;
  const failures = new Map<string, string>();
  while (!socket) {
    for (const a of opts.addresses) {
      const r = await tryConnect(a, opts.port, Math.max(500, Math.min(3000, until - Date.now())));
      if (r instanceof net.Socket) {
        socket = r;
        break;
      }
      failures.set(a, r.message);
    }
    if (socket) break;
    if (Date.now() >= until) {
      throw new NodeHostError('NODE_UNREACHABLE', `cannot reach the coordinator within ${Math.round(opts.connectDeadlineMs / 1000)} s: ${[...failures.values()].join('; ')}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const s = socket;
  s.setNoDelay(true);
  const coordinator = plainAddress(s.remoteAddress);
  const ranks = new Map<number, RankHandle>();
  const channel = new LineChannel<NodeToCoordinator, CoordinatorToNode>(s, s, (line) => opts.log(`bad line from the coordinator: ${line.slice(0, 200)}`));
  let refused: string | undefined;
  let joinedOk = false;
  let status: 'complete' | 'partial' | 'failed' | undefined;
  const nonce = randomBytes(16).toString('hex');
  let heard = Date.now();
  const watch = setInterval(() => {
    if (Date.now() - heard > NODE_SILENCE_MS) {
      opts.log(`the coordinator at ${coordinator} has been silent for ${NODE_SILENCE_MS / 1000} s: the link is taken as cut; this node's ranks are killed`);
      s.destroy();
    }
  }, PING_MS);
  await new Promise<void>((resolve) => {
    const end = (): void => {
      clearInterval(watch);
      for (const h of ranks.values()) h.kill();
      resolve();
    };
    s.on('close', end);
    s.on('error', (e) => opts.log(`coordinator connection: ${e.message}`));
    channel.onMessage((msg) => {
      // After a refusal (either way) nothing more is taken from this connection.
      if (refused !== undefined) return;
      // The listener at that port may be anyone's: its messages are checked before use.
      const malformed = coordinatorToNodeProblem(msg);
      if (malformed) {
        opts.log(`the coordinator at ${coordinator} sent a malformed message: ${malformed}`);
        return;
      }
      heard = Date.now();
      switch (msg.t) {
        case 'node/challenge':
          // Talk on only to a coordinator that knows the run's token (the port may be anyone's).
          if (!sameProof(msg.proof, tokenProof(opts.token, 'coordinator', nonce))) {
            refused = `the listener at ${coordinator}:${opts.port} does not know this run's token: it is not this run's coordinator (another job on that port, or COMMCOST_TOKEN differs)`;
            s.destroy();
            break;
          }
          channel.send({ t: 'node/auth', proof: tokenProof(opts.token, 'node', msg.nonce) });
          break;
        case 'node/ping':
          channel.send({ t: 'node/pong' });
          break;
        case 'node/welcome':
          joinedOk = true;
          opts.onJoined?.(coordinator);
          break;
        case 'node/refused':
          refused = msg.reason;
          s.end();
          break;
        case 'node/spawn': {
          const rank = msg.rank;
          const refusedKeys = Object.keys(msg.env ?? {}).filter((k) => !SPAWN_ENV_ALLOWED.test(k));
          if (!joinedOk || !Number.isInteger(rank) || refusedKeys.length > 0) {
            opts.log(`refused to start rank ${String(rank)}: ${!joinedOk ? 'not joined yet' : refusedKeys.length > 0 ? `variables not allowed in a rank's environment: ${refusedKeys.join(', ')}` : 'bad rank'}`);
            channel.send({ t: 'node/exit', rank, code: 126, signal: null });
            break;
          }
          ranks.get(rank)?.kill();
          ranks.set(
            rank,
            startLocalRank(msg.env, {
              onLine: (line) => channel.send({ t: 'node/log', rank, line }),
              onExit: (code, signal) => channel.send({ t: 'node/exit', rank, code, signal }),
            }),
          );
          break;
        }
        case 'node/kill':
          ranks.get(msg.rank)?.kill();
          break;
        case 'node/bye':
          status = msg.status;
          s.end();
          break;
      }
    });
    channel.send({ t: 'node/hello', nonce, pid: process.pid, hostname: os.hostname(), ...opts.hello });
  });
  await Promise.all([...ranks.values()].map((h) => h.done));
  if (refused !== undefined) {
    throw new NodeHostError('NODE_REFUSED', refused.startsWith('the listener') ? refused : `the coordinator at ${coordinator}:${opts.port} refused this node: ${refused}`);
  }
  // Closed without a bye: the coordinator died or the link was cut.
  return status ?? 'lost';
}
