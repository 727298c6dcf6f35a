/** The Plan section's chart model: bars only for strategies with a total, reference lines, log bounds. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planReshape } from '../../readings/plan/planner';
import { planChartModel } from '../../webview/planChartData';
import { asPlanRuns, fourRankRun } from './planRuns';

test('bars for strategies with a total, missing ones listed, step and migration pause as lines, log bounds around all', () => {
  const m = planChartModel(planReshape(asPlanRuns(fourRankRun()), { stepMs: 20 }));
  assert.deepEqual(m.bars.find((b) => b.label === 'prewarmed pool'), { label: 'prewarmed pool', ms: 2 });
  assert.ok(m.missing.includes('grow to the maximum topology'));
  assert.ok(!m.bars.some((b) => b.label === 'grow to the maximum topology'));
  assert.deepEqual(m.lines.map((l) => [l.ms, l.style]), [[20, 'dashed'], [69, 'dotted']]);
  assert.equal(m.min, 1); // the 2 ms pool switch
  assert.equal(m.max, 1000); // the 400 ms destroy-now path
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
