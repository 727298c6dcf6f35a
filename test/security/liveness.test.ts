/**
 * A peer that goes silent with its pipe or connection still open, and an SSH drop mid-deploy
 * (issue #21: the CLI's liveness timeout, a silent partition that left the remote agent alive,
 * the misleading message on an SSH drop during deploy).
 *
 * - the protocol's `host/keepalive` and `agent/heartbeat` are shape-checked like every message;
 * - the liveness settings from the environment are checked with a clear error;
 * - a SIGSTOPped agent: the host stops with AGENT_SILENT naming the host within the deadline + 1.5 s,
 *   keeps what was measured (partial) and leaves no process;
 * - a SIGSTOPped client (the bundled CLI): the agent and its ranks are gone within the deadline + 5 s;
 * - the SSH connection cut mid-upload (a TCP relay in front of the loopback sshd is destroyed):
 *   CONNECTION_LOST saying the connection dropped during deploy, after how many files, and that
 *   nothing was measured.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, test } from 'node:test';
import { parseAgentEvent, parseHostCommand, ProtocolError } from '../../protocol/events';
import { MAX_AGENT_LOG_LINE_CHARS, spawnLocalAgent } from '../../client/agentProcess';
import { collectPayload, deployAgent } from '../../client/deploy';
import { CommcostError } from '../../client/errors';
import { resolveTarget, type SshTarget } from '../../client/hosts';
import { livenessSettings } from '../../client/liveness';
import { SshSession } from '../../client/sshSession';
import { NOT_BUILT, repoRoot } from '../support/agentHarness';
import { partitionTrial, silentAgentTrial, silentClientTrial, stoppedRemoteAgentTrial, tcpRelay, TRIAL_LIVENESS } from '../support/livenessFaults';
import { sshdMissingReason, startSshServer, type SshServer } from '../support/sshServer';

const cleanups: (() => void | Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('liveness messages and settings', () => {
  test('host/keepalive and agent/heartbeat are read; bad keepalives are refused with the reason', () => {
    assert.deepEqual(parseAgentEvent('{"type":"agent/heartbeat"}'), { type: 'agent/heartbeat' });
    assert.deepEqual(parseHostCommand('{"type":"host/keepalive","intervalMs":200,"deadlineMs":1500}'), { type: 'host/keepalive', intervalMs: 200, deadlineMs: 1500 });
    const bad: [string, RegExp][] = [
      ['{"type":"host/keepalive"}', /intervalMs must be a whole number/],
      ['{"type":"host/keepalive","intervalMs":null,"deadlineMs":1500}', /intervalMs/],
      ['{"type":"host/keepalive","intervalMs":200,"deadlineMs":"1500"}', /deadlineMs must be/],
      ['{"type":"host/keepalive","intervalMs":200,"deadlineMs":300}', /at least 2 × intervalMs/],
      ['{"type":"host/keepalive","intervalMs":0.5,"deadlineMs":1500}', /whole number/],
      ['{"type":"host/keepalive","intervalMs":1e308,"deadlineMs":1e308}', /intervalMs/],
    ];
    for (const [line, why] of bad) assert.throws(() => parseHostCommand(line), (e: unknown) => e instanceof ProtocolError && why.test(e.message), line);
  });

  test('settings: arguments over the environment over the defaults; a bad variable is named', () => {
    assert.deepEqual(livenessSettings({}, {}), { intervalMs: 5000, deadlineMs: 120_000 });
    assert.deepEqual(livenessSettings({}, { COMMCOST_HEARTBEAT_MS: '250', COMMCOST_LIVENESS_DEADLINE_MS: '2000' }), { intervalMs: 250, deadlineMs: 2000 });
    assert.deepEqual(livenessSettings({ deadlineMs: 900 }, { COMMCOST_HEARTBEAT_MS: '250', COMMCOST_LIVENESS_DEADLINE_MS: '2000' }), { intervalMs: 250, deadlineMs: 900 });
    for (const env of [{ COMMCOST_HEARTBEAT_MS: 'fast' }, { COMMCOST_LIVENESS_DEADLINE_MS: '0x10' }, { COMMCOST_HEARTBEAT_MS: '100000', COMMCOST_LIVENESS_DEADLINE_MS: '150000' }]) {
      assert.throws(
        () => livenessSettings({}, env),
        (e: unknown) => e instanceof CommcostError && e.code === 'BAD_INPUT' && Object.keys(env).every((k) => e.message.includes(k)) && /COMMCOST_HEARTBEAT_MS/.test(e.hint ?? ''),
        JSON.stringify(env),
      );
    }
  });
});

describe('what the host reads from an agent is bounded', () => {
  test(`a log line over ${MAX_AGENT_LOG_LINE_CHARS} characters is dropped as it arrives (a note instead); protocol lines are capped too`, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-longlog-'));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    // 4 MiB on stderr without a newline, in 64 KiB writes, then a short line.
    fs.writeFileSync(
      path.join(dir, 'agent.js'),
      `const chunk = 'x'.repeat(65536); for (let i = 0; i < 64; i++) process.stderr.write(chunk); process.stderr.write('\\nafter\\n'); process.stdout.write('{"type":"agent/heartbeat"}\\n');\n`,
    );
    const agent = spawnLocalAgent({ agentDir: dir });
    const log: string[] = [];
    const out: string[] = [];
    agent.onStderr((l) => log.push(l));
    agent.onLine((l) => out.push(l));
    await agent.exited;
    assert.deepEqual(log, [`(the agent logged a line longer than ${MAX_AGENT_LOG_LINE_CHARS} characters: dropped)`, 'after']);
    assert.deepEqual(out, ['{"type":"agent/heartbeat"}']);
  });
});

describe('a silent peer', { skip: NOT_BUILT, timeout: 90_000 }, () => {
  test(`a SIGSTOPped agent: AGENT_SILENT within the deadline (${TRIAL_LIVENESS.deadlineMs} ms) + 1.5 s, the run partial, nothing left`, async () => {
    const r = await silentAgentTrial();
    const err = r.run.errors.find((e) => e.code === ('AGENT_SILENT' as string));
    assert.ok(err, `no AGENT_SILENT error: ${JSON.stringify(r.run.errors)}\n${r.log.slice(-20).join('\n')}`);
    assert.equal(err.where.host, 'localhost');
    assert.match(err.message, /agent on localhost sent nothing for \d+\.\d s/);
    assert.match(err.hint ?? '', /what was measured is kept.*run again/s);
    assert.equal(r.run.status, 'partial', 'the samples recorded before the stop are kept');
    assert.ok(r.run.experiments.some((e) => Object.values(e.samples).some((v) => Object.values(v).some((s) => s.length > 0))), 'samples kept');
    assert.ok(r.stopMs <= TRIAL_LIVENESS.deadlineMs + 1500, `stopped ${r.stopMs} ms after the SIGSTOP`);
    assert.deepEqual(r.left, [], 'the stopped agent and its ranks are killed');
  });

  test(`a SIGSTOPped client: the agent and its ranks are gone within the deadline (${TRIAL_LIVENESS.deadlineMs} ms) + 5 s`, { skip: fs.existsSync(path.join(repoRoot, 'dist', 'cli.js')) ? false : 'dist/cli.js is not built' }, async () => {
    const waitMs = TRIAL_LIVENESS.deadlineMs + 5000;
    const r = await silentClientTrial(waitMs + 3000);
    assert.equal(r.ranks, 2, `two rank processes ran before the stop:\n${r.stderr.slice(-2000)}`);
    assert.deepEqual(r.left, [], `agent and ranks still alive ${r.goneMs} ms after the client stopped`);
    assert.ok(r.goneMs <= waitMs, `gone only ${r.goneMs} ms after the client stopped`);
  });
});

describe('a partition to an SSH host (TCP stays up)', { skip: sshdMissingReason() ?? NOT_BUILT, timeout: 240_000 }, () => {
  test(`the remote agent and its ranks are gone within the deadline (${TRIAL_LIVENESS.deadlineMs} ms) + 5 s; the host side ends with AGENT_SILENT`, async () => {
    const server: SshServer = await startSshServer();
    cleanups.push(() => server.stop());
    const waitMs = TRIAL_LIVENESS.deadlineMs + 5000;
    const r = await partitionTrial(server, waitMs);
    assert.ok(r.remote >= 3, `the remote agent and its 2 ranks ran before the partition (seen ${r.remote})`);
    assert.deepEqual(r.left, [], 'the remote agent and its ranks are gone');
    assert.ok(r.remoteGoneMs <= waitMs, `remote side gone ${r.remoteGoneMs} ms after the partition`);
    const silent = r.run.errors.find((e) => e.code === ('AGENT_SILENT' as string));
    assert.ok(silent, JSON.stringify(r.run.errors));
    assert.equal(silent.where.host, 'partitioned');
    assert.equal(r.run.status, 'partial');
    // The deadline, then up to 8 s for the SIGKILL command, which a cut network never runs.
    assert.ok(r.hostMs <= TRIAL_LIVENESS.deadlineMs + 9000, `the host side ended ${r.hostMs} ms after the partition`);
  });

  test('a SIGSTOPped remote agent (the connection healthy): AGENT_SILENT, and the agent and its ranks are killed', async () => {
    const server: SshServer = await startSshServer();
    cleanups.push(() => server.stop());
    const r = await stoppedRemoteAgentTrial(server);
    assert.deepEqual(r.run.errors.map((e) => e.code), ['AGENT_SILENT']);
    assert.equal(r.run.status, 'partial');
    assert.deepEqual(r.left, [], 'the stopped remote agent and its ranks are gone');
    // The deadline, then the SIGKILL command (a loaded sshd takes seconds to start one; 8 s at most).
    assert.ok(r.hostMs <= TRIAL_LIVENESS.deadlineMs + 9000, `the host side ended ${r.hostMs} ms after the stop`);
  });
});

describe('an SSH drop during deploy', { skip: sshdMissingReason() ?? false, timeout: 60_000 }, () => {
  test('says the connection dropped during deploy, after how many files, and that nothing was measured', async () => {
    const server: SshServer = await startSshServer();
    cleanups.push(() => server.stop());
    const proxy = await tcpRelay(server.port);
    cleanups.push(() => proxy.close());
    const base = (await resolveTarget(server.alias, { sshConfigPath: server.sshConfigPath })) as SshTarget;
    const target: SshTarget = { ...base, port: proxy.port };
    const knownHosts = path.join(server.dir, 'known_hosts_relay');
    fs.writeFileSync(knownHosts, `[127.0.0.1]:${proxy.port} ${server.hostPublicKey}\n`);
    // A private payload (a unique hash, so every file is uploaded): 40 files of 256 KiB.
    const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-deploy-drop-'));
    cleanups.push(() => fs.rmSync(agentDir, { recursive: true, force: true }));
    fs.writeFileSync(path.join(agentDir, 'agent.js'), `// ${randomBytes(8).toString('hex')}\n`);
    fs.mkdirSync(path.join(agentDir, 'native'));
    for (let i = 0; i < 40; i++) fs.writeFileSync(path.join(agentDir, 'native', `pad-${i}.bin`), randomBytes(256 * 1024));
    const payload = await collectPayload(agentDir);
    const remote = path.join(os.homedir(), '.cache', 'commcost', payload.hash);
    cleanups.push(() => fs.rmSync(remote, { recursive: true, force: true }));

    const session = await SshSession.connect(target, { knownHostsPath: knownHosts, agentSocket: '' });
    cleanups.push(() => session.dispose());
    let cutAfter = -1;
    const log = (line: string): void => {
      if (cutAfter < 0 && line.startsWith('uploaded ')) {
        cutAfter = 1;
        proxy.cut();
      }
    };
    const error = await deployAgent(session, payload, log).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(cutAfter > 0, 'the connection was cut after the first upload');
    assert.ok(error instanceof CommcostError, `deploy should fail once the connection is cut: ${String(error)}`);
    assert.equal(error.code, 'CONNECTION_LOST', `${error.code}: ${error.message} (${error.hint ?? ''})`);
    assert.match(error.message, new RegExp(`^SSH connection to ${server.alias} dropped during deploy \\(after (\\d+) of 41 file\\(s\\) uploaded`));
    const uploaded = Number(/after (\d+) of/.exec(error.message)![1]);
    assert.ok(uploaded >= 1 && uploaded < 41, `uploaded ${uploaded}`);
    assert.match(error.message, /nothing was measured yet/);
    assert.match(error.hint ?? '', /check the network .* run again/);
    assert.doesNotMatch(`${error.message} ${error.hint ?? ''}`, /free space|permissions/);
  });
});
