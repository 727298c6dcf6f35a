/**
 * A pre-hello flood against a launched rank 0's node server (0.0.0.0, the port every rank of a
 * job knows): `connections` connections, each sending `bytes` with no newline and no hello,
 * while the agent's resident memory is sampled (/proc/<pid>/status VmRSS every 20 ms). Used by
 * test/security/flood.test.ts and the fault table of test/integration/faults.test.ts.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { distDir } from './agentHarness';
import { freePort, waitListening } from './ports';

/** What a flood did to the agent. RSS figures in bytes, from /proc; times in ms. */
export interface FloodResult {
  rssBefore: number;
  rssPeak: number;
  floodMs: number;
  /** Connections the agent closed (or that ended) before the 30 s cap. */
  closed: number;
  /** Whether rank 0 was still running after the flood. */
  alive: boolean;
  /** What rank 0 answered a node hello with after the flood ('' for nothing). */
  answer: string;
  /**
   * The connection cap, probed after the flood: `idle` connections opened at once that send
   * nothing, and how many of them rank 0 closed within 1 s (those past its cap of expected peers
   * + PRE_AUTH_CONNECTIONS; the rest wait for the hello deadline). Zero and zero when not asked.
   */
  idle: { opened: number; closedWithin1s: number };
  stderr: string;
}

/**
 * Opens `n` connections to 127.0.0.1:`port` at once, sends nothing, and counts those the peer
 * closes within `withinMs`; destroys the rest.
 */
async function idleConnections(port: number, n: number, withinMs: number): Promise<number> {
  const sockets: net.Socket[] = [];
  let closedByPeer = 0;
  let done = false;
  await Promise.all(
    Array.from({ length: n }, () =>
      new Promise<void>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => resolve());
        s.on('error', () => resolve());
        s.on('close', () => {
          if (!done) closedByPeer++;
          resolve();
        });
        sockets.push(s);
      }),
    ),
  );
  await new Promise((r) => setTimeout(r, withinMs));
  done = true;
  for (const s of sockets) s.destroy();
  return closedByPeer;
}

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/**
 * Starts a launched rank 0 (world of 2, simulated NCCL), floods it, asks it a hello, then (when
 * `idle` > 0) opens `idle` silent connections at once to probe its connection cap; kills it.
 */
export async function floodLaunchedRank0(connections: number, bytes: number, idle = 0): Promise<FloodResult> {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-flood-'));
  const rank0 = spawn(process.execPath, [path.join(distDir, 'agent.js'), 'rank', '--simulate', '--experiments', 'init', '--deadline', '60', '--out', path.join(dir, 'run.jsonl')], {
    env: { ...process.env, COMMCOST_RANK: '0', COMMCOST_WORLD_SIZE: '2', COMMCOST_PORT: String(port), COMMCOST_TOKEN: 'flood-secret' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  rank0.stderr.on('data', (d) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => rank0.on('exit', (c) => r(c)));
  try {
    // Listening (not only started: its start-up log line comes before the listen, and a flood of
    // refused connections would test nothing), then settled, for the RSS before.
    await waitListening(rank0.pid!, port, 30_000, () => rank0.exitCode !== null).catch((e: Error) => {
      throw new Error(`${e.message}: ${stderr.slice(-1500)}`);
    });
    await new Promise((r) => setTimeout(r, 800));
    const pid = rank0.pid!;
    const rssBefore = rssBytes(pid);
    let rssPeak = rssBefore;
    const sampler = setInterval(() => {
      try {
        rssPeak = Math.max(rssPeak, rssBytes(pid));
      } catch {
        // Exited: reported as not alive.
      }
    }, 20);
    const payload = Buffer.alloc(bytes, 0x41);
    const t0 = Date.now();
    let closed = 0;
    await Promise.all(
      Array.from({ length: connections }, () =>
        new Promise<void>((resolve) => {
          const s = net.connect(port, '127.0.0.1', () => s.end(payload));
          s.on('error', () => undefined);
          s.on('close', () => {
            closed++;
            resolve();
          });
          setTimeout(() => (s.destroy(), resolve()), 30_000);
        }),
      ),
    );
    const floodMs = Date.now() - t0;
    await new Promise((r) => setTimeout(r, 300));
    clearInterval(sampler);
    const alive = rank0.exitCode === null;
    if (alive) rssPeak = Math.max(rssPeak, rssBytes(pid));
    const answer = await new Promise<string>((resolve) => {
      let got = '';
      const hello = { t: 'node/hello', nonce: randomBytes(16).toString('hex'), hostname: 'h', pid: 1, fixedRank: 1, worldSize: 2, slots: 1, devices: [0], gpus: ['G'], ncclVersion: '2', simulated: true };
      const s = net.connect(port, '127.0.0.1', () => s.write(JSON.stringify(hello) + '\n'));
      // Ended, not destroyed, once answered: 'close' then waits for rank 0's own end of the
      // connection, so rank 0 no longer counts it against its cap when the silent connections
      // below arrive (a destroy raced them: one more closed than the cap explains).
      s.on('data', (d) => {
        got += d.toString();
        if (got.includes('\n')) s.end();
      });
      s.on('error', () => undefined);
      s.on('close', () => resolve(got));
      setTimeout(() => s.destroy(), 3000);
    });
    const closedWithin1s = idle > 0 ? await idleConnections(port, idle, 1000) : 0;
    return { rssBefore, rssPeak, floodMs, closed, alive, answer, idle: { opened: idle, closedWithin1s }, stderr };
  } finally {
    rank0.kill('SIGKILL');
    await exited;
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
