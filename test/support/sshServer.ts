/**
 * A throwaway OpenSSH server on loopback for integration tests: its own config, host key,
 * authorized key, ssh config alias and known_hosts, all in a temp folder (toolchain.md, "SSH").
 * Needs /usr/sbin/sshd (`apt-get install -y openssh-server`); {@link sshdAvailable} tells.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

export const SSHD = '/usr/sbin/sshd';

/** Why sshd tests cannot run here, or undefined when they can. */
export function sshdMissingReason(): string | undefined {
  return existsSync(SSHD) ? undefined : `${SSHD} is missing (apt-get install -y openssh-server)`;
}

export interface SshServer {
  port: number;
  /** Host alias in {@link sshConfigPath} pointing at this server with the client key. */
  alias: string;
  sshConfigPath: string;
  /** known_hosts holding this server's host key as `[127.0.0.1]:port`. */
  knownHostsPath: string;
  /** The client's private key (authorized on the server). */
  keyPath: string;
  /** The server's public host key line (`ssh-ed25519 AAAA…`). */
  hostPublicKey: string;
  /** Temp folder holding all of it (removed by stop). */
  dir: string;
  /** Remote login user (the local user: the server runs here). */
  user: string;
  stop(): Promise<void>;
}

/** A TCP port that was free a moment ago on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function keygen(path: string): void {
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'commcost-test', '-f', path], { stdio: 'ignore' });
}

async function waitForBanner(port: number, child: ChildProcess, stderr: () => string, timeoutMs = 10_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`sshd exited with ${child.exitCode}: ${stderr()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('data', (d) => {
        s.destroy();
        resolve(d.toString().startsWith('SSH-'));
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`sshd did not answer on port ${port}: ${stderr()}`);
}

/**
 * Starts sshd on 127.0.0.1:<free port> with fresh keys and writes an ssh config alias and a
 * known_hosts for it.
 * @throws Error when sshd is missing or does not come up within 10 s
 */
export async function startSshServer(): Promise<SshServer> {
  const missing = sshdMissingReason();
  if (missing) throw new Error(missing);
  const dir = await mkdtemp(join(tmpdir(), 'commcost-sshd-'));
  const hostKey = join(dir, 'host_ed25519');
  const keyPath = join(dir, 'client_ed25519');
  keygen(hostKey);
  keygen(keyPath);
  writeFileSync(join(dir, 'authorized_keys'), readFileSync(keyPath + '.pub'));
  const port = await freePort();
  const config = join(dir, 'sshd_config');
  writeFileSync(
    config,
    [
      `ListenAddress 127.0.0.1`,
      `Port ${port}`,
      `HostKey ${hostKey}`,
      `AuthorizedKeysFile ${join(dir, 'authorized_keys')}`,
      `PidFile ${join(dir, 'sshd.pid')}`,
      'PermitRootLogin prohibit-password',
      'PubkeyAuthentication yes',
      'PasswordAuthentication no',
      'KbdInteractiveAuthentication no',
      'UsePAM no',
      'StrictModes no',
      'MaxStartups 100',
      'MaxSessions 100',
      'LogLevel ERROR',
      'Subsystem sftp internal-sftp',
      '',
    ].join('\n'),
  );
  mkdirSync('/run/sshd', { recursive: true });
  const child = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  try {
    await waitForBanner(port, child, () => err);
  } catch (e) {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
  const user = userInfo().username;
  const alias = 'commcost-test';
  const sshConfigPath = join(dir, 'ssh_config');
  writeFileSync(sshConfigPath, `Host ${alias}\n  HostName 127.0.0.1\n  Port ${port}\n  User ${user}\n  IdentityFile ${keyPath}\n`);
  const hostPublicKey = readFileSync(hostKey + '.pub', 'utf8').split(' ').slice(0, 2).join(' ');
  const knownHostsPath = join(dir, 'known_hosts');
  writeFileSync(knownHostsPath, `[127.0.0.1]:${port} ${hostPublicKey}\n`);
  return {
    port,
    alias,
    sshConfigPath,
    knownHostsPath,
    keyPath,
    hostPublicKey,
    dir,
    user,
    async stop() {
      if (child.exitCode === null) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await gone;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}
