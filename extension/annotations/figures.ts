/**
 * Resolves an API to the figures that answer it on the active profile: which run, experiment,
 * variant and steps (through {@link API_MAP}), whether they are stale or simulated. Every figure
 * is a `StepStats` or a memory value read from a run file. No `vscode` import.
 */
import type { StepStats, VariantSummary } from '../../protocol/events';
import type { RunExperiment } from '../../protocol/runFile';
import { API_MAP, type Answer, type ApiEntry, type ApiName, type StepRef } from './apiMap';
import { staleReasons, type Profile, type StaleRules } from './profiles';

/** One step's distribution over the recorded iterations (ms), with its label from the run. */
export interface Figure {
  step: string;
  label: string;
  stats: StepStats;
}

/** The figures of one variant. */
export interface VariantFigures {
  variant: string;
  call?: Figure;
  first?: Figure;
  total?: Figure;
  extra: Figure[];
  /** Device memory per GPU, bytes (median over iterations of the per-GPU MAX). */
  memoryAfterCall?: number;
  memoryAfterFirst?: number;
}

/** Figures that answer an API. */
export interface Measured {
  source: Profile;
  experiment: string;
  /** Set when the figures are those of the NCCL call beneath a c10d wrapper: says which. */
  via?: string;
  main: VariantFigures;
  /** The experiment's other variants (e.g. the other split shapes). */
  others: VariantFigures[];
  /** What the CodeLens and label show: the total to first collective for creation, else the call. */
  headline: Figure;
  /** For comparison in readings: the fresh init to first collective of the same run, when it has one. */
  freshInit?: Figure;
  /** Total memory of the run's first GPU, bytes. */
  gpuTotalBytes?: number;
}

export interface Annotation {
  api: ApiName;
  entry: ApiEntry;
  /** The profile the annotations come from. */
  active?: Profile;
  measured?: Measured;
  /** When nothing answers the API: the experiment to measure and why there is nothing. */
  missing?: { experiment: string; reason: string };
  /** Reasons the figures are stale ([] = fresh). */
  stale: string[];
  /** True when the figures came from the simulated NCCL: never a measurement. */
  simulated: boolean;
}

function findStep(v: VariantSummary, ref: StepRef | undefined): Figure | undefined {
  if (!ref) return undefined;
  const s = v.steps.find((x) => x.step === ref.step) ?? (ref.kinds ? v.steps.find((x) => ref.kinds?.includes(x.kind)) : undefined);
  return s ? { step: s.step, label: s.label, stats: s.stats } : undefined;
}

/** The figures of variant `v` as `answer` reads them. */
export function variantFigures(v: VariantSummary, answer: Answer): VariantFigures {
  const call = findStep(v, answer.call);
  const first = findStep(v, answer.first);
  const total = findStep(v, answer.total);
  const used = new Set([call?.step, first?.step, total?.step]);
  const extra: Figure[] = [];
  for (const ref of answer.extra ?? []) {
    const f = findStep(v, ref);
    if (f && !used.has(f.step)) {
      used.add(f.step);
      extra.push(f);
    }
  }
  const mem = v.memoryBytes ?? {};
  return {
    variant: v.variant,
    ...(call ? { call } : {}),
    ...(first ? { first } : {}),
    ...(total ? { total } : {}),
    extra,
    ...(typeof mem.afterCall === 'number' ? { memoryAfterCall: mem.afterCall } : {}),
    ...(typeof mem.afterFirst === 'number' ? { memoryAfterFirst: mem.afterFirst } : {}),
  };
}

function matchesVariant(name: string, wanted: string): boolean {
  return name === wanted || name.startsWith(`${wanted}/`) || name.startsWith(wanted);
}

/** The experiment's variants in the answer's order of preference (main first), or undefined when absent. */
function pickVariants(exp: RunExperiment, answer: Answer): VariantSummary[] | undefined {
  if (exp.variants.length === 0) return undefined;
  if (answer.variants.length === 0) return [...exp.variants];
  for (const wanted of answer.variants) {
    const main = exp.variants.find((v) => matchesVariant(v.variant, wanted));
    if (main) return [main, ...exp.variants.filter((v) => v !== main)];
  }
  return undefined;
}

function headlineOf(entry: ApiEntry, f: VariantFigures): Figure | undefined {
  return entry.role === 'create' || entry.role === 'register' || entry.role === 'suspend' ? (f.total ?? f.call) : (f.call ?? f.total);
}

function measuredIn(profile: Profile, entry: ApiEntry, answer: Answer, via: string | undefined): Measured | undefined {
  const exp = profile.run.experiments.find((e) => e.experiment === answer.experiment);
  if (!exp) return undefined;
  const variants = pickVariants(exp, answer);
  const first = variants?.[0];
  if (!variants || !first) return undefined;
  const main = variantFigures(first, answer);
  const headline = headlineOf(entry, main);
  if (!headline) return undefined;
  const init = profile.run.experiments.find((e) => e.experiment === 'init')?.variants[0];
  const freshInit = init && answer.experiment !== 'init' ? init.steps.find((s) => s.step === 'total') : undefined;
  const gpuTotal = profile.run.stamp?.gpus[0]?.totalBytes;
  return {
    source: profile,
    experiment: answer.experiment,
    ...(via ? { via } : {}),
    main,
    others: variants.slice(1).map((v) => variantFigures(v, answer)),
    headline,
    ...(freshInit ? { freshInit: { step: freshInit.step, label: freshInit.label, stats: freshInit.stats } } : {}),
    ...(typeof gpuTotal === 'number' && gpuTotal > 0 ? { gpuTotalBytes: gpuTotal } : {}),
  };
}

/**
 * The annotation of `api` on the `active` profile. Figures come from, in order: the active run,
 * then other runs on the same host (newest first), then runs on other hosts (stale); the c10d
 * answer before the NCCL call beneath it in each tier.
 * @param profiles every profile, in the store's order (newest first within a source)
 */
export function resolveAnnotation(api: ApiName, active: Profile | undefined, profiles: readonly Profile[], rules: StaleRules): Annotation {
  const entry = API_MAP[api];
  const base = { api, entry, ...(active ? { active } : {}) };
  if (!active)
    return { ...base, missing: { experiment: entry.answer.experiment, reason: 'no run saved yet' }, stale: [], simulated: false };
  const byTime = [...profiles].sort((a, b) => b.time - a.time);
  const tiers: Profile[][] = [
    [active],
    byTime.filter((p) => p !== active && p.run.host === active.run.host),
    byTime.filter((p) => p.run.host !== active.run.host),
  ];
  const answers: [Answer, string | undefined][] = [[entry.answer, undefined]];
  if (entry.underlying) answers.push([entry.underlying, entry.underlying.note]);
  for (const tier of tiers) {
    for (const [answer, via] of answers) {
      for (const p of tier) {
        const measured = measuredIn(p, entry, answer, via);
        if (measured) return { ...base, measured, stale: staleReasons(p, active, profiles, rules), simulated: p.run.simulated };
      }
    }
  }
  const skipped = active.run.skipped.find((s) => s.experiment === entry.answer.experiment);
  return {
    ...base,
    missing: {
      experiment: entry.answer.experiment,
      reason: skipped ? `skipped on ${active.run.host}: ${skipped.reason}` : 'not measured in this run',
    },
    stale: [],
    simulated: active.run.simulated,
  };
}
