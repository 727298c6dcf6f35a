/**
 * Messages between the coordinator and its rank processes (internal to the agent; JSON lines
 * over one TCP connection per rank, the "control channel"). The timing barrier is a separate
 * binary TCP channel driven from native code (see barrierServer.ts).
 */
import type { ErrorCode, MemStatsBytes, NcclInitParts, RunOptions } from '../protocol/events';

/** Which experiment variants a rank session runs, in order. */
export interface RankWork {
  experiment: string;
  variants: string[];
  /** Run only this iteration (0-based, warmups included) of each variant: one per process set (processPerIteration). */
  iteration?: number;
}

export type CoordinatorToRank =
  | { t: 'start'; options: RunOptions; work: RankWork[]; barrierPort: number; barrierHost: string; ncclPath: string; cudaPath: string; nodeOfRank?: number[] }
  | { t: 'id'; key: number; id: string }
  | { t: 'abort' }
  | { t: 'exit' };

export interface IterationReport {
  t: 'iteration';
  rank: number;
  experiment: string;
  variant: string;
  iteration: number;
  warmup: boolean;
  /** Step id → this rank's duration, ms. */
  steps: Record<string, number>;
  /** Step id → CLOCK_MONOTONIC ns of this rank's barrier release. */
  releaseNs: Record<string, number>;
  /** Point → device memory taken since the iteration started (free-memory delta), bytes. */
  memory: Record<string, number>;
  /** Point → ncclCommMemStats summed over the communicators marked there (NCCL ≥ 2.29.7). */
  memStats?: Record<string, MemStatsBytes>;
  /** Name → this rank's count in this iteration (e.g. inFlightAtStart, inFlightDropped). */
  counts?: Record<string, number>;
  /** Running total of every library call's duration on this rank (timed and untimed), ms. */
  libraryMs: number;
  /** Running total of the timed calls' durations on this rank (warmups included), ms. */
  timedMs?: number;
  /** NCCL's view of this iteration's creations on this rank and its unreadable lines (RankContext.recordNcclInit). */
  ncclInit?: { views: NcclInitParts; malformedLines: number };
}

export type RankToCoordinator =
  /** `token`: the session's secret, given to the rank process in COMMCOST_SESSION_TOKEN. */
  | { t: 'hello'; rank: number; pid: number; token?: string }
  | { t: 'ready'; rank: number; cudaInitMs: number; firstUniqueIdMs?: number }
  /** `iteration` -1: the op runs in the variant's untimed setup, before its first iteration. */
  | { t: 'begin'; op: string; experiment: string; variant: string; iteration: number; step?: string }
  | { t: 'end'; op: string }
  | { t: 'id/publish'; key: number; id: string }
  | { t: 'id/request'; key: number }
  | IterationReport
  | { t: 'error'; code: ErrorCode; message: string; detail?: string; experiment?: string; variant?: string; iteration?: number; op?: string }
  | { t: 'finished'; libraryMs: number; timedMs?: number };

/**
 * Messages between the coordinator and the node hosts of a multi-node run (one JSON-lines TCP
 * connection per node: another host's agent, or one process started by srun / mpirun /
 * torchrun). A node host starts the rank processes placed on it when asked, and reports their
 * output and exit; it kills them when the coordinator says so or goes away.
 */
export type NodeToCoordinator =
  | {
      t: 'node/hello';
      /** A random challenge the coordinator must answer with HMAC(token, "coordinator|" + nonce). */
      nonce: string;
      hostname: string;
      pid: number;
      /** Host order (SSH hosts): ranks are placed on nodes by index. */
      index?: number;
      /** Launched processes: the global rank this process is, and the GPU it drives. */
      fixedRank?: number;
      /** Launched processes: the world size its launcher gave it (must match rank 0's). */
      worldSize?: number;
      /** Rank processes this node holds (one per GPU). */
      slots: number;
      /** Device ordinal of each slot on this node. */
      devices: number[];
      /** GPU model of each slot. */
      gpus: string[];
      ncclVersion: string;
      simulated: boolean;
    }
  /** The node's answer to the coordinator's challenge: HMAC(token, "node|" + its nonce). The token itself never travels. */
  | { t: 'node/auth'; proof: string }
  | { t: 'node/pong' }
  | { t: 'node/exit'; rank: number; code: number | null; signal: string | null }
  | { t: 'node/log'; rank: number; line: string };

export type CoordinatorToNode =
  /** Proves the coordinator knows the run's token, and challenges the node in turn. */
  | { t: 'node/challenge'; proof: string; nonce: string }
  | { t: 'node/welcome' }
  | { t: 'node/refused'; reason: string }
  /** Start rank `rank` with these variables added (COMMCOST_RANK, COMMCOST_COORDINATOR, …). */
  | { t: 'node/spawn'; rank: number; env: Record<string, string> }
  | { t: 'node/kill'; rank: number }
  /** Heartbeat, every second: a node that hears none for NODE_SILENCE_MS kills its ranks and ends. */
  | { t: 'node/ping' }
  /** The run is over; `status` is how it ended (a node's process exits 0 only when complete). */
  | { t: 'node/bye'; status?: 'complete' | 'partial' | 'failed' };
