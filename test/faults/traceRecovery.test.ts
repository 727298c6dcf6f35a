/**
 * A SIGKILLed `commcost trace` loses nothing the job recorded (hardening issue, item 4): its
 * records stay in this user's private folder (`<tmp>/commcost-<uid>/trace-<pid>-XXXXXX`, 0700); the
 * next trace leaves them alone while the job still runs, then saves them as
 * `<planned trace>.recovered.json` beside where the killed trace was to save, and removes the folder.
 * On the simulated NCCL, with the C example (init, split, destroy).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { validateTraceFile } from '../../client/traceSchema';
import { alive, killGroup, linesOf, startTraceCli, waitFor } from '../support/traceCli';

const root = join(__dirname, '..', '..');
const sim = join(root, 'dist', 'native', 'libnccl-sim.so');

before(() => {
  execFileSync('flock', ['/tmp/commcost-build.lock', 'node', 'native/build.mjs'], { cwd: root, stdio: 'ignore' });
});

test('the records of a SIGKILLed trace are kept while its job runs, then recovered by the next trace and their folder removed', async () => {
  const top = mkdtempSync(join(tmpdir(), 'commcost-trace-kill-'));
  const exe = join(top, 'lifecycle');
  execFileSync('cc', ['-std=c11', '-O0', '-g', join(root, 'examples', 'trace', 'nccl_lifecycle.c'), '-o', exe, sim, `-Wl,-rpath,${join(root, 'dist', 'native')}`]);
  const [a, b, tmp] = ['a', 'b', 'tmp'].map((n) => join(top, n)) as [string, string, string];
  for (const d of [a, b, tmp]) mkdirSync(d);
  const env = { TMPDIR: tmp, NRANKS: '2', COMMCOST_SIM_CONNECT_MS: '5', COMMCOST_SIM_INIT_MS: '5' };
  const jobPid = join(top, 'job.pid');
  // The job records its communicators, then stays (a long training step) when the CLI is killed.
  const first = startTraceCli(['--simulate', '--', 'sh', '-c', '"$1" && echo $$ > "$2" && exec sleep 600', 'sh', exe, jobPid], a, env);
  let job = 0;
  try {
    await waitFor(() => linesOf(jobPid).length > 0, 120_000, 'the job to record its communicators');
    job = Number(linesOf(jobPid)[0]);
    first.child.kill('SIGKILL');
    await first.exited; // not its output's end: the job still holds its stdout
    const privateRoot = join(tmp, `commcost-${process.getuid!()}`);
    assert.ok(existsSync(privateRoot), `the records are in the private folder ${privateRoot}: ${readdirSync(tmp).join(', ')}`);
    assert.equal(statSync(privateRoot).mode & 0o777, 0o700);
    const left = readdirSync(privateRoot);
    assert.deepEqual(left.map((n) => n.replace(/-\w+$/, '-X')), [`trace-${first.child.pid}-X`], 'named after the killed process');
    assert.equal(statSync(join(privateRoot, left[0]!)).mode & 0o777, 0o700);

    // While the job still runs, the next trace keeps its records and says so.
    const second = startTraceCli(['--', 'true'], b, { TMPDIR: tmp });
    assert.equal((await second.ended).code, 0);
    assert.match(second.stderr(), new RegExp(`kept .*trace-${first.child.pid}-.*still runs as process group ${job}`));
    assert.deepEqual(readdirSync(privateRoot), left);

    killGroup(job);
    await waitFor(() => !alive(job), 30_000, 'the job to end');
    const third = startTraceCli(['--', 'true'], b, { TMPDIR: tmp });
    assert.equal((await third.ended).code, 0);
    const saved = readdirSync(join(a, '.commcost', 'traces')).filter((n) => n.endsWith('.recovered.json'));
    assert.equal(saved.length, 1, `a recovered trace beside where the killed one was to save; stderr: ${third.stderr()}`);
    assert.match(third.stderr(), /its records are saved as .*\.recovered\.json/);
    const trace = validateTraceFile(JSON.parse(readFileSync(join(a, '.commcost', 'traces', saved[0]!), 'utf8')));
    assert.equal(trace.status, 'partial');
    assert.equal(trace.processes.length, 2);
    assert.deepEqual(trace.sites.map((s) => s.line).filter((l) => l === 72 || l === 74), [72, 74], 'the init and split sites are in it');
    assert.deepEqual(readdirSync(privateRoot), [], 'the folder is removed');
  } finally {
    killGroup(first.child.pid!);
    if (job > 0) killGroup(job);
  }
});
