/**
 * Where each timed figure comes from, on the simulated NCCL (2 ranks): tests that fail when the
 * measurement core times the wrong thing. Each one sets the simulated library's costs so that
 * the right figure has a floor that a wrong one cannot reach, and asserts only that floor (the
 * library sleeps at least its configured cost less its ±5% jitter: never flaky on a loaded
 * machine). `npm run mutants` (scripts/mutants.mjs) applies the mutations these tests are meant
 * to kill and fails if one survives.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { ExperimentSummaryEvent, SampleEvent, VariantSummary } from '../../protocol/events';
import { is, NOT_BUILT, startAgent, trackedRuns, waitGone, type AgentRun } from '../support/agentHarness';

const skip = NOT_BUILT;
const runs = trackedRuns();
after(runs.cleanup);

/** The simulated library's floor for a configured cost: the cost less its ±5% jitter. */
const floor = (ms: number): number => ms * 0.95;

async function runToEnd(options: Parameters<typeof startAgent>[0], env: NodeJS.ProcessEnv): Promise<AgentRun> {
  const run = runs.track(startAgent({ iterations: 2, ...options }, env));
  const done = await run.waitFor(is('run/done'), 90000);
  assert.equal(done.status, 'complete', run.stderr.join('').slice(-3000));
  assert.deepEqual(await waitGone(run.dir), [], 'no agent or rank process left');
  return run;
}

function variantOf(run: AgentRun, experiment: string, variant: string): VariantSummary {
  const s = run.events.find((e): e is ExperimentSummaryEvent => e.type === 'experiment/summary' && e.experiment === experiment);
  const v = s?.variants.find((x) => x.variant === variant);
  assert.ok(v, `${experiment} ${variant} in ${JSON.stringify(s?.variants.map((x) => x.variant))}`);
  return v;
}

/** The recorded (not warmup) samples of one variant. */
function recorded(run: AgentRun, experiment: string, variant: string): SampleEvent[] {
  const samples = run.events.filter(is('run/sample')).filter((s) => s.experiment === experiment && s.variant === variant && !s.warmup);
  assert.ok(samples.length > 0, `recorded samples of ${experiment} ${variant}`);
  return samples;
}

function stepOf(sample: SampleEvent, step: string): number {
  const v = sample.steps[step];
  assert.ok(v !== undefined, `step ${step} in iteration ${sample.iteration}: ${JSON.stringify(sample.steps)}`);
  return v;
}

describe('timed figures land where the measurement says (simulated NCCL)', { skip }, () => {
  test("split: the first collective is the child's, which pays the lazy connect the warm parent already paid", async () => {
    // A 2-rank child of the same shape (whole) with splitShare 0 has connections of its own to
    // make; the parent was connected by its warm-up collective in setup, so its collective has
    // no connect cost. A first collective timed on the parent stays under the floor.
    const CONNECT_MS = 150;
    const run = await runToEnd({ experiments: ['split'] }, { COMMCOST_SIM_CONNECT_MS: String(CONNECT_MS) });
    for (const s of recorded(run, 'split', 'whole/splitShare=0')) {
      const first = stepOf(s, 'first');
      assert.ok(first >= floor(CONNECT_MS), `iteration ${s.iteration}: the child's first collective ${first} ms, connect ${CONNECT_MS} ms`);
      assert.ok(Math.abs(stepOf(s, 'total') - (stepOf(s, 'call') + first)) < 1e-9, 'total = call + first');
    }
  });

  test('pool: the switch times the CUDA-graph capture and the instantiate apart, each with its own cost', async () => {
    // Distinct simulated costs: a capture timed as 0, or capture and instantiate swapped, falls under a floor.
    const CAPTURE_MS = 40;
    const GRAPH_MS = 90;
    const run = await runToEnd(
      { experiments: ['pool'], iterations: 1 },
      { COMMCOST_SIM_CAPTURE_MS: String(CAPTURE_MS), COMMCOST_SIM_GRAPH_MS: String(GRAPH_MS) },
    );
    for (const s of recorded(run, 'pool', 'tp2+1')) {
      const capture = stepOf(s, 'switchCapture');
      const instantiate = stepOf(s, 'switchInstantiate');
      assert.ok(capture >= floor(CAPTURE_MS), `capture ${capture} ms, simulated ${CAPTURE_MS} ms`);
      assert.ok(instantiate >= floor(GRAPH_MS), `instantiate ${instantiate} ms, simulated ${GRAPH_MS} ms`);
      const sum = stepOf(s, 'switchCollective') + capture + instantiate;
      assert.ok(Math.abs(stepOf(s, 'switch') - sum) < 1e-9, `switch = collective + capture + instantiate: ${JSON.stringify(s.steps)}`);
    }
  });

  test("ranks combine by MAX: the slower rank's cost is the step's figure", async () => {
    // Rank 1 pays a 250 ms kernel load in each fresh process's first creation, rank 0 none: the
    // step's figure has rank 1's floor, and the sample's figure is the largest per-rank value.
    const INIT_MS = 15; // the harness's COMMCOST_SIM_INIT_MS
    const KERNELS_MS = 250;
    const run = await runToEnd({ experiments: ['cold-start'], ranks: 2, iterations: 1 }, { COMMCOST_SIM_KERNELS_MS: `0,${KERNELS_MS}` });
    for (const s of recorded(run, 'cold-start', 'default')) {
      const cold = stepOf(s, 'coldInit');
      assert.ok(cold >= floor(INIT_MS + KERNELS_MS), `cold init ${cold} ms: rank 1's ${INIT_MS} + ${KERNELS_MS} ms`);
      const perRank = s.perRank.coldInit!;
      assert.ok(perRank[1]! >= floor(INIT_MS + KERNELS_MS), `rank 1 paid its kernel load: ${JSON.stringify(perRank)}`);
      assert.equal(cold, Math.max(...perRank.filter((v): v is number => v !== null)));
    }
    const v = variantOf(run, 'cold-start', 'default');
    assert.ok(v.steps.find((x) => x.step === 'coldInit')!.stats.median >= floor(INIT_MS + KERNELS_MS));
  });

  test('revoke: the call alone is apart from the span until quiet', async () => {
    // ncclCommRevoke returns at once (ncclInProgress) and the communicator is quiet REVOKE_MS
    // later: the span has that floor, and the call alone is recorded apart, never the span.
    const REVOKE_MS = 200;
    const run = await runToEnd({ experiments: ['revoke'], iterations: 1 }, { COMMCOST_SIM_REVOKE_MS: String(REVOKE_MS) });
    for (const variant of ['idle/destroy', 'inflight/destroy']) {
      for (const s of recorded(run, 'revoke', variant)) {
        const span = stepOf(s, 'revoke');
        const call = stepOf(s, 'revokeCall');
        assert.ok(span >= floor(REVOKE_MS), `${variant}: revoke until quiet ${span} ms`);
        assert.ok(call < span, `${variant}: the call alone ${call} ms is part of the span ${span} ms`);
      }
    }
  });
});
