// NCCL's view in a trace: reading NCCL's Init START/COMPLETE and Init timings lines per process
// (formats of NCCL 2.30.7's src/init.cc), joining them to the plugin's communicators by commId or
// by order (split children), MAX over ranks and median over occurrences, the environment that asks
// for the log without touching the user's own settings, the v1 reader and the summary lines.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ncclViewLines } from '../../cli/trace';
import { ncclLogEnv } from '../../client/trace/jobEnv';
import { mergeTrace, type RecordFile } from '../../client/trace/merge';
import { combineViews, joinProcessViews, splitLogsByProcess } from '../../client/trace/ncclView';
import { validateTraceFile } from '../../client/traceSchema';
import { normalizeCommId, parseInitCreations } from '../../protocol/ncclInitLog';

const MS = 1e6;
const job = { command: ['./lifecycle'], startedAt: 'a', endedAt: 'b', exitCode: 0, signal: null, host: 'h' };
const line = (o: object) => JSON.stringify(o);

/** NCCL 2.30.7's lines for one process: an init (commId 0x00ab…) then a split child (no commId), as init.cc prints them. */
function log(pid: number, rank: number, totals: [number, number], kernels = 0.35): string {
  const p = `gpu7:${pid}:${pid + 5} [${rank}] NCCL INFO `;
  return [
    `${p}NCCL version 2.30.7+cuda12.9`,
    `${p}[Rank ${rank}] ncclCommInitRankConfig comm 0x5555aaaa rank ${rank} nranks 2 cudaDev ${rank} nvmlDev ${rank} busId 1b000 commId 0x00ab12cd - Init START`,
    `${p}ncclCommInitRankConfig comm 0x5555aaaa rank ${rank} nranks 2 cudaDev ${rank} nvmlDev ${rank} busId 1b000 commId 0x00ab12cd - Init COMPLETE`,
    `${p}Init timings - ncclCommInitRankConfig: rank ${rank} nranks 2 total ${totals[0].toFixed(2)} (kernels ${kernels.toFixed(2)}, alloc 0.00, bootstrap 0.01, allgathers 0.00, topo 0.01, graphs 0.00, connections 0.00, rest 0.00)`,
    `${p}ncclCommSplit comm 0x5555bbbb rank 0 nranks 1 cudaDev ${rank} nvmlDev ${rank} busId 1b000 parent 0x5555aaaa childCount 1 color ${rank} key ${rank}- Init START`,
    `${p}ncclCommSplit comm 0x5555bbbb rank 0 nranks 1 cudaDev ${rank} nvmlDev ${rank} busId 1b000 parent 0x5555aaaa childCount 1 color ${rank} key ${rank} - Init COMPLETE`,
    `${p}Init timings - ncclCommSplit: rank 0 nranks 1 total ${totals[1].toFixed(2)} (kernels 0.00, alloc 0.00, bootstrap 0.00, allgathers 0.00, topo 0.00, graphs 0.00, connections 0.00, rest ${totals[1].toFixed(2)})`,
  ].join('\n') + '\n';
}

/** The plugin's records of the same process: the init (commId as the plugin prints it, zero-padded) and the split child. */
function plugin(pid: number, rank: number): RecordFile {
  const site = (addr: string) => ({ obj: '/u/lifecycle', addr, base: '0x0', sym: 'runRank', symOff: '0x10' });
  const lines = [
    line({ k: 'proc', pid, abi: 6, nccl: 23007, sim: false }),
    line({ k: 'init', i: 1, c: '0000000000ab12cd', nranks: 2, rank, t: 10 * MS, tid: 1, free: 1000, site: site('0x100') }),
    line({ k: 'connect', i: 1, t0: 20 * MS, t1: 50 * MS, free: 900 }),
    line({ k: 'init', i: 2, c: '77', nranks: 1, rank: 0, t: 60 * MS, tid: 1, free: 900, site: site('0x200') }),
    line({ k: 'fin', i: 2, t: 80 * MS, free: 900 }),
    line({ k: 'fin', i: 1, t: 90 * MS, free: 1000 }),
  ];
  return { name: `gpu7.example.com-${pid}.jsonl`, text: lines.join('\n') + '\n' };
}

test('parseInitCreations: the 2.30 lines, an init with its commId and a split child with color and key, each with its timings', () => {
  const l = parseInitCreations(log(100, 0, [0.37, 0.02]));
  assert.equal(l.malformed, 0);
  assert.equal(l.unfinished, 0);
  assert.equal(l.creations.length, 2);
  const [init, child] = l.creations;
  assert.equal(init!.fn, 'ncclCommInitRankConfig');
  assert.equal(init!.commId, 'ab12cd');
  assert.ok(Math.abs(init!.parts!.total! - 370) < 1e-9 && Math.abs(init!.parts!.kernels! - 350) < 1e-9);
  assert.equal(child!.commId, null);
  assert.equal(child!.color, 0);
  assert.equal(child!.fn, 'ncclCommSplit');
  assert.ok(Math.abs(child!.parts!.total! - 20) < 1e-9);
});

test('parseInitCreations: a START without COMPLETE is unfinished; a timings line is joined on its own thread only', () => {
  const text = [
    'h:1:11 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 0 commId 0xaa - Init START',
    'h:1:12 [0] NCCL INFO ncclCommInitRank comm 0x2 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 0 commId 0xbb - Init START',
    'h:1:12 [0] NCCL INFO ncclCommInitRank comm 0x2 rank 0 nranks 1 cudaDev 0 nvmlDev 0 busId 0 commId 0xbb - Init COMPLETE',
    'h:1:11 [0] NCCL INFO Init timings - ncclCommInitRank: rank 0 nranks 2 total 0.50 (kernels 0.10)',
    'h:1:12 [0] NCCL INFO Init timings - ncclCommInitRank: rank 0 nranks 1 total 0.30 (kernels 0.20)',
    'h:1:12 [0] NCCL INFO Init timings - ncclCommInitRank: rank ? nranks 1 total ?',
  ].join('\n');
  const l = parseInitCreations(text);
  assert.equal(l.unfinished, 1);
  assert.equal(l.malformed, 1);
  const bb = l.creations.find((c) => c.commId === 'bb')!;
  assert.equal(bb.parts!.total, 300, 'thread 12 COMPLETE gets thread 12 timings, not thread 11');
  const orphan = l.creations.find((c) => c.commId === null)!;
  assert.equal(orphan.parts!.total, 500);
  assert.equal(orphan.complete, false);
});

test('normalizeCommId: padded, prefixed and bare hex agree; text that is not hex is refused', () => {
  assert.equal(normalizeCommId('0x00ab'), 'ab');
  assert.equal(normalizeCommId('0000000000ab'), 'ab');
  assert.equal(normalizeCommId('0'), '0');
  assert.equal(normalizeCommId('xyz'), null);
});

test('joinProcessViews: by commId for an init, by order (same rank and nranks) for a split child; leftovers are reported', () => {
  const comms = [
    { i: 2, commId: '77', rank: 0, nranks: 1, tInit: 60 },
    { i: 1, commId: '0000000000ab12cd', rank: 0, nranks: 2, tInit: 10 },
  ];
  const r = joinProcessViews(comms, log(100, 0, [0.37, 0.02]), 'pid 100');
  assert.equal(r.byComm.get(1)!.join, 'commId');
  assert.equal(r.byComm.get(1)!.parts.total, 370);
  assert.equal(r.byComm.get(2)!.join, 'order');
  assert.equal(r.byComm.get(2)!.fn, 'ncclCommSplit');
  assert.deepEqual(r.problems, []);
  const lone = joinProcessViews([comms[1]!], log(100, 0, [0.37, 0.02]), 'pid 100');
  assert.match(lone.problems.join(' '), /1 creation\(s\) in NCCL's log matched no communicator/);
});

test('joinProcessViews: NCCL\'s warnings in its log become problems (the first 3, then a count)', () => {
  const warn = (i: number) => `gpu7:100:105 [0] NCCL INFO x\ngpu7:100:105 [0] NCCL WARN Cuda failure ${i} 'out of memory'`;
  const r = joinProcessViews([], [1, 2, 3, 4].map(warn).join('\n'), 'pid 100');
  assert.deepEqual(r.problems.filter((p) => /warned/.test(p)), [1, 2, 3].map((i) => `pid 100: NCCL warned: Cuda failure ${i} 'out of memory'`));
  assert.ok(r.problems.includes('pid 100: 4 NCCL warnings in all (the first 3 above)'));
});

test('mergeTrace: a warning in the log of a process the plugin never saw (it failed before init) is still reported', () => {
  const t = mergeTrace([plugin(100, 0), { name: 'gpu7-300.nccl.log', text: 'gpu7:300:300 [0] NCCL WARN Bootstrap : no socket interface found\n' }], job);
  assert.ok(t.problems.includes('pid 300: NCCL warned: Bootstrap : no socket interface found'), t.problems.join('; '));
});

test('combineViews: MAX per part over ranks, median per part over occurrences; order taints the join', () => {
  const a = { fn: 'f', parts: { total: 10, kernels: 5 }, n: 1, join: 'commId' as const };
  const b = { fn: 'f', parts: { total: 30, kernels: 1 }, n: 1, join: 'order' as const };
  const c = { fn: 'f', parts: { total: 20 }, n: 1, join: 'commId' as const };
  assert.deepEqual(combineViews([a, b, null], 'max'), { fn: 'f', parts: { total: 30, kernels: 5 }, n: 2, join: 'order' });
  assert.deepEqual(combineViews([a, b, c], 'median')!.parts, { total: 20, kernels: 3 });
  assert.equal(combineViews([null], 'max'), null);
});

test('splitLogsByProcess: a forked child writing into its parent\'s log file is its own process', () => {
  const parent = log(100, 0, [0.37, 0.02]), child = log(101, 1, [0.52, 0.04]);
  const procs = splitLogsByProcess([{ name: 'gpu7-100.nccl.log', text: parent + child }, { name: 'other.txt', text: child }]);
  assert.deepEqual(procs.map((p) => p.pid).sort(), [100, 101]);
  assert.ok(procs.every((p) => p.host === 'gpu7'));
});

test('mergeTrace: each site carries NCCL\'s view (MAX over ranks), the log host cut at the first dot still joins', () => {
  const files: RecordFile[] = [plugin(100, 0), plugin(101, 1), { name: 'gpu7-100.nccl.log', text: log(100, 0, [0.37, 0.02]) + log(101, 1, [0.52, 0.04], 0.41) }];
  const t = mergeTrace(files, job);
  assert.deepEqual(t.ncclLog, { processes: 2, creations: 4, joined: 4 });
  const init = t.sites.find((s) => s.occurrences[0]!.commRanks[0] === 2)!;
  assert.equal(init.occurrences[0]!.nccl!.parts.total, 520, 'rank 1 printed 0.52 s: MAX');
  assert.equal(init.occurrences[0]!.nccl!.parts.kernels, 410);
  assert.equal(init.nccl!.n, 1);
  assert.equal(init.nccl!.join, 'commId');
  const child = t.sites.find((s) => s.occurrences[0]!.commRanks[0] === 1)!;
  assert.equal(child.nccl!.join, 'order');
  assert.equal(child.occurrences[0]!.nccl!.parts.total, 40);
  assert.equal(child.occurrences[0]!.perRank.length, 2, 'one span set per rank');
  const lines = ncclViewLines(t).join('\n');
  assert.match(lines, /NCCL's view/);
  assert.match(lines, /ncclCommInitRankConfig: total 520 \(kernels 410, bootstrap 10, topo 10\) ms/);
  assert.match(lines, /ncclCommSplit: total 40 \(rest 40\) ms \(joined by order/);
});

test('mergeTrace: without log files there is no view; a skipped log says why', () => {
  const t = mergeTrace([plugin(100, 0)], job);
  assert.equal(t.ncclLog, null);
  assert.ok(t.sites.every((s) => s.nccl === null));
  assert.match(mergeTrace([plugin(100, 0)], { ...job, ncclLogAsked: true }).ncclLog!.note!, /NCCL wrote no log file/);
  const skipped = mergeTrace([plugin(100, 0)], { ...job, ncclLogSkipped: 'NCCL_DEBUG=WARN was set by you' });
  assert.match(ncclViewLines(skipped).join('\n'), /NCCL's view: none — NCCL_DEBUG=WARN was set by you/);
});

test('ncclLogEnv: asks for INFO/INIT and a per-process file only when the user has no NCCL log settings', () => {
  const add = ncclLogEnv({}, '/tmp/r').add;
  assert.deepEqual(add, { NCCL_DEBUG: 'INFO', NCCL_DEBUG_SUBSYS: 'INIT', NCCL_DEBUG_FILE: '/tmp/r/%h-%p.nccl.log' });
  for (const user of [{ NCCL_DEBUG: 'WARN' }, { NCCL_DEBUG: 'INFO', NCCL_DEBUG_SUBSYS: 'NET' }, { NCCL_DEBUG_FILE: '/x/%p.log' }]) {
    const r = ncclLogEnv(user, '/tmp/r');
    assert.deepEqual(r.add, {}, `kept ${JSON.stringify(user)}`);
    assert.match(r.skipped!, /set by you/);
  }
  assert.match(ncclLogEnv({}, '/tmp/r', false).skipped!, /--no-nccl-log/);
});

test('validateTraceFile: a version 1 file is read with no view and no spans; a bad view part is refused by name', () => {
  const t = mergeTrace([plugin(100, 0), { name: 'gpu7-100.nccl.log', text: log(100, 0, [0.37, 0.02]) }], job);
  const v1 = JSON.parse(JSON.stringify({ ...t, version: 1 }));
  delete v1.ncclLog;
  for (const s of v1.sites) { delete s.nccl; for (const o of s.occurrences) { delete o.nccl; delete o.perRank; } }
  const up = validateTraceFile(v1);
  assert.equal(up.version, 2);
  assert.equal(up.ncclLog, null);
  assert.ok(up.sites.every((s) => s.nccl === null && s.occurrences.every((o) => o.nccl === null && o.perRank.length === 0)));
  const bad = JSON.parse(JSON.stringify(t));
  bad.sites[0].nccl.parts.total = 'x';
  assert.throws(() => validateTraceFile(bad), /sites\[0\]\.nccl\.parts\.total/);
  const badSpan = JSON.parse(JSON.stringify(t));
  badSpan.sites[0].occurrences[0].perRank[0].connect = [1];
  assert.throws(() => validateTraceFile(badSpan), /perRank\[0\]\.connect/);
  assert.throws(() => validateTraceFile({ ...t, version: 3 }), /versions 1 and 2/);
});
