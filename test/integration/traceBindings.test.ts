// commcost trace of NCCL driven from Python through a foreign-function library, not torch (#32):
// ctypes (vLLM's PyNcclCommunicator, SGLang, verl) and cffi, on the simulated NCCL dlopened by
// path (so the LD_PRELOAD interposer never sees the calls). Each communicator is timed and placed
// at the script's line that called NCCL — not at libffi — with its creation, first collective
// and teardown figures.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { traceCommand, type TraceFlags } from '../../cli/trace';
import { validateTraceFile } from '../../client/traceSchema';
import type { TraceFile, TraceSite } from '../../protocol/trace';

const root = join(__dirname, '..', '..');
const sim = join(root, 'dist', 'native', 'libnccl-sim.so');
const fixtures = join(root, 'test', 'fixtures', 'trace', 'bindings');
const launch = join(root, 'test', 'fixtures', 'trace', 'fake_torch', 'launch.py');

before(() => {
  execFileSync('flock', ['/tmp/commcost-build.lock', 'node', 'scripts/build.mjs'], { cwd: root, stdio: 'ignore' });
});

async function traced(script: string, flags: TraceFlags = {}, env: Record<string, string> = {}): Promise<{ code: number; trace: TraceFile; out: string }> {
  const cwd = mkdtempSync(join(tmpdir(), 'commcost-trace-bindings-'));
  let out = '';
  const saved = { ...process.env };
  for (const k of ['NCCL_DEBUG', 'NCCL_DEBUG_FILE', 'LD_PRELOAD']) delete process.env[k];
  Object.assign(process.env, {
    COMMCOST_SIM_CONNECT_MS: '30', COMMCOST_SIM_INIT_MS: '10', COMMCOST_SIM_DESTROY_MS: '5',
    COMMCOST_STUB_DIR: mkdtempSync(join(tmpdir(), 'commcost-stub-')), COMMCOST_STUB_NCCL: sim, WORLD_SIZE: '2', ...env,
  });
  try {
    const code = await traceCommand(['python3', launch, script], { simulate: true, ...flags }, { out: (t) => (out += t), err: (t) => (out += t), cwd, base: join(root, 'cli') });
    const dir = join(cwd, '.commcost', 'traces');
    const file = readdirSync(dir).find((n) => n.endsWith('.json'))!;
    return { code, trace: validateTraceFile(JSON.parse(readFileSync(join(dir, file), 'utf8'))), out };
  } finally {
    process.env = saved;
  }
}

/** The 1-based line of the `# site: <name>` comment in `file`. */
function siteLine(file: string, name: string): number {
  const i = readFileSync(file, 'utf8').split('\n').findIndex((l) => l.endsWith(`# site: ${name}`));
  assert.ok(i >= 0, `no "# site: ${name}" in ${file}`);
  return i + 1;
}

/** The 1-based line of `file` that holds `needle`. */
function lineIn(file: string, needle: string): number {
  const i = readFileSync(file, 'utf8').split('\n').findIndex((l) => l.includes(needle));
  assert.ok(i >= 0, `no "${needle}" in ${file}`);
  return i + 1;
}

/** Checks every site of a job shaped like ctypes_job.py: at the script's lines, timed, 2 ranks, 2 occurrences. */
function checkSites(trace: TraceFile, script: string, out: string, via: 'ctypes' | 'cffi'): void {
  const where = trace.sites.map((s) => `${s.api}@${s.file}:${s.line}`).join(', ');
  assert.ok(!trace.sites.some((s) => /libffi|_ctypes|_cffi_backend/.test(s.file ?? '')), `no site in the foreign-function library: ${where}`);
  const init = trace.sites.find((s) => s.api === 'ncclCommInitRank');
  const split = trace.sites.find((s) => s.api === 'ncclCommSplit');
  assert.ok(init && split, `an init and a split site: ${where}`);
  assert.equal(trace.sites.length, 2, where);
  for (const [s, line, first] of [[init, 'init', 'broadcast'], [split, 'split', 'allreduce']] as const) {
    assert.equal(s.source, 'python');
    assert.equal(s.binding, via, `${line}: how NCCL was reached`);
    assert.equal(s.file, script);
    assert.equal(s.line, siteLine(script, line));
    assert.equal(s.count, 2, `${line}: one communicator per sync, two syncs`);
    assert.ok(s.occurrences.every((o) => o.ranks === 2), `${line}: both ranks`);
    assert.ok(s.creation && s.creation.n === 2, `${line}: a creation figure per sync: ${JSON.stringify(s.creation)}`);
    assert.ok(s.firstCollective && s.firstCollective.medianMs >= 25, `${line}: the first ${first} pays the lazy connect (30 ms simulated): ${JSON.stringify(s.firstCollective)}`);
    assert.ok(s.teardown && s.teardown.n === 2, `${line}: a teardown figure per sync`);
    const at = s.occurrences[0]!.at;
    assert.ok(at.creation! < at.firstCollective! && at.firstCollective! < at.teardown!, `${line}: in order ${JSON.stringify(at)}`);
  }
  assert.ok(init.creation!.medianMs >= 8, `the init call itself is timed (10 ms simulated): ${JSON.stringify(init.creation)}`);
  assert.equal(init.teardownSite, `${script}:${siteLine(script, 'destroy')}`);
  assert.equal(split.teardownSite, `${script}:${siteLine(script, 'destroy child')}`);
  assert.equal(init.cold, true);
  assert.match(out, /ncclCommInitRank/);
}

test('ctypes: a communicator created, split, first used and destroyed through ctypes is timed and placed at the script\'s line', async () => {
  const script = join(fixtures, 'ctypes_job.py');
  const { code, trace, out } = await traced(script);
  assert.equal(code, 0);
  assert.equal(trace.simulated, true);
  assert.equal(trace.status, 'complete', trace.missing.join('; '));
  checkSites(trace, script, out, 'ctypes');
});

/** Whether python3 can import `module`. */
function importable(module: string): boolean {
  try {
    execFileSync('python3', ['-c', `import ${module}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

test('cffi (ABI mode, ffi.dlopen): the same lifecycle is timed and placed at the script\'s line', { skip: importable('cffi') ? false : 'cffi is not installed for python3 (pip install cffi)' }, async () => {
  const script = join(fixtures, 'cffi_job.py');
  const { code, trace, out } = await traced(script);
  assert.equal(code, 0);
  assert.equal(trace.status, 'complete', trace.missing.join('; '));
  checkSites(trace, script, out, 'cffi');
});

/** The site at the line marked `# site: <name>` of `script`. */
function siteAt(trace: TraceFile, script: string, name: string): TraceSite {
  const line = siteLine(script, name);
  const s = trace.sites.find((x) => x.file === script && x.line === line);
  assert.ok(s, `no site at ${name} (line ${line}); sites: ${trace.sites.map((x) => `${x.api}@${x.file}:${x.line}`).join(', ')}`);
  return s;
}

test('ctypes inside ncclGroupStart/End and non-blocking: each creating line timed to the call that paid it, as for C', async () => {
  const script = join(fixtures, 'ctypes_group_job.py');
  const INIT_MS = 40;
  const { code, trace, out } = await traced(script, {}, { COMMCOST_SIM_INIT_MS: String(INIT_MS), COMMCOST_SIM_JITTER: '0' });
  assert.equal(code, 0, `the fixture checks every NCCL result itself and exits 1 on a wrong one\n${out}`);
  assert.equal(trace.status, 'complete', trace.missing.join('; '));
  assert.ok(!trace.sites.some((s) => s.source !== 'python'), `every communicator at a Python line: ${trace.sites.map((s) => `${s.source}:${s.api}@${s.line}`).join(', ')}`);
  assert.ok(!trace.sites.some((s) => s.api === 'ncclGroupEnd' || s.api === 'ncclCommGetAsyncError'), 'the calls that paid are named in notes, never sites');
  const end = `${script}:${siteLine(script, 'group end')}`;
  for (const name of ['grouped init A', 'grouped init B']) {
    const s = siteAt(trace, script, name);
    assert.equal(s.api, 'ncclCommInitRank');
    assert.equal(s.binding, 'ctypes');
    assert.equal(s.count, 1);
    assert.ok(s.occurrences[0]!.ranks === 2, `${name}: both ranks`);
    assert.ok(s.creation && s.creation.medianMs >= INIT_MS * 0.8, `${name}: the creation runs to the ncclGroupEnd that paid it (${INIT_MS} ms simulated): ${JSON.stringify(s.creation)}`);
    assert.deepEqual(s.deferred, { kind: 'group', api: 'ncclGroupEnd', at: end });
    assert.ok(s.notes.some((n) => n.startsWith(`created in a group: paid at ${end} of ncclGroupEnd`)), s.notes.join('; '));
    assert.ok(s.firstCollective && s.firstCollective.n === 1, `${name}: its first allreduce`);
  }
  const poll = `${script}:${siteLine(script, 'poll')}`;
  const nb = siteAt(trace, script, 'non-blocking init');
  assert.equal(nb.api, 'ncclCommInitRankConfig');
  assert.deepEqual(nb.deferred, { kind: 'nonblocking', api: 'ncclCommGetAsyncError', at: poll });
  assert.ok(nb.creation && nb.creation.medianMs >= INIT_MS * 0.8, `the non-blocking creation runs to the poll that saw it done: ${JSON.stringify(nb.creation)}`);
  assert.ok(nb.notes.some((n) => n.startsWith(`non-blocking: the call returned ncclInProgress; completed at ${poll} of ncclCommGetAsyncError`)), nb.notes.join('; '));
  const gnb = siteAt(trace, script, 'grouped non-blocking init');
  assert.deepEqual(gnb.deferred, { kind: 'nonblocking', api: 'ncclCommGetAsyncError', at: poll, groupEnd: `${script}:${siteLine(script, 'non-blocking group end')}` });
  assert.ok(gnb.creation && gnb.creation.medianMs >= INIT_MS * 0.8, JSON.stringify(gnb.creation));
  assert.match(out, /ncclCommInitRank \[ctypes\] \(grouped\)/, 'the table says how NCCL was reached and how the creation was paid');
});

/**
 * Builds the Cython fixture (bindings/cython/ncclcy.pyx) into `<tmp>/site-packages` beside its
 * Python layer; a string saying what is missing when it cannot be built here.
 */
function buildCython(): string | { dir: string } {
  if (!importable('Cython')) return 'Cython is not installed for python3 (pip install cython)';
  const conf = (expr: string) => execFileSync('python3', ['-c', `import sysconfig; print(${expr})`], { encoding: 'utf8' }).trim();
  const include = conf("sysconfig.get_paths()['include']");
  if (!existsSync(join(include, 'Python.h'))) return `python3's headers are not installed (no ${include}/Python.h: apt-get install python3-dev)`;
  try {
    execFileSync('cc', ['--version'], { stdio: 'ignore' });
  } catch {
    return 'no C compiler (cc) to build the Cython fixture';
  }
  const build = mkdtempSync(join(tmpdir(), 'commcost-cython-'));
  const dir = join(build, 'site-packages');
  mkdirSync(dir);
  const src = join(fixtures, 'cython');
  execFileSync('python3', ['-m', 'cython', '-3', join(src, 'ncclcy.pyx'), '-o', join(build, 'ncclcy.c')], { stdio: 'pipe' });
  execFileSync('cc', ['-shared', '-fPIC', '-O0', `-I${include}`, join(build, 'ncclcy.c'), '-o', join(dir, `ncclcy${conf("sysconfig.get_config_var('EXT_SUFFIX')")}`)], { stdio: 'pipe' });
  copyFileSync(join(src, 'ncclcy_core.py'), join(dir, 'ncclcy_core.py'));
  return { dir };
}

test('a Cython extension calling libnccl from C (nccl4py-style bindings): each communicator at the Python line that called the extension, its wrappers the chain', async (t) => {
  const built = buildCython();
  if (typeof built === 'string') {
    t.skip(built);
    return;
  }
  const script = join(fixtures, 'cython_job.py');
  const INIT_MS = 20;
  const { code, trace, out } = await traced(script, {}, { COMMCOST_CYTHON_PATH: built.dir, COMMCOST_SIM_INIT_MS: String(INIT_MS) });
  assert.equal(code, 0, out);
  assert.equal(trace.status, 'complete', trace.missing.join('; '));
  const where = trace.sites.map((s) => `${s.source}:${s.api}@${s.file}:${s.line}`).join(', ');
  assert.equal(trace.sites.length, 2, where);
  const core = join(built.dir, 'ncclcy_core.py');
  for (const [name, api, chain] of [['core init', 'ncclcy.comm_init_rank', [`${core}:${lineIn(core, 'ncclcy.comm_init_rank(')}`]], ['direct init', 'ncclcy.comm_init_rank', []]] as const) {
    const s = siteAt(trace, script, name);
    assert.equal(s.source, 'python');
    assert.equal(s.api, api, 'named by the extension\'s function: the NCCL call inside it is not seen from Python');
    assert.equal(s.binding, 'extension');
    assert.deepEqual(s.chain, chain, `${name}: the wrappers in site-packages between the line and the extension`);
    assert.equal(s.count, 2, `${name}: one communicator per sync, two syncs`);
    assert.ok(s.occurrences.every((o) => o.ranks === 2), `${name}: both ranks`);
    assert.ok(s.creation && s.creation.n === 2 && s.creation.medianMs >= INIT_MS * 0.8, `${name}: the extension call is the creation (${INIT_MS} ms simulated): ${JSON.stringify(s.creation)}`);
    assert.ok(s.firstCollective && s.firstCollective.n === 2 && s.firstCollective.medianMs >= 25, `${name}: the first allreduce through the extension pays the lazy connect (30 ms simulated): ${JSON.stringify(s.firstCollective)}`);
    assert.equal(s.firstUse, 'all_reduce', 'the op from the profiler plugin');
    assert.ok(s.teardown && s.teardown.n === 2, `${name}: a teardown figure per sync`);
    const destroy = name === 'core init' ? 'core destroy' : 'direct destroy';
    assert.equal(s.teardownSite, `${script}:${siteLine(script, destroy)}`);
  }
  assert.match(out, /ncclcy\.comm_init_rank \[C extension\]/, 'the table says how NCCL was reached');
});
