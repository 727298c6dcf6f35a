// NCCL from Python through a binding, merged (client/trace/merge.ts, ffiCalls.ts; pure): a ctypes
// creation inside ncclGroupStart/End is timed from its call to the ncclGroupEnd that paid it and
// a non-blocking one to the poll that saw it done, as for C; a C extension's call holding init,
// connect and finalize is the site, its first use and its teardown; each site says how NCCL was
// reached, and the trace file refuses a binding it does not know.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeTrace, type RecordFile } from '../../client/trace/merge';
import { validateTraceFile } from '../../client/traceSchema';
import { siteApiText } from '../../protocol/trace';

const MS = 1e6;
const job = { command: ['python', 'job.py'], startedAt: 'a', endedAt: 'b', exitCode: 0, signal: null, host: 'h' };
const line = (o: object) => JSON.stringify(o);
const at = (l: number) => ({ file: '/u/job.py', line: l, func: 'main' });

function files(py: object[], plugin: object[]): RecordFile[] {
  return [{ name: 'h-100.py.jsonl', text: [{ k: 'pyproc', pid: 100, rank: 0 }, ...py].map(line).join('\n') + '\n' },
    { name: 'h-100.jsonl', text: [{ k: 'proc', pid: 100, abi: 6, nccl: 23007, sim: true }, ...plugin].map(line).join('\n') + '\n' }];
}

test('ctypes in a group: each creating line gets its communicator, timed to the ncclGroupEnd\'s return; the end is no site', () => {
  const py = [
    { k: 'call', api: 'ncclCommInitRank', via: 'ctypes', t0: 0, t1: 1 * MS, tid: 1, site: at(10), chain: [], ok: true, r: 0, comm: '0xa', group: 1, nranks: 1, rank: 0 },
    { k: 'call', api: 'ncclCommInitRank', via: 'ctypes', t0: 2 * MS, t1: 3 * MS, tid: 1, site: at(11), chain: [], ok: true, r: 0, comm: '0xb', group: 1, nranks: 1, rank: 0 },
    { k: 'call', api: 'ncclGroupEnd', via: 'ctypes', t0: 4 * MS, t1: 50 * MS, tid: 1, site: at(12), chain: [], ok: true, r: 0, group: 1, creates: 2 },
  ];
  const plugin = [
    { k: 'init', i: 1, c: 'aa', nranks: 1, rank: 0, t: 20 * MS, tid: 7 }, { k: 'init', i: 2, c: 'bb', nranks: 1, rank: 0, t: 30 * MS, tid: 8 },
    { k: 'fin', i: 1, t: 60 * MS }, { k: 'fin', i: 2, t: 61 * MS },
  ];
  const t = mergeTrace(files(py, plugin), job);
  assert.deepEqual(t.sites.map((s) => s.line).sort(), [10, 11], 'the two creating lines, not the ncclGroupEnd');
  for (const s of t.sites) {
    assert.equal(s.source, 'python');
    assert.equal(s.binding, 'ctypes');
    assert.deepEqual(s.deferred, { kind: 'group', api: 'ncclGroupEnd', at: '/u/job.py:12' });
    const call = py.find((c) => c.site.line === s.line)!;
    assert.equal(s.creation!.medianMs, (50 * MS - call.t0) / MS, 'from the call to the end that paid it');
    assert.equal(siteApiText(s), 'ncclCommInitRank [ctypes] (grouped)');
  }
});

test('cffi non-blocking: timed to the first ncclCommGetAsyncError that saw it done', () => {
  const py = [
    { k: 'call', api: 'ncclCommInitRankConfig', via: 'cffi', t0: 0, t1: 1 * MS, tid: 1, site: at(10), chain: [], ok: true, r: 7, comm: '0xc', nranks: 1, rank: 0 },
    { k: 'call', api: 'ncclCommGetAsyncError', via: 'cffi', t0: 40 * MS, t1: 41 * MS, tid: 1, site: at(15), chain: [], ok: true, r: 0, comm: '0xc', async: 0 },
  ];
  const t = mergeTrace(files(py, [{ k: 'init', i: 1, c: 'cc', nranks: 1, rank: 0, t: 0.5 * MS, tid: 9 }, { k: 'fin', i: 1, t: 60 * MS }]), job);
  assert.equal(t.sites.length, 1);
  const s = t.sites[0]!;
  assert.equal(s.line, 10, 'NCCL reached init inside the call, which returned ncclInProgress: still the call\'s line, completed later');
  assert.deepEqual(s.deferred, { kind: 'nonblocking', api: 'ncclCommGetAsyncError', at: '/u/job.py:15' });
  assert.equal(s.creation!.medianMs, 41);
  assert.equal(s.binding, 'cffi');
});

test('a C extension: the call holding init is the site, the one holding connect the first use, the one holding finalize the teardown', () => {
  const ext = (api: string, t0: number, t1: number, l: number) => ({ k: 'call', api, via: 'extension', t0: t0 * MS, t1: t1 * MS, tid: 1, site: at(l), chain: [{ file: '/sp/core.py', line: 9, func: '__init__' }], ok: true });
  const py = [ext('ncclcy.comm_init_rank', 0, 20, 10), ext('ncclcy.all_reduce', 25, 60, 11), ext('ncclcy.comm_destroy', 70, 75, 12)];
  const plugin = [{ k: 'init', i: 1, c: 'dd', nranks: 1, rank: 0, t: 10 * MS, tid: 1 }, { k: 'collStart', i: 1, t: 26 * MS, fn: 'AllReduce' },
    { k: 'connect', i: 1, t0: 27 * MS, t1: 55 * MS }, { k: 'fin', i: 1, t: 72 * MS }];
  const t = mergeTrace(files(py, plugin), job);
  assert.equal(t.sites.length, 1);
  const s = t.sites[0]!;
  assert.equal(s.api, 'ncclcy.comm_init_rank');
  assert.equal(s.binding, 'extension');
  assert.deepEqual(s.chain, ['/sp/core.py:9']);
  assert.equal(s.creation!.medianMs, 20);
  assert.equal(s.firstCollective!.medianMs, 35);
  assert.equal(s.firstUse, 'all_reduce', 'the op from the plugin, not the extension\'s function name');
  assert.equal(s.teardown!.medianMs, 5);
  assert.equal(s.teardownSite, '/u/job.py:12');
  assert.equal(siteApiText(s), 'ncclcy.comm_init_rank [C extension]');
});

test('the trace file: `binding` is optional; one it does not know is refused', () => {
  const t = mergeTrace(files([{ k: 'call', api: 'ncclCommInitRank', via: 'ctypes', t0: 0, t1: 20 * MS, tid: 1, site: at(10), chain: [], ok: true, r: 0, comm: '0xa' }],
    [{ k: 'init', i: 1, c: 'aa', nranks: 1, rank: 0, t: 10 * MS, tid: 1 }, { k: 'fin', i: 1, t: 30 * MS }]), job);
  assert.equal(validateTraceFile(JSON.parse(JSON.stringify(t))).sites[0]!.binding, 'ctypes');
  const bad = JSON.parse(JSON.stringify(t));
  bad.sites[0].binding = 'swig';
  assert.throws(() => validateTraceFile(bad), /binding.*must be ctypes, cffi or extension/);
  delete bad.sites[0].binding;
  assert.equal(validateTraceFile(bad).sites[0]!.binding, undefined);
});
