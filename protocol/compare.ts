/**
 * Comparison of several runs (other hosts, NCCL libraries or environment settings): the runs are
 * aligned by experiment / variant / step, each run gets a label that tells it from the others,
 * and per step the median and p90 of every run, the ratio of its median to the first run's, and
 * whether that difference lies beyond the spread of the two runs' own samples
 * ({@link judgeDifference}, the one rule of the comparison view and the CLI table).
 *
 * Pure (no DOM, no Node): used by the CLI's comparison table, the HTML report's no-script
 * fallback and the webview's comparison view. Runs may be untrusted: missing fields are
 * tolerated, and every string is returned as data (the caller escapes it where it is shown).
 */
import type { StepPlan } from './events';
import { mannWhitney, quantileSorted, smallestRankTestP } from './rankTest';
import { isSimulatedRun, type RunExperiment, type RunFile } from './runFile';

/** One run as the comparison names it. */
export interface ComparedRunInfo {
  /** 0-based position; run 0 is the baseline of every ratio. */
  index: number;
  /** A short key for column headers: "A", "B", … ("Z", then "R27", …). */
  key: string;
  /** What tells this run from the others, e.g. "vm · NCCL 2.28.9 · NCCL_RUNTIME_CONNECT=0 · SIMULATED". */
  label: string;
  id: string;
  host: string;
  /** The host's own name from the environment stamp, when known. */
  hostname?: string;
  ncclVersion?: string;
  ncclPath?: string;
  simulated: boolean;
  status: string;
  ranks?: number;
  /** Environment stamp variables whose values differ between the runs (`undefined`: unset in this run). */
  envDiff: Record<string, string | undefined>;
}

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

/** One run's figures for one step (ms). */
export interface CompareCell {
  median: number;
  p90: number;
  n: number;
  /** median / the first run's median; undefined when either is missing, not finite, or the first is 0. */
  ratio?: number;
  /** Runs after the first, where both have the step: whether the difference is beyond the samples' spread. */
  difference?: StepDifference;
}

/** One step of one variant, across the runs: `cells[i]` is run i's figures, or null when it lacks the step. */
export interface CompareStep {
  step: string;
  label: string;
  kind?: StepPlan['kind'];
  /** True for derived steps (sums of other steps, e.g. "to first collective"). */
  derived: boolean;
  cells: (CompareCell | null)[];
}

/** One memory point of one variant, across the runs: bytes per run, or null. */
export interface CompareMemory {
  point: string;
  bytes: (number | null)[];
  ratio: (number | undefined)[];
}

export interface CompareVariant {
  variant: string;
  steps: CompareStep[];
  memory: CompareMemory[];
}

export interface CompareExperiment {
  experiment: string;
  variants: CompareVariant[];
}

export interface Comparison {
  runs: ComparedRunInfo[];
  experiments: CompareExperiment[];
  /** True when any run is simulated (see isSimulatedRun): its figures are not measurements. */
  anySimulated: boolean;
}

/** The JSON embedded in a comparison report (`<script id="commcost-compare">`). */
export interface ComparisonData {
  runs: RunFile[];
}

/** The id of the script element that carries a comparison in the HTML report. */
export const COMPARE_ELEMENT_ID = 'commcost-compare';

/** "A", "B", … "Z", then "R27", "R28", …. */
export function runKey(index: number): string {
  return index < 26 ? String.fromCharCode(65 + index) : `R${index + 1}`;
}

/** median / base; undefined unless both are finite and base is not 0. */
export function ratioOf(value: number | undefined | null, base: number | undefined | null): number | undefined {
  if (typeof value !== 'number' || typeof base !== 'number' || !Number.isFinite(value) || !Number.isFinite(base) || base === 0) return undefined;
  return value / base;
}

/**
 * The note a comparison of runs of different world sizes needs: a ratio then sets communicators
 * of different sizes side by side (a one-rank communicator has no peer to connect to), which the
 * table alone does not say. `runs`: each run's key (A, B, …) and rank count, in order.
 * @returns the sentence, or undefined when every run has the same rank count (or none is known)
 */
export function rankCountNote(runs: readonly { key: string; ranks?: number }[]): string | undefined {
  const known = runs.filter((r) => typeof r.ranks === 'number');
  if (new Set(known.map((r) => r.ranks)).size < 2) return undefined;
  return `the runs have different rank counts (${runs.map((r) => `${r.key} ${typeof r.ranks === 'number' ? r.ranks : '?'}`).join(', ')}): each ratio sets communicators of different sizes side by side, not the same call on other hardware or NCCL`;
}

/**
 * The note a comparison of simulated and measured runs needs: no ratio is given between a run of
 * one kind and a baseline (run A) of the other, since simulated figures are not measurements.
 * `runs`: each run's key and whether it is simulated (isSimulatedRun), in order.
 * @returns the sentence, or undefined when every run is of the baseline's kind
 */
export function simulatedMixNote(runs: readonly { key: string; simulated: boolean }[]): string | undefined {
  const base = runs[0];
  if (!base) return undefined;
  const other = runs.filter((r) => r.simulated !== base.simulated);
  if (other.length === 0) return undefined;
  const kind = (r: { simulated: boolean }): string => (r.simulated ? 'SIMULATED' : 'measured');
  return `no ratio is given between ${other.map((r) => r.key).join(', ')} (${kind(other[0]!)}) and ${base.key} (${kind(base)}): simulated figures are not measurements, so they are shown side by side only`;
}

/**
 * A ratio as "1.07×", "12.3×", or with two significant digits below 0.1 ("0.058×", "0.000057×"),
 * so that a ratio the figures give is never printed "0.00×"; "–" when undefined.
 */
export function formatRatio(ratio: number | undefined): string {
  if (ratio === undefined || !Number.isFinite(ratio)) return '–';
  if (ratio !== 0 && Math.abs(ratio) < 0.1) return `${Number(ratio.toPrecision(2))}×`;
  return `${ratio >= 10 ? ratio.toFixed(1) : ratio.toFixed(2)}×`;
}

/**
 * Median (mean of the two middle values for even n) and p90 (nearest rank) of samples: the same
 * definitions as the agent's summary and webview/stats.ts, used only for experiments that stopped
 * before their summary.
 */
function statsOf(samples: readonly unknown[]): { median: number; p90: number; n: number } | undefined {
  const s = samples.filter((x): x is number => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return undefined;
  const mid = Math.floor(n / 2);
  const median = n % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
  return { median, p90: s[Math.min(n - 1, Math.ceil(0.9 * n) - 1)]!, n };
}

interface StepFigures extends SpreadFigures {
  label: string;
  kind?: StepPlan['kind'];
  derived: boolean;
  median: number;
  p90: number;
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

interface VariantFigures {
  steps: Map<string, StepFigures>;
  memory: Map<string, number>;
}

const num = (x: unknown): number => (typeof x === 'number' ? x : NaN);
const finiteSamples = (x: unknown): number[] => (Array.isArray(x) ? x.filter((v): v is number => typeof v === 'number' && Number.isFinite(v)) : []);

/** variant → its steps and memory, from the summary when there is one, else from the recorded samples. */
function variantsOf(exp: RunExperiment): Map<string, VariantFigures> {
  const out = new Map<string, VariantFigures>();
  const summaries = Array.isArray(exp.variants) ? exp.variants : [];
  if (summaries.length > 0) {
    for (const v of summaries) {
      if (!v || typeof v !== 'object') continue;
      const steps = new Map<string, StepFigures>();
      for (const s of Array.isArray(v.steps) ? v.steps : []) {
        if (!s || typeof s !== 'object') continue;
        const fromSamples = s.stats ? undefined : statsOf(Array.isArray(s.samples) ? s.samples : []);
        const figures: StepFigures = {
          label: String(s.label ?? s.step),
          kind: s.kind,
          derived: s.kind === 'toFirst' || (Array.isArray(s.sumOf) && s.sumOf.length > 0),
          median: s.stats ? num(s.stats.median) : (fromSamples?.median ?? NaN),
          p90: s.stats ? num(s.stats.p90) : (fromSamples?.p90 ?? NaN),
          n: s.stats ? num(s.stats.n) : (fromSamples?.n ?? 0),
          samples: finiteSamples(s.samples),
        };
        if (s.stats && Number.isFinite(s.stats.min) && Number.isFinite(s.stats.max)) {
          figures.min = s.stats.min;
          figures.max = s.stats.max;
        }
        steps.set(String(s.step), figures);
      }
      const memory = new Map<string, number>();
      for (const [point, bytes] of Object.entries(v.memoryBytes ?? {})) if (typeof bytes === 'number') memory.set(point, bytes);
      out.set(String(v.variant), { steps, memory });
    }
    return out;
  }
  for (const [variant, bySteps] of Object.entries(exp.samples ?? {})) {
    const steps = new Map<string, StepFigures>();
    for (const [step, samples] of Object.entries(bySteps ?? {})) {
      const st = statsOf(Array.isArray(samples) ? samples : []);
      if (st) steps.set(step, { label: step, derived: false, ...st, samples: finiteSamples(samples) });
    }
    out.set(variant, { steps, memory: new Map() });
  }
  return out;
}

/** Appends the items of `next` that `order` lacks, keeping first-seen order. */
function union<T>(order: T[], next: Iterable<T>): void {
  // A Set over what is there: a run with thousands of memory points per variant stays linear.
  const seen = new Set(order);
  for (const x of next) {
    if (seen.has(x)) continue;
    seen.add(x);
    order.push(x);
  }
}

/**
 * NCCL_* variables of a stamp that configure nothing, left out of the labels: NCCL_VERSION is set
 * by NVIDIA's container images to the image's NCCL, which need not be the library a run loaded
 * (a label "NCCL 2.28.9 · NCCL_VERSION=2.28.3-1" reads as a contradiction); NCCL 2.30.7's source
 * reads no such variable (its params are NCCL_PARAM names; "VERSION" there is only an
 * NCCL_DEBUG_SUBSYS option).
 */
const NOT_SETTINGS: ReadonlySet<string> = new Set(['NCCL_VERSION']);

/** Prefix of the rank method variables (stamp.rankEnv) among a run's compared variables. */
const RANK_ENV = 'rank ';

/**
 * The variables a run is compared by: its NCCL_* / TORCH_NCCL_* variables, and the variables
 * commcost set in its rank processes (`rank NAME`, from stamp.rankEnv; "not recorded" when the
 * stamp predates rankEnv: those runs' ranks ran without MALLOC_ARENA_MAX=1).
 */
function envOf(run: RunFile, rankNames: readonly string[]): Record<string, string> {
  const env = run.stamp?.ncclEnv;
  const out: Record<string, string> = {};
  if (env && typeof env === 'object') for (const [k, v] of Object.entries(env)) if (!NOT_SETTINGS.has(k)) out[k] = String(v);
  const rankEnv = run.stamp?.rankEnv;
  if (rankEnv && typeof rankEnv === 'object') for (const [k, v] of Object.entries(rankEnv)) out[RANK_ENV + k] = String(v);
  else for (const k of rankNames) out[RANK_ENV + k] = 'not recorded';
  return out;
}

/**
 * Labels that tell the runs apart: host (the stamp's hostname, else the target) · NCCL version ·
 * the ranks when they differ · every NCCL_* / TORCH_NCCL_* variable of the stamps whose value
 * differs (`NAME=value`, `NAME unset`), and every rank method variable that differs
 * (`rank MALLOC_ARENA_MAX=1`, `… =not recorded` for runs from before the stamp had rankEnv) · "SIMULATED" for a simulated run. When two labels are
 * still equal, the NCCL path is added, then the start time, then "#n".
 */
export function describeRuns(runs: readonly RunFile[]): ComparedRunInfo[] {
  const rankNames: string[] = [];
  for (const r of runs) if (r.stamp?.rankEnv && typeof r.stamp.rankEnv === 'object') union(rankNames, Object.keys(r.stamp.rankEnv).sort());
  const envs = runs.map((r) => envOf(r, rankNames));
  const names: string[] = [];
  for (const e of envs) union(names, Object.keys(e).sort());
  const differing = names.filter((k) => new Set(envs.map((e) => e[k])).size > 1);
  const ranksDiffer = new Set(runs.map((r) => r.ranks)).size > 1;
  const infos = runs.map((run, index): ComparedRunInfo => {
    const s = run.stamp;
    const envDiff: Record<string, string | undefined> = {};
    for (const k of differing) envDiff[k] = envs[index]![k];
    const simulated = isSimulatedRun(run);
    const parts = [String(s?.hostname || run.host || '?'), s?.ncclVersion ? `NCCL ${String(s.ncclVersion)}` : 'NCCL version not recorded'];
    if (ranksDiffer) parts.push(`${typeof run.ranks === 'number' ? run.ranks : '?'} rank${run.ranks === 1 ? '' : 's'}`);
    for (const k of differing) parts.push(envDiff[k] === undefined ? `${k} unset` : `${k}=${envDiff[k]}`);
    const info: ComparedRunInfo = {
      index,
      key: runKey(index),
      label: parts.join(' · '),
      id: String(run.id ?? ''),
      host: String(run.host ?? ''),
      simulated,
      status: String(run.status ?? ''),
      envDiff,
    };
    if (s?.hostname) info.hostname = String(s.hostname);
    if (s?.ncclVersion) info.ncclVersion = String(s.ncclVersion);
    if (s?.ncclPath) info.ncclPath = String(s.ncclPath);
    if (typeof run.ranks === 'number') info.ranks = run.ranks;
    return info;
  });
  const disambiguate = (extra: (i: number) => string | undefined): void => {
    const counts = new Map<string, number>();
    for (const i of infos) counts.set(i.label, (counts.get(i.label) ?? 0) + 1);
    for (const i of infos) {
      if ((counts.get(i.label) ?? 0) < 2) continue;
      const e = extra(i.index);
      if (e) i.label = `${i.label} · ${e}`;
    }
  };
  disambiguate((i) => infos[i]!.ncclPath);
  disambiguate((i) => (runs[i]!.stamp?.startedAt ? String(runs[i]!.stamp!.startedAt) : undefined));
  disambiguate((i) => `#${i + 1}`);
  for (const i of infos) if (i.simulated) i.label += ' · SIMULATED';
  return infos;
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
 * marked (a 10% step; 1.1 is also the verdict's "about the same", client/verdict/agreement.ts
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

/**
 * Aligns `runs` by experiment, variant and step (in first-seen order, run 0 first) and gives per
 * step each run's median and p90 (the run file's own summary figures), the ratio of its median
 * to run 0's and, for the other runs, whether the difference is beyond the samples' spread
 * ({@link judgeDifference}). A run that lacks a step has null there.
 */
export function compareRuns(runs: readonly RunFile[]): Comparison {
  const perRun = runs.map((run) => {
    const m = new Map<string, Map<string, VariantFigures>>();
    for (const exp of Array.isArray(run.experiments) ? run.experiments : []) {
      if (exp && typeof exp === 'object') m.set(String(exp.experiment), variantsOf(exp));
    }
    return m;
  });
  // A ratio between a simulated run and a measured one would set a simulation against a
  // measurement: only runs of the baseline's kind (both measured, or both simulated) get one.
  const simulated = runs.map((r) => isSimulatedRun(r));
  const comparable = (i: number): boolean => simulated[i] === simulated[0];
  const experimentIds: string[] = [];
  for (const m of perRun) union(experimentIds, m.keys());
  const experiments = experimentIds.map((experiment): CompareExperiment => {
    const variantIds: string[] = [];
    for (const m of perRun) union(variantIds, m.get(experiment)?.keys() ?? []);
    const variants = variantIds.map((variant): CompareVariant => {
      const figs = perRun.map((m) => m.get(experiment)?.get(variant));
      const stepIds: string[] = [];
      const points: string[] = [];
      for (const f of figs) {
        union(stepIds, f?.steps.keys() ?? []);
        union(points, f?.memory.keys() ?? []);
      }
      const steps = stepIds.map((step): CompareStep => {
        const first = figs.map((f) => f?.steps.get(step)).find((x) => x !== undefined)!;
        const base = figs[0]?.steps.get(step);
        const cells = figs.map((f, i): CompareCell | null => {
          const x = f?.steps.get(step);
          if (!x) return null;
          const cell: CompareCell = { median: x.median, p90: x.p90, n: x.n };
          const r = comparable(i) ? ratioOf(x.median, base?.median) : undefined;
          if (r !== undefined) cell.ratio = r;
          if (r !== undefined && base && x !== base) cell.difference = judgeDifference(x, base, r);
          return cell;
        });
        const out: CompareStep = { step, label: first.label, derived: first.derived, cells };
        if (first.kind) out.kind = first.kind;
        return out;
      });
      const memory = points.map((point): CompareMemory => {
        const bytes = figs.map((f) => f?.memory.get(point) ?? null);
        return { point, bytes, ratio: bytes.map((b, i) => (comparable(i) ? ratioOf(b, bytes[0]) : undefined)) };
      });
      return { variant, steps, memory };
    });
    return { experiment, variants };
  });
  return { runs: describeRuns(runs), experiments, anySimulated: runs.some((r) => isSimulatedRun(r)) };
}
