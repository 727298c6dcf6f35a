/**
 * A plan never shows NaN or Infinity: a run file can pass validation with figures no measurement
 * gives (a median of 1e308 ms, whose sums overflow), and a figure that is not a finite number is
 * refused here, naming the run file and the field it came from. Pure.
 */
import type { StrategyTerms } from './strategies';
import type { PlanRun, Term } from './terms';
import { PlanInputError } from './units';

/** The path (e.g. `strategies.3.criticalMs`) and value of the first number in `value` that is not finite, depth first. */
export function firstNonFinite(value: unknown, path: (string | number)[] = []): { path: (string | number)[]; value: number } | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : { path, value };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = firstNonFinite(value[i], [...path, i]);
      if (found) return found;
    }
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const found = firstNonFinite(v, [...path, k]);
      if (found) return found;
    }
  }
  return undefined;
}

/** Where a term's figure is in its file, in words: `experiment "init", variant "default", step "call": stats.median = 1e+308`. */
function termField(t: Term): string {
  if (t.observed) return `${t.observed.file}: site ${t.observed.site} (${t.observed.phase}) = ${t.value}`;
  const s = t.source!;
  const field = t.unit === 'ms' ? `step "${s.step}": stats.${s.stat}` : `memoryBytes["${s.step}"]`;
  return `${s.file}: experiment "${s.experiment}", variant "${s.variant}", ${field} = ${t.value}`;
}

/**
 * A strategy's figure at `path` (`strategies.<i>.<field>…`) in words: its critical path, its cost
 * of a switch to TPn (`perTarget.<j>.ms`), …; the field's path when no words are known.
 */
function strategyFigureWords(plan: { strategies: readonly unknown[] }, path: readonly (string | number)[]): string {
  const field = String(path[2]);
  if (field === 'perTarget' && typeof path[3] === 'number') {
    const s = plan.strategies[path[1] as number] as { perTarget?: readonly { shape: number }[] } | undefined;
    const shape = s?.perTarget?.[path[3]]?.shape;
    return shape !== undefined ? `its cost of a switch to TP${shape}` : 'its cost of a switch';
  }
  return FIGURE_WORDS[field] ?? path.slice(2).join('.');
}

/** A strategy's figure in words, for the message. */
const FIGURE_WORDS: Readonly<Record<string, string>> = {
  criticalMs: 'its critical path',
  prepaidMs: 'its prepaid cost',
  deferredMs: 'its deferred cost',
  memoryBytes: 'its memory per GPU',
  memoryShareOfGpu: 'its share of GPU memory',
  memoryShareOfBudget: 'its share of the budget',
  stepShare: 'its share of a step',
  amortisedShare: 'its amortised share',
  pauseRatio: 'its ratio to the migration pause',
};

/** The pool memory point of the runs with the largest magnitude, in words, for an estimate that overflowed. */
function largestPoolPoint(runs: readonly PlanRun[]): string | undefined {
  let best: { text: string; size: number } | undefined;
  for (const p of runs) {
    for (const v of p.run.experiments.find((e) => e.experiment === 'pool')?.variants ?? []) {
      for (const [point, bytes] of Object.entries(v.memoryBytes ?? {})) {
        if (typeof bytes === 'number' && (!best || Math.abs(bytes) > best.size)) best = { text: `${p.file}: experiment "pool", variant "${v.variant}", memoryBytes["${point}"] = ${bytes}`, size: Math.abs(bytes) };
      }
    }
  }
  return best?.text;
}

/**
 * Refuses a plan holding a number that is not finite (NaN, ±Infinity), naming where it came from:
 * the term of the largest magnitude of the strategy whose sum overflowed (run file, experiment,
 * variant, step or memory point, value), the largest pool memory point for an estimate, else the
 * plan's field.
 * @throws PlanInputError (where: `--run`, or `--trace` for a traced figure) when the plan holds one
 */
export function checkPlanFinite(plan: { host: { files: readonly string[] }; strategies: readonly StrategyTerms[] }, runs: readonly PlanRun[]): void {
  const bad = firstNonFinite(plan);
  if (!bad) return;
  const field = bad.path.join('.');
  const hint = 'the file holds a figure no measurement gives (edited or corrupted): measure again, or plan from another run';
  if (bad.path[0] === 'strategies' && typeof bad.path[1] === 'number') {
    const s = plan.strategies[bad.path[1]]!;
    const terms = [...s.critical, ...s.prepaid, ...s.deferred, ...s.memory].filter((t) => t.value !== undefined && (t.source || t.observed));
    const culprit = terms.reduce<Term | undefined>((a, t) => (!a || Math.abs(t.value! * (t.times ?? 1)) > Math.abs(a.value! * (a.times ?? 1)) ? t : a), undefined);
    if (culprit) {
      throw new PlanInputError(`${termField(culprit)}: too large to plan with (${s.name}: ${strategyFigureWords(plan, bad.path)} is ${bad.value})`, culprit.observed ? '--trace' : '--run', hint);
    }
  }
  const point = bad.path[0] === 'estimates' ? largestPoolPoint(runs) : undefined;
  if (point) throw new PlanInputError(`${point}: too large to plan with (the pool estimate's ${field} is ${bad.value})`, '--run', hint);
  throw new PlanInputError(`the runs ${plan.host.files.join(', ') || '(none)'} give a plan whose ${field} is ${bad.value}, not a finite number`, '--run', hint);
}
