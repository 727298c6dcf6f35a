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
 *
 * By concern: the runs' keys, labels and notes in compareLabels.ts, the rule that marks a
 * difference in compareRule.ts; both re-exported here, so importers use this module.
 */
import type { StepPlan } from './events';
import { describeRuns, union, type ComparedRunInfo } from './compareLabels';
import { judgeDifference, type SpreadFigures, type StepDifference } from './compareRule';
import { isSimulatedRun, type RunExperiment, type RunFile } from './runFile';

export { describeRuns, rankCountNote, runKey, simulatedMixNote, type ComparedRunInfo } from './compareLabels';
export {
  clearsPracticalFloor,
  differenceRuleText,
  differenceWords,
  DIFFERENCE_LEVEL,
  isNotable,
  judgeDifference,
  PRACTICAL_FLOOR_MS,
  PRACTICAL_FLOOR_RATIO,
  type DifferenceVerdict,
  type SpreadFigures,
  type StepDifference,
} from './compareRule';

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

/** median / base; undefined unless both are finite and base is not 0. */
export function ratioOf(value: number | undefined | null, base: number | undefined | null): number | undefined {
  if (typeof value !== 'number' || typeof base !== 'number' || !Number.isFinite(value) || !Number.isFinite(base) || base === 0) return undefined;
  return value / base;
}

/**
 * A ratio as "1.07×", "12.3×", from 100 a whole number ("17010×", never "17010.0×"), or with two
 * significant digits below 0.1 ("0.058×", "0.000057×"), so that a ratio the figures give is never
 * printed "0.00×"; "–" when undefined.
 */
export function formatRatio(ratio: number | undefined): string {
  if (ratio === undefined || !Number.isFinite(ratio)) return '–';
  if (ratio !== 0 && Math.abs(ratio) < 0.1) return `${Number(ratio.toPrecision(2))}×`;
  if (Math.abs(ratio) >= 99.95) return `${Math.round(ratio)}×`;
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
