/**
 * Runs over several nodes: other hosts' agents (SSH) or the processes an external launcher
 * started (srun, mpirun, torchrun). The coordinator listens with a NodeServer (nodeServer.ts);
 * every node runs runNodeHost (nodeHost.ts), which connects, says what it holds, and starts the
 * rank processes placed on it when the coordinator asks, so each rank session still gets fresh
 * processes (a variant's NCCL_* environment is read once per process). This file holds what both
 * sides share: the token proof, the hello's shape check, rank placement, addresses, and starting
 * a local rank process.
 *
 * Invariants: a node never outlives its coordinator (a closed connection kills its rank
 * processes and ends it); a node that does not present the run's token is refused; the rank
 * processes of a node are killed with SIGKILL (a hung NCCL call ignores anything gentler).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import * as net from 'node:net';
import * as os from 'node:os';
import { rankProcessEnv } from './environment';
import { LineChannel } from './lineChannel';
import type { RankCallbacks, RankHandle } from './rankHandle';
import { spawnRankProcess } from './rankSpawner';
import type { CoordinatorToNode, NodeToCoordinator } from './rankWire';

export type { RankCallbacks, RankHandle } from './rankHandle';

/** Where a part of a multi-node run writes its log lines. */
export type Log = (line: string) => void;

/**
 * Either side of a node connection that hears nothing from the other for this long takes the
 * link as cut: the node kills its ranks and ends, the coordinator counts the node lost. A cut
 * link sends no reset, so without this a node would keep its ranks until TCP gives up
 * (minutes). Override with COMMCOST_NODE_SILENCE_MS. ms.
 */
export const NODE_SILENCE_MS = Number(process.env.COMMCOST_NODE_SILENCE_MS) > 0 ? Number(process.env.COMMCOST_NODE_SILENCE_MS) : 10_000;
/** How often either side of a node connection pings the other, ms. */
export const PING_MS = 1_000;

/** HMAC-SHA256 of `role|nonce` under the run's token: each side proves it knows the token without sending it. */
export function tokenProof(token: string, role: 'node' | 'coordinator', nonce: string): string {
  return createHmac('sha256', token).update(`${role}|${nonce}`).digest('hex');
}

/** Whether `a` is the proof `b` (constant time). */
export function sameProof(a: unknown, b: string): boolean {
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

/** Whether `a` is a loopback address (IPv4 127/8 or ::1). */
export const isLoopback = (a: string): boolean => a === '127.0.0.1' || a === '::1' || a.startsWith('127.');

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
