/**
 * The statistics behind "is this difference beyond the spread of the samples?" in a comparison
 * of runs (protocol/compare.ts): the Mann–Whitney rank test of two sets of per-iteration figures
 * and linearly interpolated quantiles. Pure; imports nothing.
 */

/**
 * Quantile `q` (0…1) of sorted finite values, interpolating linearly between the closest ranks
 * (numpy's default, the definition of docs/METHOD.md). NaN for no values.
 */
export function quantileSorted(sorted: readonly number[], q: number): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  const h = (n - 1) * Math.min(1, Math.max(0, q));
  const lo = Math.floor(h);
  const a = sorted[lo]!;
  const b = sorted[Math.min(n - 1, lo + 1)]!;
  return a + (h - lo) * (b - a);
}

/** ln C(a, b). */
function lnChoose(a: number, b: number): number {
  let s = 0;
  for (let i = 1; i <= b; i++) s += Math.log(a - b + i) - Math.log(i);
  return s;
}

/**
 * The smallest two-sided p-value the exact Mann–Whitney test can give for samples of sizes `m`
 * and `n` (when every value of one lies beyond every value of the other): 2 / C(m+n, m), at
 * most 1. With so few samples that this is not below a level, no difference can be told at it.
 */
export function smallestRankTestP(m: number, n: number): number {
  if (m < 1 || n < 1) return 1;
  return Math.min(1, 2 * Math.exp(-lnChoose(m + n, Math.min(m, n))));
}

/** Exact tail counts of U is only computed up to this m·n (beyond it: the normal approximation). */
const EXACT_MAX_PAIRS = 2500;

/**
 * P(U ≤ u) under the null hypothesis, exact, for sizes m, n without ties: counts of the
 * arrangements with each U by the recurrence N(i, j, u) = N(i−1, j, u−j) + N(i, j−1, u).
 */
function exactLowerTail(m: number, n: number, u: number): number {
  // cols[i] = counts by U for i values of the first sample and j of the second (j grows).
  let cols: Float64Array[] = [];
  for (let i = 0; i <= m; i++) cols.push(Float64Array.of(1)); // j = 0: only U = 0
  for (let j = 1; j <= n; j++) {
    const next: Float64Array[] = [Float64Array.of(1)]; // i = 0: only U = 0
    for (let i = 1; i <= m; i++) {
      const out = new Float64Array(i * j + 1);
      const left = next[i - 1]!; // N(i−1, j, ·), shifted by j
      const up = cols[i]!; // N(i, j−1, ·)
      for (let k = 0; k < left.length; k++) out[k + j] = out[k + j]! + left[k]!;
      for (let k = 0; k < up.length; k++) out[k] = out[k]! + up[k]!;
      next.push(out);
    }
    cols = next;
  }
  const counts = cols[m]!;
  let total = 0;
  let below = 0;
  for (let k = 0; k < counts.length; k++) {
    total += counts[k]!;
    if (k <= u) below += counts[k]!;
  }
  return below / total;
}

/** Φ(z), the standard normal distribution function (Abramowitz–Stegun 7.1.26, error < 1.5e-7). */
function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const erf = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return z >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/** The result of {@link mannWhitney}. */
export interface RankTest {
  /** U of the first sample: pairs where its value is the larger (ties count ½). */
  u: number;
  /** Two-sided p-value. */
  p: number;
  /** exact: the distribution of U counted (no ties, m·n ≤ 2500); normal: the normal approximation with tie and continuity corrections. */
  method: 'exact' | 'normal';
}

/**
 * The two-sided Mann–Whitney U test (Wilcoxon rank-sum) of two samples of finite numbers: how
 * likely a separation at least this strong is when both samples come from one distribution.
 * @throws RangeError when a sample is empty
 */
export function mannWhitney(x: readonly number[], y: readonly number[]): RankTest {
  const m = x.length;
  const n = y.length;
  if (m === 0 || n === 0) throw new RangeError('mannWhitney needs at least one value in each sample');
  const all = [...x.map((v) => ({ v, first: true })), ...y.map((v) => ({ v, first: false }))].sort((a, b) => a.v - b.v);
  // Mid-ranks; the tie term Σ(t³ − t) for the variance.
  let rankSum = 0;
  let tieTerm = 0;
  for (let i = 0; i < all.length; ) {
    let j = i;
    while (j + 1 < all.length && all[j + 1]!.v === all[i]!.v) j++;
    const rank = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) if (all[k]!.first) rankSum += rank;
    const t = j - i + 1;
    tieTerm += t * t * t - t;
    i = j + 1;
  }
  const u = rankSum - (m * (m + 1)) / 2;
  const mean = (m * n) / 2;
  if (tieTerm === 0 && m * n <= EXACT_MAX_PAIRS) {
    const lower = Math.min(u, m * n - u); // the distribution of U is symmetric
    return { u, p: Math.min(1, 2 * exactLowerTail(m, n, lower)), method: 'exact' };
  }
  const N = m + n;
  const variance = ((m * n) / 12) * (N + 1 - tieTerm / (N * (N - 1)));
  if (variance <= 0) return { u, p: 1, method: 'normal' };
  const z = Math.max(0, Math.abs(u - mean) - 0.5) / Math.sqrt(variance);
  return { u, p: Math.min(1, 2 * (1 - normalCdf(z))), method: 'normal' };
}
