/**
 * A node's side of a run over several nodes (see nodes.ts): {@link runNodeHost} reaches the
 * coordinator, joins it, and starts and kills the rank processes placed on this node.
 */
import { randomBytes } from 'node:crypto';
import * as net from 'node:net';
import * as os from 'node:os';
import { LineChannel } from './lineChannel';
import { warmSpawnThreads } from './rankSpawner';
import { coordinatorToNodeProblem } from '../protocol/agentWire';
import type { CoordinatorToNode, NodeToCoordinator } from './rankWire';

import { NODE_SILENCE_MS, PING_MS, SPAWN_ENV_ALLOWED, plainAddress, sameProof, startLocalRank, tokenProof, type Log, type RankHandle } from './nodes';

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
  /** The coordinator in log lines and errors ("rank 0 (the coordinator)"); "the coordinator" by default. */
  coordinatorName?: string;
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

/** The first pause before reaching the coordinator again after it closed a connection before this node joined, ms (doubled each time, to RETRY_MAX_MS). */
export const RETRY_FIRST_MS = 50;
/** The longest such pause, ms. */
export const RETRY_MAX_MS = 1_000;

/** How one connection to the coordinator ended. */
type Attempt =
  | { kind: 'ended'; status: 'complete' | 'partial' | 'failed' | 'lost' }
  /** Refused (by the coordinator, or this node refused a listener without the token): the error's message. */
  | { kind: 'refused'; reason: string }
  /** Closed (or reset) before the coordinator welcomed this node, without a refusal. */
  | { kind: 'early'; address: string };

/**
 * Connects to the first address that answers, trying each in turn again and again until `until`.
 * @throws NodeHostError NODE_UNREACHABLE naming every address tried (and `early`, when set).
 */
async function reach(opts: NodeHostOptions, until: number, early: string): Promise<net.Socket> {
  const failures = new Map<string, string>();
  for (;;) {
    for (const a of opts.addresses) {
      const r = await tryConnect(a, opts.port, Math.max(500, Math.min(3000, until - Date.now())));
      if (r instanceof net.Socket) return r;
      failures.set(a, r.message);
    }
    if (Date.now() >= until) {
      throw new NodeHostError('NODE_UNREACHABLE', `cannot reach ${opts.coordinatorName ?? 'the coordinator'} within ${Math.round(opts.connectDeadlineMs / 1000)} s: ${[...failures.values()].join('; ')}${early}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * A node's side: reaches the coordinator (each address in turn, again and again until the
 * deadline), joins (each side proves it knows the run's token: HMAC challenges, the token is
 * never sent), then starts and kills rank processes as told (only COMMCOST_*, NCCL_*,
 * TORCH_NCCL_*, UV_THREADPOOL_SIZE and MALLOC_ARENA_MAX may be set in their environment). A
 * connection the coordinator closes before it welcomed this node (a listener full of
 * unauthenticated connections closes the oldest: issue #21, item 6) is tried again, after a
 * pause that doubles from RETRY_FIRST_MS to RETRY_MAX_MS, until the deadline. Resolves when the
 * coordinator says bye or its connection closes, after every rank process of this node has
 * been killed, with how the run ended ('lost' when the connection closed without a bye).
 * @throws NodeHostError NODE_UNREACHABLE naming every address tried, or how often the coordinator
 *   closed the connection before this node could join; NODE_REFUSED with the coordinator's reason.
 */
export async function runNodeHost(opts: NodeHostOptions): Promise<'complete' | 'partial' | 'failed' | 'lost'> {
  const until = Date.now() + opts.connectDeadlineMs;
  const peer = opts.coordinatorName ?? 'the coordinator';
  // The threads that start this node's rank processes boot while it joins.
  void warmSpawnThreads();
  let closedEarly = 0;
  let where = '';
  let pause = RETRY_FIRST_MS;
  const early = (): string =>
    `${peer} at ${where} closed the connection before this node could join, ${closedEarly} time(s) (a listener full of unauthenticated connections closes the oldest, and says "closed N connection(s)" in its log; or ${peer} stopped)`;
  for (;;) {
    const socket = await reach(opts, until, closedEarly > 0 ? `; before that, ${early()}` : '');
    const r = await attempt(socket, opts);
    if (r.kind === 'ended') return r.status;
    if (r.kind === 'refused') throw new NodeHostError('NODE_REFUSED', r.reason);
    closedEarly++;
    where = `${r.address}:${opts.port}`;
    const left = until - Date.now();
    if (left <= 0) throw new NodeHostError('NODE_UNREACHABLE', `${early()}; gave up after ${Math.round(opts.connectDeadlineMs / 1000)} s`);
    if (closedEarly === 1) opts.log(`${peer} at ${where} closed the connection before this node could join (its listener full of unauthenticated connections?): trying again for up to ${Math.ceil(left / 1000)} s`);
    // Jittered, so that nodes turned away together do not come back together.
    await new Promise((res) => setTimeout(res, Math.min(left, pause * (0.5 + Math.random() / 2))));
    pause = Math.min(pause * 2, RETRY_MAX_MS);
  }
}

/** One connection to the coordinator: joins, then serves until it ends. */
async function attempt(s: net.Socket, opts: NodeHostOptions): Promise<Attempt> {
  s.setNoDelay(true);
  const coordinator = plainAddress(s.remoteAddress);
  const ranks = new Map<number, RankHandle>();
  // Before the welcome a closed connection is counted and tried again, not reported line by line.
  const channel = new LineChannel<NodeToCoordinator, CoordinatorToNode>(s, s, (line) => {
    if (joinedOk) opts.log(`bad line from the coordinator: ${line.slice(0, 200)}`);
  });
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
    s.on('error', (e) => {
      if (joinedOk) opts.log(`coordinator connection: ${e.message}`);
    });
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
    return { kind: 'refused', reason: refused.startsWith('the listener') ? refused : `${opts.coordinatorName ?? 'the coordinator'} at ${coordinator}:${opts.port} refused this node: ${refused}` };
  }
  if (!joinedOk) return { kind: 'early', address: coordinator };
  // Closed without a bye: the coordinator died or the link was cut.
  return { kind: 'ended', status: status ?? 'lost' };
}
