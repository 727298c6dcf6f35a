/**
 * The chart model of one experiment, independent of chart.js (pure, testable).
 *
 * One bar group per variant (a category of the y axis); inside it one horizontal bar per thing
 * measured, side by side (one variant: one row per bar, named on the axis). What stacks is decided by the run's data, never by step names or kinds:
 * a derived step (`sumOf`, e.g. total = call + first collective) declares that its parts add up,
 * so its parts are the segments of one bar (in `sumOf` order) and the derived step itself is not
 * drawn again: it gives the bar's p90 whisker. Every other step is a bar of its own: alternatives
 * (the pool's rebuild vs its switch vs a steady collective) and steps that run at the same time on
 * different ranks (C5's `release` on the survivors and `excludedRelease` on the excluded rank) are
 * never summed. A derived step whose parts are missing, derived themselves or already the parts of
 * an earlier sum is drawn as a bar of its own median. Segment length = median (ms).
 *
 * Each series (one chart.js dataset) is one step with one label: variants whose step of the same
 * id has another label (`ncclCommDestroy` vs `ncclCommAbort` of the parent) get series of their
 * own, so the legend names what each colour is. Series with the same label share a colour slot.
 * The chart's height follows the bars per group and the legend rows ({@link chartHeight}).
 */
import type { MemStatsBytes, StepPlan } from '../protocol/events';
import { memoryPointLabel } from '../protocol/runFile';
import type { StepView, VariantView } from './stats';

/** The bar a series is drawn in: `sum:<derived step id>` or `step:<step id>` (one per run in a comparison). */
export type StackId = string;

/** One dataset: one step with one label across variants; `data[i]` is the median (ms) for variant i or null. */
export interface SegmentSeries {
  key: string;
  /** The step's own label (the legend text). */
  label: string;
  kind: StepPlan['kind'] | 'other';
  stack: StackId;
  data: (number | null)[];
  /** Colour slot: series with the same label share one; a comparison uses the run's index. */
  color?: number;
  /** In a comparison: the run this series belongs to (its colour is the run's, not the kind's). */
  runIndex?: number;
  /** False when the axis already names the series (a bar of one step in a one-variant chart): no legend entry. */
  inLegend?: boolean;
}

/** A p90 whisker: from the bar's end (sum of its medians) to the p90 of what the bar shows, ms. */
export interface Whisker {
  variantIndex: number;
  stack: StackId;
  /** Sum of the bar's segment medians, ms. */
  from: number;
  /** p90, ms. */
  to: number;
  /** Which step gave the p90 ("total", "call", ...). */
  source: string;
}

export interface ChartModel {
  labels: string[];
  series: SegmentSeries[];
  whiskers: Whisker[];
  /**
   * The figure written past each bar that stacks the parts of a derived step: that step's own
   * median (ms), the figure the step table shows for it — never the sum of the parts' medians,
   * which differs from it (the median of a sum is not the sum of medians). Bars not listed write
   * their own length (one step, or a memory point).
   */
  values?: BarValue[];
}

/** The figure written past one bar: the median of the derived step its segments add up to. */
export interface BarValue {
  variantIndex: number;
  stack: StackId;
  /** The derived step's own median, ms (the table's figure). */
  value: number;
  /** The derived step's id ("total"). */
  source: string;
}

/** One bar of one variant: its segments (parts of one sum, or one step) and the step whose p90 it shows. */
interface Bar {
  id: StackId;
  parts: StepView[];
  /** The derived step the parts add up to, when the bar is a sum. */
  sum?: StepView;
  /** Position in the variant's step list (bars are ordered by their first step). */
  at: number;
}

const hasSum = (s: StepView): boolean => Array.isArray(s.sumOf) && s.sumOf.length > 0;

/** The bars of one variant (see the file comment). */
function barsOf(steps: readonly StepView[]): Bar[] {
  const index = new Map(steps.map((s, i) => [s.step, i]));
  const claimed = new Set<string>();
  const bars: Bar[] = [];
  for (const s of steps) {
    if (!hasSum(s)) continue;
    const ids = s.sumOf!;
    const parts = ids.map((id) => steps[index.get(id) ?? -1]);
    const drawable =
      new Set(ids).size === ids.length && parts.every((p): p is StepView => p !== undefined && !hasSum(p) && !claimed.has(p.step));
    if (drawable) {
      for (const p of parts as StepView[]) claimed.add(p.step);
      bars.push({ id: `sum:${s.step}`, parts: parts as StepView[], sum: s, at: Math.min(...ids.map((id) => index.get(id)!)) });
    } else {
      bars.push({ id: `step:${s.step}`, parts: [s], at: index.get(s.step)! });
    }
  }
  steps.forEach((s, i) => {
    if (!hasSum(s) && !claimed.has(s.step)) bars.push({ id: `step:${s.step}`, parts: [s], at: i });
  });
  return bars.sort((a, b) => a.at - b.at);
}

const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);

/**
 * Builds the chart model (see the file comment) from the variants of one experiment. With several
 * variants each variant is a group of the y axis holding its bars; with one variant each bar is a
 * row of its own, named on the axis (a sum by its derived step's label, e.g. "on-demand rebuild
 * of TP1 to first collective"), and only the parts of sums are in the legend.
 */
export function chartModel(variants: readonly VariantView[]): ChartModel {
  const perVariant = variants.map((v) => barsOf(v.steps));
  const rows = variants.length === 1;
  // A category is a variant, or (one variant) a bar of it.
  const categories = rows
    ? perVariant[0]!.map((bar) => ({ label: (bar.sum ?? bar.parts[0]!).label, bars: [bar] }))
    : variants.map((v, vi) => ({ label: v.variant, bars: perVariant[vi]! }));
  const seriesByKey = new Map<string, SegmentSeries>();
  const whiskers: Whisker[] = [];
  const values: BarValue[] = [];

  // Series order: bars in order of first appearance, and inside a bar the parts in sum order
  // (chart.js stacks datasets in their order, so the call comes before its first collective).
  const stackOrder = new Map<StackId, number>();
  const partOrder = new Map<string, number>();
  categories.forEach((cat, ci) => {
    for (const bar of cat.bars) {
      if (!stackOrder.has(bar.id)) stackOrder.set(bar.id, stackOrder.size);
      bar.parts.forEach((s, pi) => {
        const key = `${bar.id}|${s.step}|${s.label}`;
        if (!partOrder.has(key)) partOrder.set(key, pi);
        let series = seriesByKey.get(key);
        if (!series) {
          series = { key, label: s.label, kind: s.kind ?? 'other', stack: bar.id, data: new Array<number | null>(categories.length).fill(null) };
          if (rows && bar.parts.length === 1) series.inLegend = false;
          seriesByKey.set(key, series);
        }
        series.data[ci] = finite(s.stats.median);
      });
      const from = bar.parts.reduce((a, s) => a + (Number.isFinite(s.stats.median) ? s.stats.median : 0), 0);
      // The p90 of a sum is not the sum of p90s: a bar of several parts shows its derived step's p90.
      const source = bar.sum ?? (bar.parts.length === 1 ? bar.parts[0] : undefined);
      if (source && Number.isFinite(source.stats.p90)) whiskers.push({ variantIndex: ci, stack: bar.id, from, to: source.stats.p90, source: source.step });
      // The label of a sum is the derived step's own median (the table's figure), not `from`.
      if (bar.sum && Number.isFinite(bar.sum.stats.median)) values.push({ variantIndex: ci, stack: bar.id, value: bar.sum.stats.median, source: bar.sum.step });
    }
  });
  // Colours by first appearance in the variants' own step order (the first collective keeps the
  // same colour whichever call came before it), then the series sorted for stacking.
  const ordered = withColors([...seriesByKey.values()])
    .map((series, i) => ({ series, i }))
    .sort((a, b) => stackOrder.get(a.series.stack)! - stackOrder.get(b.series.stack)! || partOrder.get(a.series.key)! - partOrder.get(b.series.key)! || a.i - b.i)
    .map((x) => x.series);
  return { labels: categories.map((c) => c.label), series: ordered, whiskers, values };
}

/** The colour slot of a bar the axis names (not in the legend): the theme's neutral colour. */
export const NEUTRAL_SLOT = -1;

/**
 * Gives every series the colour slot of its label (first seen, first slot); series the axis names
 * (one-variant charts: a bar of one step) take {@link NEUTRAL_SLOT}, so every colour but the
 * neutral one is named in the legend.
 */
function withColors(series: SegmentSeries[]): SegmentSeries[] {
  const slots = new Map<string, number>();
  for (const s of series) if (s.inLegend !== false && !slots.has(s.label)) slots.set(s.label, slots.size);
  return series.map((s) => ({ ...s, color: s.inLegend === false ? NEUTRAL_SLOT : slots.get(s.label)! }));
}

/**
 * The memory chart of one experiment: one bar per variant and memory point (MiB per GPU: the
 * free-memory delta, median over iterations of the per-GPU max), grouped, not stacked, in the
 * order the points were first seen (e.g. "after 1 group", "after 2 groups", … for split-share,
 * so the growth with the number of groups and the splitShare settings sit side by side). Where a
 * variant has ncclCommMemStats at a point (`memStats`, NCCL ≥ 2.29.7), NCCL's own count of it
 * (`totalBytes`) is a bar of its own right after that point's, in a series named "NCCL's count
 * (MemStats) <point>": the two are never summed, and a point without the count has no such bar.
 * Past a few points bars no longer read: the view draws lines instead (memoryLineData.ts).
 * @returns a model with no series when no variant has a memory point.
 */
export function memoryChartModel(variants: readonly (VariantView & { memStats?: Record<string, MemStatsBytes> })[]): ChartModel {
  const seen = new Set<string>();
  for (const v of variants) for (const p of Object.keys(v.memoryBytes)) seen.add(p);
  for (const v of variants) for (const p of Object.keys(v.memStats ?? {})) seen.add(p);
  const points = [...seen];
  const mib = (b: number | undefined): number | null => (b !== undefined && Number.isFinite(b) ? b / 2 ** 20 : null);
  const series: SegmentSeries[] = points.flatMap((point) => {
    const out: SegmentSeries[] = [];
    if (variants.some((v) => v.memoryBytes[point] !== undefined)) {
      out.push({
        key: `memory/${point}`,
        label: `memory ${memoryPointLabel(point)}`,
        kind: 'other',
        stack: `memory:${point}`,
        data: variants.map((v) => mib(v.memoryBytes[point])),
      });
    }
    if (variants.some((v) => v.memStats?.[point] !== undefined)) {
      out.push({
        key: `memstats/${point}`,
        label: `${MEM_STATS_LABEL} ${memoryPointLabel(point)}`,
        kind: 'other',
        stack: `memstats:${point}`,
        data: variants.map((v) => mib(v.memStats?.[point]?.totalBytes)),
      });
    }
    return out;
  });
  return { labels: variants.map((v) => v.variant), series: withColors(series), whiskers: [] };
}

/** The legend's words for NCCL's own count of its memory (ncclCommMemStats) beside the free-memory delta. */
export const MEM_STATS_LABEL = "NCCL's count (MemStats)";

/** The end of each drawn bar: its total (sum of its segments, where it ends) and the figure written beside it. */
export interface BarEnd {
  variantIndex: number;
  stack: StackId;
  /** Sum of the bar's segments (ms or MiB): where the bar ends on the axis. */
  total: number;
  /**
   * The figure written past the bar: for a bar of a derived step's parts, that step's own median
   * ({@link ChartModel.values}, the step table's figure); else `total`.
   */
  value: number;
}

/** Every bar that has data, per variant in series order, with the figure written past it (pure). */
export function barEnds(model: ChartModel): BarEnd[] {
  const out: BarEnd[] = [];
  model.labels.forEach((_, vi) => {
    const totals = new Map<StackId, number>();
    for (const s of model.series) {
      const x = s.data[vi];
      if (x === null || x === undefined || !Number.isFinite(x)) continue;
      totals.set(s.stack, (totals.get(s.stack) ?? 0) + x);
    }
    for (const [stack, total] of totals) {
      const written = model.values?.find((v) => v.variantIndex === vi && v.stack === stack)?.value;
      out.push({ variantIndex: vi, stack, total, value: written ?? total });
    }
  });
  return out;
}

/**
 * The x axis end that shows every bar and whisker with room for the value written past it: the
 * largest bar total or p90, plus `room` (a fraction of it). 0 when there is nothing to draw.
 */
export function axisMax(model: ChartModel, room = 0.14): number {
  const top = Math.max(0, ...barEnds(model).map((b) => Math.max(b.total, b.value)), ...model.whiskers.map((w) => (Number.isFinite(w.to) ? w.to : 0)));
  return top * (1 + room);
}

/** Sizes of the chart's parts, px (the layout {@link chartHeight} adds up). */
export const CHART_LAYOUT = {
  /** Height per bar inside a group (chart.js draws the bar about 70% of it). */
  barPx: 18,
  /** Extra height per group, between groups. */
  groupPadPx: 8,
  /** Height per legend row (12 px box, 12 px text, padding). */
  legendRowPx: 22,
  /** x axis ticks and title, and the chart's padding. */
  axisPx: 64,
  /** Average advance of one legend character at 12 px (a little over: a row too many is harmless, one too few overlaps). */
  charPx: 7,
  /** A legend item beside its text: box, gap, padding. */
  legendItemPx: 28,
  /** The smallest chart. */
  minPx: 120,
} as const;

/** The legend texts as chart.js shows them: one per label (series sharing a label share an entry), none for series the axis names. */
export function legendLabels(model: ChartModel): string[] {
  return [...new Set(model.series.filter((s) => s.inLegend !== false).map((s) => s.label))];
}

/**
 * How many rows the legend takes in a chart `widthPx` wide: items are laid out left to right and
 * wrap, as chart.js does, with the text width estimated from its length ({@link CHART_LAYOUT}).
 */
export function legendRows(model: ChartModel, widthPx: number): number {
  const items = legendLabels(model).map((t) => CHART_LAYOUT.legendItemPx + t.length * CHART_LAYOUT.charPx);
  if (items.length === 0) return 0;
  const width = Math.max(120, widthPx);
  let rows = 1;
  let used = 0;
  for (const w of items) {
    if (used > 0 && used + w > width) {
      rows++;
      used = 0;
    }
    used += w;
  }
  return rows;
}

/** The most bars any one group has (chart.js gives every group the same height). */
export function barsPerGroup(model: ChartModel): number {
  let most = 1;
  model.labels.forEach((_, vi) => {
    const stacks = new Set(model.series.filter((s) => s.data[vi] !== null && s.data[vi] !== undefined).map((s) => s.stack));
    most = Math.max(most, stacks.size);
  });
  return most;
}

/**
 * Height in px of a chart `widthPx` wide (default 900, the widest a chart is drawn): every group
 * gets room for its bars ({@link barsPerGroup}), plus the legend's rows ({@link legendRows}) and
 * the x axis. Pure: the view calls it again when the width changes.
 */
export function chartHeight(model: ChartModel, widthPx = 900): number {
  const groups = Math.max(1, model.labels.length);
  const plot = groups * (barsPerGroup(model) * CHART_LAYOUT.barPx + CHART_LAYOUT.groupPadPx);
  return Math.max(CHART_LAYOUT.minPx, Math.ceil(plot + legendRows(model, widthPx) * CHART_LAYOUT.legendRowPx + CHART_LAYOUT.axisPx));
}
