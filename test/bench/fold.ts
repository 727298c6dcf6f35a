/**
 * The run model's fold (client/runModel.ts applyEvent) at up to 100,000 recorded iterations of one
 * step: the time per 10k run/sample events, ms, at 10k, 50k and 100k events. Linear = the same
 * time per 10k at every size. Target (DESIGN.md): linear to 100,000 iterations per step.
 */
import { applyEvent, newRun } from '../../client/runModel';
import type { AgentEvent, RunOptions } from '../../protocol/events';
import { distribution, type TargetTable } from './targets';

const OPTIONS = { iterations: 100_000, warmup: 0 } as unknown as RunOptions;

function sample(iteration: number): AgentEvent {
  return { type: 'run/sample', experiment: 'init', variant: 'default', iteration, warmup: false, steps: { call: 1 + (iteration % 7) / 10, firstCollective: 2 }, perRank: { call: [1, 1] }, releaseSkewUs: 3 } as AgentEvent;
}

/**
 * Folds 100,000 sample events into a fresh run and reports the ms per 10k events at 10k, 50k and
 * 100k (one row per point, plus the ratio of the last to the first as the verdict's basis).
 */
export function foldBench(table: TargetTable, log: (line: string) => void): void {
  let run = newRun('bench', OPTIONS);
  const perTenK: number[] = [];
  let t = performance.now();
  for (let i = 1; i <= 100_000; i++) {
    run = applyEvent(run, sample(i));
    if (i % 10_000 === 0) {
      const now = performance.now();
      perTenK.push(now - t);
      t = now;
      if (i === 10_000 || i === 50_000 || i === 100_000) log(`   events ${String(i).padStart(7)}: ${perTenK[perTenK.length - 1]!.toFixed(1)} ms for the last 10k`);
    }
  }
  const stored = run.experiments[0]?.samples.default?.call?.length ?? 0;
  if (stored !== 100_000) throw new Error(`the fold kept ${stored} samples of 100,000`);
  const ratio = perTenK[perTenK.length - 1]! / perTenK[0]!;
  log(`   last 10k / first 10k: ${ratio.toFixed(2)}×`);
  table.add({
    id: 'fold.perTenK',
    what: 'run fold, ms per 10k events to 100k',
    unit: 'ms',
    dist: distribution(perTenK),
    target: 'linear (last/first < 2)',
    verdict: ratio < 2 ? 'met' : 'not met',
    note: `first 10k ${perTenK[0]!.toFixed(1)} ms, 50k ${perTenK[4]!.toFixed(1)} ms, 100k ${perTenK[9]!.toFixed(1)} ms (ratio ${ratio.toFixed(2)})`,
  });
}
