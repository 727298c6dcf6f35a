/**
 * The planner's terms: each figure a strategy adds up, read from one step (or memory point) of
 * one run, with where it came from — file, experiment, variant, step, median — or said to be
 * missing, with the experiment that would measure it. Never invented. Pure.
 *
 * Several runs of one host and NCCL may be combined (`--run a.json --run b.json`): a term is read
 * from the first run, in the order given, that has its experiment's variant.
 */
import { runName } from '../runName';
import { isSimulatedRun, type RunFile } from '../../protocol/runFile';
import { nodeGpus, nodeNamesText } from '../../protocol/runNodes';
import { PlanInputError } from './units';

/** One run given to the planner and the file it was read from (shown as each term's source). */
export interface PlanRun {
  file: string;
  run: RunFile;
}

/** Where a measured term came from: one step's median, or one memory point (median of the per-GPU MAX). */
export interface TermSource {
  file: string;
  experiment: string;
  variant: string;
  /** The step id (ms terms) or the memory point (bytes terms). */
  step: string;
  stat: 'median';
}

/**
 * Which lifecycle figure a term is, so that a trace's observed figure of the same API and
 * communicator size may replace it (traceTerms.ts): the creating call or its first collective.
 */
export interface TermKey {
  api: 'init' | 'split' | 'shrink' | 'grow';
  /** The ranks of the communicator made. */
  size: number;
  phase: 'creation' | 'first';
}

/** A term observed in a trace (`commcost trace`): the median over a traced site's occurrences. */
export interface ObservedSource {
  /** The trace file. */
  file: string;
  /** The traced site: "new_group at torch_tp_reshape.py:35". */
  site: string;
  phase: 'creation' | 'first collective';
  /** Occurrences the median is over. */
  n: number;
}

/** A term of a strategy's sum. Exactly one of `value`/`missing` is set. */
export interface Term {
  /** What it is, in the field's words: "ncclCommInitRankConfig TP2", "first collective". */
  what: string;
  unit: 'ms' | 'bytes';
  /** The run's figure (ms or bytes per GPU), before `times`. */
  value?: number;
  /** How many times the figure counts in the sum (a pool of k suspended communicators); default 1. */
  times?: number;
  source?: TermSource;
  /** Set instead of `source` when the figure was observed in a trace (traceTerms.ts). */
  observed?: ObservedSource;
  /** The lifecycle figure it is, where a trace may observe it. */
  key?: TermKey;
  /**
   * The TP shape switched to, where the figure depends on it (an on-demand rebuild of that shape):
   * the strategy's critical path is then priced per target, each with the run's figure for that
   * shape, and one switch costs the mean over its targets (planner.ts).
   */
  target?: number;
  /** Why the runs have no figure, and which experiment would measure it. */
  missing?: { experiment: string; why: string };
  /**
   * The steps a total sums (the init experiment's `total` = its call + first collective), each
   * keyed: the total is priced (its own median, as the first page and the verdict read it), and a
   * trace that observed one of them replaces the total by them (traceTerms.ts applyTrace).
   */
  parts?: Term[];
}

/** The facts of the combined runs the plan states: host, ranks, GPU memory, NCCL, simulated. */
export interface PlanHost {
  /** The stamp's hostname; over several nodes their names ("gpu0 and gpu1", protocol/runNodes.ts nodeNamesText). */
  hostname: string;
  /** "2× NVIDIA H200" from the stamp, "16× NVIDIA H200 over 2 nodes" from the nodes, or "2 ranks" without either. */
  text: string;
  /**
   * The first run's one name (readings/runName.ts): "2× H200 · NCCL 2.28.9 · 2026-11-29 19:48 UTC",
   * "SIMULATED · 2 ranks · …"; absent when only a trace is planned from. The CLI's plan headers say it.
   */
  name?: string;
  /** Hosts the ranks spanned, when 2 or more (the run's `nodes`); absent for one host. */
  nodes?: number;
  ranks: number;
  ncclVersion?: string;
  /** The smallest GPU's memory among the ranks' GPUs (stamp gpus[].totalBytes), bytes. */
  gpuBytes?: number;
  /** True when any run is simulated: then no figure is a measurement. */
  simulated: boolean;
  files: string[];
}

/**
 * Checks that the runs may be combined (one host, one NCCL version, one rank count) and states
 * their facts.
 * @throws PlanInputError for no run, a run of no rank (`ranks: 0` passes the run file's schema but
 *   has no TP shape), or runs of different hosts, NCCL versions or rank counts
 */
export function planHost(runs: readonly PlanRun[]): PlanHost {
  const first = runs[0];
  if (!first) throw new PlanInputError('no run to plan from', '--run', 'give a run file: --run .commcost/runs/<run>.json');
  // Over several nodes the stamp is of one host only: the run is named by its nodes.
  const hostOf = (r: RunFile): string => nodeNamesText(r) ?? r.stamp?.hostname ?? r.host;
  for (const p of runs.slice(1)) {
    const what =
      hostOf(p.run) !== hostOf(first.run)
        ? `host ${hostOf(p.run)} vs ${hostOf(first.run)}`
        : p.run.stamp?.ncclVersion !== first.run.stamp?.ncclVersion
          ? `NCCL ${p.run.stamp?.ncclVersion ?? '?'} vs ${first.run.stamp?.ncclVersion ?? '?'}`
          : p.run.ranks !== first.run.ranks
            ? `${p.run.ranks} vs ${first.run.ranks} ranks`
            : undefined;
    if (what) {
      throw new PlanInputError(
        `${p.file} cannot be combined with ${first.file}: ${what}`,
        '--run',
        'combine runs of one host, one NCCL version and one rank count; plan each setup on its own',
      );
    }
  }
  const r = first.run;
  if (r.status === 'failed' && r.ranks === 0)
    throw new PlanInputError(`${first.file}: the run ended before any rank started: no figures for a reshape plan`, '--run', 'measure on a host with a GPU (or with --simulate), then plan from that run');
  if (!(Number.isSafeInteger(r.ranks) && r.ranks >= 1)) {
    throw new PlanInputError(`${first.file}: "ranks" is ${r.ranks}; a plan needs a run of at least one rank`, '--run', 'give a run that measured one or more GPUs (its "ranks" field counts them)');
  }
  const gpus = (r.stamp?.gpus ?? []).slice(0, Math.max(1, r.ranks));
  // Over several nodes every node's GPUs (one per rank), not the stamp's one host's.
  const onNodes = nodeGpus(r);
  const names = [...new Set(onNodes ?? gpus.map((g) => g.name))];
  // The stamp gives memory for its own host's GPUs only: over several nodes it stands for every
  // GPU only when every node's GPU model is one the stamp measured.
  const sized = onNodes === undefined ? gpus : names.every((n) => (r.stamp?.gpus ?? []).some((g) => g.name === n)) ? (r.stamp?.gpus ?? []).filter((g) => names.includes(g.name)) : [];
  const sizes = sized.map((g) => g.totalBytes).filter((b) => Number.isFinite(b) && b > 0);
  const nodes = onNodes !== undefined ? r.nodes!.length : undefined;
  const over = nodes !== undefined ? ` over ${nodes} nodes` : '';
  return {
    hostname: hostOf(r),
    name: runName(r),
    text: names.length === 1 ? `${onNodes?.length ?? r.ranks}× ${names[0]}${over}` : `${r.ranks} rank${r.ranks === 1 ? '' : 's'}${over}`,
    ...(nodes !== undefined ? { nodes } : {}),
    ranks: r.ranks,
    ...(r.stamp?.ncclVersion ? { ncclVersion: r.stamp.ncclVersion } : {}),
    ...(sizes.length > 0 ? { gpuBytes: Math.min(...sizes) } : {}),
    simulated: runs.some((p) => isSimulatedRun(p.run)),
    files: runs.map((p) => p.file),
  };
}

/** Why no run has `experiment` (its skip reason where a run skipped it), for a missing term. */
function missingWhy(runs: readonly PlanRun[], experiment: string, variant: string, _what: string): Term['missing'] {
  for (const p of runs) {
    const skip = p.run.skipped.find((s) => s.experiment === experiment && (s.variant === undefined || s.variant === variant));
    if (skip) return { experiment, why: `${experiment} was skipped in ${p.file}: ${skip.reason}` };
  }
  const has = runs.some((p) => p.run.experiments.some((e) => e.experiment === experiment));
  const hasVariant = runs.some((p) => p.run.experiments.some((e) => e.experiment === experiment && e.variants.some((v) => v.variant === variant)));
  return {
    experiment,
    why: hasVariant
      ? `${experiment}/${variant} has no figure for it in these runs`
      : has
        ? `the runs have no variant ${experiment}/${variant} (a run of the ${experiment} experiment that has it measures it)`
        : `the runs have no ${experiment} experiment, which measures it`,
  };
}

/**
 * What the runs lack of `experiment`/`variant`, in words naming only what they lack ("the runs have
 * no pool experiment", "grow was skipped in f.json: needs NCCL ≥ 2.29.2, host has 2.28.9", "the runs
 * have no variant pool/tp2+1"), or undefined when a run has that variant. A "not measured" reason
 * uses it, so that it never describes an experiment the runs do not have.
 */
export function lackWhy(runs: readonly PlanRun[], experiment: string, variant: string): string | undefined {
  if (runs.some((p) => p.run.experiments.some((e) => e.experiment === experiment && e.variants.some((v) => v.variant === variant)))) return undefined;
  for (const p of runs) {
    const skip = p.run.skipped.find((s) => s.experiment === experiment && (s.variant === undefined || s.variant === variant));
    if (skip) return `${experiment} was skipped in ${p.file}: ${skip.reason}`;
  }
  return runs.some((p) => p.run.experiments.some((e) => e.experiment === experiment)) ? `the runs have no variant ${experiment}/${variant}` : `the runs have no ${experiment} experiment`;
}

/** The first run's summary of `experiment`/`variant` (in the order given) and its file. */
function findVariant(runs: readonly PlanRun[], experiment: string, variant: string) {
  for (const p of runs) {
    const v = p.run.experiments.find((e) => e.experiment === experiment)?.variants.find((x) => x.variant === variant);
    if (v) return { file: p.file, v };
  }
  return undefined;
}

/**
 * A ms term: the median of `experiment`/`variant`/`step` in the first run that has it, else missing.
 * @param variants the variant names to try, in order of preference
 */
export function stepTerm(runs: readonly PlanRun[], what: string, experiment: string, variants: readonly string[], step: string): Term {
  for (const variant of variants) {
    const found = findVariant(runs, experiment, variant);
    const s = found?.v.steps.find((x) => x.step === step);
    if (found && s && Number.isFinite(s.stats.median)) {
      return { what, unit: 'ms', value: s.stats.median, source: { file: found.file, experiment, variant, step, stat: 'median' } };
    }
  }
  return { what, unit: 'ms', missing: missingWhy(runs, experiment, variants[0] ?? '', what) };
}

/** A bytes term: memory point `point` of `experiment`/`variant` (bytes per GPU) in the first run that has it, else missing. */
export function memoryTerm(runs: readonly PlanRun[], what: string, experiment: string, variants: readonly string[], point: string): Term {
  for (const variant of variants) {
    const found = findVariant(runs, experiment, variant);
    const b = found?.v.memoryBytes?.[point];
    if (found && typeof b === 'number' && Number.isFinite(b)) {
      return { what, unit: 'bytes', value: b, source: { file: found.file, experiment, variant, step: point, stat: 'median' } };
    }
  }
  return { what, unit: 'bytes', missing: missingWhy(runs, experiment, variants[0] ?? '', what) };
}

/** A term that the runs cannot have at all (a shape larger than their GPU count): missing, with why. */
export function absentTerm(what: string, unit: Term['unit'], experiment: string, why: string): Term {
  return { what, unit, missing: { experiment, why } };
}

/** The variant names of an experiment in the first run that has it (pool variants are named by the run's shapes). */
export function variantNames(runs: readonly PlanRun[], experiment: string): string[] {
  for (const p of runs) {
    const e = p.run.experiments.find((x) => x.experiment === experiment);
    if (e && e.variants.length > 0) return e.variants.map((v) => v.variant);
  }
  return [];
}

/**
 * The sum of terms (each value × times), or undefined when one is missing. An empty list sums to 0.
 */
export function sumTerms(terms: readonly Term[]): number | undefined {
  let total = 0;
  for (const t of terms) {
    if (t.value === undefined) return undefined;
    total += t.value * (t.times ?? 1);
  }
  return total;
}

/** "pool/tp2+1/switch (median, h200x2.json)" — where a term came from, or "missing: why" ("not measured: why" for a switch the run does not time, "not priced: why" for a step the strategy cannot take). */
export function termSourceText(t: Term): string {
  if (t.observed) return `observed in trace ${t.observed.file}: ${t.observed.site} (${t.observed.phase}, median of ${t.observed.n} occurrence${t.observed.n === 1 ? '' : 's'})`;
  if (t.source) return `${t.source.experiment}/${t.source.variant}/${t.source.step} (${t.source.stat}, ${t.source.file})`;
  const why = t.missing?.why ?? 'no figure';
  return why.startsWith('not measured') || why.startsWith('not priced') ? why : `missing: ${why}`;
}
