/**
 * many-comms (issue #29) on the simulated NCCL at 1 and 2 ranks, one iteration, counts 1, 2, 4:
 * memory grows with N for communicators of their own and stays flat for splitShare=1 children,
 * every knob's variant is planned with its environment (or skipped with the version it needs), the
 * simulated model answers NCCL_BUFFSIZE, the channel limits, NCCL_RUNTIME_CONNECT and
 * NCCL_CUMEM_ENABLE as native/sim/ncclsim.c documents, and the CLI summary prints the curve.
 * Figures are the simulated library's: checked for shape only.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { ExperimentSummaryEvent } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { applyEvent, newRun } from '../../client/runModel';
import { validateRunFile } from '../../client/runFileSchema';
import { formatSummary } from '../../cli/summary';
import { commCountPoint } from '../../remote-agent/experiments/manyComms';
import { is, NOT_BUILT, pastStartup, startAgent, trackedRuns, waitGone, type AgentRun } from '../support/agentHarness';

const runs = trackedRuns();
after(runs.cleanup);
const MiB = 2 ** 20;
const COUNTS = [1, 2, 4];

async function runToEnd(ranks: number, env: NodeJS.ProcessEnv = {}): Promise<AgentRun> {
  const { run } = await pastStartup(`many-comms at ${ranks} rank(s)`, async () => {
    const run = runs.track(startAgent({ experiments: ['many-comms'], ranks, iterations: 1, warmup: 0, commCounts: COUNTS }, env));
    await run.waitFor(is('run/done'), 120000);
    return { run };
  });
  assert.deepEqual(await waitGone(run.dir), [], 'no agent or rank process left');
  return run;
}

function summary(run: AgentRun): ExperimentSummaryEvent {
  const s = run.events.find((e): e is ExperimentSummaryEvent => e.type === 'experiment/summary' && e.experiment === 'many-comms');
  assert.ok(s, `summary of many-comms; events: ${run.events.map((e) => e.type).join(',')}\n${run.stderr.join('').slice(-3000)}`);
  return s;
}

/** Memory per GPU after each count, MiB, of one variant. */
function curve(s: ExperimentSummaryEvent, variant: string): number[] {
  const v = s.variants.find((x) => x.variant === variant);
  assert.ok(v, `variant ${variant} in ${s.variants.map((x) => x.variant).join(', ')}`);
  return COUNTS.map((n) => v.memoryBytes![commCountPoint(n)]! / MiB);
}

function runFile(run: AgentRun): RunFile {
  return validateRunFile(run.events.reduce(applyEvent, newRun('localhost', { experiments: ['many-comms'], iterations: 1, warmup: 0, deadlineSeconds: 60 })));
}

describe('many-comms on the simulated NCCL', { skip: NOT_BUILT }, () => {
  test('1 rank: memory grows with N for init and split without sharing, stays flat with splitShare=1; knobs in processes of their own; the summary prints the curve', async () => {
    const run = await runToEnd(1);
    assert.equal(run.events.find(is('run/done'))!.status, 'complete');
    const planned = run.events.find(is('run/plan'))!.experiments[0]!.variants;
    assert.deepEqual(
      planned.map((v) => [v.variant, v.env ?? {}]),
      [
        ['init', {}],
        ['split/splitShare=0', {}],
        ['split/splitShare=1', {}],
        ['init/maxCTAs=2', {}],
        ['init/buffsize=1MiB', { NCCL_BUFFSIZE: '1048576' }],
        ['init/runtimeConnect=0', { NCCL_RUNTIME_CONNECT: '0' }],
        ['init/cumem=0', { NCCL_CUMEM_ENABLE: '0' }],
      ],
    );
    assert.deepEqual(
      run.events.filter(is('experiment/skipped')).map((s) => [s.variant, s.reason]),
      [['init/maxP2pPeers=1', 'config maxP2pPeers needs NCCL ≥ 2.30.3, host has 2.28.9']],
    );
    const s = summary(run);
    // Simulated: 200 MiB per one-rank communicator of its own; runtime connect leaves it unconnected.
    assert.deepEqual(curve(s, 'init'), [200, 400, 800]);
    assert.deepEqual(curve(s, 'split/splitShare=0'), [200, 400, 800]);
    assert.deepEqual(curve(s, 'split/splitShare=1'), [0, 0, 0]);
    // Connecting inside creation (NCCL_RUNTIME_CONNECT=0, or no cuMem) allocates the buffers a one-rank communicator never uses.
    assert.deepEqual(curve(s, 'init/runtimeConnect=0'), [260, 520, 1040]);
    assert.deepEqual(curve(s, 'init/cumem=0'), [260, 520, 1040]);
    // The N-th creation is timed at every count.
    for (const v of s.variants) for (const n of COUNTS) assert.ok(v.steps.find((x) => x.step === `total/n${n}`)!.stats.median > 0, `${v.variant} total/n${n}`);
    const text = formatSummary(runFile(run));
    assert.match(text, /many-comms: memory per GPU after N communicators \(MiB, free-memory delta; communicators of 1 rank each\):\n {2}variant +N=1 +N=2 +N=4 +per added\n/);
    assert.match(text, /\n {2}split\/splitShare=1 +0 +0 +0 +0\n/);
    assert.match(text, /\n {2}init\/runtimeConnect=0 +260\.0 +520\.0 +1040\.0 +260\.0\n/);
    assert.match(text, /many-comms: the N-th creation to its first collective \(median ms\):/);
    assert.doesNotMatch(text, /memory many-comms/, 'the curve replaces the per-point memory lines');
    // Without ncclCommMemStats (the simulated 2.28.9 is older than 2.29.7) nothing is recorded and the summary says why.
    assert.equal(s.variants.some((v) => Object.keys(v.memStats ?? {}).length > 0), false);
    assert.doesNotMatch(text, /ncclCommMemStats summed/);
    assert.match(text, /NCCL's count \(MemStats\): ncclCommMemStats was not called: the run simulates NCCL 2\.28\.9, and commcost calls it only from 2\.29\.7/);
  });

  test('2 ranks on a simulated 2.30.7: every knob runs; buffer size and channels shrink the connect memory; NCCL\'s count beside it', async () => {
    const run = await runToEnd(2, { COMMCOST_SIM_VERSION: '23007' });
    assert.equal(run.events.find(is('run/done'))!.status, 'complete');
    assert.deepEqual(run.events.filter(is('experiment/skipped')), []);
    const s = summary(run);
    // Simulated: 200 MiB per communicator + 60 MiB of connect buffers at its first collective.
    assert.deepEqual(curve(s, 'init'), [260, 520, 1040]);
    assert.deepEqual(curve(s, 'split/splitShare=0'), [260, 520, 1040]);
    assert.deepEqual(curve(s, 'split/splitShare=1'), [0, 0, 0]);
    assert.deepEqual(curve(s, 'init/maxP2pPeers=1'), [260, 520, 1040]);
    // Connect memory: ¼ fixed + ¾ × NCCL_BUFFSIZE / 4 MiB; × channels / 16 (maxCTAs 2).
    assert.deepEqual(curve(s, 'init/buffsize=1MiB'), [200 + 60 * 0.4375, 2 * (200 + 60 * 0.4375), 4 * (200 + 60 * 0.4375)]);
    assert.deepEqual(curve(s, 'init/maxCTAs=2'), [207.5, 415, 830]);
    const init = s.variants.find((v) => v.variant === 'init')!;
    assert.equal(init.memStats![commCountPoint(4)]!.totalBytes, 1040 * MiB);
    // Connecting at creation moves the connect from the first collective into the call.
    const eager = s.variants.find((v) => v.variant === 'init/runtimeConnect=0')!;
    const median = (v: typeof init, step: string): number => v.steps.find((x) => x.step === step)!.stats.median;
    assert.ok(median(eager, 'call/n1') > median(init, 'call/n1'), 'eager call includes the connect');
    const text = formatSummary(runFile(run));
    assert.match(text, /many-comms: NCCL's count of the N communicators \(MiB, ncclCommMemStats summed over them\):/);
    assert.match(text, /communicators of 2 ranks each/);
  });
});
