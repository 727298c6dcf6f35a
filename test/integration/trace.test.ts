// commcost trace end to end on the simulated NCCL: the C example and the torch example (on the
// stub torch.distributed of test/fixtures/trace/fake_torch, NCCL through ctypes), each call site
// with file:line, creation < first collective < teardown, every figure SIMULATED.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { traceCommand } from '../../cli/trace';
import { validateTraceFile } from '../../client/traceSchema';
import type { TraceFile } from '../../protocol/trace';

const root = join(__dirname, '..', '..');
const sim = join(root, 'dist', 'native', 'libnccl-sim.so');

before(() => {
  execFileSync('flock', ['/tmp/commcost-build.lock', 'node', 'native/build.mjs'], { cwd: root, stdio: 'ignore' });
});

/** `out`: what commcost wrote to stdout (nothing: the job's stdout is the job's); `err`: its stderr, the table among it. */
async function traced(command: string[], env: Record<string, string>): Promise<{ code: number; trace: TraceFile; out: string; err: string; file: string }> {
  const cwd = mkdtempSync(join(tmpdir(), 'commcost-trace-it-'));
  let out = '', err = '';
  const saved = { ...process.env };
  Object.assign(process.env, { COMMCOST_SIM_CONNECT_MS: '30', COMMCOST_SIM_INIT_MS: '10', ...env });
  try {
    const code = await traceCommand(command, { simulate: true }, { out: (t) => (out += t), err: (t) => (err += t), cwd, base: join(root, 'cli') });
    const dir = join(cwd, '.commcost', 'traces');
    const file = readdirSync(dir).find((n) => n.endsWith('.json'))!;
    return { code, trace: validateTraceFile(JSON.parse(readFileSync(join(dir, file), 'utf8'))), out, err, file: join(dir, file) };
  } finally {
    process.env = saved;
  }
}

function inOrder(t: TraceFile, line: number): void {
  const s = t.sites.find((x) => x.line === line);
  assert.ok(s, `a site at line ${line}: ${t.sites.map((x) => `${x.file}:${x.line}`).join(', ')}`);
  const at = s.occurrences[0]!.at;
  assert.ok(at.creation !== null && at.firstCollective !== null && at.teardown !== null, JSON.stringify(at));
  assert.ok(at.creation < at.firstCollective && at.firstCollective < at.teardown, `line ${line}: ${JSON.stringify(at)}`);
}

test('the C example: init, split and destroy appear at their lines, in order, SIMULATED', async () => {
  const exe = join(mkdtempSync(join(tmpdir(), 'commcost-c-')), 'lifecycle');
  execFileSync('cc', ['-std=c11', '-O0', '-g', join(root, 'examples', 'trace', 'nccl_lifecycle.c'), '-o', exe, sim, `-Wl,-rpath,${join(root, 'dist', 'native')}`]);
  const { code, trace, err: out } = await traced([exe], { NRANKS: '2' });
  assert.equal(code, 0);
  assert.equal(trace.simulated, true);
  assert.match(out, /^SIMULATED/);
  assert.equal(trace.status, 'complete', trace.missing.join('; '));
  assert.equal(trace.processes.length, 2);
  for (const line of [72, 74]) inOrder(trace, line);
  const init = trace.sites.find((s) => s.line === 72)!;
  assert.match(init.file!, /nccl_lifecycle\.c$/);
  assert.equal(init.cold, true);
  assert.equal(init.occurrences[0]!.ranks, 2);
  assert.ok(init.connect!.medianMs >= 25, `the lazy connect (30 ms simulated) is inside the first group span: ${init.connect!.medianMs}`);
  assert.equal(trace.sites.find((s) => s.line === 74)!.cold, false);
});

test('the torch example on the stub torch.distributed: every call site at its line, lazy groups, in order', async () => {
  const stubDir = mkdtempSync(join(tmpdir(), 'commcost-stub-'));
  const { code, trace } = await traced(['python3', join(root, 'test', 'fixtures', 'trace', 'fake_torch', 'launch.py'), join(root, 'examples', 'trace', 'torch_tp_reshape.py')], {
    PYTHONPATH: join(root, 'test', 'fixtures', 'trace', 'fake_torch'), COMMCOST_STUB_DIR: stubDir, COMMCOST_STUB_NCCL: sim, WORLD_SIZE: '2',
  });
  assert.equal(code, 0);
  assert.equal(trace.simulated, true);
  // The example's own lines (1-based), found in its code below the docstring, so that editing the docstring moves them too.
  const src = readFileSync(join(root, 'examples', 'trace', 'torch_tp_reshape.py'), 'utf8').split('\n');
  const bodyFrom = src.findIndex((l, i) => i > 0 && l.includes('"""')) + 1;
  const lineOf = (needle: string, nth = 0): number => src.map((l, i) => (i >= bodyFrom && l.includes(needle) ? i + 1 : 0)).filter(Boolean)[nth]!;
  const [init, tp2, split, back] = [lineOf('dist.init_process_group('), lineOf('dist.new_group('), lineOf('dist.split_group('), lineOf('= dist.new_group(list', 1)];
  assert.deepEqual(trace.sites.map((s) => `${s.api}:${s.line}`), [`init_process_group:${init}`, `new_group:${tp2}`, `split_group:${split}`, `new_group:${back}`]);
  for (const line of [init, tp2, split, back]) inOrder(trace, line);
  assert.deepEqual(trace.sites.map((s) => s.lazy), [false, true, false, true]);
  assert.deepEqual(trace.sites.map((s) => s.cold), [true, false, false, false]);
  const lazy = trace.sites.find((s) => s.line === tp2)!;
  assert.match(lazy.firstCollectiveSite!, new RegExp(`torch_tp_reshape\\.py:${lineOf('group=tp2')}$`));
  assert.ok(lazy.firstCollective!.medianMs >= 25, 'the lazy group pays its creation and connect in its first collective');
  assert.equal(trace.sites.every((s) => s.occurrences[0]!.ranks === 2), true);
});

test("the job's exit code and output are its own; a failed job leaves a partial trace saying why", async () => {
  const { code, trace, err: out } = await traced(['python3', '-c', 'import sys; print("hello"); sys.exit(3)'], {});
  assert.equal(code, 3);
  assert.equal(trace.status, 'partial');
  assert.ok(trace.missing.some((m) => /code 3/.test(m)), trace.missing.join('; '));
  assert.match(out, /partial/);
});

test('a job whose groups are first used by a broadcast and a send/recv: each site says its first use; the table on stderr, none on stdout; the stamp', async () => {
  const exe = join(mkdtempSync(join(tmpdir(), 'commcost-c-')), 'first_use');
  const src = join(root, 'test', 'fixtures', 'trace', 'nccl_first_use.c');
  execFileSync('cc', ['-std=c11', '-O0', '-g', src, '-o', exe, sim, `-Wl,-rpath,${join(root, 'dist', 'native')}`]);
  const lines = readFileSync(src, 'utf8').split('\n');
  const lineOf = (needle: string) => lines.findIndex((l) => l.includes(needle)) + 1;
  const { code, trace, out, err, file } = await traced([exe], { NRANKS: '2', COMMCOST_SIM_P2P_CONNECT_MS: '80' });
  assert.equal(out, '', 'commcost writes nothing to stdout: it is the job\'s');
  assert.equal(code, 0);
  assert.equal(trace.status, 'complete', trace.missing.join('; '));
  const world = trace.sites.find((s) => s.line === lineOf('/* creation: world */'));
  const stage = trace.sites.find((s) => s.line === lineOf('/* creation: stage */'));
  assert.ok(world && stage, trace.sites.map((s) => `${s.file}:${s.line}`).join(', '));
  assert.equal(world.firstUse, 'broadcast');
  assert.equal(stage.firstUse, 'send');
  assert.ok(stage.firstCollective!.medianMs >= 60, `the peer's connect (80 ms simulated) is in the first send/recv: ${stage.firstCollective!.medianMs}`);
  // The table: on stderr with each first use named; nothing of commcost's on stdout.
  assert.match(err, /first use/);
  assert.match(err, /broadcast/);
  assert.match(err, /environment: no GPU: commcost's simulated NCCL 2\.28\.9 \(.*libnccl-sim\.so\)/);
  // The environment stamp, as a run carries it.
  assert.deepEqual(trace.environment?.gpuModels, ['Simulated GPU']);
  assert.equal(trace.environment?.ncclSource, 'simulated');
  assert.ok(trace.environment!.ncclPaths[0]!.endsWith('libnccl-sim.so'), JSON.stringify(trace.environment));
  assert.equal(trace.environment?.processes, 2);
  // commcost report re-renders the saved trace: its table on stdout, with --html the HTML page beside it.
  const report = execFileSync(process.execPath, [join(root, 'bin', 'commcost.js'), 'report', file, '--html'], { encoding: 'utf8' });
  assert.match(report, /^SIMULATED/);
  assert.match(report, /broadcast/);
  assert.match(readFileSync(file.replace(/\.json$/, '.html'), 'utf8'), /<html/i);
});
