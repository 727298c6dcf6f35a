/**
 * Barrier release skew (bench.ts, section 1): for each generation, the spread (max − min) of the
 * CLOCK_MONOTONIC time at which each rank's native worker thread saw the release, µs, across N
 * rank processes on this host (test/bench/barrierRank.cjs, the product's native client). In the
 * same run and at the same rank counts:
 *   - shm: the product's one-host release (remote-agent/barrierServer.ts ShmRelease +
 *     native/src/shmBarrier.cc); arrivals still reach the JavaScript server as notices;
 *   - tcp: the product's JavaScript server releasing over TCP (what ranks on other hosts get);
 *   - c-tcp: a C star barrier with the same wire protocol (test/bench/cBarrier.c, built with `cc`);
 *   - the loopback round trip of one 8-byte message (cBarrier rtt), the floor of any TCP release.
 * Target (DESIGN.md): one host, 2–8 ranks, p50 < 10 µs and p99 < 50 µs — on any host: with no
 * more CPUs than ranks the target stays and a miss says that cause (issue #31), never a weaker bar.
 * The one-host release is measured twice: ranks arriving back to back (each waits for the release
 * at once, inside the release's 2 ms spin window), and arrivals spread 0–500 µs (each rank
 * busy-waits a pseudo-random 0–500 µs before each generation, as ranks of a real job arrive when
 * their setup takes different times: inside the 2 ms spin on a host with more CPUs than ranks;
 * with no more CPUs than ranks nothing spins and early ranks sleep on the futex).
 */
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BarrierServer, ShmRelease } from '../../remote-agent/barrierServer';
import { distribution, distText, judgedRow, type Distribution, type TargetTable } from './targets';

type Mode = 'shm' | 'tcp' | 'c-tcp';

/** Runs one rank process; resolves with its release times once its output has closed. */
function runRank(root: string, addon: string, port: number, rank: number, count: number, world: number, env: Record<string, string>): Promise<number[]> {
  return new Promise<number[]>((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(root, 'test', 'bench', 'barrierRank.cjs'), String(port), String(rank), String(count), String(world)], {
      env: { ...process.env, COMMCOST_NATIVE: addon, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    // 'close', not 'exit': 'exit' can come before stdout has drained.
    child.on('close', (code) => {
      if (code !== 0) return reject(new Error(`barrier bench rank ${rank} exited ${code}`));
      try {
        resolve(JSON.parse(out) as number[]);
      } catch (e) {
        reject(new Error(`barrier bench rank ${rank} printed no release times: ${String(e)} (${out.length} bytes)`));
      }
    });
  });
}

/** Starts the C server; resolves with its port and a promise of its end. */
function startCServer(binary: string, world: number, count: number, token: string): Promise<{ port: number; done: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, ['server', String(world), String(count)], { env: { ...process.env, COMMCOST_BARRIER_TOKEN: token }, stdio: ['ignore', 'pipe', 'inherit'] });
    const done = new Promise<void>((res, rej) => child.on('close', (code) => (code === 0 ? res() : rej(new Error(`C barrier server exited ${code}`)))));
    child.stdout.once('data', (d: Buffer) => resolve({ port: Number(d.toString().trim()), done }));
    child.on('error', reject);
  });
}

/**
 * Skew per generation, µs, of `count` generations at `ranks` ranks through `mode` (the first 50
 * generations, connection warm-up, dropped).
 */
export async function barrierSkew(root: string, addon: string, mode: Mode, ranks: number, count: number, cBinary?: string, spreadUs = 0): Promise<number[]> {
  const token = randomBytes(16).toString('hex');
  let port: number;
  let close: () => Promise<void>;
  const env: Record<string, string> = { COMMCOST_BARRIER_TOKEN: token, COMMCOST_BENCH_ARRIVE_SPREAD_US: String(spreadUs) };
  if (mode === 'c-tcp') {
    const c = await startCServer(cBinary!, ranks, count, token);
    port = c.port;
    close = () => c.done;
  } else {
    const server = new BarrierServer({ worldSize: ranks, token, onProtocolError: (m) => console.error(m) });
    port = await server.listen();
    const shm = mode === 'shm' ? ShmRelease.create(ranks) : undefined;
    if (mode === 'shm' && !shm) throw new Error('cannot create the one-host release file in /dev/shm');
    if (shm) env.COMMCOST_BARRIER_SHM = shm.path;
    close = async () => {
      shm?.unlink();
      server.close();
    };
  }
  const outputs = await Promise.all([...Array(ranks).keys()].map((rank) => runRank(root, addon, port, rank, count, ranks, env)));
  await close();
  const skews: number[] = [];
  for (let g = 50; g < count; g++) {
    let lo = Infinity;
    let hi = -Infinity;
    for (const o of outputs) {
      lo = Math.min(lo, o[g]!);
      hi = Math.max(hi, o[g]!);
    }
    skews.push((hi - lo) / 1000);
  }
  return skews;
}

/** Compiles test/bench/cBarrier.c into a temporary folder. @returns the binary, or why not */
function buildC(root: string): { binary?: string; why?: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'commcost-bench-'));
  const binary = path.join(dir, 'cBarrier');
  try {
    execFileSync(process.env.CC ?? 'cc', ['-O2', '-o', binary, path.join(root, 'test', 'bench', 'cBarrier.c')], { stdio: ['ignore', 'ignore', 'pipe'] });
    return { binary };
  } catch (e) {
    return { why: `cannot compile test/bench/cBarrier.c with ${process.env.CC ?? 'cc'}: ${(e as Error).message.split('\n')[0]}` };
  }
}

/**
 * The barrier section: prints each mode's distribution per rank count and adds the one-host rows
 * (and the anchors as references) to `table`. Generations per run: COMMCOST_BENCH_GENS (2050).
 */
export async function barrierBench(root: string, addon: string, table: TargetTable, log: (line: string) => void): Promise<void> {
  const count = Number(process.env.COMMCOST_BENCH_GENS ?? 2050);
  const cpus = os.cpus().length;
  const c = buildC(root);
  if (c.binary) {
    const rtt = JSON.parse(execFileSync(c.binary, ['rtt', String(count)], { encoding: 'utf8' })) as number[];
    const d = distribution(rtt.slice(50));
    log(`   loopback round trip of 8 bytes (C, two processes): ${distText(d)} µs`);
    table.add({ id: 'barrier.loopbackRtt', what: 'loopback TCP round trip (C)', unit: 'µs', dist: d, target: 'floor of a TCP release', verdict: 'reference' });
  } else log(`   C anchors skipped: ${c.why}`);
  const span = "max − min over ranks, per generation, of the CLOCK_MONOTONIC time each rank's native worker thread saw the release";
  const targets = [{ q: 0.5, op: '<' as const, limit: 10 }, { q: 0.99, op: '<' as const, limit: 50 }];
  for (const ranks of [2, 4, 8, 16]) {
    let cTcp: Distribution | undefined;
    for (const mode of ['c-tcp', 'tcp', 'shm', 'shm-spread'] as const) {
      if (mode === 'c-tcp' && !c.binary) continue;
      if (mode === 'shm-spread' && ranks > 8) continue;
      const skews = await barrierSkew(root, addon, mode === 'shm-spread' ? 'shm' : mode, ranks, count, c.binary, mode === 'shm-spread' ? SPREAD_US : 0);
      const d = distribution(skews);
      const name = { shm: 'one-host release (shared memory)', 'shm-spread': `one-host release, arrivals 0–${SPREAD_US} µs`, tcp: 'TCP release, JavaScript server', 'c-tcp': 'TCP release, C server' }[mode];
      log(`   ${String(ranks).padStart(2)} ranks, ${name.padEnd(34)} ${distText(d)}`);
      if (mode === 'c-tcp') cTcp = d;
      if (mode === 'tcp' || mode === 'c-tcp') {
        table.add({ id: `barrier.${mode}.${ranks}`, what: `barrier skew, ${mode === 'tcp' ? 'TCP (JS)' : 'TCP (C)'}, ${ranks} ranks`, unit: 'µs', dist: d, target: 'anchor', verdict: 'reference', span });
        continue;
      }
      const spread = mode === 'shm-spread';
      const head = {
        id: spread ? `barrier.shm.spread.${ranks}` : `barrier.shm.${ranks}`,
        what: `barrier skew, one host, ${ranks} ranks${spread ? `, arrivals 0–${SPREAD_US} µs` : ', back to back'}`,
        unit: 'µs',
        span: `${span}; ${spread ? `each rank busy-waits 0–${SPREAD_US} µs before arriving` : 'ranks arrive back to back (inside the 2 ms spin window)'}`,
        anchor: cTcp ? `TCP (C) barrier at ${ranks} ranks, same run: p50 ${cTcp.p50.toFixed(1)}, p99 ${cTcp.p99.toFixed(1)} µs` : 'no C anchor (cc missing)',
      };
      if (ranks > 8) {
        table.add({ ...head, dist: d, target: 'none (2–8 ranks)', verdict: 'reference' });
        continue;
      }
      const row = judgedRow({ ...head, target: 'p50 < 10, p99 < 50' }, skews, targets);
      // The target stays on any host: a miss with no more CPUs than ranks says that cause.
      if (row.verdict !== 'met' && cpus <= ranks)
        row.note = `cause: ${ranks} ranks on ${cpus} CPUs (CPUs ≤ ranks) — a released rank waits for a CPU, no rank can spin, every release is a futex wake-up; the target needs more CPUs than ranks`;
      table.add(row);
    }
  }
}

/** The spread of arrivals of the second one-host measurement, µs (each rank waits 0–SPREAD_US before each generation). */
const SPREAD_US = 500;
