/**
 * A SIGKILLed `commcost trace --host H` loses nothing the job recorded on H (issue #30, hardening):
 * its records stay in `~/.cache/commcost/trace-<this machine>-<pid>-XXXXXX` on H; the next
 * `trace --host H` leaves them while the job still runs there, then brings them back over the same
 * SSH connection as `<planned trace>.recovered.json` beside where the killed trace was to save, and
 * removes the folder on H. A link or a folder not private to the login user, named like one of ours,
 * is left alone and named. Against the loopback sshd (test/support/sshServer.ts) on the simulated
 * NCCL, with the C example (init, split, destroy); skipped with a visible reason without sshd
 * unless COMMCOST_REQUIRE_SSH=1.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { validateTraceFile } from '../../client/traceSchema';
import { sshdMissingReason, startSshServer, type SshServer } from '../support/sshServer';
import { alive, killGroup, linesOf, startTraceCli, waitFor } from '../support/traceCli';

const root = join(__dirname, '..', '..');
const sim = join(root, 'dist', 'native', 'libnccl-sim.so');
const missing = sshdMissingReason();
if (missing && process.env.COMMCOST_REQUIRE_SSH === '1') test('sshd is required (COMMCOST_REQUIRE_SSH=1)', () => assert.fail(missing));
const skip = missing ? `skipped: ${missing}` : false;
if (missing) process.stderr.write(`trace --host recovery test ${skip}\n`);

let server: SshServer | undefined;
before(async () => {
  if (skip) return;
  execFileSync('flock', ['/tmp/commcost-build.lock', 'node', 'scripts/build.mjs'], { cwd: root, stdio: 'ignore' });
  server = await startSshServer();
});
after(async () => server?.stop());

test('the records a SIGKILLed trace --host left on the host are kept while its job runs there, then brought back by the next trace --host and the remote folder removed', { skip, timeout: 300_000 }, async () => {
  const s = server!;
  const top = mkdtempSync(join(tmpdir(), 'commcost-rtrace-kill-'));
  const exe = join(top, 'lifecycle');
  execFileSync('cc', ['-std=c11', '-O0', '-g', join(root, 'examples', 'trace', 'nccl_lifecycle.c'), '-o', exe, sim, `-Wl,-rpath,${join(root, 'dist', 'native')}`]);
  const [a, b] = ['a', 'b'].map((n) => join(top, n)) as [string, string];
  for (const d of [a, b]) mkdirSync(d);
  const ssh = ['--host', s.alias, '--ssh-config', s.sshConfigPath, '--known-hosts', s.knownHostsPath];
  const env = { SSH_AUTH_SOCK: '', NRANKS: '2', COMMCOST_SIM_CONNECT_MS: '5', COMMCOST_SIM_INIT_MS: '5' };
  const jobPid = join(top, 'job.pid');
  const cache = join(homedir(), '.cache', 'commcost');
  const machine = hostname().replace(/[^\w.-]/g, '_').slice(0, 64);
  // The job records its communicators on the host, then stays (a long training step) when the CLI is killed.
  const first = startTraceCli([...ssh, '--simulate', '--', 'sh', '-c', 'env NRANKS=2 "$1" && echo $$ > "$2" && exec sleep 600', 'sh', exe, jobPid], a, env);
  const ours = () => (existsSync(cache) ? readdirSync(cache).filter((n) => n.startsWith(`trace-${machine}-${first.child.pid}-`)) : []);
  let job = 0;
  const planted: string[] = [];
  try {
    await waitFor(() => linesOf(jobPid).length > 0, 180_000, `the job to record its communicators; stderr: ${first.stderr()}`);
    job = Number(linesOf(jobPid)[0]);
    first.child.kill('SIGKILL');
    await first.exited;
    const left = ours();
    assert.equal(left.length, 1, `the killed trace's folder on the host, named after this machine and the killed pid: ${left.join(', ')}`);
    const folder = join(cache, left[0]!);
    assert.ok(existsSync(join(folder, 'owner.json')), 'the folder says whose trace it was');
    // Named like a folder of the killed trace, but a link, and a folder others can read: never touched.
    const bait = mkdtempSync(join(tmpdir(), 'commcost-bait-'));
    mkdirSync(join(bait, 'records'));
    writeFileSync(join(bait, 'records', 'x-1.jsonl'), '{}\n');
    const link = join(cache, `trace-${machine}-${first.child.pid}-Link00`);
    const wide = join(cache, `trace-${machine}-${first.child.pid}-Wide00`);
    symlinkSync(bait, link);
    mkdirSync(join(wide, 'records'), { recursive: true });
    writeFileSync(join(wide, 'records', 'x-2.jsonl'), '{}\n');
    chmodSync(wide, 0o755);
    planted.push(link, wide, bait);

    // While the job still runs on the host, the next trace --host keeps its records and says so.
    const second = startTraceCli([...ssh, '--', 'true'], b, env);
    assert.equal((await second.ended).code, 0, second.stderr());
    assert.match(second.stderr(), new RegExp(`kept ${s.alias}:\\S*${left[0]}: .*still runs on ${s.alias} as process group ${job}`), second.stderr());
    assert.deepEqual(ours().sort(), [...left, `trace-${machine}-${first.child.pid}-Link00`, `trace-${machine}-${first.child.pid}-Wide00`].sort());

    killGroup(job);
    await waitFor(() => !alive(job), 30_000, 'the job to end');
    const third = startTraceCli([...ssh, '--', 'true'], b, env);
    assert.equal((await third.ended).code, 0, third.stderr());
    const saved = readdirSync(join(a, '.commcost', 'traces')).filter((n) => n.endsWith('.recovered.json'));
    assert.equal(saved.length, 1, `a recovered trace beside where the killed one was to save; stderr: ${third.stderr()}`);
    assert.match(third.stderr(), new RegExp(`its records are saved as .*\\.recovered\\.json \\(from ${s.alias}:\\S*${left[0]}, now removed\\)`), third.stderr());
    const trace = validateTraceFile(JSON.parse(readFileSync(join(a, '.commcost', 'traces', saved[0]!), 'utf8')));
    assert.equal(trace.status, 'partial');
    assert.equal(trace.host, s.alias, 'the trace names the SSH host');
    assert.equal(trace.processes.length, 2);
    assert.deepEqual(trace.sites.map((x) => x.line).filter((l) => l === 72 || l === 74), [72, 74], 'the init and split sites are in it');
    assert.equal(existsSync(folder), false, 'the folder is removed on the host');
    assert.match(third.stderr(), new RegExp(`kept ${s.alias}:\\S*Link00: a symbolic link`), 'the link is named, left alone');
    assert.match(third.stderr(), new RegExp(`kept ${s.alias}:\\S*Wide00: not a private folder`), 'the wide folder is named, left alone');
    assert.ok(existsSync(join(bait, 'records', 'x-1.jsonl')) && existsSync(join(wide, 'records', 'x-2.jsonl')), 'neither was followed nor removed');
  } finally {
    killGroup(first.child.pid!);
    if (job > 0) killGroup(job);
    for (const p of planted) rmSync(p, { recursive: true, force: true });
    for (const n of ours()) rmSync(join(cache, n), { recursive: true, force: true });
  }
});
