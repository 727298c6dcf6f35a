/**
 * The init experiment's `scalable` variant (ncclCommInitRankScalable with several unique ids, issue
 * #29) through the agent on the simulated NCCL at 2 and 4 ranks: the coordinator hands each rank
 * the ids made by ranks 0 and ranks/2, the variant is timed beside the plain init, and on a
 * simulated NCCL older than 2.23.4 it is skipped with the version it needs. Figures are the
 * simulated library's: checked for shape only.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { ExperimentSummaryEvent } from '../../protocol/events';
import { is, NOT_BUILT, pastStartup, startAgent, trackedRuns, waitGone, type AgentRun } from '../support/agentHarness';

const runs = trackedRuns();
after(runs.cleanup);

async function runInit(ranks: number, env: NodeJS.ProcessEnv = {}): Promise<AgentRun> {
  const { run } = await pastStartup(`init at ${ranks} rank(s)`, async () => {
    const run = runs.track(startAgent({ experiments: ['init'], ranks, iterations: 1, warmup: 0 }, { COMMCOST_SIM_GPUS: String(ranks), ...env }));
    await run.waitFor(is('run/done'), 120000);
    return { run };
  });
  assert.deepEqual(await waitGone(run.dir), [], 'no agent or rank process left');
  return run;
}

describe('init/scalable on the simulated NCCL', { skip: NOT_BUILT }, () => {
  for (const ranks of [2, 4]) {
    test(`${ranks} ranks: ncclCommInitRankScalable with 2 unique ids, timed beside the plain init`, async () => {
      const run = await runInit(ranks);
      assert.equal(run.events.find(is('run/done'))!.status, 'complete', run.stderr.join('').slice(-3000));
      const s = run.events.find((e): e is ExperimentSummaryEvent => e.type === 'experiment/summary' && e.experiment === 'init');
      assert.ok(s, run.stderr.join('').slice(-3000));
      assert.deepEqual(s.variants.map((v) => v.variant), ['default', 'scalable']);
      const v = s.variants.find((x) => x.variant === 'scalable')!;
      assert.equal(v.steps.find((x) => x.step === 'call')!.label, 'ncclCommInitRankScalable (2 unique ids)');
      for (const step of ['call', 'first', 'total']) assert.ok(v.steps.find((x) => x.step === step)!.stats.median > 0, step);
    });
  }

  test('a rank that hangs in ncclCommInitRankScalable is stopped by the hang guard; the plain init kept; no process left', async () => {
    const { run } = await pastStartup('scalable init hang', async () => {
      const run = runs.track(startAgent({ experiments: ['init'], ranks: 2, iterations: 1, warmup: 0, deadlineSeconds: 3 }, { COMMCOST_SIM_HANG: 'ncclCommInitRankScalable:1' }));
      await run.waitFor(is('run/done'), 60000);
      return { run };
    });
    assert.deepEqual(await waitGone(run.dir), [], 'no agent or rank process left');
    const error = run.events.find(is('run/error'));
    assert.equal(error?.code, 'TIMEOUT');
    assert.match(error!.message, /timed out at init scalable iteration 0, step ncclCommInitRankScalable/);
    const s = run.events.find((e): e is ExperimentSummaryEvent => e.type === 'experiment/summary' && e.experiment === 'init');
    assert.ok(s?.variants.some((v) => v.variant === 'default'), 'the plain init was recorded before');
    assert.equal(run.events.find(is('run/done'))!.status, 'partial');
  });

  test('simulated NCCL 2.23.3: skipped with the version it needs, the plain init runs', async () => {
    const run = await runInit(2, { COMMCOST_SIM_VERSION: '22303' });
    assert.deepEqual(
      run.events.filter(is('experiment/skipped')).map((x) => [x.experiment, x.variant, x.reason]),
      [['init', 'scalable', 'ncclCommInitRankScalable needs NCCL ≥ 2.23.4, host has 2.23.3']],
    );
    const s = run.events.find((e): e is ExperimentSummaryEvent => e.type === 'experiment/summary' && e.experiment === 'init');
    assert.deepEqual(s?.variants.map((v) => v.variant), ['default']);
  });
});
