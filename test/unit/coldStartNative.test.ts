// cold-start, native side against the simulated NCCL (dist/native/libnccl-sim.so), with real rank
// processes: the addon times the NCCL dlopen and the CUDA context apart; the simulated NCCL
// charges its kernel load once per process (on the first communicator) and writes NCCL-like
// `Init timings` lines to NCCL_DEBUG_FILE (%h, %p) when NCCL_DEBUG=INFO and INIT is logged.
// Only floors set by the configured costs are asserted (sleeps may run long on a loaded machine).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';

import { parseInitTimings } from '../../remote-agent/ncclInitTimings';
import { addonPath, loadSim, MiB, RankPool, simPath } from './fixtures/nativeHarness';

const skip = existsSync(addonPath) && existsSync(simPath) ? false : 'dist/native is not built: run node native/build.mjs';
const pool = new RankPool();
const dirs: string[] = [];
after(() => {
  pool.killAll();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function logDir(): string {
  const d = mkdtempSync(path.join(tmpdir(), 'commcost-coldstart-test-'));
  dirs.push(d);
  return d;
}

/** Two blocking inits in a row over `n` fresh rank processes with `env`; their per-rank ms. */
async function twoInits(n: number, env: Record<string, string>): Promise<{ first: number[]; second: number[] }> {
  const rs = pool.spawn(n, { COMMCOST_SIM_INIT_MS: '10', COMMCOST_SIM_CUINIT_MS: '5', ...env });
  await loadSim(rs);
  await Promise.all(rs.map((r, i) => r.call('initDevice', i, MiB)));
  const inits = async (): Promise<number[]> => {
    const { id } = await rs[0]!.call('getUniqueId');
    return (await Promise.all(rs.map((r, i) => r.call('commInitRank', n, id, i)))).map((x) => x.ms as number);
  };
  const first = await inits();
  const second = await inits();
  return { first, second };
}

describe('cold-start native parts on the simulated NCCL', { skip }, () => {
  test('load times the dlopen of each library; initDevice gives cuInit and the context apart', async () => {
    const [r] = pool.spawn(1, { COMMCOST_SIM_CUINIT_MS: '60' });
    const [info] = await loadSim([r!]);
    assert.equal(typeof info.ncclLoadMs, 'number');
    assert.equal(typeof info.cudaLoadMs, 'number');
    assert.ok(info.ncclLoadMs >= 0 && info.cudaLoadMs >= 0);
    const dev = await r!.call('initDevice', 0, MiB);
    // The simulated context creation costs COMMCOST_SIM_CUINIT_MS (±5% jitter): it lands in contextMs.
    assert.ok(dev.contextMs >= 60 * 0.95, `context ${dev.contextMs} ms`);
    assert.ok(dev.cuInitMs >= 0 && dev.cuInitMs + dev.contextMs <= dev.ms + 1e-6, `parts ${dev.cuInitMs} + ${dev.contextMs} within ${dev.ms}`);
  });

  test('the first communicator of a process pays the kernel load, by rank; the second does not', async () => {
    const { first, second } = await twoInits(2, { COMMCOST_SIM_KERNELS_MS: '100,250' });
    assert.ok(first[0]! >= (10 + 100) * 0.95, `rank 0 first init ${first[0]} ms`);
    assert.ok(first[1]! >= (10 + 250) * 0.95, `rank 1 first init ${first[1]} ms`);
    // The second init pays no kernel load: it cannot reach the first's floor by the load alone.
    assert.ok(Math.max(...first) - Math.max(...second) >= 250 * 0.5, `first ${first} vs second ${second} ms`);
  });

  test('Init timings lines go to NCCL_DEBUG_FILE (%h, %p) with the kernel load of the first creation only', async () => {
    const dir = logDir();
    await twoInits(2, {
      COMMCOST_SIM_KERNELS_MS: '80',
      NCCL_DEBUG: 'INFO',
      NCCL_DEBUG_SUBSYS: 'INIT,ENV',
      NCCL_DEBUG_FILE: path.join(dir, 'nccl.%h.%p.log'),
    });
    const files = readdirSync(dir);
    assert.equal(files.length, 2, `one file per process: ${files}`);
    const host = hostname().split('.')[0]!;
    for (const f of files) assert.match(f, new RegExp(`^nccl\\.${host.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.\\d+\\.log$`));
    for (const f of files) {
      const text = readFileSync(path.join(dir, f), 'utf8');
      assert.match(text, /NCCL INFO ncclCommInitRank comm 0x[0-9a-f]+ rank \d nranks 2 .* - Init COMPLETE/);
      const log = parseInitTimings(text);
      assert.equal(log.malformed, 0);
      assert.equal(log.lines.length, 2, text);
      const [cold, warm] = log.lines;
      assert.equal(cold!.fn, 'ncclCommInitRank');
      assert.equal(cold!.nranks, 2);
      // %.2f seconds: 80 ms × 0.95 prints as at least 0.08 s… or 0.07 after rounding down; 70 ms is the floor.
      assert.ok(cold!.parts.kernels! >= 70, `cold kernels ${cold!.parts.kernels} ms`);
      assert.equal(warm!.parts.kernels, 0, 'the second creation loads no kernels');
      assert.ok(cold!.parts.total! >= cold!.parts.kernels!);
    }
  });

  test('no Init timings line before 2.23.4, nor when INIT is not logged', async () => {
    const old = logDir();
    await twoInits(1, { COMMCOST_SIM_VERSION: '22303', NCCL_DEBUG: 'INFO', NCCL_DEBUG_SUBSYS: 'INIT', NCCL_DEBUG_FILE: path.join(old, 'nccl.%p.log') });
    const oldText = readdirSync(old).map((f) => readFileSync(path.join(old, f), 'utf8')).join('');
    assert.match(oldText, /Init COMPLETE/, 'INFO lines are written');
    assert.equal(parseInitTimings(oldText).lines.length, 0);
    const excluded = logDir();
    await twoInits(1, { NCCL_DEBUG: 'INFO', NCCL_DEBUG_SUBSYS: '^INIT', NCCL_DEBUG_FILE: path.join(excluded, 'nccl.%p.log') });
    assert.deepEqual(readdirSync(excluded), [], 'nothing logged, no file opened');
  });
});
