import assert from 'node:assert/strict';
import { formatTrace } from '../../cli/trace';
import { sharedTeardownMark } from '../../protocol/trace';
import { test } from 'node:test';
import { mergeTrace, type RecordFile } from '../../client/trace/merge';
import { validateTraceFile } from '../../client/traceSchema';

const MS = 1e6;
const job = { command: ['python', 'job.py'], startedAt: 'a', endedAt: 'b', exitCode: 0, signal: null, host: 'h' };
const line = (o: object) => JSON.stringify(o);
const site = (l: number) => ({ file: '/u/job.py', line: l, func: 'main' });

/** One rank: init_process_group(:10) eager, new_group(:20) lazy whose first all_reduce(:21) creates it, destroy(:30). */
function rank(r: number, pid: number, slow: number): RecordFile[] {
  const py = [
    line({ k: 'pyproc', pid, rank: r }),
    line({ k: 'call', api: 'init_process_group', t0: 0, t1: 50 * MS, tid: 1, site: site(10), chain: [], group: 'WORLD', ok: true }),
    line({ k: 'call', api: 'new_group', t0: 60 * MS, t1: 61 * MS, tid: 1, site: site(20), chain: [], group: 'pg:2', ok: true }),
    line({ k: 'call', api: 'all_reduce', t0: 70 * MS, t1: (100 + slow) * MS, tid: 1, site: site(21), chain: [], groupOf: 'pg:2', first: true, ok: true }),
    line({ k: 'call', api: 'destroy_process_group', t0: 200 * MS, t1: 210 * MS, tid: 1, site: site(30), chain: [], ok: true }),
  ];
  const plugin = [
    line({ k: 'proc', pid, abi: 6, nccl: 22907, sim: true }),
    line({ k: 'init', i: 1, c: 'aa', nranks: 2, rank: r, t: 20 * MS, tid: 1, free: 1000 }),
    line({ k: 'connect', i: 1, t0: 120 * MS, t1: 130 * MS, free: 900 }),
    line({ k: 'init', i: 2, c: 'bb', nranks: 2, rank: r, t: 75 * MS, tid: 1, free: 900 }),
    line({ k: 'connect', i: 2, t0: 80 * MS, t1: (95 + slow) * MS, free: 700 }),
    line({ k: 'fin', i: 2, t: 205 * MS, free: 900 }),
    line({ k: 'fin', i: 1, t: 208 * MS, free: 1000 }),
  ];
  return [{ name: `h-${pid}.py.jsonl`, text: py.join('\n') + '\n' }, { name: `h-${pid}.jsonl`, text: plugin.join('\n') + '\n' }];
}

test('merge: a lazy group is attributed to its creation line, its first collective to the collective', () => {
  const t = mergeTrace([...rank(0, 100, 0), ...rank(1, 101, 0)], job);
  const lazy = t.sites.find((s) => s.line === 20);
  assert.ok(lazy, 'the new_group line is a site');
  assert.equal(lazy.lazy, true);
  assert.equal(lazy.api, 'new_group');
  assert.equal(lazy.firstCollectiveSite, '/u/job.py:21');
  assert.equal(lazy.teardownSite, '/u/job.py:30');
  assert.deepEqual(t.sites.map((s) => s.line), [10, 20], 'sites in order of creation');
  assert.equal(t.simulated, true);
  assert.equal(t.status, 'complete');
});

test('merge: each phase is the MAX over ranks of the same occurrence (the critical path)', () => {
  const t = mergeTrace([...rank(0, 100, 0), ...rank(1, 101, 40)], job);
  const lazy = t.sites.find((s) => s.line === 20)!;
  assert.equal(lazy.count, 1);
  assert.equal(lazy.occurrences[0]!.ranks, 2);
  assert.equal(lazy.firstCollective!.medianMs, 70, 'rank 1 paid 70 ms, rank 0 paid 30 ms: MAX');
  assert.equal(lazy.connect!.medianMs, 55);
  assert.equal(lazy.occurrences[0]!.memoryBytes, 200);
  const world = t.sites.find((s) => s.line === 10)!;
  assert.equal(world.creation!.medianMs, 50);
  assert.equal(world.teardown!.medianMs, 10);
});

test('merge: the first communicator of each process is cold, later ones are not', () => {
  const t = mergeTrace([...rank(0, 100, 0), ...rank(1, 101, 0)], job);
  assert.equal(t.sites.find((s) => s.line === 10)!.cold, true);
  assert.equal(t.sites.find((s) => s.line === 20)!.cold, false);
});

test('merge: a communicator joins the call whose window holds init on the same rank/process, not another rank', () => {
  // Rank 1 created its second communicator later than rank 0: each is joined in its own process.
  const a = rank(0, 100, 0);
  const b = rank(1, 101, 0).map((f) => (f.name.endsWith('.py.jsonl') ? f : { ...f, text: f.text.replace('"t":75000000', '"t":99000000') }));
  const t = mergeTrace([...a, ...b], job);
  assert.equal(t.sites.find((s) => s.line === 20)!.occurrences[0]!.ranks, 2);
  assert.equal(t.sites.length, 2, 'no unattributed site');
});

test('merge: malformed records are reported and skipped; a communicator without finalize makes the trace partial', () => {
  const files = rank(0, 100, 0);
  files[1] = { ...files[1]!, text: files[1]!.text.replace(/.*"k":"fin","i":1.*\n/, '') + '{"k":"init","i":' };
  const t = mergeTrace(files, { ...job, exitCode: 137, signal: null });
  assert.equal(t.status, 'partial');
  assert.ok(t.problems.some((p) => /malformed record skipped/.test(p)), t.problems.join('; '));
  assert.ok(t.missing.some((m) => /never reached finalize/.test(m)), t.missing.join('; '));
  assert.ok(t.missing.some((m) => /code 137/.test(m)));
  assert.ok(t.sites.find((s) => s.line === 10), 'what was recorded is kept');
});

test('merge: a creation inside two overlapping windows of other threads is reported ambiguous', () => {
  const files = rank(0, 100, 0);
  files[0] = { ...files[0]!, text: files[0]!.text + line({ k: 'call', api: 'new_group', t0: 1 * MS, t1: 49 * MS, tid: 7, site: site(40), chain: [], ok: true }) + '\n' };
  files[1] = { ...files[1]!, text: files[1]!.text.replace('"tid":1,"free":1000', '"tid":9,"free":1000') };
  const t = mergeTrace(files, job);
  assert.ok(t.sites.some((s) => s.notes.some((n) => /ambiguous join/.test(n))));
});

test('validateTraceFile: a merged trace passes; a wrong version or count is refused with the field named', () => {
  const t = JSON.parse(JSON.stringify(mergeTrace(rank(0, 100, 0), job)));
  assert.equal(validateTraceFile(t).kind, 'commcost-trace');
  assert.throws(() => validateTraceFile({ ...t, version: 99 }), /version/);
  const bad = JSON.parse(JSON.stringify(t));
  bad.sites[0].count = 5;
  assert.throws(() => validateTraceFile(bad), /sites\[0\]\.count/);
  assert.throws(() => validateTraceFile([]), /not a JSON object/);
});

test('merge: one destroy_process_group that tore down several communicators says so on each; a one-rank communicator says why it has no first collective', () => {
  const t = mergeTrace([...rank(0, 100, 0), ...rank(1, 101, 0)], job);
  for (const l of [10, 20]) {
    const s = t.sites.find((x) => x.line === l)!;
    assert.ok(
      s.notes.some((n) => /one destroy_process_group call at \/u\/job\.py:30 tore down 2 communicators of its process: its 10\.0 ms is the teardown of each, paid once/.test(n)),
      `${l}: ${s.notes.join(' | ')}`,
    );
  }
  // One rank: init and finalize only (no group or collective event), as NCCL's one-rank path gives.
  const one: RecordFile[] = [
    { name: 'h-7.py.jsonl', text: [line({ k: 'pyproc', pid: 7, rank: 0 }), line({ k: 'call', api: 'init_process_group', t0: 0, t1: 50 * MS, tid: 1, site: site(10), chain: [], group: 'WORLD', ok: true }), line({ k: 'call', api: 'destroy_process_group', t0: 60 * MS, t1: 70 * MS, tid: 1, site: site(30), chain: [], ok: true })].join('\n') + '\n' },
    { name: 'h-7.jsonl', text: [line({ k: 'proc', pid: 7, abi: 6, nccl: 22809, sim: true }), line({ k: 'init', i: 1, c: 'cc', nranks: 1, rank: 0, t: 20 * MS, tid: 1, free: 1000 }), line({ k: 'fin', i: 1, t: 65 * MS, free: 1000 })].join('\n') + '\n' },
  ];
  const s = mergeTrace(one, job).sites[0]!;
  assert.equal(s.firstCollective, null);
  assert.ok(s.notes.some((n) => /has 1 rank: the plugin reported no group or collective event on it/.test(n)), s.notes.join(' | '));
  assert.ok(!s.notes.some((n) => /tore down/.test(n)), 'one communicator, one teardown: nothing shared');
});

test('merge: a teardown call shared by several communicators is marked on each site (teardownShared), in the CLI table and the HTML report alike', () => {
  const t = mergeTrace([...rank(0, 100, 0), ...rank(1, 101, 0)], job);
  for (const l of [10, 20]) assert.equal(t.sites.find((x) => x.line === l)!.teardownShared, 2, `line ${l}`);
  // The HTML report's site table (webview/traceView.ts) and the CLI's use the same mark.
  assert.equal(sharedTeardownMark(t.sites[0]!), ' (one call for 2)');
  assert.match(formatTrace(t), /\(one call for 2\)/);
});
