/** The Plan section's chart model: a bar per strategy and shape switched to where the run measured it, reference lines, log bounds. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planReshape } from '../../readings/plan/planner';
import { planChartModel } from '../../webview/planChartData';
import { asPlanRuns, fourRankRun } from './planRuns';

test('a bar per shape switched to where the run measured it, the others listed as not measured, step and migration pause as lines, log bounds around all', () => {
  const m = planChartModel(planReshape(asPlanRuns(fourRankRun()), { stepMs: 20 }));
  // Like with like (issue #28): the pool's switch to TP2 beside the rebuild of TP2; its switch to TP4 was not timed.
  assert.deepEqual(m.bars.find((b) => b.label === 'prewarmed pool → TP2'), { label: 'prewarmed pool → TP2', ms: 2 });
  assert.deepEqual(m.bars.find((b) => b.label === 'on-demand rebuild (lazy connect) → TP2'), { label: 'on-demand rebuild (lazy connect) → TP2', ms: 45 });
  assert.ok(m.missing.includes('prewarmed pool → TP4'));
  assert.ok(m.missing.includes('grow to the maximum topology → TP4'));
  assert.ok(!m.bars.some((b) => b.label.startsWith('grow to the maximum topology')));
  assert.deepEqual(m.lines.map((l) => [l.ms, l.style]), [[20, 'dashed'], [69, 'dotted']]);
  assert.equal(m.min, 1); // the 2 ms pool switch
  assert.equal(m.max, 1000); // the 345 ms destroy-now path to TP2
  const noStep = planChartModel(planReshape(asPlanRuns(fourRankRun()), {}));
  assert.deepEqual(noStep.lines.map((l) => l.style), ['dotted']);
});

test('the migration pause beside a plan: a note only for a simulated run; the pause had no communicator and no GPU setting, so 1 rank and several nodes are not reasons (issue #28)', () => {
  assert.equal(planChartModel(planReshape(asPlanRuns(fourRankRun()), {})).pauseNote, undefined);
  assert.equal(planChartModel(planReshape(asPlanRuns(fourRankRun({ ranks: 1 })), {})).pauseNote, undefined);
  const run = fourRankRun();
  run.nodes = [0, 1].map((index) => ({ index, hostname: `gpu${index}`, address: `10.0.0.${index + 1}`, ranks: [2 * index, 2 * index + 1], gpus: ['NVIDIA H200', 'NVIDIA H200'] }));
  assert.equal(planChartModel(planReshape(asPlanRuns(run), {})).pauseNote, undefined);
  // Simulated: the pause is not drawn at all (issue #28 review), and the note says so.
  const sim = planChartModel(planReshape(asPlanRuns(fourRankRun({ simulated: true })), {}));
  assert.ok(!sim.lines.some((l) => /migration pause/.test(l.label)), 'no study line on a simulated plan');
  assert.match(
    sim.pauseNote!,
    /^The study's migration pause \(69 ms, an earlier experiment, a request handed between two single-GPU engines, GPU not stated\) is not drawn: this run's figures are simulated, not measurements/,
  );
});
