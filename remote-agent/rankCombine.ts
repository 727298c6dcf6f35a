/**
 * Combining the ranks: one iteration's per-rank reports into the figures of the run (each
 * step = the MAX over the ranks that took part, derived steps summed from their parts, memory
 * and NCCL's view per rank), the record kept per variant, and an experiment's summary from it.
 *
 * Invariants: a figure is only ever the MAX over ranks of what the ranks timed (stats.ts
 * combineRanks); warmup iterations are streamed but never recorded in a summary.
 */
import type { ExperimentId, SampleEvent, StepPlan, VariantSummary } from '../protocol/events';
import { addExtras, combineExtras, summarizeExtras } from './iterationExtras';
import { addIteration, combineRanksViews, summarizeViews } from './ncclInitTimings';
import type { IterationReport } from './rankWire';
import type { PlannedExperiment, VariantRecord } from './sessionPlan';
import { combineRanks, summarize } from './stats';

/** One iteration combined across ranks, and what of it goes into the variant's record. */
export interface CombinedIteration {
  /** The run/sample event: steps in ms, perRank in rank order, skews in µs, memory in bytes. */
  sample: SampleEvent;
  /** Per memory point, the values of the ranks that reported it, bytes. */
  reported: Record<string, number[]>;
  /** ncclCommMemStats (MAX over ranks) and per-rank counts (iterationExtras.ts). */
  extras: ReturnType<typeof combineExtras>;
}

/**
 * Combines the reports of every rank for one iteration of `record`'s variant. Adds the
 * iteration to the record's NCCL view (plans with ncclInitView, recorded iterations only); the
 * figures themselves are added by {@link recordIteration}.
 * @param got one report per rank (any order); `report` is the one that completed the set
 */
export function combineIteration(record: VariantRecord, report: IterationReport, got: IterationReport[]): CombinedIteration {
  const byRank = [...got].sort((a, b) => a.rank - b.rank);
  const steps: Record<string, number> = {};
  const perRank: Record<string, (number | null)[]> = {};
  let skewUs = 0;
  const stepSkewUs: Record<string, number> = {};
  for (const plan of record.plan.steps) {
    if (plan.sumOf) continue;
    // The MAX over the ranks that took part (a shrink's excluded rank does not).
    const row = byRank.map((r) => r.steps[plan.step] ?? null);
    const values = row.filter((v): v is number => v !== null);
    if (values.length === 0) continue;
    perRank[plan.step] = row;
    steps[plan.step] = combineRanks(values);
    const releases = byRank.map((r) => r.releaseNs[plan.step]).filter((v): v is number => v !== undefined);
    if (releases.length > 1) {
      stepSkewUs[plan.step] = (Math.max(...releases) - Math.min(...releases)) / 1000;
      skewUs = Math.max(skewUs, stepSkewUs[plan.step]!);
    }
  }
  for (const plan of record.plan.steps) {
    if (!plan.sumOf) continue;
    const parts = plan.sumOf.map((s) => steps[s]);
    if (parts.every((v) => v !== undefined)) steps[plan.step] = parts.reduce((a, b) => a! + b!, 0)!;
  }
  // Per rank in rank order (0 where a rank has no such point, e.g. the rank a shrink excludes);
  // the summary takes the MAX over the ranks that did report the point.
  const memoryBytes: Record<string, number[]> = {};
  const reported: Record<string, number[]> = {};
  for (const point of new Set(byRank.flatMap((r) => Object.keys(r.memory ?? {})))) {
    memoryBytes[point] = byRank.map((r) => r.memory?.[point] ?? 0);
    reported[point] = byRank.flatMap((r) => (r.memory?.[point] === undefined ? [] : [r.memory[point]!]));
  }
  // NCCL's view (plans with ncclInitView): a creation counts when every rank read its line.
  const ncclInit = record.nccl ? combineRanksViews(byRank.map((r) => r.ncclInit?.views)) : undefined;
  if (record.nccl && ncclInit && !report.warmup) addIteration(record.nccl, ncclInit, byRank.reduce((n, r) => n + (r.ncclInit?.malformedLines ?? 0), 0));
  const extras = combineExtras(byRank); // ncclCommMemStats (MAX over ranks) and per-rank counts
  const sample: SampleEvent = {
    type: 'run/sample',
    experiment: report.experiment as ExperimentId,
    variant: report.variant,
    iteration: report.iteration,
    warmup: report.warmup,
    steps,
    perRank,
    memoryBytes,
    releaseSkewUs: skewUs,
    stepSkewUs,
    ...(ncclInit && Object.keys(ncclInit).length > 0 ? { ncclInit } : {}),
    ...extras,
  };
  return { sample, reported, extras };
}

/** Adds a combined iteration to its variant's record (a warmup counts as done but adds no figures). */
export function recordIteration(record: VariantRecord, combined: CombinedIteration): void {
  const { sample, reported, extras } = combined;
  if (!sample.warmup) {
    for (const [s, v] of Object.entries(sample.steps)) (record.samples[s] ??= []).push(v);
    for (const [p, v] of Object.entries(reported)) (record.memory[p] ??= []).push(Math.max(...v));
    record.extras = addExtras(record.extras, extras);
  }
  record.done++;
}

/**
 * The summary of `planned`'s variants that have all `total` iterations (warmups included), or
 * (force) of those finished so far when the experiment cannot go on.
 * @returns the variants' summaries (stats of the recorded figures, median memory per point,
 * ratios of medians), or undefined when none can be summarised yet
 */
export function summarizeExperiment(planned: PlannedExperiment, records: Map<string, VariantRecord>, total: number, force: boolean): VariantSummary[] | undefined {
  const experiment = planned.experiment;
  const finished = planned.variants.filter((v) => records.get(`${experiment}|${v.variant}`)?.done === total);
  if (finished.length < planned.variants.length && !force) return undefined;
  if (finished.length === 0) return undefined;
  const variants: VariantSummary[] = finished.map((v) => {
    const record = records.get(`${experiment}|${v.variant}`)!;
    const steps = v.steps
      .filter((st: StepPlan) => (record.samples[st.step]?.length ?? 0) > 0)
      .map((st: StepPlan) => ({ ...st, stats: summarize(record.samples[st.step]!), samples: record.samples[st.step]! }));
    const memoryBytes: Record<string, number> = {};
    for (const [point, values] of Object.entries(record.memory)) memoryBytes[point] = summarize(values).median;
    // Ratios of medians (e.g. cold-start's cold / warm), where both steps have figures.
    const median = (step: string): number | undefined => steps.find((st) => st.step === step)?.stats.median;
    const ratios = (v.ratios ?? []).flatMap((r) => {
      const [of, to] = [median(r.of), median(r.to)];
      return of !== undefined && to !== undefined && to > 0 ? [{ ...r, value: of / to }] : [];
    });
    const ncclInit = record.nccl && summarizeViews(record.nccl, v.ncclInitView?.creations ?? [], v.ncclInitView?.note);
    return { variant: v.variant, ...(v.env ? { env: v.env } : {}), steps, memoryBytes, ...(ratios.length > 0 ? { ratios } : {}), ...(ncclInit ? { ncclInit } : {}), ...summarizeExtras(record.extras) };
  });
  return variants;
}
