// A trace as the planner's input: its observed creation and first-collective figures replace the
// run's terms of the same API and communicator size (never in the splitShare strategies), a phase
// the trace lacks keeps the run's figure or stays missing, and every sum is computed by hand.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { planReshape, type Plan } from '../../readings/plan/planner';
import { ncclVersionText, traceObservations } from '../../readings/plan/traceTerms';
import { validateTraceFile } from '../../client/traceSchema';
import { formatPlan, planCommand } from '../../cli/plan';
import type { TraceFile, TracePhaseStats, TraceSite } from '../../protocol/trace';
import { asPlanRuns, fourRankRun } from './planRuns';

const stats = (ms: number, n = 3): TracePhaseStats => ({ n, medianMs: ms, p90Ms: ms, maxMs: ms });

function site(api: string, line: number, size: number, creation: number | null, first: number | null, over: Partial<TraceSite> = {}): TraceSite {
  return {
    key: `py:/job/train.py:${line}:${api}`,
    source: 'python',
    api,
    file: '/job/train.py',
    line,
    func: 'main',
    chain: [],
    lazy: false,
    firstCollectiveSite: null,
    teardownSite: null,
    count: 3,
    creation: creation === null ? null : stats(creation),
    firstCollective: first === null ? null : stats(first),
    connect: null,
    teardown: null,
    memoryBytes: null,
    cold: false,
    occurrences: [{ index: 0, ranks: size, commRanks: [size], commIds: ['a'], creationMs: creation, firstCollectiveMs: first, connectMs: null, teardownMs: null, memoryBytes: null, cold: false, at: { creation: null, firstCollective: null, teardown: null } } as TraceSite['occurrences'][number]],
    notes: [],
    ...over,
  } as TraceSite;
}

/** A 4-rank job: a warm new_group of 4 (33 + 77 ms), a split into 2 (22 ms, no first collective seen), a cold init, an all_gather. */
function job(over: Partial<TraceFile> = {}): TraceFile {
  return {
    kind: 'commcost-trace',
    version: 1,
    command: ['python', 'train.py'],
    startedAt: '2026-12-01T00:00:00Z',
    endedAt: '2026-12-01T00:01:00Z',
    exitCode: 0,
    signal: null,
    status: 'complete',
    missing: [],
    simulated: false,
    host: 'localhost',
    ncclVersion: 22809,
    processes: [],
    sites: [
      site('init_process_group', 10, 4, 900, 150, { cold: true }),
      site('new_group', 12, 4, 33, 77),
      site('split_group', 14, 2, 22, null),
      site('all_gather_into_tensor', 16, 4, 5, null),
    ],
    problems: [],
    ...over,
  } as TraceFile;
}

const strategy = (p: Plan, id: string) => p.strategies.find((s) => s.id === id)!;

test("a trace's creation and first collective replace the run's of the same API and size; the rest stays the run's", () => {
  const p = planReshape(asPlanRuns(fourRankRun()), { trace: { file: 'job.trace.json', trace: job() }, stepMs: 30, switchEveryMs: 2000 });
  // On-demand to TP4: 33 + 77 = 110 ms observed (the run's was 40 + 60 = 100); to TP2 the traced
  // split_group's 22 ms creation with the run's 20 ms first collective; to TP1 not priced (the
  // runs' figure splits the TP4 parent, destroyed at the switch to TP2: round 3).
  const lazy = strategy(p, 'lazy');
  assert.deepEqual(lazy.perTarget?.map((x) => [x.shape, x.ms, x.deferredMs]), [[4, 110, undefined], [2, 42, 300], [1, undefined, undefined]]);
  assert.equal(lazy.criticalMs, undefined);
  // The TP4 destroy is deferred at the switch to TP2 only (the shape left); the others' destroy is not measured.
  assert.equal(lazy.deferredMs, undefined);
  // The init total (run 100) is replaced by its traced parts, 33 + 77.
  assert.deepEqual(lazy.critical.map((t) => t.observed?.site), ['new_group at train.py:12', 'new_group at train.py:12', 'split_group at train.py:14', undefined, undefined]);
  assert.equal(lazy.deferred[1]!.source?.experiment, 'destroy');
  const two = planReshape(asPlanRuns(fourRankRun()), { trace: { file: 'job.trace.json', trace: job() }, stepMs: 30, shapes: [4, 2] });
  assert.equal(strategy(two, 'lazy').criticalMs, (110 + 42) / 2);
  assert.equal(strategy(two, 'lazy').stepShare, (110 + 42) / 2 / 30);
  assert.equal(strategy(p, 'destroy-now').perTarget?.[1]?.ms, undefined, 'a split of the TP4 parent it has just destroyed');
  // Split from 4: the observed split into 2 (22 ms) + the run's first collective on the child (15 ms) = 37 ms.
  const split = strategy(p, 'split');
  const toTwo = split.critical.filter((t) => t.target === 2);
  assert.equal(split.perTarget?.find((x) => x.shape === 2)?.ms, 22 + 15);
  assert.equal(toTwo[0]!.observed?.phase, 'creation');
  assert.equal(toTwo[1]!.source?.step, 'first');
  assert.equal(split.prepaidMs, 110);
  // splitShare strategies keep the run's figures (a trace does not say whether a split shared): 12 + 3 ms.
  assert.equal(strategy(p, 'split-share').perTarget?.find((x) => x.shape === 2)?.ms, 15);
  assert.equal(strategy(p, 'pool-share').prepaid.some((t) => t.observed), false);
  // Pool prepaid: TP4 33 + 77 (observed), TP2 split 22 (observed) + 30, TP1 10 + 1 (the run's) = 173 ms.
  assert.equal(strategy(p, 'pool').prepaidMs, 33 + 77 + 22 + 30 + 10 + 1);
  // Shrink (4 → 3) makes no TP shape of 4: no switch measured; grow (to 4) stays missing.
  assert.equal(strategy(p, 'shrink').criticalMs, undefined);
  assert.equal(strategy(p, 'grow').criticalMs, undefined);
  assert.match(strategy(p, 'grow').missing[0]!.missing!.why, /grow was skipped/);
  assert.deepEqual(
    p.trace?.unused,
    [
      "init_process_group at train.py:10: cold (its process's first communicator: the process's one-time start is in it; the planner's terms are warm)",
      'split_group at train.py:14: no first collective observed',
      'all_gather_into_tensor at train.py:16: the planner has no term for all_gather_into_tensor',
    ],
  );
});

test('with a trace only, its figures are the only ones: everything else is missing, and the host is the trace\'s', () => {
  const p = planReshape([], { trace: { file: 'job.trace.json', trace: job() } });
  assert.equal(p.host.ranks, 4);
  assert.equal(p.host.ncclVersion, '2.28.9');
  assert.deepEqual(p.host.files, []);
  // To TP4 the trace's 110 ms; to a smaller shape the trace saw no first collective and there is no run: missing.
  assert.deepEqual([strategy(p, 'lazy').perTarget?.[0]?.shape, strategy(p, 'lazy').perTarget?.[0]?.ms], [4, 110]);
  assert.equal(strategy(p, 'lazy').criticalMs, undefined);
  assert.equal(strategy(p, 'lazy').deferredMs, undefined);
  assert.equal(strategy(p, 'split').criticalMs, undefined, 'the first collective on the child was not observed and no run has it');
  assert.equal(strategy(p, 'pool').criticalMs, undefined);
  assert.throws(() => planReshape([], { trace: { file: 'empty.json', trace: job({ sites: [] }) } }), /has no traced creation the planner can use/);
});

test('the CLI says a trace has no step time, what it replaced and what it left out', () => {
  const p = planReshape(asPlanRuns(fourRankRun()), { trace: { file: 'job.trace.json', trace: job() } });
  const text = formatPlan(p);
  assert.match(text, /a trace has no step time: give the step with --step/);
  assert.match(text, /observed, preferred over the run's figure: ncclCommInitRankConfig TP4 ← new_group at train\.py:12 \(creation\), in 8 strategies/);
  assert.match(text, /33 ms {2}ncclCommInitRankConfig TP4 — observed in trace job\.trace\.json: new_group at train\.py:12 \(creation, median of 3 occurrences\)/);
  assert.match(text, /not used: init_process_group at train\.py:10: cold/);
  assert.doesNotMatch(formatPlan(planReshape(asPlanRuns(fourRankRun()), { trace: { file: 'j', trace: job() }, stepMs: 30 })), /no step time/);
});

test('NCCL version codes read as versions', () => {
  assert.equal(ncclVersionText(23007), '2.30.7');
  assert.equal(ncclVersionText(22809), '2.28.9');
  assert.equal(ncclVersionText(2708), '2.7.8');
  assert.equal(traceObservations('t', job({ ncclVersion: null })).ncclVersion, undefined);
});

test('the committed 2×H200 trace on its own run: the traced new_group (TP2) and split_group (TP1) replace the run\'s init and split creations', async () => {
  const dir = join(__dirname, '..', '..', 'docs', 'results', 'h200x2-2026-12-01');
  const traceFile = join(dir, 'trace-torch-tp-reshape-nccl2.30.7.json');
  const trace = validateTraceFile(JSON.parse(readFileSync(traceFile, 'utf8')));
  const newGroup = trace.sites.find((s) => s.api === 'new_group' && !s.cold)!;
  let out = '';
  const code = await planCommand({ run: [join(dir, 'h200x2-nccl2.30.7-source.json')], trace: traceFile, switchEvery: '2s', step: '30ms', kvBudget: '60GiB', json: true }, (t) => (out += t));
  assert.equal(code, 0);
  const plan = JSON.parse(out) as Plan;
  const lazy = plan.strategies.find((s) => s.id === 'lazy')!;
  assert.equal(lazy.critical[0]!.value, newGroup.creation!.medianMs);
  assert.equal(lazy.perTarget![0]!.ms, newGroup.creation!.medianMs + newGroup.firstCollective!.medianMs);
  assert.equal(lazy.perTarget![0]!.shape, 2);
  assert.match(plan.trace!.unused.join('\n'), /init_process_group at torch_tp_reshape\.py:\d+: cold/);
  await assert.rejects(planCommand({ trace: join(dir, 'missing.json') }, () => undefined), /cannot read the trace/);
});
