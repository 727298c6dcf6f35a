// Profiler plugin ABI v7 on the simulated NCCL: commcost's plugin exports ncclProfiler_v7 (taken by
// the simulated NCCL with the test knob COMMCOST_SIM_PROFILER_ABI=7: no NCCL release is claimed),
// records the same trace as at v6, and chains a user's plugin that exports only ncclProfiler_v7,
// at v7 and, adapted, when loaded at v6 or v5. The fake user plugin is built here from C.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, test } from 'node:test';

const root = join(__dirname, '..', '..');
const native = join(root, 'dist', 'native');
const work = mkdtempSync(join(tmpdir(), 'commcost-v7-'));
const fake = join(work, 'libfake-v7.so');
const job = join(work, 'lifecycle');

// A user's plugin with only the v7 table: it logs init (its commId), each event's type and the
// CollApi's function, stops, and finalize. The descriptor is read up to collApi.func, whose
// offset is the same in v5, v6 and v7 (type, parentObj, rank, then the union).
const FAKE = `
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
typedef struct { uint64_t type; void* parentObj; int rank; union { struct { const char* func; size_t count; } collApi; char pad[256]; }; } D;
static FILE* out(void) { static FILE* f; if (!f) { f = fopen(getenv("FAKE_V7_LOG"), "a"); setvbuf(f, NULL, _IOLBF, 0); } return f; }
static int tok;
static int init(void** ctx, uint64_t commId, int* mask, const char* n, int nNodes, int nranks, int rank, void* log) {
  (void)n; (void)nNodes; (void)log; *ctx = &tok; *mask = (1 << 8) | (1 << 9); fprintf(out(), "init %llx %d %d\\n", (unsigned long long)commId, nranks, rank); return 0; }
static int start(void* ctx, void** h, D* d) { (void)ctx; *h = &tok; fprintf(out(), "start %llu %s\\n", (unsigned long long)d->type, d->type == (1 << 9) ? d->collApi.func : "-"); return 0; }
static int stop(void* h) { (void)h; fprintf(out(), "stop\\n"); return 0; }
static int state(void* h, int s, void* a) { (void)h; (void)s; (void)a; return 0; }
static int fin(void* ctx) { (void)ctx; fprintf(out(), "fin\\n"); return 0; }
struct { const char* name; void* f[5]; } ncclProfiler_v7 = { "fake-v7", { (void*)init, (void*)start, (void*)stop, (void*)state, (void*)fin } };
`;

before(() => {
  execFileSync('flock', ['/tmp/commcost-build.lock', 'node', 'native/build.mjs'], { cwd: root, stdio: 'ignore' });
  writeFileSync(join(work, 'fake.c'), FAKE);
  execFileSync('cc', ['-shared', '-fPIC', '-O0', join(work, 'fake.c'), '-o', fake]);
  execFileSync('cc', ['-std=c11', '-O0', join(root, 'examples', 'trace', 'nccl_lifecycle.c'), '-o', job, join(native, 'libnccl-sim.so'), `-Wl,-rpath,${native}`]);
});

interface Run { records: Record<string, unknown>[]; fake: string[]; err: string }

/** Runs the C lifecycle example (1 rank) with commcost's plugin; `chain`: chain the fake v7 plugin. */
function run(env: Record<string, string>, chain: boolean): Run {
  const dir = mkdtempSync(join(work, 'run-'));
  const log = join(dir, 'fake.log');
  writeFileSync(log, '');
  const p = spawnSync(job, [], {
    encoding: 'utf8',
    timeout: 60_000,
    killSignal: 'SIGKILL',
    env: { ...process.env, NRANKS: '1', NCCL_PROFILER_PLUGIN: join(native, 'libcommcost-profiler.so'), COMMCOST_TRACE_DIR: dir,
      COMMCOST_TRACE_CHAIN_PLUGIN: chain ? fake : '', FAKE_V7_LOG: log, ...env },
  });
  assert.equal(p.status, 0, `the job ran: ${p.stderr}`);
  const file = readdirSync(dir).find((n) => n.endsWith('.jsonl'));
  assert.ok(file, `a trace file in ${dir}`);
  const records = readFileSync(join(dir, file), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  return { records, fake: readFileSync(log, 'utf8').trim().split('\n').filter(Boolean), err: p.stderr };
}

/** The trace without what differs between two runs of one job (times, pids, tids, memory, call sites, the ABI). */
function shape(records: Record<string, unknown>[]): unknown[] {
  const vary = new Set(['t', 't0', 't1', 'rt', 'pid', 'tid', 'free', 'ns', 'collNs', 'collMaxNs', 'abi', 'site', 'stack', 'host', 'c', 'chain', 'chainAbi', 'chainError', 'nccl']);
  return records.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !vary.has(k)).map(([k, v]) => [k, typeof v === 'number' && /Ms$/.test(k) ? 'ms' : v])));
}

const proc = (r: Run) => r.records.find((x) => x.k === 'proc')!;

test('the simulated NCCL with COMMCOST_SIM_PROFILER_ABI=7 takes our ncclProfiler_v7, which records the same trace as v6', () => {
  const v6 = run({ COMMCOST_SIM_VERSION: '22909' }, false);
  const v7 = run({ COMMCOST_SIM_VERSION: '22909', COMMCOST_SIM_PROFILER_ABI: '7' }, false);
  assert.equal(proc(v6).abi, 6);
  assert.equal(proc(v7).abi, 7);
  assert.ok(v7.records.some((r) => r.k === 'collStart'), 'a first collective was recorded at v7');
  assert.deepEqual(shape(v7.records), shape(v6.records));
});

test('a COMMCOST_SIM_PROFILER_ABI the simulated NCCL does not understand is named on stderr and ignored', () => {
  const r = run({ COMMCOST_SIM_VERSION: '22909', COMMCOST_SIM_PROFILER_ABI: 'seven' }, false);
  assert.match(r.err, /COMMCOST_SIM_PROFILER_ABI=seven is not understood \(only 7/);
  assert.equal(proc(r).abi, 6, 'the version decides, as without the knob');
});

for (const [label, env, abi] of [
  ['v7', { COMMCOST_SIM_VERSION: '22909', COMMCOST_SIM_PROFILER_ABI: '7' }, 7],
  ['v6', { COMMCOST_SIM_VERSION: '22909' }, 6],
  ['v5', { COMMCOST_SIM_VERSION: '22809' }, 5],
] as const) {
  test(`a user plugin exporting only ncclProfiler_v7 receives init, events and finalize through ours loaded at ${label}`, () => {
    const r = run(env, true);
    assert.equal(proc(r).abi, abi);
    assert.equal(proc(r).chainAbi, 7, `chained at v7: ${String(proc(r).chainError)}`);
    const inits = r.records.filter((x) => x.k === 'init');
    assert.equal(r.fake.filter((l) => l.startsWith('init ')).length, inits.length, r.fake.join('\n'));
    assert.deepEqual(r.fake.filter((l) => l.startsWith('init ')).map((l) => l.split(' ')[1]!.padStart(16, '0')), inits.map((x) => x.c));
    assert.equal(r.fake.filter((l) => l === 'fin').length, inits.length);
    const starts = r.fake.filter((l) => l.startsWith('start '));
    assert.ok(starts.some((l) => l.startsWith(`start ${1 << 9} `)), `a CollApi event reached it: ${starts.join('; ')}`);
    assert.equal(r.fake.filter((l) => l === 'stop').length, starts.length, 'every event it started was stopped');
    const coll = r.records.find((x) => x.k === 'collStart');
    assert.ok(coll && r.records.some((x) => x.k === 'coll'), 'our own record of the first collective is kept');
    assert.ok(starts.some((l) => l.endsWith(` ${String(coll.fn)}`)), `the CollApi's function (${String(coll.fn)}) reached it: ${starts.join('; ')}`);
  });
}
