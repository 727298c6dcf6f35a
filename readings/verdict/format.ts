/**
 * How the verdict writes figures, and how it reads them from a run: pure helpers shared by the
 * verdict's modules. Every figure read here is a median (or min) over a step's recorded
 * iterations, from the run's summaries.
 */
import type { StepStats, VariantSummary } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';

/** One sentence of the verdict. */
export interface VerdictLine {
  /** Stable id of the conclusion, e.g. "first-collective-share". */
  id: string;
  /** One sentence (or two) with the run's figures. */
  text: string;
}

export const MiB = 2 ** 20;

/**
 * A share (0…1) as a percentage: 0.1234 → "12%". A share that would round to 0% or 100% without
 * being exactly that keeps one significant digit ("0.6%", "0.08%") or one decimal ("99.6%"), so a
 * 0.014 ms first collective of a 17 ms init never reads "0%". Never throws: a share that is not a
 * finite number (a part of a total of 0 ms) reads "no share (a total of 0)"; callers that can meet
 * a zero total say what is true instead (see {@link isBelowTimer}).
 */
export function pct(x: number): string {
  if (!Number.isFinite(x)) return 'no share (a total of 0)';
  const p = x * 100;
  const whole = Math.round(p);
  if (Math.abs(p) < 1 && p !== 0) return `${Math.abs(p) < 0.01 ? '<0.01' : Number(p.toPrecision(1))}%`;
  if (whole === 100 && p !== 100) return `${(Math.floor(p * 10) / 10).toFixed(1)}%`;
  return `${whole}%`;
}

/**
 * A time (ms) in a sentence: "176 ms" / "17.4 ms" / "0.28 ms" / "0.014 ms"; from 1000 ms in
 * seconds ("1.00 s", "12.5 s", "60000 s"); 0 (or less) reads "0 ms", never "0.0 ms". A figure
 * that is not finite reads "no figure".
 */
export function ms(x: number): string {
  if (!Number.isFinite(x)) return 'no figure';
  if (x <= 0) return '0 ms';
  // Each threshold is where the shorter form would round up to the next one (999.6 ms is "1.00 s",
  // never "1000 ms"; 99.96 ms is "100 ms", never "100.0 ms").
  if (x >= 99_950) return `${Math.round(x / 1000)} s`;
  if (x >= 9995) return `${(x / 1000).toFixed(1)} s`;
  if (x >= 999.5) return `${(x / 1000).toFixed(2)} s`;
  if (x >= 99.95) return `${Math.round(x)} ms`;
  if (x >= 9.995) return `${x.toFixed(1)} ms`;
  return `${Number(x.toPrecision(2)) >= 10 ? x.toFixed(1) : x.toPrecision(2)} ms`;
}

/**
 * A time (ms) written in seconds, for a comparison whose unit is the second: 508 → "0.508 s",
 * 500.1 → "0.500 s", 92 → "0.092 s", 1950 → "1.95 s" (from 1 s as {@link ms} writes it); 0 (or less) reads "0 s". A
 * figure that is not finite reads "no figure".
 */
export function seconds(x: number): string {
  if (!Number.isFinite(x)) return 'no figure';
  if (x <= 0) return '0 s';
  if (x >= 999.5) return ms(x);
  // Three significant digits with their trailing zeros from 100 ms ("0.500 s" beside "0.987 s",
  // never "0.5 s"); below, the digits there are ("0.092 s", "0.0171 s").
  if (x >= 99.95) return `${(x / 1000).toFixed(3)} s`;
  return `${Number((x / 1000).toPrecision(3))} s`;
}

/**
 * The times (ms) of one comparison in one unit: all in seconds ({@link seconds}) when any of them
 * is 1 s or more (or `inSeconds` is set: the other side of the comparison is written in seconds),
 * else all in ms ({@link ms}). "1.20 s vs 0.098 s", never "1.20 s vs 98 ms".
 */
export function msAll(xs: readonly number[], inSeconds = false): string[] {
  const s = inSeconds || xs.some((x) => Number.isFinite(x) && x >= 999.5);
  return xs.map((x) => (s ? seconds(x) : ms(x)));
}

/**
 * Whether a timed figure (ms, a median) reads 0: the step ended within the timer's resolution (the
 * harness's `CLOCK_MONOTONIC` pair, docs/METHOD.md "Why a practical floor"). A reading says so
 * ("below the timer's resolution") instead of dividing by it or calling it a cost.
 */
export function isBelowTimer(x: number): boolean {
  return !(x > 0);
}

/** bytes → "484 MiB" / "1.3 GiB". */
export function bytes(x: number): string {
  return x >= 2 ** 30 ? `${(x / 2 ** 30).toFixed(1)} GiB` : `${Math.round(x / MiB)} MiB`;
}

/**
 * Whether a memory figure (bytes, a free-memory delta) shows no change: it rounds to 0 MiB (or is
 * negative). A reading says "no memory change measured" instead of "0 MiB (0×)".
 */
export function isNoMemory(x: number): boolean {
  return !(Math.round(x / MiB) > 0);
}

/**
 * A ratio → "1.06×" / "0.18×" / "0.049×" / "12×". Never "0×", "Infinity×" or "NaN×": a ratio of
 * 0 or one that is not finite (one of its figures is 0) reads "no ratio (one figure is 0)";
 * callers that can meet a zero figure say what is true instead.
 */
export function times(x: number): string {
  if (!Number.isFinite(x) || !(x > 0)) return 'no ratio (one figure is 0)';
  if (x >= 10) return `${Math.round(x)}×`;
  if (x >= 0.1) return `${Number(x.toFixed(2))}×`;
  return `${Number(x.toPrecision(2))}×`;
}

/**
 * "an 8-rank child", "a 2-rank child", "an 11-rank child", "a one-rank child": the article a
 * count written in digits takes before a noun.
 */
export function aRanks(n: number, noun: string): string {
  if (n === 1) return `a one-rank ${noun}`;
  const d = String(n);
  const an = d.startsWith('8') || ((d.length % 3 === 2) && /^1[18]/.test(d));
  return `${an ? 'an' : 'a'} ${d}-rank ${noun}`;
}

/**
 * The note a judgement carries when the run recorded fewer than 3 iterations per step: "here from
 * one recorded iteration per step: each word rests on a single observation" (the wording of the
 * study sentence's note: agreement.ts studySentence uses it). Undefined for a simulated run (its figures
 * are not judged) or 3 iterations and more.
 * @param here.iterations the run's recorded iterations per step (its options).
 */
export function fewIterationsNote(here: { simulated: boolean; iterations?: number }): string | undefined {
  if (here.simulated || here.iterations === undefined || here.iterations >= 3) return undefined;
  return here.iterations === 1
    ? 'here from one recorded iteration per step: each word rests on a single observation'
    : `here from ${here.iterations} recorded iterations per step: too few to show a spread`;
}

/**
 * A sentence (ending in ".") with the few-iterations note ({@link fewIterationsNote}) before its
 * last full stop when the run recorded fewer than 3 iterations per step; as it is otherwise.
 */
export function withFewNote(sentence: string, here: { simulated: boolean; iterations?: number } | undefined): string {
  const few = here ? fewIterationsNote(here) : undefined;
  return few ? `${sentence.replace(/\.$/, '')} (${few}).` : sentence;
}

/**
 * What stopped an experiment (or one variant of it), from the run's errors: the first error of
 * that variant (or else of the experiment), not an expected hang of a field case. "timed out at
 * split halves/splitShare=0 iteration 0, step ncclCommSplit on rank 1: …" for a hang, "it failed:
 * see the errors" otherwise; undefined when the run has no such error.
 */
export function failureOf(run: RunFile, experiment: string, variant?: string): { text: string; timedOut: boolean } | undefined {
  const errors = (run.errors ?? []).filter((e) => e.where?.experiment === experiment && !e.expected);
  const e = (variant === undefined ? undefined : errors.find((x) => x.where.variant === variant)) ?? errors[0];
  if (!e) return undefined;
  const timedOut = e.code === 'TIMEOUT';
  return { text: timedOut ? e.message : 'it failed: see the errors', timedOut };
}

/** A figure of the study as a plain number: 49 → "49", 54.5 → "54.5", 0.48 → "0.48". */
export function num(x: number): string {
  return String(Number(x.toPrecision(3)));
}

/** The summary of one variant (the first one when `variant` is left out). */
export function variantOf(run: RunFile, experiment: string, variant?: string): VariantSummary | undefined {
  const e = run.experiments.find((x) => x.experiment === experiment);
  return variant === undefined ? e?.variants[0] : e?.variants.find((v) => v.variant === variant);
}

/** The statistics of one step of a variant (ms), if it was summarised. */
export function stats(v: VariantSummary | undefined, step: string): StepStats | undefined {
  return v?.steps.find((s) => s.step === step)?.stats;
}

/** The median of one step (ms), if it was summarised. */
export function median(run: RunFile, experiment: string, variant: string | undefined, step: string): number | undefined {
  return stats(variantOf(run, experiment, variant), step)?.median;
}
