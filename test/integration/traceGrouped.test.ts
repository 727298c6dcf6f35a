// commcost trace --interpose on the simulated NCCL, creations paid after their call returned
// (test/fixtures/trace/nccl_grouped.c, one process): inits and splits inside ncclGroupStart/End
// (paid at ncclGroupEnd), ncclCommInitAll (its own group), non-blocking inits (completed when
// ncclCommGetAsyncError reports them done). Each creating line gets a creation figure and a note
// naming the call that paid it. The simulated NCCL defers grouped creations as NCCL does, so the
// creation's cost (COMMCOST_SIM_INIT_MS / _SPLIT_MS) is outside the creating call's own window.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { traceCommand } from '../../cli/trace';
import { validateTraceFile } from '../../client/traceSchema';
import type { TraceFile, TraceSite } from '../../protocol/trace';

const root = join(__dirname, '..', '..');
const sim = join(root, 'dist', 'native', 'libnccl-sim.so');
const source = join(root, 'test', 'fixtures', 'trace', 'nccl_grouped.c');
const INIT_MS = 40, SPLIT_MS = 30;
let trace: TraceFile;
let out = '';
let code = -1;

before(async () => {
  execFileSync('flock', ['/tmp/commcost-build.lock', 'node', 'scripts/build.mjs'], { cwd: root, stdio: 'ignore' });
  const exe = join(mkdtempSync(join(tmpdir(), 'commcost-grouped-')), 'grouped');
  execFileSync('cc', ['-std=c11', '-O0', '-g', source, '-o', exe, sim, `-Wl,-rpath,${join(root, 'dist', 'native')}`]);
  const cwd = mkdtempSync(join(tmpdir(), 'commcost-trace-grouped-'));
  const saved = { ...process.env };
  for (const k of ['NCCL_DEBUG', 'NCCL_DEBUG_FILE', 'NCCL_DEBUG_SUBSYS', 'LD_PRELOAD']) delete process.env[k];
  Object.assign(process.env, { COMMCOST_SIM_INIT_MS: String(INIT_MS), COMMCOST_SIM_SPLIT_MS: String(SPLIT_MS), COMMCOST_SIM_GPUS: '2', COMMCOST_SIM_JITTER: '0' });
  try {
    code = await traceCommand([exe], { simulate: true, interpose: true }, { out: (t) => (out += t), err: (t) => (out += t), cwd, base: join(root, 'cli') });
    const dir = join(cwd, '.commcost', 'traces');
    trace = validateTraceFile(JSON.parse(readFileSync(join(dir, readdirSync(dir).find((n) => n.endsWith('.json'))!), 'utf8')));
  } finally {
    process.env = saved;
  }
});

/** The 1-based line of the fixture holding `needle`. */
function lineOf(needle: string): number {
  const i = readFileSync(source, 'utf8').split('\n').findIndex((l) => l.includes(needle));
  assert.ok(i >= 0, needle);
  return i + 1;
}

function siteAt(needle: string): TraceSite {
  const line = lineOf(needle);
  const s = trace.sites.find((x) => x.line === line);
  assert.ok(s, `no site at line ${line} (${needle}); sites: ${trace.sites.map((x) => `${x.api}@${x.line}`).join(', ')}\n${out}`);
  return s;
}

test('the fixture ran to the end on the simulated NCCL (grouped creations deferred, non-blocking ones polled)', () => {
  assert.equal(code, 0, `the fixture checks every NCCL result itself and exits 1 on a wrong one\n${out}`);
  assert.equal(trace.simulated, true);
});

test('a grouped ncclCommInitRank: its own line, timed from the call to the ncclGroupEnd that paid it, said so', () => {
  const end = `nccl_grouped.c:${lineOf('pays both inits')}`;
  for (const needle of ['grouped init, rank 0', 'grouped init, rank 1']) {
    const s = siteAt(needle);
    assert.equal(s.api, 'ncclCommInitRank');
    assert.ok(s.creation && s.creation.medianMs >= INIT_MS * 0.8, `${needle}: creation ${JSON.stringify(s.creation)}`);
    assert.ok(s.notes.some((n) => n.startsWith('created in a group: paid at ') && n.includes(`${end} of ncclGroupEnd`)), s.notes.join('; '));
    assert.equal(s.deferred?.kind, 'group');
    assert.ok(s.deferred?.at?.endsWith(end), JSON.stringify(s.deferred));
  }
});

test('a grouped ncclCommSplit: paid at its group\'s ncclGroupEnd', () => {
  const s = siteAt('/* grouped split */');
  assert.equal(s.api, 'ncclCommSplit');
  assert.ok(s.creation && s.creation.medianMs >= SPLIT_MS * 0.8, JSON.stringify(s.creation));
  assert.ok(s.notes.some((n) => n.includes(`nccl_grouped.c:${lineOf('pays both splits')} of ncclGroupEnd`)), s.notes.join('; '));
});

test('ncclCommInitAll: every communicator it made is timed by the call and said to be one group', () => {
  const s = siteAt('ncclCommInitAll(all');
  assert.equal(s.api, 'ncclCommInitAll');
  assert.equal(s.occurrences.reduce((n, o) => n + o.ranks, 0), 2, 'both ranks joined to the call');
  assert.ok(s.creation && s.creation.medianMs >= INIT_MS * 0.8, JSON.stringify(s.creation));
  assert.equal(s.deferred?.kind, 'initAll');
  assert.ok(s.notes.some((n) => /ncclCommInitAll creates its 2 communicators in one group/.test(n)), s.notes.join('; '));
});

test('a non-blocking init: timed to the ncclCommGetAsyncError that reported it done, not to its own return', () => {
  const s = siteAt('non-blocking init */');
  assert.equal(s.api, 'ncclCommInitRankConfig');
  assert.ok(s.creation && s.creation.medianMs >= INIT_MS * 0.8, JSON.stringify(s.creation));
  assert.equal(s.deferred?.kind, 'nonblocking');
  assert.ok(s.notes.some((n) => n.startsWith('non-blocking: the call returned ncclInProgress; completed at ') && n.includes(`nccl_grouped.c:${lineOf('check(ncclCommGetAsyncError(comm')} of ncclCommGetAsyncError`)), s.notes.join('; '));
});

test('a non-blocking init inside a group: its ncclGroupEnd returned ncclInProgress; timed to the completing poll', () => {
  const s = siteAt('grouped non-blocking init');
  assert.ok(s.creation && s.creation.medianMs >= INIT_MS * 0.8, JSON.stringify(s.creation));
  assert.equal(s.deferred?.groupEnd?.endsWith(`nccl_grouped.c:${lineOf('returns in progress')}`), true, JSON.stringify(s.deferred));
  assert.ok(s.notes.some((n) => /^non-blocking, created in a group: ncclGroupEnd at .* returned ncclInProgress; completed at /.test(n)), s.notes.join('; '));
});

test('the CLI table marks the deferred creations and prints the notes', () => {
  assert.match(out, /ncclCommInitRank \(grouped\)/);
  assert.match(out, /ncclCommInitRankConfig \(non-blocking\)/);
  assert.match(out, /note: created in a group: paid at .*nccl_grouped\.c:\d+ of ncclGroupEnd/);
  assert.ok(!trace.sites.some((s) => s.creation === null), trace.sites.map((s) => `${s.api}@${s.line}: ${JSON.stringify(s.creation)}`).join('\n'));
});
