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
import { compareRuns, describeRuns, differenceRuleText, formatRatio, judgeDifference, ratioOf, runKey } from '../../protocol/compare';
import { mannWhitney, quantileSorted, smallestRankTestP } from '../../protocol/rankTest';
import { ratioCellView } from '../../webview/compareCells';
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
      ['A', '1× A40 · NCCL 2.28.9 · NCCL_RUNTIME_CONNECT unset'],
      ['B', '1× A40 · NCCL 2.28.3 · NCCL_RUNTIME_CONNECT=0'],
      ['C', 'SIMULATED · 2 ranks · NCCL 2.28.9 · NCCL_RUNTIME_CONNECT unset'],
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
      '1× A40 · NCCL 2.28.9 · 2 ranks · gpu1 · /usr/lib/libnccl.so.2 · 2025-01-01T00:00:00Z · #1',
      '1× A40 · NCCL 2.28.9 · 2 ranks · gpu1 · /usr/lib/libnccl.so.2 · 2025-01-01T00:00:00Z · #2',
      '1× A40 · NCCL 2.28.9 · 4 ranks',
    ]);
  });

  test('runs of other machines with one hostname: the GPU models tell them apart when they differ', () => {
    const h200: RunFile = { ...a, id: 'h', stamp: stamp({ gpus: [{ ordinal: 0, name: 'NVIDIA H200', totalBytes: 141e9, pciBusId: '0000:01:00.0' }] }) };
    assert.deepEqual(describeRuns([a, h200]).map((i) => i.label), ['1× A40 · NCCL 2.28.9', '1× H200 · NCCL 2.28.9']);
    // The same models: not said.
    assert.deepEqual(describeRuns([a, { ...a, id: 'a2', ranks: 4 }]).map((i) => i.label), ['1× A40 · NCCL 2.28.9 · 2 ranks', '1× A40 · NCCL 2.28.9 · 4 ranks']);
  });

  test('a run over several nodes is labelled by its nodes, not by the one host its stamp is of (the CLI legend too)', () => {
    const nodes = (names: string[]): RunFile['nodes'] => names.map((hostname, index) => ({ index, hostname, address: `10.0.0.${index + 1}`, ranks: [2 * index, 2 * index + 1], gpus: ['NVIDIA H200', 'NVIDIA H200'] }));
    const two: RunFile = { ...a, id: 'n2', ranks: 4, nodes: nodes(['gpu0', 'gpu1']) };
    const many: RunFile = { ...a, id: 'n10', ranks: 20, nodes: nodes(Array.from({ length: 10 }, (_, i) => `n${i}`)) };
    const labels = describeRuns([a, two, many]).map((i) => i.label);
    // The fixture's one host has A40s, its nodes H200s: the models differ, so the labels say them.
    assert.deepEqual(labels, [
      '1× A40 · NCCL 2.28.9 · 2 ranks',
      '4× H200 over 2 hosts · NCCL 2.28.9',
      '20× H200 over 10 hosts · NCCL 2.28.9',
    ]);
    assert.match(formatComparison([a, two]), /^ {2}B = 4× H200 over 2 hosts · NCCL 2\.28\.9 \(run n2, /m);
  });

  test('an experiment stopped before its summary is compared on its recorded samples', () => {
    const partial = run('p', { status: 'partial' }, [{ experiment: 'init', variants: [], done: 4, total: 11, state: 'stopped', samples: { default: { call: [30, 10, 20, 40] } } }]);
    const cell = compareRuns([a, partial]).experiments[0]!.variants[0]!.steps[0]!.cells[1]!;
    assert.deepEqual([cell.median, cell.p90, cell.n, cell.ratio], [25, 40, 4, 25 / 40]);
  });

  test('untrusted junk does not throw', () => {
    const junk = { schema: 'commcost.run/1', id: 7, experiments: [null, { experiment: 'init', variants: [{ variant: 'default', steps: [null, { step: 'call' }] }] }] } as unknown as RunFile;
    const c = compareRuns([junk, a]);
    assert.equal(c.runs[0]!.label, 'host not named (GPUs not recorded) · NCCL version not recorded · ? ranks');
    assert.ok(Number.isNaN(c.experiments[0]!.variants[0]!.steps[0]!.cells[0]!.median));
  });

  test('keys and ratio text', () => {
    assert.deepEqual([runKey(0), runKey(1), runKey(25), runKey(26)], ['A', 'B', 'Z', 'R27']);
    assert.equal(ratioOf(3, 0), undefined);
    assert.equal(ratioOf(NaN, 2), undefined);
    assert.equal(formatRatio(1.0749), '1.07×');
    assert.equal(formatRatio(12.34), '12.3×');
    // From 100 a whole number: a 1-rank against a 4-rank first collective read "17010.0×".
    assert.equal(formatRatio(17010.04), '17010×');
    assert.equal(formatRatio(158.2), '158×');
    assert.equal(formatRatio(99.94), '99.9×');
    assert.equal(formatRatio(undefined), '–');
  });
});

describe('compareRuns on the H200 runs (2.28.9 vs 2.28.3, same host)', () => {
  const r9 = load(H9);
  const r3 = load(H3);
  const c = compareRuns([r9, r3]);

  test('labels name the NCCL versions; the host is the same and the env stamps agree', () => {
    assert.deepEqual(c.runs.map((r) => r.label), ['2× H200 · NCCL 2.28.9', '2× H200 · NCCL 2.28.3']);
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
    assert.match(text, /A = 2× H200 · NCCL 2\.28\.9 \(run 20261129-194828-localhost, complete\)/);
    assert.match(text, /B = 2× H200 · NCCL 2\.28\.3/);
    assert.match(text, /experiment variant · step\s+A median ms\s+B median ms\s+B\/A/);
    assert.match(text, /init default · total \(to first collective\): init to first collective\s+175\.7\s+190\.6\s+1\.09×/);
    assert.match(text, /destroy default · teardown: ncclCommDestroy\s+507\.8\s+508\.4\s+1\.00×/);
    assert.doesNotMatch(text, /SIMULATED/);
  });

  test('the CLI table: SIMULATED first and last when a run is simulated; control characters escaped', () => {
    const sim = { ...r3, simulated: true, host: 'evil\x1b[2J' };
    sim.stamp = { ...r3.stamp!, hostname: 'evil\x1b]0;x\x07', ncclVersion: '2.28.3\x1b]0;x\x07' };
    const lines = formatComparison([r9, sim]).trimEnd().split('\n');
    assert.ok(lines[0]!.includes(SIMULATED_BANNER) && lines.at(-1)!.includes(SIMULATED_BANNER));
    assert.ok(lines.some((l) => l.startsWith('  B = SIMULATED · 2 ranks · NCCL 2.28.3\\x1b]0;x\\x07')));
    // eslint-disable-next-line no-control-regex -- looking for control characters is the point
    assert.ok(!/[\x00-\x09\x0b-\x1f\x7f-\x9f]/.test(lines.join('\n')));
  });

  test('a simulated run beside a measured one: no ratio, no difference, and the table says why', () => {
    const sim = { ...r3, simulated: true };
    const cmp = compareRuns([r9, sim]);
    const cells = cmp.experiments.flatMap((e) => e.variants.flatMap((v) => v.steps.map((st) => st.cells[1])));
    assert.ok(cells.some((x) => x && Number.isFinite(x.median)), 'B keeps its medians');
    assert.ok(cells.every((x) => x?.ratio === undefined && x?.difference === undefined), 'no ratio between a simulation and a measurement');
    assert.ok(cmp.experiments.every((e) => e.variants.every((v) => v.memory.every((m) => m.ratio[1] === undefined))));
    const text = formatComparison([r9, sim]);
    assert.match(text, /no ratio is given between B \(SIMULATED\) and A \(measured\): simulated figures are not measurements/);
    assert.match(text, /init default · total \(to first collective\): init to first collective\s+175\.7\s+190\.6\s+–/);
    // Two simulated runs are of one kind: ratios as usual, no note.
    const both = formatComparison([{ ...r9, simulated: true }, sim]);
    assert.doesNotMatch(both, /no ratio is given/);
    assert.match(both, /init to first collective\s+175\.7\s+190\.6\s+1\.09×/);
  });

  test('NCCL_VERSION (a container image variable that configures nothing) never labels a run', () => {
    const x = run('x', { stamp: stamp({ ncclEnv: { NCCL_VERSION: '2.28.3-1' } }) }, []);
    const y = run('y', { stamp: stamp({ ncclEnv: { NCCL_VERSION: '2.27.5-1', NCCL_RUNTIME_CONNECT: '0' } }) }, []);
    const labels = describeRuns([x, y]).map((i) => i.label);
    assert.ok(labels.every((l) => !l.includes('NCCL_VERSION')), labels.join(' | '));
    assert.match(labels[1]!, /NCCL_RUNTIME_CONNECT=0/);
  });

  test('the chart model: one bar per run and step, coloured by run, whiskers median → p90', () => {
    const init = c.experiments.find((e) => e.experiment === 'init')!;
    const m = compareChartModel(init, c.runs);
    assert.deepEqual(m.labels, ['ncclCommInitRankConfig', 'first 1 MiB allreduce', 'init to first collective', 'steady 64 MiB allreduce']);
    assert.deepEqual(m.series.map((s) => [s.stack, s.runIndex, s.label]), [['run0', 0, 'A: 2× H200 · NCCL 2.28.9'], ['run1', 1, 'B: 2× H200 · NCCL 2.28.3']]);
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
    assert.match(html, /<title>commcost — comparison: 2× H200 · NCCL 2\.28\.9 vs 2× H200 · NCCL 2\.28\.3<\/title>/);
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

describe('notable differences: beyond the spread of the runs\' own samples, never a fixed threshold', () => {
  /** A run of one init step with these per-iteration samples (ms); stats from them. */
  const withSamples = (id: string, samples: number[]): RunFile => {
    const sorted = [...samples].sort((x, y) => x - y);
    const median = quantileSorted(sorted, 0.5);
    const st = { median, p90: quantileSorted(sorted, 0.9), min: sorted[0]!, max: sorted.at(-1)!, mean: median, n: samples.length };
    return run(id, {}, [exp('init', [{ variant: 'default', steps: [{ step: 'call', label: 'ncclCommInitRank', kind: 'call', stats: st, samples }] }])]);
  };
  const cellOf = (a: RunFile, b: RunFile) => compareRuns([a, b]).experiments[0]!.variants[0]!.steps[0]!.cells[1]!;
  // Ten samples around 40 ms spread over ±25%, and the same shape scaled.
  const base = [30, 33, 36, 38, 40, 40.5, 42, 44, 47, 50];
  const scaled = (k: number) => base.map((x) => x * k);

  test('a 1.07× ratio with overlapping samples is not notable (the old 5% threshold coloured it)', () => {
    const cell = cellOf(withSamples('a', base), withSamples('b', scaled(1.07)));
    assert.equal(formatRatio(cell.ratio), '1.07×');
    assert.equal(cell.difference?.verdict, 'within-spread');
    assert.equal(cell.difference?.basis, 'samples');
    const view = ratioCellView(cell.ratio, cell.difference);
    assert.deepEqual([view.text, view.className], ['1.07×', 'num']);
    assert.match(view.title!, /within the spread/);
  });

  test('a 1.3× ratio with separated samples is notable (higher), and 0.7× lower', () => {
    const tight = [40, 40.2, 40.4, 40.5, 40.6, 40.8, 41, 41.1, 41.3, 41.5];
    const up = cellOf(withSamples('a', tight), withSamples('b', tight.map((x) => x * 1.3)));
    assert.equal(up.difference?.verdict, 'higher');
    assert.ok(up.difference!.p! < 0.001);
    assert.deepEqual([ratioCellView(up.ratio, up.difference).className, ratioCellView(up.ratio, up.difference).text], ['num ratio-up', '1.30×']);
    assert.match(ratioCellView(up.ratio, up.difference).title!, /beyond the spread of both runs \(p10–p90 of the samples apart, Mann–Whitney p = /);
    const down = cellOf(withSamples('a', tight), withSamples('b', tight.map((x) => x * 0.7)));
    assert.equal(down.difference?.verdict, 'lower');
    assert.equal(ratioCellView(down.ratio, down.difference).className, 'num ratio-down');
    // The same medians with samples spread as wide as the study's process sets: not beyond the spread.
    const wide = cellOf(withSamples('a', base), withSamples('b', [28, 31, 35, 50, 51, 52.5, 54, 57, 61, 65]));
    assert.ok(wide.ratio! > 1.25, String(wide.ratio));
    assert.equal(wide.difference?.verdict, 'within-spread');
  });

  test('a 3× ratio from n=1 samples says too few samples (and so does 3 against 3); the CLI says so too', () => {
    const one = cellOf(withSamples('a', [10]), withSamples('b', [30]));
    assert.equal(formatRatio(one.ratio), '3.00×');
    assert.deepEqual(one.difference, { verdict: 'too-few-samples', basis: 'samples', n: [1, 1] });
    assert.deepEqual([ratioCellView(one.ratio, one.difference).text, ratioCellView(one.ratio, one.difference).className], ['3.00× (too few samples)', 'num']);
    assert.equal(cellOf(withSamples('a', [10, 11, 12]), withSamples('b', [30, 31, 32])).difference?.verdict, 'too-few-samples');
    // 4 against 4, fully separated, is enough at p < 0.05 (2/70).
    assert.equal(cellOf(withSamples('a', [10, 11, 12, 13]), withSamples('b', [30, 31, 32, 33])).difference?.verdict, 'higher');
    const text = formatComparison([withSamples('a', [10]), withSamples('b', [30])]);
    assert.match(text, /init default · call: ncclCommInitRank\s+10\.00\s+30\.00\s+3\.00× too few samples/);
    assert.ok(text.replace(/\s+/g, ' ').includes(differenceRuleText()), 'the rule is printed under the table');
  });

  test('files without samples: judged on the summaries\' min–max ranges; without those, no spread; memory never judged', () => {
    // The fixture runs above carry stats only (samples: []): min = median, max = p90.
    const a = run('a', {}, [exp('init', [variant('default', 40, 100, 76 << 20)])]);
    const apart = run('b', {}, [exp('init', [variant('default', 50, 100.5, 80 << 20)])]);
    const [call, first] = compareRuns([a, apart]).experiments[0]!.variants[0]!.steps;
    assert.deepEqual(call!.cells[1]!.difference, { verdict: 'higher', basis: 'range', p: smallestRankTestP(10, 10), n: [10, 10] });
    assert.deepEqual(first!.cells[1]!.difference, { verdict: 'within-spread', basis: 'range', n: [10, 10] });
    assert.equal(call!.cells[0]!.difference, undefined, 'the first run is not judged against itself');
    const bare = structuredClone(apart);
    for (const s of bare.experiments[0]!.variants[0]!.steps) (s.stats as Partial<typeof s.stats>).min = undefined;
    assert.equal(compareRuns([a, bare]).experiments[0]!.variants[0]!.steps[0]!.cells[1]!.difference?.verdict, 'no-spread');
    assert.equal(ratioCellView(1.07, undefined).className, 'num', 'memory ratios (no judgement) are never coloured');
  });

  test('the H200 runs (2.28.9 vs 2.28.3): the 1.07× init call is within the spread; splitShare=1 is beyond it', () => {
    const c = compareRuns([load(H9), load(H3)]);
    const step = (experiment: string, variant: string, id: string) => c.experiments.find((e) => e.experiment === experiment)!.variants.find((v) => v.variant === variant)!.steps.find((s) => s.step === id)!.cells[1]!;
    assert.equal(formatRatio(step('init', 'default', 'call').ratio), '1.07×');
    assert.equal(step('init', 'default', 'call').difference?.verdict, 'within-spread');
    assert.equal(step('split', 'whole/splitShare=1', 'call').difference?.verdict, 'lower');
    assert.equal(step('destroy', 'default', 'destroy').difference?.verdict, 'within-spread');
    const text = formatComparison([load(H9), load(H3)]);
    assert.match(text, /init default · call: ncclCommInitRankConfig\s+31\.94\s+34\.26\s+1\.07×\n/);
    assert.match(text, /split whole\/splitShare=1 · call: ncclCommSplit\s+46\.64\s+29\.71\s+0\.64× beyond spread\n/);
  });

  test('the rank test: exact p-values as scipy gives them, the normal approximation for large samples, the smallest p by sizes', () => {
    assert.equal(mannWhitney([1, 2, 3, 4, 5], [3.5, 6, 7, 8, 9]).p.toFixed(6), '0.031746');
    assert.equal(mannWhitney([1, 3, 5, 7, 9], [2, 4, 6, 8, 10]).p.toFixed(6), '0.690476');
    const large = mannWhitney(Array.from({ length: 60 }, (_, i) => i), Array.from({ length: 60 }, (_, i) => i + 20.5));
    assert.equal(large.method, 'normal');
    assert.ok(Math.abs(large.p / 8.7476e-8 - 1) < 0.01, String(large.p));
    assert.equal(mannWhitney([1, 1, 2], [1, 2, 2]).method, 'normal', 'ties: normal approximation with tie correction');
    assert.deepEqual([smallestRankTestP(1, 1), smallestRankTestP(3, 3)], [1, 0.1]);
    // The sizes docs/METHOD.md gives for "too few samples" at 0.05.
    assert.deepEqual([[1, 39], [1, 40], [2, 7], [2, 8], [3, 4], [3, 5]].map(([m, n]) => smallestRankTestP(m!, n!) < 0.05), [false, true, false, true, false, true]);
    assert.ok(Math.abs(smallestRankTestP(4, 4) - 2 / 70) < 1e-12);
    assert.throws(() => mannWhitney([], [1]), RangeError);
    assert.equal(judgeDifference({ samples: [], n: 0 }, { samples: [], n: 0 }, 2).verdict, 'no-spread');
  });

  test('docs/METHOD.md states the same rule', () => {
    const method = readFileSync(join(__dirname, '..', '..', 'docs', 'METHOD.md'), 'utf8').replace(/\s+/g, ' ');
    assert.ok(method.includes(differenceRuleText()), 'METHOD.md must quote differenceRuleText()');
  });
});
