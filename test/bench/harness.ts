/**
 * Harness overhead per timed call (bench.ts, section 2), three figures:
 *   (a) the clock pair around an empty native op (`nop`): two CLOCK_MONOTONIC reads on the worker
 *       thread with nothing between them — the floor under every figure, not the cost of any call;
 *   (b) the polling loop of a non-blocking call inside its span (harnessPoll.cjs): ncclCommInitRank
 *       non-blocking (the addon polls ncclCommGetAsyncError with sched_yield until done) minus the
 *       same init blocking, on the simulated NCCL with a fixed init cost and no jitter, in turns —
 *       what the loop adds to a figure beyond the library's own time;
 *   (c) the JS → worker thread → Promise round trip, outside every figure (between steps).
 * Target for what a figure includes: < 20 µs.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { distribution, distText, estimateRow, judgedRow, type TargetTable } from './targets';
import { differenceEstimate } from './verdict';

async function nops(addon: string, count: number): Promise<{ inside: number[]; roundTrip: number[] }> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const native = require(addon) as typeof import('../../native/index');
  const inside: number[] = [];
  const roundTrip: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = process.hrtime.bigint();
    const r = await native.nop();
    const t1 = process.hrtime.bigint();
    if (i >= 100) {
      inside.push(r.ms * 1000);
      roundTrip.push(Number(t1 - t0) / 1000);
    }
  }
  return { inside, roundTrip };
}

/** Section 2: adds rows harness.clockPair, harness.poll, harness.roundTrip to `table`. */
export async function harnessBench(root: string, addon: string, table: TargetTable, log: (line: string) => void): Promise<void> {
  const { inside, roundTrip } = await nops(addon, 5100);
  const di = distribution(inside);
  const dr = distribution(roundTrip);
  log(`   (a) clock pair around an empty native op: ${distText(di)} µs`);
  table.add(
    judgedRow(
      { id: 'harness.inside', what: 'clock pair around an empty op (floor of a figure)', unit: 'µs', target: 'p99 < 20', span: "the worker thread's two CLOCK_MONOTONIC reads with nothing between them (nop): the floor of every figure, not a call's polling", anchor: 'none: nothing smaller can be timed' },
      inside,
      [{ q: 0.99, op: '<', limit: 20 }],
    ),
  );
  const sim = path.join(root, 'dist', 'native', 'libnccl-sim.so');
  if (existsSync(sim)) {
    const env = { ...process.env, COMMCOST_NATIVE: addon, COMMCOST_SIM_JITTER: '0', COMMCOST_SIM_INIT_MS: '2' };
    const out = JSON.parse(execFileSync(process.execPath, [path.join(root, 'test', 'bench', 'harnessPoll.cjs'), sim, '200'], { env, encoding: 'utf8', timeout: 120_000 })) as { blocking: number[]; nonBlocking: number[] };
    const us = (xs: number[]): number[] => xs.slice(10).map((ms) => ms * 1000); // the first 10 of each: warm-up
    const [b, n] = [us(out.blocking), us(out.nonBlocking)];
    const e = differenceEstimate(n, b);
    log(`   (b) ncclCommInitRank on the simulated NCCL (2 ms, no jitter), blocking:     ${distText(distribution(b))} µs`);
    log(`       the same, non-blocking (polled inside the span):                   ${distText(distribution(n))} µs`);
    table.add(
      estimateRow(
        { id: 'harness.poll', what: 'polling loop of a non-blocking call, inside its figure', unit: 'µs', target: 'median(non-blocking) − median(blocking) < 20', span: 'span of ncclCommInitRank(config.blocking = 0): the call, then ncclCommGetAsyncError polled with sched_yield until ready; minus the same init blocking, in turns, one rank, SIMULATED (a fixed 2 ms init on the library\'s thread)', anchor: `the blocking init in the same turns: p50 ${distribution(b).p50.toFixed(1)} µs` },
        'median(non-blocking) − median(blocking)',
        e,
        { op: '<', limit: 20 },
        distribution(n),
        1,
      ),
    );
  } else table.add({ id: 'harness.poll', what: 'polling loop of a non-blocking call, inside its figure', unit: 'µs', target: 'median(non-blocking) − median(blocking) < 20', verdict: 'skipped', note: `no simulated NCCL at ${sim}` });
  log(`   (c) JS → worker thread → Promise round trip (between steps, outside figures): ${distText(dr)} µs`);
  table.add({ id: 'harness.roundTrip', what: 'JS→worker→Promise round trip', unit: 'µs', dist: dr, target: 'outside figures', verdict: 'reference', span: 'hrtime before native.nop() → its Promise resolved in JavaScript' });
}
