/**
 * One SSH connection (ssh2) to a target, with host key checking against known_hosts, ssh-agent and
 * identity-file authentication, ProxyJump chains, keepalive, exec without a pty and SFTP.
 *
 * Commands are given as argv and quoted with {@link shellCommand}; nothing is interpolated into
 * shell text. A session is disposable; disposing it ends every channel on it.
 */
import { readFileSync, statSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { Client, type AnyAuthMethod, type ClientChannel, type ConnectConfig, type SFTPWrapper, utils } from 'ssh2';
import { CommcostError, errorText } from './errors';
import { sshTryCommand, type SshTarget } from './hosts';
import { appendHostKey, checkHostKey, defaultKnownHostsPath, fingerprint, keyTypeOf, removeHostKeyCommand, type HostKeyCheck } from './knownHosts';
import { shellCommand } from './shellQuote';

export { shellCommand, shellQuote } from './shellQuote';

/**
 * What to do with a host key that known_hosts does not list (a mismatch is always refused):
 * `refuse` (the CLI default), `accept-new` (append it, the CLI's `--accept-new-host-key`), or ask
 * a callback (the extension asks the user; true = trust and append).
 */
export type HostKeyPolicy = 'refuse' | 'accept-new' | ((host: string, fingerprint: string) => Promise<boolean>);

export interface SshConnectOptions {
  /** known_hosts file (default `~/.ssh/known_hosts`); new keys are appended here. */
  knownHostsPath?: string;
  hostKeyPolicy?: HostKeyPolicy;
  /** ssh-agent socket (default `SSH_AUTH_SOCK`; empty string = no agent). */
  agentSocket?: string;
  /** Handshake + authentication limit per hop, ms (default 20000). */
  readyTimeoutMs?: number;
  /** Keepalive interval, ms (default 15000); the connection counts as dropped after 3 unanswered. */
  keepaliveIntervalMs?: number;
  /** Our own log lines (what is being tried). */
  log?: (line: string) => void;
}

/** Output of a finished remote command. `code` is null when it ended by a signal or the channel closed. */
export interface ExecResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

/** Runs argv on some host and collects its output; implemented over SSH and, for tests, locally. */
export type RemoteExec = (argv: readonly string[], options?: { stdin?: string; timeoutMs?: number }) => Promise<ExecResult>;

const UNREACHABLE_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'ECONNREFUSED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET', 'EPIPE']);

interface HopFailure {
  error: CommcostError;
  /** Set when the key was unknown and a callback policy may still accept it. */
  unknownKey?: Buffer;
}

/** A connected SSH session. Create with {@link SshSession.connect}. */
export class SshSession {
  private closed = false;
  private readonly closeListeners = new Set<(error?: CommcostError) => void>();
  private sftpChannel?: Promise<SFTPWrapper>;

  private constructor(
    readonly target: SshTarget,
    private readonly client: Client,
    private readonly hops: Client[],
  ) {
    let lastError: Error | undefined;
    client.on('error', (e: Error) => (lastError = e));
    client.on('close', () => {
      const wasOpen = !this.closed;
      this.closed = true;
      const err = wasOpen
        ? new CommcostError('CONNECTION_LOST', `SSH connection to ${target.name} dropped${lastError ? `: ${lastError.message}` : ''}`, {
            where: { host: target.name },
            hint: 'check the network and that the host is up, then run again; what was measured is kept',
          })
        : undefined;
      for (const l of this.closeListeners) l(err);
      for (const h of this.hops) h.end();
    });
  }

  /**
   * Connects (through every ProxyJump hop) and authenticates: ssh-agent first, then each identity
   * file of the target. Host keys are checked on every hop.
   * @throws CommcostError HOST_UNREACHABLE (DNS, refused, timeout), HOST_KEY_UNKNOWN (refused by
   *   policy), HOST_KEY_MISMATCH (names the known_hosts file and line), AUTH_FAILED
   */
  static async connect(target: SshTarget, options: SshConnectOptions = {}): Promise<SshSession> {
    const chain = [...target.proxyJump, target];
    const hops: Client[] = [];
    let sock: Duplex | undefined;
    try {
      for (let i = 0; i < chain.length; i++) {
        const hop = chain[i]!;
        if (i > 0) sock = await forward(hops[i - 1]!, hop);
        hops.push(await connectHop(hop, options, sock));
      }
    } catch (e) {
      for (const h of hops.reverse()) h.end();
      throw e;
    }
    const client = hops.pop()!;
    return new SshSession(target, client, hops);
  }

  /** True once the connection is gone. */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Calls `cb` when the connection closes; with an error when it dropped (not disposed by us). Returns an unsubscribe function. */
  onClose(cb: (error?: CommcostError) => void): () => void {
    this.closeListeners.add(cb);
    return () => this.closeListeners.delete(cb);
  }

  /**
   * Starts argv on the host without a pty; every word is shell-quoted. The caller owns the
   * returned channel (end() its stdin, close() it).
   * @throws CommcostError CONNECTION_LOST when the session is closed or the channel is refused
   */
  exec(argv: readonly string[]): Promise<ClientChannel> {
    if (this.closed) return Promise.reject(this.lostError());
    const command = shellCommand(argv);
    return new Promise((resolve, reject) => {
      this.client.exec(command, (err, stream) => {
        if (err) reject(new CommcostError('CONNECTION_LOST', `cannot start a command on ${this.target.name}: ${err.message}`, { where: { host: this.target.name }, cause: err }));
        else resolve(stream);
      });
    });
  }

  /**
   * Runs argv to completion and collects stdout/stderr (utf8).
   * @param options.stdin written then closed; options.timeoutMs (default 60000) closes the channel and resolves with code null
   */
  readonly run: RemoteExec = async (argv, options = {}) => {
    const stream = await this.exec(argv);
    return collect(stream, options.stdin, options.timeoutMs ?? 60_000);
  };

  /** The session's SFTP channel, opened once. */
  sftp(): Promise<SFTPWrapper> {
    this.sftpChannel ??= new Promise((resolve, reject) => {
      this.client.sftp((err, sftp) => {
        if (err) reject(new CommcostError('DEPLOY_FAILED', `cannot open SFTP on ${this.target.name}: ${err.message}`, { where: { host: this.target.name }, hint: 'the server must allow the sftp subsystem', cause: err }));
        else resolve(sftp);
      });
    });
    return this.sftpChannel;
  }

  /** Closes the connection and every channel on it (and the jump hosts). Idempotent. */
  dispose(): void {
    if (this.closed) return;
    this.closed = true;
    this.client.end();
    for (const h of this.hops) h.end();
  }

  private lostError(): CommcostError {
    return new CommcostError('CONNECTION_LOST', `SSH connection to ${this.target.name} is closed`, { where: { host: this.target.name } });
  }
}

function collect(stream: ClientChannel, stdin: string | undefined, timeoutMs: number): Promise<ExecResult> {
  return new Promise((resolve) => {
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let code: number | null = null;
    let signal: string | null = null;
    const timer = setTimeout(() => stream.close(), timeoutMs);
    stream.on('data', (d: Buffer) => out.push(d));
    stream.stderr.on('data', (d: Buffer) => err.push(d));
    stream.on('exit', (c: number | null, s?: string) => {
      code = c ?? null;
      signal = s ?? null;
    });
    stream.on('close', () => {
      clearTimeout(timer);
      resolve({ code, signal, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
    if (stdin !== undefined) stream.end(stdin);
    else stream.end();
  });
}

function forward(via: Client, to: SshTarget): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    via.forwardOut('127.0.0.1', 0, to.hostname, to.port, (err, stream) => {
      if (err) {
        reject(new CommcostError('HOST_UNREACHABLE', `cannot reach ${to.hostname}:${to.port} through the jump host: ${err.message}`, {
          where: { host: to.name },
          hint: 'check ProxyJump and that the jump host can reach the target',
          cause: err,
        }));
      } else resolve(stream);
    });
  });
}

function authMethods(hop: SshTarget, agentSocket: string | undefined, log: (l: string) => void): AnyAuthMethod[] {
  const methods: AnyAuthMethod[] = [];
  if (agentSocket) methods.push({ type: 'agent', username: hop.user, agent: agentSocket });
  for (const file of hop.identityFiles) {
    try {
      // A key file is a small regular file: /dev/zero or a FIFO named as one is skipped, not read.
      const st = statSync(file);
      if (!st.isFile() || st.size > 1024 * 1024) {
        log(`skipping identity ${file}: ${st.isFile() ? `${st.size} bytes, not a key file` : 'not a regular file'}`);
        continue;
      }
      const key = readFileSync(file);
      const parsed = utils.parseKey(key);
      if (parsed instanceof Error) {
        log(`skipping identity ${file}: ${parsed.message} (encrypted keys need ssh-agent)`);
        continue;
      }
      methods.push({ type: 'publickey', username: hop.user, key });
    } catch (e) {
      log(`skipping identity ${file}: ${errorText(e)}`);
    }
  }
  return methods;
}

async function connectHop(hop: SshTarget, options: SshConnectOptions, sock: Duplex | undefined): Promise<Client> {
  const policy = options.hostKeyPolicy ?? 'refuse';
  const first = await tryConnectHop(hop, options, sock, policy);
  if (!(first instanceof Client)) {
    // An unknown key under a callback policy: ask outside the handshake (no timeout while the
    // user decides), append when trusted, then connect again.
    if (first.unknownKey && typeof policy === 'function' && !sock) {
      const trusted = await policy(hop.hostname, fingerprint(first.unknownKey));
      if (trusted) {
        await appendHostKey(options.knownHostsPath ?? defaultKnownHostsPath(), hop.hostname, hop.port, first.unknownKey);
        const second = await tryConnectHop(hop, options, sock, 'refuse');
        if (second instanceof Client) return second;
        throw second.error;
      }
    }
    throw first.error;
  }
  return first;
}

function tryConnectHop(
  hop: SshTarget,
  options: SshConnectOptions,
  sock: Duplex | undefined,
  policy: HostKeyPolicy,
): Promise<Client | HopFailure> {
  const log = options.log ?? (() => undefined);
  const knownHostsPath = options.knownHostsPath ?? defaultKnownHostsPath();
  const agentSocket = options.agentSocket ?? process.env.SSH_AUTH_SOCK;
  const where = { host: hop.name };
  const methods = authMethods(hop, agentSocket, log);
  let keyFailure: HopFailure | undefined;

  const hostVerifier = (key: Buffer, verify: (ok: boolean) => void): void => {
    checkHostKey(knownHostsPath, hop.hostname, hop.port, key).then(
      async (check: HostKeyCheck) => {
        if (check.outcome === 'match') return verify(true);
        const fp = fingerprint(key);
        if (check.outcome === 'mismatch') {
          keyFailure = {
            error: new CommcostError(
              'HOST_KEY_MISMATCH',
              `host key of ${hop.name} (${hop.hostname}:${hop.port}) does not match ${check.file} line ${check.line} (${check.keyType}): the server sent ${keyTypeOf(key)} ${fp}`,
              { where, hint: `if the host was reinstalled, remove line ${check.line} of ${check.file} (${removeHostKeyCommand(hop.hostname, hop.port, check.file)}) after checking the new key with its administrator; otherwise someone may be intercepting the connection` },
            ),
          };
          return verify(false);
        }
        if (policy === 'accept-new') {
          await appendHostKey(knownHostsPath, hop.hostname, hop.port, key);
          log(`added the host key of ${hop.hostname}:${hop.port} (${fp}) to ${knownHostsPath}`);
          return verify(true);
        }
        keyFailure = {
          error: new CommcostError('HOST_KEY_UNKNOWN', `host key of ${hop.name} (${hop.hostname}:${hop.port}, ${fp}) is not in ${knownHostsPath}`, {
            where,
            hint: `connect once with ssh ${hop.name} to check and record the key, or pass --accept-new-host-key`,
          }),
          unknownKey: key,
        };
        verify(false);
      },
      (e: unknown) => {
        keyFailure = { error: new CommcostError('HOST_KEY_UNKNOWN', `cannot read ${knownHostsPath}: ${errorText(e)}`, { where, cause: e }) };
        verify(false);
      },
    );
  };

  return new Promise((resolve) => {
    const client = new Client();
    let settled = false;
    const settle = (r: Client | HopFailure) => {
      if (settled) return;
      settled = true;
      if (!(r instanceof Client)) client.end();
      resolve(r);
    };
    client.once('ready', () => settle(client));
    client.on('error', (e: Error & { level?: string; code?: string }) => {
      if (keyFailure) return settle(keyFailure);
      if (e.level === 'client-authentication') {
        return settle({
          error: new CommcostError('AUTH_FAILED', `SSH authentication as ${hop.user} on ${hop.name} failed (tried ${methods.length === 0 ? 'no key' : methods.map((m) => (m.type === 'agent' ? 'ssh-agent' : 'a key file')).join(', ')})`, {
            where,
            hint: `check that \`${sshTryCommand(hop.name)}\` logs in without a password: load your key into ssh-agent or set IdentityFile in ~/.ssh/config`,
            cause: e,
          }),
        });
      }
      const unreachable = e.level === 'client-timeout' || e.level === 'client-socket' || (e.code !== undefined && UNREACHABLE_CODES.has(e.code));
      settle({
        error: new CommcostError(unreachable ? 'HOST_UNREACHABLE' : 'SSH_FAILED', `cannot reach ${hop.name} (${hop.hostname}:${hop.port}): ${e.message}`, {
          where,
          hint: `check the host name, the port and that sshd runs there (try: ${sshTryCommand(hop.name)})`,
          cause: e,
        }),
      });
    });
    client.on('close', () => settle(keyFailure ?? { error: new CommcostError('HOST_UNREACHABLE', `connection to ${hop.name} (${hop.hostname}:${hop.port}) closed during the handshake`, { where }) }));
    let next = 0;
    const config: ConnectConfig = {
      host: hop.hostname,
      port: hop.port,
      username: hop.user,
      readyTimeout: options.readyTimeoutMs ?? 20_000,
      keepaliveInterval: options.keepaliveIntervalMs ?? 15_000,
      keepaliveCountMax: 3,
      hostVerifier,
      authHandler: (_left, _partial, cb) => {
        const m = methods[next++];
        if (m) cb(m);
        else (cb as unknown as (m: false) => void)(false);
      },
    };
    if (sock) config.sock = sock;
    client.connect(config);
    // TCP_NODELAY on this hop's socket (a jump host's too; a hop through a forwarded channel has
    // none of its own and rides on the first hop's). Without it every small SFTP request waits
    // for the peer's delayed ACK (Nagle): ~135 ms per upload instead of ~1 ms on loopback
    // (test/integration/sshUpload.test.ts). Node applies it when the socket connects.
    client.setNoDelay(true);
  });
}
