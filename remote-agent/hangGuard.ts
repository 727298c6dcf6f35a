/**
 * The hang guard's rules (pure): given what a rank session knows now, is it hung, and how is
 * that told? The coordinator's RankSession calls {@link findHang} every 100 ms.
 *
 * Every wait a rank can be in has a deadline (`deadlineMs`, the run's deadlineSeconds):
 * - start-up: every rank must report `ready` (CUDA and NCCL loaded) within the deadline;
 * - a library call, or a barrier a rank sits out (`begin` … `end`), older than the deadline;
 * - a stall between operations: no rank has sent anything for the deadline while one that has
 *   not finished is in no operation: a rank stopped between two calls, or ranks waiting for a
 *   unique id that its producer never publishes (the producer stalled), or a c10d driver that
 *   went silent. Such a rank is watched by no call's deadline, so it is watched by this one.
 */

/** What a session failure names (the coordinator's SessionFailure, less the code). */
export interface HangReport {
  message: string;
  hint: string;
  where: { rank?: number; experiment?: string; variant?: string; iteration?: number; step?: string };
}

/** An operation a rank is in (`begin` seen, its `end` not yet). */
export interface OpInFlight {
  op: string;
  /** Date.now() at its `begin`, ms. */
  since: number;
  experiment: string;
  variant: string;
  iteration: number;
  step?: string;
}

/** What the session knows at `now` (every time is Date.now(), ms). */
export interface HangState {
  now: number;
  ranks: number;
  deadlineMs: number;
  /** Ranks that reported `ready`. */
  ready: ReadonlySet<number> | ReadonlyMap<number, unknown>;
  /** When start-up must be over. */
  readyDeadline: number;
  current: ReadonlyMap<number, OpInFlight>;
  /** Per rank: the label of the last operation it finished. */
  lastDone: ReadonlyMap<number, string>;
  /** Per rank: the last operation it began (where it was, for a stall between operations). */
  lastBegin: ReadonlyMap<number, OpInFlight>;
  finished: ReadonlySet<number>;
  /** Unique-id key → the ranks waiting for it and since when. */
  idWaits: ReadonlyMap<number, { ranks: number[]; since: number }>;
  /** When the last message from any rank arrived. */
  lastHeard: number;
  /** Sentences about nodes not heard from (multi-node runs), put first. */
  silentNodes: string[];
  /** True on commcost's simulated NCCL (no GPU): the start-up advice names no GPU. */
  simulated?: boolean;
}

const secs = (ms: number): string => (ms / 1000).toFixed(1);

/**
 * The hang of a session, or undefined when every wait is within its deadline.
 * @returns the message (who waited where, for how long, s), a hint and where it happened.
 */
export function findHang(s: HangState): HangReport | undefined {
  const deadlineS = s.deadlineMs / 1000;
  const hint = `every rank must make the same NCCL calls; the deadline was ${deadlineS} s (commcost.deadlineSeconds / --deadline)`;
  const readyCount = s.ready instanceof Map ? s.ready.size : (s.ready as ReadonlySet<number>).size;
  if (readyCount < s.ranks) {
    if (s.now <= s.readyDeadline) return undefined;
    const missing = [...Array(s.ranks).keys()].filter((r) => !s.ready.has(r));
    // The advice follows from what failed: a simulated run has no GPU to be busy.
    return s.simulated
      ? {
          message: `timed out at startup: rank ${missing.join(', ')} did not start the simulated CUDA and NCCL within ${deadlineS} s`,
          hint: "check the log: it holds the rank processes' output (this simulated run uses no GPU)",
          where: { rank: missing[0] },
        }
      : {
          message: `timed out at startup: rank ${missing.join(', ')} did not start CUDA and NCCL within ${deadlineS} s`,
          hint: 'check the log; raise the deadline if the GPUs are busy',
          where: { rank: missing[0] },
        };
  }
  for (const [rank, op] of s.current) {
    if (s.now - op.since <= s.deadlineMs) continue;
    const parts: string[] = [];
    for (let r = 0; r < s.ranks; r++) {
      const cur = s.current.get(r);
      if (cur && cur.op === op.op && cur.iteration === op.iteration && cur.variant === op.variant) {
        parts.push(`rank ${r} waited ${secs(s.now - cur.since)} s in ${cur.op}`);
      } else if (cur) {
        parts.push(`rank ${r} is stuck in ${cur.op}`);
      } else {
        const last = s.lastDone.get(r);
        parts.push(`rank ${r} never reached ${op.op}: ${last === undefined ? 'it had finished nothing yet' : `it last finished ${last}`}`);
      }
    }
    const stuckRank = [...Array(s.ranks).keys()].find((r) => !s.current.has(r)) ?? rank;
    return {
      message: `timed out at ${op.experiment} ${op.variant} iteration ${op.iteration}, step ${op.op} on rank ${stuckRank}: ${[...s.silentNodes, ...parts].join('; ')}`,
      hint,
      where: { rank: stuckRank, experiment: op.experiment, variant: op.variant, iteration: op.iteration, step: op.step ?? op.op },
    };
  }
  // A stall between operations: nothing heard from any rank for the deadline, and a rank that
  // has not finished is in no operation (all in operations is the rule above's to judge).
  if (s.now - s.lastHeard <= s.deadlineMs) return undefined;
  const idle = [...Array(s.ranks).keys()].filter((r) => !s.finished.has(r) && !s.current.has(r));
  if (idle.length === 0) return undefined;
  const waitingFor = new Map<number, { key: number; since: number }>();
  for (const [key, w] of s.idWaits) for (const r of w.ranks) waitingFor.set(r, { key, since: w.since });
  // The stalled rank: one in no operation that waits for nothing (e.g. the id's producer), else the first waiting.
  const stalled = idle.find((r) => !waitingFor.has(r)) ?? idle[0]!;
  const parts = [...Array(s.ranks).keys()].filter((r) => !s.finished.has(r)).map((r) => {
    const cur = s.current.get(r);
    if (cur) return `rank ${r} waited ${secs(s.now - cur.since)} s in ${cur.op}`;
    const w = waitingFor.get(r);
    if (w) return `rank ${r} waited ${secs(s.now - w.since)} s for unique id #${w.key}, which no rank published`;
    const last = s.lastDone.get(r);
    return `rank ${r} stalled between operations: nothing heard for ${secs(s.now - s.lastHeard)} s since it ${last === undefined ? 'started' : `finished ${last}`}`;
  });
  const at = s.lastBegin.get(stalled) ?? [...s.lastBegin.values()][0];
  return {
    message: `timed out${at ? ` at ${at.experiment} ${at.variant} iteration ${at.iteration}` : ''} between operations on rank ${stalled}: ${[...s.silentNodes, ...parts].join('; ')}`,
    hint,
    where: { rank: stalled, ...(at ? { experiment: at.experiment, variant: at.variant, iteration: at.iteration } : {}) },
  };
}
