/**
 * The Plan section's chart model (pure): one bar per strategy with a critical path (ms, median
 * sums of the run's steps), on a log axis, with the step time and the study's migration pause as
 * reference lines; strategies without a total are listed as missing, never drawn as 0.
 */
import type { Plan } from '../readings/plan/planner';

export interface PlanChartModel {
  bars: { label: string; ms: number }[];
  /** Strategies with no critical-path total (a term missing). */
  missing: string[];
  /** Vertical reference lines: the step (dashed) and the study's migration pause (dotted). */
  lines: { label: string; ms: number; style: 'dashed' | 'dotted' }[];
  /** Under the chart: the study's migration pause is for reference, not compared with this run, and why (1 rank, several hosts, simulated); absent when it is compared. */
  pauseNote?: string;
  /**
   * One line in place of the section when the run has no figure for any strategy (no bar, no
   * memory): "no figures for a reshape plan: …" — never a chart of reference lines alone, nor a
   * list of missing terms for shapes the run never had (TP0 of a run that failed before a rank started).
   */
  empty?: string;
  /** The log axis' ends: powers of ten around every bar and line. */
  min: number;
  max: number;
}

/** The chart of `plan`: bars by strategy order, reference lines, log axis bounds. */
export function planChartModel(plan: Plan): PlanChartModel {
  // Where the critical path depends on the shape switched to, one bar per shape with the run's figure
  // for a switch to it (like with like: a pool's switch to TP1 beside a rebuild of TP1), and a shape
  // the run did not time named as not measured, never drawn with another shape's figure.
  const bars = plan.strategies.flatMap((s) =>
    s.perTarget
      ? s.perTarget.filter((x) => x.ms !== undefined && x.ms > 0).map((x) => ({ label: `${s.name} → TP${x.shape}`, ms: x.ms! }))
      : s.criticalMs !== undefined && s.criticalMs > 0
        ? [{ label: s.name, ms: s.criticalMs }]
        : [],
  );
  const missing = plan.strategies.flatMap((s) =>
    s.perTarget ? s.perTarget.filter((x) => x.ms === undefined).map((x) => `${s.name} → TP${x.shape}`) : s.criticalMs === undefined ? [s.name] : [],
  );
  const lines: PlanChartModel['lines'] = [];
  if (plan.stepMs !== undefined) lines.push({ label: `step ${plan.stepMs} ms`, ms: plan.stepMs, style: 'dashed' });
  // The study's pause is never drawn against simulated figures alone (planner.ts: the note says so).
  if (!plan.host.simulated) lines.push({ label: `the study's migration pause ${plan.study.migrationPauseMs} ms`, ms: plan.study.migrationPauseMs, style: 'dotted' });
  const values = [...bars.map((b) => b.ms), ...lines.map((l) => l.ms)];
  if (values.length === 0) values.push(1);
  // One shape: nothing to switch between, said in one line in place of a chart with no bar (planner.ts noSwitchWhy).
  const empty =
    plan.noSwitch !== undefined
      ? `no switch to plan: ${plan.noSwitch}`
      : bars.length === 0 && plan.strategies.every((s) => s.memoryBytes === undefined)
        ? planEmptyLine(plan)
        : undefined;
  return {
    ...(empty !== undefined ? { empty } : {}),
    bars,
    missing,
    lines,
    ...(plan.study.migrationPauseNote !== undefined && bars.length > 0 ? { pauseNote: plan.study.migrationPauseNote } : {}),
    min: 10 ** Math.floor(Math.log10(Math.min(...values))),
    max: 10 ** Math.ceil(Math.log10(Math.max(...values)) + 1e-9),
  };
}

/** The one line of a plan with no figure: the experiments its terms need that the run lacks. */
function planEmptyLine(plan: Plan): string {
  if (plan.host.ranks < 1) return 'no figures for a reshape plan: the run ended before any rank started';
  const experiments = [...new Set(plan.strategies.flatMap((s) => s.missing.flatMap((t) => (t.missing ? [t.missing.experiment] : []))))];
  return `no figures for a reshape plan: the run measured none of ${experiments.length > 0 ? experiments.join(', ') : 'the steps a strategy sums'}`;
}
