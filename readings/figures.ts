/**
 * Resolves an API to the figures that answer it: which run, experiment, variant and steps
 * (through {@link API_MAP}), whether they are stale or simulated, and why they come from another
 * run than the active one. Every figure is a `StepStats` or a memory value read from a run file.
 * No `vscode` import.
 *
 * The rule (ARCHITECTURE.md, "annotations"): among the runs that may answer in this window
 * (profiles.ts `answeringProfiles`), those that cover the call are ordered by (1) a measurement
 * of the API itself before one of the call beneath it, (2) the run the user chose, (3) fresh
 * before stale, (4) the active run, (5) newest first; the first answers. Within that run the
 * headline variant is the one that pays what the user's code pays ({@link orderVariants}).
 */
import type { StepStats, VariantSummary } from '../protocol/events';
import { EXPERIMENT_IDS, firstUseOf, type FirstUseKind } from '../protocol/runOptions';
import type { unavailableReason } from './experimentInfo';
import { isSimulatedRun, memStatsNote, type RunExperiment, type RunFile } from '../protocol/runFile';
import { hostGpusText } from '../protocol/runNameParts';

/** One error of a run file (what failed, where, why). */
export type RunError = RunFile['errors'][number];

/**
 * The first error of `run` by which the hang guard stopped `experiment` (code TIMEOUT), in
 * `variant` when given (else in any), or undefined.
 */
export function timeoutOf(run: RunFile, experiment: string, variant?: string): RunError | undefined {
  return (run.errors ?? []).find(
    (e) => e.code === 'TIMEOUT' && e.where?.experiment === experiment && (variant === undefined || e.where.variant === undefined || e.where.variant === variant),
  );
}

/**
 * Why nothing can measure `entry` (its experiment is not in the catalogue), in words read from
 * `run`: for ncclCommMemStats, that the run's NCCL lacks it (protocol/runFile.ts `memStatsNote`,
 * with the version needed) or that the run read it at its memory points (naming the experiments).
 */
function unmeasurableReason(entry: ApiEntry, run: RunFile): string {
  if (entry.callsInto === 'ncclCommMemStats') {
    const note = memStatsNote(run);
    if (note) return note.replace(/[:;] memory is [^:;]*$/, '');
    const read = run.experiments.filter((e) => e.variants.some((v) => v.memStats && Object.keys(v.memStats).length > 0)).map((e) => e.experiment);
    if (read.length) return `not timed: this run read ncclCommMemStats at the memory points of ${read.join(', ')} (open the run for its counts)`;
  }
  const note = entry.callsInto === 'ncclDevCommCreate' || entry.callsInto === 'ncclDevCommDestroy' ? deviceApiNote(run) : '';
  return `no commcost experiment times ${entry.api}${note}`;
}

/** NCCL's device API (ncclDevCommCreate, ncclDevCommDestroy) is in NCCL from this version on. */
const DEVICE_API_SINCE = { code: 22800, version: '2.28' } as const;

/**
 * For a device-API call: ` (the device API came with NCCL 2.28; this run's NCCL is 2.27.7)` when the
 * run's NCCL (its stamp's version code) is older; '' when newer, unknown or simulated (a simulated
 * run's version is the simulator's, not a library's).
 */
function deviceApiNote(run: RunFile): string {
  const s = run.stamp;
  if (!s || typeof s.ncclVersionCode !== 'number' || s.ncclVersionCode >= DEVICE_API_SINCE.code || isSimulatedRun(run)) return '';
  const version = typeof s.ncclVersion === 'string' ? s.ncclVersion : String(s.ncclVersionCode);
  return ` (the device API came with NCCL ${DEVICE_API_SINCE.version}; this run's NCCL is ${version})`;
}
import { API_MAP, type Answer, type ApiEntry, type ApiName, type StepRef } from '../sites/apiMap';
import { beneathName, beneathSkipped, hostGate, matchesVariant, oneRankThere, sameRankGate, skipOf } from './figureSkips';
import { answeringProfiles, isSimulatedProfile, staleReasons, type Profile, type StaleRules } from './profiles';

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
  /** Device memory per GPU before the call, bytes, where the run has it (the `warm` point: suspend). */
  memoryBeforeCall?: number;
  /**
   * Ranks of the communicator the variant creates (or, for a teardown, registration or suspend,
   * acts on), where the run tells (apiMap.ts `childRanks`; 1 in every variant of a one-rank run); 1 = nothing to connect.
   */
  childRanks?: number;
}

/** Figures that answer an API. */
export interface Measured {
  source: Profile;
  experiment: string;
  /** Set when the figures are those of the NCCL call beneath a c10d wrapper: says which. */
  via?: string;
  main: VariantFigures;
  /** The other variants that answer the API (e.g. the other split shapes), in order of preference. */
  others: VariantFigures[];
  /**
   * What the headline variant assumes about the call site when the run has variants for both
   * ways (c10d lazy / eager init): `lazy` unless the call (or the file's init) passes device_id.
   */
  assumes?: 'lazy' | 'eager';
  /** The headline variant's first use when it is not an allreduce (a `…/first=broadcast` variant). */
  firstUse?: FirstUseKind;
  /** The site's group is first used this way, but the run has no variant of it: the figures are the allreduce's. */
  firstUseAsked?: FirstUseKind;
  /** What the CodeLens and label show: the total to first collective for creation, else the call. */
  headline: Figure;
  /** For comparison in readings: the fresh init to first collective of the same run, when it has one. */
  freshInit?: Figure;
  /** Total memory of the run's first GPU, bytes. */
  gpuTotalBytes?: number;
  /**
   * A suspend ({@link releasesMemory}): the resume to first collective of the same variant, which
   * ncclCommResume's line pays, kept out of this call's figures and named in its hover.
   */
  resume?: Figure;
  /** The ranks of the group the code makes, where it fixes them (SiteContext `groupSize`): the readings set it against `main.childRanks`. */
  groupSize?: number;
}

/**
 * Whether `answer` times a call that releases memory rather than one that leads to a first
 * collective: ncclCommSuspend (apiMap.ts: role `suspend`, its call the run's `suspend` step). Its
 * variant's first collective and total follow the resume, so they are not this call's figures.
 */
export function releasesMemory(entry: ApiEntry, answer: Answer): boolean {
  return entry.role === 'suspend' && answer.call?.step === 'suspend';
}

export interface Annotation {
  api: ApiName;
  entry: ApiEntry;
  /** The active profile (the status bar's run). */
  active?: Profile;
  measured?: Measured;
  /** Set when the figures come from another run than the active one: why (e.g. "the active run has no split"). */
  why?: string;
  /** When nothing answers the API: the experiment to measure and why there is nothing. */
  missing?: {
    experiment: string;
    reason: string;
    /** The hang guard stopped this experiment in the active run (its first TIMEOUT error): measuring again may pass. */
    timedOut?: RunError;
    /**
     * No experiment of the catalogue times this call (e.g. ncclCommMemStats): nothing can be
     * measured, and `reason` says what the run shows instead (its NCCL lacks the call, or the run
     * read it at its memory points).
     */
    unmeasurable?: true;
    /**
     * The host of the active run cannot run the experiment, by the Measure picker's gate
     * (SiteContext `unavailable`): its words, e.g. "needs 2 GPUs, the host's last run had 1".
     * Measuring there would be skipped: offer another host.
     */
    cannotRun?: string;
    /**
     * Not measured in this run while the call beneath was skipped on its host (the agent's reason,
     * e.g. "needs 2 GPUs, host has 1"), and the call itself can still be measured there (c10d's
     * split_group on one GPU): the lens says that skip, as the call beneath's own lens does.
     * `oneRank`: measured there, the call's communicator would have one rank.
     */
    beneathSkip?: { note: string; reason: string; oneRank: boolean };
  };
  /** Reasons the figures are stale ([] = fresh). */
  stale: string[];
  /** True when the figures came from the simulated NCCL: never a measurement. */
  simulated: boolean;
  /** Every loaded run (resolveAnnotation's `profiles`): run labels are told apart from these (annotationText.ts `runLabel`). */
  peers?: readonly Profile[];
}

function findStep(v: VariantSummary, ref: StepRef | undefined): Figure | undefined {
  if (!ref) return undefined;
  const s = v.steps.find((x) => x.step === ref.step) ?? (ref.kinds ? v.steps.find((x) => ref.kinds?.includes(x.kind)) : undefined);
  return s ? { step: s.step, label: s.label, stats: s.stats } : undefined;
}

/** Where the call site stands, for the variants that depend on it. */
export interface SiteContext {
  /** The call (or, for new_group / destroy_process_group, the file's init_process_group) passes device_id. */
  eager?: boolean;
  /** The run the user chose explicitly (store.chosen): it answers before fresher runs. */
  chosen?: Profile;
  /**
   * A lazy group's first collective: the API that created the group (CallSite
   * `firstCollectiveOf.api`); picks that creation's variant (apiMap.ts `byCreator`).
   */
  creator?: ApiName;
  /**
   * How the site's group is first used (apiMap.ts `firstUseKindOf` of CallSite
   * `firstCollectiveOf.collective`): picks the run's variant first used that way (`…/first=broadcast`)
   * when the run has it; otherwise the allreduce's figure answers and `Measured.firstUseAsked` says so.
   */
  firstUse?: FirstUseKind;
  /**
   * The Measure picker's gate (experimentInfo.ts `unavailableReason`), passed by a caller that has
   * it loaded (it reads the agent's experiment modules, which activation does not load). With it,
   * an experiment the active run did not request and its host cannot run — by the GPUs its stamp
   * lists (or its ranks, when more) and its NCCL — says so (`missing.cannotRun`) instead of
   * offering a measurement that would be skipped. A simulated run is never gated: its size is chosen.
   */
  unavailable?: typeof unavailableReason;
  /**
   * The ranks of the group the code makes, where it fixes them (CallSite `groupSize`): a variant
   * of that size answers first, in the run that has one ({@link orderVariants}).
   */
  groupSize?: number;
}

/**
 * The figures of variant `v` as `answer` reads them.
 * @param shape the run's world size and nodes, for the child size (omitted: unknown)
 */
export function variantFigures(
  v: VariantSummary,
  answer: Answer,
  shape?: { ranks: number; nodes?: readonly { ranks: readonly number[] }[] },
): VariantFigures {
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
  // The point after the call is named after its step where the step is not `call`
  // (suspend: `afterSuspend`, resume: `afterResume`).
  const callStep = answer.call?.step;
  const afterCallPoint = callStep && callStep !== 'call' ? `after${callStep.charAt(0).toUpperCase()}${callStep.slice(1)}` : 'afterCall';
  const afterCall = mem[afterCallPoint] ?? mem.afterCall;
  // A run of one rank holds no communicator of more: whatever the call (an abort, a destroy, a
  // registration), its communicator has one rank and nothing to connect.
  const child = shape && shape.ranks === 1 ? 1 : shape && answer.childRanks ? answer.childRanks(v.variant, shape) : undefined;
  return {
    variant: v.variant,
    ...(child !== undefined ? { childRanks: child } : {}),
    ...(call ? { call } : {}),
    ...(first ? { first } : {}),
    ...(total ? { total } : {}),
    extra,
    ...(typeof afterCall === 'number' ? { memoryAfterCall: afterCall } : {}),
    ...(typeof mem.afterFirst === 'number' ? { memoryAfterFirst: mem.afterFirst } : {}),
    ...(typeof mem.warm === 'number' ? { memoryBeforeCall: mem.warm } : {}),
  };
}

/**
 * -1: a child of the size the code fixes (`groupSize`); 0: a child of several ranks (pays a
 * connect), 1: size unknown, 2: a one-rank child (nothing to connect).
 */
function sizeClass(f: VariantFigures, groupSize?: number): number {
  if (groupSize !== undefined && f.childRanks === groupSize) return -1;
  return f.childRanks === undefined ? 1 : f.childRanks > 1 ? 0 : 2;
}

/**
 * The variants of `exp` that answer, headline first: in the answer's order of preference
 * (`byCreator[creator]` for a first collective whose group's creation is known, else `whenEager`
 * when the site is eager), then — stable — a child of the size the code fixes (`groupSize`)
 * first, then children of several ranks before those of unknown size before one-rank children.
 * Empty when none is present.
 */
export function orderVariants(
  exp: RunExperiment,
  answer: Answer,
  shape: { ranks: number; nodes?: readonly { ranks: readonly number[] }[] },
  eager = false,
  creator?: ApiName,
  groupSize?: number,
  firstUse?: FirstUseKind,
): VariantFigures[] {
  const byCreator = creator ? answer.byCreator?.[creator] : undefined;
  const order = byCreator ?? (eager && answer.whenEager ? answer.whenEager : answer.variants);
  const all: VariantSummary[] = [];
  if (order.length === 0) all.push(...exp.variants);
  else
    for (const wanted of order) for (const v of exp.variants) if (matchesVariant(v.variant, wanted) && !all.includes(v)) all.push(v);
  const figures = byFirstUse(all, firstUse).map((v) => variantFigures(v, answer, shape));
  return figures
    .map((f, i) => ({ f, i }))
    .sort((a, b) => sizeClass(a.f, groupSize) - sizeClass(b.f, groupSize) || a.i - b.i)
    .map(({ f }) => f);
}

/**
 * The variants of one first use (RunOptions.firstUse): those first used as `firstUse` when the run has
 * them, then the allreduce ones; without `firstUse` (or none of its kind) the allreduce ones alone,
 * unless the run has no other (a run of broadcast variants only).
 */
function byFirstUse(variants: VariantSummary[], firstUse: FirstUseKind | undefined): VariantSummary[] {
  const plain = variants.filter((v) => firstUseOf(v.variant) === 'allreduce');
  const wanted = firstUse && firstUse !== 'allreduce' ? variants.filter((v) => firstUseOf(v.variant) === firstUse) : [];
  const out = [...wanted, ...plain];
  return out.length > 0 ? out : variants;
}

function headlineOf(entry: ApiEntry, f: VariantFigures): Figure | undefined {
  return entry.role === 'create' || entry.role === 'register' || entry.role === 'suspend' ? (f.total ?? f.call) : (f.call ?? f.total);
}

function measuredIn(
  profile: Profile,
  entry: ApiEntry,
  answer: Answer,
  via: string | undefined,
  eager: boolean,
  creator?: ApiName,
  groupSize?: number,
  firstUse?: FirstUseKind,
): Measured | undefined {
  const exp = profile.run.experiments.find((e) => e.experiment === answer.experiment);
  if (!exp) return undefined;
  const ordered = orderVariants(exp, answer, profile.run, eager, creator, groupSize, firstUse);
  const release = releasesMemory(entry, answer);
  const resume = release ? ordered[0]?.total : undefined;
  // A suspend gives the suspend call alone (and the memory it releases): the first collective and
  // the total of its variant are the resume's.
  const [main, ...others] = release
    ? ordered.map(({ first: _f, total: _t, memoryAfterFirst: _m, ...rest }) => rest as VariantFigures)
    : ordered;
  if (!main) return undefined;
  const headline = headlineOf(entry, main);
  if (!headline) return undefined;
  // The plain init (first used by an allreduce), never a first-use variant of it.
  const init = profile.run.experiments.find((e) => e.experiment === 'init')?.variants.find((v) => firstUseOf(v.variant) === 'allreduce');
  const freshInit = init && answer.experiment !== 'init' ? init.steps.find((s) => s.step === 'total') : undefined;
  const gpuTotal = profile.run.stamp?.gpus[0]?.totalBytes;
  const both = answer.whenEager !== undefined && others.length > 0;
  return {
    source: profile,
    experiment: answer.experiment,
    ...(via ? { via } : {}),
    main,
    others,
    headline,
    ...(both ? { assumes: eager ? ('eager' as const) : ('lazy' as const) } : {}),
    ...(freshInit ? { freshInit: { step: freshInit.step, label: freshInit.label, stats: freshInit.stats } } : {}),
    ...(typeof gpuTotal === 'number' && gpuTotal > 0 ? { gpuTotalBytes: gpuTotal } : {}),
    ...(resume ? { resume } : {}),
    ...(groupSize !== undefined ? { groupSize } : {}),
    ...(firstUseOf(main.variant) !== 'allreduce' ? { firstUse: firstUseOf(main.variant) } : {}),
    ...(firstUse && firstUse !== 'allreduce' && firstUseOf(main.variant) !== firstUse ? { firstUseAsked: firstUse } : {}),
  };
}

/** Why the answering run is not the active one, in words for the hover and the status bar tooltip. */
function whyElsewhere(
  entry: ApiEntry,
  active: Profile,
  activeCovers: { direct: boolean; beneath: boolean },
  answeredDirect: boolean,
  activeStale: string[],
): string {
  const exp = entry.answer.experiment;
  if (!activeCovers.direct && !activeCovers.beneath) {
    const beneath = entry.underlying && entry.underlying.experiment !== exp ? ` or ${entry.underlying.experiment}` : '';
    return `the active run has no ${exp}${beneath}`;
  }
  if (answeredDirect && !activeCovers.direct)
    return `the active run has only the ${entry.underlying?.experiment ?? '?'} beneath it; this run measured ${entry.api} itself`;
  if (activeStale.length) return `the active run is stale (${activeStale[0]})`;
  return active.run.experiments.length === 0 ? 'the active run has no figures' : 'the run you chose answers first';
}

/**
 * The annotation of `api` (see the file comment for the rule).
 * @param active the active profile (store.active); undefined: nothing saved yet
 * @param profiles every profile, in the store's order; those that may not answer here are left out
 *   ({@link answeringProfiles}, with `context.chosen`, else the active run when it is simulated)
 * @param rules the staleness settings and the clock
 * @param context the call site's facts and the user's choice
 */
export function resolveAnnotation(
  api: ApiName,
  active: Profile | undefined,
  profiles: readonly Profile[],
  rules: StaleRules,
  context: SiteContext = {},
): Annotation {
  const entry = API_MAP[api];
  const base = { api, entry, ...(active ? { active } : {}), peers: profiles };
  if (!active) {
    const reason =
      profiles.length === 0
        ? 'no run saved yet'
        : 'no measured run in this window (choose a simulated run or one of another window from the status bar)';
    return { ...base, missing: { experiment: entry.answer.experiment, reason }, stale: [], simulated: false };
  }
  const eager = context.eager === true;
  const chosen = context.chosen ?? (isSimulatedProfile(active) ? active : undefined);
  const pool = answeringProfiles(profiles, chosen);
  if (!pool.includes(active)) pool.push(active);
  const answers: [Answer, string | undefined][] = [[entry.answer, undefined]];
  if (entry.underlying) answers.push([entry.underlying, entry.underlying.note]);

  type Candidate = { p: Profile; measured: Measured; direct: number; stale: string[] };
  const found: Candidate[] = [];
  for (const p of pool)
    answers.forEach(([answer, via], direct) => {
      const measured = measuredIn(p, entry, answer, via, eager, context.creator, context.groupSize, context.firstUse);
      if (measured) found.push({ p, measured, direct, stale: staleReasons(p, active, profiles, rules) });
    });
  // A variant of the size the code fixes answers before any other (the NCCL split beneath has a
  // one-rank child where c10d's split_group has none).
  const size = context.groupSize;
  const miss = (c: Candidate): number => (size !== undefined && c.measured.main.childRanks !== size ? 1 : 0);
  const rank = (c: Candidate): number[] => [miss(c), c.direct, c.p === chosen ? 0 : 1, c.stale.length ? 1 : 0, c.p === active ? 0 : 1, -c.p.time];
  found.sort((a, b) => {
    const ra = rank(a);
    const rb = rank(b);
    for (let i = 0; i < ra.length; i++) if (ra[i] !== rb[i]) return (ra[i] as number) - (rb[i] as number);
    return 0;
  });
  const best = found[0];
  if (best) {
    const why =
      best.p === active
        ? undefined
        : whyElsewhere(
            entry,
            active,
            { direct: found.some((c) => c.p === active && c.direct === 0), beneath: found.some((c) => c.p === active && c.direct === 1) },
            best.direct === 0,
            staleReasons(active, active, profiles, rules),
          );
    return { ...base, measured: best.measured, ...(why ? { why } : {}), stale: best.stale, simulated: isSimulatedProfile(best.p) };
  }
  if (!(EXPERIMENT_IDS as readonly string[]).includes(entry.answer.experiment))
    return {
      ...base,
      missing: { experiment: entry.answer.experiment, reason: unmeasurableReason(entry, active.run), unmeasurable: true },
      stale: [],
      simulated: isSimulatedProfile(active),
    };
  const direct = skipOf(active.run, entry.answer);
  const beneath = direct || !entry.underlying ? undefined : skipOf(active.run, entry.underlying);
  // The call beneath was skipped for a size the call itself needs too (shrink_group on one GPU):
  // its skip is the call's, and measuring again on that host would skip it again.
  const inherited = beneath && entry.underlying && sameRankGate(entry.answer, beneath.reason, active.run) ? beneath : undefined;
  const skipped = direct ?? inherited;
  const timedOut = skipped ? undefined : timeoutOf(active.run, entry.answer.experiment);
  const cannotRun = skipped || timedOut ? undefined : hostGate(entry.answer.experiment, active.run, context.unavailable);
  const other = profiles.find((p) => !pool.includes(p) && answers.some(([answer, via]) => measuredIn(p, entry, answer, via, eager, context.creator)));
  const kind = !other
    ? ''
    : other.foreign
      ? 'a run saved from another window'
      : isSimulatedProfile(other)
        ? 'a simulated run'
        : 'a measured run';
  return {
    ...base,
    missing: {
      experiment: entry.answer.experiment,
      ...(timedOut ? { timedOut } : {}),
      ...(cannotRun ? { cannotRun } : {}),
      ...(beneath && entry.underlying && !skipped && !timedOut
        ? { beneathSkip: { note: entry.underlying.note, reason: beneath.reason, oneRank: oneRankThere(entry, active.run) } }
        : {}),
      reason: skipped
        ? `skipped on ${hostGpusText(active.run, inherited ? beneathName(entry) : undefined)}: ${skipped.reason}`
        : timedOut
          ? `${timedOut.message.startsWith('timed out') ? '' : 'timed out: '}${timedOut.message}`
          : `not measured in ${pool.length > 1 ? `any of the ${pool.length} runs used here` : 'this run'}${kind ? ` (${kind} has it: choose it from the status bar to see it)` : ''}${beneath ? beneathSkipped(entry, beneath.reason, active.run) : ''}${
              cannotRun ? `; experiment ${entry.answer.experiment} cannot run on ${hostGpusText(active.run)}: ${cannotRun}` : ''
            }`,
    },
    stale: [],
    simulated: isSimulatedProfile(active),
  };
}
