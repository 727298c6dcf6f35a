/**
 * The init experiment's `scalable` variant (ncclCommInitRankScalable, issue #29) without a library:
 * how many unique ids at how many ranks and which rank makes each, the plan's variant and its skip
 * reasons (older NCCL, no symbol), and the API map, so that a call site of ncclCommInitRankScalable
 * reads that variant's figure and the plain init's only where the run lacks it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_RUN_OPTIONS, type RunOptions, type VariantSummary } from '../../protocol/events';
import type { RunExperiment } from '../../protocol/runFile';
import { idRootRank, initExperiment, RANKS_PER_ROOT, SCALABLE_VARIANT, scalableIdCount } from '../../remote-agent/experiments/init';
import { API_MAP } from '../../sites/apiMap';
import { orderVariants } from '../../readings/figures';

const EVERY = new Proxy({} as Record<string, boolean>, { get: () => true });
const plan = (ranks: number, ncclVersionCode: number, symbols: Record<string, boolean> = EVERY, options: Partial<RunOptions> = {}) =>
  initExperiment.plan({ ranks, ncclVersionCode, symbols, options: { ...DEFAULT_RUN_OPTIONS, experiments: ['init'], ...options } });

test('ids: at least 2 where the ranks allow, ceil(ranks / 128) above, never more than the ranks', () => {
  assert.equal(scalableIdCount(1), 1);
  for (const r of [2, 3, 4, 8]) assert.equal(scalableIdCount(r), 2);
  assert.equal(scalableIdCount(RANKS_PER_ROOT * 2), 2);
  assert.equal(scalableIdCount(RANKS_PER_ROOT * 2 + 1), 3);
  assert.throws(() => scalableIdCount(0), RangeError);
});

test('each id is made by an evenly spaced rank, the first ranks % nIds roots one rank further apart', () => {
  const roots = (ranks: number, n: number) => Array.from({ length: n }, (_, i) => idRootRank(i, ranks, n));
  assert.deepEqual(roots(2, 2), [0, 1]);
  assert.deepEqual(roots(4, 2), [0, 2]);
  assert.deepEqual(roots(5, 2), [0, 3]);
  assert.deepEqual(roots(7, 3), [0, 3, 5]);
  assert.deepEqual(roots(1, 1), [0]);
  for (const [ranks, n] of [[300, 3], [9, 4], [2, 2]] as const) {
    const r = roots(ranks, n);
    assert.equal(new Set(r).size, n, 'distinct roots');
    assert.ok(r.every((x) => x >= 0 && x < ranks));
  }
  assert.throws(() => idRootRank(2, 4, 2), RangeError);
  assert.throws(() => idRootRank(0, 2, 3), RangeError);
});

test('plan: the scalable variant after the plain init, its call named with the number of ids', () => {
  const p = plan(4, 22809);
  assert.ok(Array.isArray(p));
  assert.deepEqual(p.map((v) => v.variant), ['default', SCALABLE_VARIANT]);
  const call = p[1]!.steps.find((s) => s.step === 'call');
  assert.equal(call?.label, 'ncclCommInitRankScalable (2 unique ids)');
  assert.deepEqual(p[1]!.steps.map((s) => s.step), ['call', 'first', 'total']);
  const one = plan(1, 22809);
  assert.ok(Array.isArray(one));
  assert.equal(one[1]!.steps[0]!.label, 'ncclCommInitRankScalable (1 unique id)');
  assert.deepEqual(initExperiment.skippedVariants!(), []);
});

test('plan: skipped with why on NCCL older than 2.23.4 or without the symbol; not planned when the run asks for no allreduce first use', () => {
  const old = plan(2, 22209);
  assert.ok(Array.isArray(old));
  assert.deepEqual(old.map((v) => v.variant), ['default']);
  assert.deepEqual(initExperiment.skippedVariants!(), [{ variant: SCALABLE_VARIANT, reason: 'ncclCommInitRankScalable needs NCCL ≥ 2.23.4, host has 2.22.9' }]);
  const noSymbol = plan(2, 22602, { ncclCommInitRankScalable: false });
  assert.ok(Array.isArray(noSymbol));
  assert.deepEqual(initExperiment.skippedVariants!(), [{ variant: SCALABLE_VARIANT, reason: 'ncclCommInitRankScalable not in this NCCL (2.26.2)' }]);
  const bcast = plan(2, 22809, EVERY, { firstUse: ['broadcast'] });
  assert.ok(Array.isArray(bcast));
  assert.deepEqual(bcast.map((v) => v.variant), ['default/first=broadcast']);
});

function variant(name: string, totalMs: number): VariantSummary {
  const stats = { n: 3, min: totalMs, p10: totalMs, median: totalMs, p90: totalMs, max: totalMs, mean: totalMs };
  return { variant: name, iterations: 3, steps: ['call', 'first', 'total'].map((step) => ({ step, label: step, kind: step === 'total' ? 'toFirst' : step, stats })) } as unknown as VariantSummary;
}

test('API map: a ncclCommInitRankScalable site reads the scalable variant, the plain init only where the run lacks it; ncclCommInitRankConfig never reads it', () => {
  const both = { experiment: 'init', variants: [variant('default', 40), variant(SCALABLE_VARIANT, 55)] } as unknown as RunExperiment;
  const shape = { ranks: 2 };
  assert.equal(orderVariants(both, API_MAP.ncclCommInitRankScalable.answer, shape)[0]!.variant, SCALABLE_VARIANT);
  assert.deepEqual(orderVariants(both, API_MAP.ncclCommInitRankConfig.answer, shape).map((f) => f.variant), ['default']);
  const plain = { experiment: 'init', variants: [variant('default', 40)] } as unknown as RunExperiment;
  assert.equal(orderVariants(plain, API_MAP.ncclCommInitRankScalable.answer, shape)[0]!.variant, 'default');
});
