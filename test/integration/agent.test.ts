/**
 * The agent end to end on the simulated NCCL: real rank processes, the TCP barrier, real
 * cross-process rendezvous in the simulated library, the hang guard, cancel and teardown.
 * Figures here come from the simulated library: the tests check behaviour (where each cost
 * lands, how ranks combine, what is labelled simulated), never real performance.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { EXPERIMENT_IDS, type ExperimentSummaryEvent } from '../../protocol/events';
import { is, NOT_BUILT, pastStartup, processesMatching, startAgent, trackedRuns, waitGone } from '../support/agentHarness';
import { hasNvidiaDriver } from '../../remote-agent/coordinator';

const skip = NOT_BUILT;
const runs = trackedRuns();
after(runs.cleanup);

const track = runs.track;

function step(summary: ExperimentSummaryEvent, variant: string, id: string) {
  const v = summary.variants.find((x) => x.variant === variant);
  const s = v?.steps.find((x) => x.step === id);
  assert.ok(s, `step ${variant}/${id} in ${JSON.stringify(summary.variants.map((x) => x.variant))}`);
  return s;
}

describe('agent on the simulated NCCL', { skip }, () => {
  for (const ranks of [2, 4]) {
    test(`default suite at ${ranks} ranks: every experiment summarised, labelled simulated, ranks combined by MAX`, async () => {
      const run = track(startAgent({ experiments: ['init', 'split', 'destroy', 'abort'], ranks, iterations: 3 }));
      const done = await run.waitFor(is('run/done'), 60000);
      assert.equal(done.status, 'complete', run.stderr.join(''));
      const plan = run.events.find(is('run/plan'))!;
      assert.equal(plan.simulated, true);
      assert.equal(plan.stamp.simulated, true);
      assert.equal(plan.ranks, ranks);
      assert.match(plan.stamp.ncclPath, /libnccl-sim\.so$/);
      assert.equal(plan.stamp.ncclEnv.COMMCOST_SIM_CONNECT_MS, '25');
      const startup = run.events.find(is('run/startup'))!;
      assert.equal(startup.cudaInitMs.length, ranks);
      const summaries = run.events.filter(is('experiment/summary'));
      assert.deepEqual(summaries.map((s) => s.experiment), ['init', 'split', 'destroy', 'abort']);

      // Each sample's step = MAX over the ranks' durations; derived totals = call + first.
      for (const sample of run.events.filter(is('run/sample'))) {
        for (const [s, perRank] of Object.entries(sample.perRank)) {
          assert.equal(perRank.length, ranks);
          const values = perRank.filter((v): v is number => v !== null);
          assert.equal(values.length, ranks, 'every rank takes part in these steps');
          assert.equal(sample.steps[s], Math.max(...values));
        }
        if (sample.steps.call !== undefined && sample.steps.first !== undefined && sample.steps.total !== undefined) {
          assert.ok(Math.abs(sample.steps.total - (sample.steps.call + sample.steps.first)) < 1e-9);
        }
        // Each timed step is one barrier generation with its release skew (all ranks on this host).
        for (const s of Object.keys(sample.perRank)) assert.ok((sample.stepSkewUs?.[s] ?? -1) >= 0, `release skew of ${s}: ${JSON.stringify(sample.stepSkewUs)}`);
      }
      // Every rank on one host: the release went through shared memory.
      assert.match(run.stderr.join(''), /barrier: one-host release through shared memory/);
      const init = summaries[0]!;
      assert.equal(step(init, 'default', 'call').stats.n, 3);
      // The lazy connect lands in the first collective, not in init (simulated costs 15 / 25 ms).
      const first = step(init, 'default', 'first').stats.median;
      // Floors: the simulated costs less the library's ±5% jitter.
      assert.ok(first >= 25 * 0.95 && first < 25 * 3, `first collective ${first} ms`);
      assert.ok(step(init, 'default', 'call').stats.median >= 15 * 0.95);
      assert.ok(step(init, 'default', 'steady').stats.median < first, 'steady collective is cheaper than the first');
      // Memory taken by the communicator is seen by the free-memory delta.
      assert.ok((init.variants[0]!.memoryBytes?.afterCall ?? 0) > 0);
      const split = summaries[1]!;
      assert.deepEqual(split.variants.map((v) => v.variant), ['halves/splitShare=0', 'halves/splitShare=1', 'whole/splitShare=0', 'whole/splitShare=1']);
      // The simulated abort's floor: COMMCOST_SIM_ABORT_MS=12 scaled by the library's ±5% jitter (COMMCOST_SIM_JITTER).
      const abortMs = step(summaries[3]!, 'default', 'abort').stats.median;
      assert.ok(abortMs >= 12 * 0.95, `abort floor of the simulated library: ${abortMs} ms`);
      assert.ok(done.libraryMs > 0 && done.wallMs >= done.libraryMs);
      // The split adds up to the wall time, and each part is there.
      const wall = done.wallSplit!;
      assert.ok(wall.timedMs > 0 && wall.processStartMs > 0 && wall.harnessMs >= 0, JSON.stringify(wall));
      const sum = wall.timedMs + wall.setupMs + wall.processStartMs + wall.processExitMs + wall.harnessMs;
      assert.ok(Math.abs(sum - done.wallMs) < 1, `split ${sum} vs wall ${done.wallMs}`);
      assert.deepEqual(await waitGone(run.dir), []);
    });
  }

  test('a rank that never reaches split is stopped by the hang guard; earlier results kept; no process left', async () => {
    // Again when its ranks did not start within the 2 s (a loaded machine): that run tested nothing.
    const { run, t0, done } = await pastStartup('a rank that never reaches split', async () => {
      const run = track(startAgent({ experiments: ['init', 'split'], iterations: 2, deadlineSeconds: 2 }, { COMMCOST_SIM_HANG: 'ncclCommSplit:1' }));
      const t0 = Date.now();
      return { run, t0, done: await run.waitFor(is('run/done'), 30000) };
    });
    const error = run.events.find(is('run/error'))!;
    assert.equal(error.code, 'TIMEOUT');
    assert.match(error.message, /timed out at split halves\/splitShare=0 iteration 0, step ncclCommSplit/);
    assert.equal(error.where.experiment, 'split');
    assert.equal(done.status, 'partial');
    assert.ok(run.events.some((e) => e.type === 'experiment/summary' && e.experiment === 'init'), 'init results kept');
    assert.ok(Date.now() - t0 < 2000 + 15000);
    assert.deepEqual(await waitGone(run.dir), []);
  });

  test('a failing NCCL call is reported with the library text; later experiments still run', async () => {
    const run = track(startAgent({ experiments: ['split', 'destroy'], iterations: 2 }, { COMMCOST_SIM_FAIL: 'ncclCommSplit:0' }));
    const done = await run.waitFor(is('run/done'), 30000);
    const error = run.events.find(is('run/error'))!;
    assert.equal(error.code, 'NCCL_ERROR');
    assert.equal(error.where.rank, 0);
    assert.match(error.detail ?? '', /simulated failure in ncclCommSplit/);
    assert.equal(error.fatal, false);
    assert.ok(run.events.some((e) => e.type === 'experiment/summary' && e.experiment === 'destroy'));
    assert.equal(done.status, 'partial');
    assert.deepEqual(await waitGone(run.dir), []);
  });

  test('cancel mid-run: partial, agent exits, no rank left', async () => {
    const run = track(startAgent({ experiments: ['init', 'split'], iterations: 50 }));
    await run.waitFor(is('run/sample'), 20000);
    assert.ok(processesMatching(run.dir).length >= 3, 'coordinator and ranks running');
    run.send({ type: 'run/cancel' });
    const done = await run.waitFor(is('run/done'), 10000);
    assert.equal(done.status, 'partial');
    assert.equal(await run.exited, 0);
    assert.deepEqual(await waitGone(run.dir), []);
  });

  test('stdin EOF (the host went away) tears the run down', async () => {
    const run = track(startAgent({ experiments: ['init'], iterations: 50 }));
    await run.waitFor(is('run/sample'), 20000);
    run.child.stdin!.end();
    await run.exited;
    assert.deepEqual(await waitGone(run.dir), []);
  });

  test('SIGTERM tears the run down', async () => {
    const run = track(startAgent({ experiments: ['init'], iterations: 50 }));
    await run.waitFor(is('run/sample'), 20000);
    run.child.kill('SIGTERM');
    await run.exited;
    assert.deepEqual(await waitGone(run.dir), []);
  });

  const badOptions: [string, Record<string, unknown>, RegExp][] = [
    ['zero iterations', { iterations: 0 }, /iterations must be an integer/],
    ['unknown experiment', { experiments: ['init', 'bogus'] }, new RegExp(`unknown experiment "bogus" \\(known: ${EXPERIMENT_IDS.join(', ')}\\)`)],
    ['absurd deadline', { deadlineSeconds: -1 }, /deadlineSeconds must be a number of seconds from 1/],
    ['more ranks than GPUs', { ranks: 3 }, /asked for 3 ranks but .* has 2 GPUs/],
  ];
  for (const [name, options, message] of badOptions) {
    test(`bad input: ${name}`, async () => {
      const run = track(startAgent(options, { COMMCOST_SIM_GPUS: '2' }));
      const done = await run.waitFor(is('run/done'));
      const error = run.events.find(is('run/error'))!;
      assert.match(error.message, message);
      assert.equal(error.fatal, true);
      assert.equal(done.status, 'failed');
    });
  }

  test('no GPU: says so plainly', { skip: hasNvidiaDriver() ? 'this machine has an NVIDIA driver' : false }, async () => {
    const run = track(startAgent({ simulate: false }));
    const done = await run.waitFor(is('run/done'));
    const error = run.events.find(is('run/error'))!;
    assert.equal(error.code, 'NO_GPU');
    assert.match(error.message, /no NVIDIA GPU driver on /);
    assert.match(error.hint ?? '', /--simulate/);
    assert.equal(done.status, 'failed');
  });
});
