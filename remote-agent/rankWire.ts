/**
 * Messages between the coordinator and its rank processes (internal to the agent; JSON lines
 * over one TCP connection per rank, the "control channel"). The timing barrier is a separate
 * binary TCP channel driven from native code (see barrierServer.ts).
 */
import type { ErrorCode, RunOptions } from '../protocol/events';

/** Which experiment variants a rank session runs, in order. */
export interface RankWork {
  experiment: string;
  variants: string[];
}

export type CoordinatorToRank =
  | { t: 'start'; options: RunOptions; work: RankWork[]; barrierPort: number; barrierHost: string; ncclPath: string; cudaPath: string }
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
  /** Running total of every library call's duration on this rank (timed and untimed), ms. */
  libraryMs: number;
}

export type RankToCoordinator =
  | { t: 'hello'; rank: number; pid: number }
  | { t: 'ready'; rank: number; cudaInitMs: number; firstUniqueIdMs?: number }
  | { t: 'begin'; op: string; experiment: string; variant: string; iteration: number; step?: string }
  | { t: 'end'; op: string }
  | { t: 'id/publish'; key: number; id: string }
  | { t: 'id/request'; key: number }
  | IterationReport
  | { t: 'error'; code: ErrorCode; message: string; detail?: string; experiment?: string; variant?: string; iteration?: number; op?: string }
  | { t: 'finished'; libraryMs: number };
