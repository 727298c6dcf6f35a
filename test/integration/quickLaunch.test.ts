/**
 * An agent already deployed starts in one remote command (client/quickLaunch.ts), through the
 * bundled CLI against the loopback OpenSSH server: the first run deploys (the full path: Node
 * found, files uploaded, agent started), the second starts in one command, and a changed payload
 * takes the full path again. Each run measures one short simulated experiment to the end.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { privateAgentCopy, repoRoot } from '../support/agentHarness';
import { bundledCliSshSkip, loopbackSshSuite } from '../support/sshServer';

const bin = path.join(repoRoot, 'bin', 'commcost.js');
const skip = bundledCliSshSkip(repoRoot);

describe('one-command start of a deployed agent (bundled CLI, loopback sshd)', { skip }, () => {
  const ssh = loopbackSshSuite();
  const dirs = ssh.dirs;

  const run = (agentDir: string): Promise<{ code: number | null; stderr: string }> => {
    const save = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-quick-runs-'));
    dirs.push(save);
    const args = ['measure', '--host', ssh.server.alias, '--ssh-config', ssh.server.sshConfigPath, '--known-hosts', ssh.server.knownHostsPath, '--agent-dir', agentDir, '--simulate', '--verbose', '--experiments', 'init', '--ranks', '1', '--iterations', '1', '--warmup', '0', '--save-dir', save];
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [bin, ...args], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, SSH_AUTH_SOCK: '' } });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 240_000);
      child.on('close', (code) => {
        clearTimeout(timer);
        const remote = /(?:uploading \d+ file\(s\) to [^:]+:|already deployed on \S+ in )(\/[^\s,]+)/.exec(stderr)?.[1];
        if (remote && remote.startsWith(path.join(os.homedir(), '.cache', 'commcost') + path.sep)) dirs.push(remote);
        resolve({ code, stderr });
      });
    });
  };

  test('deploy, then one command, then the full path again after a change', { timeout: 600_000 }, async () => {
    const agent = privateAgentCopy();
    dirs.push(agent);
    fs.appendFileSync(path.join(agent, 'agent.js'), `\n// quick launch test ${process.pid} ${Date.now()}\n`);
    const first = await run(agent);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stderr, /not started in one command on \S+ \(not deployed\): finding Node and deploying/);
    assert.match(first.stderr, /uploading \d+ file\(s\)/);
    assert.doesNotMatch(first.stderr, /: started in one command/);

    const second = await run(agent);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stderr, /started in one command \(Node found, files checked, agent started\)/);
    assert.doesNotMatch(second.stderr, /finding Node and deploying|uploading/);
    assert.match(second.stderr, /init \(1\/1\) finished/);

    fs.appendFileSync(path.join(agent, 'agent.js'), '// changed\n');
    const third = await run(agent);
    assert.equal(third.code, 0, third.stderr);
    assert.match(third.stderr, /not started in one command on \S+ \(not deployed\)/, 'a new payload hash is a new folder');
  });
});
