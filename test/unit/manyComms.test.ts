/**
 * many-comms (issue #29) without rank processes: the plan (variants, their environment and config,
 * knobs skipped below the NCCL that has them, the steps at each count), the commCounts option, the
 * curve read from a run (readings/manyComms.ts), the CLI's tables, and the pool planner reading
 * its estimates from the curve instead of extrapolating.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { commCountsProblem } from '../../protocol/runOptions';
import { normalizeOptions } from '../../remote-agent/coordinator';
import { commCountPoint, MANY_VARIANTS, manyCommsExperiment } from '../../remote-agent/experiments/manyComms';
import { curveMemoryAt, curveTables, manyCommsCurve, memStatsNotes } from '../../readings/manyComms';
import type { RunFile } from '../../protocol/runFile';
import { estimatePools } from '../../readings/plan/estimate';
import { manyCommsLines } from '../../cli/summary';
import { commCountsFlag } from '../../cli/measureFlags';
import type { VariantSummary } from '../../protocol/events';
import { asPlanRuns, fourRankRun } from './planRuns';
import { experiment, synthetic, variant } from './verdictRuns';

const MiB = 2 ** 20;
const ctx = (ranks: number, ncclVersionCode = 22809, commCounts?: number[]) => ({
  ranks,
  ncclVersionCode,
  symbols: {},
  options: normalizeOptions({ experiments: ['many-comms'], ...(commCounts ? { commCounts } : {}) }),
});

test('many-comms plan: the three shapes and the knobs on one GPU; maxP2pPeers skipped below 2.30.3 with the reason', () => {
  const plan = manyCommsExperiment.plan(ctx(1));
  assert.ok(Array.isArray(plan));
  assert.deepEqual(
    plan.map((v) => v.variant),
    ['init', 'split/splitShare=0', 'split/splitShare=1', 'init/maxCTAs=2', 'init/buffsize=1MiB', 'init/runtimeConnect=0', 'init/cumem=0'],
  );
  assert.deepEqual(manyCommsExperiment.skippedVariants!(), [{ variant: 'init/maxP2pPeers=1', reason: 'config maxP2pPeers needs NCCL ≥ 2.30.3, host has 2.28.9' }]);
  // The default counts 1, 2, 4, 8, 16: the N-th creation, its first collective and their sum at each.
  assert.deepEqual(plan[0]!.steps.filter((s) => s.kind === 'toFirst').map((s) => [s.step, s.sumOf]), [1, 2, 4, 8, 16].map((n) => [`total/n${n}`, [`call/n${n}`, `first/n${n}`]]));
  assert.match(plan[1]!.steps[0]!.label, /^ncclCommSplit, communicator 1$/);
});

test('many-comms plan on 2.30.7 has every knob; on 2.21 runtime connect is skipped; below 2.18.1 the experiment is', () => {
  const all = manyCommsExperiment.plan(ctx(2, 23007));
  assert.ok(Array.isArray(all));
  assert.equal(all.length, MANY_VARIANTS.length);
  assert.deepEqual(manyCommsExperiment.skippedVariants!(), []);
  manyCommsExperiment.plan(ctx(1, 22105));
  assert.deepEqual(manyCommsExperiment.skippedVariants!().map((s) => s.reason), ['config maxP2pPeers needs NCCL ≥ 2.30.3, host has 2.21.5', 'NCCL_RUNTIME_CONNECT needs NCCL ≥ 2.22.3, host has 2.21.5']);
  assert.deepEqual(manyCommsExperiment.plan(ctx(1, 21703)), { skip: 'needs NCCL ≥ 2.18.1, host has 2.17.3' });
});

test('many-comms: env knobs run in processes of their own; config knobs and the shapes do not', () => {
  const env = Object.fromEntries(MANY_VARIANTS.map((v) => [v.variant, manyCommsExperiment.variantEnv!(v.variant)]));
  assert.deepEqual(env, {
    init: undefined,
    'split/splitShare=0': undefined,
    'split/splitShare=1': undefined,
    'init/maxCTAs=2': undefined,
    'init/maxP2pPeers=1': undefined,
    'init/buffsize=1MiB': { NCCL_BUFFSIZE: '1048576' },
    'init/runtimeConnect=0': { NCCL_RUNTIME_CONNECT: '0' },
    'init/cumem=0': { NCCL_CUMEM_ENABLE: '0' },
  });
  assert.deepEqual(MANY_VARIANTS.find((v) => v.variant === 'init/maxCTAs=2')!.config, { minCTAs: 1, maxCTAs: 2 });
});

test('many-comms: --comm-counts and the commCounts option are checked by one rule', () => {
  assert.equal(commCountsProblem([1, 2, 4]), undefined);
  assert.match(commCountsProblem([4, 2])!, /strictly ascending/);
  assert.match(commCountsProblem([0, 2])!, /whole numbers from 1 to 64/);
  assert.match(commCountsProblem([1, 2, 3, 4, 5, 6, 7, 8, 9])!, /1 to 8 counts/);
  assert.deepEqual(commCountsFlag('1, 2,4'), [1, 2, 4]);
  assert.throws(() => commCountsFlag('1,x'), /--comm-counts "1,x" must be whole numbers from 1 to 64/);
  assert.throws(() => normalizeOptions({ experiments: ['many-comms'], commCounts: [2, 2] }), /commCounts must be strictly ascending/);
  const plan = manyCommsExperiment.plan(ctx(1, 22809, [1, 3]));
  assert.ok(Array.isArray(plan));
  assert.deepEqual(plan[0]!.steps.map((s) => s.step), ['call/n1', 'first/n1', 'total/n1', 'call/n3', 'first/n3', 'total/n3']);
});

/** A many-comms variant: memory MiB and the N-th creation's ms at each count. */
function curveVariant(name: string, mib: Record<number, number>, ms: Record<number, number>, memStatsMiB?: Record<number, number>): VariantSummary {
  const v = variant(name, Object.fromEntries(Object.entries(ms).map(([n, x]) => [`total/n${n}`, x])), Object.fromEntries(Object.entries(mib).map(([n, x]) => [commCountPoint(Number(n)), x])));
  if (memStatsMiB) {
    v.memStats = Object.fromEntries(Object.entries(memStatsMiB).map(([n, x]) => [commCountPoint(Number(n)), { totalBytes: x * MiB, suspendableBytes: 0, persistentBytes: x * MiB }]));
  }
  return v;
}

const many = experiment('many-comms', [
  curveVariant('init', { 1: 300, 2: 600, 4: 1200 }, { 1: 90, 2: 40, 4: 41 }, { 1: 250, 2: 500, 4: 1000 }),
  curveVariant('split/splitShare=0', { 1: 260, 2: 520, 4: 1040 }, { 1: 30, 2: 31, 4: 33 }),
  curveVariant('split/splitShare=1', { 1: 8, 2: 8, 4: 10 }, { 1: 12, 2: 12, 4: 13 }),
]);

test('the curve: memory per GPU and the N-th creation per variant, the memory each added communicator took', () => {
  const curve = manyCommsCurve(synthetic(1, [many]))!;
  assert.deepEqual(curve.counts, [1, 2, 4]);
  assert.equal(curve.ranks, 1);
  const init = curve.variants[0]!;
  assert.deepEqual(init.points, [
    { n: 1, bytes: 300 * MiB, memStatsBytes: 250 * MiB, creationMs: 90 },
    { n: 2, bytes: 600 * MiB, memStatsBytes: 500 * MiB, creationMs: 40 },
    { n: 4, bytes: 1200 * MiB, memStatsBytes: 1000 * MiB, creationMs: 41 },
  ]);
  assert.equal(init.perAddedBytes, 300 * MiB);
  assert.equal(curve.variants[2]!.perAddedBytes, (2 / 3) * MiB);
  assert.equal(manyCommsCurve(synthetic(1, [experiment('init', [variant('default', { call: 1 })])])), undefined);
});

test('the curve at N: measured, interpolated between two measured counts, never extrapolated', () => {
  const curve = manyCommsCurve(synthetic(1, [many]))!;
  assert.deepEqual(curveMemoryAt(curve, 'split/splitShare=0', 2), { bytes: 520 * MiB, how: 'measured', from: [2] });
  assert.deepEqual(curveMemoryAt(curve, 'split/splitShare=0', 3), { bytes: 780 * MiB, how: 'interpolated', from: [2, 4] });
  assert.equal(curveMemoryAt(curve, 'split/splitShare=0', 5), undefined);
  assert.equal(curveMemoryAt(curve, 'init/buffsize=1MiB', 1), undefined);
});

test('the curve as tables: rows are variants, columns N; NCCL\'s count only where a variant has it; the CLI prints them', () => {
  const curve = manyCommsCurve(synthetic(1, [many]))!;
  const [memory, counted, creation] = curveTables(curve);
  assert.deepEqual(memory!.rows, [
    ['variant', 'N=1', 'N=2', 'N=4', 'per added'],
    ['init', '300.0', '600.0', '1200.0', '300.0'],
    ['split/splitShare=0', '260.0', '520.0', '1040.0', '260.0'],
    ['split/splitShare=1', '8.0', '8.0', '10.0', '0.7'],
  ]);
  assert.match(memory!.title, /communicators of 1 rank each/);
  assert.deepEqual(counted!.rows[1], ['init', '250.0', '500.0', '1000.0']);
  assert.deepEqual(counted!.rows[2], ['split/splitShare=0', '–', '–', '–']);
  assert.deepEqual(creation!.rows[1], ['init', '90.00', '40.00', '41.00']);
  const lines = manyCommsLines(synthetic(1, [many]));
  assert.equal(lines[0], 'many-comms: memory per GPU after N communicators (MiB, free-memory delta; communicators of 1 rank each):');
  assert.ok(lines.includes('  split/splitShare=1    8.0    8.0    10.0        0.7'), lines.join('\n'));
});

test('the pool planner reads 4 and 8 GPUs from the many-comms curve, says so, and keeps a pool measured at the run\'s own count', () => {
  const runs = asPlanRuns(fourRankRun({}, []), synthetic(4, [many]));
  // The first run measured the pool at 4 GPUs: kept. 8 GPUs (4 per GPU): init N=1 + split N=3, interpolated.
  const [at4, at8] = estimatePools(runs, 4, [4, 8]);
  assert.equal(at4!.measured, true);
  assert.equal(at4!.fromManyComms, undefined);
  assert.equal(at8!.fromManyComms, true);
  assert.equal(at8!.bytesPerGpu, (300 + 780) * MiB);
  assert.deepEqual(at8!.perSize.map((s) => s.bytes / MiB), [300, 260, 260, 260]);
  assert.equal(at8!.basis, 'estimate: from many-comms (run2.json): init at N=1 (measured) + split/splitShare=0 at N=3 (interpolated between N=2 and N=4); those communicators span 4 ranks, not the pool\'s sizes');
  // A count past the curve's largest N falls back to the pool's extrapolation.
  const at32 = estimatePools(runs, 4, [32])[0]!;
  assert.equal(at32.fromManyComms, undefined);
  assert.match(at32.basis, /extrapolated linearly in log2\(size\)/);
});

test('MemStats beside the free-memory delta (1×H200, NCCL 2.30.7): a note where they differ, chosen by the figures, none where they agree', () => {
  const file = path.join(__dirname, '../../docs/results/h200x1-2026-12-02/h200x1-nccl2.30.7-many-comms.json');
  const run = JSON.parse(fs.readFileSync(file, 'utf8')) as RunFile;
  const curve = manyCommsCurve(run)!;
  const notes = memStatsNotes(curve);
  const noted = notes.map((n) => n.split(/[ :]/)[0]);
  // Recomputed from the run: which variants' MemStats sum and free-memory delta differ by > 10% at their largest N.
  const expected = curve.variants.filter((v) => {
    const p = [...v.points].reverse().find((x) => x.bytes !== undefined && x.memStatsBytes !== undefined && x.bytes > 0);
    return p !== undefined && Math.abs(p.memStatsBytes! - p.bytes!) > 0.1 * p.bytes! && Math.abs(p.memStatsBytes! - p.bytes!) > 16 * 2 ** 20;
  }).map((v) => v.variant);
  assert.deepEqual(noted, expected);
  assert.ok(expected.includes('split/splitShare=1') && expected.includes('init/cumem=0'), 'the run holds both kinds of difference');
  assert.ok(!noted.includes('init'), 'init: MemStats agrees with the delta, no note');
  const share = notes.find((n) => n.startsWith('split/splitShare=1'))!;
  assert.match(share, /the counts overlap, so their sum is not memory used/);
  assert.match(share, /at N=16: 72768\.0 MiB counted, 4160\.0 MiB taken/);
  const cumem = notes.find((n) => n.startsWith('init/cumem=0'))!;
  assert.match(cumem, /\(ran with NCCL_CUMEM_ENABLE=0\): NCCL's count is below/);
  assert.doesNotMatch(cumem, /overlap/);
  // The table carries them; the table without MemStats carries none.
  const counted = curveTables(curve).find((t) => /ncclCommMemStats/.test(t.title))!;
  assert.deepEqual(counted.notes, notes);
});
