// commcost trace --host against a real OpenSSH server on loopback (test/support/sshServer.ts),
// on the simulated NCCL: the payload deployed by content hash (a second trace uploads nothing),
// the job run in the remote folder with the trace variables, its output streamed, the records
// downloaded and merged here (sites with file:line, creation < first collective < teardown), the
// trace's host the SSH host; the command not found, a missing folder, the deadline (the job's
// whole process group stopped, a partial trace kept). Skipped with a visible reason without sshd
// unless COMMCOST_REQUIRE_SSH=1.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { CommcostError } from '../../client/errors';
import { runRemoteTrace, type RemoteTraceOptions, type RemoteTraceResult } from '../../client/trace/remote';
import { validateTraceFile } from '../../client/traceSchema';
import type { TraceFile } from '../../protocol/trace';
import { sshdMissingReason, startSshServer, type SshServer } from '../support/sshServer';

const root = join(__dirname, '..', '..');
const sim = join(root, 'dist', 'native', 'libnccl-sim.so');
const missing = sshdMissingReason();
if (missing && process.env.COMMCOST_REQUIRE_SSH === '1') test('sshd is required (COMMCOST_REQUIRE_SSH=1)', () => assert.fail(missing));
const skip = missing ? `skipped: ${missing}` : false;
if (missing) process.stderr.write(`trace --host tests ${skip}\n`);

function inOrder(t: TraceFile, line: number): void {
  const s = t.sites.find((x) => x.line === line);
  assert.ok(s, `a site at line ${line}: ${t.sites.map((x) => `${x.file}:${x.line}`).join(', ')}`);
  const at = s.occurrences[0]!.at;
  assert.ok(at.creation !== null && at.firstCollective !== null && at.teardown !== null, JSON.stringify(at));
  assert.ok(at.creation < at.firstCollective && at.firstCollective < at.teardown, `line ${line}: ${JSON.stringify(at)}`);
}

describe('commcost trace --host', { skip }, () => {
  let server: SshServer;
  let exe: string;
  const logs: string[] = [];

  before(async () => {
    execFileSync('flock', ['/tmp/commcost-build.lock', 'node', 'native/build.mjs'], { cwd: root, stdio: 'ignore' });
    server = await startSshServer();
    exe = join(mkdtempSync(join(tmpdir(), 'commcost-rc-')), 'lifecycle');
    execFileSync('cc', ['-std=c11', '-O0', '-g', join(root, 'examples', 'trace', 'nccl_lifecycle.c'), '-o', exe, sim, `-Wl,-rpath,${join(root, 'dist', 'native')}`]);
  });
  after(async () => server?.stop());

  async function traced(command: string[], extra: Partial<RemoteTraceOptions> = {}): Promise<{ r: RemoteTraceResult; trace: TraceFile; out: string; err: string }> {
    const localCwd = mkdtempSync(join(tmpdir(), 'commcost-rtrace-'));
    let out = '', err = '';
    const r = await runRemoteTrace({
      command, host: server.alias, localCwd, base: join(root, 'cli'), simulate: true, sshConfigPath: server.sshConfigPath, knownHostsPath: server.knownHostsPath, agentSocket: '',
      stdio: { stdout: (t) => (out += t), stderr: (t) => (err += t) }, log: (l) => logs.push(l), ...extra,
    });
    assert.ok(r.outFile.startsWith(join(localCwd, '.commcost', 'traces')), r.outFile);
    assert.equal(r.saveError, undefined);
    return { r, trace: validateTraceFile(JSON.parse(readFileSync(r.outFile, 'utf8'))), out, err };
  }

  test('the C example: deployed, run on the host, merged here with file:line in order; a second trace uploads nothing', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'commcost-rcwd-'));
    const job = ['env', 'NRANKS=2', 'COMMCOST_SIM_CONNECT_MS=30', 'COMMCOST_SIM_INIT_MS=10', 'sh', '-c', 'pwd; printf "%s\\n" "$NCCL_PROFILER_PLUGIN" >&2; exec "$0"', exe];
    const { r, trace, out, err } = await traced(job, { remoteCwd: cwd });
    assert.equal(r.exitCode, 0, err);
    assert.equal(r.remoteCwd, cwd);
    assert.match(out, new RegExp(`^${cwd}\\n`), 'the job ran in --cwd, its output streamed');
    assert.match(err, /\.cache\/commcost\/[0-9a-f]{16}\/native\/linux-(x64|arm64)\/libcommcost-profiler\.so/, 'the deployed plugin, for the host\'s architecture');
    assert.equal(trace.host, server.alias, 'the trace names the SSH host');
    assert.equal(trace.simulated, true);
    assert.equal(trace.status, 'complete', trace.missing.join('; '));
    assert.equal(trace.processes.length, 2);
    for (const line of [72, 74]) inOrder(trace, line);
    const init = trace.sites.find((s) => s.line === 72)!;
    assert.match(init.file!, /nccl_lifecycle\.c$/);
    assert.equal(init.cold, true);
    assert.ok(init.connect!.medianMs >= 25, `the simulated 30 ms connect: ${init.connect!.medianMs}`);
    assert.ok(trace.ncclLog && trace.ncclLog.creations > 0, "NCCL's log files came back too");
    assert.deepEqual(trace.clock, { kind: 'monotonic', hosts: 1, note: trace.clock!.note });
    const again = await traced(job, { remoteCwd: cwd });
    assert.deepEqual(again.r.uploaded, [], 'content-hash deploy: nothing uploaded the second time');
    assert.equal(again.trace.status, 'complete');
  });

  test('the torch example on the stub torch.distributed, in the remote home by default: every call site at its line', async () => {
    const stubDir = mkdtempSync(join(tmpdir(), 'commcost-rstub-'));
    const fake = join(root, 'test', 'fixtures', 'trace', 'fake_torch');
    const example = join(root, 'examples', 'trace', 'torch_tp_reshape.py');
    // PYTHONPATH appended to (the hook stays first), as a user's own launcher script would.
    const job = ['sh', '-c', 'pwd; PYTHONPATH="$PYTHONPATH:$0" COMMCOST_STUB_DIR="$1" COMMCOST_STUB_NCCL="$2" WORLD_SIZE=2 exec python3 "$3" "$4"', fake, stubDir, sim, join(fake, 'launch.py'), example];
    const { r, trace, out } = await traced(job);
    assert.equal(r.exitCode, 0);
    assert.equal(out.split('\n')[0], process.env.HOME, 'default folder: the remote home');
    const src = readFileSync(example, 'utf8').split('\n');
    const bodyFrom = src.findIndex((l, i) => i > 0 && l.includes('"""')) + 1;
    const lineOf = (needle: string, nth = 0): number => src.map((l, i) => (i >= bodyFrom && l.includes(needle) ? i + 1 : 0)).filter(Boolean)[nth]!;
    const lines = [lineOf('dist.init_process_group('), lineOf('dist.new_group('), lineOf('dist.split_group('), lineOf('= dist.new_group(list', 1)];
    assert.deepEqual(trace.sites.map((s) => `${s.api}:${s.line}`), [`init_process_group:${lines[0]}`, `new_group:${lines[1]}`, `split_group:${lines[2]}`, `new_group:${lines[3]}`]);
    for (const line of lines) inOrder(trace, line);
    assert.deepEqual(trace.sites.map((s) => s.lazy), [false, true, false, true]);
  });

  test('a command not found on the host, and a folder that does not exist, are said clearly', async () => {
    const { r, trace } = await traced(['commcost-no-such-program-xyz', 'a']);
    assert.equal(r.exitCode, 127);
    assert.match(r.startError ?? '', /commcost-no-such-program-xyz was not found on .* give its full path/);
    assert.equal(trace.status, 'partial');
    await assert.rejects(traced(['true'], { remoteCwd: '/no/such/folder/commcost' }), (e: unknown) => e instanceof CommcostError && e.code === 'BAD_INPUT' && /no such folder/.test(e.message));
  });

  test('the deadline stops the whole remote process group and keeps a partial trace', async () => {
    const marker = join(mkdtempSync(join(tmpdir(), 'commcost-rdl-')), 'child-alive');
    // A child in the same group that would write the marker after 4 s unless the group is killed.
    const job = ['sh', '-c', '(sleep 4; touch "$0") & exec env NRANKS=1 COMMCOST_SIM_HANG=1 sleep 30', marker];
    const { r, trace } = await traced(job, { deadlineMs: 1000 });
    assert.equal(r.stopped, 'deadline of 1 s');
    assert.equal(trace.status, 'partial');
    assert.ok(trace.missing.some((m) => /deadline/.test(m)), trace.missing.join('; '));
    await new Promise((res) => setTimeout(res, 5000));
    assert.equal(existsSync(marker), false, 'the background child of the job was stopped with it');
  });

  test('Ctrl-C (an abort with SIGINT) sends SIGINT to the remote job, which stops; the trace is partial, cancelled', async () => {
    const abort = new AbortController();
    let out = '';
    // Ctrl-C once the job runs (its SIGINT handler is set before it prints "started").
    const r = await runRemoteTrace({
      command: ['sh', '-c', 'trap "echo got-int; exit 130" INT; echo started; sleep 30'], host: server.alias, localCwd: mkdtempSync(join(tmpdir(), 'commcost-rint-')), base: join(root, 'cli'),
      sshConfigPath: server.sshConfigPath, knownHostsPath: server.knownHostsPath, agentSocket: '', signal: abort.signal,
      stdio: { stdout: (t) => { out += t; if (out.includes('started')) abort.abort('SIGINT'); }, stderr: () => {} },
    });
    const trace = validateTraceFile(JSON.parse(readFileSync(r.outFile, 'utf8')));
    assert.equal(r.stopped, 'cancelled');
    assert.match(out, /started\ngot-int\n/, 'the job received SIGINT (its own handler ran)');
    assert.equal(r.exitCode, 130);
    assert.equal(trace.status, 'partial');
  });

  test('an unreachable host is a clear error before anything runs', async () => {
    await assert.rejects(
      runRemoteTrace({ command: ['true'], host: 'nobody@127.0.0.1:1', localCwd: tmpdir(), base: join(root, 'cli'), stdio: { stdout: () => {}, stderr: () => {} }, knownHostsPath: server.knownHostsPath, agentSocket: '' }),
      (e: unknown) => e instanceof CommcostError && e.code === 'HOST_UNREACHABLE' && /127\.0\.0\.1:1/.test(e.message),
    );
  });
});
