// The webview's pure parts: message guards, formatting, statistics, the chart model, frame batching.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RunExperiment, RunFile } from '../../protocol/runFile';
import {
  CancelRunCommand,
  createMessage,
  HOST_TO_WEBVIEW,
  ReadyCommand,
  RunStateNotification,
  ShowLogCommand,
  WEBVIEW_TO_HOST,
} from '../../protocol/webviewMessages';
import { chartModel, MEM_STATS_LABEL, memoryChartModel } from '../../webview/chartData';
import { MEMORY_HEAD, memoryRows, ncclViewModel } from '../../webview/tables';
import { formatDate, formatGpus, formatMiB, formatMs, formatWhere } from '../../webview/format';
import { AtMostEvery, LatestPerFrame } from '../../webview/scheduler';
import { computeStats, dataSignature, variantViews } from '../../webview/stats';

const run = { schema: 'commcost.run/1', id: 'x', host: 'h', simulated: false, status: 'running', experiments: [], skipped: [], errors: [] } as unknown as RunFile;

test('message methods are namespaced scope/noun/verb and unique', () => {
  const methods = [...WEBVIEW_TO_HOST, ...HOST_TO_WEBVIEW].map((t) => t.method);
  assert.deepEqual(methods, ['webview/ready', 'run/cancel', 'log/show', 'state/run/update', 'state/run/delta', 'plan/show']);
  assert.equal(new Set(methods).size, methods.length);
});

const guardCases: [string, unknown, boolean[]][] = [
  // [what, message, [ready, cancel, showLog, state]]
  ['ready', createMessage(ReadyCommand, {}, 'webview', 1), [true, false, false, false]],
  ['cancel', createMessage(CancelRunCommand, {}, 'webview', 2), [false, true, false, false]],
  ['show log', createMessage(ShowLogCommand, {}, 'webview', 3), [false, false, true, false]],
  ['state', createMessage(RunStateNotification, { run, live: true }, 'host', 1), [false, false, false, true]],
  ['state without live', { id: 'host:1', method: 'state/run/update', params: { run } }, [false, false, false, false]],
  ['state with run null', { id: 'host:1', method: 'state/run/update', params: { run: null, live: false } }, [false, false, false, false]],
  ['no id', { method: 'webview/ready', params: {} }, [false, false, false, false]],
  ['not an object', 'webview/ready', [false, false, false, false]],
  ['null', null, [false, false, false, false]],
  ['unknown method', { id: 'a', method: 'run/start', params: {} }, [false, false, false, false]],
];
for (const [what, msg, expected] of guardCases) {
  test(`is() guards: ${what}`, () => {
    assert.deepEqual([ReadyCommand.is(msg), CancelRunCommand.is(msg), ShowLogCommand.is(msg), RunStateNotification.is(msg)], expected);
  });
}

const msCases: [number | undefined, string][] = [
  [485.349, '485.3'], [100, '100.0'], [43.123, '43.12'], [3.2734, '3.27'], [1, '1.00'], [0.16234, '0.162'], [0.0042, '0.0042'],
  [0, '0'], [NaN, '–'], [undefined, '–'], [Infinity, '–'],
];
for (const [ms, text] of msCases) test(`formatMs(${ms}) = ${text}`, () => assert.equal(formatMs(ms), text));

test('formatMiB, formatWhere, formatGpus, formatDate', () => {
  assert.equal(formatMiB(76 * 1048576), '76.0');
  assert.equal(formatMiB(undefined), '–');
  assert.equal(formatWhere({ host: 'gpu1', rank: 2, experiment: 'split', iteration: 3 }), 'host gpu1, rank 2, experiment split, iteration 3');
  assert.equal(formatWhere('host gpu1'), 'host gpu1');
  assert.equal(formatWhere(undefined), '');
  assert.equal(formatGpus([{ name: 'NVIDIA H200' }, { name: 'NVIDIA H200' }]), '2 × NVIDIA H200');
  assert.equal(formatGpus([{ name: 'A' }, { name: 'B' }]), 'A, B');
  assert.equal(formatGpus([]), '');
  assert.equal(formatDate('not a date'), 'not a date');
  assert.match(formatDate('2025-01-31T14:02:07Z'), /^2025-01-3[01] \d\d:02:07$/);
});

const statsCases: [number[], { median: number; p90: number; min: number; max: number; n: number }][] = [
  [[5], { median: 5, p90: 5, min: 5, max: 5, n: 1 }],
  [[4, 1, 3, 2], { median: 2.5, p90: 4, min: 1, max: 4, n: 4 }],
  [[10, 1, 2, 3, 4, 5, 6, 7, 8, 9], { median: 5.5, p90: 9, min: 1, max: 10, n: 10 }],
  [[3, NaN, 1, 2], { median: 2, p90: 3, min: 1, max: 3, n: 3 }],
];
for (const [samples, expected] of statsCases) {
  test(`computeStats(${JSON.stringify(samples)})`, () => {
    const s = computeStats(samples);
    assert.deepEqual({ median: s.median, p90: s.p90, min: s.min, max: s.max, n: s.n }, expected);
  });
}
test('computeStats of nothing is n = 0 with NaN figures', () => {
  const s = computeStats([]);
  assert.equal(s.n, 0);
  assert.ok(Number.isNaN(s.median));
});

const stats = (median: number, p90: number) => ({ median, p90, min: median, max: p90, mean: median, n: 10 });

function splitExperiment(): RunExperiment {
  return {
    experiment: 'split',
    done: 22,
    total: 22,
    state: 'finished',
    samples: {},
    variants: ['halves/splitShare=0', 'halves/splitShare=1'].map((variant, i) => ({
      variant,
      steps: [
        { step: 'call', label: 'ncclCommSplit', kind: 'call' as const, stats: stats(23 + i, 25 + i), samples: [] },
        { step: 'first', label: 'first 1 MiB allreduce', kind: 'first' as const, stats: stats(54.5, 60), samples: [] },
        { step: 'toFirst', label: 'to first collective', kind: 'toFirst' as const, sumOf: ['call', 'first'], stats: stats(78 + i, 86 + i), samples: [] },
        { step: 'steady', label: '64 MiB allreduce', kind: 'steady' as const, stats: stats(3.27, 3.3), samples: [] },
        { step: 'finalize', label: 'ncclCommFinalize', kind: 'teardown' as const, stats: stats(100, 120), samples: [] },
        { step: 'destroy', label: 'ncclCommDestroy', kind: 'teardown' as const, stats: stats(60, 70), samples: [] },
      ],
      memoryBytes: { afterCall: 76 * 1048576 },
    })),
  };
}

test('chart model: only the parts of a sum stack (call + first = to first collective); every other step is a bar of its own', () => {
  const m = chartModel(variantViews(splitExperiment()));
  assert.deepEqual(m.labels, ['halves/splitShare=0', 'halves/splitShare=1']);
  assert.deepEqual(m.series.map((s) => [s.stack, s.label, s.data]), [
    ['sum:toFirst', 'ncclCommSplit', [23, 24]],
    ['sum:toFirst', 'first 1 MiB allreduce', [54.5, 54.5]],
    ['step:steady', '64 MiB allreduce', [3.27, 3.27]],
    // finalize and destroy declare no sum: side by side, not stacked
    ['step:finalize', 'ncclCommFinalize', [100, 100]],
    ['step:destroy', 'ncclCommDestroy', [60, 60]],
  ]);
  const w = m.whiskers.filter((x) => x.variantIndex === 1);
  assert.deepEqual(w.map((x) => [x.stack, x.from, x.to, x.source]), [
    ['sum:toFirst', 78.5, 87, 'toFirst'],
    ['step:steady', 3.27, 3.3, 'steady'],
    ['step:finalize', 100, 120, 'finalize'],
    ['step:destroy', 60, 70, 'destroy'],
  ]);
});

test('chart model (C6): the polled init and the abort call stack to the whole, which is not drawn again', () => {
  const exp: RunExperiment = {
    experiment: 'init-abort', done: 11, total: 11, state: 'finished', samples: {},
    variants: [{
      variant: 'nonblocking',
      steps: [
        { step: 'poll', label: 'non-blocking init, polled until 1500 ms', kind: 'teardown', stats: stats(1499.9, 1500), samples: [] },
        { step: 'abortCall', label: 'the ncclCommAbort call', kind: 'teardown', stats: stats(0.11, 0.12), samples: [] },
        { step: 'abort', label: 'non-blocking init polled 1500 ms, then ncclCommAbort', kind: 'teardown', sumOf: ['poll', 'abortCall'], stats: stats(1500.01, 1500.1), samples: [] },
      ],
    }],
  };
  const m = chartModel(variantViews(exp));
  // One variant: one row per bar, named by the sum's label; its parts are in the legend.
  assert.deepEqual(m.labels, ['non-blocking init polled 1500 ms, then ncclCommAbort']);
  assert.deepEqual(m.series.map((s) => [s.stack, s.label, s.data, s.inLegend]), [
    ['sum:abort', 'non-blocking init, polled until 1500 ms', [1499.9], undefined],
    ['sum:abort', 'the ncclCommAbort call', [0.11], undefined],
  ]);
  assert.deepEqual(m.whiskers.map((w) => [w.stack, w.to, w.source]), [['sum:abort', 1500.1, 'abort']]);
});

test('chart model while live: statistics from samples, each step a bar of its own (no sum is known yet)', () => {
  const exp: RunExperiment = {
    experiment: 'init', done: 3, total: 11, state: 'running', variants: [],
    samples: { default: { call: [40, 44, 42], first: [50, 52, 51], mystery: [1, 2, 3] } },
  };
  const views = variantViews(exp);
  assert.equal(views[0]!.live, true);
  const m = chartModel(views);
  assert.deepEqual(m.labels, ['call', 'first', 'mystery']);
  assert.deepEqual(m.series.map((s) => [s.stack, s.data]), [['step:call', [42, null, null]], ['step:first', [null, 51, null]], ['step:mystery', [null, null, 2]]]);
  assert.deepEqual(m.whiskers.map((w) => [w.stack, w.to]), [['step:call', 44], ['step:first', 52], ['step:mystery', 3]]);
});

test('variantViews tolerates an experiment without variants or samples', () => {
  assert.deepEqual(variantViews({ experiment: 'abort', done: 0, total: 0, state: 'pending' } as unknown as RunExperiment), []);
});

test('LatestPerFrame: 1,000 pushes between frames → one render of the latest', () => {
  const frames: (() => void)[] = [];
  const rendered: number[] = [];
  const s = new LatestPerFrame<number>((v) => rendered.push(v), (cb) => frames.push(cb));
  for (let i = 1; i <= 1000; i++) s.push(i);
  assert.equal(frames.length, 1);
  assert.deepEqual(rendered, []);
  frames.shift()!();
  assert.deepEqual(rendered, [1000]);
  s.push(1001);
  s.push(1002);
  assert.equal(frames.length, 1);
  frames.shift()!();
  assert.deepEqual(rendered, [1000, 1002]);
  assert.equal(frames.length, 0);
});

test('AtMostEvery: charts at most every 250 ms while streaming; the last job kept runs, runNow drops the kept one', () => {
  let now = 0;
  const timers: { cb: () => void; at: number }[] = [];
  const t = new AtMostEvery(250, { now: () => now, setTimer: (cb, ms) => void timers.push({ cb, at: now + ms }) });
  const ran: number[] = [];
  t.run(() => ran.push(1));
  assert.deepEqual(ran, [1]);
  now = 100;
  for (let i = 2; i <= 50; i++) t.run(() => ran.push(i));
  assert.deepEqual(ran, [1]);
  assert.equal(timers.length, 1);
  assert.equal(timers[0]!.at, 250);
  now = 250;
  timers.shift()!.cb();
  assert.deepEqual(ran, [1, 50]);
  now = 300;
  t.run(() => ran.push(51));
  t.runNow(() => ran.push(52));
  assert.deepEqual(ran, [1, 50, 52]);
  now = 600;
  timers.shift()!.cb();
  assert.deepEqual(ran, [1, 50, 52], 'the job kept before runNow is dropped');
  assert.throws(() => new AtMostEvery(-1), RangeError);
});

test('dataSignature: a long sample array counts by length, first and last value; any appended sample changes it', () => {
  const samples = Array.from({ length: 50_000 }, (_, i) => 40 + (i % 13));
  const exp = { state: 'running', samples: { default: { call: samples } } };
  const a = dataSignature(exp);
  assert.ok(a.length < 200, a);
  assert.equal(dataSignature(exp), a);
  samples.push(41);
  assert.notEqual(dataSignature(exp), a);
  assert.equal(dataSignature({ short: [1, 2, 3] }), JSON.stringify({ short: [1, 2, 3] }));
  assert.notEqual(dataSignature({ s: 'running' }), dataSignature({ s: 'finished' }));
});

test('memory chart: the experiments\' own points read as words (afterCall → after the call)', () => {
  const run = JSON.parse(readFileSync(join(__dirname, '..', '..', 'docs', 'results', 'h200x2-nccl2.28.9-wheel.json'), 'utf8')) as RunFile;
  const init = run.experiments.find((e) => e.experiment === 'init')!;
  const model = memoryChartModel(variantViews(init as unknown as RunExperiment));
  assert.deepEqual(model.series.map((s) => s.label), ['memory after the call', 'memory after the first collective']);
});

test('memory chart (C2): one bar per variant and point, MiB per GPU, points in first-seen order, so growth per group and the splitShare settings sit side by side', () => {
  const cases = JSON.parse(readFileSync(join(__dirname, '..', '..', 'docs', 'results', 'h200x2-nccl2.28.9-wheel.cases.json'), 'utf8')) as RunFile;
  const exp = cases.experiments.find((e) => e.experiment === 'split-share')!;
  const views = variantViews(exp as unknown as RunExperiment);
  const model = memoryChartModel(views);
  assert.deepEqual(model.labels, exp.variants.map((v) => v.variant));
  assert.deepEqual(model.series.map((s) => s.label), ['memory after 1 group', 'memory after 2 groups', 'memory after 3 groups']);
  for (const s of model.series) {
    const point = s.label.replace(/^memory /, '');
    assert.deepEqual(s.data, exp.variants.map((v) => v.memoryBytes![point]! / 2 ** 20));
  }
  assert.equal(new Set(model.series.map((s) => s.stack)).size, 3, 'grouped, not stacked');
  assert.deepEqual(model.whiskers, []);
  assert.equal(memoryChartModel(views.map((v) => ({ ...v, memoryBytes: {} }))).series.length, 0, 'no memory, no chart');
});

// ---- The 1×H200 runs: ncclCommMemStats beside the free-memory delta, NCCL's view of a cold start.
const oneH200 = (name: string): RunFile =>
  JSON.parse(readFileSync(join(__dirname, '..', '..', 'docs', 'results', 'h200x1-2026-12-01', name), 'utf8')) as RunFile;
const extrasOf = (run: RunFile, experiment: string) => run.experiments.find((e) => e.experiment === experiment)!.variants;

test('memory chart (1×H200 2.30.7, suspend): NCCL\'s count (MemStats) is a bar of its own beside each point\'s free-memory delta', () => {
  const exp = oneH200('h200x1-nccl2.30.7-source.json').experiments.find((e) => e.experiment === 'suspend')!;
  const views = variantViews(exp as unknown as RunExperiment).map((v) => ({ ...v, memStats: exp.variants.find((x) => x.variant === v.variant)?.memStats }));
  const model = memoryChartModel(views);
  assert.deepEqual(model.series.map((s) => s.label), [
    'memory warm, before suspend', `${MEM_STATS_LABEL} warm, before suspend`,
    'memory after suspend', `${MEM_STATS_LABEL} after suspend`,
    'memory after resume', `${MEM_STATS_LABEL} after resume`,
    'memory after the first collective', `${MEM_STATS_LABEL} after the first collective`,
  ]);
  const at = (label: string) => model.series.find((s) => s.label === label)!.data[0];
  assert.equal(at('memory after suspend'), 4, 'the free-memory delta after suspend, MiB');
  assert.equal(at(`${MEM_STATS_LABEL} after suspend`), 388, 'NCCL\'s count after suspend (total), MiB');
  assert.equal(new Set(model.series.map((s) => s.stack)).size, model.series.length, 'never summed');
  // 2.28.9 has no MemStats: the free-memory delta alone.
  const wheel = oneH200('h200x1-nccl2.28.9-wheel.json').experiments.find((e) => e.experiment === 'init')!;
  assert.ok(memoryChartModel(variantViews(wheel as unknown as RunExperiment)).series.every((s) => !s.label.startsWith(MEM_STATS_LABEL)));
});

test('memory table rows: the free-memory delta and NCCL\'s count in columns of their own, "–" where NCCL was not asked', () => {
  const src = oneH200('h200x1-nccl2.30.7-source.json');
  assert.deepEqual(MEMORY_HEAD, ['variant', 'point', 'free-memory delta (MiB per GPU)', "NCCL's count (MemStats): total MiB", 'suspendable MiB', 'persistent MiB']);
  assert.deepEqual(memoryRows(extrasOf(src, 'suspend')), [
    ['default', 'warm, before suspend', '388.0', '388.0', '384.0', '4.0'],
    ['default', 'after suspend', '4.0', '388.0', '384.0', '4.0'],
    ['default', 'after resume', '388.0', '388.0', '384.0', '4.0'],
    ['default', 'after the first collective', '388.0', '388.0', '384.0', '4.0'],
  ]);
  assert.deepEqual(memoryRows(extrasOf(src, 'abort'))[0], ['default', 'after the call', '388.0', '–', '–', '–']);
});

test("NCCL's view (Init timings) of the 1×H200 cold start: ratios, parts per creation in ms, iterations, the 10 ms resolution; the note when missing", () => {
  const model = ncclViewModel(extrasOf(oneH200('h200x1-nccl2.30.7-source.json'), 'cold-start')[0]!)!;
  assert.deepEqual(model.ratios, ['cold / warm (init to first collective): 19.5×', 'cold / warm init: 19.5×']);
  assert.deepEqual(model.head, ['part', 'cold ms', 'warm ms']);
  assert.deepEqual(model.rows.slice(0, 2), [['total', '340', '20'], ['kernels', '280', '0']]);
  assert.deepEqual(model.rows.at(-1), ['iterations read', '5', '5']);
  assert.match(model.notes[0]!, /10 ms resolution/);
  const missing = ncclViewModel({ variant: 'default', ncclInit: { medians: {}, iterations: {}, malformedLines: 0, note: 'NCCL 2.21.5 predates the Init timings line (2.23.4)' } })!;
  assert.deepEqual([missing.rows, missing.notes], [[], ["NCCL's view is missing: NCCL 2.21.5 predates the Init timings line (2.23.4)"]]);
  assert.equal(ncclViewModel({ variant: 'default' }), undefined, 'nothing to show');
});
