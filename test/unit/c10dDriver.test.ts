/**
 * The c10d experiment's parts that run without torch: the Python driver compiles, its probe
 * reports a missing torch cleanly, its barrier client speaks the agent's barrier protocol, and
 * the variants are gated on what the host's torch has (with reasons).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { describe, test } from 'node:test';
import { BarrierServer } from '../../remote-agent/barrierServer';
import { c10dVariants, driverPath, probeTorch, type TorchProbe } from '../../remote-agent/experiments/c10d';
import { normalizeOptions } from '../../remote-agent/coordinator';

let hasPython = true;
try {
  execFileSync('python3', ['--version']);
} catch {
  hasPython = false;
}
const skip = hasPython ? false : 'python3 is not installed';

describe('c10d driver', { skip }, () => {
  test('the driver compiles', () => {
    execFileSync('python3', ['-m', 'py_compile', driverPath()]);
  });

  test('probe: a host without torch gets a reason, not a crash', { skip: hasTorch() ? 'this machine has torch' : false }, () => {
    const probe = probeTorch();
    assert.match(probe.error ?? '', /ModuleNotFoundError: No module named 'torch'/);
  });

  test('its barrier client passes generations with the agent\'s barrier server', async () => {
    const server = new BarrierServer({ worldSize: 2 });
    const port = await server.listen();
    const run = (rank: number): Promise<number[]> =>
      new Promise((resolve, reject) => {
        const child = spawn('python3', [driverPath(), 'barrier-selftest', '127.0.0.1', String(port), String(rank), '20']);
        let out = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.on('exit', (code) => (code === 0 ? resolve((JSON.parse(out) as { released: number[] }).released) : reject(new Error(`exit ${code}`))));
      });
    const [a, b] = await Promise.all([run(0), run(1)]);
    server.close();
    assert.equal(a.length, 20);
    assert.equal(b.length, 20);
    assert.equal(server.released, 20);
  });
});

function hasTorch(): boolean {
  try {
    execFileSync('python3', ['-c', 'import torch']);
    return true;
  } catch {
    return false;
  }
}

describe('c10d variants by torch features', () => {
  const ctx = { ranks: 2, ncclVersionCode: 22809, symbols: {}, options: normalizeOptions({}) };
  const all = { device_id: true, split_group: true, shrink_group: true, abort: true, nccl: true, cuda: true };
  const cases: [string, TorchProbe, string[], [string, RegExp][]][] = [
    ['torch 2.11, NCCL 2.28.9: everything', { torch: '2.11.0+cu130', ncclVersion: '2.28.9', features: all }, ['init/lazy', 'init/eager', 'new_group/lazy-default', 'new_group/eager-default', 'split_group', 'shrink_group', 'abort'], []],
    [
      'torch 2.4: no split_group, no shrink_group',
      { torch: '2.4.1', ncclVersion: '2.20.5', features: { ...all, split_group: false, shrink_group: false } },
      ['init/lazy', 'init/eager', 'new_group/lazy-default', 'new_group/eager-default', 'abort'],
      [['split_group', /no split_group \(needs torch ≥ 2\.5\)/], ['shrink_group', /no shrink_group \(needs torch ≥ 2\.10\)/]],
    ],
    [
      'torch 2.10 with NCCL 2.26: shrink_group needs NCCL 2.27',
      { torch: '2.10.0', ncclVersion: '2.26.2', features: all },
      ['init/lazy', 'init/eager', 'new_group/lazy-default', 'new_group/eager-default', 'split_group', 'abort'],
      [['shrink_group', /needs NCCL ≥ 2\.27, torch uses 2\.26\.2/]],
    ],
    [
      'torch 2.2: no device_id, so no eager variants',
      { torch: '2.2.0', ncclVersion: '2.19.3', features: { ...all, device_id: false, split_group: false, shrink_group: false } },
      ['init/lazy', 'new_group/lazy-default'],
      [['init/eager', /no init_process_group\(device_id=…\)/]],
    ],
  ];
  for (const [name, probe, planned, skipped] of cases) {
    test(name, () => {
      const r = c10dVariants(ctx, probe);
      assert.deepEqual(r.variants.map((v) => v.variant), planned);
      for (const [variant, reason] of skipped) assert.match(r.skipped.find((s) => s.variant === variant)?.reason ?? '', reason);
    });
  }
});
