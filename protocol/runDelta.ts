/**
 * Run deltas, host → webview: what changed since the last post, so that a live run's cost per post
 * stays proportional to what is new, not to every sample so far.
 *
 * A run's size is in its sample arrays (`experiments[].samples` and `releaseSkewUs`: variant →
 * step → values), which only grow while a run streams (client/runModel.ts folds in place). A delta
 * carries the run without those arrays (small: plan, summaries, progress, errors) and, per array,
 * the values appended since the previous post. The host keeps what it sent per webview
 * ({@link SentCounts}); the webview appends to the arrays it holds ({@link applyRunDelta}). A
 * (re)loaded webview or another run gets a complete snapshot first.
 */
import type { RunExperiment, RunFile } from './runFile';

/** Values already posted per array: key `${kind}\0${experiment}\0${variant}\0${step}` → count. */
export type SentCounts = Map<string, number>;

/** New values of one sample array (`kind`: which field of the experiment holds it). */
export interface AppendedValues {
  kind: 'samples' | 'releaseSkewUs';
  experiment: string;
  variant: string;
  step: string;
  /** Index of the first value in the array (what was sent before): applying is idempotent. */
  from: number;
  values: number[];
}

/** The run without its sample arrays, plus the values appended to each since the last post. */
export interface RunDelta {
  /** The run with `samples` and `releaseSkewUs` emptied in every experiment. */
  run: RunFile;
  append: AppendedValues[];
}

type ArrayKind = AppendedValues['kind'];
const KINDS: ArrayKind[] = ['samples', 'releaseSkewUs'];

function key(kind: ArrayKind, experiment: string, variant: string, step: string): string {
  return `${kind}\0${experiment}\0${variant}\0${step}`;
}

/** The run's arrays as { kind, experiment, variant, step, values }. */
function* arraysOf(run: RunFile): Generator<Omit<AppendedValues, 'from'>> {
  for (const e of run.experiments) {
    for (const kind of KINDS) {
      for (const [variant, steps] of Object.entries(e[kind] ?? {})) {
        for (const [step, values] of Object.entries(steps)) yield { kind, experiment: e.experiment, variant, step, values };
      }
    }
  }
}

/** The counts of a complete snapshot of `run` (what the webview holds after it). */
export function sentCountsOf(run: RunFile): SentCounts {
  const sent: SentCounts = new Map();
  for (const a of arraysOf(run)) sent.set(key(a.kind, a.experiment, a.variant, a.step), a.values.length);
  return sent;
}

/**
 * The delta from what `sent` says was posted to `run`, and `sent` updated to `run`'s counts.
 * O(experiments + arrays + new values).
 * @returns undefined when an array is shorter than what was sent (not the same run's growth):
 *   post a complete snapshot instead
 */
export function runDelta(run: RunFile, sent: SentCounts): RunDelta | undefined {
  const append: AppendedValues[] = [];
  const counts: [string, number][] = [];
  for (const a of arraysOf(run)) {
    const k = key(a.kind, a.experiment, a.variant, a.step);
    const had = sent.get(k) ?? 0;
    if (a.values.length < had) return undefined;
    if (a.values.length > had) append.push({ ...a, from: had, values: a.values.slice(had) });
    counts.push([k, a.values.length]);
  }
  for (const [k, n] of counts) sent.set(k, n);
  const experiments = run.experiments.map((e): RunExperiment => {
    const lean: RunExperiment = { ...e, samples: {} };
    delete lean.releaseSkewUs;
    return lean;
  });
  return { run: { ...run, experiments }, append };
}

/**
 * The webview's side: `delta.run` with the sample arrays of `base` (the run it holds, same id),
 * each extended by the delta's values. Appends to `base`'s arrays in place (the webview holds no
 * other copy) and returns a new run object.
 */
export function applyRunDelta(base: RunFile, delta: RunDelta): RunFile {
  const byId = new Map(base.experiments.map((e) => [e.experiment, e] as const));
  const experiments = delta.run.experiments.map((e): RunExperiment => {
    const held = byId.get(e.experiment);
    const out: RunExperiment = { ...e, samples: held?.samples ?? {} };
    if (held?.releaseSkewUs) out.releaseSkewUs = held.releaseSkewUs;
    return out;
  });
  const merged: RunFile = { ...delta.run, experiments };
  const index = new Map(experiments.map((e) => [e.experiment, e] as const));
  for (const a of delta.append) {
    const e = index.get(a.experiment as RunExperiment['experiment']);
    if (!e) continue; // not in the run's list: nothing draws it
    const arrays = a.kind === 'samples' ? e.samples : (e.releaseSkewUs ??= {});
    const steps = (arrays[a.variant] ??= {});
    const values = (steps[a.step] ??= []);
    // From `from` on (a snapshot serialized after more values came already holds some of them).
    if (values.length < a.from) continue; // a gap: keep what is held; the next snapshot mends it
    values.length = a.from;
    for (const v of a.values) values.push(v);
  }
  return merged;
}

/**
 * `run` as the results panel needs it: an experiment whose summary has arrived (its `variants`:
 * figures and per-step samples) loses its raw per-iteration arrays (`samples`, `releaseSkewUs`),
 * which the panel reads only for an experiment without a summary (webview/stats.ts
 * `variantViews`, protocol/compare.ts); every other field is the run's own (shared, not copied).
 * Halves what a finished run of 100,000 iterations a step posts (the raw arrays repeat the
 * summary's samples). Pure.
 */
export function runForView(run: RunFile): RunFile {
  if (!run.experiments.some((e) => e.variants.length > 0 && (Object.keys(e.samples ?? {}).length > 0 || e.releaseSkewUs !== undefined))) return run;
  const experiments = run.experiments.map((e): RunExperiment => {
    if (e.variants.length === 0) return e;
    const lean: RunExperiment = { ...e, samples: {} };
    delete lean.releaseSkewUs;
    return lean;
  });
  return { ...run, experiments };
}
