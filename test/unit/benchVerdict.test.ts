// The bench's row verdicts (test/bench/verdict.ts): met, not met, or cannot tell when the noise is
// larger than the effect — from distributions, deterministically, and never against a swapped target.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { combine, differenceEstimate, exactEstimate, judge, judgeQuantiles, pairedRatioEstimate, quantileEstimate, ratioEstimate } from '../bench/verdict';

/** 1, 2, …, n */
const ramp = (n: number, scale = 1, offset = 0): number[] => Array.from({ length: n }, (_, i) => offset + (i + 1) * scale);

test('a quantile comes with its order-statistic interval: wide with few samples, narrow with many, always around the value', () => {
  const five = quantileEstimate([5, 1, 4, 2, 3], 0.5);
  assert.deepEqual(five, { value: 3, lo: 1, hi: 5 }, 'five samples: the median could be anywhere between min and max');
  const many = quantileEstimate(ramp(2000), 0.5);
  assert.equal(many.value, 1000.5);
  assert.ok(many.lo >= 950 && many.lo < 1000 && many.hi > 1001 && many.hi <= 1050, JSON.stringify(many));
  const p99 = quantileEstimate(ramp(2000), 0.99);
  assert.ok(p99.lo <= p99.value && p99.value <= p99.hi && p99.hi <= 2000, JSON.stringify(p99));
  assert.deepEqual(quantileEstimate([7], 0.9), { value: 7, lo: 7, hi: 7 });
  assert.throws(() => quantileEstimate([], 0.5), RangeError);
  assert.throws(() => quantileEstimate([1, NaN], 0.5), RangeError);
  assert.throws(() => quantileEstimate([1], 1.5), RangeError);
});

test('below a limit: met when the whole interval is below, not met when the whole interval is at or above, cannot tell when the limit is inside', () => {
  assert.equal(judge('p50', { value: 5, lo: 4, hi: 6 }, { op: '<', limit: 10 }).verdict, 'met');
  assert.equal(judge('p50', { value: 142, lo: 130, hi: 150 }, { op: '<', limit: 10 }).verdict, 'not met');
  const unsure = judge('p50', { value: 9, lo: 7, hi: 12 }, { op: '<', limit: 10 });
  assert.equal(unsure.verdict, 'cannot tell');
  assert.match(unsure.text, /p50 9\.00 \[7\.00, 12\.00\] < 10\.00: cannot tell \(10\.00 is inside the interval: the noise is larger than the effect\)/);
  // The edge: "< L" is not met at L; "≤ L" is met at L.
  assert.equal(judge('x', exactEstimate(10), { op: '<', limit: 10 }).verdict, 'not met');
  assert.equal(judge('x', exactEstimate(10), { op: '≤', limit: 10 }).verdict, 'met');
});

test('above a limit is the mirror (a frame rate ≥ 55)', () => {
  assert.equal(judge('fps', { value: 60, lo: 58, hi: 61 }, { op: '≥', limit: 55 }).verdict, 'met');
  assert.equal(judge('fps', { value: 40, lo: 30, hi: 50 }, { op: '≥', limit: 55 }).verdict, 'not met');
  assert.equal(judge('fps', { value: 56, lo: 50, hi: 60 }, { op: '>', limit: 55 }).verdict, 'cannot tell');
});

test('issue #31 (c): an overhead of −38.5 µs inside ±250 µs of noise against a 2 µs target is "cannot tell", not "met"', () => {
  // Untraced rounds spread over ~500 µs; traced ones alike, their median 38.5 µs lower.
  const untraced = [1000, 1100, 1200, 1250, 1300, 1400, 1500];
  const traced = untraced.map((v) => v - 38.5);
  const d = differenceEstimate(traced, untraced);
  assert.equal(d.value, -38.5);
  assert.ok(d.lo < 2 && d.hi > 2, JSON.stringify(d));
  assert.equal(judge('traced − untraced', d, { op: '≤', limit: 2 }).verdict, 'cannot tell');
  // The same effect with a quiet loop is met; a large one above the noise is not met.
  const quiet = [1250, 1250.1, 1250.2, 1250.3, 1250.4, 1250.5, 1250.6];
  assert.equal(judge('d', differenceEstimate(quiet.map((v) => v - 38.5), quiet), { op: '≤', limit: 2 }).verdict, 'met');
  assert.equal(judge('d', differenceEstimate(quiet.map((v) => v + 100), quiet), { op: '≤', limit: 2 }).verdict, 'not met');
});

test('a ratio of medians carries both sets\' noise: 1.2× of a noisy pair cannot be told from 1.5×; 3× can', () => {
  const node = ramp(20, 2, 100); // 102…140 ms
  const r = ratioEstimate(node.map((v) => v * 1.2), node);
  assert.ok(Math.abs(r.value - 1.2) < 1e-9);
  assert.ok(r.lo < 1.2 && r.hi > 1.2);
  assert.equal(judge('ratio', ratioEstimate(node.map((v) => v * 1.45), node), { op: '≤', limit: 1.5 }).verdict, 'cannot tell');
  assert.equal(judge('ratio', ratioEstimate(node.map((v) => v * 3), node), { op: '≤', limit: 1.5 }).verdict, 'not met');
  assert.equal(judge('ratio', ratioEstimate(node, node.map((v) => v * 3)), { op: '≤', limit: 1.5 }).verdict, 'met');
  assert.throws(() => ratioEstimate([1], [0]), RangeError);
});

test('pairs measured in turns: a load both share divides out, so 1.2× under a drifting load is told from 1.5×', () => {
  const node = ramp(20, 10, 100); // the machine's load drifts: 110…300 ms
  const cli = node.map((v, i) => v * (i % 2 === 0 ? 1.18 : 1.22));
  const paired = pairedRatioEstimate(cli, node);
  assert.ok(paired.lo >= 1.18 && paired.hi <= 1.22, JSON.stringify(paired));
  assert.equal(judge('ratio', paired, { op: '≤', limit: 1.5 }).verdict, 'met');
  assert.equal(judge('ratio', ratioEstimate(cli, node), { op: '≤', limit: 1.5 }).verdict, 'cannot tell', 'unpaired, the drift is noise');
  assert.throws(() => pairedRatioEstimate([1, 2], [1]), RangeError);
  assert.throws(() => pairedRatioEstimate([1], [0]), RangeError);
});

test('issue #31 (a): a barrier of p50 142 / p99 341 µs against p50 < 10, p99 < 50 is not met, whatever the CPUs', () => {
  const skews = Array.from({ length: 2000 }, (_, i) => (i < 1000 ? 100 + (i % 42) : i < 1980 ? 142 + (i % 150) : 341 + i - 1980));
  const j = judgeQuantiles(skews, [{ q: 0.5, op: '<', limit: 10 }, { q: 0.99, op: '<', limit: 50 }], 1);
  assert.equal(j.verdict, 'not met');
  assert.equal(j.parts.length, 2);
  assert.match(j.text, /^p50 .* < 10\.0: not met; p99 .* < 50\.0: not met$/);
});

test('a row of several targets: not met beats cannot tell beats met', () => {
  const met = judge('a', exactEstimate(1), { op: '<', limit: 2 });
  const notMet = judge('b', exactEstimate(3), { op: '<', limit: 2 });
  const unsure = judge('c', { value: 1.9, lo: 1, hi: 3 }, { op: '<', limit: 2 });
  assert.equal(combine([met, met]), 'met');
  assert.equal(combine([met, unsure]), 'cannot tell');
  assert.equal(combine([unsure, notMet, met]), 'not met');
  assert.throws(() => combine([]), RangeError);
});

test('a time row not met on a loaded machine is "cannot tell"; met stays met; a quiet machine keeps its verdict; load is said either way', async () => {
  const { judgedRow, loadAware } = await import('../bench/targets.js');
  const head = { id: 'x', what: 'first file', unit: 'ms', target: 'p50 < 300' };
  const slow = judgedRow(head, ramp(20, 10, 1000), [{ q: 0.5, op: '<', limit: 300 }]);
  const fast = judgedRow(head, ramp(20, 1, 10), [{ q: 0.5, op: '<', limit: 300 }]);
  assert.equal(slow.verdict, 'not met');
  assert.equal(fast.verdict, 'met');
  const loaded = loadAware(slow, [0.4, 6.2]);
  assert.equal(loaded.verdict, 'cannot tell');
  assert.match(loaded.note ?? '', /0\.40 → 6\.20.*shared/);
  assert.equal(loadAware(fast, [6.2, 6.2]).verdict, 'met');
  const quiet = loadAware(slow, [0.3, 0.5]);
  assert.equal(quiet.verdict, 'not met');
  assert.match(quiet.note ?? '', /0\.30 → 0\.50/);
  assert.equal(loadAware({ ...slow, unit: 'MB' }, [6, 6]).verdict, 'not met', 'memory is not made slower by other work');
});

test("other processes' load leaves out the bench's own CPU time and its reaped children's", async () => {
  const { parseCpuTicks, otherLoadPerCpu } = await import('../bench/targets.js');
  const stat = (busyUser: number, idle: number): string => `cpu  ${busyUser} 0 100 ${idle} 5 0 0 0 0 0\ncpu0 1 2 3 4\nintr 1 2\n`;
  // A command with spaces and parentheses; utime, stime, cutime, cstime = fields 14-17.
  const self = (u: number, s: number, cu: number, cs: number): string => `123 (node (bench) x) R 1 1 1 0 -1 0 0 0 0 0 ${u} ${s} ${cu} ${cs} 20 0 1 0`;
  const a = parseCpuTicks(stat(1000, 5000), self(10, 5, 0, 0))!;
  assert.deepEqual(a, { busy: 1100, own: 15 });
  // In 2 s on 2 CPUs the machine was busy 400 ticks, 380 of them the bench and its children: 20 others.
  const b = parseCpuTicks(stat(1400, 5100), self(110, 25, 200, 60))!;
  assert.equal(otherLoadPerCpu(a, b, 2, 2), 20 / 100 / 2 / 2);
  // All of it the bench's own: no other load, never negative.
  assert.equal(otherLoadPerCpu(a, parseCpuTicks(stat(1400, 5100), self(200, 115, 100, 0))!, 2, 2), 0);
  assert.equal(parseCpuTicks('nonsense', self(1, 1, 1, 1)), undefined);
  assert.equal(parseCpuTicks(stat(1, 1), 'garbage'), undefined);
});
