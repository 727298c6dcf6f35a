// The HTML report of a trace: the timeline model (one row per rank, a lane per site, phases in
// time order, NCCL's connect outside the first collective's window drawn as background, the cold
// communicator marked) and the self-contained page (CSP nonce, untrusted text never markup).
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { renderTraceReport } from '../../client/trace/htmlTrace';
import { mergeTrace, type RecordFile } from '../../client/trace/merge';
import { axisTicks, timelineModel } from '../../webview/traceTimeline';

const MS = 1e6;
const job = { command: ['python', 'job.py'], startedAt: 'a', endedAt: 'b', exitCode: 0, signal: null, host: 'h' };
const line = (o: object) => JSON.stringify(o);

/** One rank: init_process_group(:10) whose connect runs inside its first all_reduce(:11); new_group(:20) whose connect runs after its first collective returned (background). */
function rank(r: number, pid: number, file = '/u/job.py'): RecordFile[] {
  const site = (l: number) => ({ file, line: l, func: 'main' });
  return [
    { name: `h-${pid}.py.jsonl`, text: [
      line({ k: 'pyproc', pid, rank: r }),
      line({ k: 'call', api: 'init_process_group', t0: 0, t1: 50 * MS, tid: 1, site: site(10), chain: [], group: 'WORLD', ok: true }),
      line({ k: 'call', api: 'all_reduce', t0: 60 * MS, t1: 100 * MS, tid: 1, site: site(11), chain: [], groupOf: 'WORLD', first: true, ok: true }),
      line({ k: 'call', api: 'new_group', t0: 110 * MS, t1: 130 * MS, tid: 1, site: site(20), chain: [], group: 'pg:2', ok: true }),
      line({ k: 'call', api: 'all_reduce', t0: 140 * MS, t1: 150 * MS, tid: 1, site: site(21), chain: [], groupOf: 'pg:2', first: true, ok: true }),
      line({ k: 'call', api: 'destroy_process_group', t0: 200 * MS, t1: 210 * MS, tid: 1, site: site(30), chain: [], ok: true }),
    ].join('\n') },
    { name: `h-${pid}.jsonl`, text: [
      line({ k: 'proc', pid, abi: 6, nccl: 22907, sim: true }),
      line({ k: 'init', i: 1, c: 'aa', nranks: 2, rank: r, t: 20 * MS, tid: 1, free: 1000 }),
      line({ k: 'connect', i: 1, t0: 65 * MS, t1: 95 * MS, free: 900 }),
      line({ k: 'init', i: 2, c: 'bb', nranks: 2, rank: r, t: 120 * MS, tid: 1, free: 900 }),
      line({ k: 'connect', i: 2, t0: 145 * MS, t1: 170 * MS, free: 800 }),
      line({ k: 'fin', i: 2, t: 205 * MS, free: 900 }),
      line({ k: 'fin', i: 1, t: 208 * MS, free: 1000 }),
    ].join('\n') },
  ];
}

test('timelineModel: a row per rank in rank order, a lane per site, phases in time order from 0 ms', () => {
  const m = timelineModel(mergeTrace([...rank(1, 101), ...rank(0, 100)], job));
  assert.deepEqual(m.rows.map((r) => r.label), ['rank 0 (pid 100)', 'rank 1 (pid 101)']);
  const lanes = m.rows[0]!.lanes;
  assert.deepEqual(lanes.map((l) => l.label), ['init_process_group :10', 'new_group :20']);
  const world = lanes[0]!.bars;
  assert.deepEqual(world.map((b) => b.phase), ['creation', 'firstCollective', 'connect', 'teardown']);
  assert.deepEqual(world.map((b) => [b.start, b.end]), [[0, 50], [60, 100], [65, 95], [200, 210]]);
  assert.equal(world[0]!.cold, true, 'the first communicator of the process is cold');
  assert.equal(lanes[1]!.bars[0]!.cold, false);
  assert.equal(m.spanMs, 210);
  assert.equal(m.note, null);
});

test('timelineModel: a connect inside its first collective is not background; one that outlives it is', () => {
  const m = timelineModel(mergeTrace(rank(0, 100), job));
  const [world, pg] = m.rows[0]!.lanes;
  assert.equal(world!.bars.find((b) => b.phase === 'connect')!.background, false);
  assert.equal(pg!.bars.find((b) => b.phase === 'connect')!.background, true, 'connect 145–170 ms outlives the first all_reduce 140–150 ms');
  assert.equal(pg!.bars.find((b) => b.phase === 'init'), undefined, 'init at 120 ms is inside new_group 110–130 ms: no background marker');
});

test('timelineModel: a trace without per-rank spans (version 1) draws nothing and says why', () => {
  const t = mergeTrace(rank(0, 100), job);
  for (const s of t.sites) for (const o of s.occurrences) o.perRank = [];
  const m = timelineModel(t);
  assert.equal(m.rows.length, 0);
  assert.match(m.note!, /no per-rank spans/);
});

test('axisTicks: round steps from 0 to the span', () => {
  assert.deepEqual(axisTicks(210), [0, 50, 100, 150, 200]);
  assert.deepEqual(axisTicks(8), [0, 1, 2, 3, 4, 5, 6, 7, 8]);
  assert.deepEqual(axisTicks(0), [0]);
});

test('renderTraceReport: one self-contained page, script under a nonce, untrusted text never markup', () => {
  const evil = '/u/</script><img src=x onerror=alert(1)>.py';
  const t = mergeTrace([...rank(0, 100, evil), ...rank(1, 101, evil)], { ...job, command: ['python', '<b>job</b>.py'] });
  const dir = mkdtempSync(join(tmpdir(), 'commcost-html-'));
  const bundle = join(dir, 'traceReport.js');
  writeFileSync(bundle, 'console.log("</script>")');
  const html = renderTraceReport(t, { bundlePath: bundle });
  const nonce = /script-src 'nonce-([^']+)'/.exec(html)![1]!;
  assert.ok(html.includes(`<script nonce="${nonce}">`));
  assert.ok(!html.includes('<img'), 'no element from the trace');
  assert.ok(!html.includes('<b>job'), 'the command is escaped');
  assert.equal(html.match(/<\/script>/g)!.length, 2, 'only the data and the bundle script elements end');
  assert.ok(html.includes('&#60;/script&#62;&#60;img'), 'the no-script table holds the file name as text');
  assert.match(html, /SIMULATED/);
  const data = /<script type="application\/json" id="commcost-trace">([^<]*)<\/script>/.exec(html)![1]!;
  assert.equal(JSON.parse(data).sites[0].file, evil, 'the embedded JSON gives the text back unchanged');
  assert.throws(() => renderTraceReport(t, { bundlePath: join(dir, 'missing.js') }), /traceReport\.js was not found|missing\.js/);
});

test('renderTraceReport: the built bundle is found next to the source tree when built', { skip: !existsSync(join(__dirname, '..', '..', 'dist', 'traceReport.js')) && 'dist/traceReport.js not built (node scripts/build.mjs)' }, () => {
  const html = renderTraceReport(mergeTrace(rank(0, 100), job), { base: join(__dirname, '..', '..', 'cli') });
  assert.match(html, /commcost-trace/);
});

test('timelineModel: NCCL reaching init after a non-blocking creation returned is a background marker; an init inside its creating call is not', () => {
  const f = { obj: '/u/app', addr: '0x10', base: '0x0', sym: '', symOff: '0x0' };
  const files: RecordFile[] = [
    { name: 'h-7.jsonl', text: [
      line({ k: 'proc', pid: 7, abi: 6, nccl: 23007, sim: false }),
      line({ k: 'init', i: 1, c: 'aa', nranks: 1, rank: 0, t: 30 * MS, tid: 99, free: 1000, site: f }),
      line({ k: 'fin', i: 1, t: 95 * MS, free: 1000 }),
    ].join('\n') },
    { name: 'h-7.native.jsonl', text: line({ k: 'ncall', api: 'ncclCommInitRankConfig', t0: 0, t1: 1 * MS, tid: 7, r: 7, comm: '0x1', parent: '(nil)', site: f }) },
  ];
  const bars = timelineModel(mergeTrace(files, { ...job, command: ['./app'] })).rows[0]!.lanes[0]!.bars;
  const init = bars.find((b) => b.phase === 'init');
  assert.ok(init && init.background && init.start === 30, JSON.stringify(bars));
  const lazy = mergeTrace([...rank(0, 100)], job);
  assert.ok(timelineModel(lazy).rows[0]!.lanes.every((l) => l.bars.every((b) => b.phase !== 'init')));
});
