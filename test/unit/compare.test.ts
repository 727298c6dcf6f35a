// protocol/compare.ts (alignment, labels, medians, p90s, ratios), the CLI's comparison table,
// the comparison chart model and renderComparisonReport, on fixture runs built here and on the
// real H200 runs of docs/results (NCCL 2.28.9 vs 2.28.3 on the same host).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { EnvironmentStamp, VariantSummary } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { compareRuns, describeRuns, formatRatio, ratioOf, runKey } from '../../protocol/compare';
import { formatComparison, SIMULATED_BANNER } from '../../cli/summary';
import { compareChartModel } from '../../webview/compareChartData';
import { escapeHtml, renderComparisonReport } from '../../client/htmlReport';

const results = join(__dirname, '..', '..', 'docs', 'results');
const load = (name: string): RunFile => JSON.parse(readFileSync(join(results, name), 'utf8')) as RunFile;
const H9 = 'h200x2-nccl2.28.9-wheel.json';
const H3 = 'h200x2-nccl2.28.3-system.json';

const stats = (median: number, p90 = median * 1.1) => ({ median, p90, min: median, max: p90, mean: median, n: 10 });

function stamp(over: Partial<EnvironmentStamp> = {}): EnvironmentStamp {
  return {
    hostname: 'gpu1', gpus: [{ ordinal: 0, name: 'NVIDIA A40', totalBytes: 48e9, pciBusId: '0000:01:00.0' }],
    driverVersion: '570.1', ncclVersion: '2.28.9', ncclVersionCode: 22809, ncclPath: '/usr/lib/libnccl.so.2', ncclSource: 'explicit',
    ncclSymbols: {}, topology: '', ncclEnv: {}, commcostVersion: '0.1.0', nodeVersion: 'v20', platform: 'linux-x64',
    startedAt: '2025-01-01T00:00:00Z', simulated: false, ...over,
  };
}

function variant(name: string, call: number, first?: number, memory?: number): VariantSummary {
  const steps: VariantSummary['steps'] = [{ step: 'call', label: 'ncclCommInitRank', kind: 'call', stats: stats(call), samples: [] }];
  if (first !== undefined) {
    steps.push({ step: 'first', label: 'first 1 MiB allreduce', kind: 'first', stats: stats(first), samples: [] });
    steps.push({ step: 'total', label: 'to first collective', kind: 'toFirst', sumOf: ['call', 'first'], stats: stats(call + first), samples: [] });
  }
  return { variant: name, steps, ...(memory !== undefined ? { memoryBytes: { afterCall: memory } } : {}) };
}

function run(id: string, over: Partial<RunFile>, experiments: RunFile['experiments']): RunFile {
  return {
    schema: 'commcost.run/1', id, host: 'gpu1', simulated: false, status: 'complete',
    options: { experiments: ['init'], iterations: 10, warmup: 1, deadlineSeconds: 60 }, ranks: 2,
    stamp: stamp(), experiments, skipped: [], errors: [], ...over,
  };
}

const exp = (experiment: RunFile['experiments'][number]['experiment'], variants: VariantSummary[]): RunFile['experiments'][number] =>
  ({ experiment, variants, done: 11, total: 11, samples: {}, state: 'finished' });

describe('compareRuns on fixture runs', () => {
  const a = run('a', {}, [exp('init', [variant('default', 40, 100, 76 << 20)]), exp('destroy', [variant('default', 500)])]);
  const b = run('b', { stamp: stamp({ ncclVersion: '2.28.3', ncclEnv: { NCCL_RUNTIME_CONNECT: '0' } }) }, [
    // another order, an extra experiment and variant, a missing step
    exp('split', [variant('halves', 20, 1)]),
    exp('init', [variant('default', 50, 80, 80 << 20), variant('extra', 7)]),
  ]);

  test('aligned by experiment, variant and step in first-seen order, run 0 first', () => {
    const c = compareRuns([a, b]);
    assert.deepEqual(c.experiments.map((e) => e.experiment), ['init', 'destroy', 'split']);
    const init = c.experiments[0]!;
    assert.deepEqual(init.variants.map((v) => v.variant), ['default', 'extra']);
    assert.deepEqual(init.variants[0]!.steps.map((s) => [s.step, s.kind, s.derived]), [['call', 'call', false], ['first', 'first', false], ['total', 'toFirst', true]]);
    // a step one run lacks is null there
    assert.equal(init.variants[1]!.steps[0]!.cells[0], null);
    assert.equal(c.experiments[1]!.variants[0]!.steps[0]!.cells[1], null);
    assert.equal(c.experiments[2]!.variants[0]!.steps[0]!.cells[0], null);
  });

  test('medians, p90s and ratios against run 0', () => {
    const c = compareRuns([a, b]);
    const [call, first, total] = c.experiments[0]!.variants[0]!.steps;
    assert.deepEqual(call!.cells.map((x) => [x?.median, x?.p90, x?.n, x?.ratio]), [[40, 44, 10, 1], [50, 55.00000000000001, 10, 1.25]]);
    assert.equal(first!.cells[1]!.ratio, 0.8);
    assert.equal(total!.cells[1]!.median, 130);
    // no base: no ratio
    assert.equal(c.experiments[0]!.variants[1]!.steps[0]!.cells[1]!.ratio, undefined);
    const mem = c.experiments[0]!.variants[0]!.memory[0]!;
    assert.deepEqual([mem.point, mem.bytes, mem.ratio[1]], ['afterCall', [76 << 20, 80 << 20], 80 / 76]);
  });

  test('labels: host · NCCL version · the env that differs; SIMULATED when any mark says so', () => {
    const sim = run('s', { stamp: stamp({ ncclPath: '/x/dist/native/libnccl-sim.so' }) }, []);
    const infos = describeRuns([a, b, sim]);
    assert.deepEqual(infos.map((i) => [i.key, i.label]), [
      ['A', 'gpu1 · NCCL 2.28.9 · NCCL_RUNTIME_CONNECT unset · /usr/lib/libnccl.so.2'],
      ['B', 'gpu1 · NCCL 2.28.3 · NCCL_RUNTIME_CONNECT=0'],
      ['C', 'gpu1 · NCCL 2.28.9 · NCCL_RUNTIME_CONNECT unset · /x/dist/native/libnccl-sim.so · SIMULATED'],
    ]);
    assert.deepEqual(infos[1]!.envDiff, { NCCL_RUNTIME_CONNECT: '0' });
    assert.equal(compareRuns([a, sim]).anySimulated, true);
    assert.equal(compareRuns([a, b]).anySimulated, false);
  });

  test('identical labels are told apart by path, then start time, then position; ranks when they differ', () => {
    // A run whose ranks had the method variables against one from before they were recorded: the labels say so.
    const fixed: RunFile = { ...a, id: 'f', stamp: { ...a.stamp!, rankEnv: { MALLOC_ARENA_MAX: '1', UV_THREADPOOL_SIZE: '1' } } };
    const method = describeRuns([a, fixed]);
    assert.match(method[0]!.label, /rank MALLOC_ARENA_MAX=not recorded · rank UV_THREADPOOL_SIZE=not recorded/);
    assert.match(method[1]!.label, /rank MALLOC_ARENA_MAX=1 · rank UV_THREADPOOL_SIZE=1/);
    assert.deepEqual(describeRuns([fixed, { ...fixed, id: 'g' }]).map((i) => /rank /.test(i.label)), [false, false], 'equal rank variables are not shown');
    const twice = describeRuns([a, { ...a, id: 'a2' }, { ...a, id: 'a3', ranks: 4 }]);
    assert.deepEqual(twice.map((i) => i.label), [
      'gpu1 · NCCL 2.28.9 · 2 ranks · /usr/lib/libnccl.so.2 · 2025-01-01T00:00:00Z · #1',
      'gpu1 · NCCL 2.28.9 · 2 ranks · /usr/lib/libnccl.so.2 · 2025-01-01T00:00:00Z · #2',
      'gpu1 · NCCL 2.28.9 · 4 ranks',
    ]);
  });

  test('an experiment stopped before its summary is compared on its recorded samples', () => {
    const partial = run('p', { status: 'partial' }, [{ experiment: 'init', variants: [], done: 4, total: 11, state: 'stopped', samples: { default: { call: [30, 10, 20, 40] } } }]);
    const cell = compareRuns([a, partial]).experiments[0]!.variants[0]!.steps[0]!.cells[1]!;
    assert.deepEqual([cell.median, cell.p90, cell.n, cell.ratio], [25, 40, 4, 25 / 40]);
  });

  test('untrusted junk does not throw', () => {
    const junk = { schema: 'commcost.run/1', id: 7, experiments: [null, { experiment: 'init', variants: [{ variant: 'default', steps: [null, { step: 'call' }] }] }] } as unknown as RunFile;
    const c = compareRuns([junk, a]);
    assert.equal(c.runs[0]!.label, '? · NCCL ? · ? ranks');
    assert.ok(Number.isNaN(c.experiments[0]!.variants[0]!.steps[0]!.cells[0]!.median));
  });

  test('keys and ratio text', () => {
    assert.deepEqual([runKey(0), runKey(1), runKey(25), runKey(26)], ['A', 'B', 'Z', 'R27']);
    assert.equal(ratioOf(3, 0), undefined);
    assert.equal(ratioOf(NaN, 2), undefined);
    assert.equal(formatRatio(1.0749), '1.07×');
    assert.equal(formatRatio(12.34), '12.3×');
    assert.equal(formatRatio(undefined), '–');
  });
});

describe('compareRuns on the H200 runs (2.28.9 vs 2.28.3, same host)', () => {
  const r9 = load(H9);
  const r3 = load(H3);
  const c = compareRuns([r9, r3]);

  test('labels name the NCCL versions; the host is the same and the env stamps agree', () => {
    assert.deepEqual(c.runs.map((r) => r.label), ['vm · NCCL 2.28.9', 'vm · NCCL 2.28.3']);
    assert.deepEqual(c.runs.map((r) => r.envDiff), [{}, {}]);
  });

  test('every experiment, variant and step of both files is aligned', () => {
    const shape = (r: RunFile) => r.experiments.map((e) => [e.experiment, e.variants.map((v) => [v.variant, v.steps.map((s) => s.step)])]);
    assert.deepEqual(shape(r3), shape(r9));
    assert.deepEqual(c.experiments.map((e) => [e.experiment, e.variants.map((v) => [v.variant, v.steps.map((s) => s.step)])]), shape(r9));
  });

  test("every median and p90 equals the file's, every ratio is median / 2.28.9's median", () => {
    let checked = 0;
    c.experiments.forEach((e, ei) => {
      e.variants.forEach((v, vi) => {
        v.steps.forEach((s, si) => {
          const a = r9.experiments[ei]!.variants[vi]!.steps[si]!.stats;
          const b = r3.experiments[ei]!.variants[vi]!.steps[si]!.stats;
          assert.deepEqual(s.cells.map((x) => [x!.median, x!.p90, x!.n]), [[a.median, a.p90, a.n], [b.median, b.p90, b.n]]);
          assert.equal(s.cells[1]!.ratio, b.median / a.median);
          assert.equal(s.cells[0]!.ratio, 1);
          checked++;
        });
        assert.deepEqual(v.memory.map((m) => [m.point, m.bytes]), Object.entries(r9.experiments[ei]!.variants[vi]!.memoryBytes ?? {}).map(([p, x]) => [p, [x, r3.experiments[ei]!.variants[vi]!.memoryBytes![p]]]));
      });
    });
    assert.equal(checked, 4 + 12 + 3 + 4);
  });

  test('the headline: init to first collective 175.7 ms on 2.28.9, 190.6 ms on 2.28.3 (1.09×)', () => {
    const total = c.experiments.find((e) => e.experiment === 'init')!.variants[0]!.steps.find((s) => s.kind === 'toFirst')!;
    assert.equal(total.cells[0]!.median.toFixed(1), '175.7');
    assert.equal(total.cells[1]!.median.toFixed(1), '190.6');
    assert.equal(formatRatio(total.cells[1]!.ratio), '1.09×');
  });

  test('the CLI table: a legend, one row per step, each median and the ratio', () => {
    const text = formatComparison([r9, r3]);
    assert.match(text, /^comparison of 2 runs/);
    assert.match(text, /A = vm · NCCL 2\.28\.9 \(run 20261129-194828-localhost, complete\)/);
    assert.match(text, /B = vm · NCCL 2\.28\.3/);
    assert.match(text, /experiment variant · step\s+A median ms\s+B median ms\s+B\/A/);
    assert.match(text, /init default · total \(to first collective\): init to first collective\s+175\.7\s+190\.6\s+1\.09×/);
    assert.match(text, /destroy default · teardown: ncclCommDestroy\s+507\.8\s+508\.4\s+1\.00×/);
    assert.doesNotMatch(text, /SIMULATED/);
  });

  test('the CLI table: SIMULATED first and last when a run is simulated; control characters escaped', () => {
    const sim = { ...r3, simulated: true, host: 'evil\x1b[2J' };
    sim.stamp = { ...r3.stamp!, hostname: 'evil\x1b]0;x\x07' };
    const lines = formatComparison([r9, sim]).trimEnd().split('\n');
    assert.ok(lines[0]!.includes(SIMULATED_BANNER) && lines.at(-1)!.includes(SIMULATED_BANNER));
    assert.ok(lines.some((l) => l.startsWith('  B = evil\\x1b]0;x\\x07 · NCCL 2.28.3 · SIMULATED')));
    // eslint-disable-next-line no-control-regex -- looking for control characters is the point
    assert.ok(!/[\x00-\x09\x0b-\x1f\x7f-\x9f]/.test(lines.join('\n')));
  });

  test('the chart model: one bar per run and step, coloured by run, whiskers median → p90', () => {
    const init = c.experiments.find((e) => e.experiment === 'init')!;
    const m = compareChartModel(init, c.runs);
    assert.deepEqual(m.labels, ['ncclCommInitRankConfig', 'first 1 MiB allreduce', 'init to first collective', 'steady 64 MiB allreduce']);
    assert.deepEqual(m.series.map((s) => [s.stack, s.runIndex, s.label]), [['run0', 0, 'A: vm · NCCL 2.28.9'], ['run1', 1, 'B: vm · NCCL 2.28.3']]);
    assert.deepEqual(m.series[1]!.data, r3.experiments[0]!.variants[0]!.steps.map((s) => s.stats.median));
    assert.equal(m.whiskers.length, 8);
    const w = m.whiskers.find((x) => x.stack === 'run1' && x.variantIndex === 2)!;
    const st = r3.experiments[0]!.variants[0]!.steps[2]!.stats;
    assert.deepEqual([w.from, w.to], [st.median, st.p90]);
    const split = compareChartModel(c.experiments.find((e) => e.experiment === 'split')!, c.runs);
    assert.equal(split.labels[0], 'halves/splitShare=0 · ncclCommSplit');
  });
});

describe('renderComparisonReport', () => {
  const bundle = (): string => {
    const p = join(mkdtempSync(join(tmpdir(), 'commcost-compare-')), 'webview.js');
    writeFileSync(p, 'window.__commcost = "loaded";');
    return p;
  };
  const embedded = (html: string): string => {
    const m = /<script type="application\/json" id="commcost-compare">([\s\S]*?)<\/script>/.exec(html);
    assert.ok(m, 'comparison script element missing');
    return m[1]!;
  };

  test('embeds {runs}, has the medians, p90s and ratios in the fallback, and no single-run element', () => {
    const r9 = load(H9);
    const r3 = load(H3);
    const html = renderComparisonReport([r9, r3], { webviewJsPath: bundle() });
    assert.deepEqual(JSON.parse(embedded(html)), { runs: [r9, r3] });
    assert.ok(!html.includes('id="commcost-run"'));
    assert.match(html, /<title>commcost — comparison: vm · NCCL 2\.28\.9 vs vm · NCCL 2\.28\.3<\/title>/);
    const noscript = /<noscript>([\s\S]*)<\/noscript>/.exec(html)?.[1] ?? '';
    for (const figure of ['31.94', '34.26', '175.7', '190.6', '181.2', '198.6', '1.09×', '507.8', '508.4', '388.0']) assert.ok(noscript.includes(figure), `fallback lacks ${figure}`);
    assert.ok(!html.includes('SIMULATED'));
  });

  test('hostile text stays text; a simulated run is labelled', () => {
    const hostile = '</script><img src=x onerror=alert(1)>';
    const a = load(H9);
    const b = { ...load(H3), simulated: true, host: hostile, id: hostile };
    b.stamp = { ...b.stamp!, hostname: hostile };
    const html = renderComparisonReport([a, b], { webviewJsPath: bundle() });
    assert.ok(!html.includes('<img'));
    assert.equal(html.match(/<\/script/gi)?.length, 2);
    assert.ok(html.includes(escapeHtml(hostile)));
    assert.ok(html.includes('<strong>SIMULATED</strong>'));
    assert.deepEqual(JSON.parse(embedded(html)).runs[1], b);
  });
});
