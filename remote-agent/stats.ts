/**
 * Summary statistics over the recorded iterations of one step (docs/METHOD.md defines them).
 */
import type { StepStats } from '../protocol/events';

/**
 * Quantile q ∈ [0, 1] of already sorted values by linear interpolation between closest ranks
 * (the same rule as numpy's default), so p50 of an even count is the mean of the middle two.
 * @throws RangeError on an empty array.
 */
export function quantileSorted(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) throw new RangeError('quantile of no values');
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = sorted[lo]!;
  const b = sorted[hi]!;
  return a + (b - a) * (pos - lo);
}

/**
 * median, p90, min, max, mean and n of `values` (ms in, ms out).
 * @throws RangeError on an empty array.
 */
export function summarize(values: readonly number[]): StepStats {
  const sorted = [...values].sort((x, y) => x - y);
  const sum = sorted.reduce((s, v) => s + v, 0);
  return {
    median: quantileSorted(sorted, 0.5),
    p90: quantileSorted(sorted, 0.9),
    min: sorted[0]!,
    max: sorted[sorted.length - 1]!,
    mean: sum / sorted.length,
    n: sorted.length,
  };
}

/** The figure of a step for one iteration: the MAX over ranks (the group's critical path). */
export function combineRanks(perRank: readonly number[]): number {
  if (perRank.length === 0) throw new RangeError('no rank reported');
  return Math.max(...perRank);
}
