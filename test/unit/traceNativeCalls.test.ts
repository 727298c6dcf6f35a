// The C interposer's records in a trace: reading `ncall` lines, finding the creating and tearing
// down call by window and thread (a non-blocking creation by its ncclInProgress return), the merge
// naming a native site by its NCCL call and the caller's file:line, and LD_PRELOAD kept.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { interposerEnv } from '../../client/trace/jobEnv';
import { mergeTrace, type NativeFrame, type RecordFile } from '../../client/trace/merge';
import { nativeCallAt, nativeCallOf, unreturned, type NativeCall } from '../../client/trace/nativeCalls';

const MS = 1e6;
const job = { command: ['./app'], startedAt: 'a', endedAt: 'b', exitCode: 0, signal: null, host: 'h' };
const line = (o: object) => JSON.stringify(o);
const frame = (addr: string): NativeFrame => ({ obj: '/u/app', addr, base: '0x0', sym: '', symOff: '0x0' });
const call = (api: string, t0: number, t1: number, tid: number, r = 0): NativeCall => ({ api, t0, t1, tid, r, comm: '0x1', parent: '(nil)', site: null });

test('nativeCallOf: a complete record is read; a missing or reversed window is refused', () => {
  const f = (v: unknown) => (v ? frame('0x10') : null);
  assert.equal(nativeCallOf({ api: 'ncclCommInitRank', t0: 1, t1: 2, tid: 3, r: 0, site: {} }, f)!.site!.addr, '0x10');
  assert.equal(nativeCallOf({ api: 'ncclCommInitRank', t0: 1, tid: 3, r: 0 }, f), null);
  assert.equal(nativeCallOf({ api: 'ncclCommInitRank', t0: 5, t1: 2, r: 0 }, f), null);
  assert.equal(nativeCallOf({ t0: 1, t1: 2, r: 0 }, f), null);
});

test('nativeCallAt: the window holding the moment, same thread first; teardown calls only for teardown', () => {
  const calls = [call('ncclCommInitRank', 0, 100, 1), call('ncclCommInitRank', 10, 90, 2), call('ncclCommDestroy', 200, 210, 1)];
  assert.equal(nativeCallAt(calls, 50, 1, 'create'), calls[0]);
  assert.equal(nativeCallAt(calls, 50, null, 'create'), calls[1], 'no thread: the innermost');
  assert.equal(nativeCallAt(calls, 205, 1, 'create'), null);
  assert.equal(nativeCallAt(calls, 205, null, 'teardown'), calls[2]);
});

test('nativeCallAt: a non-blocking creation (ncclInProgress) is the one NCCL finished later; each is taken once', () => {
  const a = call('ncclCommInitRankConfig', 0, 1, 1, 7), b = call('ncclCommInitRankConfig', 2, 3, 1, 7);
  assert.equal(nativeCallAt([a, b], 50, 9, 'create'), b, 'the latest that started before');
  assert.equal(nativeCallAt([a, b], 50, 9, 'create', new Set([b])), a);
  assert.equal(nativeCallAt([call('ncclCommInitRank', 0, 1, 1, 0)], 50, 9, 'create'), null, 'a blocking call that returned is not stretched');
});

test('mergeTrace: interposed calls name a C site by its NCCL call and line, and time its creation and teardown', () => {
  const files: RecordFile[] = [0, 1].flatMap((r) => {
    const pid = 100 + r;
    return [
      { name: `h-${pid}.jsonl`, text: [
        line({ k: 'proc', pid, abi: 6, nccl: 23007, sim: false }),
        line({ k: 'init', i: 1, c: 'aa', nranks: 2, rank: r, t: 8 * MS, tid: pid, free: 1000, site: frame('0x999') }),
        line({ k: 'connect', i: 1, t0: 20 * MS, t1: 50 * MS, free: 900 }),
        line({ k: 'fin', i: 1, t: 95 * MS, free: 1000 }),
      ].join('\n') },
      { name: `h-${pid}.native.jsonl`, text: [
        line({ k: 'ncall', api: 'ncclCommInitRank', t0: 0, t1: (10 + r * 5) * MS, tid: pid, r: 0, comm: '0x1', parent: '(nil)', site: frame('0x100') }),
        line({ k: 'ncall', api: 'ncclCommDestroy', t0: 90 * MS, t1: 100 * MS, tid: pid, r: 0, comm: '0x1', parent: '(nil)', site: frame('0x200') }),
      ].join('\n') },
    ];
  });
  const lines: Record<string, number> = { '0x100': 72, '0x200': 78 };
  const t = mergeTrace(files, job, (f) => (lines[f.addr] ? { file: '/u/app.c', line: lines[f.addr]!, func: 'runRank' } : null));
  assert.equal(t.sites.length, 1);
  const s = t.sites[0]!;
  assert.equal(s.api, 'ncclCommInitRank');
  assert.equal(s.source, 'native');
  assert.equal(`${s.file}:${s.line}`, '/u/app.c:72');
  assert.equal(s.creation!.medianMs, 15, 'MAX over ranks of the calls themselves (10 and 15 ms)');
  assert.equal(s.teardown!.medianMs, 10);
  assert.equal(s.teardownSite, '/u/app.c:78');
  assert.equal(s.occurrences[0]!.ranks, 2);
  assert.deepEqual(t.problems, []);
});

test('interposerEnv: ours first, the user\'s LD_PRELOAD kept as it was; a path LD_PRELOAD cannot carry is refused', () => {
  assert.deepEqual(interposerEnv({}, '/opt/c/lib.so'), { LD_PRELOAD: '/opt/c/lib.so' });
  assert.deepEqual(interposerEnv({ LD_PRELOAD: 'libjemalloc.so libx.so' }, '/opt/c/lib.so'), { LD_PRELOAD: '/opt/c/lib.so:libjemalloc.so libx.so' });
  assert.throws(() => interposerEnv({}, '/opt/my dir/lib.so'), /space or a colon/);
});

test('unreturned: per thread and function, the starts beyond the finished calls, the latest ones', () => {
  const start = (api: string, t: number, tid: number) => ({ api, t, tid, site: null });
  const starts = [start('ncclCommInitRank', 0, 1), start('ncclCommSplit', 20, 1), start('ncclCommInitRank', 5, 2), start('ncclCommDestroy', 30, 1)];
  const done = [call('ncclCommInitRank', 1, 10, 1), call('ncclCommSplit', 21, 25, 1), call('ncclCommInitRank', 6, 9, 2)];
  assert.deepEqual(unreturned(starts, done), [start('ncclCommDestroy', 30, 1)]);
  assert.deepEqual(unreturned(starts.slice(0, 1), []), starts.slice(0, 1));
  assert.deepEqual(unreturned([], done), []);
});
