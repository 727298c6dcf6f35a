/**
 * `planReshape`: the study's method as arithmetic. A switch's one-time cost is split into what
 * lies on the critical path, what can be prepaid before it (at startup) and what can be deferred
 * after it (in the background); only the critical path is turned into a share of a step and of
 * the switch interval, and the memory held into a share of the GPU and of the budget. Every
 * figure is a sum of run terms (terms.ts) and says where it came from; a strategy with a missing
 * critical-path term has no total. docs/METHOD.md, "Planning a reshape". Pure: used by the CLI
 * (`commcost plan`), the webview's Plan section and the HTML report.
 */
import { STUDY_FIGURES, STUDY_POOL_ESTIMATE, studyNotComparedWhy, studyNotDrawnNote, studyReferenceNote } from '../studyFigures';
import { estimatePools, type PoolEstimate } from './estimate';
import { checkPlanFinite } from './finite';
import { strategyTerms, tpShapes, type StrategyId, type StrategyTerms } from './strategies';
import { planHost, sumTerms, type PlanHost, type PlanRun, type Term } from './terms';
import { applyTrace, traceObservations, type PlanTrace } from './traceTerms';
import type { TraceFile } from '../../protocol/trace';
import { PlanInputError, type Budget } from './units';

/** What the user asks: all optional; a share whose input is absent is left out. */
export interface PlanInputs {
  /** TP shapes switched between, largest first (default: every TP shape of the runs' GPU count). */
  shapes?: readonly number[];
  /** Time between two switches, ms. */
  switchEveryMs?: number;
  /** One step (e.g. a decode step), ms. */
  stepMs?: number;
  /** Memory budget per GPU (e.g. the KV cache's): bytes, or a fraction of the GPU's memory. */
  budget?: Budget;
  /** One more GPU count to estimate the pool at (besides 4 and 8). */
  gpus?: number;
  /**
   * A trace of the user's job (`commcost trace`) and its file name: its observed creation and
   * first-collective figures replace the run terms of the same API and size (traceTerms.ts).
   */
  trace?: { file: string; trace: TraceFile };
}

/** Against another strategy: when the prepaid cost is paid back by a shorter critical path. */
export interface BreakEven {
  against: StrategyId;
  /**
   * ahead: shorter per switch and no more prepaid; behind: no shorter and no less prepaid; after:
   * shorter per switch, ahead once `switches` switches have paid back the extra prepaid cost;
   * until: longer per switch, ahead only for the first `switches` − 1 switches; same: equal.
   */
  kind: 'ahead' | 'behind' | 'after' | 'until' | 'same';
  switches?: number;
  /** `switches` × the switch interval, ms (when the interval is given). */
  afterMs?: number;
}

/** One strategy with its sums and shares. A sum is undefined when one of its terms is missing. */
export interface StrategyPlan extends StrategyTerms {
  criticalMs?: number;
  prepaidMs?: number;
  deferredMs?: number;
  memoryBytes?: number;
  memoryShareOfGpu?: number;
  memoryShareOfBudget?: number;
  /** criticalMs / stepMs. */
  stepShare?: number;
  /** criticalMs / switchEveryMs. */
  amortisedShare?: number;
  /** criticalMs / the study's migration pause. */
  pauseRatio?: number;
  /**
   * Where the plan has two shapes or more and the critical path depends on the shape switched to:
   * each target shape's critical path (`ms`) and background work (`deferredMs`), with the run's
   * figures for a switch to that shape; `why`/`deferredWhy` (the first missing term) where a term
   * is not measured. `criticalMs`/`deferredMs` are then the mean over the targets (one switch in a
   * cycle through the shapes), set only when every target has its critical path (no mean of the
   * deferred work when a switch is not measured). `unpriced`: the target's first missing term is a
   * step the strategy cannot take (it needs a communicator the strategy destroyed: "not priced").
   */
  perTarget?: { shape: number; ms?: number; why?: string; deferredMs?: number; deferredWhy?: string; unpriced?: boolean }[];
  /** A switch's measured background work (deferredMs, or the longest target's) > switchEveryMs: not done by the next switch. */
  deferredOverruns?: boolean;
  /** Every missing term, critical path first. */
  missing: Term[];
  breakEven: BreakEven[];
}

export interface Plan {
  host: PlanHost;
  shapes: number[];
  switchEveryMs?: number;
  stepMs?: number;
  budgetBytes?: number;
  /** How the budget was given: "60 GiB" or "0.4 of the GPU's memory". */
  budgetGiven?: Budget;
  strategies: StrategyPlan[];
  /**
   * Set when the plan has fewer than two shapes (a run on 1 GPU, or one shape asked for): there is
   * nothing to switch between, so no strategy's switch is priced (no critical path, shares,
   * deferred cost or break-even); why, and what a plan with two shapes would price. Issue #28.
   */
  noSwitch?: string;
  /** The pool at 4 and 8 GPUs and the user's count, and the run's own. */
  estimates: PoolEstimate[];
  /** The trace given, what it replaced and what it left out; `hostNote` when its host is not the runs'. */
  trace?: PlanTrace & { hostNote?: string };
  study: {
    migrationPauseMs: number;
    /**
     * Set when the plan's runs are not compared with the study's migration pause (1 rank, several
     * hosts, simulated: studyFigures.ts studyNotComparedWhy): the note a chart drawing the pause gives.
     */
    migrationPauseNote?: string;
    pool8Bytes: number;
    pool8Communicators: number;
    pool8Written: string;
    source: string;
  };
}

/**
 * Why a plan of these shapes prices no switch, or undefined when it has two shapes or more: at 1
 * GPU the only TP shape is TP1; on more GPUs, one shape was asked for. Says what a plan with two
 * shapes prices: "at 1 GPU the only TP shape is TP1: there is nothing to switch between at this GPU
 * count, so no switch is priced; a run on 2 GPUs prices each strategy's switch between TP2 and TP1
 * with that run's figures (on 4 GPUs, between TP4, TP2 and TP1)".
 */
export function noSwitchWhy(ranks: number, shapes: readonly number[]): string | undefined {
  if (shapes.length >= 2) return undefined;
  const only = shapes.map((s) => `TP${s}`).join('') || 'none';
  if (ranks < 2) {
    return `at ${ranks} GPU the only TP shape is ${only}: there is nothing to switch between at this GPU count, so no switch is priced; a run on 2 GPUs prices each strategy's switch between TP2 and TP1 with that run's figures (on 4 GPUs, between TP4, TP2 and TP1)`;
  }
  const all = tpShapes(ranks).map((s) => `TP${s}`);
  return `one shape asked for (${only}): there is nothing to switch between, so no switch is priced; give two or more of the ${ranks} GPUs' shapes (${all.join(', ')}) to price a switch between them`;
}

/**
 * Each target's sum of `terms` (terms without a target counted in every one; a target with no term
 * sums to 0), or undefined when no term names a target. A target with a missing term has no sum and
 * says why (its first missing term).
 */
function targetSums(terms: readonly Term[], shapes: readonly number[]): { shape: number; ms?: number; why?: string; unpriced?: boolean }[] | undefined {
  if (!terms.some((t) => t.target !== undefined)) return undefined;
  return shapes.map((shape) => {
    const mine = terms.filter((t) => t.target === undefined || t.target === shape);
    const ms = sumTerms(mine);
    if (ms !== undefined) return { shape, ms };
    const t = mine.find((x) => x.value === undefined)!;
    const why = t.missing?.why ?? 'no figure';
    return { shape, why: `${t.what}: ${why.replace(/^not (measured|priced): /, '')}`, ...(why.startsWith('not priced: ') ? { unpriced: true } : {}) };
  });
}

/** The mean over the targets of their sums; undefined when one is missing (never a mean over the measured ones alone). */
function meanOfTargets(perTarget: readonly { shape: number; ms?: number }[]): number | undefined {
  if (perTarget.some((x) => x.ms === undefined)) return undefined;
  return perTarget.reduce((a, x) => a + x.ms!, 0) / perTarget.length;
}

function breakEven(a: StrategyPlan, b: StrategyPlan, intervalMs: number | undefined): BreakEven | undefined {
  if (a.criticalMs === undefined || b.criticalMs === undefined || a.prepaidMs === undefined || b.prepaidMs === undefined) return undefined;
  const saved = b.criticalMs - a.criticalMs;
  const extra = a.prepaidMs - b.prepaidMs;
  const at = (switches: number): BreakEven => ({ against: b.id, kind: saved > 0 ? 'after' : 'until', switches, ...(intervalMs !== undefined ? { afterMs: switches * intervalMs } : {}) });
  if (saved === 0 && extra === 0) return { against: b.id, kind: 'same' };
  if (saved > 0 && extra <= 0) return { against: b.id, kind: 'ahead' };
  if (saved <= 0 && extra >= 0) return { against: b.id, kind: 'behind' };
  // saved > 0, extra > 0: A is ahead from the switch whose savings pass its extra prepaid cost;
  // saved < 0, extra < 0: A stays ahead until B's savings pass B's extra prepaid cost.
  const switches = Math.ceil(extra / saved);
  // Savings too small to count in switches (the quotient overflows): never paid back.
  if (!Number.isFinite(switches)) return { against: b.id, kind: saved > 0 ? 'behind' : 'ahead' };
  return at(switches);
}

/**
 * The shapes of `shapes` that are TP sizes of `ranks` GPUs (divisors: TP1, TP2, TP4 of 4), and those
 * that are not, each in the order given. For a surface that plans the shapes written in code on a
 * run of fewer GPUs (the results view's Plan section): it plans `held` and says `left` are left out,
 * where the CLI's `--shapes` refuses them (checkShapes).
 */
export function splitShapes(shapes: readonly number[], ranks: number): { held: number[]; left: number[] } {
  const fits = (s: number) => Number.isSafeInteger(s) && s >= 1 && ranks >= 1 && ranks % s === 0;
  return { held: shapes.filter(fits), left: shapes.filter((s) => !fits(s)) };
}

/**
 * The shapes asked for, largest first, when each is a TP size of the GPUs the runs measured: a
 * divisor of their rank count (TP1, TP2 and TP4 of 4 GPUs; TP3 of 4 would leave a GPU out).
 * @throws PlanInputError (where: `--shapes`) naming the shape, the rank count and the valid shapes
 */
function checkShapes(shapes: readonly number[], host: PlanHost): number[] {
  const valid: number[] = [];
  for (let s = host.ranks; s >= 1; s--) if (host.ranks % s === 0) valid.push(s);
  for (const s of shapes) {
    if (Number.isSafeInteger(s) && s >= 1 && host.ranks % s === 0) continue;
    const of = host.files.length > 0 ? `the ${host.ranks} GPU${host.ranks === 1 ? '' : 's'} the run${host.files.length === 1 ? '' : 's'} measured` : `the trace's largest communicator (${host.ranks} ranks)`;
    throw new PlanInputError(
      `--shapes: tp${s} is not a TP shape of ${of}`,
      '--shapes',
      `give shapes that divide ${host.ranks}: ${valid.map((v) => `tp${v}`).join(', ')} (a larger shape needs a run on that many GPUs; --gpus N estimates the pool at N)`,
    );
  }
  return [...shapes].sort((x, y) => y - x);
}

/** The plan's host when only a trace is given: its host, NCCL and the largest communicator it made. */
function traceHost(t: PlanTrace): PlanHost {
  const ranks = Math.max(0, ...t.observations.map((o) => o.key.size));
  if (ranks < 1) {
    throw new PlanInputError(`${t.file} has no traced creation the planner can use`, '--trace', 'give a run as well (--run), or trace a job that creates communicators');
  }
  return {
    hostname: t.host,
    text: `${ranks} rank${ranks === 1 ? '' : 's'} (the trace's largest communicator)`,
    ranks,
    ...(t.ncclVersion ? { ncclVersion: t.ncclVersion } : {}),
    simulated: t.simulated,
    files: [],
  };
}

/**
 * Plans a reshape from one or more runs of one host.
 * @param runs run files with their names (the names are each term's source); combined in order:
 *   a term is read from the first run that has it
 * @param inputs shapes, interval, step, budget, GPU count, and a trace whose observed figures are
 *   preferred over the runs' of the same API and size (with no run, the host is the trace's)
 * @throws PlanInputError for runs that cannot be combined or of no rank (planHost), no run and no
 *   usable trace, a shape that does not divide the runs' rank count (where: `--shapes`), a budget
 *   fraction without the GPU's memory in the stamp, a GPU count below 1, or figures that make a
 *   number of the plan NaN or infinite (finite.ts: names the run file and field)
 */
export function planReshape(runs: readonly PlanRun[], inputs: PlanInputs = {}): Plan {
  const traced = inputs.trace ? traceObservations(inputs.trace.file, inputs.trace.trace) : undefined;
  const host = runs.length === 0 && traced ? traceHost(traced) : planHost(runs);
  if (traced && runs.length > 0) {
    host.simulated ||= traced.simulated;
    if (traced.host !== host.hostname || (traced.ncclVersion && host.ncclVersion && traced.ncclVersion !== host.ncclVersion)) {
      (traced as PlanTrace & { hostNote?: string }).hostNote = `the trace was taken on ${traced.host}${traced.ncclVersion ? ` with NCCL ${traced.ncclVersion}` : ''}, the runs on ${host.hostname}${host.ncclVersion ? ` with NCCL ${host.ncclVersion}` : ''}: its figures are that host's`;
    }
  }
  const shapes = inputs.shapes && inputs.shapes.length > 0 ? checkShapes(inputs.shapes, host) : tpShapes(host.ranks);
  let budgetBytes: number | undefined;
  if (inputs.budget && 'bytes' in inputs.budget) budgetBytes = inputs.budget.bytes;
  else if (inputs.budget) {
    if (host.gpuBytes === undefined) throw new PlanInputError('the budget is a fraction of GPU memory, but the run has no GPU memory in its stamp', '--kv-budget', 'give the budget as a size, e.g. 60GiB');
    budgetBytes = inputs.budget.fraction * host.gpuBytes;
  }
  if (inputs.gpus !== undefined && !(Number.isSafeInteger(inputs.gpus) && inputs.gpus >= 1)) {
    throw new PlanInputError(`--gpus ${inputs.gpus} is not a GPU count`, '--gpus', 'give a whole number ≥ 1, e.g. --gpus 16');
  }
  const pause = STUDY_FIGURES.migrationPause.min;
  const pauseWhy = studyNotComparedWhy(STUDY_FIGURES.migrationPause, { ranks: host.ranks, nodes: host.nodes ?? 1, simulated: host.simulated }, 'migration pause');
  const { switchEveryMs, stepMs } = inputs;
  const terms = strategyTerms(runs, host.ranks, shapes);
  const noSwitch = noSwitchWhy(host.ranks, shapes);
  const strategies = (traced ? applyTrace(terms, traced) : terms).map((t): StrategyPlan => {
    // With one shape there is no switch: nothing on its critical path or deferred after it is priced.
    // With two or more, each target shape is priced with the run's figures for a switch to it; one
    // switch is the mean over the targets, only where every target was measured.
    const perTarget = noSwitch === undefined ? targetSums(t.critical, shapes) : undefined;
    const deferredPer = noSwitch === undefined ? targetSums(t.deferred, shapes) : undefined;
    const criticalMs = noSwitch !== undefined ? undefined : perTarget ? meanOfTargets(perTarget) : sumTerms(t.critical);
    const prepaidMs = sumTerms(t.prepaid);
    // No average of the background work per switch where a switch is not measured: it would be a mean over switches the plan cannot price.
    const unmeasured = perTarget?.some((x) => x.ms === undefined) ?? false;
    const deferredMs = noSwitch !== undefined ? undefined : t.deferred.length === 0 ? 0 : unmeasured ? undefined : deferredPer ? meanOfTargets(deferredPer) : sumTerms(t.deferred);
    const memoryBytes = sumTerms(t.memory);
    const missing = [...t.critical, ...t.prepaid, ...t.deferred, ...t.memory].filter((x) => x.value === undefined);
    const merged = perTarget?.map((x) => {
      const d = deferredPer?.find((y) => y.shape === x.shape);
      return { ...x, ...(d?.ms !== undefined ? { deferredMs: d.ms } : {}), ...(d?.why !== undefined ? { deferredWhy: d.why } : {}) };
    });
    const p: StrategyPlan = { ...t, missing, breakEven: [], ...(merged ? { perTarget: merged } : {}) };
    if (criticalMs !== undefined) {
      p.criticalMs = criticalMs;
      p.pauseRatio = criticalMs / pause;
      if (stepMs !== undefined) p.stepShare = criticalMs / stepMs;
      if (switchEveryMs !== undefined) p.amortisedShare = criticalMs / switchEveryMs;
    }
    if (prepaidMs !== undefined) p.prepaidMs = prepaidMs;
    if (deferredMs !== undefined) p.deferredMs = deferredMs;
    // Overruns where any switch's measured background work is longer than the interval.
    const longest = Math.max(...(deferredPer ? deferredPer.flatMap((x) => (x.ms !== undefined ? [x.ms] : [])) : deferredMs !== undefined ? [deferredMs] : []));
    if (switchEveryMs !== undefined && Number.isFinite(longest)) p.deferredOverruns = longest > switchEveryMs;
    if (memoryBytes !== undefined) {
      p.memoryBytes = memoryBytes;
      if (host.gpuBytes !== undefined) p.memoryShareOfGpu = memoryBytes / host.gpuBytes;
      if (budgetBytes !== undefined) p.memoryShareOfBudget = memoryBytes / budgetBytes;
    }
    return p;
  });
  for (const a of strategies) {
    for (const b of strategies) {
      if (a === b) continue;
      const be = breakEven(a, b, switchEveryMs);
      if (be) a.breakEven.push(be);
    }
  }
  const counts = [...new Set([host.ranks, 4, 8, ...(inputs.gpus !== undefined ? [inputs.gpus] : [])])].sort((x, y) => x - y);
  const plan: Plan = {
    host,
    shapes,
    ...(switchEveryMs !== undefined ? { switchEveryMs } : {}),
    ...(stepMs !== undefined ? { stepMs } : {}),
    ...(budgetBytes !== undefined ? { budgetBytes } : {}),
    ...(inputs.budget ? { budgetGiven: inputs.budget } : {}),
    strategies,
    ...(noSwitch !== undefined ? { noSwitch } : {}),
    estimates: estimatePools(runs, host.ranks, counts),
    ...(traced ? { trace: traced } : {}),
    study: {
      migrationPauseMs: pause,
      // A simulated plan draws no study line (webview/planChartData.ts): its note says the pause is not drawn.
      ...(host.simulated
        ? { migrationPauseNote: studyNotDrawnNote(STUDY_FIGURES.migrationPause, 'migration pause', runs.length > 1 ? "these runs' figures" : "this run's figures") }
        : pauseWhy !== undefined
          ? { migrationPauseNote: studyReferenceNote(STUDY_FIGURES.migrationPause, 'migration pause', runs.length > 1 ? 'these runs' : 'this run', pauseWhy) }
          : {}),
      pool8Bytes: STUDY_POOL_ESTIMATE.bytes.min,
      pool8Communicators: STUDY_POOL_ESTIMATE.communicators,
      // The study gives this estimate no setting (DESIGN.md: say "setting not stated").
      pool8Written: `${STUDY_POOL_ESTIMATE.writtenCount}, ${STUDY_POOL_ESTIMATE.bytes.written} at ${STUDY_POOL_ESTIMATE.gpus} GPUs (setting not stated)`,
      source: STUDY_POOL_ESTIMATE.source,
    },
  };
  checkPlanFinite(plan, runs);
  return plan;
}
