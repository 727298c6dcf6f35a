/**
 * The per-iteration figures that are neither durations nor free-memory deltas: ncclCommMemStats
 * at memory points (bytes) and counts (e.g. whether work was in flight when a timed call began,
 * how many in-flight collectives a revoke dropped). Pure; the coordinator combines each
 * iteration's rank reports with `combineExtras`, keeps the recorded ones with `addExtras` and
 * summarises a variant with `summarizeExtras`.
 */
import type { CountSummary, MemStatsBytes } from '../protocol/events';
import type { IterationReport } from './rankWire';
import { summarize } from './stats';

const MEM_FIELDS = ['suspendableBytes', 'persistentBytes', 'totalBytes'] as const;

/** One iteration combined across ranks. */
export interface CombinedExtras {
  /** Point → each field the MAX over the ranks that reported the point (as memory is recorded). */
  memStats?: Record<string, MemStatsBytes>;
  /** Name → per rank count (rank order; null where a rank reported none). */
  counts?: Record<string, (number | null)[]>;
}

/** The recorded iterations of one variant. */
export interface ExtrasRecord {
  memStats: Record<string, MemStatsBytes[]>;
  counts: Record<string, number[]>;
}

/**
 * Combines the reports of one iteration (`byRank` in rank order). Fields absent from every
 * report are left out, so runs without them keep their old shape.
 */
export function combineExtras(byRank: Pick<IterationReport, 'memStats' | 'counts'>[]): CombinedExtras {
  const out: CombinedExtras = {};
  const points = new Set(byRank.flatMap((r) => Object.keys(r.memStats ?? {})));
  if (points.size > 0) {
    out.memStats = {};
    for (const point of points) {
      const reported = byRank.flatMap((r) => (r.memStats?.[point] ? [r.memStats[point]] : []));
      const max = {} as MemStatsBytes;
      for (const f of MEM_FIELDS) max[f] = Math.max(...reported.map((m) => m[f]));
      out.memStats[point] = max;
    }
  }
  const names = new Set(byRank.flatMap((r) => Object.keys(r.counts ?? {})));
  if (names.size > 0) {
    out.counts = {};
    for (const name of names) out.counts[name] = byRank.map((r) => r.counts?.[name] ?? null);
  }
  return out;
}

/** Adds a recorded (non-warmup) iteration to `record` (created when undefined); returns it. */
export function addExtras(record: ExtrasRecord | undefined, combined: CombinedExtras): ExtrasRecord {
  const r = record ?? { memStats: {}, counts: {} };
  for (const [point, m] of Object.entries(combined.memStats ?? {})) (r.memStats[point] ??= []).push(m);
  for (const [name, row] of Object.entries(combined.counts ?? {})) {
    for (const v of row) if (v !== null) (r.counts[name] ??= []).push(v);
  }
  return r;
}

/**
 * A variant's summary: memStats per point, each field the median over recorded iterations of
 * the per-iteration MAX; counts as min, max, sum and n over every rank-iteration. Empty when
 * nothing was recorded.
 */
export function summarizeExtras(record: ExtrasRecord | undefined): { memStats?: Record<string, MemStatsBytes>; counts?: Record<string, CountSummary> } {
  if (!record) return {};
  const out: { memStats?: Record<string, MemStatsBytes>; counts?: Record<string, CountSummary> } = {};
  const points = Object.entries(record.memStats).filter(([, list]) => list.length > 0);
  if (points.length > 0) {
    out.memStats = {};
    for (const [point, list] of points) {
      const m = {} as MemStatsBytes;
      for (const f of MEM_FIELDS) m[f] = summarize(list.map((x) => x[f])).median;
      out.memStats[point] = m;
    }
  }
  const counts = Object.entries(record.counts).filter(([, list]) => list.length > 0);
  if (counts.length > 0) {
    out.counts = {};
    for (const [name, list] of counts) {
      out.counts[name] = { min: Math.min(...list), max: Math.max(...list), sum: list.reduce((a, b) => a + b, 0), n: list.length };
    }
  }
  return out;
}
