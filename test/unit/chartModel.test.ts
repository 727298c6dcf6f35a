// The pure chart models on the real H200 runs of docs/results: what stacks (only the parts of a
// declared sum), what stands side by side (alternatives, steps of different ranks at the same
// time), what the legend names, how tall the chart is, and the theme's colours.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RunExperiment, RunFile } from '../../protocol/runFile';
import { axisMax, barEnds, barsPerGroup, CHART_LAYOUT, chartHeight, chartModel, legendLabels, legendRows, memoryChartModel, NEUTRAL_SLOT, type ChartModel } from '../../webview/chartData';
import { chartColors, formatColor, mixColor, parseColor, PALETTE } from '../../webview/chartTheme';
import { runErrors, wallText } from '../../webview/runFacts';
import { formatDuration } from '../../webview/format';
import { variantViews, type VariantView } from '../../webview/stats';

const RESULTS = join(__dirname, '..', '..', 'docs', 'results');
const load = (file: string): RunFile => JSON.parse(readFileSync(join(RESULTS, file), 'utf8')) as RunFile;
const CATALOGUE = load('h200x2-nccl2.28.9-wheel.catalogue.json');
const CASES = load('h200x2-nccl2.28.9-wheel.cases.json');
const C4C6 = load('h200x2-nccl2.28.9-wheel.c4c6.cases.json');
const C10D = load('h200x2-torch2.11-nccl2.28.9-c10d.json');

function views(run: RunFile, experiment: string): VariantView[] {
  const exp = run.experiments.find((e) => e.experiment === experiment);
  assert.ok(exp, `${experiment} in the run`);
  return variantViews(exp as unknown as RunExperiment);
}

/** For category `ci`: stack → the step ids drawn in it (from the series keys "<stack>|<step>|<label>"). */
function stacksAt(model: ChartModel, ci: number): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const s of model.series) {
    if (s.data[ci] === null) continue;
    const step = s.key.split('|')[1]!;
    out.set(s.stack, [...(out.get(s.stack) ?? []), step]);
  }
  return out;
}

/** Every stack of every category holds either one step or exactly the parts of one derived step of that variant. */
function assertOnlySumsStack(model: ChartModel, variants: VariantView[], categoryVariant: (ci: number) => VariantView): void {
  model.labels.forEach((_, ci) => {
    const v = categoryVariant(ci);
    for (const [stack, steps] of stacksAt(model, ci)) {
      if (steps.length === 1) continue;
      const sum = v.steps.find((s) => s.sumOf && s.sumOf.length === steps.length && s.sumOf.every((id, i) => steps[i] === id));
      assert.ok(sum, `${v.variant}: ${steps.join(' + ')} stacked in ${stack}, but no step of the run is their sum`);
    }
  });
  assert.ok(variants.length > 0);
}

test('pool: alternatives stand side by side (rebuild vs switch vs steady); only the parts of a declared sum stack', () => {
  const v = views(CATALOGUE, 'pool');
  const m = chartModel(v);
  assertOnlySumsStack(m, v, () => v[0]!);
  // One variant: one row per bar.
  const stackOf = (step: string) => m.series.find((s) => s.key.split('|')[1] === step)!.stack;
  const alternatives = ['switch', 'rebuild', 'steady/child', 'steady/fresh', 'interleaved', 'call/tp2', 'first/tp2'].map((id) => (id === 'switch' || id === 'rebuild' ? `sum:${id}` : stackOf(id)));
  assert.equal(new Set(alternatives).size, alternatives.length, `alternatives share a bar: ${alternatives.join(', ')}`);
  assert.equal(stackOf('switchCollective'), 'sum:switch');
  assert.equal(stackOf('rebuild/call'), 'sum:rebuild');
  // The two bars the pool is about, as the run measured them.
  const step = (id: string) => v[0]!.steps.find((s) => s.step === id)!;
  const ends = barEnds(m);
  const rebuild = ends.find((e) => e.stack === 'sum:rebuild')!;
  const sw = ends.find((e) => e.stack === 'sum:switch')!;
  assert.ok(Math.abs(rebuild.total - (step('rebuild/call').stats.median + step('rebuild/first').stats.median)) < 1e-9);
  assert.ok(Math.abs(sw.total - ['switchCollective', 'switchCapture', 'switchInstantiate'].reduce((a, id) => a + step(id).stats.median, 0)) < 1e-9);
  assert.notEqual(rebuild.variantIndex, sw.variantIndex, 'rebuild and switch are rows of their own');
  assert.equal(m.labels[rebuild.variantIndex], step('rebuild').label);
  assert.equal(m.labels[sw.variantIndex], step('switch').label);
  // Nothing is drawn twice: the derived steps are not segments.
  assert.ok(!m.series.some((s) => ['switch', 'rebuild'].includes(s.key.split('|')[1]!)));
});

test('shrink-abort (C5): the survivors\' release and the excluded rank\'s, at the same time on different ranks, are never summed', () => {
  const v = views(CASES, 'shrink-abort');
  const m = chartModel(v);
  assertOnlySumsStack(m, v, (ci) => v[ci]!);
  let both = 0;
  v.forEach((variant, ci) => {
    const stacks = stacksAt(m, ci);
    const holding = (step: string) => [...stacks].filter(([, steps]) => steps.includes(step)).map(([id]) => id);
    assert.equal(holding('release').length, 1, variant.variant);
    if (!variant.steps.some((s) => s.step === 'excludedRelease')) return;
    both++;
    assert.notEqual(holding('release')[0], holding('excludedRelease')[0], `${variant.variant}: release and excludedRelease stacked`);
    assert.deepEqual(stacks.get(holding('release')[0]!), ['release']);
    assert.deepEqual(stacks.get(holding('excludedRelease')[0]!), ['excludedRelease']);
  });
  assert.ok(both >= 6, 'the run has variants where both release');
});

test('legend: every series is named by its own step\'s label in every variant it is drawn for, not by the first variant\'s', () => {
  for (const [run, experiment] of [[CASES, 'shrink-abort'], [C10D, 'c10d'], [CATALOGUE, 'registration']] as const) {
    const v = views(run, experiment);
    const m = chartModel(v);
    for (const s of m.series) {
      const step = s.key.split('|')[1]!;
      s.data.forEach((x, vi) => {
        if (x === null) return;
        assert.equal(s.label, v[vi]!.steps.find((st) => st.step === step)!.label, `${experiment} ${v[vi]!.variant} ${step}`);
      });
    }
    // Series that share a label share a colour, and the legend has one entry per label.
    const byLabel = new Map<string, Set<number | undefined>>();
    for (const s of m.series) byLabel.set(s.label, new Set([...(byLabel.get(s.label) ?? []), s.color]));
    for (const [label, colors] of byLabel) assert.equal(colors.size, 1, label);
    assert.equal(legendLabels(m).length, byLabel.size);
  }
  // C5: the survivors destroy the parent in some variants and abort it in others: two entries.
  const labels = legendLabels(chartModel(views(CASES, 'shrink-abort')));
  assert.ok(labels.includes('ncclCommDestroy of the parent (survivors)') && labels.includes('ncclCommAbort of the parent (survivors)'), labels.join(' | '));
});

test('one-variant chart: a bar of one step is named on the axis, in the neutral colour, not in the legend', () => {
  const m = chartModel(views(CATALOGUE, 'pool'));
  for (const s of m.series) {
    if (s.stack.startsWith('step:')) {
      assert.equal(s.inLegend, false, s.label);
      assert.equal(s.color, NEUTRAL_SLOT);
    } else {
      assert.notEqual(s.inLegend, false, s.label);
      assert.ok((s.color ?? -1) >= 0);
    }
  }
  assert.deepEqual(legendLabels(m), m.series.filter((s) => s.stack.startsWith('sum:')).map((s) => s.label));
});

test('height grows with the bars per group and with the legend rows; a narrower chart wraps its legend into more rows', () => {
  const pool = chartModel(views(CATALOGUE, 'pool'));
  const c5 = chartModel(views(CASES, 'shrink-abort'));
  for (const [name, m] of [['pool', pool], ['shrink-abort', c5]] as const) {
    const bars = barsPerGroup(m) * m.labels.length;
    for (const width of [400, 700, 1200]) {
      const rows = legendRows(m, width);
      assert.ok(
        chartHeight(m, width) >= bars * CHART_LAYOUT.barPx + rows * CHART_LAYOUT.legendRowPx + CHART_LAYOUT.axisPx,
        `${name} at ${width} px: ${chartHeight(m, width)} px for ${bars} bars and ${rows} legend rows`,
      );
    }
    assert.ok(legendRows(m, 400) > legendRows(m, 1200), `${name}: the legend wraps when narrower`);
    assert.ok(chartHeight(m, 400) > chartHeight(m, 1200), `${name}: taller when narrower`);
  }
  assert.equal(barsPerGroup(c5), 3, 'C5: shrink, release, excluded release');
  assert.ok(chartHeight(pool) > 140 * 2, `the pool chart's 9 rows (${chartHeight(pool)} px)`);
  // Legend rows: items wrap as chart.js lays them out.
  const one: ChartModel = { labels: ['v'], series: ['a'.repeat(40), 'b'.repeat(40), 'c'.repeat(40)].map((label, i) => ({ key: label, label, kind: 'other', stack: `s${i}`, data: [1], color: i })), whiskers: [] };
  const item = CHART_LAYOUT.legendItemPx + 40 * CHART_LAYOUT.charPx;
  assert.deepEqual([legendRows(one, 3 * item), legendRows(one, 3 * item - 1), legendRows(one, item)], [1, 2, 3]);
  assert.equal(legendRows({ labels: [], series: [], whiskers: [] }, 900), 0);
});

test('axisMax leaves room past the longest bar and the furthest whisker', () => {
  const m = chartModel(views(C4C6, 'split-subset'));
  const p90 = Math.max(...m.whiskers.map((w) => w.to));
  assert.ok(p90 > Math.max(...barEnds(m).map((b) => b.total)), 'this run has a p90 past its bar');
  assert.ok(axisMax(m) > p90);
  assert.equal(axisMax({ labels: [], series: [], whiskers: [] }), 0);
});

test('memory chart: series share colours by label like the step chart', () => {
  const m = memoryChartModel(views(CASES, 'split-share'));
  assert.deepEqual(m.series.map((s) => s.color), [0, 1, 2]);
});

const colorCases: [string, string | undefined][] = [
  ['#3794ff', 'rgba(55, 148, 255, 1)'],
  ['#fff', 'rgba(255, 255, 255, 1)'],
  ['#00000080', 'rgba(0, 0, 0, 0.502)'],
  ['rgba(10, 20, 30, 0.5)', 'rgba(10, 20, 30, 0.5)'],
  ['rgb(1 2 3 / 50%)', 'rgba(1, 2, 3, 0.5)'],
  ['color-mix(in srgb, red, blue)', undefined],
  ['', undefined],
];
for (const [text, expected] of colorCases) {
  test(`parseColor(${JSON.stringify(text)})`, () => {
    const c = parseColor(text);
    assert.equal(c && formatColor(c), expected);
  });
}

test('chart colours follow the theme\'s variables: dark text on light, light text on dark; palette slots past five are hatched, then dotted', () => {
  const light = chartColors((v) => ({ '--vscode-foreground': '#222222', '--vscode-editor-background': '#ffffff' })[v] ?? '');
  const dark = chartColors((v) => ({ '--vscode-foreground': '#cccccc', '--vscode-editor-background': '#1e1e1e', '--vscode-charts-blue': '#3794ff' })[v] ?? '');
  assert.equal(light.text, 'rgba(34, 34, 34, 1)');
  assert.equal(dark.text, 'rgba(204, 204, 204, 1)');
  assert.equal(light.slot(0), formatColor(parseColor(PALETTE[0]![1])!), 'the light default when the theme sets none');
  assert.equal(dark.slot(0), 'rgba(55, 148, 255, 1)', 'the theme\'s own chart colour');
  assert.deepEqual([0, 4, 5, 10].map((i) => dark.slotStyle(i).fill), ['solid', 'solid', 'hatched', 'dotted']);
  assert.equal(dark.slot(PALETTE.length), dark.slot(0));
  assert.equal(dark.slot(NEUTRAL_SLOT), formatColor(mixColor(parseColor('#cccccc')!, parseColor('#1e1e1e')!, 0.45)));
  assert.notEqual(light.slot(NEUTRAL_SLOT), dark.slot(NEUTRAL_SLOT));
});

test('wall line: the c10d run (0 ms in commcost\'s own calls) shows its wall time only, never "timed steps 0 ms"', () => {
  assert.equal(wallText(C10D), formatDuration(C10D.wallMs));
  const text = wallText(CATALOGUE);
  assert.match(text, / (ms|s) of it inside the NCCL and CUDA calls commcost made\)$/);
  // A wall of minutes reads in seconds, never "141384.0 ms".
  assert.equal(wallText({ wallMs: 141_384, libraryMs: 136_383.2, experiments: [] } as unknown as RunFile), '141.4 s (136.4 s of it inside the NCCL and CUDA calls commcost made)');
  assert.equal(wallText({ wallMs: 1_864, libraryMs: 412.5, experiments: [] } as unknown as RunFile), '1.86 s (412.5 ms of it inside the NCCL and CUDA calls commcost made)');
  assert.equal(formatDuration(999.9), '999.9 ms');
  assert.equal(formatDuration(999.96), '1.00 s');
  assert.match(wallText({ ...CATALOGUE, experiments: [...CATALOGUE.experiments, ...C10D.experiments] }), /the c10d experiment's calls, made by torch, are not counted/);
  assert.equal(wallText({ experiments: [] } as unknown as RunFile), '');
});

test('expected hangs (C4, C6) belong to their case\'s section; they are not errors', () => {
  const e = runErrors(C4C6);
  assert.equal(C4C6.status, 'complete');
  assert.deepEqual(e.real, []);
  assert.deepEqual([...e.hangsByExperiment.keys()].sort(), ['init-abort', 'split-subset']);
  assert.deepEqual(e.orphanHangs, []);
  // A hang of an experiment with no section stays listed, apart; a real error stays an error.
  const hang = C4C6.errors[0]!;
  const other = runErrors({ experiments: [], errors: [hang, { ...hang, expected: undefined }] } as unknown as RunFile);
  assert.deepEqual([other.orphanHangs.length, other.real.length, other.hangsByExperiment.size], [1, 1, 0]);
});
