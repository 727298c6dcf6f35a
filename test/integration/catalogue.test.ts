/**
 * The rest of the catalogue on the simulated NCCL (2 ranks): each experiment's behaviour —
 * skips with their reasons, who takes part, where costs land — and the field cases whose
 * variants are meant to hang (C4, C6) or may hang (C5): stopped by the hang guard, nothing left behind.
 * Figures are from the simulated library: checked for behaviour only.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import { after, describe, test } from 'node:test';
import type { ExperimentSummaryEvent, VariantSummary } from '../../protocol/events';
import { memStatsNote, type RunFile } from '../../protocol/runFile';
import { applyEvent, newRun } from '../../client/runModel';
import { shrinkAbortOutcomes } from '../../readings/verdict';
import { formatSummary } from '../../cli/summary';
import { renderReport } from '../../client/htmlReport';
import { validateRunFile } from '../../client/runFileSchema';
import { SHRINK_ABORT_VARIANTS } from '../../remote-agent/experiments/shrinkAbort';
import { is, NOT_BUILT, pastStartup, startAgent, trackedRuns, waitGone, type AgentRun } from '../support/agentHarness';

const skip = NOT_BUILT;
const runs = trackedRuns();
after(runs.cleanup);

async function runToEnd(options: Parameters<typeof startAgent>[0], env: NodeJS.ProcessEnv = {}): Promise<AgentRun> {
  // Again when its ranks did not start within the deadline (2 s in some tests, on a loaded machine).
  const { run } = await pastStartup(`run of ${(options.experiments ?? []).join(', ')}`, async () => {
    const run = runs.track(startAgent({ iterations: 2, ...options }, env));
    await run.waitFor(is('run/done'), 90000);
    return { run };
  });
  assert.deepEqual(await waitGone(run.dir), [], 'no agent or rank process left');
  return run;
}

function summary(run: AgentRun, experiment: string): ExperimentSummaryEvent {
  const s = run.events.find((e): e is ExperimentSummaryEvent => e.type === 'experiment/summary' && e.experiment === experiment);
  assert.ok(s, `summary of ${experiment}; events: ${run.events.map((e) => e.type).join(',')}\n${run.stderr.join('').slice(-3000)}`);
  return s;
}

/** The run file the host side folds from the agent's events (client/runModel.ts). */
function runFile(run: AgentRun): RunFile {
  return run.events.reduce(applyEvent, newRun('localhost', { experiments: ['init'], iterations: 1, warmup: 1, deadlineSeconds: 60 }));
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
    assert.deepEqual(s.variants.map((v) => v.variant), ['default', 'abort', 'abort/inflight']);
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

  test('registration: the first use of a registered buffer pays the registration, the second does not', async () => {
    // The simulated first use costs REG_FIRST_MS more than the second (a ~0.3 ms 64 MiB allreduce):
    // every first use has that floor (the library sleeps it, less its 5% jitter), so the order is
    // asserted where the configured costs guarantee it, over three samples each: the median second
    // use stays under the floor unless two of three stall that long on a loaded machine.
    const REG_FIRST_MS = 150;
    const run = await runToEnd({ experiments: ['registration'], iterations: 3 }, { COMMCOST_SIM_REG_FIRST_MS: String(REG_FIRST_MS) });
    const s = summary(run, 'registration');
    assert.ok(s.variants.some((v) => v.variant === 'window/64MiB'));
    // ncclCommRegister's buffers (the simulated collective windows model no first-use extra).
    for (const variant of ['register/64MiB', 'register/256MiB', 'register/1GiB']) {
      const v = s.variants.find((x) => x.variant === variant)!;
      const first = v.steps.find((x) => x.step === 'firstUse')!.samples;
      assert.equal(first.length, 3);
      assert.ok(Math.min(...first) >= REG_FIRST_MS * 0.95, `${variant}: every first use pays the registration: ${first}`);
      assert.ok(median(v, 'secondUse') < REG_FIRST_MS * 0.95, `${variant}: the second use does not: ${median(v, 'secondUse')} ms`);
    }
  });

  test('drain: finalize with four collectives in flight, and the stream-sync comparison', async () => {
    const run = await runToEnd({ experiments: ['drain'] });
    const s = summary(run, 'drain');
    assert.ok(s.variants.some((v) => v.variant === 'finalize') && s.variants.some((v) => v.variant === 'stream-sync'));
    assert.ok(median(s.variants.find((v) => v.variant === 'stream-sync')!, 'sync') > 0);
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
    assert.deepEqual(planned.map((v) => v.env?.NCCL_RUNTIME_CONNECT), ['1', '0', '1', '0', '1', '0', '1', '1'], 'each variant records the setting it ran with');
    // C3: the one-rank communicator also with the plain allocator (NCCL_CUMEM_ENABLE=0).
    assert.deepEqual(planned.filter((v) => v.env?.NCCL_CUMEM_ENABLE !== undefined).map((v) => v.variant), ['one-rank/runtimeConnect=1/cumem=0', 'one-rank/runtimeConnect=0/cumem=0']);
  });

  test('connect-mode per algorithm: NCCL_ALGO=Ring and =Tree each in processes of their own; first and second small and 64 MiB allreduce timed', async () => {
    const run = await runToEnd({ experiments: ['connect-mode'], iterations: 1 });
    const planned = run.events.find(is('run/plan'))!.experiments[0]!.variants;
    assert.deepEqual(
      planned.filter((v) => v.variant.includes('/algo=')).map((v) => [v.variant, v.env]),
      [
        ['init/runtimeConnect=1/algo=Ring', { NCCL_RUNTIME_CONNECT: '1', NCCL_ALGO: 'Ring' }],
        ['init/runtimeConnect=1/algo=Tree', { NCCL_RUNTIME_CONNECT: '1', NCCL_ALGO: 'Tree' }],
      ],
    );
    const s = summary(run, 'connect-mode');
    for (const variant of ['init/runtimeConnect=1', 'init/runtimeConnect=0', 'init/runtimeConnect=1/algo=Ring', 'init/runtimeConnect=1/algo=Tree']) {
      const v = s.variants.find((x) => x.variant === variant)!;
      assert.deepEqual(v.steps.map((x) => x.step), ['call', 'first', 'total', 'second', 'firstLarge', 'secondLarge'], variant);
      assert.deepEqual(
        v.steps.map((x) => x.label).filter((l) => /allreduce/.test(l)),
        ['first 1 MiB allreduce', 'second 1 MiB allreduce', 'first 64 MiB allreduce (large-message algorithm)', 'second 64 MiB allreduce'],
      );
      for (const x of v.steps) assert.ok(x.stats.median > 0, `${variant} ${x.step}`);
    }
    // The simulated NCCL accepts NCCL_ALGO and models no difference between algorithms: no figure is compared here.
    assert.equal(run.events.find(is('run/done'))!.status, 'complete');
  });

  test('connect-mode: an NCCL_ALGO that NCCL refuses fails its variant with NCCL\'s own text; what ran before is kept and the run goes on', async () => {
    const run = await runToEnd({ experiments: ['connect-mode', 'destroy'], iterations: 1 }, { COMMCOST_SIM_ALGO_REFUSED: 'Tree' });
    const error = run.events.find(is('run/error'))!;
    assert.equal(error.code, 'NCCL_ERROR');
    assert.equal(error.fatal, false);
    assert.deepEqual([error.where.experiment, error.where.variant], ['connect-mode', 'init/runtimeConnect=1/algo=Tree']);
    assert.match(error.detail ?? '', /no algorithm\/protocol available for function AllReduce with datatype ncclFloat32\. NCCL_ALGO was set to Tree\./);
    assert.deepEqual(
      summary(run, 'connect-mode').variants.map((v) => v.variant),
      ['init/runtimeConnect=1', 'init/runtimeConnect=0', 'one-rank/runtimeConnect=1', 'one-rank/runtimeConnect=0', 'one-rank/runtimeConnect=1/cumem=0', 'one-rank/runtimeConnect=0/cumem=0', 'init/runtimeConnect=1/algo=Ring'],
    );
    assert.ok(summary(run, 'destroy').variants.length > 0, 'the next experiment still runs');
    assert.equal(run.events.find(is('run/done'))!.status, 'partial');
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
    // The override is in the run's stamp too (C2: "the env override is recorded in the run's stamp").
    assert.deepEqual(run.events.find(is('run/plan'))!.stamp.variantEnv, { 'split-share splitShare=0+env': { NCCL_COMM_SPLIT_SHARE_RESOURCES: '1' } });
    assert.deepEqual(runFile(run).stamp?.variantEnv, { 'split-share splitShare=0+env': { NCCL_COMM_SPLIT_SHARE_RESOURCES: '1' } });
  });

  test('C4 split-subset: NOCOLOR completes and is timed; subset-only is stopped by the hang guard', async () => {
    const run = await runToEnd({ experiments: ['split-subset', 'destroy'], deadlineSeconds: 2 });
    const s = summary(run, 'split-subset');
    assert.deepEqual(s.variants.map((v) => v.variant), ['nocolor']);
    const error = run.events.find(is('run/error'))!;
    assert.equal(error.code, 'TIMEOUT');
    assert.match(error.message, /split-subset subset-only .*rank 1 never reached ncclCommSplit/);
    assert.ok(run.events.some((e) => e.type === 'experiment/summary' && e.experiment === 'destroy'), 'the next experiment still runs');
    // The hang is the case's result: reported as expected, with why; the run is complete.
    assert.equal(error.expected, true);
    assert.match(error.hint ?? '', /^field case C4: .*as this case expects$/);
    assert.equal(run.events.find(is('run/done'))!.status, 'complete');
    const text = formatSummary(runFile(run));
    assert.match(text, /^expected hang \(host .*variant subset-only.*\n {2}why: field case C4/m);
    assert.doesNotMatch(text, /^error TIMEOUT/m);
    const html = renderReport(runFile(run));
    // The expected hang is listed under its own case (the split-subset section), not in an Errors list.
    assert.match(html, /<h2>split-subset<\/h2>(?:(?!<h2>).)*<h3>Expected hang: the hang is this case&#39;s result<\/h3><ul><li>TIMEOUT timed out at split-subset subset-only/s);
    assert.doesNotMatch(html, /<h2>Errors<\/h2>/);
  });

  test('C6 init-abort: the non-blocking init is aborted within the poll deadline; the blocking one is stopped by the hang guard', async () => {
    const run = await runToEnd({ experiments: ['init-abort'], deadlineSeconds: 2 });
    const v = summary(run, 'init-abort').variants[0]!;
    assert.equal(v.variant, 'nonblocking');
    const ms = median(v, 'abort');
    assert.ok(ms >= 500 && ms < 500 + 2000, `abort after the 500 ms poll deadline, got ${ms}`);
    // The ncclCommAbort call alone, from the same native call: part of the whole, not the poll.
    const call = median(v, 'abortCall');
    assert.ok(call > 0 && call < ms - 400, `the abort call alone took ${call} ms of ${ms}`);
    // Its parts: the init with its polling, then the abort call; the whole is their sum.
    const polled = median(v, 'poll');
    assert.ok(polled >= 500 && Math.abs(polled + call - ms) < 0.05 * ms, `poll ${polled} + abort ${call} ≈ ${ms} (medians of per-iteration sums)`);
    const error = run.events.find(is('run/error'))!;
    assert.equal(error.code, 'TIMEOUT');
    assert.match(error.message, /init-abort blocking .*rank 1 never reached ncclCommInitRankConfig \(blocking\): it last finished the barrier of step abort of variant nonblocking, which it sits out$/);
    assert.equal(error.expected, true);
    assert.equal(run.events.find(is('run/done'))!.status, 'complete');
  });

  test('C5 shrink-abort on simulated 2.28.9: all twelve combinations complete and are timed, the excluded rank apart', async () => {
    const run = await runToEnd({ experiments: ['shrink-abort'], iterations: 1, deadlineSeconds: 5 });
    const s = summary(run, 'shrink-abort');
    assert.deepEqual(s.variants.map((v) => v.variant), [...SHRINK_ABORT_VARIANTS]);
    for (const v of s.variants) {
      for (const step of ['call', 'first', 'total', 'release']) assert.ok(median(v, step) > 0, `${v.variant} ${step}`);
      assert.equal(v.steps.some((x) => x.step === 'excludedRelease'), !v.variant.endsWith('excluded-exits'), `${v.variant}: the excluded rank's own release is timed unless it exits`);
    }
    const planned = run.events.find(is('run/plan'))!.experiments[0]!.variants;
    assert.deepEqual(planned.map((v) => v.env), SHRINK_ABORT_VARIANTS.map(() => ({})), 'each combination in rank processes of its own');
    for (const sample of run.events.filter(is('run/sample'))) {
      assert.deepEqual(sample.perRank.call?.map((x) => x === null), [false, true], 'the excluded rank does not shrink');
      assert.deepEqual(sample.perRank.release?.map((x) => x === null), [false, true], 'release is the survivors\' figure');
      if (!sample.variant.endsWith('excluded-exits')) assert.deepEqual(sample.perRank.excludedRelease?.map((x) => x === null), [true, false]);
    }
    assert.equal(run.events.find(is('run/done'))!.status, 'complete');
    const file = runFile(run);
    assert.deepEqual(shrinkAbortOutcomes(file)!.map((o) => o.outcome), Array(12).fill('timed'));
    const text = formatSummary(file);
    assert.match(text, /Field case C5, "shrink with abort, then destroy, hangs" \(shrink-abort\) on NCCL 2\.28\.9/);
    assert.match(text, /NCCL_SHRINK_ABORT\s+ncclCommDestroy\s+aborts\s+timed: shrink [\d.]+ ms, first collective [\d.]+ ms, parent released by the survivors in [\d.]+ ms, by the excluded rank in [\d.]+ ms/);
    assert.match(text, /Field case C5, "shrink with abort, then destroy, hangs" .*12 of 12 ways to release the parent completed\. The reported combination .* completed\./);
  });

  test('C5 shrink-abort on simulated 2.31.2: NCCL_SHRINK_ABORT, then destroy while the excluded rank aborts, is stopped by the hang guard at the release; what ran before is kept', async () => {
    const deadlineSeconds = 2;
    // Again when its ranks did not start within the 2 s (a loaded machine): that run tested nothing.
    const { run, error } = await pastStartup('C5 shrink-abort on 2.31.2', async () => {
      const run = runs.track(startAgent({ experiments: ['shrink-abort', 'destroy'], iterations: 1, deadlineSeconds }, { COMMCOST_SIM_VERSION: '23102' }));
      const error = await run.waitFor(is('run/error'), 90000);
      await run.waitFor(is('run/done'), 90000);
      return { run, error };
    });
    // Torn down at once: the next session's first iteration follows the stop as soon as a session
    // can start on this machine — measured in this same run (its first session's start-up), so a
    // loaded machine is not a failure, and a stop that waited on the hung rank (tens of s) still is.
    const errorIndex = run.events.indexOf(error);
    const nextIndex = run.events.findIndex((e, i) => i > errorIndex && e.type === 'run/progress');
    const firstIndex = run.events.findIndex((e) => e.type === 'run/progress');
    assert.ok(nextIndex > errorIndex && firstIndex >= 0, 'the run goes on after the stop');
    const startup = run.arrivedAt[firstIndex]! - run.startedAt;
    const gap = run.arrivedAt[nextIndex]! - run.arrivedAt[errorIndex]!;
    assert.ok(gap <= 3 * startup + 3000, `the stopped session is torn down and the run goes on at once: ${gap} ms from the stop to the next iteration, a session starts in ${startup} ms here`);
    assert.deepEqual(await waitGone(run.dir), [], 'no agent or rank process left');

    assert.equal(error.code, 'TIMEOUT');
    assert.deepEqual(
      { experiment: error.where.experiment, variant: error.where.variant, step: error.where.step, rank: error.where.rank },
      { experiment: 'shrink-abort', variant: 'abort/destroy/excluded-aborts', step: 'release', rank: 1 },
    );
    assert.match(
      error.message,
      /^timed out at shrink-abort abort\/destroy\/excluded-aborts iteration 0, step ncclCommDestroy \(parent\) on rank 1: rank 0 waited ([\d.]+) s in ncclCommDestroy \(parent\); rank 1 never reached ncclCommDestroy \(parent\): it last finished ncclCommAbort \(parent, excluded rank\)$/,
    );
    const waited = Number(/waited ([\d.]+) s/.exec(error.message)![1]);
    assert.ok(waited >= deadlineSeconds && waited < deadlineSeconds + 1, `stopped within the deadline + 1 s, waited ${waited} s`);

    // The combinations that ran before it are kept, timed; the next experiment still runs.
    const before = SHRINK_ABORT_VARIANTS.slice(0, SHRINK_ABORT_VARIANTS.indexOf('abort/destroy/excluded-aborts'));
    const summarized = summary(run, 'shrink-abort').variants.map((v) => v.variant);
    assert.deepEqual(summarized.slice(0, before.length), before);
    assert.ok(!summarized.includes('abort/destroy/excluded-aborts'));
    assert.ok(summary(run, 'destroy').variants.length > 0);
    // A C5 hang is this NCCL version's answer, not a failure of the run.
    assert.equal(error.expected, true);
    assert.equal(run.events.find(is('run/done'))!.status, 'complete');

    // The C5 table: every combination ends, timed or stopped by the hang guard (each runs in
    // processes of its own, so a hang stops only its own combination).
    const file = runFile(run);
    const outcomes = shrinkAbortOutcomes(file)!;
    const by = (variant: string): string => outcomes.find((o) => o.variant === variant)!.outcome;
    for (const v of before) assert.equal(by(v), 'timed', v);
    assert.equal(by('abort/destroy/excluded-aborts'), 'hang');
    for (const v of SHRINK_ABORT_VARIANTS.slice(before.length + 1)) assert.ok(['timed', 'hang'].includes(by(v)), `${v}: ${by(v)}`);
    process.stderr.write(`C5 on simulated 2.31.2: ${outcomes.map((o) => `${o.variant}=${o.outcome}`).join(', ')}\n`);
    const text = formatSummary(file);
    assert.match(text, /Field case C5, "shrink with abort, then destroy, hangs" \(shrink-abort\) on NCCL 2\.31\.2/);
    assert.match(text, /NCCL_SHRINK_ABORT\s+ncclCommDestroy\s+aborts\s+stopped by the hang guard: timed out at shrink-abort abort\/destroy\/excluded-aborts .*rank 1 never reached ncclCommDestroy \(parent\)/);
    assert.match(text, /The reported combination \(NCCL_SHRINK_ABORT; survivors ncclCommDestroy the parent; excluded rank aborts it\) was stopped by the hang guard.* Aborting the parent on the survivors instead completed \(ncclCommAbort [\d.]+ ms\)\./);
  });
});

describe('cold-start on the simulated NCCL', { skip }, () => {
  /** The simulated floors: the harness's COMMCOST_SIM_INIT_MS (15) and COMMCOST_SIM_CUINIT_MS (20), ±5% jitter. */
  const INIT_MS = 15;
  const CUINIT_MS = 20;
  const logFolders = (): string[] => fs.readdirSync(os.tmpdir()).filter((n) => n.startsWith('commcost-nccl-log-'));

  test('1 rank: each step apart; the first init of every fresh process pays the kernel load, the second does not; NCCL view read', async () => {
    const KERNELS = 150;
    const before = logFolders();
    const run = await runToEnd({ experiments: ['cold-start'], ranks: 1 }, { COMMCOST_SIM_KERNELS_MS: String(KERNELS) });
    assert.equal(run.events.find(is('run/done'))!.status, 'complete', run.stderr.join('').slice(-3000));
    const v = summary(run, 'cold-start').variants[0]!;
    assert.deepEqual(v.steps.map((s) => s.step), ['ncclLoad', 'cudaContext', 'uniqueId', 'coldInit', 'coldFirst', 'cold', 'warmInit', 'warmFirst', 'warm']);
    assert.ok(median(v, 'cudaContext') >= CUINIT_MS * 0.95, `CUDA context ${median(v, 'cudaContext')} ms`);
    // Every iteration (warmup included) ran in fresh processes: each one's first init paid the load.
    const samples = run.events.filter(is('run/sample'));
    assert.equal(samples.length, 3);
    for (const s of samples) {
      assert.ok(s.steps.coldInit! >= (INIT_MS + KERNELS) * 0.95, `iteration ${s.iteration}: cold init ${s.steps.coldInit} ms`);
      assert.ok(s.steps.coldInit! - s.steps.warmInit! >= KERNELS * 0.5, `iteration ${s.iteration}: cold ${s.steps.coldInit} vs warm ${s.steps.warmInit} ms`);
      assert.ok(s.steps.warmInit! >= INIT_MS * 0.95);
    }
    const ratio = v.ratios!.find((r) => r.id === 'coldOverWarm')!;
    assert.ok(Math.abs(ratio.value - median(v, 'cold') / median(v, 'warm')) < 1e-9);
    assert.ok(ratio.value > 1);
    // NCCL's view, beside the figures: the kernel load in the cold creation only.
    const view = v.ncclInit!;
    assert.deepEqual(view.iterations, { cold: 2, warm: 2 });
    assert.equal(view.malformedLines, 0);
    assert.equal(view.note, undefined);
    assert.ok(view.medians.cold!.kernels! >= 140, `NCCL's cold kernels ${view.medians.cold!.kernels} ms`);
    assert.equal(view.medians.warm!.kernels, 0);
    // NCCL's debug settings: this experiment's processes only, recorded; their log folders removed.
    assert.deepEqual(v.env, { NCCL_DEBUG: 'INFO', NCCL_DEBUG_SUBSYS: 'INIT' });
    assert.deepEqual(run.events.find(is('run/plan'))!.stamp.variantEnv, { 'cold-start default': { NCCL_DEBUG: 'INFO', NCCL_DEBUG_SUBSYS: 'INIT' } });
    assert.deepEqual(logFolders().filter((d) => !before.includes(d)), [], 'no NCCL log folder left');
    // The run file keeps NCCL's view and the ratio (schema-checked).
    const file = runFile(run);
    assert.deepEqual(validateRunFile(JSON.parse(JSON.stringify(file))).experiments[0]!.variants[0]!.ncclInit, view);
  });

  test('2 ranks: each step is the MAX over ranks (rank 1 loads its kernels slower); a malformed log line is skipped and counted', async () => {
    const run = await runToEnd(
      { experiments: ['cold-start', 'init'], ranks: 2 },
      { COMMCOST_SIM_KERNELS_MS: '60,300', COMMCOST_SIM_INIT_TIMINGS_GARBLED: '1' },
    );
    assert.equal(run.events.find(is('run/done'))!.status, 'complete', run.stderr.join('').slice(-3000));
    for (const s of run.events.filter(is('run/sample')).filter((x) => x.experiment === 'cold-start')) {
      assert.ok(s.steps.coldInit! >= (INIT_MS + 300) * 0.95, `iteration ${s.iteration}: cold init ${s.steps.coldInit} ms (MAX over ranks)`);
      assert.deepEqual(s.perRank.uniqueId!.map((x) => x === null), [false, true], 'the first unique id is rank 0\'s');
      assert.ok(s.ncclInit!.cold!.kernels! >= 280, `NCCL's cold kernels ${s.ncclInit!.cold!.kernels} ms (MAX over ranks)`);
    }
    const v = summary(run, 'cold-start').variants[0]!;
    // Two garbled lines per rank per process (one per init), over 2 ranks and 2 recorded iterations.
    assert.equal(v.ncclInit!.malformedLines, 2 * 2 * 2);
    assert.deepEqual(v.ncclInit!.iterations, { cold: 2, warm: 2 });
    assert.ok(v.ratios!.find((r) => r.id === 'coldInitOverWarmInit')!.value > 1);
    // The next experiment runs in processes without NCCL's debug settings and is unaffected.
    assert.equal(summary(run, 'init').variants[0]!.env, undefined);
  });

  test('an NCCL older than 2.23.4: the figures, and NCCL view said to be missing', async () => {
    const run = await runToEnd({ experiments: ['cold-start'], ranks: 1, iterations: 1 }, { COMMCOST_SIM_VERSION: '22303' });
    const v = summary(run, 'cold-start').variants[0]!;
    assert.ok(median(v, 'cold') > 0 && median(v, 'warm') > 0);
    assert.deepEqual(v.ncclInit!.medians, {});
    assert.equal(v.ncclInit!.note, 'NCCL 2.23.3 predates the Init timings line (NCCL 2.23.4): no NCCL view of the creations');
  });
});

describe('drain, revoke and shrink drop checks, the shared pool, MemStats (simulated NCCL)', { skip }, () => {
  const counts = (v: VariantSummary, name: string) => {
    const c = v.counts?.[name];
    assert.ok(c, `count ${name} in ${v.variant}: ${JSON.stringify(v.counts)}`);
    return c;
  };

  test('drain as the study did it: each of 16, 64, 128 and 256 MiB alone, and the four; work in flight when every timed call began', async () => {
    const run = await runToEnd({ experiments: ['drain'] });
    const s = summary(run, 'drain');
    const sizes = ['16MiB', '64MiB', '128MiB', '256MiB'];
    assert.deepEqual(s.variants.map((v) => v.variant), [...sizes.map((x) => `finalize/${x}`), 'finalize', ...sizes.map((x) => `stream-sync/${x}`), 'stream-sync']);
    for (const v of s.variants) {
      // Every rank, every recorded iteration: the event after the enqueues was not complete as the call began.
      assert.deepEqual(counts(v, 'inFlightAtStart'), { min: 1, max: 1, sum: 4, n: 4 }, v.variant);
      assert.equal(counts(v, 'inFlightEnqueued').min, v.variant.includes('/') ? 1 : 4, v.variant);
    }
    // The run file keeps the counts (schema-valid, as the host folds them).
    assert.equal(runFile(run).experiments.find((e) => e.experiment === 'drain')!.variants[0]!.counts!.inFlightAtStart!.min, 1);
  });

  test('revoke drops the in-flight allreduces (data check); the idle revoke had nothing in flight', async () => {
    const run = await runToEnd({ experiments: ['revoke'] });
    const s = summary(run, 'revoke');
    for (const v of s.variants) {
      if (v.variant.startsWith('idle/')) {
        assert.equal(counts(v, 'inFlightAtStart').max, 0, v.variant);
        assert.equal(v.counts!.inFlightDropped, undefined, v.variant);
        continue;
      }
      assert.equal(counts(v, 'inFlightAtStart').min, 1, v.variant);
      assert.equal(counts(v, 'inFlightEnqueued').min, 4, v.variant);
      assert.ok(counts(v, 'inFlightDropped').min >= 1, `${v.variant}: every rank saw dropped work: ${JSON.stringify(v.counts)}`);
      assert.equal(counts(v, 'inFlightCompleted').sum + counts(v, 'inFlightDropped').sum, 4 * 2 * 2);
    }
  });

  test('shrink with NCCL_SHRINK_ABORT and four allreduces in flight: the survivor finds them dropped', async () => {
    const run = await runToEnd({ experiments: ['shrink'] });
    const s = summary(run, 'shrink');
    assert.deepEqual(s.variants.map((v) => v.variant), ['default', 'abort', 'abort/inflight']);
    const v = s.variants[2]!;
    // Only the survivor (rank 0 of 2) shrinks and checks: one rank-iteration per recorded iteration.
    assert.deepEqual(counts(v, 'inFlightAtStart'), { min: 1, max: 1, sum: 2, n: 2 });
    assert.ok(counts(v, 'inFlightDropped').min >= 1, JSON.stringify(v.counts));
    assert.equal(s.variants[0]!.counts, undefined, 'no in-flight window without work in flight');
  });

  test('pool with sharing next to the pool without: memory per shape and switch / rebuild for both', async () => {
    const run = await runToEnd({ experiments: ['pool'] });
    const [plain, shared] = summary(run, 'pool').variants;
    assert.deepEqual([plain!.variant, shared!.variant], ['tp2+1', 'tp2+1/splitShare=1']);
    // The simulated shared children take no memory of their own; the plain ones do.
    assert.ok(plain!.memoryBytes!['pool after TP1']! > plain!.memoryBytes!['pool after TP2']!);
    assert.equal(shared!.memoryBytes!['pool after TP1'], shared!.memoryBytes!['pool after TP2']);
    for (const v of [plain!, shared!]) assert.ok(median(v, 'switch') > 0 && median(v, 'rebuild') > 0, v.variant);
  });

  test('1 rank: the TP1 pool (no sharing variant), drain and revoke run; no drop is claimed where nothing was dropped', async () => {
    const run = await runToEnd({ experiments: ['pool', 'drain', 'revoke'], ranks: 1, iterations: 1 }, { COMMCOST_SIM_GPUS: '1' });
    assert.equal(run.events.find(is('run/done'))!.status, 'complete', run.stderr.join('').slice(-3000));
    assert.deepEqual(summary(run, 'pool').variants.map((v) => v.variant), ['tp1']);
    for (const v of summary(run, 'drain').variants) assert.equal(counts(v, 'inFlightEnqueued').n, 1);
    for (const v of summary(run, 'revoke').variants.filter((x) => x.variant.startsWith('inflight/'))) {
      assert.equal(counts(v, 'inFlightCompleted').sum + counts(v, 'inFlightDropped').sum, 4);
    }
  });

  test('MemStats beside the free-memory delta on a simulated 2.29.7; absent on 2.28.9, and the run says why', async () => {
    const recent = await runToEnd({ experiments: ['init', 'pool'] }, { COMMCOST_SIM_VERSION: '22907' });
    const init = summary(recent, 'init').variants[0]!;
    const MiB = 2 ** 20;
    // The simulated communicator: 200 MiB at creation, 60 MiB of connections at the first collective (suspendable).
    assert.deepEqual(init.memStats!.afterCall, { suspendableBytes: 0, persistentBytes: 200 * MiB, totalBytes: 200 * MiB });
    assert.deepEqual(init.memStats!.afterFirst, { suspendableBytes: 60 * MiB, persistentBytes: 200 * MiB, totalBytes: 260 * MiB });
    const [plain, shared] = summary(recent, 'pool').variants;
    assert.ok(plain!.memStats!['pool after TP1']!.totalBytes > shared!.memStats!['pool after TP1']!.totalBytes);
    assert.equal(memStatsNote(runFile(recent)), undefined);

    const old = await runToEnd({ experiments: ['init'] });
    assert.equal(summary(old, 'init').variants[0]!.memStats, undefined);
    // The simulated library exports the symbol at every version: the note says commcost did not
    // call it, and speaks of the simulator, not of what NCCL 2.28.9 exports.
    assert.equal(memStatsNote(runFile(old)), "ncclCommMemStats was not called: the run simulates NCCL 2.28.9, and commcost calls it only from 2.29.7; memory is the simulator's free-memory delta only");
  });
});
