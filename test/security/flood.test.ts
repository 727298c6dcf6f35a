/**
 * Memory without authentication (issue #21, item 3): 250 connections to a launched rank 0's
 * node server (0.0.0.0, the port every rank of the job knows), each sending 8 MiB with no
 * newline and no hello. The agent's resident memory is sampled (/proc/<pid>/status VmRSS every
 * 20 ms) before and during the flood; its growth must stay bounded, and it must still answer a
 * hello afterwards. The figures are printed.
 *
 * Also the line reader itself: a UTF-8 character split across two reads is decoded whole, and a
 * line over the limit is never delivered even when it arrives in one chunk.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import { onLines } from '../../remote-agent/lineChannel';
import { LineSplitter } from '../../client/agentProcess';
import { NOT_BUILT, distDir } from '../support/agentHarness';

const CONNECTIONS = 250;
const BYTES_EACH = 8 * 1024 * 1024;
/** The bound asserted on RSS growth, bytes: what 250 × 16 KiB pre-hello lines and Node's read buffers need, with room. */
const GROWTH_BOUND = 160 * 1024 * 1024;

function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

describe('pre-hello flood', { skip: NOT_BUILT }, () => {
  test(`${CONNECTIONS} connections × 8 MiB without a hello: the agent's memory stays bounded and it still answers`, { timeout: 120_000 }, async () => {
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
      for (let i = 0; i < 100 && !/rank 0 of 2/.test(stderr); i++) await new Promise((r) => setTimeout(r, 100));
      await new Promise((r) => setTimeout(r, 800));
      const pid = rank0.pid!;
      const before = rssBytes(pid);
      let peak = before;
      const sampler = setInterval(() => {
        try {
          peak = Math.max(peak, rssBytes(pid));
        } catch {
          // Exited: checked below.
        }
      }, 20);
      const payload = Buffer.alloc(BYTES_EACH, 0x41);
      const t0 = Date.now();
      let refused = 0;
      await Promise.all(
        Array.from({ length: CONNECTIONS }, () =>
          new Promise<void>((resolve) => {
            const s = net.connect(port, '127.0.0.1', () => s.end(payload));
            s.on('error', () => undefined);
            s.on('close', () => {
              refused++;
              resolve();
            });
            setTimeout(() => (s.destroy(), resolve()), 30_000);
          }),
        ),
      );
      const floodMs = Date.now() - t0;
      await new Promise((r) => setTimeout(r, 300));
      clearInterval(sampler);
      peak = Math.max(peak, rank0.exitCode === null ? rssBytes(pid) : 0);
      const mib = (b: number): string => (b / 1024 / 1024).toFixed(1);
      console.log(
        `flood: ${CONNECTIONS} connections × ${mib(BYTES_EACH)} MiB in ${floodMs} ms; agent RSS before ${mib(before)} MiB, peak ${mib(peak)} MiB, growth ${mib(peak - before)} MiB (bound ${mib(GROWTH_BOUND)} MiB); connections closed by the agent: ${refused}`,
      );
      assert.equal(rank0.exitCode, null, `rank 0 died: ${stderr.slice(-1000)}`);
      assert.ok(peak - before < GROWTH_BOUND, `RSS grew by ${mib(peak - before)} MiB`);
      // Still answering.
      const text = await new Promise<string>((resolve) => {
        let got = '';
        const hello = { t: 'node/hello', nonce: randomBytes(16).toString('hex'), hostname: 'h', pid: 1, fixedRank: 1, worldSize: 2, slots: 1, devices: [0], gpus: ['G'], ncclVersion: '2', simulated: true };
        const s = net.connect(port, '127.0.0.1', () => s.write(JSON.stringify(hello) + '\n'));
        s.on('data', (d) => {
          got += d.toString();
          if (got.includes('\n')) s.destroy();
        });
        s.on('error', () => undefined);
        s.on('close', () => resolve(got));
        setTimeout(() => s.destroy(), 3000);
      });
      assert.match(text, /node\/challenge/);
      assert.match(stderr, /node server: closed \d+ connection\(s\)/);
    } finally {
      rank0.kill('SIGKILL');
      await exited;
    }
  });
});

describe('line reader', () => {
  test('a UTF-8 character split across two reads is decoded whole', () => {
    const s = new PassThrough();
    const got: string[] = [];
    onLines(s, (l) => got.push(l));
    const bytes = Buffer.from('{"host":"gpü-€"}\n', 'utf8');
    const cut = bytes.indexOf(0xe2) + 1; // inside the 3-byte €
    s.write(bytes.subarray(0, cut));
    s.write(bytes.subarray(cut));
    assert.deepEqual(got, ['{"host":"gpü-€"}']);
  });

  test('a line over the limit is not delivered, even inside one chunk; the next line is', () => {
    const s = new PassThrough();
    const got: string[] = [];
    let overflows = 0;
    onLines(s, (l) => got.push(l), 100, () => overflows++);
    s.write('x'.repeat(500) + '\nok\n');
    assert.deepEqual(got, ['ok']);
    assert.equal(overflows, 1);
  });
});

describe('the host side reading an agent (client/agentProcess.ts)', () => {
  test('a line over the cap is dropped as it arrives and reported once; the lines around it pass', () => {
    const got: string[] = [];
    const over: number[] = [];
    const split = new LineSplitter((l) => got.push(l), 100, (max) => over.push(max));
    split.push('a\n' + 'x'.repeat(80));
    split.push('y'.repeat(80));
    split.push('z'.repeat(80) + '\nb\n');
    split.push(Buffer.from('é'.repeat(10)).subarray(0, 5));
    split.push(Buffer.from('é'.repeat(10)).subarray(5));
    split.push('\n');
    assert.deepEqual(got, ['a', 'b', 'é'.repeat(10)]);
    assert.deepEqual(over, [100]);
  });
});
