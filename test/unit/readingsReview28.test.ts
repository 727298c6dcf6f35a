/**
 * Issue #28, the fresh-eyes review: readings that were still false or misleading. Each rule below
 * failed on the code before it (checked by running this file on that code):
 * 1. a pool's memory is set beside the study's only when the pool is made as the study's was
 *    (TP4 + 2×TP2 + 4×TP1 on 4 GPUs); otherwise both makeups are named, not compared;
 * 3. one sentence never prints two figures for one quantity (a median total and a sum of medians);
 * 5. ncclCommMemStats beside the pool's free-memory delta is said as NCCL's count, with how the
 *    two stand (the many-comms rule);
 * 4. a range is set against the study's range end by end, and only a drain with the study's four
 *    allreduces in flight is set beside its 7–112 ms;
 * 6. at 1 rank, a many-comms knob of peer connections whose memory equals its baseline's is said
 *    to have no peer connections to change there, never read as shown to have no effect;
 * 8. a failed simulated run (no GPU) gives no advice about GPUs: the advice follows from what failed;
 * (issue item 4) splitShare 1 against 0 is judged only for a split in half, as the study's was.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { validateRunFile } from '../../client/runFileSchema';
import { formatSummary } from '../../cli/summary';
import { errorAdvice, SIMULATED_FAILURE_ADVICE } from '../../readings/failureAdvice';
import { findHang } from '../../remote-agent/hangGuard';
import { curveTables, manyCommsCurve, oneRankKnobNotes } from '../../readings/manyComms';
import { STUDY_FIGURES as S } from '../../readings/studyFigures';
import { deriveVerdict } from '../../readings/verdict';
import { rangeClause } from '../../readings/verdict/agreement';
import { firstPageSummary } from '../../readings/verdict/summary';
import type { RunFile } from '../../protocol/runFile';
import { experiment, load, synthetic, variant } from './verdictRuns';

const line = (run: RunFile, id: string): string => {
  const text = deriveVerdict(run).find((l) => l.id === id)?.text;
  assert.ok(text, `no ${id} line`);
  return text;
};
const TWO = 'h200x2-2026-12-01/h200x2-nccl2.30.7-source.json';

describe('1: pool memory, like with like', () => {
  test('2×H200: a pool of TP2 + 2×TP1 is not the study\'s TP4 + 2×TP2 + 4×TP1: named with both makeups, never "vs 914 MB (1.97×)"', () => {
    const run = load(TWO);
    const text = line(run, 'pool');
    assert.doesNotMatch(text, /pool per GPU \(here tp2\+1\) 464 MB[^;.]* vs /, text);
    assert.match(text, /a pool of every TP shape, per GPU 464 MB \(TP4 \+ 2×TP2 \+ 4×TP1\) — not compared here: the pools are made differently: here TP2 \+ 2×TP1 on 2 GPUs, the study's TP4 \+ 2×TP2 \+ 4×TP1 on 4 GPUs/, text);
    // The first page follows the same rule.
    const pool = firstPageSummary(run).find((l) => l.kind === 'pool')!;
    assert.equal(pool.study[0]?.comparison, undefined);
    assert.match(pool.study[0]?.notCompared ?? '', /the pools are made differently: here TP2 \+ 2×TP1 on 2 GPUs/);
  });
  test('4 GPUs, the study\'s makeup: compared; 8 GPUs: named', () => {
    const mem = (shapes: number[], mib: number[]) => Object.fromEntries(shapes.map((s, i) => [`pool after TP${s}`, mib[i]!]));
    const four = synthetic(4, [experiment('pool', [variant('tp4+2+1', { switch: 0.5, rebuild: 80 }, mem([4, 2, 1], [400, 480, 700]))])]);
    assert.match(line(four, 'pool'), /pool per GPU \(here tp4\+2\+1\) 464 MB \(TP4 \+ 2×TP2 \+ 4×TP1\) vs 734 MB \(1\.58×\): same order as the study/);
    const eight = synthetic(8, [experiment('pool', [variant('tp8+4+2+1', { switch: 0.5, rebuild: 80 }, mem([8, 4, 2, 1], [400, 480, 560, 900]))])]);
    const text = line(eight, 'pool');
    assert.match(text, /not compared here: the pools are made differently: here TP8 \+ 2×TP4 \+ 4×TP2 \+ 8×TP1 on 8 GPUs, the study's TP4 \+ 2×TP2 \+ 4×TP1 on 4 GPUs/, text);
    // One TP2 child is the same object wherever the run has one: still compared.
    assert.match(text, /one TP2 child per GPU ~76 MB vs 84 MB \(1\.1×\): agrees/, text);
  });
});

describe('3: one figure per quantity in one sentence', () => {
  test('2×H200 2.30.7: "costs 174 ms" and never a second total "of 175 ms" in the same sentence', () => {
    const text = line(load(TWO), 'first-collective-share');
    assert.match(text, /costs 174 ms to its first collective/, text);
    assert.doesNotMatch(text, /175 ms/, text);
    assert.match(text, /vs 81% \(of the call \+ first collective, 32\.6 \+ 142 ms\)/, text);
  });
  test('a jittery total: the shares are said to be of call + first, and their sum is not printed beside the median total', () => {
    const run = synthetic(2, [experiment('init', [variant('default', { call: 41.4, first: 3.1, total: 43.0 })])]);
    const text = line(run, 'first-collective-share');
    assert.match(text, /costs 43\.0 ms to its first collective/, text);
    assert.doesNotMatch(text, /44\.5 ms/, text);
    assert.match(text, /shares of the call \+ first collective, each the median of its part: the median total need not be their sum/, text);
  });
  test('the split\'s share: its parts, never "140 ms of 187 ms" beside "186 ms"', () => {
    const text = line(load('h200x2-nccl2.28.9-wheel.json'), 'rebuild-vs-init');
    assert.match(text, /splitShare 0: 186 ms/, text);
    assert.doesNotMatch(text, /187 ms/, text);
  });
});

describe('5: NCCL\'s count beside the pool\'s free-memory delta', () => {
  test('2×H200 2.30.7: NCCL\'s count is named as NCCL\'s; where it is 2× the delta (splitShare 1) the overlap is said', () => {
    const text = line(load(TWO), 'pool');
    assert.match(text, /takes 872 MiB per GPU \(0\.6% of its memory, the free-memory delta; NCCL's own count, ncclCommMemStats summed over the pool's communicators, 872 MiB, within 10% of the free-memory delta\)/, text);
    assert.match(text, /takes 616 MiB per GPU \(0\.4% of its memory, the free-memory delta; NCCL's own count, ncclCommMemStats summed over the pool's communicators, 1\.2 GiB, 2× the free-memory delta: the counts overlap, so their sum is not memory used; the delta is\)/, text);
  });
  test('below the delta: NCCL\'s count leaves part uncounted', () => {
    const plain = variant('tp2+1', { switch: 0.02, rebuild: 40 }, { 'pool after TP2': 484, 'pool after TP1': 872 });
    plain.memStats = { 'pool after TP1': { suspendableBytes: 300 * 2 ** 20, persistentBytes: 0, totalBytes: 300 * 2 ** 20 } };
    const text = line(synthetic(2, [experiment('pool', [plain])]), 'pool');
    assert.match(text, /NCCL's own count, ncclCommMemStats summed over the pool's communicators, 300 MiB, below the free-memory delta: it leaves 572 MiB uncounted; the delta is what the GPU lost/, text);
  });
});

describe('issue item 4: splitShare 1 against 0, like with like', () => {
  test('2 ranks (a split that keeps the parent\'s ranks): named, not judged; 4 ranks (halves, as the study): judged', () => {
    const two = line(load('h200x2-nccl2.28.9-wheel.json'), 'rebuild-vs-init');
    assert.doesNotMatch(two, /splitShare 1 against 0[^;.]*: (agrees|differs)/, two);
    assert.match(two, /— not compared here: the split here keeps the parent's 2 ranks, a child of the same shape as its parent; the study split 4 ranks in half/, two);
    const four = synthetic(4, [
      experiment('init', [variant('default', { call: 45, first: 50, total: 95 })]),
      experiment('split', [variant('halves/splitShare=0', { call: 24, first: 55, total: 79 }), variant('halves/splitShare=1', { call: 24, first: 52, total: 76 })]),
    ]);
    assert.match(line(four, 'rebuild-vs-init'), /splitShare 1 against 0 0\.96× \(78 ms vs 81 ms\) vs 0\.96× \(76\.0 ms vs 79\.0 ms\): agrees/);
  });
});

describe('4: a drain range against the study\'s range, like with like', () => {
  test('rangeClause: the lowest against the study\'s lower end, the highest against its upper end (never both against the lower)', () => {
    const c = rangeClause(0.18, 1.8, S.drain, 'until quiet');
    assert.match(c.text, /until quiet 7–112 ms vs 0\.18–1\.8 ms \(lowest 0\.026× its lower end, highest 0\.016× its upper end\)/, c.text);
    assert.doesNotMatch(c.text, /highest [\d.]+× its lower end/, c.text);
    // A range inside the study's is judged end by end: 10–100 ms against 7–112 ms agrees.
    const inside = rangeClause(10, 100, S.drain, 'until quiet');
    assert.match(inside.text, /\(lowest 1\.43× its lower end, highest 0\.89× its upper end\)/, inside.text);
    assert.equal(inside.agrees, true);
  });
  test('2×H200: one allreduce alone is not the study\'s four in flight: only the four together is set beside 7–112 ms', () => {
    const text = line(load(TWO), 'drain');
    assert.match(text, /Not set beside the study's: the drains here with one allreduce in flight \(16 MiB alone, 64 MiB alone, 128 MiB alone, 256 MiB alone\), the study's with 4\./, text);
    assert.match(text, /until quiet, the 4 together 7–112 ms vs 1\.8 ms \(0\.26× its lower end\): differs/, text);
    assert.doesNotMatch(text, /0\.18–1\.8 ms/, text);
  });
});

describe('6: 1-rank many-comms knobs that have no peer connections to change', () => {
  const curveOf = (run: RunFile) => manyCommsCurve(run)!;
  test('1×H200 2.30.7: NCCL_BUFFSIZE and maxP2pPeers equal init at every N: said to show nothing at 1 rank, never as no effect', () => {
    const run = load('h200x1-2026-12-02/h200x1-nccl2.30.7-many-comms.json');
    const notes = curveTables(curveOf(run))[0]!.notes ?? [];
    assert.deepEqual(notes.map((n) => n.split(':')[0]), ['init/buffsize=1MiB', 'init/maxP2pPeers=1']);
    assert.match(notes[0]!, /the same memory as init at every N here\. At 1 rank a communicator has no peer connections for NCCL_BUFFSIZE to change, so this run does not show what NCCL_BUFFSIZE does at several ranks\./);
    // splitShare 1 changed the memory here (260 against 388 MiB): no such note.
    assert.ok(!notes.some((n) => n.startsWith('split/splitShare=1')), notes.join('\n'));
  });
  test('chosen by the rank count and the figures: none at 2 ranks, none where the knob changed the memory', () => {
    const run = load('h200x1-2026-12-02/h200x1-nccl2.30.7-many-comms.json');
    assert.deepEqual(oneRankKnobNotes({ ...curveOf(run), ranks: 2 }), []);
    const changed = structuredClone(run);
    const v = changed.experiments.find((e) => e.experiment === 'many-comms')!.variants.find((x) => x.variant === 'init/buffsize=1MiB')!;
    v.memoryBytes = Object.fromEntries(Object.entries(v.memoryBytes ?? {}).map(([k, b]) => [k, b / 2]));
    assert.ok(!oneRankKnobNotes(curveOf(changed)).some((n) => n.startsWith('init/buffsize')));
  });
});

describe('8: a failed simulated run gives no advice about GPUs', () => {
  const failed = (): RunFile => validateRunFile(JSON.parse(readFileSync(join(__dirname, '..', 'fixtures', 'runs', 'simulated-2ranks-failed-startup.json'), 'utf8')));
  test('the committed failed simulated run (its file says "raise the deadline if the GPUs are busy"): the pages advise reading the log', () => {
    const run = failed();
    assert.match(run.errors[0]!.hint ?? '', /GPUs are busy/, 'the fixture is the old agent\'s words');
    assert.equal(errorAdvice(run.errors[0]!, true), SIMULATED_FAILURE_ADVICE);
    const text = formatSummary(run);
    assert.doesNotMatch(text, /GPUs are busy/, text);
    assert.match(text, /hint: check the log: it holds the rank processes' output \(this simulated run used no GPU\)/, text);
    // A measured run keeps its hint; an expected hang's why is kept as written.
    assert.match(errorAdvice(run.errors[0]!, false)!, /GPUs are busy/);
    assert.equal(errorAdvice({ hint: 'the GPU hung by design', expected: true }, true), 'the GPU hung by design');
  });
  test('the agent: a simulated start-up timeout names no GPU in its advice', () => {
    const base = {
      now: 10_000, ranks: 2, deadlineMs: 2000, ready: new Set([0]), readyDeadline: 5_000, current: new Map(), lastDone: new Map(),
      lastBegin: new Map(), finished: new Set<number>(), idWaits: new Map(), lastHeard: 9_900, silentNodes: [],
    };
    const sim = findHang({ ...base, simulated: true })!;
    assert.match(sim.message, /^timed out at startup: rank 1 did not start the simulated CUDA and NCCL within 2 s$/);
    assert.doesNotMatch(sim.hint, /GPUs? (are|is) busy|raise the deadline/, sim.hint);
    assert.match(findHang(base)!.hint, /raise the deadline if the GPUs are busy/);
  });
});
