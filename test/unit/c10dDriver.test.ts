/**
 * The c10d experiment's parts that run without torch: the Python driver compiles, its probe
 * reports a missing torch cleanly, its barrier client speaks the agent's barrier protocol, and
 * the variants are gated on what the host's torch has (with reasons).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
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

/**
 * A stand-in `torch` package (no GPU, no NCCL): enough of torch and torch.distributed for the
 * driver to run a variant, recording every call to $FAKE_TORCH_LOG (one JSON line per call).
 */
const FAKE_TORCH = {
  '__init__.py': `import json, os
__version__ = "2.11.0+fake"
float32 = "float32"
def _log(call, **kw):
    with open(os.environ["FAKE_TORCH_LOG"], "a") as f:
        f.write(json.dumps({"call": call, **kw}) + "\\n")
class device:
    def __init__(self, kind, index):
        self.kind, self.index = kind, index
def ones(n, dtype=None, device=None):
    return [1.0] * min(n, 4)
from . import cuda, distributed
`,
  'cuda.py': `def set_device(i): pass
def synchronize(): pass
def mem_get_info(): return (80 << 30, 80 << 30)
def is_available(): return True
`,
  'distributed/__init__.py': `from .. import _log
_initialized = False
class _Group:
    def __init__(self, ranks): self.ranks = ranks
    def abort(self): _log("abort")
class group:
    WORLD = None
def FileStore(path, world): return ("store", path, world)
def init_process_group(backend=None, store=None, rank=None, world_size=None, device_id=None):
    global _initialized
    _initialized = True
    group.WORLD = _Group(list(range(world_size)))
    _log("init_process_group", eager=device_id is not None)
def is_initialized(): return _initialized
def is_nccl_available(): return True
def new_group(ranks=None):
    _log("new_group", ranks=ranks)
    return _Group(ranks)
def all_reduce(buf, group=None):
    _log("all_reduce", group=None if group is None else group.ranks)
def destroy_process_group(group=None):
    global _initialized
    _log("destroy_process_group", group=None if group is None else group.ranks)
    if group is None: _initialized = False
from . import distributed_c10d
`,
  'distributed/distributed_c10d.py': '',
};

/** Runs the driver for `variant` as rank 0 of 1 against the stand-in torch; one iteration, then exit. */
async function runDriverWithFakeTorch(variant: string): Promise<{ iteration: Record<string, unknown>; calls: Record<string, unknown>[] }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-fake-torch-'));
  for (const [file, text] of Object.entries(FAKE_TORCH)) {
    fs.mkdirSync(path.dirname(path.join(dir, 'torch', file)), { recursive: true });
    fs.writeFileSync(path.join(dir, 'torch', file), text);
  }
  const log = path.join(dir, 'calls.jsonl');
  fs.writeFileSync(log, '');
  const server = new BarrierServer({ worldSize: 1 });
  const port = await server.listen();
  try {
    const child = spawn('python3', [driverPath(), variant], {
      env: { ...process.env, PYTHONPATH: dir, FAKE_TORCH_LOG: log, RANK: '0', WORLD_SIZE: '1', LOCAL_RANK: '0', COMMCOST_BARRIER: `127.0.0.1:${port}`, COMMCOST_C10D_STORE_DIR: dir, PYTHONUNBUFFERED: '1' },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const lines: Record<string, unknown>[] = [];
    let buf = '';
    const waitFor = (t: string): Promise<Record<string, unknown>> =>
      new Promise((resolve, reject) => {
        const check = (): boolean => {
          const m = lines.find((l) => l.t === t || l.t === 'error');
          if (m) resolve(m);
          return m !== undefined;
        };
        if (check()) return;
        child.stdout.on('data', () => void check());
        child.on('exit', (code) => reject(new Error(`driver exited ${code} before ${t}: ${JSON.stringify(lines)}`)));
      });
    child.stdout.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        lines.push(JSON.parse(buf.slice(0, nl)) as Record<string, unknown>);
        buf = buf.slice(nl + 1);
      }
    });
    assert.equal((await waitFor('ready')).t, 'ready');
    child.stdin.write(JSON.stringify({ cmd: 'iteration', gen: 1 }) + '\n');
    const iteration = await waitFor('iteration');
    child.stdin.write(JSON.stringify({ cmd: 'exit' }) + '\n');
    await waitFor('bye');
    child.stdin.end();
    const calls = fs.readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    return { iteration, calls };
  } finally {
    server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('C1: new_group on a lazy and an eager default group', { skip }, () => {
  for (const [variant, eager] of [['new_group/lazy-default', false], ['new_group/eager-default', true]] as const) {
    test(`${variant}: the driver times new_group, the first and the second all_reduce on the new group`, async () => {
      const { iteration, calls } = await runDriverWithFakeTorch(variant);
      assert.equal(iteration.t, 'iteration', JSON.stringify(iteration));
      assert.deepEqual(Object.keys(iteration.steps as object).sort(), ['call', 'first', 'second']);
      assert.equal(iteration.gen, 3, 'three timed steps, each after its own barrier generation');
      assert.deepEqual(calls.slice(0, 2), [{ call: 'init_process_group', eager }, { call: 'all_reduce', group: null }], 'the default group is made (with device_id when eager) and warmed in setup');
      assert.deepEqual(calls.slice(2, 5), [{ call: 'new_group', ranks: [0] }, { call: 'all_reduce', group: [0] }, { call: 'all_reduce', group: [0] }], 'the first and the second all_reduce are on the new group');
    });
  }

  test('the plan carries the same steps for C1: new_group, first, total, second', () => {
    const ctx = { ranks: 2, ncclVersionCode: 22809, symbols: {}, options: normalizeOptions({}) };
    const all = { device_id: true, split_group: true, shrink_group: true, abort: true, nccl: true, cuda: true };
    const { variants } = c10dVariants(ctx, { torch: '2.11.0', ncclVersion: '2.28.9', features: all });
    for (const name of ['new_group/lazy-default', 'new_group/eager-default']) {
      const v = variants.find((x) => x.variant === name)!;
      assert.deepEqual(v.steps.map((s) => [s.step, s.label, s.kind]), [
        ['call', 'new_group', 'call'],
        ['first', 'first all_reduce', 'first'],
        ['total', 'new_group to first collective', 'toFirst'],
        ['second', 'second all_reduce', 'steady'],
      ]);
    }
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
