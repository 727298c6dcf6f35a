/**
 * Benchmarks (npm run bench): figures printed as distributions, never asserted.
 *
 * 1. Barrier release skew across N rank processes on this host: for each generation, the
 *    spread (max − min) of the CLOCK_MONOTONIC time at which each rank's native worker thread
 *    saw the release. Target p50 < 50 µs, p99 < 200 µs.
 * 2. Harness overhead per timed call: (a) what the harness adds to a reported figure = the
 *    `ms` of an empty native op (two clock reads around nothing, compared with a direct C call
 *    that the figure would otherwise time); (b) the full JS → worker thread → Promise round
 *    trip per op, which costs wall time between steps but is outside every figure. Target
 *    (a) < 20 µs.
 * 3. The wrapper index (wrapperIndex.ts in this folder): build of a ~1,000-file repository and its
 *    update after an edit of one file.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import * as path from 'node:path';
import { BarrierServer } from '../../remote-agent/barrierServer';
import { quantileSorted } from '../../remote-agent/stats';
import { wrapperIndexBench } from './wrapperIndex';

// Paths from the repository root (npm run bench runs there; so does a bundled copy on a GPU host).
const root = process.cwd();
const addon = process.env.COMMCOST_NATIVE ?? path.join(root, 'dist', 'native', 'commcost.node');
process.env.COMMCOST_NATIVE = addon;

function dist(values: number[]): string {
  const s = [...values].sort((a, b) => a - b);
  const f = (q: number): string => quantileSorted(s, q).toFixed(1);
  return `p50 ${f(0.5)}  p90 ${f(0.9)}  p99 ${f(0.99)}  max ${s[s.length - 1]!.toFixed(1)}  (n=${s.length})`;
}

async function barrierSkew(ranks: number, count: number): Promise<number[]> {
  const token = randomBytes(16).toString('hex');
  const server = new BarrierServer({ worldSize: ranks, token });
  const port = await server.listen();
  const outputs = await Promise.all(
    [...Array(ranks).keys()].map(
      (rank) =>
        new Promise<number[]>((resolve, reject) => {
          const child = spawn(process.execPath, [path.join(root, 'test', 'bench', 'barrierRank.cjs'), String(port), String(rank), String(count)], {
            env: { ...process.env, COMMCOST_NATIVE: addon, COMMCOST_BARRIER_TOKEN: token },
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          let out = '';
          child.stdout.on('data', (d: Buffer) => (out += d.toString()));
          child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as number[]) : reject(new Error(`rank ${rank} exited ${code}`))));
        }),
    ),
  );
  server.close();
  const skews: number[] = [];
  // Skip the first 50 generations (connection warm-up).
  for (let g = 50; g < count; g++) {
    const t = outputs.map((o) => o[g]!);
    skews.push((Math.max(...t) - Math.min(...t)) / 1000);
  }
  return skews;
}

async function overhead(count: number): Promise<{ inside: number[]; roundTrip: number[] }> {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const native = require(addon) as typeof import('../../native/index');
  const inside: number[] = [];
  const roundTrip: number[] = [];
  for (let i = 0; i < count; i++) {
    const t0 = process.hrtime.bigint();
    const r = await native.nop();
    const t1 = process.hrtime.bigint();
    if (i >= 100) {
      inside.push(r.ms * 1000);
      roundTrip.push(Number(t1 - t0) / 1000);
    }
  }
  return { inside, roundTrip };
}

async function main(): Promise<void> {
  const os = await import('node:os');
  console.log(`commcost benchmarks on ${os.hostname()} (${os.cpus().length} CPUs, ${os.cpus()[0]?.model ?? '?'}), Node ${process.version}`);
  console.log('\n1. Barrier release skew across rank processes, µs (target p50 < 50, p99 < 200)');
  for (const ranks of [2, 4, 8]) {
    const skews = await barrierSkew(ranks, 2050);
    console.log(`   ${ranks} ranks: ${dist(skews)}`);
  }
  console.log('\n2. Harness overhead per timed call, µs (target < 20 for what a figure includes)');
  const { inside, roundTrip } = await overhead(5100);
  console.log(`   added to a reported figure (empty timed op, native clock pair): ${dist(inside)}`);
  console.log(`   JS → worker thread → Promise round trip (between steps, outside figures): ${dist(roundTrip)}`);
  console.log('\n3. Wrapper index of a ~1,000-file repository (target: built < 10 s, up to date < 50 ms after an edit)');
  // Needs the repository's fixtures and grammars: not on a GPU host running a bundled copy.
  if (existsSync(path.join(root, 'test', 'fixtures', 'callsites', 'wrappers')) && existsSync(path.join(root, 'node_modules', 'web-tree-sitter'))) {
    await wrapperIndexBench((line) => console.log(line));
  } else console.log('   skipped: run it in the repository (test/fixtures and node_modules are not here)');
}

void main();
