/**
 * `node agent.js rank` under each launcher's variable set, several processes on this machine,
 * on the simulated NCCL: Slurm through a stand-in `srun` (test/support/bin/srun, which sets the
 * task variables the way the real one does), torchrun's and Open MPI's variables set directly.
 * Rank 0 coordinates and writes the run on its stdout and to a file; the other ranks write
 * nothing on stdout; nothing is left behind. Then the failures a user meets: a rank that never
 * starts, a process of another job (wrong token), and a launcher's SIGTERM mid-run.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import { parseAgentEvent, type AgentEvent } from '../../protocol/events';
import { loadRun } from '../../client/resultsStore';
import { NOT_BUILT, privateAgentCopy, processesMatching, repoRoot, waitGone } from '../support/agentHarness';
import { freePort } from '../support/sshServer';

const SIM = { COMMCOST_SIM_INIT_MS: '10', COMMCOST_SIM_CONNECT_MS: '15', COMMCOST_SIM_SPLIT_MS: '5', COMMCOST_SIM_CUINIT_MS: '10' };
const FAKE_BIN = path.join(repoRoot, 'test/support/bin');
const dirs: string[] = [];
after(() => {
  for (const d of dirs) {
    for (const pid of processesMatching(d)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    fs.rmSync(d, { recursive: true, force: true });
  }
});

interface Proc {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  exit: Promise<number | null>;
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Proc {
  const child = spawn(cmd, args, { cwd, env: { PATH: `${FAKE_BIN}:${process.env.PATH}`, HOME: process.env.HOME, ...SIM, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const p: Proc = { child, stdout: '', stderr: '', exit: new Promise((r) => child.on('close', (code) => r(code))) };
  child.stdout!.on('data', (d: Buffer) => (p.stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (p.stderr += d.toString()));
  return p;
}

const events = (text: string): AgentEvent[] => text.split('\n').filter((l) => l.trim()).map((l) => parseAgentEvent(l));

function setup(): { dir: string; agent: string } {
  const dir = privateAgentCopy();
  dirs.push(dir);
  return { dir, agent: path.join(dir, 'agent.js') };
}

/** Checks a completed launched run: plan with `n` ranks on this one host, both experiments summarised, the file equal to stdout. */
function assertComplete(rank0: Proc, dir: string, n: number, label: string): void {
  const evs = events(rank0.stdout);
  const plan = evs.find((e) => e.type === 'run/plan');
  assert.ok(plan && plan.type === 'run/plan', `${label}: no plan; stderr: ${rank0.stderr.slice(-800)}`);
  assert.equal(plan.ranks, n);
  // Processes on one host are one node of the run.
  assert.deepEqual(plan.nodes?.map((x) => x.ranks), [[...Array(n).keys()]]);
  assert.equal(plan.simulated, true);
  const summaries = evs.filter((e) => e.type === 'experiment/summary').map((e) => (e.type === 'experiment/summary' ? e.experiment : ''));
  assert.deepEqual(summaries, ['init', 'split']);
  const done = evs.at(-1);
  assert.ok(done?.type === 'run/done' && done.status === 'complete', `${label}: last event ${JSON.stringify(done)}; stderr: ${rank0.stderr.slice(-800)}`);
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl'));
  assert.equal(files.length, 1, `${label}: one run file in the working folder, got ${files.join(', ')}`);
  assert.equal(fs.readFileSync(path.join(dir, files[0]!), 'utf8'), rank0.stdout, `${label}: the file holds the same lines as stdout`);
}

const ARGS = ['rank', '--simulate', '--experiments', 'init,split', '--iterations', '2', '--warmup', '0', '--deadline', '20'];

describe('launchers', { skip: NOT_BUILT }, () => {
  test('Slurm: srun -n 3 node agent.js rank: rank 0 streams the run and writes it to a file; exit 0; nothing left', async () => {
    const { dir, agent } = setup();
    const port = await freePort();
    const log = path.join(dir, 'srun.log');
    const p = run('srun', ['--partition=gpu', '--account=proj', '-n', '3', process.execPath, agent, ...ARGS], { COMMCOST_PORT: String(port), FAKE_SRUN_LOG: log }, dir);
    assert.equal(await p.exit, 0, p.stderr.slice(-1500));
    // srun merges every task's stdout: only rank 0 wrote to it, and only protocol lines.
    assertComplete(p, dir, 3, 'srun');
    assert.match(p.stderr, /rank 0 of 3 \(slurm\), coordinator localhost:\d+ \(COMMCOST_PORT\)/);
    assert.deepEqual(await waitGone(dir), []);

    // The file rank 0 wrote is a run: `commcost report run.jsonl` reads it like a saved run.
    const file = path.join(dir, fs.readdirSync(dir).find((f) => f.endsWith('.jsonl'))!);
    const saved = await loadRun(file);
    assert.deepEqual([saved.status, saved.ranks, saved.simulated, saved.nodes?.length], ['complete', 3, true, 1]);
    assert.deepEqual(saved.experiments.map((e) => [e.experiment, e.state]), [['init', 'finished'], ['split', 'finished']]);
    // A job killed before the end leaves a stream without run/done: partial, with the reason.
    const cut = path.join(dir, 'cut.jsonl');
    const lines = fs.readFileSync(file, 'utf8').trimEnd().split('\n');
    fs.writeFileSync(cut, lines.slice(0, -1).join('\n') + '\n');
    const partial = await loadRun(cut);
    assert.equal(partial.status, 'partial');
    assert.match(partial.errors.at(-1)!.message, /ends without run\/done/);
    // A damaged line is named by its number.
    fs.writeFileSync(cut, `${lines[0]}\n{"type":"run/nonsense"}\n`);
    await assert.rejects(loadRun(cut), /cut\.jsonl: line 2: agent sent an unknown message/);
  });

  for (const kind of ['torchrun', 'mpi'] as const) {
    test(`${kind} variables: 3 processes, rank 0 coordinates, the others print nothing on stdout`, async () => {
      const { dir, agent } = setup();
      const port = await freePort();
      const envOf = (r: number): NodeJS.ProcessEnv =>
        kind === 'torchrun'
          ? // torchrun's store holds MASTER_PORT; commcost takes the next one.
            { RANK: String(r), WORLD_SIZE: '3', LOCAL_RANK: String(r), LOCAL_WORLD_SIZE: '3', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port - 1), TORCHELASTIC_RUN_ID: 'tr1' }
          : { OMPI_COMM_WORLD_RANK: String(r), OMPI_COMM_WORLD_SIZE: '3', OMPI_COMM_WORLD_LOCAL_RANK: String(r), OMPI_COMM_WORLD_LOCAL_SIZE: '3', COMMCOST_PORT: String(port) };
      // Ranks start in any order: the last first.
      const procs = [2, 1, 0].map((r) => run(process.execPath, [agent, ...ARGS], envOf(r), dir)).reverse();
      const codes = await Promise.all(procs.map((p) => p.exit));
      assert.deepEqual(codes, [0, 0, 0], procs.map((p) => p.stderr.slice(-600)).join('\n---\n'));
      assertComplete(procs[0]!, dir, 3, kind);
      assert.equal(procs[1]!.stdout + procs[2]!.stdout, '');
      assert.match(procs[2]!.stderr, new RegExp(`rank 2 joined the coordinator at 127.0.0.1:${port}`));
      assert.deepEqual(await waitGone(dir), []);
    });
  }

  test('launched processes on two hosts (UTS namespaces with their own host names): two nodes; split also intra-node and inter-node', { skip: process.getuid?.() === 0 && fs.existsSync('/usr/bin/unshare') ? false : 'needs root and unshare (util-linux)' }, async () => {
    const { dir, agent } = setup();
    const port = await freePort();
    // Each process gets its own UTS namespace named after its "host": ranks 0,1 on hostA, 2,3 on hostB.
    const procs = [0, 1, 2, 3].map((r) =>
      run('unshare', ['--uts', 'sh', '-c', `hostname host${r < 2 ? 'A' : 'B'} && exec "$0" "$@"`, process.execPath, agent, ...ARGS.slice(0, 3), 'split', ...ARGS.slice(4)], { COMMCOST_RANK: String(r), COMMCOST_WORLD_SIZE: '4', COMMCOST_LOCAL_RANK: String(r % 2), COMMCOST_PORT: String(port), COMMCOST_TOKEN: 'two-hosts' }, dir),
    );
    const codes = await Promise.all(procs.map((p) => p.exit));
    assert.deepEqual(codes, [0, 0, 0, 0], procs.map((p) => p.stderr.slice(-500)).join('\n---\n'));
    const evs = events(procs[0]!.stdout);
    const plan = evs.find((e) => e.type === 'run/plan');
    assert.ok(plan?.type === 'run/plan');
    assert.deepEqual(plan.nodes?.map((n) => [n.hostname, n.ranks]), [['hostA', [0, 1]], ['hostB', [2, 3]]]);
    const split = plan.experiments.find((e) => e.experiment === 'split')!;
    assert.deepEqual(split.variants.map((v) => v.variant.split('/')[0]).filter((v, i, a) => a.indexOf(v) === i), ['halves', 'whole', 'intra-node', 'inter-node']);
    assert.ok(evs.at(-1)?.type === 'run/done' && (evs.at(-1) as { status: string }).status === 'complete');
    assert.deepEqual(await waitGone(dir), []);
  });

  test('a rank that never starts: rank 0 says how many joined, within the deadline; run failed; nothing left', async () => {
    const { dir, agent } = setup();
    const port = await freePort();
    const env = (r: number) => ({ COMMCOST_RANK: String(r), COMMCOST_WORLD_SIZE: '3', COMMCOST_PORT: String(port) });
    const started = Date.now();
    const procs = [0, 1].map((r) => run(process.execPath, [agent, 'rank', '--simulate', '--experiments', 'init', '--deadline', '3'], env(r), dir));
    const codes = await Promise.all(procs.map((p) => p.exit));
    const took = Date.now() - started;
    assert.equal(codes[0], 1);
    const evs = events(procs[0]!.stdout);
    const error = evs.find((e) => e.type === 'run/error');
    assert.ok(error?.type === 'run/error' && error.code === 'NODE_UNREACHABLE', JSON.stringify(evs.slice(-3)));
    assert.match(error.message, /2 of 3 nodes joined within 8 s/);
    assert.match(error.hint ?? '', /COMMCOST_COORDINATOR_ADDR/);
    assert.ok(evs.at(-1)?.type === 'run/done' && (evs.at(-1) as { status: string }).status === 'failed');
    assert.ok(took < 15_000, `ended after ${took} ms`);
    assert.deepEqual(await waitGone(dir), []);
  });

  test('a process of another job (another token): neither side trusts the other; no token is sent or logged', async () => {
    const { dir, agent } = setup();
    const port = await freePort();
    const env = (r: number, token: string) => ({ COMMCOST_RANK: String(r), COMMCOST_WORLD_SIZE: '2', COMMCOST_PORT: String(port), COMMCOST_TOKEN: token });
    const rank0 = run(process.execPath, [agent, 'rank', '--simulate', '--experiments', 'init', '--deadline', '3'], env(0, 'job-a'), dir);
    const stranger = run(process.execPath, [agent, 'rank', '--simulate', '--experiments', 'init', '--deadline', '3'], env(1, 'job-b'), dir);
    // Neither side sends its token: the stranger finds that the listener cannot prove it knows
    // its token, and leaves before anything is started for it.
    assert.equal(await stranger.exit, 1);
    assert.match(stranger.stderr, /the listener at 127\.0\.0\.1:\d+ does not know this run's token/);
    assert.equal(await rank0.exit, 1);
    assert.doesNotMatch(rank0.stderr + stranger.stderr, /job-a|job-b/, 'no token appears in any log');
    assert.deepEqual(await waitGone(dir), []);
  });

  test('processes given different world sizes: refused with both sizes named, rank 0 fails at once', async () => {
    const { dir, agent } = setup();
    const port = await freePort();
    const started = Date.now();
    const rank0 = run(process.execPath, [agent, 'rank', '--simulate', '--experiments', 'init', '--deadline', '20'], { COMMCOST_RANK: '0', COMMCOST_WORLD_SIZE: '2', COMMCOST_PORT: String(port) }, dir);
    const rank1 = run(process.execPath, [agent, 'rank', '--simulate', '--experiments', 'init', '--deadline', '20'], { COMMCOST_RANK: '1', COMMCOST_WORLD_SIZE: '3', COMMCOST_PORT: String(port) }, dir);
    assert.deepEqual(await Promise.all([rank0.exit, rank1.exit]), [1, 1]);
    assert.match(rank1.stderr, /refused this node: rank 1 was started with a world size of 3, rank 0 with 2/);
    const error = events(rank0.stdout).find((e) => e.type === 'run/error');
    assert.ok(error?.type === 'run/error' && /world size of 3, rank 0 with 2/.test(error.message), JSON.stringify(error));
    assert.ok(Date.now() - started < 15_000, 'no wait for the 20 s deadline');
    assert.deepEqual(await waitGone(dir), []);
  });

  test('two processes given the same rank: the second is refused, naming the first one\'s address', async () => {
    const { dir, agent } = setup();
    const port = await freePort();
    const env = (r: number) => ({ COMMCOST_RANK: String(r), COMMCOST_WORLD_SIZE: '3', COMMCOST_PORT: String(port) });
    const args = [agent, 'rank', '--simulate', '--experiments', 'init', '--deadline', '3'];
    const rank0 = run(process.execPath, args, env(0), dir);
    const first = run(process.execPath, args, env(1), dir);
    // The twin starts once rank 0 has logged the first one's join (up to 20 s), not after a fixed
    // 1.5 s: on a loaded machine the twin could join first and the other one be refused.
    for (const until = Date.now() + 20_000; !/\(rank 1\)/.test(rank0.stderr) && Date.now() < until; ) await new Promise((r) => setTimeout(r, 50));
    assert.match(rank0.stderr, /node \d+: .* \(rank 1\)/, 'rank 1 joined');
    const twin = run(process.execPath, args, env(1), dir);
    assert.equal(await twin.exit, 1);
    assert.match(twin.stderr, /refused this node: rank 1 has already joined from 127\.0\.0\.1/);
    await Promise.all([rank0.exit, first.exit]);
    assert.deepEqual(await waitGone(dir), []);
  });

  test('the launcher\'s SIGTERM mid-run (scancel): the run ends partial with what was measured; nothing left', async () => {
    const { dir, agent } = setup();
    const port = await freePort();
    const p = run('srun', ['-n', '2', process.execPath, agent, 'rank', '--simulate', '--experiments', 'init,split', '--iterations', '200', '--warmup', '0'], { COMMCOST_PORT: String(port) }, dir);
    // Wait for the first recorded sample, then cancel the job step.
    const until = Date.now() + 20_000;
    while (!p.stdout.includes('"run/sample"') && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    assert.ok(p.stdout.includes('"run/sample"'), p.stderr.slice(-1000));
    p.child.kill('SIGTERM');
    await p.exit;
    const evs = events(p.stdout);
    const done = evs.at(-1);
    assert.ok(done?.type === 'run/done' && done.status === 'partial', JSON.stringify(done));
    assert.ok(evs.some((e) => e.type === 'run/sample' && !e.warmup));
    assert.deepEqual(await waitGone(dir), []);
  });
});
