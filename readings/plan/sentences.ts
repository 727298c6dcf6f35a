/**
 * The plan in sentences, each chosen by the figures it states: true at 1 rank (one TP shape, no
 * split), at n ranks, on a simulated run (said so first) and where a term is missing (said
 * missing, with why). Nothing here states a belief about NCCL: only the runs' sums and shares.
 * Pure.
 */
import type { Plan, StrategyPlan } from './planner';
import type { PoolEstimate } from './estimate';
import { sumTerms } from './terms';
import { bytesText, msText, percentText, stepShareText } from './units';

/**
 * "in this simulated run (SIMULATED: …)", "on this host (2× NVIDIA H200, NCCL 2.28.9)", or over
 * several nodes "on gpu0 and gpu1 (16× NVIDIA H200 over 2 nodes, NCCL 2.28.9)".
 */
export function planWhere(plan: Plan): string {
  const h = plan.host;
  const what = `${h.text}${h.ncclVersion ? `, NCCL ${h.ncclVersion}` : ''}`;
  return h.simulated ? `SIMULATED — in this simulated run (${what}; commcost's simulated NCCL, not a measurement)` : `on ${h.nodes !== undefined ? h.hostname : 'this host'} (${what})`;
}

/** ", 2.3% of a 60 GiB budget" / " per GPU, more than the 60 GiB budget (120%)" / the GPU's share; "" without either. */
function memoryShare(plan: Plan, s: StrategyPlan): string {
  if (s.memoryShareOfBudget !== undefined && plan.budgetBytes !== undefined) {
    const budget = bytesText(plan.budgetBytes);
    return s.memoryShareOfBudget > 1 ? `, more than the ${budget} budget (${percentText(s.memoryShareOfBudget)} of it)` : `, ${percentText(s.memoryShareOfBudget)} of a ${budget} budget`;
  }
  if (s.memoryShareOfGpu !== undefined) return `, ${percentText(s.memoryShareOfGpu)} of the GPU's memory`;
  return '';
}

/** ": 8% of a 30 ms step once, 0.12% amortised over 2 s"; "" without a step or an interval. */
function timeShares(plan: Plan, s: StrategyPlan): string {
  const parts: string[] = [];
  if (s.stepShare !== undefined && plan.stepMs !== undefined) {
    parts.push(`${stepShareText(s.stepShare)}${s.stepShare >= 1 ? '' : ' of'} a ${msText(plan.stepMs)} step once`);
  }
  if (s.amortisedShare !== undefined && plan.switchEveryMs !== undefined) parts.push(`${percentText(s.amortisedShare)} amortised over ${msText(plan.switchEveryMs)}`);
  return parts.length > 0 ? `: ${parts.join(', ')}` : '';
}

/** The first missing term of a strategy in words: "ncclCommResume (suspend was skipped in x.json: needs NCCL ≥ 2.29.7…)". */
export function missingText(s: StrategyPlan): string {
  const t = s.missing[0];
  return t ? `${t.what} (${t.missing?.why ?? 'no figure'})` : '';
}

/**
 * What the on-demand rebuild is made of, so that its figure says what it compares: "ncclCommInitRankConfig
 * TP2 + first collective TP2"; priced per target shape, each target with its own terms and figure:
 * "to TP2, ncclCommInitRankConfig TP2 + first collective TP2, 169 ms; to TP1, ncclCommSplit into TP1
 * + first collective TP1, 45.5 ms" (the same figure the verdict's pool line gives for that shape).
 */
function rebuildWhat(lazy: StrategyPlan): string {
  const words = (terms: readonly { what: string }[]): string => terms.map((t) => t.what.replace(/ \(.*\)$/, '')).join(' + ');
  if (!lazy.perTarget) return words(lazy.critical);
  return lazy.perTarget
    .map((x) => `to TP${x.shape}, ${words(lazy.critical.filter((t) => t.target === x.shape))}${x.ms !== undefined ? `, ${msText(x.ms)}` : ''}`)
    .join('; ');
}

/** " (the mean over its targets: to TP2 169 ms, to TP1 45.5 ms)"; "" when the critical path does not depend on the target. */
function perTargetText(s: StrategyPlan): string {
  if (!s.perTarget || s.perTarget.length < 2) return '';
  return ` (the mean over the shapes switched to: ${s.perTarget.map((x) => `to TP${x.shape} ${x.ms !== undefined ? msText(x.ms) : 'missing'}`).join(', ')})`;
}

/**
 * The headline: the prewarmed pool against the on-demand rebuild, the study's sentence with this
 * run's figures — or why it cannot be said (one shape, a missing term).
 */
export function poolSentence(plan: Plan): string {
  const where = planWhere(plan);
  const pool = plan.strategies.find((s) => s.id === 'pool');
  const lazy = plan.strategies.find((s) => s.id === 'lazy');
  if (!pool || !lazy) return `${where}: no pool to plan`;
  if (plan.noSwitch !== undefined) {
    // One shape: no switch is priced; what the run measured of that shape's communicator is said as such.
    const ms = sumTerms(lazy.critical);
    const shape = plan.shapes.map((s) => `TP${s}`).join('');
    const cost =
      ms !== undefined
        ? `; its one communicator (${shape}) costs ${msText(ms)} to its first collective${lazy.memoryBytes !== undefined ? ` and holds ${bytesText(lazy.memoryBytes)} per GPU` : ''} here`
        : '';
    return `${where}, ${plan.noSwitch}${cost}`;
  }
  if (pool.criticalMs === undefined) {
    const rebuild = lazy.criticalMs !== undefined ? `; a switch is a rebuild of ${msText(lazy.criticalMs)}${timeShares(plan, lazy)}` : '';
    return `${where}, a prewarmed pool has no switch figure: ${missingText(pool)}${rebuild}`;
  }
  const k = plan.shapes.length;
  const memory = pool.memoryBytes !== undefined ? ` costs ${bytesText(pool.memoryBytes)} per GPU${memoryShare(plan, pool)},` : ` (memory missing: ${pool.missing.find((t) => t.unit === 'bytes')?.missing?.why ?? 'no figure'})`;
  const sw = msText(pool.criticalMs);
  const versus =
    lazy.criticalMs === undefined
      ? ` switches in ${sw} (the rebuild it replaces is missing: ${missingText(lazy)})`
      : pool.criticalMs < lazy.criticalMs
        ? ` turns ${lazy.perTarget && lazy.perTarget.length > 1 ? `an on-demand rebuild (${rebuildWhat(lazy)}; ${msText(lazy.criticalMs)} per switch on average)` : `a ${msText(lazy.criticalMs)} rebuild (${rebuildWhat(lazy)})`} into a ${sw} switch`
        : ` its ${sw} switch is no shorter than the ${msText(lazy.criticalMs)} rebuild`;
  const joiner = pool.memoryBytes !== undefined ? ' and' : ',';
  return `${where}, a pool of ${k} shape${k === 1 ? '' : 's'}${memory}${joiner}${versus}${timeShares(plan, pool)}`;
}

/** One sentence per strategy: its critical path and shares, prepaid and deferred costs, memory — or its missing term. */
export function strategySentence(plan: Plan, s: StrategyPlan): string {
  if (s.criticalMs === undefined) return `${s.name}: no total — missing ${missingText(s)}`;
  const parts = [`${s.name}: ${msText(s.criticalMs)} on the critical path per switch${perTargetText(s)}${timeShares(plan, s)}`];
  if (s.prepaidMs !== undefined && s.prepaidMs > 0) parts.push(`${msText(s.prepaidMs)} prepaid at startup`);
  if (s.deferredMs !== undefined && s.deferredMs > 0) {
    const overrun = s.deferredOverruns && plan.switchEveryMs !== undefined ? ` — longer than the ${msText(plan.switchEveryMs)} between switches, so it is not done before the next` : '';
    parts.push(`${msText(s.deferredMs)} deferred to the background${overrun}`);
  }
  if (s.memoryBytes !== undefined) parts.push(`holds ${bytesText(s.memoryBytes)} per GPU${memoryShare(plan, s)}`);
  const missing = s.missing.filter((t) => !s.critical.includes(t));
  if (missing.length > 0) parts.push(`missing ${missing[0]!.what} (${missing[0]!.missing?.why ?? 'no figure'})`);
  return parts.join('; ');
}

/** The pool at n GPUs in words, measured or estimated with its basis. */
export function estimateSentence(e: PoolEstimate): string {
  const shapes = e.shapes.map((s) => `TP${s}`).join(' + ');
  const bytes = e.bytesPerGpu !== undefined ? `${bytesText(e.bytesPerGpu)} per GPU` : 'memory per GPU missing';
  const label = e.measured ? 'measured' : 'estimate';
  return `${e.gpus} GPU${e.gpus === 1 ? '' : 's'} (${label}): a pool of every TP shape (${shapes}) is ${e.communicators} communicator${e.communicators === 1 ? '' : 's'}, ${e.perGpu} per GPU, ${bytes} — ${e.basis}`;
}

/** The study's own estimate beside this run's at the same GPU count. */
export function studySentence(plan: Plan): string {
  const at8 = plan.estimates.find((e) => e.gpus === 8);
  const ours = at8?.bytesPerGpu !== undefined ? `; from these runs, ${at8.communicators} communicators and ${bytesText(at8.bytesPerGpu)} per GPU (${at8.measured ? 'measured' : 'estimate'})` : '';
  return `the study estimated ${plan.study.pool8Written} for a pool of every TP shape (${plan.study.source})${ours}`;
}

/**
 * Every sentence of the plan: the headline, one per strategy, the estimates, the study's estimate.
 * On a simulated run every sentence with the run's figures starts "SIMULATED — " (the headline
 * says so in its own words), as each verdict line does: a sentence read alone is never taken for
 * a measurement.
 */
export function planSentences(plan: Plan): string[] {
  const mark = (line: string): string => (plan.host.simulated ? `SIMULATED — ${line}` : line);
  // One shape: no strategy has a switch to price, so no sentence per strategy (the headline says why).
  const strategies = plan.noSwitch !== undefined ? [] : plan.strategies.map((s) => mark(strategySentence(plan, s)));
  return [poolSentence(plan), ...strategies, ...plan.estimates.map((e) => mark(estimateSentence(e))), mark(studySentence(plan))];
}
