/**
 * Deploy uploads through the *bundled* CLI (bin/commcost.js → dist/cli.js, ssh2 as the release
 * build loads it) to the loopback OpenSSH server: each upload of a 1 KB file must take a few ms,
 * not the ~135 ms of a connection that waits for delayed ACKs (Nagle without TCP_NODELAY, issue
 * 19). A functional check of the stall, not a speed benchmark. The uploads run in parallel, so on
 * a loaded machine most of them queue behind the others and the CPU; a stall, though, is a floor
 * under every upload (the peer's delayed ACK, ≥ 40 ms on Linux), so the check is on the fastest
 * of the 24: under 40 ms (a healthy loopback upload takes a few ms; a stalled one ~135 ms).
 *
 * The agent folder is a private one (a stub agent.js that exits, and 24 files of 1 KB in native/),
 * so its content hash is new and every file is uploaded; the deployed folder is removed after.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { repoRoot } from '../support/agentHarness';
import { bundledCliSshSkip, loopbackSshSuite } from '../support/sshServer';

const FILES = 24;
const BAR_MS = 40;
const bin = path.join(repoRoot, 'bin', 'commcost.js');
const skip = bundledCliSshSkip(repoRoot);

describe('deploy uploads over SSH (bundled CLI, loopback sshd)', { skip }, () => {
  const ssh = loopbackSshSuite();
  const dirs = ssh.dirs;

  test(`a 1 KB upload takes a few ms (the fastest of ${FILES} under ${BAR_MS} ms)`, async () => {
    const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-upload-'));
    dirs.push(agentDir);
    // A stub agent (exits at once: the run fails after the deploy, which is all this test needs).
    fs.writeFileSync(path.join(agentDir, 'agent.js'), `// upload test ${randomBytes(8).toString('hex')}\nprocess.exit(3);\n`);
    fs.mkdirSync(path.join(agentDir, 'native'));
    for (let i = 0; i < FILES; i++) fs.writeFileSync(path.join(agentDir, 'native', `pad-${i}.bin`), randomBytes(1024));
    const saveDir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-upload-runs-'));
    dirs.push(saveDir);
    const args = ['measure', '--host', ssh.server.alias, '--ssh-config', ssh.server.sshConfigPath, '--known-hosts', ssh.server.knownHostsPath, '--agent-dir', agentDir, '--simulate', '--verbose', '--save-dir', saveDir];
    const stderr = await new Promise<string>((resolve) => {
      const child = spawn(process.execPath, [bin, ...args], { cwd: repoRoot, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, SSH_AUTH_SOCK: '' } });
      let text = '';
      child.stderr.on('data', (d: Buffer) => (text += d.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
      child.on('close', () => {
        clearTimeout(timer);
        resolve(text);
      });
    });
    // The deployed folder (under this user's ~/.cache/commcost: sshd runs here) goes too.
    const remote = /uploading \d+ file\(s\) to [^:]+:(\/\S+), /.exec(stderr)?.[1];
    if (remote && remote.startsWith(path.join(os.homedir(), '.cache', 'commcost') + path.sep)) dirs.push(remote);
    const times = [...stderr.matchAll(/uploaded native\/pad-\d+\.bin \(1024 bytes\) in ([\d.]+) ms/g)].map((m) => Number(m[1]));
    assert.equal(times.length, FILES, `expected ${FILES} timed uploads in the CLI's log:\n${stderr.slice(-3000)}`);
    times.sort((a, b) => a - b);
    const fastest = times[0]!;
    console.log(`1 KB uploads, ms: fastest ${fastest.toFixed(1)}, median ${times[Math.floor(times.length / 2)]!.toFixed(1)} (${FILES} in parallel)`);
    assert.ok(fastest < BAR_MS, `the fastest upload of 1 KB took ${fastest.toFixed(1)} ms (all: ${times.map((t) => t.toFixed(0)).join(', ')}): the SSH connection stalls on small messages (TCP_NODELAY?)`);
  });
});
