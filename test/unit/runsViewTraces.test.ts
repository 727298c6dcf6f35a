// The Runs view's "Traces" group (extension/runsViewTraces.ts, pure): newest first, command,
// host, NCCL, date, SIMULATED, partial, the trace the annotations ask first, the HTML report
// beside a trace, untrusted text made plain, which files may be deleted, and a trace compared
// with a run (the committed 2×H200 trace and run of docs/results).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import type { LoadedTrace } from '../../readings/traces';
import { compareTraceWithRun, comparisonMarkdown, deletableTraceFile, traceReportPath, tracesGroup } from '../../extension/runsViewTraces';
import type { RunFile } from '../../protocol/runFile';
import type { TraceFile } from '../../protocol/trace';

const dir = '/ws/.commcost/traces';

function loaded(name: string, time: number, over: Partial<TraceFile> = {}): LoadedTrace {
  const trace: TraceFile = {
    kind: 'commcost-trace', version: 2, command: ['torchrun', '--nproc-per-node=2', 'train.py'], startedAt: new Date(time).toISOString(), endedAt: new Date(time + 5000).toISOString(),
    exitCode: 0, signal: null, status: 'complete', missing: [], simulated: false, host: 'gpu1', ncclVersion: 22809,
    processes: [0, 1].map((rank) => ({ host: 'gpu1', pid: 100 + rank, rank, python: true, plugin: true, pluginAbi: 6, ncclVersion: 22809, communicators: 2 })),
    ncclLog: null, sites: [], problems: [], clock: { kind: 'monotonic', hosts: 1, note: 'one host: every time is its CLOCK_MONOTONIC' }, ...over,
  };
  return { key: `k-${name}`, path: join(dir, name), trace, time };
}

test('no trace: no group (the view keeps its welcome content when there is no run either)', () => {
  assert.equal(tracesGroup([], undefined, () => false), null);
});

test('newest first, with command, host, NCCL, date and the trace the annotations ask first', () => {
  const old = loaded('a.json', Date.UTC(2026, 10, 30, 9, 5));
  const recent = loaded('b.json', Date.UTC(2026, 11, 1, 10, 10));
  const g = tracesGroup([old, recent], old, () => false)!;
  assert.equal(g.label, 'Traces');
  assert.equal(g.description, '2 traces · 1 used for annotations');
  assert.deepEqual(g.traces.map((t) => t.path), [recent.path, old.path]);
  const [b, a] = g.traces as [NonNullable<typeof g.traces[0]>, NonNullable<typeof g.traces[0]>];
  assert.equal(b.label, 'train.py · 2026-12-01 10:10 UTC');
  assert.equal(b.description, 'gpu1 · NCCL 2.28.9 · 2 traced processes');
  assert.equal(b.contextValue, 'trace');
  assert.equal(b.chosen, false);
  assert.equal(a.chosen, true);
  assert.equal(a.contextValue, 'trace.chosen');
  assert.match(a.description, /used for annotations/);
  assert.match(b.tooltip, /^torchrun --nproc-per-node=2 train\.py\n/);
  assert.match(b.tooltip, /clock: one host/);
  assert.ok(b.tooltip.endsWith(recent.path), b.tooltip);
});

test('SIMULATED and partial are said; a report beside the trace is offered', () => {
  const sim = loaded('sim.json', 2, { simulated: true, status: 'partial', exitCode: 3, missing: ['the job exited with code 3'] });
  const g = tracesGroup([sim], undefined, (p) => p === join(dir, 'sim.html'))!;
  const n = g.traces[0]!;
  assert.equal(n.simulated, true);
  assert.equal(n.status, 'partial');
  assert.match(n.description, /· SIMULATED · partial$/);
  assert.match(n.tooltip, /^SIMULATED NCCL \(figures are not measurements\)/);
  assert.match(n.tooltip, /partial \(exit code 3\)/);
  assert.match(n.tooltip, /missing: the job exited with code 3/);
  assert.equal(n.html, join(dir, 'sim.html'));
  assert.equal(n.contextValue, 'trace.html');
  assert.equal(tracesGroup([sim], sim, () => true)!.traces[0]!.contextValue, 'trace.chosen.html');
  assert.equal(traceReportPath('/x/t.json'), '/x/t.html');
});

test('untrusted text from a trace file is made plain (control characters, bidirectional overrides)', () => {
  const evil = loaded('e.json', 3, { host: 'gpu\u202e1\nX', command: ['python', 'a\u0007.py'] });
  const n = tracesGroup([evil], undefined, () => false)!.traces[0]!;
  for (const text of [n.label, n.description, n.tooltip]) {
    assert.ok(!text.includes('\u202e') && !text.includes('\u0007'), text);
  }
  assert.doesNotMatch(n.description, /\n/);
});

test('only a .json file directly inside a trace folder may be deleted', () => {
  assert.deepEqual(deletableTraceFile(join(dir, 'a.json'), [dir]), { ok: true });
  for (const p of [join(dir, 'sub', 'a.json'), '/elsewhere/a.json', join(dir, 'a.html'), 'a.json', join(dir, '..', 'runs', 'r.json')]) {
    const r = deletableTraceFile(p, [dir]);
    assert.equal(r.ok, false, p);
  }
  assert.match((deletableTraceFile('/x/a.json', []) as { why: string }).why, /no workspace folder/);
});

const RESULTS = join(__dirname, '..', '..', 'docs', 'results', 'h200x2-2026-12-01');
const readJson = <T>(name: string): T => JSON.parse(readFileSync(join(RESULTS, name), 'utf8')) as T;

test("a trace compared with a run: each warm observed figure beside the run's of the same API, size and phase", () => {
  const trace = readJson<TraceFile>('trace-torch-tp-reshape-nccl2.28.9.json');
  const run = readJson<RunFile>('h200x2-nccl2.28.9-wheel.json');
  const c = compareTraceWithRun('t.json', trace, 'r.json', run);
  const lazy = trace.sites.find((s) => s.api === 'new_group' && !s.cold)!;
  const creation = c.rows.find((r) => r.phase === 'creation' && r.size === 2)!;
  assert.equal(creation.observedMs, lazy.creation!.medianMs, 'the trace figure: its site median');
  const init = run.experiments.find((e) => e.experiment === 'init')!.variants.find((v) => v.variant === 'default')!.steps;
  assert.equal(creation.runMs, init.find((x) => x.step === 'call')!.stats.median, "the run's init call median (the call's own experiment, not the pool's)");
  assert.equal(c.rows.find((r) => r.phase === 'first collective' && r.size === 2)!.runMs, init.find((x) => x.step === 'first')!.stats.median);
  assert.ok(c.unused.some((u) => /init_process_group .*cold/.test(u)), 'the cold first communicator is left out, with why');
  assert.equal(c.simulated, false);
  assert.ok(c.notes.some((n) => /"localhost" .* vm: check they are the same machine/.test(n)), c.notes.join('; '));
  const md = comparisonMarkdown(c, 't.json', 'r.json');
  assert.match(md, /\| creation \| 2 \| 35\.5 \(1\) \| ncclCommInitRankConfig TP2 \(init default call\) \| \d+(\.\d+)? \| \d\.\d\d× \|/);
  // A figure of a size the run did not measure is said, never taken from another size.
  const one = compareTraceWithRun('t.json', { ...trace, sites: trace.sites.map((s) => ({ ...s, occurrences: s.occurrences.map((o) => ({ ...o, commRanks: [3] })) })) }, 'r.json', run);
  assert.ok(one.rows.some((r) => r.size === 3), JSON.stringify(one.rows));
  assert.ok(one.rows.every((r) => r.size !== 3 || (r.runMs === null && /measured no .* making 3 ranks/.test(r.why ?? ''))), JSON.stringify(one.rows));
  // SIMULATED on either side is said first; untrusted text is escaped in the Markdown.
  const sim = compareTraceWithRun('t.json', { ...trace, simulated: true, host: 'a|b<script>' }, 'r.json', run);
  const simMd = comparisonMarkdown(sim, 'x|y.json', 'r.json');
  assert.match(simMd, /^# Trace vs run — SIMULATED/);
  assert.ok(!simMd.includes('a|b') && !simMd.includes('x|y') && !simMd.includes('<script>'), simMd);
});

test('a trace whose environment names its GPUs is named by them and their count, as a run is; a simulated one never by a GPU model', () => {
  const environment = { hosts: ['gpu1'], gpuModels: ['NVIDIA H200'], gpuCount: 8, processes: 2, driverVersion: null, cudaVersion: null, ncclVersions: ['2.28.9'], ncclPaths: [], ncclSource: 'job' as const, tracedFrom: 'gpu1' };
  const t = loaded('c.json', Date.UTC(2026, 11, 1, 10, 10), { environment });
  const ranks = t.trace.processes.length;
  const [node] = tracesGroup([t], undefined, () => false)!.traces;
  assert.equal(node!.description, `${ranks}× H200 · NCCL 2.28.9 · ${ranks} traced processes`);
  const sim = loaded('s.json', Date.UTC(2026, 11, 1, 10, 10), { environment: { ...environment, gpuModels: ['Simulated GPU'], ncclSource: 'simulated' }, simulated: true });
  const [simNode] = tracesGroup([sim], undefined, () => false)!.traces;
  assert.ok(!simNode!.description.includes('Simulated GPU'), simNode!.description);
  assert.match(simNode!.description, /^gpu1 · .*SIMULATED/);
});
