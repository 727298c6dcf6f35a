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

/** The words of a target's terms: "ncclCommInitRankConfig TP2 + first collective TP2". */
function termWords(terms: readonly { what: string }[]): string {
  return terms.map((t) => t.what.replace(/ \(.*\)$/, '')).join(' + ');
}

/** One target's figure in words: "to TP1 0.025 ms", "to TP2 not measured (why)", "to TP1 not priced (why)" (a step the strategy cannot take). */
function targetText(x: { shape: number; ms?: number; why?: string; unpriced?: boolean }, withWhy = true): string {
  return x.ms !== undefined ? `to TP${x.shape} ${msText(x.ms)}` : `to TP${x.shape} ${x.unpriced ? 'not priced' : 'not measured'}${withWhy && x.why ? ` (${x.why})` : ''}`;
}

/**
 * A strategy's critical path per switch for a table cell: "107 ms" (the mean, every target
 * measured), "to TP2 not measured · to TP1 0.025 ms" (a target not measured: no mean), "missing"
 * (no figure at all, one shape).
 */
export function criticalCell(s: StrategyPlan): string {
  if (s.criticalMs !== undefined) return msText(s.criticalMs);
  if (s.perTarget) return s.perTarget.map((x) => targetText(x, false)).join(' · ');
  return 'missing';
}

/** A strategy's background work per switch for a table cell, as {@link criticalCell}. */
export function deferredCell(s: StrategyPlan): string {
  if (s.deferredMs !== undefined) return msText(s.deferredMs);
  if (s.perTarget) return s.perTarget.map((x) => (x.deferredMs === 0 ? `to TP${x.shape} nothing` : targetText({ shape: x.shape, ...(x.deferredMs !== undefined ? { ms: x.deferredMs } : {}) }, false))).join(' · ');
  return 'missing';
}

/**
 * The headline: the prewarmed pool against the on-demand rebuild per shape switched to, each with
 * the run's figures for a switch to that shape ("to TP1 it turns a 45.5 ms on-demand rebuild … into
 * a 0.025 ms switch; to TP2 the on-demand rebuild is 169 ms and the pool's switch is not measured
 * (…)"); the mean per switch only where both were measured for every shape — or why it cannot be
 * said (one shape, a missing term).
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
  const k = plan.shapes.length;
  const memory = pool.memoryBytes !== undefined ? ` costs ${bytesText(pool.memoryBytes)} per GPU${memoryShare(plan, pool)}` : ` (memory missing: ${pool.missing.find((t) => t.unit === 'bytes')?.missing?.why ?? 'no figure'})`;
  const head = `${where}, a pool of ${k} shape${k === 1 ? '' : 's'}${memory}`;
  const clauses = plan.shapes.map((t) => {
    const p = pool.perTarget?.find((x) => x.shape === t);
    const l = lazy.perTarget?.find((x) => x.shape === t);
    const rebuild = `${termWords(lazy.critical.filter((x) => x.target === t))}`;
    if (p?.ms !== undefined && l?.ms !== undefined) {
      return p.ms < l.ms
        ? `to TP${t} it turns a ${msText(l.ms)} on-demand rebuild (${rebuild}) into a ${msText(p.ms)} switch`
        : `to TP${t} its ${msText(p.ms)} switch is no shorter than the ${msText(l.ms)} on-demand rebuild (${rebuild})`;
    }
    if (l?.ms !== undefined) return `to TP${t} the on-demand rebuild is ${msText(l.ms)} (${rebuild}) and the pool's switch is not measured (${p?.why ?? 'no figure'})`;
    // A rebuild the strategy cannot take (it needs a communicator it destroyed) is "not priced", never "not measured".
    const rebuildNot = l?.unpriced ? `the on-demand rebuild it replaces is not priced (${l.why ?? 'no figure'})` : undefined;
    if (p?.ms !== undefined) return `to TP${t} the pool switches in ${msText(p.ms)} and ${rebuildNot ?? `the on-demand rebuild it replaces is not measured (${l?.why ?? 'no figure'})`}`;
    if (rebuildNot) return `to TP${t} the pool's switch is not measured (${p?.why ?? 'no figure'}) and ${rebuildNot}`;
    return `to TP${t} neither the pool's switch nor the on-demand rebuild is measured (${p?.why ?? l?.why ?? 'no figure'})`;
  });
  const mean =
    pool.criticalMs !== undefined && lazy.criticalMs !== undefined
      ? `; per switch on average over the shapes switched to, ${msText(pool.criticalMs)} against ${msText(lazy.criticalMs)}${timeShares(plan, pool)}`
      : pool.criticalMs === undefined
        ? '; no figure per switch on average: a switch to one of the shapes was not measured'
        : '';
  return `${head}: ${clauses.join('; ')}${mean}`;
}

/** One sentence per strategy: its critical path per shape switched to and shares, prepaid and deferred costs, memory — or its missing term. */
export function strategySentence(plan: Plan, s: StrategyPlan): string {
  const targets = s.perTarget;
  if (s.criticalMs === undefined && !targets) return `${s.name}: no total — missing ${missingText(s)}`;
  const parts: string[] = [];
  if (s.criticalMs !== undefined) {
    const each = targets && targets.length > 1 ? ` (the mean over the shapes switched to: ${targets.map((x) => targetText(x)).join(', ')})` : '';
    parts.push(`${s.name}: ${msText(s.criticalMs)} on the critical path per switch${each}${timeShares(plan, s)}`);
  } else {
    const some = targets!.some((x) => x.ms !== undefined);
    const not = targets!.some((x) => x.unpriced) ? (targets!.some((x) => x.ms === undefined && !x.unpriced) ? 'not measured or not priced' : 'not priced') : 'not measured';
    parts.push(`${s.name}: ${some ? 'on the critical path ' : 'no switch measured — '}${targets!.map((x) => targetText(x)).join('; ')}${some ? `; no figure per switch on average (a switch to a shape was ${not})` : ''}`);
  }
  if (s.prepaidMs !== undefined && s.prepaidMs > 0) parts.push(`${msText(s.prepaidMs)} prepaid at startup`);
  const overrun = s.deferredOverruns && plan.switchEveryMs !== undefined ? ` — longer than the ${msText(plan.switchEveryMs)} between switches, so it is not done before the next` : '';
  if (targets && s.deferred.length > 0) {
    const d = targets.map((x) => ({ shape: x.shape, ...(x.deferredMs !== undefined ? { ms: x.deferredMs } : {}), ...(x.deferredWhy !== undefined ? { why: x.deferredWhy } : {}) }));
    // The overrun is said of each switch whose background work is longer than the interval.
    const longer = (ms: number) => (plan.switchEveryMs !== undefined && ms > plan.switchEveryMs ? ` — longer than the ${msText(plan.switchEveryMs)} between switches, so it is not done before the next` : '');
    const words = d.map((x) => (x.ms !== undefined ? `to TP${x.shape} ${x.ms > 0 ? `${msText(x.ms)}${longer(x.ms)}` : 'nothing'}` : targetText(x))).join('; ');
    parts.push(s.deferredMs !== undefined ? `${msText(s.deferredMs)} deferred to the background per switch on average (${words})` : `deferred to the background: ${words}`);
  } else if (s.deferredMs !== undefined && s.deferredMs > 0) parts.push(`${msText(s.deferredMs)} deferred to the background${overrun}`);
  if (s.memoryBytes !== undefined) parts.push(`holds ${bytesText(s.memoryBytes)} per GPU${memoryShare(plan, s)}`);
  const missing = s.missing.filter((t) => !s.critical.includes(t) && !(targets && s.deferred.includes(t)));
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

/** Decimal gigabytes, as the study writes its "~1 GB": 2.23e9 → "2.23 GB". */
export function gbText(bytes: number): string {
  return `${Number((bytes / 1e9).toPrecision(3))} GB`;
}

/**
 * The study's own estimate beside this run's at the same GPU count, in the study's unit (GB,
 * decimal), the run's GiB figure after it: "…; from these runs, 15 communicators and 2.23 GB
 * (2.08 GiB) per GPU (estimate)". The study's estimate has no setting: "(setting not stated)".
 */
export function studySentence(plan: Plan): string {
  const at8 = plan.estimates.find((e) => e.gpus === 8);
  const ours = at8?.bytesPerGpu !== undefined ? `; from these runs, ${at8.communicators} communicators and ${gbText(at8.bytesPerGpu)} (${bytesText(at8.bytesPerGpu)}) per GPU (${at8.measured ? 'measured' : 'estimate'})` : '';
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
