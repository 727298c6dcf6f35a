/**
 * Ports for tests that start a listening process on a port they chose: a free port, and a wait
 * until that process really listens on it (read from /proc, no connection made), instead of a
 * fixed sleep after a start-up log line (too short on a loaded machine).
 */
import * as fs from 'node:fs';
import * as net from 'node:net';

/** A port that was free on 127.0.0.1 a moment ago (the kernel's pick for port 0). */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** Inodes of the TCP sockets in LISTEN state on local port `port` (IPv4 and IPv6), from /proc/net. */
function listeningInodes(port: number): Set<string> {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const out = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = fs.readFileSync(table, 'utf8');
    } catch {
      continue; // no IPv6 on this host
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      // local_address is ADDR:PORT in hex; st 0A is LISTEN; the inode is the 10th field.
      if (f.length > 9 && f[1]!.endsWith(`:${hexPort}`) && f[3] === '0A') out.add(f[9]!);
    }
  }
  return out;
}

/** Socket inodes process `pid` holds open (its /proc/<pid>/fd links `socket:[N]`). */
function socketInodes(pid: number): Set<string> {
  const out = new Set<string>();
  let fds: string[] = [];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return out; // gone
  }
  for (const fd of fds) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (m) out.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

/**
 * Waits until process `pid` listens on TCP port `port` (checked every 20 ms).
 * @param ms how long to wait at most, ms
 * @throws Error when it does not within `ms`, or `isGone()` says the process ended first
 */
export async function waitListening(pid: number, port: number, ms: number, isGone: () => boolean = () => false): Promise<void> {
  const until = Date.now() + ms;
  for (;;) {
    const listening = listeningInodes(port);
    if (listening.size > 0) {
      for (const inode of socketInodes(pid)) if (listening.has(inode)) return;
    }
    if (isGone()) throw new Error(`process ${pid} ended before it listened on port ${port}`);
    if (Date.now() > until) throw new Error(`process ${pid} did not listen on port ${port} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
