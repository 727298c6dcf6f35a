// The study's Figure 2 and Figure 3 drawn from a run's own steps: stacked medians with their
// first collective, a p90 whisker per segment, the migration pause and the in-pool swap as lines,
// the 500 ms floor with its source; a step the run lacks is absent and said, never invented;
// several runs get one colour per host and NCCL version.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { STUDY_FIGURES } from '../../readings/studyFigures';
import { figure2Model, figure3Model, studyLegend, type StudyRun } from '../../webview/studyChartsData';
import { planReshape } from '../../readings/plan/planner';
import { PlanInputError } from '../../readings/plan/units';
import { planChartModel } from '../../webview/planChartData';
import { fourRankRun } from './planRuns';
import { experiment, load, variant } from './verdictRuns';

const four = (): StudyRun => ({
  label: 'A',
  file: 'four.json',
  run: fourRankRun({}, []),
});
const withAbort = (): StudyRun => {
  const r = four();
  r.run.experiments.push(experiment('abort', [variant('default', { abort: 500, reinit: 40, first: 60, total: 100 })]));
  return r;
};

test('Figure 2: each category stacks its call and first collective (medians), a p90 whisker per segment; a missing step is absent with why', () => {
  const m = figure2Model([withAbort()]);
  // grow has no bar in any run: its row is not drawn, one line says so (the absent list says why).
  assert.deepEqual(m.categories, ['init', 'split', 'shrink', 'abort then re-init']);
  assert.equal(m.notDrawn, 'No bar for grow: the run has no figure for it (why below).');
  const seg = (i: number) => m.bars[i]!.map((b) => b.segments.map((s) => [s.source, s.ms]));
  assert.deepEqual(seg(0), [[['init/default/call', 40], ['init/default/first', 60]]]);
  assert.equal(m.bars[0]![0]!.totalMs, 100);
  // At 4 ranks the halves have 2 ranks each: the halves split is drawn.
  assert.deepEqual(seg(1), [[['split/halves/splitShare=0/call', 25], ['split/halves/splitShare=0/first', 15]]]);
  assert.deepEqual(seg(2), [[['shrink/default/call', 30], ['shrink/default/first', 20]]]);
  // grow was skipped by the run: not drawn, and said so with the run's reason.
  // Issue #28: the abort-then-re-init path is the re-init and its first collective, as the
  // study's Figure 2 (43–195 ms); the abort itself is Figure 3's, named under the chart.
  assert.deepEqual(seg(3), [[['abort/default/reinit', 40], ['abort/default/first', 60]]]);
  assert.equal(m.bars[3]![0]!.totalMs, 100);
  assert.match(m.drawn.join('\n'), /abort then re-init: the re-init after ncclCommAbort and its first collective; the abort itself \(500 ms\) is Figure 3's/);
  assert.equal(m.bars[0]![0]!.segments[1]!.p90, 60 * 1.02);
  assert.deepEqual(m.absent, ['grow: grow was skipped in four.json: needs NCCL ≥ 2.29.2, host has 2.28.9']);
  // Lines: the study's 69 ms pause (dashed, with its source) and this run's own switch inside its
  // pool (dotted, pool/tp4+2+1/switch = 2 ms), named as the run's with the child it goes to.
  assert.deepEqual(m.lines.map((l) => [l.ms, l.style]), [[STUDY_FIGURES.migrationPause.min, 'dashed'], [2, 'dotted']]);
  assert.equal(m.lines[1]!.label, "this run's switch to TP2 inside the pool 2 ms");
  assert.equal(STUDY_FIGURES.migrationPause.min, 69);
  assert.match(m.lines[0]!.source, /migration pause/);
  assert.match(m.lines[1]!.source, /^pool\/tp4\+2\+1\/switch \(four\.json\)$/);
  // Linear axis (the bars are stacked, issue #28 round 3): 0 to a round value past every end (p90 60.6 ms past a 100 ms bar: 100 … 101.2).
  assert.equal(m.min, 0);
  assert.ok(m.max >= Math.max(...m.bars.flat().map((b) => b.totalMs)), `max ${m.max}`);
});

test('Figure 2 without an abort or a pool says both are absent', () => {
  const m = figure2Model([{ label: 'A', file: 'x.json', run: fourRankRun({}, ['pool']) }]);
  assert.ok(!m.categories.includes('abort then re-init'), 'no empty row');
  assert.match(m.absent.join('\n'), /abort then re-init: the runs have no abort experiment, which measures it/);
  assert.match(m.absent.join('\n'), /the line of the switch inside the pool: the runs have no pool experiment/);
  assert.deepEqual(m.lines.map((l) => l.style), ['dashed']);
});

test('Figure 3: abort against finalize + destroy per configuration, with the 500 ms floor from the study figures', () => {
  const m = figure3Model([withAbort()]);
  assert.equal(m.groups.length, 1);
  assert.equal(m.groups[0]!.abort!.ms, 500);
  assert.equal(m.groups[0]!.finalizeDestroy!.ms, 300);
  assert.equal(m.floor?.ms, 500);
  assert.equal(STUDY_FIGURES.abortFloor.min, 500);
  assert.match(m.floor!.source, /the floor abort and revoke sit on: the study's summary of abort 485–534 ms and revoke 499–502 ms, the 500 ms floor of its Figure 3 \(docs\/METHOD\.md "The study's figures"\)/);
  assert.equal(m.groups[0]!.config, '4× H200 · NCCL 2.28.9');
  const none = figure3Model([four()]);
  assert.match(none.absent.join('\n'), /ncclCommAbort: the runs have no abort experiment/);
  assert.equal(none.groups[0]!.abort, undefined);
});

test('the committed 2×H200 runs: one colour per host and NCCL version, every figure from the runs', () => {
  const a = { label: 'A', file: 'h200x2-nccl2.30.7-source.json', run: load('h200x2-2026-12-01/h200x2-nccl2.30.7-source.json') };
  const b = { label: 'B', file: 'h200x2-nccl2.28.9-wheel.json', run: load('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json') };
  const again = { ...a, label: 'C' };
  const legend = studyLegend([a, b, again]);
  assert.deepEqual(legend.colorOf, [0, 1, 0]);
  assert.equal(legend.keys.length, 2);
  assert.match(legend.keys[0]!, /NCCL 2\.30\.7/);
  const m = figure2Model([a, b]);
  const init = a.run.experiments.find((e) => e.experiment === 'init')!.variants[0]!.steps;
  assert.equal(m.bars[0]![0]!.segments[0]!.ms, init.find((s) => s.step === 'call')!.stats.median);
  assert.equal(m.bars[0]![0]!.segments[1]!.p90, init.find((s) => s.step === 'first')!.stats.p90);
  // At 2 ranks the halves are one-rank children: the split drawn is the whole split (a child of 2
  // ranks, with its lazy connect); the shrink's one-rank child is said to have nothing to connect.
  assert.equal(m.bars[1]![0]!.segments[0]!.source, 'split/whole/splitShare=0/call');
  assert.equal(m.bars[1]![0]!.child, 2);
  assert.match(m.drawn.join('\n'), /shrink \(A\): shrink\/default, a child of 1 rank \(nothing to connect/);
  const f3 = figure3Model([a, b]);
  const abort = a.run.experiments.find((e) => e.experiment === 'abort')!.variants[0]!.steps.find((s) => s.step === 'abort')!;
  assert.equal(f3.groups[0]!.abort!.ms, abort.stats.median);
  assert.equal(f3.groups.length, 2);
});

test('a run over several nodes: its legend and configuration count all its nodes\' GPUs and hosts, not the one host its stamp is of', () => {
  const one = load('h200x2-2026-12-01/h200x2-nccl2.30.7-source.json');
  const run = structuredClone(one);
  run.ranks = 4;
  run.nodes = [0, 1].map((index) => ({ index, hostname: `gpu${index}`, address: `10.0.0.${index + 1}`, ranks: [2 * index, 2 * index + 1], gpus: ['NVIDIA H200', 'NVIDIA H200'] }));
  const nodes = { label: 'N', file: 'two-nodes.json', run };
  const single = { label: 'S', file: 'h200x2-nccl2.30.7-source.json', run: one };
  const legend = studyLegend([single, nodes]);
  assert.deepEqual(legend.keys, ['2× H200 · NCCL 2.30.7', '4× H200 over 2 hosts · NCCL 2.30.7']);
  assert.deepEqual(legend.colorOf, [0, 1]);
  const m = figure3Model([single, nodes]);
  assert.deepEqual(m.groups.map((g) => g.config), ['2× H200 · NCCL 2.30.7', '4× H200 over 2 hosts · NCCL 2.30.7']);
});

test('a simulated run never shares a measured run\'s colour or label in the study charts (same host and NCCL version)', () => {
  const measured = { label: 'A', file: 'a.json', run: load('h200x2-2026-12-01/h200x2-nccl2.30.7-source.json') };
  const sim = { label: 'B', file: 'b.json', run: { ...structuredClone(measured.run), simulated: true } };
  const legend = studyLegend([measured, sim]);
  assert.deepEqual(legend.keys, ['2× H200 · NCCL 2.30.7', 'SIMULATED · 2 ranks · NCCL 2.30.7']);
  assert.deepEqual(legend.colorOf, [0, 1]);
  assert.deepEqual(figure3Model([measured, sim]).groups.map((g) => g.config), ['2× H200 · NCCL 2.30.7', 'SIMULATED · 2 ranks · NCCL 2.30.7']);
});

test('the study\'s lines beside runs the verdict does not compare with them (1 rank, several nodes, simulated): a note says shown for reference, not compared, and why; none beside a measured run of one host and several ranks', () => {
  const two = { label: 'S', file: 'h200x2-nccl2.30.7-source.json', run: load('h200x2-2026-12-01/h200x2-nccl2.30.7-source.json') };
  // Several ranks on one host, measured: compared by the verdict, so no note.
  assert.deepEqual(figure3Model([two]).notCompared, []);
  // The pause is compared; this run's switch goes to a one-rank TP1 child, so the one note says
  // the study's swap is not drawn beside it (issue #28, like with like).
  const pauseNotes = (m: { notCompared: string[] }) => m.notCompared.filter((n) => !n.startsWith("The study's swap inside the pool"));
  assert.deepEqual(pauseNotes(figure2Model([two])), []);
  assert.equal(figure2Model([two]).notCompared.length, 1);
  assert.match(figure2Model([two]).notCompared[0]!, /^The study's swap inside the pool \([^)]*\) is not drawn: this run's switch is to a one-rank child/);
  // 1 rank: no peer, the study's floor had 2–8 GPUs. Issue #28: its setting is every configuration
  // of the study's Figure 3, not "4× A40 PCIe, NCCL 2.32.3, 4 ranks".
  const one = { label: 'O', file: 'h200x1.json', run: load('h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json') };
  assert.deepEqual(figure3Model([one]).notCompared, [
    "The study's floor (~0.5 s, NCCL 2.28.9 and 2.32.3, A40 and V100, one node and across nodes, 2–8 GPUs) is shown for reference, not compared with this run: a communicator of 1 rank has no peer, the study's had 2–8 GPUs (study: the study's summary of abort 485–534 ms and revoke 499–502 ms; the 500 ms floor of its Figure 3, in docs/METHOD.md \"The study's figures\").",
  ]);
  // The migration pause had no communicator and no GPU setting (a request handed between two
  // single-GPU engines): a wall-time reference at any rank count, never "the study's had 4 ranks".
  assert.deepEqual(figure2Model([one]).notCompared, []);
  // Several nodes: the study's floor was measured on one node and across nodes, so it is compared.
  const run = structuredClone(two.run);
  run.ranks = 4;
  run.nodes = [0, 1].map((index) => ({ index, hostname: `gpu${index}`, address: `10.0.0.${index + 1}`, ranks: [2 * index, 2 * index + 1], gpus: ['NVIDIA H200', 'NVIDIA H200'] }));
  const nodes = { label: 'N', file: 'two-nodes.json', run };
  assert.deepEqual(figure3Model([two, nodes]).notCompared, []);
  assert.deepEqual(pauseNotes(figure2Model([nodes])), []);
  // Simulated alone: the study's line is not drawn at all (issue #28 review), said in one note;
  // beside a measured run it is drawn, and the simulated run's note says it is not compared.
  const sim = { label: 'B', file: 'b.json', run: { ...structuredClone(two.run), simulated: true } };
  assert.equal(figure3Model([sim]).floor, undefined);
  assert.match(figure3Model([sim]).notCompared[0]!, /^The study's floor \(~0\.5 s, [^)]*\) is not drawn: this run's figures are simulated, not measurements/);
  assert.ok(!figure2Model([sim]).lines.some((l) => /migration pause/.test(l.label)));
  assert.match(figure2Model([sim]).notCompared[0]!, /^The study's migration pause \(69 ms, [^)]*\) is not drawn: this run's figures are simulated, not measurements/);
  const mixed = figure3Model([two, sim]);
  assert.equal(mixed.floor?.ms, 500);
  assert.match(mixed.notCompared[0]!, /not compared with run B \([^)]*\): simulated figures are not measurements/);
  // A run with no bar in the chart gets no note (nothing is drawn beside the line for it).
  assert.deepEqual(figure3Model([{ ...one, run: { ...one.run, ranks: 1, experiments: [] } }]).notCompared, []);
});

test('Figure 2 at an odd world size: the halves split is drawn as its larger child, ceil(n/2) ranks (split.ts colors rank < n/2)', () => {
  const r = four();
  r.run.ranks = 5;
  const m = figure2Model([r]);
  assert.equal(m.bars[1]![0]!.segments[0]!.source, 'split/halves/splitShare=0/call');
  assert.equal(m.bars[1]![0]!.child, 3);
  assert.match(m.drawn.join('\n'), /split: split\/halves\/splitShare=0, a child of 3 ranks/);
  // At 3 ranks the larger half has 2 ranks: the halves are drawn, not the whole split.
  r.run.ranks = 3;
  assert.equal(figure2Model([r]).bars[1]![0]!.child, 2);
});

test('a section with nothing to show says so in one line: a c10d-only run and a failed no-GPU run draw no empty chart (Figure 2, Figure 3, the plan)', () => {
  const c10dOnly = load('h200x2-torch2.11-nccl2.28.9-c10d.json');
  const failed = { ...fourRankRun({ ranks: 2 }, []), status: 'failed' as const, ranks: 0, experiments: [] };
  for (const run of [c10dOnly, failed]) {
    const r: StudyRun = { label: 'A', file: 'x.json', run };
    // Issue #28: a c10d-only run's line names its c10d figures as torch's calls (chartsReadings28c.test.ts).
    assert.match(figure2Model([r]).empty ?? '', /^no figures for Figure 2: the run measured none of init, split, shrink, grow, abort($|; its c10d figures \(init_process_group\(device_id\) to its first all_reduce )/);
    assert.match(figure3Model([r]).empty ?? '', /^no figures for Figure 3: the run measured neither ncclCommAbort \(abort\) nor ncclCommFinalize \+ ncclCommDestroy \(destroy\)($|; its c10d figures \(destroy_process_group )/);
  }
  assert.equal(figure3Model([{ label: 'A', file: 'x.json', run: failed }]).empty, 'no figures for Figure 3: the run measured neither ncclCommAbort (abort) nor ncclCommFinalize + ncclCommDestroy (destroy)');
  // The plan: the c10d-only run's chart model says so in one line; the failed run is refused with
  // the one line the panel shows (planView.ts), never a table of "missing … TP0".
  const plan = planChartModel(planReshape([{ file: 'x.json', run: c10dOnly }], {}));
  assert.match(plan.empty ?? '', /^no figures for a reshape plan: /);
  assert.doesNotMatch(plan.empty ?? '', /TP0/);
  assert.throws(() => planReshape([{ file: 'x.json', run: failed }], {}), (e: Error) => e instanceof PlanInputError && e.message === 'x.json: the run ended before any rank started: no figures for a reshape plan');
  // A run with figures draws its charts: no empty line.
  assert.equal(figure2Model([withAbort()]).empty, undefined);
  assert.equal(figure3Model([withAbort()]).empty, undefined);
  assert.equal(planChartModel(planReshape([{ file: 'x.json', run: withAbort().run }], {})).empty, undefined);
});

test('Figure 2 at one rank: no empty split, shrink and grow rows; one line names what is missing (issue #28 review)', () => {
  const one = { label: 'O', file: 'h200x1.json', run: load('h200x1-2026-12-01/h200x1-nccl2.30.7-source.json') };
  const m = figure2Model([one]);
  assert.deepEqual(m.categories, ['init', 'abort then re-init']);
  assert.ok(m.bars.every((b) => b.length > 0), 'every row drawn has a bar');
  // Issue #28 round 3: the run's connect-mode split (color = rank) is named as a one-rank child, not called absent.
  assert.match(m.notDrawn ?? '', /^No bar for split, shrink and grow: the run has no figure for shrink and grow \(why below\); the run's split, ncclCommSplit \(color = rank\) in the connect-mode experiment .*makes a one-rank child/);
  assert.match(m.absent.join('\n'), /shrink: shrink was skipped in h200x1\.json: needs 2 GPUs, host has 1/);
});
