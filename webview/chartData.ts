/**
 * The chart model of one experiment, independent of chart.js (pure, testable).
 *
 * One bar group per variant. Non-derived steps are bar segments, stacked by what they are part
 * of: "build" (call + first collective, whose stack total is "to first collective"), "teardown"
 * (finalize/destroy/abort/revoke), "steady" (a collective on a warm communicator); a step whose
 * kind is unknown (live, before the summary) gets its own stack. Segment length = median (ms).
 * Derived steps (`sumOf`) are never drawn as segments: they give the p90 whisker of the stack
 * whose segments they sum. A one-segment stack uses its own p90. The p90 of a sum is not the sum
 * of p90s, so a stack with several segments and no derived step has no whisker.
 */
import type { StepPlan } from '../protocol/events';
import { memoryPointLabel } from '../protocol/runFile';
import type { VariantView } from './stats';

export type StackId = string;

/** One dataset: one step id across variants; `data[i]` is the median (ms) for variant i or null. */
export interface SegmentSeries {
  key: string;
  label: string;
  kind: StepPlan['kind'] | 'other';
  stack: StackId;
  data: (number | null)[];
  /** In a comparison: the run this series belongs to (its colour is the run's, not the kind's). */
  runIndex?: number;
}

/** A p90 whisker: from the stack total (sum of medians) to the p90 of the stack, ms. */
export interface Whisker {
  variantIndex: number;
  stack: StackId;
  /** Sum of the stack's segment medians, ms. */
  from: number;
  /** p90, ms. */
  to: number;
  /** Which step gave the p90 ("toFirst", "call", ...). */
  source: string;
}

export interface ChartModel {
  labels: string[];
  series: SegmentSeries[];
  whiskers: Whisker[];
}

function stackOf(kind: StepPlan['kind'] | undefined, step: string): StackId {
  switch (kind) {
    case 'call':
    case 'first':
      return 'build';
    case 'teardown':
      return 'teardown';
    case 'steady':
      return 'steady';
    default:
      return `step:${step}`;
  }
}

/** Builds the chart model (see the file comment) from the variants of one experiment. */
export function chartModel(variants: readonly VariantView[]): ChartModel {
  const labels = variants.map((v) => v.variant);
  const seriesByKey = new Map<string, SegmentSeries>();
  const whiskers: Whisker[] = [];

  variants.forEach((v, vi) => {
    const segments = v.steps.filter((s) => !(s.sumOf && s.sumOf.length > 0) && s.kind !== 'toFirst');
    const byStack = new Map<StackId, typeof segments>();
    for (const s of segments) {
      const stack = stackOf(s.kind, s.step);
      const key = `${stack}/${s.step}`;
      let series = seriesByKey.get(key);
      if (!series) {
        series = { key, label: s.label, kind: s.kind ?? 'other', stack, data: new Array<number | null>(variants.length).fill(null) };
        seriesByKey.set(key, series);
      }
      series.data[vi] = Number.isFinite(s.stats.median) ? s.stats.median : null;
      const list = byStack.get(stack) ?? [];
      list.push(s);
      byStack.set(stack, list);
    }
    for (const [stack, segs] of byStack) {
      const ids = new Set(segs.map((s) => s.step));
      const from = segs.reduce((a, s) => a + (Number.isFinite(s.stats.median) ? s.stats.median : 0), 0);
      const derived = v.steps.find(
        (s) =>
          (s.sumOf && s.sumOf.length === ids.size && s.sumOf.every((id) => ids.has(id))) ||
          (stack === 'build' && s.kind === 'toFirst' && !s.sumOf),
      );
      const only = segs.length === 1 ? segs[0] : undefined;
      const source = derived ?? only;
      if (source && Number.isFinite(source.stats.p90)) {
        whiskers.push({ variantIndex: vi, stack, from, to: source.stats.p90, source: source.step });
      }
    }
  });

  // Stable order: build segments (call before first), then steady, teardown, others.
  const order = (s: SegmentSeries): number =>
    s.stack === 'build' ? (s.kind === 'call' ? 0 : 1) : s.stack === 'steady' ? 2 : s.stack === 'teardown' ? 3 : 4;
  const series = [...seriesByKey.values()].sort((a, b) => order(a) - order(b));
  return { labels, series, whiskers };
}

/**
 * The memory chart of one experiment: one bar per variant and memory point (MiB per GPU: the
 * free-memory delta, median over iterations of the per-GPU max), grouped, not stacked, in the
 * order the points were first seen (e.g. "after 1 group", "after 2 groups", … for split-share,
 * so the growth with the number of groups and the splitShare settings sit side by side).
 * @returns a model with no series when no variant has a memory point.
 */
export function memoryChartModel(variants: readonly VariantView[]): ChartModel {
  const points: string[] = [];
  for (const v of variants) for (const p of Object.keys(v.memoryBytes)) if (!points.includes(p)) points.push(p);
  const series: SegmentSeries[] = points.map((point) => ({
    key: `memory/${point}`,
    label: `memory ${memoryPointLabel(point)}`,
    kind: 'other',
    stack: `memory:${point}`,
    data: variants.map((v) => {
      const b = v.memoryBytes[point];
      return b !== undefined && Number.isFinite(b) ? b / 2 ** 20 : null;
    }),
  }));
  return { labels: variants.map((v) => v.variant), series, whiskers: [] };
}
