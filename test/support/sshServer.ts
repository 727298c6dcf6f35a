/**
 * A throwaway OpenSSH server on loopback for integration tests: its own config, host key,
 * authorized key, ssh config alias and known_hosts, all in a temp folder (toolchain.md, "SSH").
 * Needs /usr/sbin/sshd (`apt-get install -y openssh-server`); {@link sshdAvailable} tells.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, connect } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';

export const SSHD = '/usr/sbin/sshd';

/** Why sshd tests cannot run here, or undefined when they can. */
export function sshdMissingReason(): string | undefined {
  return existsSync(SSHD) ? undefined : `${SSHD} is missing (apt-get install -y openssh-server)`;
}

export interface SshServer {
  port: number;
  /** The address sshd listens on and the alias points at (127.0.0.1 unless `listenAddress` was given). */
  address: string;
  /** Host alias in {@link sshConfigPath} pointing at this server with the client key. */
  alias: string;
  sshConfigPath: string;
  /** known_hosts holding this server's host key as `[<address>]:port` (`[127.0.0.1]:port` by default). */
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

/** Options of {@link startSshServer}; none given = loopback in this network namespace. */
export interface SshServerOptions {
  /**
   * Network namespace to run sshd in (`ip netns exec <netns> sshd …`; test/support/netns.ts).
   * Needs `listenAddress`: an address of that namespace reachable from here.
   */
  netns?: string;
  /** Address sshd listens on and the alias / known_hosts use (default 127.0.0.1). */
  listenAddress?: string;
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

async function waitForBanner(
  port: number,
  child: ChildProcess,
  stderr: () => string,
  timeoutMs = 10_000,
  host = '127.0.0.1',
): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`sshd exited with ${child.exitCode}: ${stderr()}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, host);
      // Off loopback (a namespace's address) a lost SYN would stall this attempt: retry instead.
      if (host !== '127.0.0.1') {
        s.setTimeout(2_000, () => {
          s.destroy();
          resolve(false);
        });
      }
      s.once('data', (d) => {
        s.destroy();
        resolve(d.toString().startsWith('SSH-'));
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`sshd did not answer on ${host}:${port}: ${stderr()}`);
}

/**
 * Starts sshd on 127.0.0.1:<free port> (or `opts.listenAddress`, inside `opts.netns`) with fresh
 * keys and writes an ssh config alias and a known_hosts for it.
 * @throws Error when sshd is missing or does not come up within 10 s, or `netns` lacks `listenAddress`
 */
export async function startSshServer(opts: SshServerOptions = {}): Promise<SshServer> {
  const missing = sshdMissingReason();
  if (missing) throw new Error(missing);
  if (opts.netns !== undefined && opts.listenAddress === undefined) {
    throw new Error('startSshServer: netns needs listenAddress (an address of that namespace reachable from here)');
  }
  const address = opts.listenAddress ?? '127.0.0.1';
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
      `ListenAddress ${address}`,
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
  const sshdArgs = ['-D', '-e', '-f', config];
  // `ip netns exec` execs sshd in place: `child` is sshd itself (stop's SIGTERM reaches it).
  const child =
    opts.netns === undefined
      ? spawn(SSHD, sshdArgs, { stdio: ['ignore', 'ignore', 'pipe'] })
      : spawn('ip', ['netns', 'exec', opts.netns, SSHD, ...sshdArgs], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  try {
    await waitForBanner(port, child, () => err, 10_000, address);
  } catch (e) {
    child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
  const user = userInfo().username;
  const alias = 'commcost-test';
  const sshConfigPath = join(dir, 'ssh_config');
  writeFileSync(sshConfigPath, `Host ${alias}\n  HostName ${address}\n  Port ${port}\n  User ${user}\n  IdentityFile ${keyPath}\n`);
  const hostPublicKey = readFileSync(hostKey + '.pub', 'utf8').split(' ').slice(0, 2).join(' ');
  const knownHostsPath = join(dir, 'known_hosts');
  writeFileSync(knownHostsPath, `[${address}]:${port} ${hostPublicKey}\n`);
  return {
    port,
    address,
    alias,
    sshConfigPath,
    knownHostsPath,
    keyPath,
    hostPublicKey,
    dir,
    user,
    async stop() {
      // Not yet exited (an sshd killed by a signal has exitCode null but signalCode set).
      if (child.exitCode === null && child.signalCode === null) {
        const gone = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await gone;
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Why a suite that drives the bundled CLI (bin/commcost.js → dist/cli.js) over the loopback sshd
 * cannot run here, or false: sshd missing, or dist/cli.js not built.
 */
export function bundledCliSshSkip(repoRoot: string): string | false {
  return sshdMissingReason() ?? (existsSync(join(repoRoot, 'dist', 'cli.js')) ? false : 'dist/cli.js is not built: run `npm run build`');
}

/**
 * The loopback sshd of one test suite (call inside `describe`): started before its tests and
 * stopped after them, when the folders its tests push onto `dirs` are removed too. `server`
 * throws when read before the sshd has started.
 */
export function loopbackSshSuite(): { readonly server: SshServer; dirs: string[] } {
  let server: SshServer | undefined;
  const dirs: string[] = [];
  before(async () => {
    server = await startSshServer();
  });
  after(async () => {
    await server?.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  return {
    get server(): SshServer {
      if (!server) throw new Error('the loopback sshd of this suite has not started');
      return server;
    },
    dirs,
  };
}
