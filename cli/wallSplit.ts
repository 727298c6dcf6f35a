/**
 * The summary's accounting lines (cli/summary.ts): where a run's wall time went, and the barrier's
 * release skew over the run's generations. Pure: run in, text out; only numbers of the run are
 * printed (no strings from the file).
 */
import type { RunFile } from '../protocol/runFile';

const s = (ms: number): string => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`;
const pct = (part: number, whole: number): string => `${((100 * part) / whole).toFixed(0)}%`;
/** commcost's own efficiency targets for a run (DESIGN.md, "Targets"): how long it takes, not how right its figures are. */
const WALL_RATIO_TARGET = 1.25;
const START_SHARE_TARGET = 0.1;
const finite = (x: unknown): x is number => typeof x === 'number' && Number.isFinite(x) && x >= 0;

/**
 * "wall 12.3 s = timed calls … + setup the method needs … + rank process starts … + exits … +
 * harness …" and the targets' two ratios (DESIGN.md: wall ≤ 1.25 × (timed + setup), process
 * starts < 10% of wall). A run file written before the split says how much of the wall was inside
 * the library calls (`libraryMs`, `measuredMs` in older files), or nothing when it has neither.
 */
export function wallSplitLines(run: Pick<RunFile, 'wallMs' | 'wallSplit' | 'libraryMs' | 'measuredMs'>): string[] {
  const wall = run.wallMs;
  if (!finite(wall) || wall <= 0) return [];
  const w = run.wallSplit;
  if (w && [w.timedMs, w.setupMs, w.processStartMs, w.processExitMs, w.harnessMs].every(finite)) {
    const needed = w.timedMs + w.setupMs;
    const ratio = needed > 0 ? wall / needed : Infinity;
    // Met or not is read from the figures themselves, not from their rounding ("10%" may be 9.6%).
    const ratioMet = ratio <= WALL_RATIO_TARGET;
    const startsMet = w.processStartMs / wall < START_SHARE_TARGET;
    const verdict =
      ratioMet && startsMet
        ? 'both met'
        : `${[!ratioMet && 'the wall ratio', !startsMet && 'the process starts'].filter(Boolean).join(' and ')} not met: the run took longer than the method needs, which costs time, not accuracy (each figure is timed inside its own rank)`;
    return [
      `wall ${s(wall)} = timed calls ${s(w.timedMs)} (${pct(w.timedMs, wall)}) + setup the method needs ${s(w.setupMs)} (${pct(w.setupMs, wall)}) + rank process starts ${s(w.processStartMs)} (${pct(w.processStartMs, wall)}) + exits ${s(w.processExitMs)} (${pct(w.processExitMs, wall)}) + harness ${s(w.harnessMs)} (${pct(w.harnessMs, wall)})`,
      `  commcost's efficiency targets: wall / (timed + setup) = ${Number.isFinite(ratio) ? ratio.toFixed(2) : '∞'} (target ≤ ${WALL_RATIO_TARGET}); process starts ${pct(w.processStartMs, wall)} of the wall (target < ${START_SHARE_TARGET * 100}%): ${verdict}`,
    ];
  }
  const library = run.libraryMs ?? run.measuredMs;
  return finite(library) && library > 0 ? [`wall ${s(wall)}, of it ${s(library)} inside the NCCL and CUDA calls commcost made (timed and untimed; this run file has no finer split)`] : [];
}

/**
 * "barrier release skew over N generations: p50 … p99 … max … µs" from the run's `releaseSkewUs`
 * (every recorded step of every experiment: one value per barrier generation); [] when absent.
 */
export function releaseSkewLines(run: Pick<RunFile, 'experiments'>): string[] {
  const all: number[] = [];
  for (const e of run.experiments) {
    for (const steps of Object.values(e.releaseSkewUs ?? {})) for (const values of Object.values(steps)) for (const v of values) if (finite(v)) all.push(v);
  }
  if (all.length === 0) return [];
  all.sort((a, b) => a - b);
  const q = (p: number): string => all[Math.min(all.length - 1, Math.floor(p * all.length))]!.toFixed(1);
  return [`barrier release skew over ${all.length} generation${all.length === 1 ? '' : 's'}: p50 ${q(0.5)} µs, p99 ${q(0.99)} µs, max ${all[all.length - 1]!.toFixed(1)} µs (time between the first and the last rank seeing the release)`];
}
