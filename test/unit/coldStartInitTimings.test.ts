// cold-start, pure parts: reading NCCL's `Init timings` lines (formats of NCCL 2.30 and of the
// first releases that printed it, partial and malformed lines), picking a rank's creations,
// combining ranks (MAX per part), the summary, the plan and the process set per iteration.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { coldStartExperiment, INIT_TIMINGS_SINCE } from '../../remote-agent/experiments/coldStart';
import { sessionUnits } from '../../remote-agent/coordinator';
import {
  addIteration,
  combineRanksViews,
  emptyViewRecord,
  parseInitTimings,
  summarizeViews,
  viewsOfCreations,
} from '../../remote-agent/ncclInitTimings';
import { DEFAULT_RUN_OPTIONS, type VariantPlan } from '../../protocol/events';

// The line of NCCL 2.30.7 (src/init.cc), as its debug logger prefixes it (host:pid:tid [dev]).
const LINE_230 =
  'gpu7:4242:4250 [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank 0 nranks 1 total 0.37 (kernels 0.35, alloc 0.00, bootstrap 0.00, allgathers 0.00, topo 0.01, graphs 0.00, connections 0.00, rest 0.01)';
// The first releases' line: no function name, no alloc.
const LINE_OLD = 'gpu7:4242:4250 [1] NCCL INFO Init timings: rank 1 nranks 2 total 0.52 (kernels 0.40, bootstrap 0.05, allgathers 0.01, topo 0.03, graphs 0.01, connections 0.00, rest 0.02)';

describe('parseInitTimings', () => {
  test('reads the 2.30 line: function, rank, nranks, total and every part, in ms', () => {
    const log = parseInitTimings(`gpu7:4242:4242 [0] NCCL INFO Bootstrap: Using eth0\n${LINE_230}\n`);
    assert.equal(log.malformed, 0);
    assert.equal(log.lines.length, 1);
    const l = log.lines[0]!;
    assert.equal(l.fn, 'ncclCommInitRankConfig');
    assert.equal(l.rank, 0);
    assert.equal(l.nranks, 1);
    const close = (a: number | undefined, b: number): void => assert.ok(a !== undefined && Math.abs(a - b) < 1e-9, `${a} ≈ ${b}`);
    close(l.parts.total, 370);
    close(l.parts.kernels, 350);
    close(l.parts.topo, 10);
    close(l.parts.rest, 10);
    assert.deepEqual(Object.keys(l.parts), ['total', 'kernels', 'alloc', 'bootstrap', 'allgathers', 'topo', 'graphs', 'connections', 'rest']);
  });

  test('reads the older line without function and alloc (partial parse, no crash)', () => {
    const l = parseInitTimings(LINE_OLD).lines[0]!;
    assert.equal(l.fn, undefined);
    assert.equal(l.rank, 1);
    assert.equal(l.nranks, 2);
    assert.equal(l.parts.alloc, undefined);
    assert.ok(Math.abs(l.parts.kernels! - 400) < 1e-9);
  });

  test('a line cut short keeps the parts it has; an unreadable part is left out, an unknown one kept', () => {
    const log = parseInitTimings(
      [
        'x [0] NCCL INFO Init timings - ncclCommInitRank: rank 0 nranks 4 total 1.20 (kernels 0.90, alloc 0.0',
        'x [0] NCCL INFO Init timings - ncclCommSplit: rank 2 nranks 4 total 0.10 (kernels n/a, nvls 0.04, rest -0.00)',
        'x [0] NCCL INFO Init timings - ncclCommInitRank: rank 3 nranks 4 total 0.20',
      ].join('\n'),
    );
    assert.equal(log.malformed, 0);
    assert.deepEqual(Object.keys(log.lines[0]!.parts), ['total', 'kernels', 'alloc']);
    assert.deepEqual(Object.keys(log.lines[1]!.parts), ['total', 'nvls', 'rest']);
    assert.deepEqual(log.lines[2]!.parts, { total: 200 });
  });

  test('a malformed Init timings line is skipped and counted; other lines are ignored', () => {
    const log = parseInitTimings(
      [
        'x [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank ? nranks 2 total 0.30 (kernels 0.20)',
        'x [0] NCCL INFO Init timings',
        'x [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank 0 nranks 2 total abc',
        'x [0] NCCL INFO NCCL_DEBUG_SUBSYS set by environment to INIT',
        LINE_230,
        '',
      ].join('\n'),
    );
    assert.equal(log.malformed, 3);
    assert.equal(log.lines.length, 1);
  });

  test('an empty log has nothing, and nothing malformed', () => {
    assert.deepEqual(parseInitTimings(''), { lines: [], malformed: 0 });
  });
});

describe('views of a rank and combining ranks', () => {
  const cold = 'h:1:1 [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank 1 nranks 2 total 0.40 (kernels 0.30, bootstrap 0.05, rest 0.05)';
  const warm = 'h:1:1 [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank 1 nranks 2 total 0.05 (kernels 0.00, bootstrap 0.04, rest 0.01)';

  test('the n-th line of (rank, nranks) is the n-th creation; lines of other communicators are not taken', () => {
    const other = 'h:1:1 [0] NCCL INFO Init timings - ncclCommSplit: rank 0 nranks 1 total 0.01 (kernels 0.00)';
    const views = viewsOfCreations(parseInitTimings([other, cold, warm].join('\n')), 1, 2, ['cold', 'warm']);
    assert.equal(views.cold!.kernels, 300);
    assert.equal(views.warm!.kernels, 0);
  });

  test('a creation without its line is left out', () => {
    const views = viewsOfCreations(parseInitTimings(cold), 1, 2, ['cold', 'warm']);
    assert.deepEqual(Object.keys(views), ['cold']);
  });

  test('each part is the MAX over ranks; a creation missing on one rank is dropped', () => {
    const combined = combineRanksViews([
      { cold: { total: 400, kernels: 300, bootstrap: 90 }, warm: { total: 50 } },
      { cold: { total: 350, kernels: 310, bootstrap: 10 } },
    ]);
    assert.deepEqual(combined, { cold: { total: 400, kernels: 310, bootstrap: 90 } });
    assert.deepEqual(combineRanksViews([{ cold: { total: 1 } }, undefined]), {});
  });

  test('summary: medians per part over the iterations that had the creation, and a note for the rest', () => {
    const r = emptyViewRecord();
    addIteration(r, { cold: { total: 400, kernels: 300 }, warm: { total: 50 } }, 0);
    addIteration(r, { cold: { total: 500, kernels: 320 }, warm: { total: 70 } }, 1);
    addIteration(r, { cold: { total: 450, kernels: 310 } }, 2);
    const s = summarizeViews(r, ['cold', 'warm']);
    assert.deepEqual(s.medians, { cold: { total: 450, kernels: 310 }, warm: { total: 60 } });
    assert.deepEqual(s.iterations, { cold: 3, warm: 2 });
    assert.equal(s.malformedLines, 3);
    assert.equal(s.note, "the warm creation's Init timings line was read on every rank in 2 of 3 iterations");
    assert.equal(summarizeViews(emptyViewRecord(), ['cold'], 'old NCCL').note, 'old NCCL');
  });
});

describe('the cold-start plan', () => {
  const ctx = (ncclVersionCode: number) => ({ ranks: 2, ncclVersionCode, symbols: {}, options: { ...DEFAULT_RUN_OPTIONS, experiments: ['cold-start' as const] } });

  test('steps, ratios and NCCL view; an NCCL older than 2.23.4 is said to lack NCCL view', () => {
    const [v] = coldStartExperiment.plan(ctx(22809)) as VariantPlan[];
    assert.deepEqual(v!.steps.map((s) => s.step), ['ncclLoad', 'cudaContext', 'uniqueId', 'coldInit', 'coldFirst', 'cold', 'warmInit', 'warmFirst', 'warm']);
    assert.deepEqual(v!.steps.find((s) => s.step === 'cold')!.sumOf, ['coldInit', 'coldFirst']);
    assert.deepEqual(v!.steps.find((s) => s.step === 'warm')!.sumOf, ['warmInit', 'warmFirst']);
    assert.deepEqual(v!.ratios!.map((r) => [r.of, r.to]), [['cold', 'warm'], ['coldInit', 'warmInit']]);
    assert.deepEqual(v!.ncclInitView, { creations: ['cold', 'warm'] });
    const [old] = coldStartExperiment.plan(ctx(22205)) as VariantPlan[];
    assert.equal(old!.ncclInitView!.note, `NCCL 2.22.5 predates the Init timings line (NCCL ${INIT_TIMINGS_SINCE}): no NCCL view of the creations`);
    assert.deepEqual(coldStartExperiment.plan(ctx(21703)), { skip: 'needs NCCL ≥ 2.18.1, host has 2.17.3' });
  });

  test('one set of fresh processes per iteration, warmups included, with NCCL INIT logging', () => {
    const [v] = coldStartExperiment.plan(ctx(22809)) as VariantPlan[];
    const init = { experiment: 'init' as const, variants: [{ variant: 'default', steps: [] }] };
    const units = sessionUnits([init, { experiment: 'cold-start', variants: [v!] }, init], 3);
    assert.equal(units.length, 5);
    assert.deepEqual(units.map((u) => u.work.map((w) => `${w.experiment}@${w.iteration ?? '*'}`).join()), ['init@*', 'cold-start@0', 'cold-start@1', 'cold-start@2', 'init@*']);
    for (const u of units.slice(1, 4)) assert.deepEqual(u.env, { NCCL_DEBUG: 'INFO', NCCL_DEBUG_SUBSYS: 'INIT' });
  });
});
