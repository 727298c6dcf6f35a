/**
 * The coordinator's side of a run over several nodes (see nodes.ts): a {@link NodeServer}
 * accepts node hosts until the run has its nodes, each proving it knows the run's token, and
 * starts and kills rank processes on them. Pre-authentication caps: listenerGuard.ts.
 */
import { randomBytes } from 'node:crypto';
import * as net from 'node:net';
import { LineChannel, MAX_LINE_CHARS, PRE_AUTH_LINE_CHARS } from './lineChannel';
import { ListenerGuard } from './listenerGuard';
import { nodeMessageProblem } from '../protocol/agentWire';
import type { CoordinatorToNode, NodeToCoordinator } from './rankWire';

import { NODE_SILENCE_MS, PING_MS, helloProblem, isLoopback, plainAddress, sameProof, tokenProof, type JoinedNode, type Log, type RankCallbacks, type RankHandle } from './nodes';

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
    // and only so many connections at once, the oldest closed to make room (listenerGuard.ts).
    this.guard.admit(socket);
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
        // A well-formed hello: silent connections can no longer push this one out (listenerGuard.ts).
        this.guard.progressed(socket);
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
