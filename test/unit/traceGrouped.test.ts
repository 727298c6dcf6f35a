// Creations paid after their call returned (client/trace/grouped.ts, pure): a grouped call joined
// to NCCL's init through the ncclGroupEnd whose window holds it (by nranks/rank, NCCL's helper
// thread allowed), ncclCommInitAll's own group, a non-blocking call timed to its completing poll
// (or to nothing when none was seen), and the schema's `deferred` field.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deferredNote, nativeCreation } from '../../client/trace/grouped';
import type { NativeCall } from '../../client/trace/nativeCalls';
import { validateTraceFile } from '../../client/traceSchema';

const frame = (addr: string) => ({ obj: '/u/bench', addr, base: '0x0', sym: '', symOff: '0x0' });
const call = (api: string, t0: number, t1: number, more: Partial<NativeCall> = {}): NativeCall =>
  ({ api, t0, t1, tid: 1, r: 0, comm: '0x1', parent: '(nil)', site: frame(`0x${t0.toString(16)}`), ...more });
const where = (c: NativeCall) => (c.site ? `bench.c@${c.site.addr}` : null);
const comm = (tInit: number, rank: number, nranks = 2) => ({ tInit, tidInit: 99, nranks, rank });

test('a grouped init: the call of its rank in the group whose ncclGroupEnd holds the init; timed to that end; said so', () => {
  const r0 = call('ncclCommInitRank', 0, 1, { group: 1, nranks: 2, rank: 0, comm: '0xa' });
  const r1 = call('ncclCommInitRank', 2, 3, { group: 1, nranks: 2, rank: 1, comm: '0xb' });
  const end = call('ncclGroupEnd', 4, 100, { group: 1 });
  const calls = [r0, r1, end], taken = new Map<NativeCall, number>();
  const one = nativeCreation(calls, comm(50, 1), taken)!; // rank 1's init reached first, on NCCL's thread
  assert.equal(one.call, r1);
  assert.equal(one.t1, 100);
  assert.equal(nativeCreation(calls, comm(60, 0), taken)!.call, r0);
  assert.equal(nativeCreation(calls, comm(70, 0), taken), null, 'each call makes one communicator');
  const said = deferredNote(one, where)!;
  assert.deepEqual(said.deferred, { kind: 'group', api: 'ncclGroupEnd', at: 'bench.c@0x4' });
  assert.match(said.note, /^created in a group: paid at bench\.c@0x4 of ncclGroupEnd/);
});

test('ncclCommInitAll: one call holds every init of its devices, each said to be its own group', () => {
  const all = call('ncclCommInitAll', 0, 100, { nranks: 2 });
  const taken = new Map<NativeCall, number>();
  const a = nativeCreation([all], comm(40, 0), taken)!, b = nativeCreation([all], comm(60, 1), taken)!;
  assert.equal(a.call, all);
  assert.equal(b.call, all);
  assert.equal(b.t1, 100);
  assert.match(deferredNote(a, where)!.note, /ncclCommInitAll creates its 2 communicators in one group/);
  assert.equal(deferredNote(nativeCreation([call('ncclCommInitRank', 0, 100)], comm(50, 0), new Map())!, where), null, 'a blocking call pays in itself: no note');
});

test('non-blocking: timed to the first ncclCommGetAsyncError that saw it done; in a group, its end returned ncclInProgress; no poll, no figure', () => {
  const nb = call('ncclCommInitRankConfig', 0, 1, { r: 7, nranks: 1, rank: 0, comm: '0xc' });
  const done = call('ncclCommGetAsyncError', 80, 81, { comm: '0xc', async: 0 });
  const x = nativeCreation([nb, done, call('ncclCommGetAsyncError', 90, 91, { comm: '0xc', async: 0 })], comm(50, 0, 1), new Map())!;
  assert.equal(x.t1, 81);
  assert.match(deferredNote(x, where)!.note, /^non-blocking: the call returned ncclInProgress; completed at bench\.c@0x50 of ncclCommGetAsyncError/);
  const g = call('ncclCommInitRankConfig', 0, 1, { group: 3, nranks: 1, rank: 0, comm: '0xd' });
  const end = call('ncclGroupEnd', 2, 3, { group: 3, r: 7 });
  const y = nativeCreation([g, end, call('ncclCommGetAsyncError', 70, 71, { comm: '0xd', async: 0 })], comm(50, 0, 1), new Map())!;
  assert.equal(y.t1, 71);
  assert.equal(deferredNote(y, where)!.deferred.groupEnd, 'bench.c@0x2');
  const z = nativeCreation([nb], comm(50, 0, 1), new Map())!;
  assert.equal(z.t1, null);
  assert.match(deferredNote(z, where)!.note, /no ncclCommGetAsyncError call was seen reporting it done, so its creation has no figure/);
});

test('the trace file: `deferred` is optional; a wrong kind is refused', () => {
  const site = { key: 'k', source: 'native', api: 'ncclCommInitRank', file: null, line: null, func: null, chain: [], lazy: false, firstCollectiveSite: null, teardownSite: null,
    count: 0, creation: null, firstCollective: null, connect: null, teardown: null, memoryBytes: null, cold: false, nccl: null, occurrences: [], notes: [] };
  const file = (s: object) => ({ kind: 'commcost-trace', version: 2, command: [], startedAt: 'a', endedAt: 'b', exitCode: 0, signal: null, status: 'complete', missing: [],
    simulated: true, host: 'h', ncclVersion: null, processes: [], ncclLog: null, sites: [s], problems: [] });
  assert.equal(validateTraceFile(file(site)).sites[0]!.deferred, undefined);
  assert.equal(validateTraceFile(file({ ...site, deferred: { kind: 'group', api: 'ncclGroupEnd', at: 'b.c:3' } })).sites[0]!.deferred!.at, 'b.c:3');
  assert.throws(() => validateTraceFile(file({ ...site, deferred: { kind: 'later', api: null, at: null } })), /deferred needs kind/);
});
