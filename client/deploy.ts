/**
 * Deploys the agent payload to a host and finds a Node ≥ 18 there to run it.
 *
 * Payload: `dist/agent.js` and everything in `dist/native/` (the addon, the simulated NCCL), laid
 * out remotely as `~/.cache/commcost/<hash>/{agent.js,native/…,manifest.json}` where `<hash>` is
 * the first 16 hex of a sha256 over every file's name and content. A host gets only the files it
 * needs ({@link filesForHost}: no other platform's prebuilt, no addon sources or headers when its
 * platform has a prebuilt addon), its platform read by the same command that probes the folder. Files are checked with
 * `sha256sum` before and after upload; only missing or different ones are sent (SFTP fastPut),
 * up to {@link UPLOAD_CONCURRENCY} files at a time on the one SFTP session (its requests are
 * pipelined), each logged with its time.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { CommcostError, errorText } from './errors';
import type { PreparedFolder } from './preparedFolder';
import type { RemoteExec, SshSession } from './sshSession';

/** One payload file: `rel` is its POSIX path inside the deployed folder. */
export interface PayloadFile {
  rel: string;
  abs: string;
  /** sha256 hex of the content. */
  sha256: string;
  /** Bytes. */
  size: number;
}

export interface AgentPayload {
  /** First 16 hex of sha256 over (rel, NUL, content sha256, NUL) of every file in rel order. */
  hash: string;
  files: PayloadFile[];
}

/**
 * Collects the payload from a built `dist/` folder.
 * @throws CommcostError NO_AGENT when `<distDir>/agent.js` is missing (build first)
 */
export async function collectPayload(distDir: string): Promise<AgentPayload> {
  const agent = join(distDir, 'agent.js');
  if (!existsSync(agent)) {
    throw new CommcostError('NO_AGENT', `the agent bundle ${agent} is missing`, { hint: 'build it with node scripts/build.mjs' });
  }
  const entries: { rel: string; abs: string }[] = [{ rel: 'agent.js', abs: agent }];
  const nativeDir = join(distDir, 'native');
  if (existsSync(nativeDir)) {
    const walk = async (dir: string, rel: string): Promise<void> => {
      for (const d of await readdir(dir, { withFileTypes: true })) {
        if (d.isDirectory()) await walk(join(dir, d.name), posix.join(rel, d.name));
        else if (d.isFile()) entries.push({ rel: posix.join(rel, d.name), abs: join(dir, d.name) });
      }
    };
    await walk(nativeDir, 'native');
  }
  entries.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  const total = createHash('sha256');
  const files: PayloadFile[] = [];
  for (const e of entries) {
    const content = await readFile(e.abs);
    const sha256 = createHash('sha256').update(content).digest('hex');
    total.update(e.rel).update('\0').update(sha256).update('\0');
    files.push({ ...e, sha256, size: (await stat(e.abs)).size });
  }
  return { hash: total.digest('hex').slice(0, 16), files };
}

/**
 * A POSIX sh fragment that sets `$a` to the host's platform as the payload names its prebuilt
 * folders (`native/<a>/`): linux-x64, linux-arm64, or empty for any other `uname -sm` (then every
 * file is sent: the agent builds the addon from the sources). Used by the launch script
 * (quickLaunch.ts) and the deploy's own probe, which print it as `COMMCOST-PLATFORM\t<a>`.
 */
export const PLATFORM_SH = 'case "$(uname -sm 2>/dev/null)" in "Linux x86_64") a=linux-x64;; "Linux aarch64"|"Linux arm64") a=linux-arm64;; *) a=;; esac';

/**
 * The payload files a host of `platform` (a {@link PLATFORM_SH} answer) needs: the prebuilt
 * folders of other platforms (`native/linux-<other>/`) are left out, and so are the addon's
 * sources and headers (`native/src/`, `native/include/`, used only to build the addon on a host
 * with no matching prebuilt) when `native/<platform>/commcost.node` is in the payload. An empty
 * or unknown platform needs every file. Order kept.
 */
export function filesForHost(files: readonly PayloadFile[], platform: string): PayloadFile[] {
  if (!/^linux-[a-z0-9]+$/.test(platform)) return [...files];
  const prebuilt = files.some((f) => f.rel === `native/${platform}/commcost.node`);
  return files.filter((f) => {
    const other = /^native\/(linux-[^/]+)\//.exec(f.rel);
    if (other && other[1] !== platform) return false;
    return !(prebuilt && /^native\/(src|include)\//.test(f.rel));
  });
}

/** The value of a `COMMCOST-PLATFORM\t<a>` line among `lines` ('' when absent or empty). */
export function platformOf(lines: readonly string[]): string {
  for (const l of lines) {
    const [tag, value] = l.replace(/\r$/, '').split('\t');
    if (tag === 'COMMCOST-PLATFORM') return value ?? '';
  }
  return '';
}

/** The remote home directory (`$HOME` of the login). */
export async function remoteHome(exec: RemoteExec): Promise<string> {
  const r = await exec(['sh', '-c', 'printf %s "$HOME"']);
  const home = r.stdout.trim();
  if (r.code !== 0 || !home.startsWith('/')) {
    throw new CommcostError('DEPLOY_FAILED', `cannot read $HOME on the host: ${r.stderr.trim() || 'empty'}`);
  }
  return home;
}

/**
 * sha256 of each `rel` under `dir` on the host; files that are missing or unreadable are absent
 * from the map.
 */
export async function remoteHashes(exec: RemoteExec, dir: string, rels: readonly string[]): Promise<Map<string, string>> {
  const r = await exec(['sh', '-c', 'cd "$1" 2>/dev/null || exit 0; shift; sha256sum -- "$@" 2>/dev/null; exit 0', 'sh', dir, ...rels]);
  return parseSha256sum(r.stdout);
}

/** `sha256sum` output → rel path → hex digest. */
function parseSha256sum(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^\\?([0-9a-f]{64}) [ *](.*)$/.exec(line);
    if (m) out.set(m[2]!, m[1]!);
  }
  return out;
}

export interface DeployResult {
  /** Absolute remote folder holding `agent.js`. */
  remoteDir: string;
  /** rel paths uploaded this time (empty when everything was in place). */
  uploaded: string[];
}

/** Files uploaded at once on the SFTP session (each fastPut pipelines its own writes too). */
export const UPLOAD_CONCURRENCY = 8;

function fastPut(sftp: Awaited<ReturnType<SshSession['sftp']>>, local: string, remote: string): Promise<void> {
  return new Promise((resolve, reject) => sftp.fastPut(local, remote, (err) => (err ? reject(err) : resolve())));
}

function writeRemote(sftp: Awaited<ReturnType<SshSession['sftp']>>, remote: string, text: string): Promise<void> {
  return new Promise((resolve, reject) => sftp.writeFile(remote, text, (err) => (err ? reject(err) : resolve())));
}

/**
 * Watches `session` during a deploy: when the SSH connection drops, every failure that follows
 * (an SFTP request without answer, an exec that ends without status, hashes that cannot be read)
 * is reported as the drop it is, not as a problem of the files or the host's disk.
 */
class DropWatch {
  private lost: CommcostError | undefined;
  private closed = false;
  private readonly waiters: (() => void)[] = [];
  private readonly unsubscribe: () => void;
  /** Settles when the connection closes (an SFTP request in flight may never be answered then). */
  readonly whenClosed: Promise<void>;
  private closedNow!: () => void;

  constructor(private readonly session: SshSession) {
    this.whenClosed = new Promise((r) => (this.closedNow = r));
    if (session.isClosed) this.closedNow();
    this.unsubscribe = session.onClose((e) => {
      this.closed = true;
      this.lost = e;
      this.closedNow();
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /**
   * The CONNECTION_LOST error for a drop after `uploaded` of `toUpload` files, when the
   * connection is gone or goes within `graceMs` (its close event may trail the request that
   * failed), else undefined.
   */
  async dropped(uploaded: number, toUpload: number | undefined, graceMs = 250): Promise<CommcostError | undefined> {
    if (!this.closed && !this.session.isClosed) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, graceMs);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    if (!this.closed && !this.session.isClosed) return undefined;
    const host = this.session.target.name;
    const why = this.lost?.message.replace(/^SSH connection to .*? dropped:?\s*/, '') ?? '';
    return new CommcostError(
      'CONNECTION_LOST',
      `SSH connection to ${host} dropped during deploy (${toUpload === undefined ? 'while checking what to upload' : `after ${uploaded} of ${toUpload} file(s) uploaded`}${why ? `; ${why}` : ''}): the agent was not started, nothing was measured yet`,
      {
        where: { host },
        hint: `check the network and that ${host} is up, then run again: the files already uploaded are checked by their sha256 and not sent again`,
        ...(this.lost ? { cause: this.lost } : {}),
      },
    );
  }

  dispose(): void {
    this.unsubscribe();
  }
}

/**
 * Makes sure the payload is on the host under `~/.cache/commcost/<hash>/` and intact.
 * @param log our own log lines (what is uploaded)
 * @param options.prepared the folder quickLaunch.ts's script made and the files it found in
 *   place: the deploy then runs no command of its own to probe; options.verify false leaves the
 *   check after upload to the caller (the launch script checks every file before it starts the agent)
 * @throws CommcostError DEPLOY_FAILED naming the host and the file (mkdir, upload or verify
 *   failure); CONNECTION_LOST when the SSH connection drops during the deploy (how many files
 *   were uploaded by then, and that nothing was measured)
 */
export async function deployAgent(session: SshSession, payload: AgentPayload, log: (line: string) => void = () => undefined, options: DeployOptions = {}): Promise<DeployResult> {
  const watch = new DropWatch(session);
  const progress: UploadProgress = { uploaded: 0 };
  const work = deployWatched(session, payload, log, progress, options);
  work.catch(() => undefined); // a request left unanswered by the drop settles (or not) later
  try {
    // An SFTP request in flight when the connection drops is never answered: stop at the drop.
    return await Promise.race([work, watch.whenClosed.then(() => Promise.reject(new Error('the SSH connection closed')))]);
  } catch (e) {
    throw (await watch.dropped(progress.uploaded, progress.toUpload)) ?? e;
  } finally {
    watch.dispose();
  }
}

/** How far a deploy got: files to upload (once known) and uploaded so far. */
interface UploadProgress {
  toUpload?: number;
  uploaded: number;
}

/** The deploy's own probe, one remote command: the folder, its subfolders made, and the hashes in place. */
async function probeFolder(session: SshSession, payload: AgentPayload, rels: string[], relDirs: string[]): Promise<{ remoteDir: string; platform: string; before: Map<string, string>; mkdirErrors: string[] }> {
  const host = session.target.name;
  const where = { host };
  // One round trip for the folder, its subfolders (made here, so an upload needs no mkdir of
  // its own) and the hashes: each exec pays the login shell's start-up (its rc files included).
  const probe = await session.run([
    'sh',
    '-c',
    'd="$HOME/.cache/commcost/$1"; shift; printf "%s\\n" "$d"; ' +
      `${PLATFORM_SH}; printf "COMMCOST-PLATFORM\\t%s\\n" "$a"; ` +
      'while [ "$#" -gt 0 ] && [ "$1" != -- ]; do mkdir -p -- "$d/$1" 2>&1 | sed "s/^/mkdir: /"; shift; done; [ "$#" -gt 0 ] && shift; ' +
      'cd "$d" 2>/dev/null && sha256sum -- "$@" 2>/dev/null; exit 0',
    'sh',
    payload.hash,
    ...relDirs,
    '--',
    ...rels,
  ]);
  const remoteDir = probe.stdout.split('\n')[0] ?? '';
  if (probe.code !== 0 || !remoteDir.startsWith('/')) {
    throw new CommcostError('DEPLOY_FAILED', `cannot find $HOME/.cache/commcost on ${host}: ${probe.stderr.trim() || `exit ${String(probe.code)}`}`, { where });
  }
  const before = parseSha256sum(probe.stdout);
  const lines = probe.stdout.split('\n');
  return { remoteDir, platform: platformOf(lines), before, mkdirErrors: lines.filter((l) => l.startsWith('mkdir: ')).map((l) => l.slice(7)) };
}

/** How {@link deployAgent} may skip its own remote commands (see there). */
export interface DeployOptions {
  prepared?: PreparedFolder;
  verify?: boolean;
}

async function deployWatched(session: SshSession, payload: AgentPayload, log: (line: string) => void, progress: UploadProgress, options: DeployOptions): Promise<DeployResult> {
  const host = session.target.name;
  const where = { host };
  const rels = payload.files.map((f) => f.rel);
  const relDirs = [...new Set(rels.map((r) => posix.dirname(r)))];
  const probed = options.prepared ? undefined : await probeFolder(session, payload, rels, relDirs);
  const remoteDir = options.prepared?.remoteDir ?? probed!.remoteDir;
  const mkdirErrors = options.prepared?.mkdirFailed ?? probed!.mkdirErrors;
  // Only what this host needs: its own prebuilt addon, no sources or headers beside it (filesForHost).
  const platform = options.prepared?.platform ?? probed!.platform;
  const needed = filesForHost(payload.files, platform);
  const left = payload.files.length - needed.length;
  if (left > 0) log(`${host} is ${platform}: ${left} file(s) of the payload not needed there (other platforms' prebuilt addons, or the addon's sources and headers beside its prebuilt)`);
  const missing = needed.filter((f) => (options.prepared ? !options.prepared.present.has(f.rel) : probed!.before.get(f.rel) !== f.sha256));
  if (missing.length === 0) {
    log(`agent ${payload.hash} already deployed on ${host} in ${remoteDir}`);
    return { remoteDir, uploaded: [] };
  }
  if (mkdirErrors.length > 0) {
    throw new CommcostError('DEPLOY_FAILED', `cannot create ${remoteDir} on ${host}: ${mkdirErrors.join('; ')}`, { where, hint: 'check free space and permissions of ~/.cache on the host' });
  }
  progress.toUpload = missing.length;
  const sftp = await session.sftp();
  log(`uploading ${missing.length} file(s) to ${host}:${remoteDir}, ${UPLOAD_CONCURRENCY} at a time`);
  const queue = [...missing];
  const upload = async (): Promise<void> => {
    for (let f = queue.shift(); f; f = queue.shift()) {
      const t0 = performance.now();
      try {
        await fastPut(sftp, f.abs, posix.join(remoteDir, f.rel));
      } catch (e) {
        queue.length = 0; // the other workers stop after their current file
        throw new CommcostError('DEPLOY_FAILED', `upload of ${f.rel} to ${host}:${remoteDir} failed: ${errorText(e)}`, { where, hint: 'check free space and permissions of ~/.cache on the host', cause: e });
      }
      // The time of one upload (open, writes, close: a few round trips) is what a stalled
      // connection shows first (test/integration/sshUpload.test.ts reads this line).
      progress.uploaded++;
      log(`uploaded ${f.rel} (${f.size} bytes) in ${(performance.now() - t0).toFixed(1)} ms`);
    }
  };
  const workers = await Promise.allSettled(Array.from({ length: Math.min(UPLOAD_CONCURRENCY, missing.length) }, upload));
  const failed = workers.find((w): w is PromiseRejectedResult => w.status === 'rejected');
  if (failed) throw failed.reason;
  const manifest = { hash: payload.hash, platform, files: needed.map(({ rel, sha256, size }) => ({ rel, sha256, size })) };
  try {
    await writeRemote(sftp, posix.join(remoteDir, 'manifest.json'), JSON.stringify(manifest, null, 2) + '\n');
  } catch (e) {
    throw new CommcostError('DEPLOY_FAILED', `cannot write manifest.json in ${host}:${remoteDir}: ${errorText(e)}`, { where, cause: e });
  }
  if (options.verify !== false) {
    const after = await remoteHashes(
      session.run,
      remoteDir,
      needed.map((f) => f.rel),
    );
    // A drop while hashing reads as "nothing matches": say it was the connection.
    if (session.isClosed) throw new CommcostError('CONNECTION_LOST', `SSH connection to ${host} is closed`, { where });
    const bad = needed.filter((f) => after.get(f.rel) !== f.sha256);
    if (bad.length > 0) {
      throw new CommcostError('DEPLOY_FAILED', `after upload, ${bad.map((f) => f.rel).join(', ')} in ${host}:${remoteDir} ${bad.length === 1 ? 'does' : 'do'} not match the local sha256`, {
        where,
        hint: 'check free space on the host and run again',
      });
    }
  }
  return { remoteDir, uploaded: missing.map((f) => f.rel) };
}

/** A Node found on the host. */
export interface RemoteNode {
  path: string;
  /** e.g. "v20.11.1". */
  version: string;
  /** Which place it came from (one of {@link NodeSearchOptions} places). */
  source: 'explicit' | 'path' | 'login-shell' | 'vscode-server';
}

export interface NodeSearchOptions {
  /** Explicit path (setting `commcost.remoteNodePath` / `--node`): the only place tried when set. */
  explicit?: string;
  /** Home folder to search under instead of the remote `$HOME` (tests). */
  home?: string;
  /** PATH to search instead of the login's (tests); skips the `bash -lc` probe. */
  pathEnv?: string;
}

/** Lowest Node major the agent runs on. */
export const MIN_NODE_MAJOR = 18;

/**
 * Finds Node ≥ 18 on a host: explicit path → `command -v node` in `sh -c` → the same in
 * `bash -lc` → `~/.vscode-server/bin/*\/node` → `~/.vscode-server/cli/servers/*\/server/node`.
 * Each candidate is asked `node -v`.
 * @param host the host's name for messages
 * @throws CommcostError NO_NODE listing every place searched (and what each gave) and the two fixes
 */
export async function findRemoteNode(exec: RemoteExec, host: string, options: NodeSearchOptions = {}): Promise<RemoteNode> {
  const tried: string[] = [];
  const probe = async (path: string, source: RemoteNode['source']): Promise<RemoteNode | undefined> => {
    const r = await exec([path, '-v'], { timeoutMs: 15_000 });
    const m = /^v(\d+)\.\d+\.\d+/.exec(r.stdout.trim());
    if (r.code !== 0 || !m) {
      tried.push(`${path} (does not run: ${(r.stderr.trim() || `exit ${String(r.code)}`).split('\n')[0]})`);
      return undefined;
    }
    if (Number(m[1]) < MIN_NODE_MAJOR) {
      tried.push(`${path} (${r.stdout.trim()}, too old)`);
      return undefined;
    }
    return { path, version: r.stdout.trim(), source };
  };
  const fix = `install Node ≥ ${MIN_NODE_MAJOR} on ${host}, or set commcost.remoteNodePath (CLI: --node <path>) to a Node ≥ ${MIN_NODE_MAJOR} there`;

  if (options.explicit) {
    const found = await probe(options.explicit, 'explicit');
    if (found) return found;
    throw new CommcostError('NO_NODE', `no usable Node on ${host}: searched ${tried.join('; ')}`, { where: { host }, hint: fix });
  }
  // Each lookup prints `<path>\t<node -v>` lines in one round trip (each exec pays the login
  // shell's start-up on the host).
  const report = 'for f in "$@"; do [ -x "$f" ] && printf "%s\\t%s\\n" "$f" "$("$f" -v 2>&1 | head -n 1)"; done; exit 0';
  const shell = options.pathEnv !== undefined ? ['/usr/bin/env', `PATH=${options.pathEnv}`, '/bin/sh'] : ['sh'];
  const lookups: { argv: string[]; source: RemoteNode['source']; label: string }[] = [
    { argv: [...shell, '-c', `set -- "$(command -v node)"; ${report}`], source: 'path', label: 'node on PATH (sh -c)' },
  ];
  if (options.pathEnv === undefined) {
    lookups.push({ argv: ['bash', '-lc', `set -- "$(command -v node)"; ${report}`], source: 'login-shell', label: 'node on the login PATH (bash -lc)' });
  }
  lookups.push({
    argv: ['sh', '-c', `h=\${1:-$HOME}; set -- "$h"/.vscode-server/bin/*/node "$h"/.vscode-server/cli/servers/*/server/node; ${report}`, 'sh', options.home ?? ''],
    source: 'vscode-server',
    label: '',
  });
  let vscodeSeen = 0;
  for (const l of lookups) {
    const r = await exec(l.argv, { timeoutMs: 15_000 });
    const found = r.stdout.split('\n').filter((x) => x.startsWith('/')).map((x) => x.split('\t') as [string, string?]);
    if (l.source === 'vscode-server') vscodeSeen = found.length;
    else if (found.length === 0) tried.push(`${l.label} (not found)`);
    for (const [path, version = ''] of found.reverse()) {
      const m = /^v(\d+)\.\d+\.\d+/.exec(version.trim());
      if (!m) tried.push(`${path} (does not run: ${version.trim() || 'no output'})`);
      else if (Number(m[1]) < MIN_NODE_MAJOR) tried.push(`${path} (${version.trim()}, too old)`);
      else return { path, version: version.trim(), source: l.source };
    }
  }
  const base = options.home ?? '~';
  tried.push(`${base}/.vscode-server/bin/*/node${vscodeSeen === 0 ? ' (none)' : ''}`);
  tried.push(`${base}/.vscode-server/cli/servers/*/server/node${vscodeSeen === 0 ? ' (none)' : ''}`);
  throw new CommcostError('NO_NODE', `no Node ≥ ${MIN_NODE_MAJOR} on ${host}: searched ${tried.join('; ')}`, { where: { host }, hint: fix });
}
