/**
 * The rest of the catalogue on the simulated NCCL (2 ranks): each experiment's behaviour —
 * skips with their reasons, who takes part, where costs land — and the field cases whose
 * variants are meant to hang (C4, C6): stopped by the hang guard, nothing left behind.
 * Figures are from the simulated library: checked for behaviour only.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { ExperimentSummaryEvent, VariantSummary } from '../../protocol/events';
import { is, NOT_BUILT, startAgent, trackedRuns, waitGone, type AgentRun } from '../support/agentHarness';

const skip = NOT_BUILT;
const runs = trackedRuns();
after(runs.cleanup);

async function runToEnd(options: Parameters<typeof startAgent>[0], env: NodeJS.ProcessEnv = {}): Promise<AgentRun> {
  const run = runs.track(startAgent({ iterations: 2, ...options }, env));
  await run.waitFor(is('run/done'), 90000);
  assert.deepEqual(await waitGone(run.dir), [], 'no agent or rank process left');
  return run;
}

function summary(run: AgentRun, experiment: string): ExperimentSummaryEvent {
  const s = run.events.find((e): e is ExperimentSummaryEvent => e.type === 'experiment/summary' && e.experiment === experiment);
  assert.ok(s, `summary of ${experiment}; events: ${run.events.map((e) => e.type).join(',')}\n${run.stderr.join('').slice(-3000)}`);
  return s;
}

function median(v: VariantSummary, step: string): number {
  const s = v.steps.find((x) => x.step === step);
  assert.ok(s, `step ${step} in ${v.variant}`);
  return s.stats.median;
}

describe('catalogue on the simulated NCCL', { skip }, () => {
  test('on simulated NCCL 2.28.9: grow and suspend are skipped with the version they need', async () => {
    const run = await runToEnd({ experiments: ['grow', 'suspend'] });
    const skipped = run.events.filter(is('experiment/skipped'));
    assert.deepEqual(
      skipped.map((s) => [s.experiment, s.reason]),
      [
        ['grow', 'needs NCCL ≥ 2.29.2, host has 2.28.9'],
        ['suspend', 'needs NCCL ≥ 2.29.7, host has 2.28.9'],
      ],
    );
    assert.equal(run.events.find(is('run/done'))!.status, 'complete');
  });

  test('c10d is skipped with the simulated NCCL, with the reason', async () => {
    const run = await runToEnd({ experiments: ['c10d', 'init'] });
    const skipped = run.events.filter(is('experiment/skipped'));
    assert.deepEqual(skipped.map((s) => [s.experiment, s.reason]), [['c10d', 'c10d runs torch with its own NCCL on real GPUs: not with the simulated NCCL']]);
    assert.ok(run.events.some((e) => e.type === 'experiment/summary' && e.experiment === 'init'));
  });

  test('shrink: the excluded rank takes no part; DEFAULT and ABORT both complete', async () => {
    const run = await runToEnd({ experiments: ['shrink'] });
    const s = summary(run, 'shrink');
    assert.deepEqual(s.variants.map((v) => v.variant), ['default', 'abort']);
    for (const sample of run.events.filter(is('run/sample'))) assert.deepEqual(sample.perRank.call?.map((v) => v === null), [false, true]);
    assert.equal(run.events.find(is('run/done'))!.status, 'complete');
  });

  test('grow on a simulated 2.29.7: the new rank joins and the grown communicator runs its first collective', async () => {
    const run = await runToEnd({ experiments: ['grow', 'suspend'] }, { COMMCOST_SIM_VERSION: '22907' });
    assert.ok(median(summary(run, 'grow').variants[0]!, 'total') > 0);
    const suspend = summary(run, 'suspend').variants[0]!;
    assert.ok(suspend.memoryBytes!.afterSuspend! < suspend.memoryBytes!.warm!, 'suspend releases memory');
  });

  test('revoke: until-quiet ≥ the call alone; destroy and shrink-abort paths complete', async () => {
    const run = await runToEnd({ experiments: ['revoke'] });
    const s = summary(run, 'revoke');
    assert.deepEqual(s.variants.map((v) => v.variant), ['idle/destroy', 'idle/shrink-abort', 'inflight/destroy', 'inflight/shrink-abort']);
    for (const v of s.variants) assert.ok(median(v, 'revoke') >= median(v, 'revokeCall'));
  });

  test('registration: the repeated register hits the cache; the first use pays the registration', async () => {
    const run = await runToEnd({ experiments: ['registration'], iterations: 1 });
    const s = summary(run, 'registration');
    assert.ok(s.variants.some((v) => v.variant === 'window/64MiB'));
    const reg = s.variants.find((v) => v.variant === 'register/64MiB')!;
    assert.ok(median(reg, 'firstUse') > median(reg, 'secondUse'));
  });

  test('drain: finalize with four collectives in flight, and the stream-sync comparison', async () => {
    const run = await runToEnd({ experiments: ['drain'] });
    const s = summary(run, 'drain');
    assert.deepEqual(s.variants.map((v) => v.variant), ['finalize', 'stream-sync']);
    assert.ok(median(s.variants[1]!, 'sync') > 0);
  });

  test('pool: every TP shape is built and warmed; memory grows with each shape; switch and rebuild timed', async () => {
    const run = await runToEnd({ experiments: ['pool'] });
    const v = summary(run, 'pool').variants[0]!;
    assert.equal(v.variant, 'tp2+1');
    const mem = v.memoryBytes!;
    assert.ok(mem['pool after TP1']! > mem['pool after TP2']!, JSON.stringify(mem));
    assert.ok(median(v, 'switch') < median(v, 'rebuild'), 'a switch inside the pool is cheaper than a rebuild');
  });

  test('connect-mode: with NCCL_RUNTIME_CONNECT=0 the connect moves from the first collective into the call', async () => {
    const run = await runToEnd({ experiments: ['connect-mode'] });
    const s = summary(run, 'connect-mode');
    const lazy = s.variants.find((v) => v.variant === 'init/runtimeConnect=1')!;
    const eager = s.variants.find((v) => v.variant === 'init/runtimeConnect=0')!;
    assert.ok(median(eager, 'call') > median(lazy, 'call'));
    assert.ok(median(eager, 'first') < median(lazy, 'first'));
    // The one-rank child's memory is its own (counted after the warm parent): the simulated 200 MiB per communicator.
    assert.equal(s.variants.find((v) => v.variant === 'one-rank/runtimeConnect=1')!.memoryBytes!.afterFirst, 200 * 2 ** 20);
    const planned = run.events.find(is('run/plan'))!.experiments[0]!.variants;
    assert.deepEqual(planned.map((v) => v.env?.NCCL_RUNTIME_CONNECT), ['1', '0', '1', '0'], 'each variant records the setting it ran with');
  });

  test('C2 split-share: groups grow memory linearly with splitShare 0; with splitShare 1 or the env override they share the parent', async () => {
    const run = await runToEnd({ experiments: ['split-share'] });
    const s = summary(run, 'split-share');
    const mem = (variant: string, k: number): number => s.variants.find((v) => v.variant === variant)!.memoryBytes![`after ${k} group${k === 1 ? '' : 's'}`]!;
    const perGroup = (200 + 60) * 2 ** 20; // simulated: 200 MiB per communicator + 60 MiB at its first collective
    assert.deepEqual([1, 2, 3].map((k) => mem('splitShare=0', k)), [perGroup, 2 * perGroup, 3 * perGroup]);
    assert.deepEqual([1, 2, 3].map((k) => mem('splitShare=1', k)), [0, 0, 0]);
    assert.deepEqual([1, 2, 3].map((k) => mem('splitShare=0+env', k)), [0, 0, 0]);
    const planned = run.events.find(is('run/plan'))!.experiments[0]!.variants;
    assert.deepEqual(planned.map((v) => v.env), [{}, {}, { NCCL_COMM_SPLIT_SHARE_RESOURCES: '1' }]);
  });

  test('C4 split-subset: NOCOLOR completes and is timed; subset-only is stopped by the hang guard', async () => {
    const run = await runToEnd({ experiments: ['split-subset', 'destroy'], deadlineSeconds: 2 });
    const s = summary(run, 'split-subset');
    assert.deepEqual(s.variants.map((v) => v.variant), ['nocolor']);
    const error = run.events.find(is('run/error'))!;
    assert.equal(error.code, 'TIMEOUT');
    assert.match(error.message, /split-subset subset-only .*rank 1 never reached ncclCommSplit/);
    assert.ok(run.events.some((e) => e.type === 'experiment/summary' && e.experiment === 'destroy'), 'the next experiment still runs');
    assert.equal(run.events.find(is('run/done'))!.status, 'partial');
  });

  test('C6 init-abort: the non-blocking init is aborted within the poll deadline; the blocking one is stopped by the hang guard', async () => {
    const run = await runToEnd({ experiments: ['init-abort'], deadlineSeconds: 2 });
    const v = summary(run, 'init-abort').variants[0]!;
    assert.equal(v.variant, 'nonblocking');
    const ms = median(v, 'abort');
    assert.ok(ms >= 500 && ms < 500 + 2000, `abort after the 500 ms poll deadline, got ${ms}`);
    const error = run.events.find(is('run/error'))!;
    assert.equal(error.code, 'TIMEOUT');
    assert.match(error.message, /init-abort blocking .*rank 1 never reached/);
  });
});
