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

test('the migration pause beside a plan the study is not compared with (1 rank, several nodes, simulated): a note says for reference, not compared, and why; none at 4 measured ranks on one host', () => {
  assert.equal(planChartModel(planReshape(asPlanRuns(fourRankRun()), {})).pauseNote, undefined);
  const one = planChartModel(planReshape(asPlanRuns(fourRankRun({ ranks: 1 })), {}));
  assert.match(one.pauseNote!, /^The study's migration pause \(69 ms, 4× A40 PCIe, NCCL 2\.32\.3\) is shown for reference, not compared with this run: a communicator of 1 rank has no peer, the study's had 4 ranks \(study: migration pause, the reference line of the study's Figure 2, in /);
  const run = fourRankRun();
  run.nodes = [0, 1].map((index) => ({ index, hostname: `gpu${index}`, address: `10.0.0.${index + 1}`, ranks: [2 * index, 2 * index + 1], gpus: ['NVIDIA H200', 'NVIDIA H200'] }));
  assert.match(planChartModel(planReshape(asPlanRuns(run), {})).pauseNote!, /not compared with this run: this run spans 2 hosts, the study's migration pause was measured on one/);
  assert.match(planChartModel(planReshape(asPlanRuns(fourRankRun({ simulated: true })), {})).pauseNote!, /simulated figures are not measurements/);
});
