// cli/: the summary's escaping and SIMULATED label, flag checks, progress text, saving with a
// fallback; client/runSession.ts: a cancel before the agent's hello, and a stop at once.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { isSimulatedRun, type RunFile } from '../../protocol/runFile';
import { CommcostError } from '../../client/errors';
import { runMeasurement } from '../../client/runSession';
import { buildProgram, checkFlags, pythonFlag, runOptionsFrom, type MeasureFlags } from '../../cli/main';
import { noGpuSentence, saveWithFallback } from '../../cli/measure';
import { iterationLabel, progressLines } from '../../cli/progress';
import { formatSummary, SIMULATED_BANNER, terminalSafe } from '../../cli/summary';
import { cliInvocation, nextStepLines } from '../../cli/nextSteps';

const tmp = () => mkdtempSync(join(tmpdir(), 'commcost-cli-'));
const sample = (): RunFile => JSON.parse(readFileSync(join(__dirname, '..', '..', 'docs', 'results', 'h200x2-nccl2.28.9-wheel.json'), 'utf8')) as RunFile;

// eslint-disable-next-line no-control-regex -- looking for control characters is the point
const CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f]/;

describe('isSimulatedRun: any mark is enough', () => {
  const stamp = sample().stamp!;
  const cases: [string, Parameters<typeof isSimulatedRun>[0], boolean][] = [
    ['measured', { simulated: false, stamp }, false],
    ['top-level flag', { simulated: true, stamp }, true],
    ['stamp flag', { simulated: false, stamp: { ...stamp, simulated: true } }, true],
    ['stamp source', { simulated: false, stamp: { ...stamp, ncclSource: 'simulated' } }, true],
    ['stamp path', { simulated: false, stamp: { ...stamp, ncclPath: '/opt/commcost/dist/native/libnccl-sim.so' } }, true],
    ['legacy simulated library', { simulated: false, stamp: { ...stamp, ncclPath: '/x/libnccl-sim-legacy.so' } }, true],
    ['a real library with sim in its folder', { simulated: false, stamp: { ...stamp, ncclPath: '/opt/libnccl-sim/libnccl.so.2' } }, false],
    ['no stamp', { simulated: false }, false],
    ['junk', { simulated: 'yes', stamp: null }, false],
    ['undefined', undefined, false],
  ];
  for (const [what, run, expected] of cases) test(what, () => assert.equal(isSimulatedRun(run), expected));
});

describe('summary', () => {
  test('strings from a run file cannot reach the terminal as escape sequences', () => {
    const run = sample();
    const esc = '\x1b[2J\x1b]0;pwned\x07\x9b31m';
    run.host = `gpu${esc}`;
    run.stamp!.hostname = `h${esc}`;
    run.stamp!.gpus[0]!.name = `H200${esc}`;
    run.stamp!.ncclPath = `/lib${esc}/libnccl.so.2`;
    const step = run.experiments[0]!.variants[0]!.steps[0]!;
    step.label = `ncclCommInitRankConfig${esc}`;
    run.experiments[0]!.variants[0]!.variant = `v${esc}`;
    run.experiments[0]!.variants[0]!.memoryBytes = { [`after${esc}`]: 1 << 20 };
    run.skipped = [{ experiment: 'split', reason: `no${esc}\nsecond line` }];
    run.errors = [{ code: `X${esc}` as never, message: `m${esc}`, detail: `d${esc}`, hint: `h${esc}`, where: { host: `w${esc}` }, fatal: false }];
    const text = formatSummary(run);
    assert.doesNotMatch(text, CONTROL, 'no control character but newline');
    assert.ok(text.includes('gpu\\x1b[2J\\x1b]0;pwned\\x07\\u009b31m'), 'shown escaped');
    assert.ok(text.includes('no\\x1b[2J\\x1b]0;pwned\\x07\\u009b31m\\nsecond line'), 'a newline from data is escaped too');
  });

  test('a run where every experiment was skipped says that nothing was measured', () => {
    const run = sample();
    run.experiments = [];
    run.skipped = [{ experiment: 'grow', reason: 'needs NCCL ≥ 2.29.2, host has 2.28.9' }];
    run.errors = [];
    assert.match(formatSummary(run), /^skipped grow: needs NCCL ≥ 2\.29\.2, host has 2\.28\.9\nnothing was measured: every experiment asked for was skipped on this host \(reasons above\)$/m);
    assert.doesNotMatch(formatSummary(sample()), /nothing was measured/, 'not when something was');
  });

  test('terminalSafe keeps ordinary text', () => {
    assert.equal(terminalSafe('init default · call: 1.5 ms — ≥ µ'), 'init default · call: 1.5 ms — ≥ µ');
    assert.equal(terminalSafe('a\tb\r\n'), 'a\\tb\\r\\n');
  });

  for (const [what, over] of [
    ['stamp.simulated', (r: RunFile) => (r.stamp!.simulated = true)],
    ['stamp.ncclSource', (r: RunFile) => (r.stamp!.ncclSource = 'simulated')],
    ['the NCCL path', (r: RunFile) => (r.stamp!.ncclPath = '/x/dist/native/libnccl-sim.so')],
  ] as const) {
    test(`SIMULATED banner (top, bottom), name and header when only ${what} says so`, () => {
      const run = sample();
      assert.equal(run.simulated, false);
      over(run);
      const lines = formatSummary(run).trimEnd().split('\n');
      assert.equal(lines[0], `*** ${SIMULATED_BANNER} ***`);
      assert.equal(lines.at(-1), `*** ${SIMULATED_BANNER} ***`);
      // The run's name: SIMULATED and its ranks, never the GPU model its stamp lists.
      assert.match(lines[1]!, new RegExp(`^SIMULATED · ${run.ranks} ranks? · NCCL `));
      assert.doesNotMatch(lines[1]!, /H200/);
      assert.match(lines[2]!, /SIMULATED NCCL$/);
    });
  }

  test('a measured run has no SIMULATED anywhere', () => assert.doesNotMatch(formatSummary(sample()), /SIMULATED/));
});

describe('flags', () => {
  const flags = (over: Partial<MeasureFlags>): MeasureFlags => ({ host: 'localhost', experiments: ['init'], iterations: 10, warmup: 1, deadline: 60, saveDir: 'x', ...over });
  const badInput = (fn: () => unknown, code: string, re: RegExp) =>
    assert.throws(fn, (e: unknown) => e instanceof CommcostError && e.code === code && re.test(e.message));

  test('--nccl with --simulate is a conflict', () => badInput(() => checkFlags(flags({ nccl: '/nonexistent', simulate: true })), 'BAD_INPUT', /--nccl and --simulate conflict/));
  test('a host name with shell characters is refused up front', () => badInput(() => checkFlags(flags({ host: 'a;b' })), 'BAD_TARGET', /shell character ";"/));
  test('--node on localhost warns; on a remote host it does not', () => {
    assert.match(checkFlags(flags({ node: '/opt/node' })).join('\n'), /--node is only used for remote hosts/);
    assert.deepEqual(checkFlags(flags({ host: 'gpu1', node: '/opt/node' })), []);
  });
  test('more local ranks than CPUs warns', () => {
    assert.match(checkFlags(flags({ ranks: 99, simulate: true }), 2).join('\n'), /--ranks 99 is more than the 2 CPUs of this machine.*CPU contention/);
    assert.deepEqual(checkFlags(flags({ ranks: 2, simulate: true }), 2), []);
    assert.deepEqual(checkFlags(flags({ host: 'gpu1', ranks: 8 }), 2), [], 'a remote host has its own CPUs');
  });
  const multiNode: [string, Partial<MeasureFlags>, string, RegExp][] = [
    ['the same host twice', { host: 'gpu1', moreHosts: ['gpu2', 'gpu1'] }, 'BAD_INPUT', /--host gpu1 is given twice/],
    ['a hostile name among several hosts', { host: 'gpu1', moreHosts: ['gpu2;rm'] }, 'BAD_TARGET', /shell character ";"/],
    ['--slurm with several hosts', { host: 'login1', moreHosts: ['login2'], slurm: true }, 'BAD_INPUT', /--slurm takes one --host/],
    ['--slurm on localhost', { slurm: true }, 'BAD_INPUT', /--slurm needs --host <login node>/],
    ['Slurm options without --slurm', { host: 'login1', partition: 'gpu', gpusPerNode: 4 }, 'BAD_INPUT', /--partition, --gpus-per-node only apply with --slurm/],
    ['one Slurm option without --slurm', { host: 'login1', time: '0:05:00' }, 'BAD_INPUT', /--time only applies with --slurm/],
    ['a partition with a shell character', { host: 'login1', slurm: true, partition: 'gpu;x' }, 'BAD_INPUT', /--partition "gpu;x" is not a Slurm name/],
    ['an srun option that changes the task layout', { host: 'login1', slurm: true, srunArg: ['--ntasks=3'] }, 'BAD_INPUT', /changes the task layout/],
    ['a time limit srun does not take', { host: 'login1', slurm: true, time: 'soon' }, 'BAD_INPUT', /--time "soon" is not a Slurm time limit/],
    ['--coordinator-address with one host', { host: 'gpu1', coordinatorAddress: '10.0.0.1' }, 'BAD_INPUT', /--coordinator-address only applies to a run over several hosts/],
  ];
  for (const [what, over, code, re] of multiNode) test(`clear error: ${what}`, () => badInput(() => checkFlags(flags(over)), code, re));
  test('--python <path> reaches the run options as python; without it there is none', async () => {
    const program = buildProgram(() => undefined);
    let parsed: MeasureFlags | undefined;
    program.commands.find((c) => c.name() === 'measure')!.action((f: Omit<MeasureFlags, 'host'>) => {
      parsed = { ...f, host: 'localhost' };
    });
    await program.parseAsync(['node', 'commcost', 'measure', '--python', '/opt/conda/envs/torch/bin/python', '--nccl', '/opt/nccl/libnccl.so.2']);
    assert.equal(parsed?.python, '/opt/conda/envs/torch/bin/python');
    const o = runOptionsFrom(parsed!);
    assert.deepEqual([o.python, o.ncclPath], ['/opt/conda/envs/torch/bin/python', '/opt/nccl/libnccl.so.2']);
    assert.equal('python' in runOptionsFrom(flags({})), false, 'no --python: the agent decides (COMMCOST_PYTHON, else python3)');
    assert.deepEqual(checkFlags(flags({ python: '/opt/conda/envs/torch/bin/python' })), [], 'no warning');
  });
  test('--python that the agent would refuse is refused up front, naming the flag', () => {
    badInput(() => pythonFlag('/opt/py\n/bin/python3'), 'BAD_INPUT', /^--python "\/opt\/py\\n\/bin\/python3" contains a line break$/);
    badInput(() => pythonFlag(''), 'BAD_INPUT', /^--python "" is empty$/);
    badInput(() => pythonFlag(`/${'p'.repeat(4096)}`), 'BAD_INPUT', /^--python "\/p{79}"… is 4097 characters long \(at most 4096\)$/);
    assert.equal(pythonFlag('python3.12'), 'python3.12');
  });
  test('several hosts and a Slurm login node pass the checks', () => {
    assert.deepEqual(checkFlags(flags({ host: 'gpu1', moreHosts: ['gpu2', 'gpu3'], coordinatorAddress: '10.0.0.1' })), []);
    assert.deepEqual(checkFlags(flags({ host: 'login1', slurm: true, partition: 'gpu', account: 'proj', slurmNodes: 2, gpusPerNode: 4, time: '0:10:00', srunArg: ['--qos=debug'] })), []);
  });
});

describe('progress text', () => {
  test('iterations say what counts as warmup', () => {
    assert.equal(iterationLabel({ done: 1, total: 4 }, { iterations: 3, warmup: 1 }), 'iteration 1/4 (1 warmup)');
    assert.equal(iterationLabel({ done: 3, total: 3 }, { iterations: 3, warmup: 0 }), 'iteration 3/3');
    assert.equal(iterationLabel({ done: 5, total: 8 }, { iterations: 3, warmup: 1 }), 'iteration 5/8 (2 variants × 4, 1 warmup each)');
  });
  test('plain lines: one per finished or stopped experiment, once', () => {
    const lines: string[] = [];
    const p = progressLines((l) => lines.push(l));
    const run = sample();
    run.experiments = run.experiments.slice(0, 2).map((e) => ({ ...e, state: 'running' as const }));
    p.update(run);
    assert.deepEqual(lines, []);
    run.experiments[0] = { ...run.experiments[0]!, state: 'finished' };
    p.update(run);
    p.update(run);
    run.experiments[1] = { ...run.experiments[1]!, state: 'stopped' };
    p.update(run);
    assert.equal(lines.length, 2, lines.join('\n'));
    assert.match(lines[0]!, /^commcost: init \(1\/2\) finished: iteration \d+\/\d+/);
    assert.match(lines[1]!, /\(2\/2\) stopped/);
  });
});

describe('what measure says last', () => {
  const facts = { cli: 'node bin/commcost.js', saved: ['.commcost/runs/20261202-053000-localhost.json'], simulated: true, version: '0.1.0' };
  test('after a simulated run: the report command and where it writes, the extension, a GPU host to measure', () => {
    const lines = nextStepLines(facts);
    assert.equal(lines[1], 'next:');
    assert.ok(lines.includes('  open the report:   node bin/commcost.js report .commcost/runs/20261202-053000-localhost.json --html   (writes .commcost/runs/20261202-053000-localhost.html)'), lines.join('\n'));
    assert.ok(lines.some((l) => l.includes('code --install-extension commcost-0.1.0.vsix')));
    assert.ok(lines.some((l) => l.startsWith('  measure a GPU host: node bin/commcost.js measure --host user@gpu-host') && l.includes('simulated')), lines.join('\n'));
  });
  test('after a measured run: another host; with --html: the page itself; several runs: the comparison page', () => {
    assert.ok(nextStepLines({ ...facts, simulated: false }).some((l) => l.startsWith('  measure another host: ')));
    assert.ok(nextStepLines({ ...facts, html: '/tmp/r.html' }).includes('  open the report:   /tmp/r.html'));
    const two = nextStepLines({ ...facts, saved: ['a.json', 'b c.json'] });
    assert.ok(two.includes("  open the report:   node bin/commcost.js report a.json 'b c.json' --html   (writes b c.compare.html)"), two.join('\n'));
    assert.deepEqual(nextStepLines({ ...facts, saved: [] }), [], 'nothing saved: nothing to open');
    assert.ok(!nextStepLines({ ...facts, saved: ['x\u001b[2J.json'] }).join('').includes('\u001b'));
  });
  test('the CLI as the user ran it', () => {
    assert.equal(cliInvocation('/repo/bin/commcost.js', '/repo'), 'node bin/commcost.js');
    assert.equal(cliInvocation('/usr/lib/node_modules/commcost/bin/commcost.js', '/home/me'), 'node /usr/lib/node_modules/commcost/bin/commcost.js');
    assert.equal(cliInvocation('/usr/local/bin/commcost', '/home/me'), 'commcost');
  });
});

test('the one no-GPU sentence', () => {
  assert.equal(
    noGpuSentence('localhost', { message: 'no NVIDIA GPU driver on vm: /dev/nvidiactl and libcuda.so.1 not found' }),
    'no NVIDIA GPU driver on localhost (vm): /dev/nvidiactl and libcuda.so.1 not found',
  );
  assert.equal(noGpuSentence('gpu1', { message: 'no NVIDIA GPU driver on gpu1: x' }), 'no NVIDIA GPU driver on gpu1: x');
});

test('a save that fails goes to the fallback folder, and past that to stderr: nothing is lost', async () => {
  const dir = tmp();
  writeFileSync(join(dir, 'afile'), '');
  const run = sample();
  let said = '';
  mkdirSync(join(dir, 'fallback'));
  const saved = await saveWithFallback(join(dir, 'afile'), run, (t) => (said += t), join(dir, 'fallback'));
  assert.equal(saved.asked, false);
  // In a new private folder of the fallback's parent (mkdtemp, 0700), never a fixed name.
  assert.match(saved.path ?? '', new RegExp(`^${join(dir, 'fallback').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/commcost-runs-[^/]{6}/${run.id}\\.json$`));
  assert.equal(statSync(dirname(saved.path!)).mode & 0o777, 0o700);
  assert.deepEqual(JSON.parse(readFileSync(saved.path!, 'utf8')), run);
  assert.match(said, /cannot save the run: .*afile is a file, not a folder/);
  assert.match(said, /saved the run in the OS temp folder instead: /);
  said = '';
  const nowhere = await saveWithFallback(join(dir, 'afile'), run, (t) => (said += t), join(dir, 'afile', 'x'));
  assert.equal(nowhere.path, undefined);
  assert.ok(said.includes(JSON.stringify(run)), 'the run JSON is written out');
  const ok = await saveWithFallback(join(dir, 'runs'), run, (t) => (said += t), join(dir, 'unused'));
  assert.deepEqual([ok.asked, existsSync(join(dir, 'unused'))], [true, false]);
});

describe('cancel in runMeasurement', () => {
  /** A fake agent.js in its own folder; it writes its pid and every command it gets to files there. */
  function fakeAgent(body: string): string {
    const dir = tmp();
    mkdirSync(join(dir, 'native'));
    writeFileSync(
      join(dir, 'agent.js'),
      `'use strict';
const fs = require('fs');
const path = require('path');
fs.writeFileSync(path.join(__dirname, 'pid'), String(process.pid));
const out = (ev) => process.stdout.write(JSON.stringify(ev) + '\\n');
const hello = () => out({ type: 'agent/hello', protocolVersion: 1, agentVersion: 'fake', pid: process.pid });
process.stdin.on('data', (d) => fs.appendFileSync(path.join(__dirname, 'commands'), d));
${body}
`,
    );
    return dir;
  }
  const options = { experiments: ['init' as const], iterations: 3, warmup: 1, deadlineSeconds: 60, simulate: true };
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const commands = (dir: string) => (existsSync(join(dir, 'commands')) ? readFileSync(join(dir, 'commands'), 'utf8') : '');

  test('already cancelled: nothing is started, the run is partial', async () => {
    const dir = fakeAgent('hello();');
    const c = new AbortController();
    c.abort();
    const run = await runMeasurement({ target: 'localhost', options, agentDir: dir }, { onRun: () => undefined, onLog: () => undefined }, c.signal);
    assert.equal(run.status, 'partial');
    assert.ok(!existsSync(join(dir, 'pid')), 'no agent was started');
  });

  test('a cancel before the hello: run/start is never sent, the agent is gone, the run is partial', async () => {
    // The agent says hello 400 ms after it starts and stays until stdin closes.
    const dir = fakeAgent(`setTimeout(hello, 400);
process.stdin.on('end', () => process.exit(0));`);
    const c = new AbortController();
    // Timed from the cancel itself, not from the call: the agent's start-up (slow on a loaded
    // machine) is no part of what is checked.
    let cancelledAt = 0;
    setTimeout(() => ((cancelledAt = Date.now()), c.abort()), 50);
    const run = await runMeasurement({ target: 'localhost', options, agentDir: dir }, { onRun: () => undefined, onLog: () => undefined }, c.signal);
    assert.equal(run.status, 'partial');
    assert.ok(cancelledAt > 0 && Date.now() - cancelledAt < 4000, `ended promptly after the cancel (${Date.now() - cancelledAt} ms)`);
    await new Promise((r) => setTimeout(r, 500)); // past the hello, had the agent lived
    assert.doesNotMatch(commands(dir), /run\/start/);
    assert.equal(alive(Number(readFileSync(join(dir, 'pid'), 'utf8'))), false);
  });

  test('a stop at once does not wait for an agent that ignores cancel and EOF', async () => {
    const dir = fakeAgent(`hello();
process.stdin.on('end', () => undefined);
setInterval(() => undefined, 1000);`);
    const c = new AbortController();
    const hard = new AbortController();
    let pid = 0;
    let hardAt = 0;
    const running = runMeasurement(
      { target: 'localhost', options, agentDir: dir },
      {
        onRun: () => undefined,
        onLog: () => undefined,
        onEvent: (ev) => {
          if (ev.type === 'agent/hello') {
            pid = ev.pid;
            setTimeout(() => c.abort(), 50);
            setTimeout(() => ((hardAt = Date.now()), hard.abort()), 250);
          }
        },
      },
      c.signal,
      hard.signal,
    );
    const run = await running;
    assert.equal(run.status, 'partial');
    // Timed from the stop at once (200 ms after the cancel, whose grace is 5 s), not from the call:
    // the agent's start-up on a loaded machine is no part of what is checked.
    assert.ok(hardAt > 0 && Date.now() - hardAt < 3000, `did not wait for the 5 s grace (${Date.now() - hardAt} ms after the stop)`);
    assert.match(commands(dir), /run\/start[\s\S]*run\/cancel/);
    assert.ok(pid > 0);
    assert.equal(alive(pid), false, 'the agent was killed');
    assert.deepEqual(readdirSync(dir).sort(), ['agent.js', 'commands', 'native', 'pid']);
  });
});
