// Integration tests of the SSH side against a real OpenSSH server on loopback
// (test/support/sshServer.ts). Skipped with a visible reason when sshd is missing, unless
// COMMCOST_REQUIRE_SSH=1, which makes that a failure.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { AgentEvent, RunOptions } from '../../protocol/events';
import { parseAgentEvent } from '../../protocol/events';
import { startSshAgent } from '../../client/agentProcess';
import { collectPayload, deployAgent, findRemoteNode, type AgentPayload } from '../../client/deploy';
import { CommcostError } from '../../client/errors';
import { resolveTarget, type SshTarget } from '../../client/hosts';
import { runMeasurement } from '../../client/runSession';
import { SshSession, type HostKeyPolicy } from '../../client/sshSession';
import { freePort, sshdMissingReason, startSshServer, type SshServer } from '../support/sshServer';

const missing = sshdMissingReason();
if (missing && process.env.COMMCOST_REQUIRE_SSH === '1') {
  test('sshd is required (COMMCOST_REQUIRE_SSH=1)', () => assert.fail(missing));
}
const skip = missing ? `skipped: ${missing}` : false;
if (missing) process.stderr.write(`ssh integration tests ${skip}\n`);

const options: RunOptions = { experiments: ['init', 'split'], iterations: 3, warmup: 1, deadlineSeconds: 60 };

async function rejectsCode(p: Promise<unknown>, code: string, ...parts: string[]): Promise<CommcostError> {
  let caught: unknown;
  await p.then(
    () => assert.fail(`expected ${code}`),
    (e: unknown) => (caught = e),
  );
  assert.ok(caught instanceof CommcostError, `expected CommcostError, got ${String(caught)}`);
  assert.equal(caught.code, code, caught.message);
  for (const part of parts) assert.ok(caught.message.includes(part), `${JSON.stringify(caught.message)} lacks ${JSON.stringify(part)}`);
  return caught;
}

describe('ssh integration', { skip }, () => {
  let server: SshServer;
  let target: SshTarget;
  let session: SshSession;
  let distDir: string;
  let payload: AgentPayload;
  let marker: string;
  const remoteDirs: string[] = [];

  before(async () => {
    server = await startSshServer();
    target = (await resolveTarget(server.alias, { sshConfigPath: server.sshConfigPath })) as SshTarget;
    session = await SshSession.connect(target, { knownHostsPath: server.knownHostsPath, agentSocket: '' });
    // A fake payload: the protocol-speaking fake agent with a unique marker, and a native file.
    marker = `commcost-fake-${randomBytes(6).toString('hex')}`;
    distDir = mkdtempSync(join(tmpdir(), 'commcost-dist-'));
    mkdirSync(join(distDir, 'native'));
    const agent = readFileSync(join(__dirname, '..', 'support', 'fakeAgent.js'), 'utf8').replace('COMMCOST_FAKE_MARKER', marker);
    writeFileSync(join(distDir, 'agent.js'), agent);
    writeFileSync(join(distDir, 'native', 'libfake.so'), randomBytes(4096));
    payload = await collectPayload(distDir);
  });

  after(async () => {
    if (session && remoteDirs.length > 0) await session.run(['rm', '-rf', '--', ...new Set(remoteDirs)]);
    session?.dispose();
    await server?.stop();
  });

  test('connects through the ssh config alias; argv reaches the remote intact', async () => {
    assert.deepEqual([target.hostname, target.port, target.identityFiles], ['127.0.0.1', server.port, [server.keyPath]]);
    const words = ["it's", '$(touch /tmp/pwned)', '`id`', 'a;b|c&d', '*', '$HOME', 'new\nline', ''];
    const r = await session.run(['printf', '%s\\0', ...words]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(r.stdout.split('\0').slice(0, -1), words);
  });

  test('unknown host key: refused by default, accepted with accept-new, or by a callback', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'commcost-kh-'));
    const kh = join(dir, 'known_hosts');
    const connect = (policy: HostKeyPolicy) => SshSession.connect(target, { knownHostsPath: kh, hostKeyPolicy: policy, agentSocket: '' });
    await rejectsCode(connect('refuse'), 'HOST_KEY_UNKNOWN', server.alias, kh, 'SHA256:');
    (await connect('accept-new')).dispose();
    assert.match(readFileSync(kh, 'utf8'), new RegExp(`^\\[127\\.0\\.0\\.1\\]:${server.port} ssh-ed25519 `));
    (await connect('refuse')).dispose();

    const kh2 = join(dir, 'known_hosts2');
    let asked = '';
    const s = await SshSession.connect(target, {
      knownHostsPath: kh2,
      agentSocket: '',
      hostKeyPolicy: async (host, fp) => {
        asked = `${host} ${fp}`;
        return true;
      },
    });
    s.dispose();
    assert.match(asked, /^127\.0\.0\.1 SHA256:/);
    await rejectsCode(
      SshSession.connect(target, { knownHostsPath: join(dir, 'kh3'), agentSocket: '', hostKeyPolicy: async () => false }),
      'HOST_KEY_UNKNOWN',
    );
  });

  test('mismatched host key is refused naming the file and line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'commcost-kh-'));
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', join(dir, 'other')]);
    const otherPub = readFileSync(join(dir, 'other.pub'), 'utf8').split(' ').slice(0, 2).join(' ');
    const kh = join(dir, 'known_hosts');
    writeFileSync(kh, `# first\n[127.0.0.1]:${server.port} ${otherPub}\n`);
    for (const policy of ['refuse', 'accept-new'] as const) {
      await rejectsCode(SshSession.connect(target, { knownHostsPath: kh, hostKeyPolicy: policy, agentSocket: '' }), 'HOST_KEY_MISMATCH', kh, 'line 2');
    }
  });

  test('deploy uploads, skips when present, re-uploads a tampered file', async () => {
    const first = await deployAgent(session, payload);
    remoteDirs.push(first.remoteDir);
    assert.ok(first.remoteDir.endsWith(`/.cache/commcost/${payload.hash}`));
    assert.deepEqual(first.uploaded, ['agent.js', 'native/libfake.so']);
    const manifest = await session.run(['cat', `${first.remoteDir}/manifest.json`]);
    assert.equal(JSON.parse(manifest.stdout).hash, payload.hash);
    assert.deepEqual((await deployAgent(session, payload)).uploaded, []);
    await session.run(['sh', '-c', 'printf x >> "$1"', 'sh', `${first.remoteDir}/native/libfake.so`]);
    assert.deepEqual((await deployAgent(session, payload)).uploaded, ['native/libfake.so']);
    assert.deepEqual((await deployAgent(session, payload)).uploaded, []);
  });

  test('finds Node on PATH, in a VS Code server layout, or says where it looked', async () => {
    const onPath = await findRemoteNode(session.run, server.alias);
    assert.equal(onPath.source, 'path');
    assert.match(onPath.version, /^v\d+/);
    const explicit = await findRemoteNode(session.run, server.alias, { explicit: onPath.path });
    assert.equal(explicit.source, 'explicit');

    const home = mkdtempSync(join(tmpdir(), 'commcost-home-'));
    const bin = join(home, '.vscode-server', 'bin', 'abc123');
    mkdirSync(bin, { recursive: true });
    writeFileSync(join(bin, 'node'), `#!/bin/sh\nexec '${onPath.path}' "$@"\n`);
    chmodSync(join(bin, 'node'), 0o755);
    const vs = await findRemoteNode(session.run, server.alias, { home, pathEnv: '/nonexistent' });
    assert.deepEqual([vs.source, vs.path], ['vscode-server', join(bin, 'node')]);

    const empty = mkdtempSync(join(tmpdir(), 'commcost-home-'));
    await rejectsCode(
      findRemoteNode(session.run, server.alias, { home: empty, pathEnv: '/nonexistent' }),
      'NO_NODE',
      server.alias,
      'node on PATH',
      '.vscode-server/bin/*/node',
      '.vscode-server/cli/servers/*/server/node',
    );
    const e = await rejectsCode(findRemoteNode(session.run, server.alias, { explicit: '/no/such/node' }), 'NO_NODE', '/no/such/node');
    assert.match(e.hint ?? '', /install Node ≥ 18.*remoteNodePath.*--node/);
  });

  test('the agent streams protocol lines over exec; cancel leaves no remote process', async () => {
    const { remoteDir } = await deployAgent(session, payload);
    const node = await findRemoteNode(session.run, server.alias);
    const agent = await startSshAgent(session, node.path, remoteDir);
    const events: AgentEvent[] = [];
    let resolveDone!: () => void;
    const done = new Promise<void>((r) => (resolveDone = r));
    agent.onLine((line) => {
      const ev = parseAgentEvent(line);
      events.push(ev);
      if (ev.type === 'agent/hello') agent.send({ type: 'run/start', options });
      if (ev.type === 'run/done') resolveDone();
    });
    await done;
    assert.deepEqual(
      [events[0]?.type, events[1]?.type, events.filter((e) => e.type === 'run/sample').length, events.at(-1)?.type],
      ['agent/hello', 'run/plan', 8, 'run/done'],
    );
    agent.closeInput();
    assert.equal((await agent.exited).code, 0);

    // A long run, cancelled by closing the channel.
    const long = await startSshAgent(session, node.path, remoteDir);
    let samples = 0;
    let started!: () => void;
    const running = new Promise<void>((r) => (started = r));
    long.onLine((line) => {
      const ev = parseAgentEvent(line);
      if (ev.type === 'agent/hello') long.send({ type: 'run/start', options: { ...options, iterations: 100_000 } });
      if (ev.type === 'run/sample' && ++samples === 3) started();
    });
    await running;
    const pgrep = () => session.run(['pgrep', '-f', remoteDir]);
    assert.equal((await pgrep()).code, 0, 'the agent runs');
    long.kill();
    await long.exited;
    let alive = true;
    for (let i = 0; i < 40 && alive; i++) {
      alive = (await pgrep()).code === 0;
      if (alive) await new Promise((r) => setTimeout(r, 50));
    }
    assert.equal(alive, false, 'the remote agent is gone');
  });

  test('runMeasurement over SSH: complete, and cancelled (partial)', async () => {
    const logs: string[] = [];
    const snapshots: number[] = [];
    const req = { target: server.alias, options, sshConfigPath: server.sshConfigPath, knownHostsPath: server.knownHostsPath, agentDir: distDir };
    const run = await runMeasurement(req, { onRun: (r) => snapshots.push(r.experiments.reduce((a, e) => a + e.done, 0)), onLog: (l) => logs.push(l) });
    assert.equal(run.status, 'complete', JSON.stringify(run.errors));
    assert.equal(run.simulated, true);
    assert.deepEqual(run.experiments.map((e) => [e.experiment, e.state, e.done, e.total]), [['init', 'finished', 4, 4], ['split', 'finished', 4, 4]]);
    assert.deepEqual(run.experiments[0]!.samples, { default: { call: [2, 3, 4] } });
    assert.ok(snapshots.length > 10);
    assert.ok(logs.some((l) => l.includes('Node v')));

    const controller = new AbortController();
    const cancelled = await runMeasurement(
      { ...req, options: { ...options, iterations: 100_000 } },
      {
        onRun: (r) => {
          if ((r.experiments[0]?.done ?? 0) >= 3) controller.abort();
        },
        onLog: () => undefined,
      },
      controller.signal,
    );
    assert.equal(cancelled.status, 'partial');
    assert.ok((cancelled.experiments[0]?.samples.default?.call?.length ?? 0) >= 2);
  });

  test('unreachable hosts give HOST_UNREACHABLE with the host name', async () => {
    const nowhere = (await resolveTarget('nowhere.invalid', { sshConfigPath: server.sshConfigPath })) as SshTarget;
    await rejectsCode(SshSession.connect(nowhere, { knownHostsPath: server.knownHostsPath, agentSocket: '' }), 'HOST_UNREACHABLE', 'nowhere.invalid');
    const port = await freePort();
    const closed = (await resolveTarget(`127.0.0.1:${port}`, { sshConfigPath: server.sshConfigPath })) as SshTarget;
    const e = await rejectsCode(SshSession.connect(closed, { knownHostsPath: server.knownHostsPath, agentSocket: '' }), 'HOST_UNREACHABLE', `127.0.0.1:${port}`);
    // the hint is a command that can be pasted as it is: the port as -p, not host:port
    assert.ok(e.hint?.includes(`try: ssh -p ${port} 127.0.0.1`), e.hint);
    await rejectsCode(
      runMeasurement({ target: `127.0.0.1:${port}`, options, sshConfigPath: server.sshConfigPath, knownHostsPath: server.knownHostsPath, agentDir: distDir }, { onRun: () => undefined, onLog: () => undefined }),
      'HOST_UNREACHABLE',
    );
  });
});
