/**
 * Multi-node placement: the coordinator's node server, this host joined as node 0, the other
 * nodes awaited within the deadline, and the ranks placed on them (nodeServer.ts and nodeHost.ts do the wire).
 */
import { randomBytes } from 'node:crypto';
import type { NodePlan } from '../protocol/events';
import type { DeviceInfo, LoadInfo } from './nativeBinding';
import { hostAddresses, placeRanks, type RankPlace } from './nodes';
import { runNodeHost } from './nodeHost';
import { NodeServer } from './nodeServer';
import { RunSetupError, type NormalizedOptions } from './runSetup';
import type { Emit, Log, SessionFailure } from './sessionPlan';

/**
 * A run whose ranks live on several nodes. `ssh`: this agent is node 0 of `nodes` hosts, each
 * with its own agent (joined by `node/join`). `launched`: every rank is a process an external
 * launcher started; this one is rank 0 and listens on a fixed port.
 */
export type ClusterMode =
  | { kind: 'ssh'; nodes: number; coordinatorAddress?: string }
  | { kind: 'launched'; worldSize: number; port: number; token: string; device: number };

/** The ranks of a multi-node run: its node server and where each rank runs. */
export interface ClusterPlacement {
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

/** What gatherNodes needs from the run that calls it. */
export interface GatherHooks {
  emit: Emit;
  log: Log;
  /** True once the run is cancelled: stops waiting for the nodes. */
  cancelled(): boolean;
  /** Told of the node server as soon as it is created. */
  onServer(server: NodeServer): void;
  /** Told when a joined node's connection closes before the run ends. */
  onNodeLost(failure: SessionFailure): void;
}


/**
 * Multi-node runs: listens for the nodes, joins this host as node 0 (an in-process node host,
 * so its ranks start the same way as everyone's), waits for all of them within the deadline,
 * checks they load the same NCCL, and places the ranks.
 * `run.onServer` is told of the node server as soon as it exists (the run closes it, whatever
 * happens next); `run.onNodeLost` of a node whose connection closes later.
 * @throws RunSetupError NODE_UNREACHABLE naming who joined, or BAD_COMMAND on mismatched nodes.
 */
export async function gatherNodes(
  mode: ClusterMode,
  options: NormalizedOptions,
  info: LoadInfo,
  gpus: DeviceInfo[],
  localRanks: number,
  run: GatherHooks,
): Promise<ClusterPlacement> {
  const token = mode.kind === 'launched' ? mode.token : randomBytes(16).toString('hex');
  const expected = mode.kind === 'launched' ? mode.worldSize : mode.nodes;
  const server = new NodeServer({ expected, token, port: mode.kind === 'launched' ? mode.port : 0, log: run.log });
  run.onServer(server);
  let port: number;
  try {
    port = await server.listen();
  } catch (e) {
    throw new RunSetupError('BAD_COMMAND', `cannot listen for the other nodes on port ${mode.kind === 'launched' ? mode.port : 0}: ${(e as Error).message}`, 'set COMMCOST_PORT to a free port (the same for every rank)');
  }
  if (mode.kind === 'ssh') {
    const addresses = mode.coordinatorAddress ? [mode.coordinatorAddress] : hostAddresses();
    run.emit({ type: 'run/listening', port, addresses, token });
  }
  const devices = mode.kind === 'launched' ? [mode.device] : [...Array(localRanks).keys()];
  const deadlineMs = options.deadlineSeconds * 1000;
  // This host is a node too. It ends when the server closes (end of the run).
  runNodeHost({
    addresses: ['127.0.0.1'],
    port,
    token,
    connectDeadlineMs: deadlineMs,
    log: run.log,
    hello: {
      ...(mode.kind === 'launched' ? { fixedRank: 0, worldSize: mode.worldSize } : { index: 0 }),
      slots: devices.length,
      devices,
      gpus: devices.map((d) => gpus[d]?.name ?? '?'),
      ncclVersion: info.ncclVersion,
      simulated: info.simulated,
    },
  }).catch((e: unknown) => run.log(`this host's node ended: ${(e as Error).message}`));
  let joined;
  try {
    joined = await server.waitForNodes(deadlineMs + 5000, () => run.cancelled());
  } catch (e) {
    if (run.cancelled()) {
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
  server.onLost((n) => run.onNodeLost({ code: 'NODE_LOST', message: `node ${n.hello.hostname} (${n.address}) went away`, hint: 'the node\'s agent or connection ended; its ranks are gone', where: {} }));
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
