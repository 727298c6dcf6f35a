/** The Plan section's chart model: bars only for strategies with a total, reference lines, log bounds. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planReshape } from '../../client/plan/planner';
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
