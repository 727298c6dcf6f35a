/**
 * A bench row's verdict from distributions (issue #31): **met**, **not met**, or **cannot tell**
 * when the noise is larger than the distance between the figure and its target. Pure: no clock,
 * no I/O, no randomness; test/unit/benchVerdict.test.ts holds it to its rules.
 *
 * The figure a target names (a quantile of one set of samples, the difference or the ratio of two
 * sets' medians) is given with an interval that says how far it could move with other samples of
 * the same conditions:
 *   - a quantile: the distribution-free 95% interval of order statistics — the values at ranks
 *     n·q ∓ 1.96·√(n·q·(1−q)) of the sorted samples (no shape assumed; few samples give a wide
 *     interval, down to min…max);
 *   - a difference of medians a − b: [lo(a) − hi(b), hi(a) − lo(b)];
 *   - a ratio of medians a / b (b > 0): [lo(a) / hi(b), hi(a) / lo(b)];
 *   - a ratio of pairs measured in turns: the median of a[i] / b[i] and its quantile interval.
 * The rule, one for every row: a target "below L" is **met** when the whole interval is below L,
 * **not met** when the whole interval is at or above L, and **cannot tell** when L lies inside the
 * interval (the noise is larger than the effect's distance to the target). "Above L" is the mirror.
 * A row of several targets is not met when one is, else cannot tell when one is, else met.
 * A target never changes with the conditions: a cause (fewer CPUs than ranks) is said beside a
 * "not met", never swapped for an easier target.
 */

/** The three verdicts of a measured row. */
export type Verdict = 'met' | 'not met' | 'cannot tell';

/** A figure and the interval it could take with other samples of the same conditions. */
export interface Estimate {
  value: number;
  lo: number;
  hi: number;
}

/** A target on one figure: below (`<`, `≤`) or above (`>`, `≥`) a limit. */
export interface Bound {
  op: '<' | '≤' | '>' | '≥';
  limit: number;
}

/** One figure judged against its bound, with the words that say so. */
export interface Judgement {
  verdict: Verdict;
  estimate: Estimate;
  bound: Bound;
  /** e.g. "p50 7.20 [6.90, 7.50] < 10: met". */
  text: string;
}

/** The z of a two-sided 95% interval. */
export const Z95 = 1.96;

function sorted(values: readonly number[]): number[] {
  if (values.length === 0) throw new RangeError('an estimate of no values');
  if (values.some((v) => !Number.isFinite(v))) throw new RangeError('an estimate of a value that is not a finite number');
  return [...values].sort((a, b) => a - b);
}

/** The q-quantile of sorted values, linear between the two nearest ranks (as remote-agent/stats.ts quantileSorted). */
function quantileOf(s: readonly number[], q: number): number {
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  return s[lo]! + (s[Math.ceil(pos)]! - s[lo]!) * (pos - lo);
}

/**
 * The q-quantile of `values` with its distribution-free interval: the order statistics at ranks
 * n·q ∓ z·√(n·q·(1−q)), clamped to the smallest and largest value.
 * @throws RangeError on no values, a value that is not finite, or q outside [0, 1]
 */
export function quantileEstimate(values: readonly number[], q: number, z = Z95): Estimate {
  if (!(q >= 0 && q <= 1)) throw new RangeError(`quantile ${q} is outside [0, 1]`);
  const s = sorted(values);
  const n = s.length;
  const half = z * Math.sqrt(n * q * (1 - q));
  // Ranks are 1-based in the textbook form; index = rank − 1.
  const loIdx = Math.max(0, Math.min(n - 1, Math.floor(n * q - half) - 1));
  const hiIdx = Math.max(0, Math.min(n - 1, Math.ceil(n * q + half) - 1));
  const value = quantileOf(s, q);
  return { value, lo: Math.min(s[loIdx]!, value), hi: Math.max(s[hiIdx]!, value) };
}

/** median(a) − median(b) with [lo(a) − hi(b), hi(a) − lo(b)] from each median's interval. */
export function differenceEstimate(a: readonly number[], b: readonly number[], z = Z95): Estimate {
  const ea = quantileEstimate(a, 0.5, z);
  const eb = quantileEstimate(b, 0.5, z);
  return { value: ea.value - eb.value, lo: ea.lo - eb.hi, hi: ea.hi - eb.lo };
}

/**
 * median(a) / median(b) with [lo(a) / hi(b), hi(a) / lo(b)].
 * @throws RangeError when a value of `b` is not above 0 (a ratio to it says nothing)
 */
export function ratioEstimate(a: readonly number[], b: readonly number[], z = Z95): Estimate {
  if (b.some((v) => !(v > 0))) throw new RangeError('a ratio to a value that is not above 0');
  const ea = quantileEstimate(a, 0.5, z);
  const eb = quantileEstimate(b, 0.5, z);
  return { value: ea.value / eb.value, lo: ea.lo / eb.hi, hi: ea.hi / eb.lo };
}

/**
 * The median of the ratios of pairs a[i] / b[i] measured in turns, with its order-statistic
 * interval: the load a pair shares (the machine busy for both) divides out, so the interval is
 * the noise of the ratio itself, narrower than {@link ratioEstimate}'s when the load drifts.
 * @throws RangeError when the sets differ in length or a value of `b` is not above 0
 */
export function pairedRatioEstimate(a: readonly number[], b: readonly number[], z = Z95): Estimate {
  if (a.length !== b.length) throw new RangeError(`pairs of ${a.length} and ${b.length} values`);
  if (b.some((v) => !(v > 0))) throw new RangeError('a ratio to a value that is not above 0');
  return quantileEstimate(a.map((v, i) => v / b[i]!), 0.5, z);
}

/** A fixed figure (counted, not sampled): no noise. */
export function exactEstimate(value: number): Estimate {
  return { value, lo: value, hi: value };
}

function fmt(v: number, digits: number): string {
  return v.toFixed(digits);
}

/**
 * Judges one figure against its bound (the rule in this module's comment).
 * @param label the figure's name in the text, e.g. "p50" or "traced − untraced"
 */
export function judge(label: string, e: Estimate, bound: Bound, digits = 2): Judgement {
  const { op, limit } = bound;
  const below = op === '<' || op === '≤';
  const inside = (v: number): boolean => (op === '<' ? v < limit : op === '≤' ? v <= limit : op === '>' ? v > limit : v >= limit);
  // The whole interval on the target's side: met; the whole interval on the other side: not met.
  const [near, far] = below ? [e.hi, e.lo] : [e.lo, e.hi];
  const verdict: Verdict = inside(near) ? 'met' : !inside(far) ? 'not met' : 'cannot tell';
  const interval = e.lo === e.hi ? '' : ` [${fmt(e.lo, digits)}, ${fmt(e.hi, digits)}]`;
  const why = verdict === 'cannot tell' ? ` (${fmt(limit, digits)} is inside the interval: the noise is larger than the effect)` : '';
  return { verdict, estimate: e, bound, text: `${label} ${fmt(e.value, digits)}${interval} ${op} ${fmt(limit, digits)}: ${verdict}${why}` };
}

/** A row of several targets: not met when one is, else cannot tell when one is, else met. @throws RangeError on none */
export function combine(parts: readonly Judgement[]): Verdict {
  if (parts.length === 0) throw new RangeError('a verdict of no targets');
  if (parts.some((p) => p.verdict === 'not met')) return 'not met';
  if (parts.some((p) => p.verdict === 'cannot tell')) return 'cannot tell';
  return 'met';
}

/** One target on a quantile of a sample set, e.g. { q: 0.5, op: '<', limit: 10 } for "p50 < 10". */
export interface QuantileTarget extends Bound {
  q: number;
}

/**
 * Judges quantile targets of one sample set ("p50 < 10, p99 < 50") and combines them.
 * @returns the row's verdict and one text per target, joined by "; "
 */
export function judgeQuantiles(values: readonly number[], targets: readonly QuantileTarget[], digits = 2): { verdict: Verdict; parts: Judgement[]; text: string } {
  const parts = targets.map((t) => judge(`p${Math.round(t.q * 100)}`, quantileEstimate(values, t.q), { op: t.op, limit: t.limit }, digits));
  return { verdict: combine(parts), parts, text: parts.map((p) => p.text).join('; ') };
}
