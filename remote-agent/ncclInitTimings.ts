/**
 * NCCL's own account of a communicator's creation: the `Init timings` INFO line that NCCL ≥ 2.23.4
 * writes (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS including INIT) at the end of every creation, e.g.
 *
 *   host:1234:1240 [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank 0 nranks 1 total 0.37
 *   (kernels 0.35, alloc 0.00, bootstrap 0.00, allgathers 0.00, topo 0.01, graphs 0.00,
 *   connections 0.00, rest 0.01)
 *
 * (one line; seconds with two decimals, src/init.cc `ncclCommInitRankFunc`). Earlier releases print
 * `Init timings: rank R nranks N total T (kernels …, bootstrap …, …)` without the function and
 * without `alloc`. Reading is lenient: whatever parts a line has are kept (a missing or unreadable
 * part is left out, an unknown part is kept under its own name); a line that names `Init timings`
 * but has no readable rank, nranks and total is skipped and counted as malformed. Never throws.
 *
 * Pure (no I/O): the rank reads the log file and hands its text to parseInitTimings
 * (protocol/ncclInitLog.ts, re-exported here); the coordinator combines the
 * ranks' views with {@link combineRanksViews} (MAX per part, as every step) and summarises them with
 * {@link summarizeViews}.
 */
import type { NcclInitParts, NcclInitSummary } from '../protocol/events';
import { summarize } from './stats';

// The pure reading of the log lives in protocol/ (shared with `commcost trace`); re-exported here.
export { parseInitTimings, viewsOfCreations, type InitTimingsLine, type InitTimingsLog } from '../protocol/ncclInitLog';

/**
 * Combines one iteration's per-rank views: a creation is kept only when every rank has it, and
 * each part is the MAX over the ranks that printed it (the critical path, as every step).
 * @param perRank one entry per rank of the iteration (undefined: the rank read no log).
 */
export function combineRanksViews(perRank: readonly (NcclInitParts | undefined)[]): NcclInitParts {
  const combined: NcclInitParts = {};
  if (perRank.length === 0) return combined;
  const labels = new Set(perRank.flatMap((v) => Object.keys(v ?? {})));
  for (const label of labels) {
    const views = perRank.map((v) => v?.[label]);
    if (views.some((v) => v === undefined)) continue;
    const parts: Record<string, number> = {};
    for (const view of views) for (const [part, ms] of Object.entries(view!)) parts[part] = Math.max(parts[part] ?? -Infinity, ms);
    combined[label] = parts;
  }
  return combined;
}

/** NCCL's view accumulated over a variant's recorded iterations (coordinator side). */
export interface ViewRecord {
  /** creation → part → one value per recorded iteration that had it (ms). */
  samples: Record<string, Record<string, number[]>>;
  /** creation → recorded iterations that had it. */
  iterations: Record<string, number>;
  /** Recorded iterations seen. */
  recorded: number;
  malformedLines: number;
}

/** An empty {@link ViewRecord}. */
export function emptyViewRecord(): ViewRecord {
  return { samples: {}, iterations: {}, recorded: 0, malformedLines: 0 };
}

/** Adds one recorded iteration's combined view and its ranks' malformed-line count to `record`. */
export function addIteration(record: ViewRecord, combined: NcclInitParts, malformedLines: number): void {
  record.recorded++;
  record.malformedLines += malformedLines;
  for (const [label, parts] of Object.entries(combined)) {
    record.iterations[label] = (record.iterations[label] ?? 0) + 1;
    const bucket = (record.samples[label] ??= {});
    for (const [part, ms] of Object.entries(parts)) (bucket[part] ??= []).push(ms);
  }
}

/**
 * The summary of NCCL's view: per creation and part, the median over the iterations that had it.
 * @param expected the creations every iteration should have (e.g. ["cold", "warm"]).
 * @param planNote why the view is missing, when known at plan time (an NCCL older than 2.23.4).
 */
export function summarizeViews(record: ViewRecord, expected: readonly string[], planNote?: string): NcclInitSummary {
  const medians: NcclInitParts = {};
  for (const [label, parts] of Object.entries(record.samples)) {
    medians[label] = {};
    for (const [part, values] of Object.entries(parts)) medians[label]![part] = summarize(values).median;
  }
  const short = expected.filter((label) => (record.iterations[label] ?? 0) < record.recorded);
  let note = planNote;
  if (note === undefined && short.length > 0) {
    note = short
      .map((label) => `the ${label} creation's Init timings line was read on every rank in ${record.iterations[label] ?? 0} of ${record.recorded} iterations`)
      .join('; ');
  }
  return { medians, iterations: { ...record.iterations }, malformedLines: record.malformedLines, ...(note !== undefined ? { note } : {}) };
}

