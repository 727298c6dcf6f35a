// runController driven with fakes: no VS Code, no engine, no disk.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { srunArgsFor } from '../../client/slurm';
import { entryRequest, parseHostEntry } from '../../extension/hostEntries';
import { readSettings } from '../../extension/settings';
import type { RunOptions } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import type { RunState } from '../../protocol/webviewMessages';
import {
  OPEN_RESULTS,
  progressOf,
  runController,
  SHOW_LOG,
  toFailure,
  type RunDeps,
  type RunMeasurementFn,
} from '../../extension/runController';

const options: RunOptions = { experiments: ['init', 'split'], iterations: 3, warmup: 1, deadlineSeconds: 60 };

function snapshot(done: number, status: RunFile['status'] = 'running'): RunFile {
  return {
    schema: 'commcost.run/1',
    id: '20250101T000000-gpu1',
    host: 'gpu1',
    simulated: false,
    status,
    options,
    ranks: 2,
    experiments: [
      { experiment: 'init', variants: [], done: Math.min(done, 4), total: 4, samples: {}, state: done >= 4 ? 'finished' : 'running' },
      { experiment: 'split', variants: [], done: Math.max(0, done - 4), total: 4, samples: {}, state: done > 4 ? 'running' : 'pending' },
    ],
    skipped: [],
    errors: [],
  };
}

/** A fake engine: one snapshot per "event"; on abort it stops and resolves partial. */
function fakeEngine(steps: number, opts: { abortAfter?: (signalAbort: () => void) => void; final?: RunFile['status'] } = {}): {
  fn: RunMeasurementFn;
  calls: { target: string; signal?: AbortSignal }[];
} {
  const calls: { target: string; signal?: AbortSignal }[] = [];
  const fn: RunMeasurementFn = async (req, cb, signal) => {
    calls.push({ target: req.target, signal });
    cb.onLog('agent: started');
    let last = snapshot(0);
    for (let i = 1; i <= steps; i++) {
      if (signal?.aborted) return { ...last, status: 'partial' };
      last = snapshot(i);
      cb.onRun(last);
      await new Promise((r) => setImmediate(r));
    }
    return { ...last, status: opts.final ?? 'complete' };
  };
  return { fn, calls };
}

interface Recorded {
  deps: RunDeps;
  panel: RunState[];
  progress: { message: string; percent?: number }[];
  saved: { dir: string; run: RunFile }[];
  info: { message: string; actions: string[] }[];
  errors: { message: string; actions: string[] }[];
  logs: string[];
  showLogCalls: number;
  opened: string[];
  abort: AbortController;
}

function fakes(runMeasurement: RunMeasurementFn, choose?: string): Recorded {
  const r: Recorded = {
    panel: [],
    progress: [],
    saved: [],
    info: [],
    errors: [],
    logs: [],
    showLogCalls: 0,
    opened: [],
    abort: new AbortController(),
  } as unknown as Recorded;
  r.deps = {
    runMeasurement,
    saveRun: async (dir, run) => {
      r.saved.push({ dir, run });
      return `${dir}/${run.id}.json`;
    },
    resultsDir: '/ws/.commcost/runs',
    progress: { report: (message, percent) => r.progress.push({ message, percent }) },
    panel: { update: (s) => r.panel.push(s) },
    log: { info: (l) => r.logs.push(l), error: (l) => r.logs.push(`ERROR ${l}`) },
    signal: r.abort.signal,
    confirmHostKey: async () => true,
    showInfo: async (message, ...actions) => {
      r.info.push({ message, actions });
      return choose;
    },
    showError: async (message, ...actions) => {
      r.errors.push({ message, actions });
      return choose;
    },
    openResults: (_run, path) => r.opened.push(path),
    showLog: () => {
      r.showLogCalls++;
    },
  };
  return r;
}

const tick = (): Promise<void> => new Promise((res) => setImmediate(res));

test('every snapshot reaches the panel as a complete live state, then the final one as not live', async () => {
  const engine = fakeEngine(8);
  const r = fakes(engine.fn);
  const outcome = await runController({ target: 'gpu1', options }, r.deps);
  assert.equal(outcome.kind, 'finished');
  // initial placeholder + 8 snapshots + final + the final one with the saved file's path
  assert.equal(r.panel.length, 11);
  assert.equal(r.panel.at(-1)!.savedPath, '/ws/.commcost/runs/20250101T000000-gpu1.json');
  assert.equal(r.panel[0]!.live, true);
  assert.equal(r.panel[0]!.run.status, 'running');
  assert.deepEqual(r.panel.slice(1, 9).map((s) => s.run.experiments[0]!.done), [1, 2, 3, 4, 4, 4, 4, 4]);
  assert.ok(r.panel.slice(1, 9).every((s) => s.live && Array.isArray(s.run.experiments)));
  assert.equal(r.panel.at(-1)!.live, false);
  assert.equal(r.panel.at(-1)!.run.status, 'complete');
  assert.equal(engine.calls[0]!.signal, r.abort.signal);
  assert.ok(r.logs.includes('agent: started'));
});

test('progress text names the running experiment and iteration', async () => {
  const r = fakes(fakeEngine(6).fn);
  await runController({ target: 'gpu1', options }, r.deps);
  const messages = r.progress.map((p) => p.message);
  assert.equal(messages[0], 'connecting');
  assert.ok(messages.includes('init 2/4 · experiment 1/2'), messages.join(' | '));
  assert.ok(messages.includes('split 2/4 · experiment 2/2'), messages.join(' | '));
  assert.equal(r.progress.at(-1)!.percent, 75);
});

test('progressOf: percent over all experiments, "starting" once stamped and nothing runs', () => {
  const s = snapshot(2);
  assert.deepEqual(progressOf(s), { message: 'init 2/4 · experiment 1/2', percent: 25 });
  const idle: RunFile = { ...snapshot(0), experiments: [] };
  assert.equal(progressOf(idle).message, 'connecting');
});

test('the finished run is saved in the results folder and "Open Results" is offered', async () => {
  const r = fakes(fakeEngine(3).fn, OPEN_RESULTS);
  const outcome = await runController({ target: 'gpu1', options }, r.deps);
  assert.equal(r.saved.length, 1);
  assert.equal(r.saved[0]!.dir, '/ws/.commcost/runs');
  assert.equal(r.saved[0]!.run.status, 'complete');
  assert.deepEqual(outcome, { kind: 'finished', run: r.saved[0]!.run, path: '/ws/.commcost/runs/20250101T000000-gpu1.json' });
  assert.equal(r.info.length, 1);
  assert.deepEqual(r.info[0]!.actions, [OPEN_RESULTS]);
  assert.match(r.info[0]!.message, /run on gpu1 complete/);
  // The target, then the run's name: what it ran on as its file says (no stamp here: the host, said so).
  assert.ok(r.info[0]!.message.includes(`complete: gpu1 (GPUs not recorded) · NCCL version not recorded · `), r.info[0]!.message);
  await tick();
  assert.deepEqual(r.opened, ['/ws/.commcost/runs/20250101T000000-gpu1.json']);
  assert.equal(r.errors.length, 0);
});

test('cancel aborts the engine and the partial run is saved', async () => {
  const r = fakes(fakeEngine(100).fn);
  let seen = 0;
  const panel = r.deps.panel;
  r.deps = { ...r.deps, panel: { update: (s) => { panel.update(s); if (++seen === 4) r.abort.abort(); } } };
  const outcome = await runController({ target: 'gpu1', options }, r.deps);
  assert.equal(outcome.kind, 'finished');
  assert.equal(r.saved.length, 1);
  assert.equal(r.saved[0]!.run.status, 'partial');
  assert.ok(r.panel.length < 20, `engine kept going after cancel: ${r.panel.length} states`);
  assert.equal(r.panel.at(-1)!.run.status, 'partial');
  assert.match(r.info[0]!.message, /partial results saved/);
});

test('engine rejection → failed state in the panel, error message with what/where/hint and "Show Log", nothing saved', async () => {
  const err = Object.assign(new Error('cannot reach gpu9: connect ECONNREFUSED 10.0.0.9:22'), {
    code: 'HOST_UNREACHABLE',
    where: { host: 'gpu9' },
    hint: 'check the host name and that sshd runs',
  });
  const fn: RunMeasurementFn = async () => {
    throw err;
  };
  const r = fakes(fn, SHOW_LOG);
  const outcome = await runController({ target: 'gpu9', options }, r.deps);
  assert.equal(outcome.kind, 'failed');
  assert.equal(r.saved.length, 0);
  assert.equal(r.errors.length, 1);
  assert.deepEqual(r.errors[0]!.actions, [SHOW_LOG]);
  assert.match(r.errors[0]!.message, /cannot reach gpu9/);
  assert.match(r.errors[0]!.message, /where: host gpu9/);
  assert.match(r.errors[0]!.message, /what to do: check the host name/);
  const last = r.panel.at(-1)!;
  assert.equal(last.live, false);
  assert.equal(last.run.status, 'failed');
  assert.deepEqual(last.failure, { code: 'HOST_UNREACHABLE', message: err.message, where: 'host gpu9', hint: 'check the host name and that sshd runs' });
  await tick();
  assert.equal(r.showLogCalls, 1);
  assert.ok(r.logs.some((l) => l.startsWith('ERROR') && l.includes('HOST_UNREACHABLE')));
});

test('a run that resolves failed is saved and reported as an error with "Show Log"', async () => {
  const failedRun: RunFile = {
    ...snapshot(1, 'failed'),
    errors: [{ code: 'TIMEOUT', message: 'timed out at step call on rank 1', where: { rank: 1, experiment: 'init' }, hint: 'raise commcost.deadlineSeconds', fatal: true }],
  };
  const fn: RunMeasurementFn = async () => failedRun;
  const r = fakes(fn);
  const outcome = await runController({ target: 'gpu1', options }, r.deps);
  assert.equal(outcome.kind, 'failed');
  assert.equal(r.saved.length, 1);
  assert.deepEqual(r.errors[0]!.actions, [SHOW_LOG, OPEN_RESULTS]);
  assert.match(r.errors[0]!.message, /timed out at step call on rank 1 — where: rank 1, experiment init — what to do: raise/);
});

test('a save failure is an error with "Show Log"', async () => {
  const r = fakes(fakeEngine(1).fn);
  r.deps = { ...r.deps, saveRun: async () => { throw new Error('EACCES: permission denied'); } };
  const outcome = await runController({ target: 'gpu1', options }, r.deps);
  assert.equal(outcome.kind, 'failed');
  assert.deepEqual(r.errors[0]!.actions, [SHOW_LOG]);
  assert.match(r.errors[0]!.message, /could not save the run: EACCES/);
});

test('the host-key callback goes to confirmHostKey', async () => {
  const asked: string[] = [];
  const fn: RunMeasurementFn = async (req) => {
    const cb = req.acceptNewHostKey;
    assert.equal(typeof cb, 'function');
    const ok = await (cb as (h: string, f: string) => Promise<boolean>)('gpu1', 'SHA256:abc');
    return { ...snapshot(0), status: ok ? 'complete' : 'failed' };
  };
  const r = fakes(fn);
  r.deps = { ...r.deps, confirmHostKey: async (h, f) => { asked.push(`${h} ${f}`); return true; } };
  const outcome = await runController({ target: 'gpu1', options }, r.deps);
  assert.deepEqual(asked, ['gpu1 SHA256:abc']);
  assert.equal(outcome.kind, 'finished');
});

test('toFailure reads code/where/hint from any thrown value', () => {
  assert.deepEqual(toFailure('boom'), { code: 'INTERNAL', message: 'boom' });
  assert.deepEqual(toFailure({ code: 'NO_NODE', message: 'no node on gpu1', where: 'gpu1', hint: 'set commcost.remoteNodePath' }), {
    code: 'NO_NODE',
    message: 'no node on gpu1',
    where: 'gpu1',
    hint: 'set commcost.remoteNodePath',
  });
});

// The request the controller hands the engine for each kind of commcost.hosts entry, from the
// settings as VS Code returns them (readSettings → parseHostEntry → entryRequest → runController).
type EngineRequest = Parameters<RunMeasurementFn>[0];

function capturing(): { fn: RunMeasurementFn; requests: EngineRequest[] } {
  const requests: EngineRequest[] = [];
  const fn: RunMeasurementFn = async (req) => {
    requests.push(req);
    return { ...snapshot(8), host: req.target, status: 'complete' };
  };
  return { fn, requests };
}

function requestFor(entry: string, values: Record<string, unknown>) {
  const settings = readSettings((k) => ({ hosts: [entry], ...values })[k]);
  return { ...entryRequest(parseHostEntry(settings.hosts[0]!), settings), options };
}

test('a group entry: the engine gets moreTargets and commcost.coordinatorAddress; messages name the group', async () => {
  const engine = capturing();
  const r = fakes(engine.fn);
  const outcome = await runController(requestFor('gpu-a + gpu-b+gpu-c', { coordinatorAddress: '10.0.0.1' }), r.deps);
  assert.equal(outcome.kind, 'finished');
  assert.equal(engine.requests.length, 1);
  const req = engine.requests[0]!;
  assert.equal(req.target, 'gpu-a');
  assert.deepEqual(req.moreTargets, ['gpu-b', 'gpu-c']);
  assert.equal(req.coordinatorAddress, '10.0.0.1');
  assert.equal(req.slurm, undefined);
  assert.match(r.info[0]!.message, /^commcost: run on gpu-a \+ 2 more complete/);
  assert.ok(r.logs.some((l) => l.startsWith('run on gpu-a + gpu-b + gpu-c, coordinator address 10.0.0.1: init, split')), r.logs.join('\n'));
});

test('a group entry without commcost.coordinatorAddress: the address is left to discovery', async () => {
  const engine = capturing();
  await runController(requestFor('gpu-a + gpu-b', {}), fakes(engine.fn).deps);
  assert.deepEqual(engine.requests[0]!.moreTargets, ['gpu-b']);
  assert.equal('coordinatorAddress' in engine.requests[0]!, false);
});

test('one host: no moreTargets, no coordinator address even when the setting is set, no slurm', async () => {
  const engine = capturing();
  await runController(requestFor('gpu1', { coordinatorAddress: '10.0.0.1', slurm: { nodes: 2 } }), fakes(engine.fn).deps);
  const req = engine.requests[0]!;
  assert.deepEqual([req.target, req.moreTargets, req.coordinatorAddress, req.slurm], ['gpu1', undefined, undefined, undefined]);
});

test("a slurm: entry: the engine gets slurm.srunArgs equal to srunArgsFor's output for commcost.slurm", async () => {
  const slurm = { partition: 'gpu', account: 'proj1', nodes: 2, gpusPerNode: 4, time: '0:10:00', extraArgs: ['--qos=debug'], srunPath: '/opt/slurm/bin/srun' };
  const engine = capturing();
  const r = fakes(engine.fn);
  await runController(requestFor('slurm:login1', { slurm, coordinatorAddress: '10.0.0.1' }), r.deps);
  const req = engine.requests[0]!;
  assert.equal(req.target, 'login1');
  assert.deepEqual(req.slurm, { srunArgs: srunArgsFor(slurm), srunPath: '/opt/slurm/bin/srun' });
  assert.deepEqual(req.slurm!.srunArgs, ['--nodes=2', '--ntasks-per-node=4', '--gpus-per-node=4', '--partition=gpu', '--account=proj1', '--time=0:10:00', '--qos=debug']);
  assert.equal(req.moreTargets, undefined);
  assert.equal(req.coordinatorAddress, undefined);
  assert.match(r.info[0]!.message, /run on slurm:login1 complete/);
  assert.ok(r.logs.some((l) => l.includes('login1 (Slurm login node: /opt/slurm/bin/srun --nodes=2 ')), r.logs.join('\n'));
});

test('a slurm: entry with the default commcost.slurm: one node, one GPU, srun on PATH', async () => {
  const engine = capturing();
  await runController(requestFor('slurm: login1', {}), fakes(engine.fn).deps);
  assert.deepEqual(engine.requests[0]!.slurm, { srunArgs: ['--nodes=1', '--ntasks-per-node=1', '--gpus-per-node=1'] });
});

test('a group whose engine run fails: the error and the log name the group', async () => {
  const fn: RunMeasurementFn = async () => {
    throw Object.assign(new Error('host gpu-c cannot join the run: connect ECONNREFUSED'), { code: 'HOST_UNREACHABLE', where: { host: 'gpu-c' } });
  };
  const r = fakes(fn);
  await runController(requestFor('gpu-a + gpu-b + gpu-c', {}), r.deps);
  assert.match(r.errors[0]!.message, /gpu-c cannot join the run: connect ECONNREFUSED — where: host gpu-c/);
  assert.ok(r.logs.some((l) => l.startsWith('ERROR run on gpu-a + 2 more failed: HOST_UNREACHABLE')), r.logs.join('\n'));
});
