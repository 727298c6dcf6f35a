/**
 * First uses other than an allreduce (issue #32) on the simulated NCCL (2 ranks): init and split with
 * RunOptions.firstUse run a variant first used by a broadcast and one by a send/recv pair, whose `first`
 * step pays the connect and whose `warm` step (the same op again) does not. Simulated figures: checked
 * for behaviour only, with costs far apart (a peer's connect 200 ms, the ring's 25 ms).
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { ExperimentSummaryEvent, VariantSummary } from '../../protocol/events';
import { is, NOT_BUILT, pastStartup, startAgent, trackedRuns, waitGone } from '../support/agentHarness';

const runs = trackedRuns();
after(runs.cleanup);

function median(v: VariantSummary | undefined, step: string): number {
  const s = v?.steps.find((x) => x.step === step);
  assert.ok(s, `step ${step} in ${v?.variant}`);
  return s.stats.median;
}

describe('first-use variants on the simulated NCCL', { skip: NOT_BUILT }, () => {
  test('init and split: first=broadcast and first=sendrecv variants, each first use paying its connect', async () => {
    const { run } = await pastStartup('first-use run', async () => {
      const run = runs.track(startAgent({ experiments: ['init', 'split'], iterations: 2, firstUse: ['allreduce', 'broadcast', 'sendrecv'] }, { COMMCOST_SIM_P2P_CONNECT_MS: '200', COMMCOST_SIM_CONNECT_MS: '120' }));
      await run.waitFor(is('run/done'), 120000);
      return { run };
    });
    assert.deepEqual(await waitGone(run.dir), [], 'no agent or rank process left');
    const summary = (id: string) => run.events.find((e): e is ExperimentSummaryEvent => e.type === 'experiment/summary' && e.experiment === id);
    const init = summary('init');
    assert.ok(init, run.stderr.join('').slice(-3000));
    assert.deepEqual(init.variants.map((v) => v.variant), ['default', 'default/first=broadcast', 'default/first=sendrecv', 'scalable']);
    const bcast = init.variants.find((v) => v.variant === 'default/first=broadcast');
    const p2p = init.variants.find((v) => v.variant === 'default/first=sendrecv');
    assert.match(bcast!.steps.find((s) => s.step === 'first')!.label, /broadcast/);
    assert.match(p2p!.steps.find((s) => s.step === 'first')!.label, /send\/recv/);
    // The ring's connect (120 ms) in the first broadcast, the peer's (200 ms) in the first pair; neither in the warm op.
    assert.ok(median(bcast, 'first') >= 100 && median(bcast, 'first') < 190, `first broadcast ${median(bcast, 'first')}`);
    assert.ok(median(p2p, 'first') >= 180, `first send/recv ${median(p2p, 'first')}`);
    for (const v of [bcast, p2p]) assert.ok(median(v, 'warm') < 60, `${v!.variant} warm ${median(v, 'warm')}`);
    const split = summary('split');
    assert.ok(split);
    assert.deepEqual(split.variants.map((v) => v.variant), [
      'halves/splitShare=0', 'halves/splitShare=0/first=broadcast', 'halves/splitShare=0/first=sendrecv', 'halves/splitShare=1',
      'whole/splitShare=0', 'whole/splitShare=0/first=broadcast', 'whole/splitShare=0/first=sendrecv', 'whole/splitShare=1',
    ]);
    // The whole child's pair connects its peer; a half of one rank sends to itself and connects nothing.
    assert.ok(median(split.variants.find((v) => v.variant === 'whole/splitShare=0/first=sendrecv'), 'first') >= 180);
    assert.ok(median(split.variants.find((v) => v.variant === 'halves/splitShare=0/first=sendrecv'), 'first') < 100);
    assert.equal(run.events.find(is('run/done'))!.status, 'complete');
  });

  test('one rank: the send/recv variant is skipped with why, the broadcast one runs', async () => {
    const { run } = await pastStartup('first-use 1 rank', async () => {
      const run = runs.track(startAgent({ experiments: ['init'], iterations: 1, ranks: 1, firstUse: ['broadcast', 'sendrecv'] }));
      await run.waitFor(is('run/done'), 90000);
      return { run };
    });
    const skipped = run.events.filter(is('experiment/skipped'));
    assert.deepEqual(skipped.map((s) => [s.experiment, s.variant, s.reason]), [['init', 'default/first=sendrecv', 'a send/recv pair needs 2 GPUs, host has 1']]);
    const init = run.events.find((e): e is ExperimentSummaryEvent => e.type === 'experiment/summary' && e.experiment === 'init');
    assert.deepEqual(init?.variants.map((v) => v.variant), ['default/first=broadcast']);
  });
});
