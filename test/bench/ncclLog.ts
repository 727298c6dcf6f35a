/**
 * Reading NCCL's debug log (protocol/ncclInitLog.ts parseInitCreations, the reader of `commcost
 * trace` and, through parseInitTimings, of the cold-start experiment) at 1 MB and 2 MB of hostile
 * input: time per read, ms, over rounds. Linear = the 2 MB read takes about twice the 1 MB one;
 * the quadratic reader this replaced (issue #21, item 7) took four times as long (a 2 MB line:
 * minutes). Two inputs:
 *   - one line of that size: a lifecycle-looking line with no `Init START|COMPLETE` after it and
 *     an `Init timings` line whose parts are a run of spaces (both quadratic before);
 *   - that size in lines just under the reader's line cap, of the same shapes (each line read).
 * Each sample is the mean of enough reads to last about 20 ms. The verdict compares the ratio's
 * range (first quartile of one over third quartile of the other, and the reverse) with 3, between
 * linear and quadratic: 'cannot tell' (a reference row) when the noise spans it.
 */
import { MAX_LOG_LINE_CHARS, parseInitCreations } from '../../protocol/ncclInitLog';
import { ratioEstimate } from './verdict';
import { distribution, estimateRow, type TargetTable } from './targets';

const MB = 1024 * 1024;
const ROUNDS = 15;

/** A hostile log of `bytes` characters: one line, or lines just under the cap. */
function hostileLog(bytes: number, oneLine: boolean): string {
  const lifecycle = (n: number): string => 'h:1:2 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 '.repeat(Math.ceil(n / 64)).slice(0, n);
  const parts = (n: number): string => `h:1:2 [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank 0 nranks 2 total 0.37 (kernels${' '.repeat(n)}`.slice(0, n - 1) + ')';
  if (oneLine) return `${lifecycle(bytes / 2)}\n${parts(bytes / 2)}\n`;
  const width = MAX_LOG_LINE_CHARS - 8;
  const lines: string[] = [];
  for (let i = 0; lines.length * width < bytes; i++) lines.push(i % 2 ? lifecycle(width) : parts(width));
  return lines.join('\n') + '\n';
}

/** Reads per sample: enough that one sample of `text` takes about 20 ms (a read alone is a few ms, within GC noise). */
function readsPerSample(text: string): number {
  parseInitCreations(text);
  const t = performance.now();
  parseInitCreations(text);
  return Math.max(1, Math.ceil(20 / Math.max(0.05, performance.now() - t)));
}

/** ms per read of `text` (mean over `reads` reads), over ROUNDS samples, sorted. */
function readTimes(text: string, reads: number): number[] {
  const ms: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t = performance.now();
    for (let i = 0; i < reads; i++) parseInitCreations(text);
    ms.push((performance.now() - t) / reads);
  }
  return ms.sort((x, y) => x - y);
}

/** Adds one row per input shape: the 2 MB read's times, with the ratio to the 1 MB read's. */
export function ncclLogBench(table: TargetTable, log: (line: string) => void): void {
  for (const oneLine of [true, false]) {
    const smallText = hostileLog(MB, oneLine);
    const largeText = hostileLog(2 * MB, oneLine);
    const reads = readsPerSample(smallText);
    const smallTimes = readTimes(smallText, reads);
    const largeTimes = readTimes(largeText, reads);
    const small = distribution(smallTimes);
    const large = distribution(largeTimes);
    // The ratio of medians with both sets' noise, verdict.ts's one rule for every row.
    const e = ratioEstimate(largeTimes, smallTimes);
    const what = oneLine ? 'NCCL log read, one 2 MB line' : 'NCCL log read, 2 MB in 4 KiB lines';
    const row = estimateRow(
      { id: oneLine ? 'ncclLog.oneLine' : 'ncclLog.capLines', what, unit: 'ms', target: '2 MB / 1 MB < 3 (linear 2, quadratic 4)', span: `one parse of the log text (${reads} reads per sample, averaged), 2 MB vs 1 MB`, anchor: 'the same reader on 1 MB, same rounds' },
      'median(2 MB) / median(1 MB)',
      e,
      { op: '<', limit: 3 },
      large,
    );
    log(`   ${what}: 1 MB p50 ${small.p50.toFixed(2)} ms, 2 MB p50 ${large.p50.toFixed(2)} ms; ${row.basis}`);
    table.add(row);
  }
}
