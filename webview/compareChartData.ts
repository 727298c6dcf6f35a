/**
 * The chart model of one experiment in a comparison (pure, testable): one bar group per step
 * (a row "variant · step"), one bar per run in the run's colour, length = the run's median (ms),
 * with a whisker from the median to the run's p90. It is a {@link ChartModel}, drawn by the same
 * chart code as a single run: each run is its own stack, so the bars of a row stand side by side.
 */
import type { CompareExperiment, ComparedRunInfo } from '../protocol/compare';
import type { ChartModel, SegmentSeries, Whisker } from './chartData';

/** The row label of a step: "variant · step label", or the step label alone for a single "default" variant. */
export function compareRowLabel(exp: CompareExperiment, variant: string, stepLabel: string): string {
  return exp.variants.length === 1 && variant === 'default' ? stepLabel : `${variant} · ${stepLabel}`;
}

/** Builds the grouped-bar model of `exp` for `runs` (see the file comment). */
export function compareChartModel(exp: CompareExperiment, runs: readonly ComparedRunInfo[]): ChartModel {
  const rows = exp.variants.flatMap((v) => v.steps.map((s) => ({ label: compareRowLabel(exp, v.variant, s.label), step: s })));
  const series: SegmentSeries[] = runs.map((r, ri) => ({
    key: `run${ri}`,
    label: `${r.key}: ${r.label}`,
    kind: 'other',
    stack: `run${ri}`,
    runIndex: ri,
    color: ri,
    data: rows.map(({ step }) => {
      const m = step.cells[ri]?.median;
      return typeof m === 'number' && Number.isFinite(m) ? m : null;
    }),
  }));
  const whiskers: Whisker[] = [];
  rows.forEach(({ step }, rowIndex) => {
    runs.forEach((_, ri) => {
      const c = step.cells[ri];
      if (c && Number.isFinite(c.median) && Number.isFinite(c.p90) && c.p90 >= c.median) {
        whiskers.push({ variantIndex: rowIndex, stack: `run${ri}`, from: c.median, to: c.p90, source: step.step });
      }
    });
  });
  return { labels: rows.map((r) => r.label), series, whiskers };
}
