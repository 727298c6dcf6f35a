// The trace's clock across hosts (client/trace/merge.ts `clockOf`): one host keeps its monotonic
// clock; records from several hosts put the timeline (perRank spans, `at`) on the first host's
// clock through each process's wall-clock stamp, while every phase (a difference on one host's
// clock) is unchanged; a host without wall-clock stamps is left unaligned and named.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeTrace, type RecordFile } from '../../client/trace/merge';
import { validateTraceFile } from '../../client/traceSchema';

const MS = 1e6;
const job = { command: ['srun', 'python', 'job.py'], startedAt: 'a', endedAt: 'b', exitCode: 0, signal: null, host: 'login' };
const line = (o: object) => JSON.stringify(o);
const site = (l: number) => ({ file: '/u/job.py', line: l, func: 'main' });
const WALL = 1.7e18; // ns since the epoch, about 2023

/**
 * One rank on `host` whose monotonic clock reads `mono0` when the wall clock reads WALL + `wall0`:
 * init_process_group(:10) from mono0 + 0 to + 50 ms, connect 120–130 ms, destroy(:30) 200–210 ms.
 */
function rank(host: string, r: number, pid: number, mono0: number, wall0: number | null): RecordFile[] {
  const t = (ms: number) => mono0 + ms * MS;
  const stamp = (o: Record<string, unknown>) => (wall0 === null ? o : { ...o, t: t(0), rt: WALL + wall0 });
  const py = [
    line(stamp({ k: 'pyproc', pid, rank: r, host })),
    line({ k: 'call', api: 'init_process_group', t0: t(0), t1: t(50), tid: 1, site: site(10), chain: [], group: 'WORLD', ok: true }),
    line({ k: 'call', api: 'all_reduce', t0: t(110), t1: t(140), tid: 1, site: site(11), chain: [], groupOf: 'WORLD', first: true, ok: true }),
    line({ k: 'call', api: 'destroy_process_group', t0: t(200), t1: t(210), tid: 1, site: site(30), chain: [], ok: true }),
  ];
  const plugin = [
    line(stamp({ k: 'proc', pid, abi: 6, nccl: 22809, sim: false })),
    line({ k: 'init', i: 1, c: 'aa', nranks: 2, rank: r, t: t(20), tid: 1 }),
    line({ k: 'connect', i: 1, t0: t(120), t1: t(130) }),
    line({ k: 'fin', i: 1, t: t(205) }),
  ];
  return [{ name: `${host}-${pid}.py.jsonl`, text: py.join('\n') + '\n' }, { name: `${host}-${pid}.jsonl`, text: plugin.join('\n') + '\n' }];
}

test('one host: its monotonic clock, no offset, said in the trace', () => {
  const t = mergeTrace([...rank('n1', 0, 100, 5e12, 0), ...rank('n1', 1, 101, 5e12, 0)], job);
  assert.equal(t.clock!.kind, 'monotonic');
  assert.equal(t.clock!.hosts, 1);
  assert.match(t.clock!.note, /one host/);
  assert.equal(t.sites[0]!.occurrences[0]!.perRank[1]!.init, 5e12 / MS + 20);
  validateTraceFile(JSON.parse(JSON.stringify(t)));
});

test('two hosts: the timeline is put on the first host\'s clock from the wall-clock stamps; phases are untouched', () => {
  // Both ranks start the same job at the same wall-clock instant (+3 ms on n2), on monotonic clocks 7 s apart.
  const t = mergeTrace([...rank('n1', 0, 100, 1e12, 0), ...rank('n2', 1, 200, 8e12, 3 * MS)], job);
  const c = t.clock!;
  assert.equal(c.kind, 'wall-offsets');
  assert.equal(c.hosts, 2);
  assert.equal(c.reference, 'n1');
  assert.equal(c.offsetsMs!.n1, 0);
  // n2's (wall − mono) is (WALL + 3 ms − 8e12) against n1's (WALL − 1e12): its times move by −7000 s + 3 ms.
  assert.ok(Math.abs(c.offsetsMs!.n2! - (-7e6 + 3)) < 1e-3, String(c.offsetsMs!.n2));
  assert.match(c.note, /uncertainty unknown beyond ±the clocks' sync/);
  const occ = t.sites.find((s) => s.line === 10)!.occurrences[0]!;
  const [r0, r1] = [occ.perRank.find((p) => p.host === 'n1')!, occ.perRank.find((p) => p.host === 'n2')!];
  assert.ok(Math.abs(r1.init - r0.init - 3) < 1e-3, `rank 1 reached init 3 ms after rank 0 on one axis: ${r0.init} ${r1.init}`);
  assert.ok(Math.abs(r1.creation![0] - r0.creation![0] - 3) < 1e-3);
  // Phases are differences on one host's clock: the same as without any offset.
  assert.equal(occ.creationMs, 50);
  assert.equal(occ.connectMs, 10);
  assert.equal(occ.teardownMs, 10);
  assert.equal(occ.at.creation, 1e12 / MS, 'at: the first rank, on the reference clock');
  validateTraceFile(JSON.parse(JSON.stringify(t)));
});

test('a host whose records carry no wall-clock stamp is left unaligned and named', () => {
  const t = mergeTrace([...rank('n1', 0, 100, 1e12, 0), ...rank('old', 1, 200, 8e12, null)], job);
  assert.equal(t.clock!.kind, 'wall-offsets');
  assert.equal(t.clock!.offsetsMs!.old, null);
  assert.match(t.clock!.note, /Not aligned .*: old\./);
  const r1 = t.sites[0]!.occurrences[0]!.perRank.find((p) => p.host === 'old')!;
  assert.equal(r1.init, 8e12 / MS + 20, 'left on its own clock');
});
