/**
 * The memory chart of an experiment with many memory points (pure, testable): past
 * {@link MEMORY_BARS_MAX} points a bar per variant and point (chartData.ts `memoryChartModel`)
 * no longer reads (thousands of bars and legend entries froze the page, issue #21), so the points
 * become the x axis, in the order they were first seen, and each variant a line: its free-memory
 * delta (MiB per GPU, median over iterations of the per-GPU max) and, where the run has it,
 * NCCL's own count (ncclCommMemStats `totalBytes`) as a dashed line of the same colour.
 *
 * The model holds every point of every line. What is drawn is thinned by chart.js's own
 * decimation plugin (LTTB, at most {@link MEMORY_LINE_SAMPLES} points per line, memoryLineChart.ts),
 * and {@link MemoryLineModel.note} says so with the counts: no point is dropped silently, and no
 * figure a reading cites (a table, a verdict) is computed from the drawn points.
 */
import type { MemStatsBytes } from '../protocol/events';
import { memoryPointLabel } from '../protocol/runFile';
import { memoryChartModel, type ChartModel } from './chartData';
import { formatCount } from './format';
import type { VariantView } from './stats';

/** The most memory points per variant still drawn as bars (chartData.ts); above, lines. */
export const MEMORY_BARS_MAX = 8;

/**
 * The most points chart.js draws per line: a line with more is decimated (LTTB keeps its first
 * and last point and picks, per bucket, the point that keeps the shape: peaks and steps).
 */
export const MEMORY_LINE_SAMPLES = 400;

/** A variant as the memory chart reads it: its free-memory delta and NCCL's count per point, bytes. */
export type MemoryVariant = Pick<VariantView, 'variant' | 'memoryBytes'> & { memStats?: Record<string, MemStatsBytes> };

/** One line: x = the point's index in {@link MemoryLineModel.points}, y = MiB per GPU; sorted by x. */
export interface MemoryLine {
  key: string;
  /** Legend text: "<variant> · free-memory delta" or "<variant> · NCCL's count (MemStats)". */
  label: string;
  /** Colour slot: the variant's index (both lines of a variant share it). */
  color: number;
  /** NCCL's count (MemStats): drawn dashed beside the free-memory delta. */
  dashed: boolean;
  data: { x: number; y: number }[];
}

export interface MemoryLineModel {
  /** Every memory point's name in the order first seen (the x axis: index → name). */
  points: string[];
  /** The same in words (memoryPointLabel), for the axis ticks and tooltips. */
  pointLabels: string[];
  lines: MemoryLine[];
  /** The most points drawn per line ({@link MEMORY_LINE_SAMPLES}). */
  samples: number;
  /** Points drawn over every line, and points the lines hold. */
  drawn: number;
  total: number;
  /** What the chart shows of the data, with the counts; empty when every point is drawn. */
  note: string;
}

/** The distinct memory points of `variants` in the order first seen (free-memory delta, then NCCL's count). */
export function memoryPoints(variants: readonly MemoryVariant[]): string[] {
  const seen = new Set<string>();
  for (const v of variants) for (const p of Object.keys(v.memoryBytes ?? {})) seen.add(p);
  for (const v of variants) for (const p of Object.keys(v.memStats ?? {})) seen.add(p);
  return [...seen];
}

/**
 * The line model of `variants`' memory points (see the file comment). Points without a finite
 * figure leave a gap in their line (they are not in its data); lines with no point are left out.
 * @param samples the most points drawn per line (default {@link MEMORY_LINE_SAMPLES}, at least 3)
 */
export function memoryLineModel(variants: readonly MemoryVariant[], samples = MEMORY_LINE_SAMPLES): MemoryLineModel {
  const points = memoryPoints(variants);
  const index = new Map(points.map((p, i) => [p, i]));
  const lines: MemoryLine[] = [];
  // One pass over each record's entries (a lookup per point in a record of 40,000 keys is slow).
  const lineOf = <T>(
    key: string,
    label: string,
    color: number,
    dashed: boolean,
    record: Record<string, T> | undefined,
    bytes: (t: T) => number | undefined,
  ): void => {
    const data: { x: number; y: number }[] = [];
    let sorted = true;
    for (const [p, t] of Object.entries(record ?? {})) {
      const b = bytes(t);
      if (b === undefined || !Number.isFinite(b)) continue;
      const x = index.get(p)!;
      if (data.length > 0 && x < data[data.length - 1]!.x) sorted = false;
      data.push({ x, y: b / 2 ** 20 });
    }
    // chart.js's decimation needs the data sorted by x.
    if (!sorted) data.sort((a, b) => a.x - b.x);
    if (data.length > 0) lines.push({ key, label, color, dashed, data });
  };
  variants.forEach((v, vi) => {
    lineOf(`memory/${v.variant}`, `${v.variant} · free-memory delta`, vi, false, v.memoryBytes, (b) => b);
    if (v.memStats) lineOf(`memstats/${v.variant}`, `${v.variant} · NCCL's count (MemStats)`, vi, true, v.memStats, (m) => m?.totalBytes);
  });
  const cap = Math.max(3, Math.floor(samples));
  const total = lines.reduce((a, l) => a + l.data.length, 0);
  const drawn = lines.reduce((a, l) => a + Math.min(cap, l.data.length), 0);
  const longest = Math.max(0, ...lines.map((l) => l.data.length));
  const same = lines.every((l) => l.data.length === longest);
  const note =
    drawn < total
      ? `Chart: ${formatCount(drawn)} of ${formatCount(total)} points drawn — each line through at most ${formatCount(cap)} of its ` +
        `${same ? '' : 'up to '}${formatCount(longest)} points (chart.js LTTB decimation keeps each line's first and last point, its peaks and steps). ` +
        'Every point is in the table below; no figure on this page is computed from the drawn points.'
      : '';
  return { points, pointLabels: points.map(memoryPointLabel), lines, samples: cap, drawn, total, note };
}

/** The memory chart of an experiment: bars per variant and point, or lines over the points. */
export type MemoryChart = { kind: 'bars'; model: ChartModel } | { kind: 'lines'; model: MemoryLineModel };

/**
 * The memory chart for `variants`: up to {@link MEMORY_BARS_MAX} points a bar per variant and point
 * (chartData.ts `memoryChartModel`, unchanged), past it a line per variant ({@link memoryLineModel}).
 */
export function memoryChartFor(variants: readonly (VariantView & { memStats?: Record<string, MemStatsBytes> })[]): MemoryChart {
  return memoryPoints(variants).length > MEMORY_BARS_MAX
    ? { kind: 'lines', model: memoryLineModel(variants) }
    : { kind: 'bars', model: memoryChartModel(variants) };
}
