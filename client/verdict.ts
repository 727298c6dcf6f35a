/**
 * The verdict: the study's conclusions re-derived for the host of one run. Every number in a
 * sentence is read from the run's summaries (medians over its recorded iterations); a
 * conclusion whose experiment is missing from the run is left out, never filled with a belief
 * about NCCL. Shown by the CLI after its table, by the webview and the HTML report.
 */
import type { StepStats, VariantSummary } from '../protocol/events';
import { isSimulatedRun, type RunFile } from '../protocol/runFile';

export interface VerdictLine {
  /** Stable id of the conclusion, e.g. "first-collective-share". */
  id: string;
  /** One sentence with the run's figures. */
  text: string;
}

const MiB = 2 ** 20;

function variantOf(run: RunFile, experiment: string, variant?: string): VariantSummary | undefined {
  const e = run.experiments.find((x) => x.experiment === experiment);
  return variant === undefined ? e?.variants[0] : e?.variants.find((v) => v.variant === variant);
}

function stats(v: VariantSummary | undefined, step: string): StepStats | undefined {
  return v?.steps.find((s) => s.step === step)?.stats;
}

/** 0.1234 → "12%"; ms → "176 ms" / "0.28 ms"; bytes → "484 MiB" / "1.3 GiB". */
export function pct(x: number): string {
  return `${Math.round(x * 100)}%`;
}
export function ms(x: number): string {
  if (x >= 100) return `${Math.round(x)} ms`;
  if (x >= 10) return `${x.toFixed(1)} ms`;
  return `${x.toPrecision(2)} ms`;
}
export function bytes(x: number): string {
  return x >= 2 ** 30 ? `${(x / 2 ** 30).toFixed(1)} GiB` : `${Math.round(x / MiB)} MiB`;
}

/**
 * Derives the verdict lines of `run`.
 * @returns lines in a fixed order; empty when the run has no summarised experiment.
 */
export function deriveVerdict(run: RunFile): VerdictLine[] {
  const lines: VerdictLine[] = [];
  const where = `on ${run.stamp?.hostname ?? run.host} (NCCL ${run.stamp?.ncclVersion ?? '?'})`;
  const init = variantOf(run, 'init');
  const initCall = stats(init, 'call');
  const initFirst = stats(init, 'first');
  const initTotal = stats(init, 'total');
  if (initCall && initFirst && initTotal) {
    lines.push({
      id: 'first-collective-share',
      text: `${where}, a fresh communicator costs ${ms(initTotal.median)} to its first collective; ${pct(initFirst.median / initTotal.median)} of it (${ms(initFirst.median)}) is paid by the first collective, not by ncclCommInitRankConfig (${ms(initCall.median)}).`,
    });
  }
  const rebuilds: string[] = [];
  for (const [experiment, variant, name] of [
    ['split', 'whole/splitShare=0', 'split (same shape, splitShare 0)'],
    ['split', 'whole/splitShare=1', 'split (same shape, splitShare 1)'],
    ['shrink', 'default', 'shrink'],
    ['grow', 'default', 'grow'],
  ] as const) {
    const total = stats(variantOf(run, experiment, variant), 'total');
    if (total && initTotal) rebuilds.push(`${name} ${ms(total.median)} (${pct(total.median / initTotal.median)})`);
  }
  if (rebuilds.length > 0) {
    lines.push({ id: 'rebuild-vs-init', text: `To the first collective, as a share of a fresh init: ${rebuilds.join(', ')}.` });
  }
  const floors: string[] = [];
  const abort = stats(variantOf(run, 'abort'), 'abort');
  if (abort) floors.push(`ncclCommAbort ${ms(abort.median)} (min ${ms(abort.min)})`);
  const revoke = stats(variantOf(run, 'revoke', 'idle/destroy'), 'revoke');
  if (revoke) floors.push(`ncclCommRevoke until quiet ${ms(revoke.median)}`);
  const destroy = stats(variantOf(run, 'destroy'), 'total');
  if (destroy) floors.push(`ncclCommFinalize + ncclCommDestroy ${ms(destroy.median)}`);
  if (floors.length > 0) lines.push({ id: 'teardown-floors', text: `Tearing a communicator down costs: ${floors.join('; ')}.` });

  const pool = variantOf(run, 'pool');
  const memory = pool?.memoryBytes ?? {};
  const points = Object.keys(memory).filter((k) => k.startsWith('pool after TP'));
  const poolBytes = points.length > 0 ? memory[points[points.length - 1]!] : undefined;
  const gpuBytes = run.stamp?.gpus[0]?.totalBytes;
  const sw = stats(pool, 'switch');
  const rebuild = stats(pool, 'rebuild');
  if (pool && poolBytes !== undefined && gpuBytes && sw && rebuild) {
    lines.push({
      id: 'pool',
      text: `A prewarmed pool of every TP shape (${pool.variant}) costs ${bytes(poolBytes)} per GPU (${((100 * poolBytes) / gpuBytes).toFixed(1)}% of memory) and turns a ${ms(rebuild.median)} rebuild into a ${ms(sw.median)} switch.`,
    });
  }
  const lazy = variantOf(run, 'connect-mode', 'init/runtimeConnect=1');
  const eager = variantOf(run, 'connect-mode', 'init/runtimeConnect=0');
  const lazyCall = stats(lazy, 'call');
  const eagerCall = stats(eager, 'call');
  const lazyFirst = stats(lazy, 'first');
  const eagerFirst = stats(eager, 'first');
  if (lazyCall && eagerCall && lazyFirst && eagerFirst) {
    lines.push({
      id: 'connect-mode',
      text: `With NCCL_RUNTIME_CONNECT=0, init takes ${ms(eagerCall.median)} (vs ${ms(lazyCall.median)}) and the first collective ${ms(eagerFirst.median)} (vs ${ms(lazyFirst.median)}): connecting at creation ${eagerFirst.median < lazyFirst.median ? 'removes' : 'does not remove'} the first-collective cost here.`,
    });
  }
  // Runs before 0.1.0's baseline fix counted the warm parent too and recorded it as `parent`.
  const childBytes = (m: Record<string, number> | undefined): number | undefined =>
    m?.afterFirst === undefined ? undefined : m.afterFirst - (m.parent ?? 0);
  const oneRank = childBytes(variantOf(run, 'connect-mode', 'one-rank/runtimeConnect=1')?.memoryBytes);
  const oneRankEager = childBytes(variantOf(run, 'connect-mode', 'one-rank/runtimeConnect=0')?.memoryBytes);
  if (oneRank !== undefined && oneRankEager !== undefined) {
    lines.push({ id: 'one-rank-memory', text: `A one-rank communicator takes ${bytes(oneRank)} per GPU with runtime connect and ${bytes(oneRankEager)} without.` });
  }
  const reg = variantOf(run, 'registration', 'register/64MiB');
  const regFirst = stats(reg, 'register');
  const regAgain = stats(reg, 'registerAgain');
  const firstUse = stats(reg, 'firstUse');
  const secondUse = stats(reg, 'secondUse');
  if (regFirst && regAgain && firstUse && secondUse) {
    lines.push({
      id: 'registration',
      text: `Registering 64 MiB: ncclCommRegister ${ms(regFirst.median)}, again on the same range ${ms(regAgain.median)} (cache); the first collective on the buffer pays ${ms(Math.max(0, firstUse.median - secondUse.median))} more than the second.`,
    });
  }
  if (isSimulatedRun(run)) return lines.map((l) => ({ ...l, text: `SIMULATED — ${l.text}` }));
  return lines;
}
