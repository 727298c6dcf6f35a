/**
 * The one rule of a comparison of runs: whether a run's step differs from the first run's by more
 * than the spread of their own samples, and by enough to matter ({@link judgeDifference}), with its
 * wording ({@link differenceWords}, {@link differenceRuleText}) and the practical floor it shares
 * with the verdict's "about the same" (readings/verdict/agreement.ts). Pure; re-exported by
 * compare.ts, which applies it to every step of the runs it aligns.
 */
import { mannWhitney, quantileSorted, smallestRankTestP } from './rankTest';

/**
 * How one run's figures of a step stand against the first run's ({@link judgeDifference}):
 * - `higher` / `lower`: beyond the spread of both runs' samples (the run's median is higher /
 *   lower than the first run's);
 * - `within-spread`: not beyond it (the ratio may be noise);
 * - `below-floor`: beyond the spread, but smaller than the practical floor
 *   ({@link PRACTICAL_FLOOR_MS}, {@link PRACTICAL_FLOOR_RATIO}): statistically apart, too small to matter;
 * - `too-few-samples`: so few samples that even fully separated ones would not pass the test;
 * - `no-spread`: the run file has neither samples nor a min–max range for the step.
 */
export type DifferenceVerdict = 'higher' | 'lower' | 'within-spread' | 'below-floor' | 'too-few-samples' | 'no-spread';

export interface StepDifference {
  verdict: DifferenceVerdict;
  /** What the spread was read from: the per-iteration samples, or (files without them) the summary's min and max. */
  basis?: 'samples' | 'range';
  /** The two-sided p-value of the Mann–Whitney rank test, when it could be computed. */
  p?: number;
  /** Sample counts: this run's and the first run's. */
  n: [number, number];
}

/** What a run file holds about a step's spread: its per-iteration samples (ms), else the summary's min, max and n. */
export interface SpreadFigures {
  /** The step's median, ms (the summary's); when absent, the median of `samples` is used for the practical floor. */
  median?: number;
  /** Finite per-iteration figures, ms; empty when the file has none. */
  samples: number[];
  min?: number;
  max?: number;
  n: number;
}

/** The level below which the rank test's p-value counts (two-sided). */
export const DIFFERENCE_LEVEL = 0.05;
/** The quantiles whose range is each run's spread: the middle 80% of its samples. */
const SPREAD_QUANTILES = [0.1, 0.9] as const;

/** The [p10, p90] of samples (linear interpolation, docs/METHOD.md). */
function spreadOf(samples: readonly number[]): [number, number] {
  const s = [...samples].sort((a, b) => a - b);
  return [quantileSorted(s, SPREAD_QUANTILES[0]), quantileSorted(s, SPREAD_QUANTILES[1])];
}

/**
 * The practical floor of a notable difference, ms: a difference of medians smaller than this is
 * never marked, however well separated the samples. 0.05 ms is above what the harness itself may
 * add to a figure or move between runs: its target for an empty timed op (the clock pair around
 * the call) is < 20 µs, and the barrier's release skew (target p50 < 50 µs, `npm run bench`)
 * enters every figure of several ranks, a MAX over ranks (docs/METHOD.md, "Comparing runs").
 */
export const PRACTICAL_FLOOR_MS = 0.05;
/**
 * The practical floor of a notable ratio: a ratio inside [0.9, 1.1] (ends included) is never
 * marked (a 10% step; 1.1 is also the verdict's "about the same", readings/verdict/agreement.ts
 * SAME_FACTOR).
 */
export const PRACTICAL_FLOOR_RATIO: readonly [number, number] = [0.9, 1.1];

/** The median of `samples` (linear interpolation), undefined when there are none. */
function medianOf(samples: readonly number[]): number | undefined {
  return samples.length > 0 ? quantileSorted([...samples].sort((a, b) => a - b), 0.5) : undefined;
}

/**
 * True when a difference clears the practical floor: |Δ median| ≥ {@link PRACTICAL_FLOOR_MS} and
 * the ratio outside [0.9, 1.1]. When a median is unknown (a file with neither summary medians nor
 * samples) only the ratio is checked.
 * @param x the run's figures; base the first run's; ratio x's median / base's median
 */
export function clearsPracticalFloor(x: SpreadFigures, base: SpreadFigures, ratio: number): boolean {
  if (ratio >= PRACTICAL_FLOOR_RATIO[0] && ratio <= PRACTICAL_FLOOR_RATIO[1]) return false;
  const a = x.median ?? medianOf(x.samples);
  const b = base.median ?? medianOf(base.samples);
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b)) return true;
  return Math.abs(a - b) >= PRACTICAL_FLOOR_MS;
}

/**
 * Whether a run's step differs from the first run's by more than the spread their own samples
 * show, and by enough to matter. With per-iteration samples in both files: beyond the spread when
 * their p10–p90 ranges do not overlap and the two-sided Mann–Whitney rank test gives p <
 * {@link DIFFERENCE_LEVEL}; "too few samples" when even fully separated samples of these sizes
 * could not give that p (e.g. 3 against 3, or 1 against fewer than 40). Without samples (older or
 * hand-made files): the same with the summaries' min–max ranges, where non-overlap means fully
 * separated samples. A difference beyond the spread is notable (higher / lower, by the ratio of
 * the medians) only when it also clears the practical floor ({@link clearsPracticalFloor}:
 * |Δ median| ≥ 0.05 ms and the ratio outside [0.9, 1.1]); otherwise `below-floor`. Within one
 * run all samples come from one set of rank processes: a difference beyond them can still be the
 * spread between process sets (docs/METHOD.md).
 * @param x the run's figures; base the first run's; ratio x's median / base's median
 */
export function judgeDifference(x: SpreadFigures, base: SpreadFigures, ratio: number): StepDifference {
  const direction: DifferenceVerdict = ratio >= 1 ? 'higher' : 'lower';
  const beyond = (): DifferenceVerdict => (clearsPracticalFloor(x, base, ratio) ? direction : 'below-floor');
  if (x.samples.length > 0 && base.samples.length > 0) {
    const n: [number, number] = [x.samples.length, base.samples.length];
    if (smallestRankTestP(n[0], n[1]) >= DIFFERENCE_LEVEL) return { verdict: 'too-few-samples', basis: 'samples', n };
    const { p } = mannWhitney(x.samples, base.samples);
    const [xLo, xHi] = spreadOf(x.samples);
    const [bLo, bHi] = spreadOf(base.samples);
    const apart = xLo > bHi || xHi < bLo;
    return { verdict: apart && p < DIFFERENCE_LEVEL && ratio !== 1 ? beyond() : 'within-spread', basis: 'samples', p, n };
  }
  const n: [number, number] = [Number.isFinite(x.n) ? x.n : 0, Number.isFinite(base.n) ? base.n : 0];
  if (x.min === undefined || x.max === undefined || base.min === undefined || base.max === undefined || n[0] < 1 || n[1] < 1) return { verdict: 'no-spread', n };
  const smallest = smallestRankTestP(n[0], n[1]);
  if (smallest >= DIFFERENCE_LEVEL) return { verdict: 'too-few-samples', basis: 'range', n };
  const apart = x.min > base.max || x.max < base.min;
  return apart && ratio !== 1 ? { verdict: beyond(), basis: 'range', p: smallest, n } : { verdict: 'within-spread', basis: 'range', n };
}

/** True when the difference is beyond the samples' spread and clears the practical floor (the comparison marks it). */
export function isNotable(d: StepDifference | undefined): boolean {
  return d?.verdict === 'higher' || d?.verdict === 'lower';
}

/** A few words for a difference next to its ratio: "beyond spread", "too few samples", "no spread", or "" (within the spread, or below the practical floor). */
export function differenceWords(d: StepDifference | undefined): string {
  switch (d?.verdict) {
    case 'higher':
    case 'lower':
      return 'beyond spread';
    case 'too-few-samples':
      return 'too few samples';
    case 'no-spread':
      return 'no spread';
    default:
      return '';
  }
}

/**
 * How the comparison decides that a ratio is notable, in one paragraph (the comparison view, the
 * CLI table and docs/METHOD.md say it the same way).
 */
export function differenceRuleText(): string {
  return (
    `A ratio is marked only when the difference is beyond the spread of both runs' own per-iteration samples: ` +
    `their p10–p90 ranges do not overlap and a two-sided Mann–Whitney rank test of the samples gives p < ${DIFFERENCE_LEVEL} ` +
    `(for files without samples: their min–max ranges do not overlap), and it is larger than a practical floor: ` +
    `the medians differ by at least ${PRACTICAL_FLOOR_MS} ms and their ratio is outside [${PRACTICAL_FLOOR_RATIO[0]}, ${PRACTICAL_FLOOR_RATIO[1]}] ` +
    `(what the harness may add to a figure or move between runs is below that). "too few samples": not enough iterations for that test ` +
    `to tell anything (e.g. 3 against 3). Memory is not judged: a run keeps one figure per point. ` +
    `All samples of a run come from one set of rank processes, so a marked difference can still be the spread between ` +
    `process sets (docs/METHOD.md): measure again before reading it as the library's.`
  );
}
