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
import { after, describe, test } from 'node:test';
import { BarrierServer } from '../../remote-agent/barrierServer';
import { c10dExperiment, c10dVariants, probeTorch, writeDriver, type TorchProbe } from '../../remote-agent/experiments/c10d';
import { normalizeOptions } from '../../remote-agent/coordinator';

/** The driver, written once for this file's tests into a private folder of this process; removed at the end. */
const driver = writeDriver();
after(() => driver.remove());
const driverPath = (): string => driver.file;

/** The rank session's secret the barrier clients prove in their hello. */
const BARRIER_TOKEN = 'c10d'.repeat(8);

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
    const server = new BarrierServer({ worldSize: 2, token: BARRIER_TOKEN });
    const port = await server.listen();
    const run = (rank: number): Promise<number[]> =>
      new Promise((resolve, reject) => {
        const child = spawn('python3', [driverPath(), 'barrier-selftest', '127.0.0.1', String(port), String(rank), '20', BARRIER_TOKEN]);
        let out = '';
        child.stdout.on('data', (d: Buffer) => (out += d.toString()));
        child.on('close', (code) => (code === 0 ? resolve((JSON.parse(out) as { released: number[] }).released) : reject(new Error(`exit ${code}`))));
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
 *
 * Several driver processes (ranks) can share it: destroying a non-default group leaves a marker
 * `destroyed-<group ranks>-rank<caller>` in $FAKE_TORCH_SHARED (default: the log's folder), and
 * shrink_group behaves as measured with torch 2.11 + NCCL 2.28: it also releases the parent group,
 * so it returns only once every excluded rank has released that group (raising after 10 s).
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
  'distributed/__init__.py': `import os, time
from .. import _log
_initialized = False
_rank = 0
class _Group:
    def __init__(self, ranks): self.ranks = ranks
    def abort(self): _log("abort")
class group:
    WORLD = None
def FileStore(path, world): return ("store", path, world)
def init_process_group(backend=None, store=None, rank=None, world_size=None, device_id=None):
    global _initialized, _rank
    _initialized = True
    _rank = rank
    group.WORLD = _Group(list(range(world_size)))
    _log("init_process_group", eager=device_id is not None)
def is_initialized(): return _initialized
def is_nccl_available(): return True
def new_group(ranks=None):
    _log("new_group", ranks=ranks)
    return _Group(ranks)
def all_reduce(buf, group=None):
    _log("all_reduce", group=None if group is None else group.ranks)
def _marker(ranks, rank):
    shared = os.environ.get("FAKE_TORCH_SHARED") or os.path.dirname(os.environ["FAKE_TORCH_LOG"])
    return os.path.join(shared, "destroyed-" + "-".join(str(r) for r in ranks) + f"-rank{rank}")
def destroy_process_group(group=None):
    global _initialized
    _log("destroy_process_group", group=None if group is None else group.ranks)
    if group is None: _initialized = False
    else: open(_marker(group.ranks, _rank), "w").close()
def shrink_group(ranks_to_exclude, group=None):
    parent = group or globals()["group"].WORLD
    t0 = time.monotonic()
    # Releasing the parent waits for every member: here, for each excluded rank's destroy.
    while not all(os.path.exists(_marker(parent.ranks, r)) for r in ranks_to_exclude):
        if time.monotonic() - t0 > 10:
            raise RuntimeError(f"shrink_group: excluded ranks {ranks_to_exclude} never released group {parent.ranks}")
        time.sleep(0.01)
    _log("shrink_group", excluded=ranks_to_exclude, group=parent.ranks)
    return _Group([r for r in parent.ranks if r not in ranks_to_exclude])
from . import distributed_c10d
`,
  'distributed/distributed_c10d.py': '',
};

/** A temporary folder holding the stand-in torch package (put it on PYTHONPATH). */
function fakeTorchDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-fake-torch-'));
  for (const [file, text] of Object.entries(FAKE_TORCH)) {
    fs.mkdirSync(path.dirname(path.join(dir, 'torch', file)), { recursive: true });
    fs.writeFileSync(path.join(dir, 'torch', file), text);
  }
  return dir;
}

/** Runs the driver for `variant` as rank 0 of 1 against the stand-in torch; one iteration, then exit. */
async function runDriverWithFakeTorch(variant: string): Promise<{ iteration: Record<string, unknown>; calls: Record<string, unknown>[] }> {
  const dir = fakeTorchDir();
  const log = path.join(dir, 'calls.jsonl');
  fs.writeFileSync(log, '');
  const server = new BarrierServer({ worldSize: 1, token: BARRIER_TOKEN });
  const port = await server.listen();
  try {
    const child = spawn('python3', [driverPath(), variant], {
      env: { ...process.env, PYTHONPATH: dir, FAKE_TORCH_LOG: log, RANK: '0', WORLD_SIZE: '1', LOCAL_RANK: '0', COMMCOST_BARRIER: `127.0.0.1:${port}`, COMMCOST_BARRIER_TOKEN: BARRIER_TOKEN, COMMCOST_C10D_STORE_DIR: dir, PYTHONUNBUFFERED: '1' },
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
        child.on('close', (code) => reject(new Error(`driver exited ${code} before ${t}: ${JSON.stringify(lines)}`)));
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

type Line = Record<string, unknown>;

/** One driver process on the stand-in torch, as rank `rank` of `world`; its own call log, a shared marker folder. */
function startFakeTorchRank(variant: string, rank: number, world: number, port: number, dir: string) {
  const log = path.join(dir, `calls-rank${rank}.jsonl`);
  fs.writeFileSync(log, '');
  const child = spawn('python3', [driverPath(), variant], {
    env: { ...process.env, PYTHONPATH: dir, FAKE_TORCH_LOG: log, FAKE_TORCH_SHARED: dir, RANK: String(rank), WORLD_SIZE: String(world), LOCAL_RANK: String(rank), COMMCOST_BARRIER: `127.0.0.1:${port}`, COMMCOST_BARRIER_TOKEN: BARRIER_TOKEN, COMMCOST_C10D_STORE_DIR: dir, PYTHONUNBUFFERED: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const lines: Line[] = [];
  let buf = '';
  let stderr = '';
  let exitCode: number | null | undefined;
  const checks = new Set<() => void>();
  const recheck = (): void => checks.forEach((c) => c());
  child.stdout.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buf.slice(0, nl)) as Line);
      buf = buf.slice(nl + 1);
    }
    recheck();
  });
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  // 'close', not 'exit': only then has every line the process wrote been read.
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      exitCode = code;
      resolve(code);
      recheck();
    }),
  );
  return {
    child,
    exited,
    send: (msg: object): void => void child.stdin.write(JSON.stringify(msg) + '\n'),
    calls: (): Line[] => fs.readFileSync(log, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Line),
    /** The first line of kind `t`; rejects on an error line or if the process ends first. */
    waitFor: (t: string): Promise<Line> =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const m = lines.find((l) => l.t === t || l.t === 'error');
          const fail = m?.t === 'error' ? `rank ${rank}: ${String(m.message)}` : !m && exitCode !== undefined ? `rank ${rank} exited ${exitCode} before ${t}` : undefined;
          if (!m && !fail) return;
          checks.delete(check);
          if (fail) reject(new Error(`${fail}; lines ${JSON.stringify(lines)}; stderr ${stderr}`));
          else resolve(m!);
        };
        checks.add(check);
        check();
      }),
  };
}

/** `p`, or a rejection naming `what` once `ms` have passed. */
async function withDeadline<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not done after ${ms} ms (hang)`)), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('shrink_group with 2 ranks: the excluded rank releases the parent while the survivor shrinks', { skip }, () => {
  // The stand-in's shrink_group waits (10 s at most) for the excluded rank to destroy the parent
  // group, as torch 2.11 + NCCL 2.28 does. Were the excluded rank to sit out both generations before
  // destroying it, the survivor would wait in shrink_group and the excluded rank at the barrier.
  test('both ranks finish the iteration; the survivor times call and first and never destroys the parent', async () => {
    const dir = fakeTorchDir();
    const server = new BarrierServer({ worldSize: 2, token: BARRIER_TOKEN });
    const port = await server.listen();
    const survivor = startFakeTorchRank('shrink_group', 0, 2, port, dir);
    const excluded = startFakeTorchRank('shrink_group', 1, 2, port, dir);
    const ranks = [survivor, excluded];
    try {
      const [iter0, iter1] = await withDeadline(20000, 'shrink_group iteration on 2 ranks', (async () => {
        await Promise.all(ranks.map((p) => p.waitFor('ready')));
        for (const p of ranks) p.send({ cmd: 'iteration', gen: 1 });
        const its = await Promise.all([survivor.waitFor('iteration'), excluded.waitFor('iteration')]);
        for (const p of ranks) p.send({ cmd: 'exit' });
        await Promise.all(ranks.map((p) => p.waitFor('bye')));
        for (const p of ranks) p.child.stdin.end();
        assert.deepEqual(await Promise.all(ranks.map((p) => p.exited)), [0, 0], 'both drivers exit cleanly');
        return its;
      })());

      const steps0 = iter0.steps as Record<string, unknown>;
      assert.deepEqual(Object.keys(steps0).sort(), ['call', 'first'], `survivor steps ${JSON.stringify(iter0)}`);
      for (const k of ['call', 'first']) assert.ok(typeof steps0[k] === 'number' && steps0[k] >= 0, `survivor ${k}: ${String(steps0[k])}`);
      assert.ok(!('call' in (iter1.steps as object)), `the excluded rank times no call: ${JSON.stringify(iter1)}`);
      assert.equal(iter0.gen, iter1.gen, 'both ranks used the same barrier generations');

      const calls0 = survivor.calls();
      const calls1 = excluded.calls();
      assert.ok(calls1.some((c) => c.call === 'destroy_process_group' && JSON.stringify(c.group) === '[0,1]'), `the excluded rank destroys the parent: ${JSON.stringify(calls1)}`);
      assert.ok(fs.existsSync(path.join(dir, 'destroyed-0-1-rank1')), 'the excluded rank\'s destroy of the parent happened');
      assert.ok(!calls1.some((c) => c.call === 'shrink_group'), 'the excluded rank does not call shrink_group');
      const shrinkAt = calls0.findIndex((c) => c.call === 'shrink_group');
      assert.ok(shrinkAt >= 0, `the survivor calls shrink_group: ${JSON.stringify(calls0)}`);
      assert.deepEqual(calls0[shrinkAt], { call: 'shrink_group', excluded: [1], group: [0, 1] });
      assert.deepEqual(calls0.slice(shrinkAt + 1, shrinkAt + 3), [{ call: 'all_reduce', group: [0] }, { call: 'destroy_process_group', group: [0] }], 'first all_reduce on the shrunk group, then its destroy');
      assert.ok(!calls0.slice(shrinkAt).some((c) => c.call === 'destroy_process_group' && JSON.stringify(c.group) === '[0,1]'), `the survivor never destroys the parent after shrink_group: ${JSON.stringify(calls0)}`);
      assert.ok(!fs.existsSync(path.join(dir, 'destroyed-0-1-rank0')));
    } finally {
      for (const p of ranks) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await Promise.all(ranks.map((p) => p.exited));
      server.close();
      fs.rmSync(dir, { recursive: true, force: true });
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

describe('c10d with a Python that is not on the host', () => {
  const planWith = (python?: string) => c10dExperiment.plan({ ranks: 2, ncclVersionCode: 22809, symbols: {}, options: normalizeOptions({ experiments: ['c10d'], ...(python !== undefined ? { python } : {}) }) });
  const skipOf = (p: ReturnType<typeof planWith>): string => ('skip' in p ? p.skip : assert.fail(`planned instead of skipped: ${JSON.stringify(p)}`));

  test('the probe says the Python was not found (no crash, no torch needed)', () => {
    const probe = probeTorch('/nonexistent/python3');
    assert.equal(probe.notFound, true);
    assert.match(probe.error ?? '', /\/nonexistent\/python3 was not found/);
  });

  test('the python option: c10d is skipped with a reason naming that Python and how to give another', () => {
    assert.match(skipOf(planWith('/nonexistent/python3')), /^the Python \/nonexistent\/python3 was not found on \S+ \(no such file, or not on PATH\); give the Python that has torch with --python \/ commcost\.python \(or COMMCOST_PYTHON\)$/);
  });

  test('on the simulated NCCL c10d is skipped, and a --python that does not exist is named too', () => {
    const sim = (python?: string) => c10dExperiment.plan({ ranks: 2, ncclVersionCode: 22809, symbols: {}, options: normalizeOptions({ experiments: ['c10d'], simulate: true, ...(python ? { python } : {}) }) });
    assert.equal(skipOf(sim()), 'c10d runs torch with its own NCCL on real GPUs: not with the simulated NCCL');
    assert.equal(skipOf(sim('python3')), 'c10d runs torch with its own NCCL on real GPUs: not with the simulated NCCL');
    assert.match(skipOf(sim('/nonexistent/python3')), /^c10d runs torch .* simulated NCCL; also, the Python \/nonexistent\/python3 was not found on \S+ \(no such file, or not on PATH\)/);
  });

  test('a Python without torch: the reason names that Python and the import error', { skip: skip || (hasTorch() ? 'this machine has torch' : false) }, () => {
    assert.match(skipOf(planWith('python3')), /^the Python python3 cannot import torch on \S+: .*ModuleNotFoundError: No module named 'torch'.*; give the Python that has torch with --python/);
  });

  test('precedence in the plan: the option over COMMCOST_PYTHON; COMMCOST_PYTHON when no option', () => {
    const saved = process.env.COMMCOST_PYTHON;
    process.env.COMMCOST_PYTHON = '/nonexistent/env/python3';
    try {
      assert.match(skipOf(planWith('/nonexistent/option/python3')), /the Python \/nonexistent\/option\/python3 was not found/);
      assert.match(skipOf(planWith()), /the Python \/nonexistent\/env\/python3 was not found/, 'another Python is probed again, not taken from the last probe');
    } finally {
      if (saved === undefined) delete process.env.COMMCOST_PYTHON;
      else process.env.COMMCOST_PYTHON = saved;
    }
  });
});

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
