/**
 * `planRecovery`: the recovery paths after one rank of a run's communicator is lost, priced with
 * the run's own figures. Each path is split into what the job waits on after the loss (its
 * critical path), what runs beside the job once it runs again (background), and what it pays when
 * the rank returns (the grow back); each term is one run step's median (with its p90) and names
 * its source (file, experiment/variant/step). A term the runs lack is named with what would
 * measure it and why the run has none; a sum with a missing term has no value ("incomplete").
 * The in-flight work each path drops is the run's drop check where it has one, else said not
 * measured. docs/METHOD.md, "Recovery after a lost rank". Pure: used by `commcost plan
 * --recovery`, the panel's Recovery section and the HTML report.
 */
import type { CountSummary, VariantSummary } from '../../protocol/events';
import type { ExperimentId } from '../../protocol/runOptions';
import { countOf } from '../verdict/inFlight';
import { poolVariants } from './strategies';
import { planHost, stepTerm, sumTerms, type PlanHost, type PlanRun, type Term } from './terms';
import { msText } from './units';
import { hostHas, lackingNeeds, type HostHas } from './recoveryNeeds';

export { hostHas, needsWords, lackingNeeds, type HostHas } from './recoveryNeeds';

/** The recovery paths, by id. */
export type RecoveryPathId = 'revoke-shrink' | 'shrink-abort' | 'abort-reinit' | 'c10d-recreate' | 'spare';

/** A term of a recovery path: a run step's median (`value`, ms) with its p90, or missing. */
export interface RecoveryTerm extends Term {
  /** The same step's p90 over its iterations (ms), where the run has it. */
  p90?: number;
  /**
   * Set on a missing term when the run timed the same step in a variant this path does not use
   * (a 1-rank run's `revoke/idle/destroy` revoke, where the path needs `…/shrink-abort`): its median
   * (ms) and label, so the step is never said "not measured in this run".
   */
  elsewhere?: { experiment: string; variant: string; step: string; ms: number; label: string };
}

/** One part of a path: what the job waits on, and what runs beside it. */
export interface RecoveryPhase {
  /** The job waits on these, one after the other (ms). */
  critical: RecoveryTerm[];
  /** These run in the background, beside the job once it runs again (ms). */
  background: RecoveryTerm[];
  /** Σ critical medians (ms); undefined when one is missing. An empty list is 0. */
  criticalMs?: number;
  /** Σ background medians (ms); undefined when one is missing. */
  backgroundMs?: number;
}

/** The in-flight work a path drops, as the run's drop check measured it. */
export interface DropReading {
  /** True when the run has the counts (`inFlightCompleted`, `inFlightDropped`). */
  measured: boolean;
  /** Where the counts come from (measured only). */
  source?: { file: string; experiment: string; variant: string };
  /** Per rank-iteration counts (min, max, sum, n), as the run's variant summary keeps them. */
  enqueued?: CountSummary;
  completed?: CountSummary;
  dropped?: CountSummary;
  atStart?: CountSummary;
  /** The reading in words, or why it is not measured. */
  text: string;
}

/** One recovery path with its sums. */
export interface RecoveryPath {
  id: RecoveryPathId;
  /** Its name in tables and sentences. */
  name: string;
  /** What it does, in one sentence. */
  how: string;
  /** The communicators' sizes, from the run's rank count: "2 → 1 ranks, grown back 1 → 2". */
  sizes: string;
  afterLoss: RecoveryPhase;
  /** When the lost rank returns; undefined when the path has nothing to do then (`onReturnNone` says why). */
  onReturn?: RecoveryPhase;
  onReturnNone?: string;
  /** afterLoss.criticalMs + onReturn.criticalMs (ms): the job's waits over one loss and return; undefined when a critical term is missing. */
  cycleMs?: number;
  drops: DropReading;
  /** Every missing term, critical path first. */
  missing: RecoveryTerm[];
  /** True when every term of the path has a figure. */
  complete: boolean;
  /** What the figures stand for where they are not exactly the path. */
  note?: string;
}

/** The recovery plan of one run (or several of one host, NCCL and rank count). */
export interface RecoveryPlan {
  host: PlanHost;
  /**
   * The paths, by the job's wait after the loss (`afterLoss.criticalMs`, shortest first; equal:
   * by `cycleMs`); paths whose wait after the loss has a missing term last, in the table's order.
   */
  paths: RecoveryPath[];
  /**
   * Set for a run of 1 rank: what the recovery section can and cannot show, in one line (only a full
   * rebuild of the 1 rank applies; the paths that need a survivor are named, never priced as
   * "missing"; a step the run timed outside a path is named with its figure). The surfaces show
   * it in place of the n-rank sentences and of the rows that cannot apply (recoveryApplies).
   */
  oneRank?: string;
}

/** Whether a path can apply to a run of `ranks`: at 1 rank only a full rebuild of it (abort + re-init, c10d re-create). */
export function recoveryApplies(p: RecoveryPath, ranks: number): boolean {
  return ranks >= 2 || p.onReturn === undefined;
}

/** The first run's summary of experiment/variant (in the order given) and its file. */
function variantIn(runs: readonly PlanRun[], experiment: string, variant: string): { file: string; v: VariantSummary } | undefined {
  for (const p of runs) {
    const v = p.run.experiments.find((e) => e.experiment === experiment)?.variants.find((x) => x.variant === variant);
    if (v) return { file: p.file, v };
  }
  return undefined;
}

/** What a term needs, and why the runs have none, when it is missing. */
interface Lack {
  /** The call in words: "ncclCommGrow". */
  call: string;
  /** The experiments whose needs it has (catalogue). */
  needs: ExperimentId[];
  /** Fewest ranks the term needs (a shrink: 2); with fewer, the why says the run's rank count. */
  minRanks?: number;
  /** Why, in place of the run's skip reason, when the run has fewer ranks than `minRanks`. */
  fewRanksWhy?: string;
  /** What it needs in words, in place of the catalogue's (`needsWords`); give it only where the runs' host lacks it. */
  needsText?: string;
}

/**
 * A ms term: `experiment`/`variant`/`step`'s median and p90 in the first run that has it (variants
 * tried in order), else missing: "not measured in this run: ncclCommGrow needs NCCL ≥ 2.29.2 and
 * 2 GPUs — grow was skipped in f.json: needs NCCL ≥ 2.29.2, host has 2.28.9".
 */
function term(runs: readonly PlanRun[], has: HostHas, what: string, experiment: ExperimentId, variants: readonly string[], step: string, lack: Lack): RecoveryTerm {
  const ranks = has.ranks;
  const t: RecoveryTerm = stepTerm(runs, what, experiment, variants, step);
  if (t.source) {
    const p90 = variantIn(runs, experiment, t.source.variant)?.v.steps.find((s) => s.step === step)?.stats.p90;
    return typeof p90 === 'number' && Number.isFinite(p90) ? { ...t, p90 } : t;
  }
  const these = runs.length > 1 ? 'these runs' : 'this run';
  const few = lack.minRanks !== undefined && ranks < lack.minRanks;
  const why = few ? (lack.fewRanksWhy ?? `${these} ${runs.length > 1 ? 'have' : 'has'} ${ranks} rank${ranks === 1 ? '' : 's'}`) : (t.missing?.why ?? 'no figure');
  // A need is said only where the runs' host lacks it (the stamp's NCCL, its ranks, torch).
  const needs = lack.needsText ?? lackingNeeds(lack.needs, has);
  // The same step timed in another variant: this path's figure is missing, the step is not unmeasured.
  const other = timedElsewhere(runs, experiment, variants, step);
  if (other) {
    return {
      ...t,
      elsewhere: other,
      missing: { experiment, why: `no figure for this path in ${these}: ${needs ? `${lack.call} needs ${needs} — ` : ''}${why}; ${these} timed "${other.label}" in ${experiment}/${other.variant} (${msText(other.ms)}), a variant this path does not use` },
    };
  }
  return { ...t, missing: { experiment, why: `not measured in ${these}: ${needs ? `${lack.call} needs ${needs} — ` : ''}${why}` } };
}

/** The first variant of `experiment` not in `variants` that timed `step`, with its median and label. */
function timedElsewhere(runs: readonly PlanRun[], experiment: string, variants: readonly string[], step: string): RecoveryTerm['elsewhere'] {
  for (const p of runs) {
    for (const v of p.run.experiments.find((e) => e.experiment === experiment)?.variants ?? []) {
      if (variants.includes(v.variant)) continue;
      const st = v.steps.find((x) => x.step === step);
      if (st && Number.isFinite(st.stats.median)) return { experiment, variant: v.variant, step, ms: st.stats.median, label: st.label ?? step };
    }
  }
  return undefined;
}

/**
 * The pool's switch as the spare's: the pool switches to a smaller pooled child (its step label
 * names it, "switch to TP1 inside the pool"), never to a spare of the run's `n` ranks. A switch to
 * a one-rank child has no peer in its collective, so it stands for no switch to a spare: the term
 * is missing, saying so. A switch to a child of 2 or more ranks is kept, its size named in `what`.
 */
function spareSwitch(runs: readonly PlanRun[], n: number, t: RecoveryTerm): RecoveryTerm {
  if (!t.source) return t;
  const label = variantIn(runs, 'pool', t.source.variant)?.v.steps.find((x) => x.step === 'switch')?.label ?? '';
  const k = Number(/TP(\d+)/.exec(label)?.[1]);
  if (!Number.isFinite(k) || k >= n) return t;
  const these = runs.length > 1 ? 'these runs' : 'this run';
  if (k === 1) {
    // The figure, its source and p90 are dropped: only what the term is and why it is missing stay.
    return {
      what: t.what,
      unit: t.unit,
      ...(t.key !== undefined ? { key: t.key } : {}),
      ...(t.times !== undefined ? { times: t.times } : {}),
      ...(t.target !== undefined ? { target: t.target } : {}),
      missing: {
        experiment: 'pool',
        why: `not measured in ${these}: the pool's switch here is to a one-rank TP1 child (${t.source.variant}), whose collective has no peer, not to a spare of ${n} ranks`,
      },
    };
  }
  return { ...t, what: `${t.what}, timed as the pool's switch to a TP${k} child of ${k} ranks (not a spare of ${n})` };
}

/** "4" or "3–4". */
const countWords = (c: CountSummary): string => (c.min === c.max ? String(c.min) : `${c.min}–${c.max}`);

/**
 * The drop check of `experiment`/`variant` in words, from its counts: "4 allreduces in flight as
 * the revoke began: 0 dropped, 4 completed on every rank (10 rank-iterations)". Not measured when
 * the runs have no such variant or it has no counts (`notMeasured` says why).
 */
function dropReading(runs: readonly PlanRun[], experiment: string, variant: string, call: string, notMeasuredWhy: string): DropReading {
  const found = variantIn(runs, experiment, variant);
  if (!found) return notMeasured(runs, notMeasuredWhy);
  const completed = countOf(found?.v, 'inFlightCompleted');
  const dropped = countOf(found?.v, 'inFlightDropped');
  if (!completed || !dropped) return notMeasured(runs, `${experiment}/${variant} has no drop-check counts`);
  const enqueued = countOf(found.v, 'inFlightEnqueued');
  const atStart = countOf(found.v, 'inFlightAtStart');
  const n = dropped.n;
  const of = `${n} rank-iteration${n === 1 ? '' : 's'}, ${experiment}/${variant}`;
  const head = `${enqueued ? countWords(enqueued) : countWords({ ...completed, min: completed.min + dropped.min, max: completed.max + dropped.max })} allreduces enqueued right before the ${call}`;
  let text: string;
  if (atStart && atStart.max === 0) text = `${head}: finished before it in every rank-iteration, nothing left to drop (${countWords(completed)} completed; ${of})`;
  else {
    // Without the count the run cannot show the work was in flight at the call: said (verdict/inFlight.ts, the same rule).
    const some = !atStart
      ? `; no inFlightAtStart count, so whether they were still in flight as the ${call} began is not known`
      : atStart.min === 0
        ? `; in ${atStart.n - atStart.sum} of ${atStart.n} rank-iterations they had finished before it`
        : '';
    text =
      dropped.max === 0
        ? `${head}: none dropped, ${countWords(completed)} completed on every rank (${of}${some})`
        : `${head}: ${countWords(dropped)} dropped, ${countWords(completed)} completed per rank (${dropped.sum} dropped over ${of}${some})`;
  }
  return { measured: true, source: { file: found.file, experiment, variant }, completed, dropped, ...(enqueued ? { enqueued } : {}), ...(atStart ? { atStart } : {}), text };
}

/** A drop reading the runs do not have, with why. */
function notMeasured(runs: readonly PlanRun[], why: string): DropReading {
  return { measured: false, text: `not measured in ${runs.length > 1 ? 'these runs' : 'this run'}: ${why}` };
}

/** A phase with its sums. */
function phase(critical: RecoveryTerm[], background: RecoveryTerm[]): RecoveryPhase {
  const c = sumTerms(critical);
  const b = sumTerms(background);
  return { critical, background, ...(c !== undefined ? { criticalMs: c } : {}), ...(b !== undefined ? { backgroundMs: b } : {}) };
}

/** A path with its cycle sum and missing terms. */
function path(p: Omit<RecoveryPath, 'cycleMs' | 'missing' | 'complete'>): RecoveryPath {
  const r = p.onReturn;
  const cycle = p.afterLoss.criticalMs === undefined || (r && r.criticalMs === undefined) ? undefined : p.afterLoss.criticalMs + (r?.criticalMs ?? 0);
  const missing = [...p.afterLoss.critical, ...(r?.critical ?? []), ...p.afterLoss.background, ...(r?.background ?? [])].filter((t) => t.value === undefined);
  return { ...p, ...(cycle !== undefined ? { cycleMs: cycle } : {}), missing, complete: missing.length === 0 };
}

/**
 * The recovery paths after one rank of the runs' communicator is lost, each term the runs' own
 * figure (docs/METHOD.md "Recovery after a lost rank" gives every term's step):
 * - revoke + shrink: revoke `revoke` + `call` + `first` (`inflight/shrink-abort`, else `idle/…`);
 * - shrink with NCCL_SHRINK_ABORT: shrink `call` + `first` (`abort/inflight`, else `abort`);
 *   both release the parent in the background (shrink-abort `abort/abort/excluded-exits`
 *   `release`, else `…/excluded-aborts`) and grow back when the rank returns (grow `call` + `first`);
 * - abort + a full rebuild: abort `abort` + `reinit` + `first` (all n ranks: nothing to grow back);
 * - c10d destroy + re-create: c10d `destroy` + `call` + `first` (`init/eager`, else `init/lazy`);
 * - a spare kept warm: the pool's `switch`; the failed communicator's abort in the background,
 *   and when the rank returns a new spare (init `call` + `first`) in the background.
 * @param runs run files with their names (each term's source); a term comes from the first that has it
 * @throws PlanInputError for no run, or runs of different hosts, NCCL versions or rank counts (planHost)
 */
export function planRecovery(runs: readonly PlanRun[]): RecoveryPlan {
  const host = planHost(runs);
  const n = host.ranks;
  const m = n - 1;
  const has = hostHas(runs, host);
  const T = (what: string, experiment: ExperimentId, variants: readonly string[], step: string, lack: Lack): RecoveryTerm => term(runs, has, what, experiment, variants, step, lack);
  const R = (k: number): string => `${k} rank${k === 1 ? '' : 's'}`;
  const oneRank = 'a communicator of 1 rank has no survivor to keep running on';
  // At one rank there is no n−1: the labels never say "1 → 0 ranks".
  const toLeft = n >= 2 ? `${n} → ${R(m)}` : 'to the survivors';
  const left = n >= 2 ? `the ${R(m)} left` : 'the survivors';
  const grown = n >= 2 ? `${m} → ${R(n)}` : `back to ${R(n)}`;

  const revokeV = ['inflight/shrink-abort', 'idle/shrink-abort'];
  const revokeLack: Lack = { call: 'ncclCommRevoke then ncclCommShrink', needs: ['revoke', 'shrink'], minRanks: 2, fewRanksWhy: oneRank };
  const shrinkV = ['abort/inflight', 'abort'];
  const shrinkLack: Lack = { call: 'ncclCommShrink', needs: ['shrink'], minRanks: 2, fewRanksWhy: oneRank };
  const releaseParent = (): RecoveryTerm =>
    T(`ncclCommAbort of the old parent (${R(n)}) by the survivors, after NCCL_SHRINK_ABORT`, 'shrink-abort', ['abort/abort/excluded-exits', 'abort/abort/excluded-aborts'], 'release', {
      call: "the survivors' release of a shrunk parent (the shrink-abort experiment, field case C5)",
      needs: ['shrink-abort'],
      minRanks: 2,
      fewRanksWhy: oneRank,
    });
  const growBack = (): RecoveryPhase =>
    phase(
      [
        T(`ncclCommGrow ${grown}`, 'grow', ['default'], 'call', { call: 'ncclCommGrow', needs: ['grow'], minRanks: 2, fewRanksWhy: 'a run of 1 rank has no communicator of fewer ranks to grow from' }),
        T(`first collective on the grown ${R(n)}`, 'grow', ['default'], 'first', { call: 'ncclCommGrow', needs: ['grow'], minRanks: 2, fewRanksWhy: 'a run of 1 rank has no communicator of fewer ranks to grow from' }),
      ],
      [],
    );
  const shrunk = n >= 2 ? `${n} → ${R(m)}, grown back ${m} → ${R(n)}` : `${R(n)}: no survivor`;
  const noDropCheck = (what: string) => `${what} has no drop check (its work is not in flight when it is timed)`;
  const fullSize = n >= 2 ? `the rebuild is of all ${R(n)} already: nothing to grow back` : 'the rebuild is of the run\'s 1 rank already: nothing to grow back';

  const C10D = (call: string): Lack => ({ call, needs: ['c10d'], ...(has.torch ? {} : { needsText: "torch on the GPU host (the c10d experiment: commcost measure --experiments c10d --python <torch's python>)" }) });
  const { plain } = poolVariants(runs, n);
  const pathsInOrder: RecoveryPath[] = [
    path({
      id: 'revoke-shrink',
      name: 'revoke + shrink',
      how: `ncclCommRevoke the communicator until quiet, ncclCommShrink it (NCCL_SHRINK_ABORT) to ${left} and run the first collective; the old parent is aborted in the background; when the rank returns, ncclCommGrow back to ${R(n)} and the first collective`,
      sizes: shrunk,
      afterLoss: phase(
        [
          T(`ncclCommRevoke until quiet (${R(n)})`, 'revoke', revokeV, 'revoke', revokeLack),
          T(`ncclCommShrink (NCCL_SHRINK_ABORT) after revoke, ${toLeft}`, 'revoke', revokeV, 'call', revokeLack),
          T(`first collective on ${left}`, 'revoke', revokeV, 'first', revokeLack),
        ],
        [releaseParent()],
      ),
      onReturn: growBack(),
      drops: dropReading(runs, 'revoke', 'inflight/shrink-abort', 'revoke', n < 2 ? `${oneRank} (the revoke experiment's shrink variants need 2 GPUs)` : 'no revoke/inflight/shrink-abort, the variant with the drop check'),
      note: 'the revoke experiment aborts the revoked parent untimed; its release is priced at the shrink-abort experiment\'s ncclCommAbort of a parent shrunk with NCCL_SHRINK_ABORT, the excluded rank leaving it as it is',
    }),
    path({
      id: 'shrink-abort',
      name: 'shrink (NCCL_SHRINK_ABORT)',
      how: `ncclCommShrink the communicator with NCCL_SHRINK_ABORT to ${left}, without a revoke, and run the first collective; the old parent is aborted in the background; when the rank returns, ncclCommGrow back to ${R(n)} and the first collective`,
      sizes: shrunk,
      afterLoss: phase(
        [
          T(`ncclCommShrink (NCCL_SHRINK_ABORT), ${toLeft}`, 'shrink', shrinkV, 'call', shrinkLack),
          T(`first collective on ${left}`, 'shrink', shrinkV, 'first', shrinkLack),
        ],
        [releaseParent()],
      ),
      onReturn: growBack(),
      drops: dropReading(runs, 'shrink', 'abort/inflight', 'shrink', n < 2 ? `${oneRank} (shrink needs 2 GPUs)` : 'no shrink/abort/inflight, the variant with the drop check'),
    }),
    path({
      id: 'abort-reinit',
      name: 'abort + re-init',
      how: `ncclCommAbort the communicator, then a fresh ncclCommInitRankConfig of ${R(n)} and its first collective: a full rebuild`,
      sizes: `${R(n)} → a fresh ${R(n)}`,
      afterLoss: phase(
        [
          T(`ncclCommAbort (${R(n)})`, 'abort', ['default'], 'abort', { call: 'ncclCommAbort', needs: ['abort'] }),
          T(`ncclCommInitRankConfig after abort (${R(n)})`, 'abort', ['default'], 'reinit', { call: 'ncclCommInitRankConfig after abort', needs: ['abort'] }),
          T(`first collective of the re-init (${R(n)})`, 'abort', ['default'], 'first', { call: 'ncclCommInitRankConfig after abort', needs: ['abort'] }),
        ],
        [],
      ),
      onReturnNone: fullSize,
      drops: notMeasured(runs, noDropCheck('the abort experiment')),
      note: `the abort experiment re-inits ${n >= 2 ? `all ${R(n)}` : 'its 1 rank'}: a full rebuild takes the lost rank's replacement (or the rank back) at once; waiting for it is no communicator cost and is in no figure`,
    }),
    path({
      id: 'c10d-recreate',
      name: 'c10d destroy + re-create',
      how: `destroy_process_group, then init_process_group of ${R(n)} and its first all_reduce`,
      sizes: `${R(n)} → a fresh ${R(n)}`,
      afterLoss: phase(
        [
          T(`destroy_process_group (${R(n)})`, 'c10d', ['init/eager', 'init/lazy'], 'destroy', C10D('destroy_process_group')),
          T(`init_process_group (${R(n)})`, 'c10d', ['init/eager', 'init/lazy'], 'call', C10D('init_process_group')),
          T(`first all_reduce of the new group (${R(n)})`, 'c10d', ['init/eager', 'init/lazy'], 'first', C10D('init_process_group')),
        ],
        [],
      ),
      onReturnNone: fullSize,
      drops: notMeasured(runs, noDropCheck('the c10d experiment')),
      note: "the c10d experiment times destroy_process_group on a healthy group with torch's own NCCL (the init/eager variant, else init/lazy)",
    }),
    path({
      id: 'spare',
      name: 'spare kept warm',
      how: 'keep a warm communicator ready beside the one in use; at the loss switch to it (the pool\'s switch: a collective, a CUDA graph capture and instantiate); the failed one is aborted in the background; when the rank returns, a new spare is built in the background',
      sizes: `${R(n)} → the spare's ${R(n)}`,
      afterLoss: phase(
        [
          spareSwitch(
            runs,
            n,
            T('switch to the spare (a collective + CUDA graph capture + instantiate)', 'pool', [plain], 'switch', {
              call: "the pool's switch",
              needs: ['pool'],
              ...(n < 2 ? { needsText: '2 GPUs (a pool of two TP shapes)' } : {}),
              minRanks: 2,
              fewRanksWhy: 'a pool of 1 rank has one TP shape: the pool experiment has nothing to switch to',
            }),
          ),
        ],
        [T(`ncclCommAbort of the failed communicator (${R(n)})`, 'abort', ['default'], 'abort', { call: 'ncclCommAbort', needs: ['abort'] })],
      ),
      onReturn: phase(
        [],
        [
          T(`ncclCommInitRankConfig of a new spare (${R(n)})`, 'init', ['default'], 'call', { call: 'ncclCommInitRankConfig', needs: ['init'] }),
          T(`its first collective (${R(n)})`, 'init', ['default'], 'first', { call: 'ncclCommInitRankConfig', needs: ['init'] }),
        ],
      ),
      drops: notMeasured(runs, `${noDropCheck("the pool experiment's switch")}, nor does the abort that releases the failed communicator`),
      note: "the pool's switch is timed to a smaller pooled child (its step names the TP shape), between healthy communicators; the run times no switch to a spare of its own rank count, none beside a failed communicator, and not the GPU a spare needs",
    }),
  ];
  const order = (a: RecoveryPath, b: RecoveryPath): number => {
    const [x, y] = [a.afterLoss.criticalMs, b.afterLoss.criticalMs];
    if (x === undefined || y === undefined) return (x === undefined ? 1 : 0) - (y === undefined ? 1 : 0);
    if (x !== y) return x - y;
    const [u, v] = [a.cycleMs, b.cycleMs];
    return u === undefined || v === undefined ? (u === undefined ? 1 : 0) - (v === undefined ? 1 : 0) : u - v;
  };
  const paths = [...pathsInOrder].sort(order);
  return { host, paths, ...(n < 2 ? { oneRank: oneRankLine(host, paths) } : {}) };
}

/**
 * The one line of a 1-rank recovery section: "1 rank: losing it leaves no survivor, so this run can
 * show only a full rebuild of its 1 rank: abort + re-init 1.02 s after the loss (ncclCommAbort 999 ms
 * + …); c10d destroy + re-create not measured (…); revoke + shrink, shrink and a spare kept warm need
 * 2 GPUs (this run timed "ncclCommRevoke until quiet" in revoke/idle/destroy, 992 ms,
 * outside any of them)".
 */
function oneRankLine(host: PlanHost, paths: readonly RecoveryPath[]): string {
  const these = host.files.length > 1 ? 'these runs' : 'this run';
  const full = paths.filter((p) => recoveryApplies(p, 1)).map((p) => {
    const a = p.afterLoss;
    if (a.criticalMs !== undefined) return `${p.name} ${msText(a.criticalMs)} after the loss (${a.critical.map((t) => `${t.what.replace(/ \(1 rank\)$/, '')} ${msText(t.value!)}`).join(' + ')})`;
    const t = a.critical.find((x) => x.value === undefined);
    return `${p.name} not measured (${(t?.missing?.why ?? 'no figure').replace(/^not measured in (this run|these runs): /, '')})`;
  });
  const rest = paths.filter((p) => !recoveryApplies(p, 1));
  const seen = new Set<string>();
  const elsewhere = rest
    .flatMap((p) => [...p.afterLoss.critical, ...p.afterLoss.background, ...(p.onReturn?.critical ?? []), ...(p.onReturn?.background ?? [])])
    .flatMap((t) => (t.elsewhere && !seen.has(`${t.elsewhere.experiment}/${t.elsewhere.variant}/${t.elsewhere.step}`) && seen.add(`${t.elsewhere.experiment}/${t.elsewhere.variant}/${t.elsewhere.step}`) ? [t.elsewhere] : []))
    .map((e) => `"${e.label}" in ${e.experiment}/${e.variant}, ${msText(e.ms)}`);
  const timed = elsewhere.length > 0 ? ` (${these} timed ${elsewhere.join(', ')}, outside any of them)` : '';
  return `1 rank: losing it leaves no survivor, so ${these} can show only a full rebuild of its 1 rank: ${full.join('; ')}; ${rest.map((p) => p.name).join(', ')} need 2 GPUs${timed}`;
}

/**
 * One line for a run none of whose recovery terms was measured (a run of other experiments only):
 * "no figures for a recovery plan: the run measured none of abort, revoke, shrink, grow, c10d, pool",
 * shown by the panel instead of a table of "incomplete". Undefined when any term has a figure.
 */
export function recoveryEmptyLine(plan: RecoveryPlan): string | undefined {
  const phases = plan.paths.flatMap((p) => [p.afterLoss, ...(p.onReturn ? [p.onReturn] : [])]);
  const measured = phases.some((ph) => [...ph.critical, ...ph.background].some((t) => t.value !== undefined));
  return measured ? undefined : 'no figures for a recovery plan: the run measured none of abort, revoke, shrink, grow, c10d, pool';
}

/** A path's sum in words (CLI and panel tables): the figure, "incomplete" (a term is missing), "0 ms" for no terms, "–" for no phase. */
export function recoverySumText(ms: number | undefined, terms: readonly RecoveryTerm[] | undefined): string {
  if (terms === undefined) return '–';
  if (ms === undefined) return 'incomplete';
  return terms.length === 0 ? '0 ms' : msText(ms);
}

/** The in-flight column: "0 of 4 dropped" from the run's drop check, else "not measured". */
export function droppedText(p: RecoveryPath): string {
  const d = p.drops;
  if (!d.measured || !d.dropped) return 'not measured';
  const span = (c: { min: number; max: number }) => (c.min === c.max ? String(c.max) : `${c.min}–${c.max}`);
  return `${span(d.dropped)} of ${d.enqueued ? span(d.enqueued) : '?'} dropped`;
}
