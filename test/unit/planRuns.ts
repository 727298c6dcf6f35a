/**
 * Runs for the planner tests: a 4-rank run with round figures (every sum computed by hand in the
 * tests), made from the 2×H200 run's frame by verdictRuns.ts, and the recorded runs of docs/results.
 */
import type { RunFile } from '../../protocol/runFile';
import type { PlanRun } from '../../readings/plan/terms';
import { experiment, load, synthetic, variant } from './verdictRuns';

/** Every experiment the planner reads, at 4 ranks, round figures (ms; memory MiB); grow skipped. */
export function fourRankRun(over: Partial<RunFile> = {}, drop: readonly string[] = []): RunFile {
  const all = [
    experiment('init', [variant('default', { call: 40, first: 60, total: 100 }, { afterCall: 200, afterFirst: 500 })]),
    experiment('destroy', [variant('default', { finalize: 50, destroy: 250, total: 300 })]),
    experiment('pool', [
      variant(
        'tp4+2+1',
        { 'call/tp4': 40, 'first/tp4': 60, 'call/tp2': 20, 'first/tp2': 30, 'call/tp1': 10, 'first/tp1': 1, switch: 2, 'rebuild/call': 25, 'rebuild/first': 20, rebuild: 45 },
        { 'pool after TP4': 500, 'pool after TP2': 800, 'pool after TP1': 1000 },
      ),
    ]),
    experiment('split', [
      variant('halves/splitShare=0', { call: 25, first: 15, total: 40 }, { afterCall: 300, afterFirst: 300 }),
      variant('halves/splitShare=1', { call: 12, first: 3, total: 15 }, { afterCall: 100, afterFirst: 100 }),
    ]),
    experiment('shrink', [variant('default', { call: 30, first: 20, total: 50 }, { afterCall: 200, afterFirst: 200 })]),
    experiment('suspend', [variant('default', { suspend: 10, resume: 5, first: 3, total: 8 }, { warm: 500, afterSuspend: 4, afterResume: 500, afterFirst: 500 })]),
  ];
  return synthetic(4, all.filter((e) => !drop.includes(e.experiment)), {
    skipped: [{ experiment: 'grow', reason: 'needs NCCL ≥ 2.29.2, host has 2.28.9' }],
    ...over,
  });
}

/** As given to the planner: one file name per run. */
export function asPlanRuns(...runs: RunFile[]): PlanRun[] {
  return runs.map((run, i) => ({ file: `run${i + 1}.json`, run }));
}

/** The committed 2×H200 runs (catalogue first, as in the README's example). */
export function h200x2(): PlanRun[] {
  return [
    { file: 'h200x2-nccl2.28.9-wheel.catalogue.json', run: load('h200x2-nccl2.28.9-wheel.catalogue.json') },
    { file: 'h200x2-nccl2.28.9-wheel.json', run: load('h200x2-nccl2.28.9-wheel.json') },
  ];
}

/** A committed 1×H200 run. */
export function h200x1(): PlanRun[] {
  return [{ file: 'h200x1-nccl2.28.9-wheel.json', run: load('h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json') }];
}
