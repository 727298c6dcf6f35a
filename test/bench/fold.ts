/**
 * The run model's fold (client/runModel.ts applyEvent) at up to 100,000 recorded iterations of one
 * step: the time per 10k run/sample events, ms, over the first and the last 10k of a fold of 100k,
 * with the JIT warm. Linear = the same time per 10k at every size. Target (DESIGN.md): linear to
 * 100,000 iterations per step.
 */
import { applyEvent, newRun } from '../../client/runModel';
import type { AgentEvent, RunOptions } from '../../protocol/events';
import { distribution, distText, estimateRow, type TargetTable } from './targets';
import { ratioEstimate } from './verdict';

const OPTIONS = { iterations: 100_000, warmup: 0 } as unknown as RunOptions;

function sample(iteration: number): AgentEvent {
  return { type: 'run/sample', experiment: 'init', variant: 'default', iteration, warmup: false, steps: { call: 1 + (iteration % 7) / 10, firstCollective: 2 }, perRank: { call: [1, 1] }, releaseSkewUs: 3 } as AgentEvent;
}

/** Folds `events` sample events into a fresh run; @returns ms per chunk of `chunk` events, in order. */
function foldOnce(events: number, chunk: number): number[] {
  let run = newRun('bench', OPTIONS);
  const perChunk: number[] = [];
  let t = performance.now();
  for (let i = 1; i <= events; i++) {
    run = applyEvent(run, sample(i));
    if (i % chunk === 0) {
      const now = performance.now();
      perChunk.push(now - t);
      t = now;
    }
  }
  const stored = run.experiments[0]?.samples.default?.call?.length ?? 0;
  if (stored !== events) throw new Error(`the fold kept ${stored} samples of ${events}`);
  return perChunk;
}

/**
 * Linearity of the fold (issue #31 f): a warm base, never the JIT's first 10k. One 30k fold first
 * (discarded: the JIT compiles applyEvent there), then `repeats` folds of 100,000 events into a
 * fresh run each, timed per 5k chunk. The figure: median ms per 10k over the last 10k of each fold
 * (90k–100k) ÷ the same over its first 10k (0–10k), with both sets' noise (verdict.ts
 * ratioEstimate); linear = 1, target < 2.
 */
export function foldBench(table: TargetTable, log: (line: string) => void, repeats = 7): void {
  const CHUNK = 5000;
  foldOnce(30_000, CHUNK); // the JIT's warm-up: not counted
  const first: number[] = [];
  const last: number[] = [];
  const all: number[] = [];
  for (let r = 0; r < repeats; r++) {
    const per = foldOnce(100_000, CHUNK).map((ms) => ms * (10_000 / CHUNK)); // ms per 10k events
    first.push(...per.slice(0, 2));
    last.push(...per.slice(-2));
    all.push(...per);
  }
  const e = ratioEstimate(last, first);
  log(`   warm (after a 30k fold), ${repeats} folds of 100k, ms per 10k events: first 10k ${distText(distribution(first))}`);
  log(`                                                              last 10k  ${distText(distribution(last))}`);
  log(`   last / first: ${e.value.toFixed(2)}× [${e.lo.toFixed(2)}, ${e.hi.toFixed(2)}]`);
  table.add(
    estimateRow(
      {
        id: 'fold.perTenK',
        what: 'run fold, ms per 10k events to 100k',
        unit: 'ms',
        target: 'linear (last/first < 2)',
        span: 'applyEvent over 5k run/sample events of one step, per chunk, ×2 = per 10k; last = 90k–100k, first = 0–10k of the same fold',
        anchor: 'the same fold\'s own first 10k, warm (a 30k fold ran first and was discarded)',
      },
      'median(last 10k) / median(first 10k)',
      e,
      { op: '<', limit: 2 },
      distribution(all),
    ),
  );
}
