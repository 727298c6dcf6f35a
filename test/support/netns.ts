/**
 * Test "hosts" made of Linux network namespaces: `createNetnsHosts(n)` makes n namespaces joined
 * by a bridge in the root namespace, so each one reaches every other one and the root namespace
 * over real TCP/IP with its own address (10.x.y.(i+2)/24; the bridge is 10.x.y.1).
 *
 *   root ns: bridge cc<pid><l>br 10.x.y.1/24
 *              ├─ veth cc<pid><l>v0 ══ cc<pid><l>p0 (in netns cc<pid><l>h0) 10.x.y.2/24, lo up, default via .1
 *              ├─ veth cc<pid><l>v1 ══ cc<pid><l>p1 (in netns cc<pid><l>h1) 10.x.y.3/24
 *              └─ …
 *
 * <pid> keeps parallel test processes apart, <l> (a..z) several labs of one process; x.y come from
 * both and skip any 10.x.y.0/24 already on this machine. Needs root and iproute2 (`ip`);
 * {@link netnsMissingReason} tells why not, for a skip. `destroy` (also run on process exit and on
 * SIGINT/SIGTERM/SIGHUP) kills every process in the namespaces and deletes namespaces, veths and
 * bridge; labs of dead processes (SIGKILL) are swept by the next `createNetnsHosts`.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync } from 'node:fs';

export interface NetnsHost {
  /** Label, `host<i>`. */
  name: string;
  /** The network namespace (`ip netns exec <netns> …`). */
  netns: string;
  /** Its IPv4 address on the lab's /24 (10.x.y.(i+2)). */
  address: string;
  /** Root-namespace end of its veth (attached to the bridge; `cut` sets it down). */
  veth: string;
  /** Namespace end of its veth (holds `address`). */
  peer: string;
}

export interface NetnsRunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface NetnsLab {
  hosts: NetnsHost[];
  /** The bridge's name in the root namespace. */
  bridge: string;
  /** The bridge's address (the root namespace as seen from the hosts; their default route). */
  bridgeAddress: string;
  /** Prefix length of the lab's network (24). */
  prefixLength: number;
  /**
   * Spawns `cmd args` inside host i's namespace (`ip netns exec`, which execs: the child's pid is
   * the command's). `destroy` kills it.
   */
  exec(i: number, cmd: string, args?: readonly string[], opts?: SpawnOptions): ChildProcess;
  /** `exec` to completion; killed (SIGKILL) after `timeoutMs` (default 30 s). */
  run(i: number, cmd: string, args?: readonly string[], opts?: SpawnOptions & { timeoutMs?: number; input?: string }): Promise<NetnsRunResult>;
  /** Sets host i's veth down: its link is cut (its address stops answering; packets are dropped). */
  cut(i: number): void;
  /** Sets host i's veth up again. */
  restore(i: number): void;
  /**
   * Kills every process in the lab's namespaces (SIGKILL), deletes namespaces, veths and bridge.
   * Synchronous and idempotent.
   */
  destroy(): void;
}

export interface NetnsOptions {
  /** Name prefix (default `cc`): names are `<prefix><pid><letter>h<i>` etc. At most 3 characters. */
  prefix?: string;
}

const IP_CANDIDATES = ['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip', '/bin/ip'];

function ipBinary(): string | undefined {
  return IP_CANDIDATES.find((p) => existsSync(p));
}

function ip(args: readonly string[]): string {
  const bin = ipBinary();
  if (!bin) throw new Error('ip (iproute2) is missing');
  try {
    return execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as { stderr?: string; message: string };
    throw new Error(`ip ${args.join(' ')}: ${(err.stderr || err.message).trim()}`);
  }
}

/** `ip …` ignoring failure (for teardown of things that may already be gone). */
function ipQuiet(args: readonly string[]): boolean {
  const bin = ipBinary();
  if (!bin) return false;
  return spawnSync(bin, args, { stdio: 'ignore' }).status === 0;
}

let missingCache: { reason: string | undefined } | undefined;

/**
 * Why network-namespace hosts cannot be made here (not Linux, not root, no `ip`, or `ip netns add`,
 * veth or bridge creation fails), or undefined when they can. Probed once per process.
 */
export function netnsMissingReason(): string | undefined {
  if (missingCache) return missingCache.reason;
  missingCache = { reason: probe() };
  return missingCache.reason;
}

function probe(): string | undefined {
  if (process.platform !== 'linux') return `network namespaces need Linux (this is ${process.platform})`;
  if (typeof process.getuid === 'function' && process.getuid() !== 0) return 'network namespaces need root (uid 0)';
  if (!ipBinary()) return `ip (iproute2) is missing (none of ${IP_CANDIDATES.join(', ')}; apt-get install -y iproute2)`;
  const ns = `ccprobe${process.pid}`;
  const br = `ccpb${process.pid}`;
  const veth = `ccpv${process.pid}`;
  try {
    ip(['netns', 'add', ns]);
    ip(['link', 'add', veth, 'type', 'veth', 'peer', 'name', `${veth}p`, 'netns', ns]);
    ip(['link', 'add', 'name', br, 'type', 'bridge']);
    ip(['link', 'set', veth, 'master', br]);
    return undefined;
  } catch (e) {
    return `cannot make network namespaces here: ${(e as Error).message}`;
  } finally {
    ipQuiet(['link', 'del', veth]);
    ipQuiet(['link', 'del', br]);
    ipQuiet(['netns', 'del', ns]);
  }
}

// ---------------------------------------------------------------------------------------------
// Labs alive in this process, torn down on exit / fatal signals.

const liveLabs = new Set<NetnsLab>();
let labSeq = 0;
const SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

function destroyAll(): void {
  for (const lab of [...liveLabs]) {
    try {
      lab.destroy();
    } catch {
      /* best effort on the way out */
    }
  }
}

function onSignal(sig: NodeJS.Signals): void {
  destroyAll();
  unregisterHooks();
  process.kill(process.pid, sig); // the default action now that our handler is gone
}

function registerHooks(): void {
  if (process.listeners('exit').includes(destroyAll)) return;
  process.on('exit', destroyAll);
  for (const s of SIGNALS) process.on(s, onSignal);
}

function unregisterHooks(): void {
  process.off('exit', destroyAll);
  for (const s of SIGNALS) process.off(s, onSignal);
}

// ---------------------------------------------------------------------------------------------

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function netnsNames(): string[] {
  return ip(['netns', 'list'])
    .split('\n')
    .map((l) => l.trim().split(/\s+/)[0] ?? '')
    .filter(Boolean);
}

function linkNames(): string[] {
  // "3: name@peer: <…>" or "3: name: <…>"
  return ip(['-o', 'link', 'show'])
    .split('\n')
    .map((l) => /^\d+:\s+([^:@\s]+)/.exec(l)?.[1] ?? '')
    .filter(Boolean);
}

function killNetnsPids(ns: string): number[] {
  const bin = ipBinary();
  if (!bin) return [];
  const r = spawnSync(bin, ['netns', 'pids', ns], { encoding: 'utf8' });
  const pids = (r.stdout ?? '')
    .split(/\s+/)
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 1 && n !== process.pid);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
  return pids;
}

/** Deletes the namespaces and links of labs whose process is dead (a run killed with SIGKILL). */
function sweepStale(prefix: string): void {
  const esc = prefix.replace(/[^a-z0-9]/gi, '');
  const nsRe = new RegExp(`^${esc}(\\d+)[a-z]h\\d+$`);
  const linkRe = new RegExp(`^${esc}(\\d+)[a-z](?:br|v\\d+)$`);
  for (const ns of netnsNames()) {
    const m = nsRe.exec(ns);
    if (m && !pidAlive(Number(m[1]))) {
      killNetnsPids(ns);
      ipQuiet(['netns', 'del', ns]);
    }
  }
  for (const link of linkNames()) {
    const m = linkRe.exec(link);
    if (m && !pidAlive(Number(m[1]))) ipQuiet(['link', 'del', link]);
  }
}

/** 10.x.y (x in 200..255) derived from pid and lab, skipping any 10.x.y.0/24 seen on this machine. */
function pickSubnet(seq: number): string {
  const used = ip(['-4', '-o', 'addr', 'show']) + ip(['-4', 'route', 'show', 'table', 'all']);
  const span = 56 * 256;
  let key = (process.pid * 26 + seq) % span;
  for (let tries = 0; tries < span; tries++, key = (key + 1) % span) {
    const net = `10.${200 + (key >> 8)}.${key & 255}`;
    if (!used.includes(`${net}.`)) return net;
  }
  throw new Error('no free 10.x.y.0/24 for the netns lab');
}

/**
 * Makes `count` (1..200) network-namespace hosts on one bridge (see the file comment).
 * On failure, whatever was made is removed before the error is thrown.
 */
export async function createNetnsHosts(count: number, opts: NetnsOptions = {}): Promise<NetnsLab> {
  const missing = netnsMissingReason();
  if (missing) throw new Error(missing);
  if (!Number.isInteger(count) || count < 1 || count > 200) throw new Error(`createNetnsHosts: count ${count} is not 1..200`);
  const prefix = opts.prefix ?? 'cc';
  if (!/^[a-z]{1,3}$/.test(prefix)) throw new Error(`createNetnsHosts: prefix ${JSON.stringify(prefix)} is not 1-3 letters a-z`);
  sweepStale(prefix);
  const seq = labSeq++;
  const base = `${prefix}${process.pid}${String.fromCharCode(97 + (seq % 26))}`; // ≤ 3+7+1 = 11 chars
  const bridge = `${base}br`;
  const net = pickSubnet(seq);
  const bridgeAddress = `${net}.1`;
  const hosts: NetnsHost[] = Array.from({ length: count }, (_, i) => ({
    name: `host${i}`,
    netns: `${base}h${i}`,
    address: `${net}.${i + 2}`,
    veth: `${base}v${i}`,
    peer: `${base}p${i}`,
  }));
  for (const h of hosts) if (h.veth.length > 15 || h.peer.length > 15) throw new Error(`interface name ${h.veth} too long`);

  const children = new Set<ChildProcess>();
  let destroyed = false;
  const made = { bridge: false, netns: [] as string[], veths: [] as string[] };

  const hostAt = (i: number): NetnsHost => {
    const h = hosts[i];
    if (!h) throw new Error(`netns lab has no host ${i} (0..${hosts.length - 1})`);
    return h;
  };

  const lab: NetnsLab = {
    hosts,
    bridge,
    bridgeAddress,
    prefixLength: 24,
    exec(i, cmd, args = [], spawnOpts = {}) {
      if (destroyed) throw new Error('netns lab is destroyed');
      const child = spawn(ipBinary()!, ['netns', 'exec', hostAt(i).netns, cmd, ...args], spawnOpts);
      children.add(child);
      child.once('exit', () => children.delete(child));
      child.once('error', () => children.delete(child));
      return child;
    },
    run(i, cmd, args = [], runOpts = {}) {
      const { timeoutMs = 30_000, input, ...spawnOpts } = runOpts;
      return new Promise((resolve, reject) => {
        const child = lab.exec(i, cmd, args, { ...spawnOpts, stdio: ['pipe', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
        child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
        const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
        child.once('error', (e) => {
          clearTimeout(timer);
          reject(e);
        });
        child.once('close', (code, signal) => {
          clearTimeout(timer);
          resolve({ code, signal, stdout, stderr });
        });
        child.stdin!.on('error', () => {});
        child.stdin!.end(input ?? '');
      });
    },
    cut(i) {
      ip(['link', 'set', hostAt(i).veth, 'down']);
    },
    restore(i) {
      ip(['link', 'set', hostAt(i).veth, 'up']);
    },
    destroy() {
      if (destroyed) return;
      destroyed = true;
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      // Everything else running in the namespaces (e.g. sshd's session processes), until none is left.
      for (let round = 0; round < 20; round++) {
        let any = false;
        for (const ns of made.netns) if (killNetnsPids(ns).length > 0) any = true;
        if (!any) break;
        sleepSync(25);
      }
      for (const v of made.veths) ipQuiet(['link', 'del', v]); // deletes the peer too
      for (const ns of made.netns) ipQuiet(['netns', 'del', ns]);
      if (made.bridge) ipQuiet(['link', 'del', bridge]);
      liveLabs.delete(lab);
      if (liveLabs.size === 0) unregisterHooks();
    },
  };

  liveLabs.add(lab);
  registerHooks();
  try {
    ip(['link', 'add', 'name', bridge, 'type', 'bridge']);
    made.bridge = true;
    ip(['addr', 'add', `${bridgeAddress}/24`, 'dev', bridge]);
    ip(['link', 'set', bridge, 'up']);
    for (const h of hosts) {
      ip(['netns', 'add', h.netns]);
      made.netns.push(h.netns);
      ip(['link', 'add', h.veth, 'type', 'veth', 'peer', 'name', h.peer, 'netns', h.netns]);
      made.veths.push(h.veth);
      ip(['link', 'set', h.veth, 'master', bridge]);
      ip(['link', 'set', h.veth, 'up']);
      ip(['-n', h.netns, 'link', 'set', 'lo', 'up']);
      ip(['-n', h.netns, 'addr', 'add', `${h.address}/24`, 'dev', h.peer]);
      ip(['-n', h.netns, 'link', 'set', h.peer, 'up']);
      ip(['-n', h.netns, 'route', 'add', 'default', 'via', bridgeAddress]);
    }
  } catch (e) {
    lab.destroy();
    throw e;
  }
  return lab;
}
