// commcost trace on the simulated NCCL, the native parts: the C example under the LD_PRELOAD
// interposer (each lifecycle call timed, named by the api and the C source's file:line), NCCL's
// view read from the per-process Init timings logs, and the --html report written atomically.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { traceCommand, type TraceFlags } from '../../cli/trace';
import { validateTraceFile } from '../../client/traceSchema';
import type { TraceFile } from '../../protocol/trace';

const root = join(__dirname, '..', '..');
const sim = join(root, 'dist', 'native', 'libnccl-sim.so');
const source = join(root, 'examples', 'trace', 'nccl_lifecycle.c');
let exe = '';

before(() => {
  execFileSync('flock', ['/tmp/commcost-build.lock', 'node', 'scripts/build.mjs'], { cwd: root, stdio: 'ignore' });
  exe = join(mkdtempSync(join(tmpdir(), 'commcost-c-')), 'lifecycle');
  execFileSync('cc', ['-std=c11', '-O0', '-g', source, '-o', exe, sim, `-Wl,-rpath,${join(root, 'dist', 'native')}`]);
});

async function traced(flags: TraceFlags, env: Record<string, string> = {}): Promise<{ code: number; trace: TraceFile; out: string; err: string; cwd: string }> {
  const cwd = mkdtempSync(join(tmpdir(), 'commcost-trace-native-'));
  let out = '', err = '';
  const saved = { ...process.env };
  for (const k of ['NCCL_DEBUG', 'NCCL_DEBUG_FILE', 'NCCL_DEBUG_SUBSYS', 'LD_PRELOAD']) delete process.env[k];
  Object.assign(process.env, { COMMCOST_SIM_CONNECT_MS: '30', COMMCOST_SIM_INIT_MS: '10', COMMCOST_SIM_DESTROY_MS: '5', NRANKS: '2', ...env });
  try {
    const code = await traceCommand([exe], { simulate: true, ...flags }, { out: (t) => (out += t), err: (t) => (err += t), cwd, base: join(root, 'cli') });
    const dir = join(cwd, '.commcost', 'traces');
    const file = readdirSync(dir).find((n) => n.endsWith('.json'))!;
    return { code, trace: validateTraceFile(JSON.parse(readFileSync(join(dir, file), 'utf8'))), out, err, cwd };
  } finally {
    process.env = saved;
  }
}

/** The 1-based line of `needle` in the C example. */
function lineOf(needle: string): number {
  return readFileSync(source, 'utf8').split('\n').findIndex((l) => l.includes(needle)) + 1;
}

test('--interpose: init and split are named by their NCCL call and the C line, timed by the call itself, torn down by their destroy', async () => {
  const { code, trace, err: out } = await traced({ interpose: true });
  assert.equal(code, 0);
  assert.equal(trace.simulated, true);
  const init = trace.sites.find((s) => s.api === 'ncclCommInitRank');
  const split = trace.sites.find((s) => s.api === 'ncclCommSplit');
  assert.ok(init && split, `sites: ${trace.sites.map((s) => `${s.api}@${s.file}:${s.line}`).join(', ')}`);
  assert.match(init.file!, /nccl_lifecycle\.c$/);
  assert.equal(init.line, lineOf('ncclCommInitRank(&world'));
  assert.equal(split.line, lineOf('ncclCommSplit(world'));
  assert.equal(init.source, 'native');
  assert.ok(init.creation && init.creation.medianMs >= 8, `the init call itself is timed (10 ms simulated): ${JSON.stringify(init.creation)}`);
  assert.ok(init.teardown && split.teardown, 'teardown timed by the ncclCommDestroy call');
  assert.ok(init.teardownSite!.endsWith(`nccl_lifecycle.c:${lineOf('ncclCommDestroy(world')}`), String(init.teardownSite));
  const at = init.occurrences[0]!.at;
  assert.ok(at.creation! < at.firstCollective! && at.firstCollective! < at.teardown!, JSON.stringify(at));
  assert.equal(init.cold, true);
  assert.ok(!init.notes.some((n) => /interpose/.test(n)), 'no "run with --interpose" note when it ran');
  assert.match(out, /ncclCommInitRank/);
});

test('without --interpose: the plugin frame still names the line; the note says how to time the call itself', async () => {
  const { trace } = await traced({});
  const init = trace.sites.find((s) => s.line === lineOf('ncclCommInitRank(&world'))!;
  assert.equal(init.api, 'communicator creation');
  assert.equal(init.creation, null);
  assert.ok(init.notes.some((n) => /--interpose/.test(n)), init.notes.join('; '));
});

test("NCCL's view: the simulated NCCL's Init timings lines are joined by commId (init) and by order (split), printed as NCCL's view", async () => {
  const { trace, err: out } = await traced({ interpose: true });
  assert.deepEqual(trace.ncclLog && { p: trace.ncclLog.processes, j: trace.ncclLog.joined }, { p: 2, j: 4 });
  const init = trace.sites.find((s) => s.api === 'ncclCommInitRank')!;
  const split = trace.sites.find((s) => s.api === 'ncclCommSplit')!;
  assert.equal(init.nccl!.join, 'commId');
  assert.equal(init.nccl!.fn, 'ncclCommInitRank');
  assert.ok(init.nccl!.parts.total! >= 0 && 'bootstrap' in init.nccl!.parts);
  assert.equal(split.nccl!.join, 'order');
  assert.match(out, /NCCL's view/);
});

test("NCCL's view is not asked for when the user set NCCL_DEBUG; their setting reaches the job unchanged", async () => {
  const { trace, err: out } = await traced({}, { NCCL_DEBUG: 'WARN' });
  assert.match(trace.ncclLog!.note!, /NCCL_DEBUG=WARN was set by you/);
  assert.ok(trace.sites.every((s) => s.nccl === null));
  assert.match(out, /NCCL's view: none/);
});

test('--html: the report is written (a timeline per rank, the table) and never through a link', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-html-'));
  const { code, err } = await traced({ interpose: true, html: join(dir, 'trace.html') });
  assert.equal(code, 0, err);
  const html = readFileSync(join(dir, 'trace.html'), 'utf8');
  assert.match(html, /id="commcost-trace"/);
  assert.match(html, /ncclCommInitRank/);
  assert.ok(lstatSync(join(dir, 'trace.html')).isFile());
  const target = join(dir, 'victim.txt');
  writeFileSync(target, 'keep');
  symlinkSync(target, join(dir, 'link.html'));
  await assert.rejects(traced({ html: join(dir, 'link.html') }), /link/);
  assert.equal(readFileSync(target, 'utf8'), 'keep');
  assert.ok(existsSync(join(dir, 'link.html')));
});

test('the interposer in a program without NCCL: a lifecycle function it cannot forward returns ncclInvalidUsage, recorded with r = -1; nothing else changes', () => {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-nonccl-'));
  writeFileSync(join(dir, 'p.c'), `#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
int main(void) {
  int (*destroy)(void*) = (int (*)(void*))dlsym(RTLD_DEFAULT, "ncclCommDestroy");
  printf("%s %d\\n", destroy ? "found" : "none", destroy ? destroy(0) : -2);
  return 0;
}
`);
  execFileSync('cc', ['-std=c11', join(dir, 'p.c'), '-o', join(dir, 'p'), '-ldl']);
  const lib = join(root, 'dist', 'native', 'libcommcost-interposer.so');
  const rec = mkdtempSync(join(tmpdir(), 'commcost-rec-'));
  const out = execFileSync(join(dir, 'p'), { env: { ...process.env, LD_PRELOAD: lib, COMMCOST_TRACE_DIR: rec }, encoding: 'utf8' });
  assert.equal(out, 'found 5\n');
  const lines = readdirSync(rec).flatMap((f) => readFileSync(join(rec, f), 'utf8').trim().split('\n')).map((l) => JSON.parse(l) as { api: string; r: number });
  assert.deepEqual(lines.map((l) => [l.api, l.r]), [['ncclCommDestroy', -1]]);
  assert.equal(execFileSync(join(dir, 'p'), { env: { ...process.env, LD_PRELOAD: lib }, encoding: 'utf8' }), 'found 5\n', 'without COMMCOST_TRACE_DIR nothing is written, the call is the same');
});

test('--interpose: a job that hangs inside ncclCommInitRank leaves a partial trace naming the call and its line', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-hang-'));
  writeFileSync(join(dir, 'hang.c'), `typedef struct { char internal[128]; } ncclUniqueId;
typedef struct ncclComm* ncclComm_t;
extern int ncclGetUniqueId(ncclUniqueId*);
extern int ncclCommInitRank(ncclComm_t*, int, ncclUniqueId, int);
extern int cuInit(unsigned);
int main(void) {
  ncclUniqueId id; ncclComm_t c;
  cuInit(0); ncclGetUniqueId(&id);
  return ncclCommInitRank(&c, 2, id, 0); /* rank 1 never comes: hangs here */
}
`);
  const hang = join(dir, 'hang');
  execFileSync('cc', ['-std=c11', '-O0', '-g', join(dir, 'hang.c'), '-o', hang, sim, `-Wl,-rpath,${join(root, 'dist', 'native')}`]);
  const cwd = mkdtempSync(join(tmpdir(), 'commcost-trace-hang-'));
  let out = '';
  const code = await traceCommand([hang], { simulate: true, interpose: true, deadline: '2' }, { out: () => {}, err: (t) => (out += t), cwd, base: join(root, 'cli') });
  assert.notEqual(code, 0);
  const tdir = join(cwd, '.commcost', 'traces');
  const trace = validateTraceFile(JSON.parse(readFileSync(join(tdir, readdirSync(tdir)[0]!), 'utf8')));
  assert.equal(trace.status, 'partial');
  assert.ok(trace.missing.some((m) => /deadline/.test(m)), trace.missing.join('; '));
  assert.ok(trace.missing.some((m) => /ncclCommInitRank at .*hang\.c:9 started and never returned/.test(m)), trace.missing.join('; '));
  assert.match(out, /never returned/);
});
