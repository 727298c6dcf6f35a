// Traces as annotations (readings/traces.ts, tracesText.ts; client/traceStore.ts): which document a
// trace's site names (absolute, workspace-relative, trailing path from another host), which lines
// it observed (also after the file moved), which trace answers, and the words in each regime —
// the committed 2×H200 trace of examples/trace/torch_tp_reshape.py (a cold 2-rank creation, warm
// ones, a split into 1-rank communicators whose first collective is null), a simulated copy, a
// 1-rank job and a lazy group over several occurrences.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CallSiteFinder, nodeModulesGrammars, ParsedDocument } from '../../sites/callSites';
import { formatMs } from '../../readings/annotationText';
import { answeringTraces, bestShift, traceAnchors, type DocSite, type LoadedTrace } from '../../readings/traces';
import { fileMatchScore, observeDocument, parseTrace, TraceStore } from '../../client/traceStore';
import {
  jobName,
  ncclVersionText,
  observedLabel,
  observedLensTitle,
  observedMarkdown,
  observedSentence,
  ranksText,
  traceLabel,
} from '../../readings/tracesText';
import type { TraceFile } from '../../protocol/trace';

const ROOT = join(__dirname, '..', '..');
const TRACE_PATH = join(ROOT, 'docs', 'results', 'h200x2-2026-12-01', 'trace-torch-tp-reshape-nccl2.28.9.json');
const TRACE_TEXT = readFileSync(TRACE_PATH, 'utf8');
const EXAMPLE = readFileSync(join(ROOT, 'examples', 'trace', 'torch_tp_reshape.py'), 'utf8');
const raw = (): TraceFile => JSON.parse(TRACE_TEXT) as TraceFile;
const loaded = (t: TraceFile, key = 't0', path = `/traces/${key}.json`): LoadedTrace => parseTrace(JSON.stringify(t), path, key, 0);

let finder: CallSiteFinder;
let exampleSites: DocSite[];
before(async () => {
  finder = await CallSiteFinder.load(nodeModulesGrammars(ROOT));
  exampleSites = sitesOf(EXAMPLE);
});
after(() => finder?.dispose());

function sitesOf(text: string): DocSite[] {
  const d = new ParsedDocument(finder, 'python');
  try {
    return d.reparse(text).sites.map((s) => ({ line: s.range.start.line, api: s.api, role: s.role }));
  } finally {
    d.dispose();
  }
}
/** 0-based line of the first line of `text` containing `needle`. */
const lineOf = (text: string, needle: string, from = 0): number => {
  const i = text.split('\n').findIndex((l, n) => n >= from && l.includes(needle));
  assert.ok(i >= 0, `"${needle}" in the text`);
  return i;
};

test('fileMatchScore: same absolute path, relative to a workspace folder, trailing path from another host; never a mere same name', () => {
  const doc = '/srv/me/ws/examples/trace/torch_tp_reshape.py';
  assert.equal(fileMatchScore(doc, doc, ['/srv/me/ws']), Infinity);
  assert.equal(fileMatchScore('examples/trace/torch_tp_reshape.py', doc, ['/elsewhere', '/srv/me/ws']), Infinity);
  // A trace made on another machine (its checkout at /build/main): its whole workspace-relative path matches.
  assert.equal(fileMatchScore('/build/main/examples/trace/torch_tp_reshape.py', doc, ['/srv/me/ws']), 3);
  // Only the file name in common: another file of the same name.
  assert.equal(fileMatchScore('/build/main/other/torch_tp_reshape.py', doc, ['/srv/me/ws']), 0);
  // Workspace opened on the file's folder: the name is its whole relative path.
  assert.equal(fileMatchScore('/build/main/examples/trace/torch_tp_reshape.py', doc, ['/srv/me/ws/examples/trace']), 3);
  // Outside every folder: its folder and name at least.
  assert.equal(fileMatchScore('/x/trace/torch_tp_reshape.py', '/tmp/trace/torch_tp_reshape.py', []), 2);
  assert.equal(fileMatchScore('/x/y/torch_tp_reshape.py', '/tmp/trace/torch_tp_reshape.py', []), 0);
  assert.equal(fileMatchScore('C:\\job\\examples\\trace\\torch_tp_reshape.py', doc, ['/srv/me/ws']), 3);
});

test('the committed trace lands on the example as it is now: every executed call site, lines moved by the docstring, figures from the file', () => {
  const t = loaded(raw());
  const ws = '/tmp/ws';
  const lines = observeDocument(`${ws}/examples/trace/torch_tp_reshape.py`, [ws], exampleSites, [t]);
  const init = lineOf(EXAMPLE, 'dist.init_process_group(');
  const tp2 = lineOf(EXAMPLE, 'tp2 = dist.new_group(');
  const split = lineOf(EXAMPLE, 'dist.split_group(');
  const fallback = lineOf(EXAMPLE, 'dist.new_group([rank])');
  const destroyTp1 = lineOf(EXAMPLE, 'dist.destroy_process_group(tp1)');
  const back = lineOf(EXAMPLE, 'back = dist.new_group(');
  const destroyAll = lineOf(EXAMPLE, 'dist.destroy_process_group()');
  assert.deepEqual([...lines.keys()].sort((a, b) => a - b), [init, tp2, split, destroyTp1, back, destroyAll]);
  assert.ok(!lines.has(fallback), 'the torch < 2.6 branch did not run: not observed');
  const site = (line: number) => lines.get(line)!.sites[0]!;
  assert.equal(site(init).api, 'init_process_group');
  assert.equal(site(tp2).api, 'new_group');
  assert.equal(site(back).api, 'new_group');
  assert.notEqual(site(tp2), site(back), 'the two new_group lines are two sites of the trace');
  assert.equal(lines.get(destroyAll)!.role, 'teardown');
  assert.deepEqual(lines.get(destroyAll)!.sites.map((s) => s.api).sort(), ['init_process_group', 'new_group', 'new_group']);
  assert.deepEqual(lines.get(destroyTp1)!.sites.map((s) => s.api), ['split_group']);
  // The shift is what the trace's own line says: the trace recorded init_process_group at its line.
  const traced = raw().sites.find((s) => s.api === 'init_process_group')!.line!;
  assert.equal(lines.get(init)!.shift, init + 1 - traced);
  // Figures are the file's.
  const sentence = observedSentence(lines.get(tp2)!);
  const s = raw().sites.find((x) => x.line === site(tp2).line)!;
  assert.ok(sentence.includes(`first collective on this group paid ${formatMs(s.firstCollective!.medianMs)}`), sentence);
  assert.ok(sentence.includes(`created in ${formatMs(s.creation!.medianMs)}`), sentence);
});

test('at the traced path itself the lines match with no shift; another trace of the same job does not override the first that answers', () => {
  // The example as it was when traced: every call site two lines up (the docstring was two lines shorter).
  const old = EXAMPLE.split('\n');
  old.splice(10, 2);
  const oldText = old.join('\n');
  const t1 = loaded(raw(), 't1');
  const other = raw();
  other.sites = other.sites.map((s) => ({ ...s, creation: s.creation && { ...s.creation, medianMs: 1 } }));
  other.startedAt = '2026-12-02T00:00:00.000Z';
  const t2 = loaded(other, 't2');
  const lines = observeDocument('/srv/checkout/examples/trace/torch_tp_reshape.py', ['/srv/checkout'], sitesOf(oldText), [t1, t2]);
  const init = lineOf(oldText, 'dist.init_process_group(');
  assert.equal(lines.get(init)!.shift, 0);
  assert.equal(lines.get(init)!.trace, t1, 'the first trace in answering order answers');
  const flipped = observeDocument('/srv/checkout/examples/trace/torch_tp_reshape.py', ['/srv/checkout'], sitesOf(oldText), [t2, t1]);
  assert.equal(flipped.get(init)!.trace, t2);
});

test('bestShift: a file edited beyond recognition is not matched (no guess per line)', () => {
  const anchors = [...traceAnchors(raw()).values()].flat();
  // Only one new_group left in the document, far away: less than half of the observed lines land.
  assert.equal(bestShift(anchors, [{ line: 300, api: 'new_group', role: 'create' }]), undefined);
  assert.equal(observeDocument('/w/examples/trace/torch_tp_reshape.py', ['/w'], [{ line: 300, api: 'new_group', role: 'create' }], [loaded(raw())]).size, 0);
  // A different API at the traced line does not land (new_group's line holding a split_group).
  const t = raw();
  const ng = t.sites.find((s) => s.api === 'new_group')!;
  const lines = observeDocument('/w/a.py', ['/w'], [{ line: ng.line! - 1, api: 'split_group', role: 'create' }], [loaded({ ...t, sites: [{ ...ng, file: '/job/a.py', teardownSite: null }] })]);
  assert.equal(lines.size, 0);
  // A teardown lands only on a teardown call: its traced line holding a creation is not it.
  const td = { ...ng, file: '/job/b.py', line: 1, teardownSite: '/job/b.py:5' };
  const docSites: DocSite[] = [
    { line: 0, api: 'new_group', role: 'create' },
    { line: 4, api: 'new_group', role: 'create' },
  ];
  const got = observeDocument('/w/b.py', ['/w'], docSites, [loaded({ ...t, sites: [td] })]);
  assert.deepEqual([...got.keys()], [0]);
  assert.equal(got.get(0)!.role, 'create');
});

test('answeringTraces: the chosen trace first, then measured traces newest first; a simulated trace only once chosen, then simulated only', () => {
  const real = loaded(raw(), 'r');
  const newer = loaded({ ...raw(), startedAt: '2026-12-03T00:00:00.000Z' }, 'n');
  const sim = loaded({ ...raw(), simulated: true, startedAt: '2026-12-04T00:00:00.000Z' }, 's');
  const all = [sim, newer, real];
  assert.deepEqual(answeringTraces(all, undefined).map((t) => t.key), ['n', 'r']);
  assert.deepEqual(answeringTraces(all, real).map((t) => t.key), ['r', 'n']);
  assert.deepEqual(answeringTraces(all, sim).map((t) => t.key), ['s']);
});

test('words: n ranks and cold (the first communicator), warm, the trace named with job, host, NCCL and date', () => {
  const t = loaded(raw(), 't0', TRACE_PATH);
  const lines = observeDocument('/ws/examples/trace/torch_tp_reshape.py', ['/ws'], exampleSites, [t]);
  const init = lines.get(lineOf(EXAMPLE, 'dist.init_process_group('))!;
  const s = init.sites[0]!;
  assert.equal(s.cold, true);
  assert.equal(ranksText(s), '2 ranks');
  const sentence = observedSentence(init);
  assert.match(sentence, /^observed in torch_tp_reshape\.py, 2 ranks: created in .* \(cold\), first collective on this group paid .* \(connect .*\), teardown .* \(n=1\)$/);
  assert.ok(sentence.includes(formatMs(s.creation!.medianMs)) && sentence.includes(formatMs(s.connect!.medianMs)) && sentence.includes(formatMs(s.teardown!.medianMs)), sentence);
  assert.doesNotMatch(sentence, /SIMULATED/);
  assert.equal(traceLabel(t), 'torch_tp_reshape.py · vm · NCCL 2.28.9 · 2026-12-01 10:10 UTC');
  const lens = observedLensTitle(init);
  assert.ok(lens.startsWith(`⏱ observed ${formatMs(s.creation!.medianMs)} call · ${formatMs(s.firstCollective!.medianMs)} first collective (cold) — torch_tp_reshape.py · 2 ranks · vm · NCCL 2.28.9`), lens);
  const md = observedMarkdown(init, 'command:commcost.openTrace?%5B%22t0%22%5D');
  assert.match(md, /cold\\: the first communicator of its process/);
  assert.match(md, /memory per GPU\\: \d+ MiB/);
  assert.ok(md.includes('[Open trace](command:commcost.openTrace?%5B%22t0%22%5D)'), md);
  assert.match(md, /Traced at line \d+: the file has changed since the trace \(lines moved by \+\d+\)/);
  assert.doesNotMatch(md, /NCCL's view/, 'a v1 trace has no NCCL view: none shown');
  // A v2 trace with NCCL's Init timings for the creation: shown beside commcost's figures.
  const v2 = raw();
  v2.sites.find((x) => x.api === 'init_process_group')!.nccl = { fn: 'ncclCommInitRankConfig', parts: { total: 370, kernels: 350, bootstrap: 10 }, n: 2, join: 'commId' };
  const withView = observeDocument('/ws/examples/trace/torch_tp_reshape.py', ['/ws'], exampleSites, [loaded(v2)]).get(lineOf(EXAMPLE, 'dist.init_process_group('))!;
  assert.ok(observedMarkdown(withView).includes("NCCL's view (its Init timings of ncclCommInitRankConfig, 10 ms steps): total 370 ms — kernels 350 ms, bootstrap 10.0 ms"), observedMarkdown(withView));
  const warm = lines.get(lineOf(EXAMPLE, 'tp2 = dist.new_group('))!;
  assert.doesNotMatch(observedSentence(warm), /cold/);
  assert.doesNotMatch(observedMarkdown(warm), /first communicator of its process/);
  assert.equal(ncclVersionText(23007), '2.30.7');
  assert.equal(ncclVersionText(null), '?');
});

test('words: a null phase is "not measured" with the trace\'s note; 1-rank communicators on 2 processes', () => {
  const t = raw();
  const split = t.sites.find((s) => s.api === 'split_group')!;
  split.notes = ['communicator 10bd of pid 16401 ran no collective (no connect recorded)'];
  const lines = observeDocument('/ws/examples/trace/torch_tp_reshape.py', ['/ws'], exampleSites, [loaded(t)]);
  const o = lines.get(lineOf(EXAMPLE, 'dist.split_group('))!;
  assert.equal(ranksText(o.sites[0]!), '1-rank communicators on 2 processes');
  assert.match(observedSentence(o), /first collective not measured/);
  assert.match(observedLabel(o), /first collective not measured/);
  const md = observedMarkdown(o);
  assert.match(md, /\| first collective \| (&nbsp;)*not measured \|/);
  assert.match(md, /not measured\\: communicator 10bd of pid 16401 ran no collective \\\(no connect recorded\\\)/);
  // Without a note the hover still says why it may be missing, never a number.
  split.notes = [];
  const bare = observedMarkdown(observeDocument('/ws/examples/trace/torch_tp_reshape.py', ['/ws'], exampleSites, [loaded(t)]).get(o.sites[0]!.line! - 1 + o.shift)!);
  assert.match(bare, /a phase not measured\\: the trace recorded no such event/);
});

test('words: a creation paid after its call (a group\'s ncclGroupEnd, a non-blocking completion) says so in the sentence, the row and the note', () => {
  const t = raw();
  const split = t.sites.find((s) => s.api === 'split_group')!;
  split.deferred = { kind: 'group', api: 'ncclGroupEnd', at: 'bench.c:42' };
  split.notes = ['created in a group: paid at bench.c:42 of ncclGroupEnd'];
  const at = () => observeDocument('/ws/examples/trace/torch_tp_reshape.py', ['/ws'], exampleSites, [loaded(t)]).get(lineOf(EXAMPLE, 'dist.split_group('))!;
  assert.match(observedSentence(at()), /created in a group \(paid at its ncclGroupEnd\) in /);
  assert.match(observedLabel(at()), /observed [^·]+ creation · /);
  const md = observedMarkdown(at());
  assert.match(md, /creation \(the call → its ncclGroupEnd\)/);
  assert.match(md, /created in a group\\: paid at bench\\\.c\\:42 of ncclGroupEnd/);
  split.deferred = { kind: 'nonblocking', api: 'ncclCommGetAsyncError', at: 'bench.c:50' };
  assert.match(observedSentence(at()), /created non-blocking \(to its completion\) in /);
  assert.match(observedMarkdown(at()), /creation \(the call → completion\)/);
});

test('words: a simulated trace is SIMULATED in every surface; a 1-rank job says 1 rank; several occurrences give p90 and n', () => {
  const t = raw();
  t.simulated = true;
  const one = t.sites.find((s) => s.api === 'init_process_group')!;
  one.occurrences = one.occurrences.map((o) => ({ ...o, ranks: 1, commRanks: [1] }));
  one.count = 3;
  one.occurrences = [0, 1, 2].map((i) => ({ ...one.occurrences[0]!, index: i }));
  one.firstCollective = { n: 3, medianMs: 142, p90Ms: 150, maxMs: 151 };
  const lt = loaded(t);
  const lines = observeDocument('/ws/examples/trace/torch_tp_reshape.py', ['/ws'], exampleSites, [lt]);
  const o = lines.get(lineOf(EXAMPLE, 'dist.init_process_group('))!;
  assert.equal(ranksText(o.sites[0]!), '1 rank');
  const sentence = observedSentence(o);
  assert.ok(sentence.startsWith('SIMULATED · observed in torch_tp_reshape.py, 1 rank: '), sentence);
  assert.ok(sentence.includes('first collective on this group paid 142 ms, p90 150 ms'), sentence);
  assert.ok(sentence.endsWith('(n=3)'), sentence);
  assert.ok(observedLensTitle(o).startsWith('SIMULATED · ⏱ observed'), observedLensTitle(o));
  assert.ok(observedLabel(o).startsWith('SIMULATED observed'), observedLabel(o));
  assert.ok(observedMarkdown(o).startsWith("**SIMULATED** — traced on commcost's simulated NCCL"), observedMarkdown(o));
  assert.ok(traceLabel(lt).startsWith('SIMULATED · '), traceLabel(lt));
});

test('words: a teardown line names the groups it tore down at their lines; a lazy group\'s first collective says it creates and connects', () => {
  const lines = observeDocument('/ws/examples/trace/torch_tp_reshape.py', ['/ws'], exampleSites, [loaded(raw())]);
  const down = lines.get(lineOf(EXAMPLE, 'dist.destroy_process_group()'))!;
  const s = observedSentence(down);
  const lineNo = (needle: string) => lineOf(EXAMPLE, needle) + 1;
  assert.ok(s.includes(`init_process_group at line ${lineNo('dist.init_process_group(')}`) && s.includes(`new_group at line ${lineNo('back = dist.new_group(')}`), s);
  assert.match(s, /this teardown of 3 groups \(.*\) paid /);
  // A lazy group: its creation site and the line of its first collective.
  const t = raw();
  const ng = t.sites.find((x) => x.api === 'new_group')!;
  const text = [
    'import torch.distributed as dist',
    'tp = None',
    '',
    'def setup():',
    '    global tp',
    '    dist.init_process_group("nccl")',
    '    tp = dist.new_group([0, 1])',
    '',
    'def train_step(x):',
    '    dist.all_reduce(x, group=tp)',
    '',
  ].join('\n');
  const lazy = { ...ng, file: '/job/lazy.py', line: 7, lazy: true, firstCollectiveSite: '/job/lazy.py:10', teardownSite: null };
  const docSites = sitesOf(text);
  const got = observeDocument('/w/lazy.py', ['/w'], docSites, [loaded({ ...t, sites: [lazy] })]);
  const first = got.get(9);
  assert.ok(first, `the first collective line is observed: ${JSON.stringify(docSites)}`);
  assert.equal(first.role, 'firstCollective');
  assert.match(observedSentence(first), /this first collective creates and connects the group made at line 7: paid /);
  assert.match(observedSentence(got.get(6)!), /created lazily at its first collective in /);
});

test('untrusted text is escaped in the hover: host, command, notes and API cannot inject Markdown, links or HTML', () => {
  const t = raw();
  t.host = 'vm](command:evil)<img src=x>';
  t.command = ['python3', '`rm -rf`', 'x.py'];
  const s = t.sites.find((x) => x.api === 'split_group')!;
  s.notes = ['[click](command:workbench.action.terminal.new) <script>'];
  const o = observeDocument('/ws/examples/trace/torch_tp_reshape.py', ['/ws'], exampleSites, [loaded(t)]).get(lineOf(EXAMPLE, 'dist.split_group('))!;
  const md = observedMarkdown(o);
  assert.doesNotMatch(md, /\]\(command:evil\)|\[click\]\(command:|<img|<script/);
  assert.doesNotMatch(md, /``/);
  assert.equal(jobName(t), 'x.py');
});

test('TraceStore: reads .commcost/traces, newest first; a malformed or foreign file is reported once and skipped', async () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'commcost-traces-')), '.commcost', 'traces');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'a.json'), TRACE_TEXT);
  writeFileSync(join(dir, 'b.json'), JSON.stringify({ ...raw(), startedAt: '2026-12-05T00:00:00.000Z' }));
  writeFileSync(join(dir, 'bad.json'), '{"kind":"commcost-run"}');
  writeFileSync(join(dir, 'broken.json'), '{');
  const reports: string[] = [];
  const store = new TraceStore((l) => reports.push(l));
  await store.reload([dir, join(dir, 'missing')]);
  assert.deepEqual(store.traces.map((t) => t.path.split('/').pop()), ['b.json', 'a.json']);
  assert.equal(reports.length, 2, reports.join('\n'));
  assert.ok(reports.some((r) => r.includes('bad.json') && /kind/.test(r)), reports.join('\n'));
  await store.reload([dir]);
  assert.equal(reports.length, 2, 'reported once');
  store.choose(join(dir, 'a.json'));
  assert.equal(store.answering[0]?.path, join(dir, 'a.json'));
  const key = store.chosen!.key;
  await store.reload([dir]);
  assert.equal(store.chosen?.key, key, 'keys survive a reload');
});

test('a trace whose environment names its GPUs is labelled by them and their count, as a run is; without one, by its host', () => {
  const t = raw();
  const ranks = t.processes.filter((p) => p.plugin).length;
  assert.match(traceLabel(loaded(t)), new RegExp(`^torch_tp_reshape\\.py · ${t.host} · NCCL`));
  t.environment = { hosts: [t.host], gpuModels: ['NVIDIA H200'], gpuCount: 8, processes: ranks, driverVersion: null, cudaVersion: null, ncclVersions: ['2.28.9'], ncclPaths: [], ncclSource: 'job', tracedFrom: t.host };
  assert.match(traceLabel(loaded(t)), new RegExp(`^torch_tp_reshape\\.py · ${ranks}× H200 · NCCL 2\\.28\\.9 · `));
  // A simulated trace: the simulator's device is no GPU model.
  const sim = { ...t, simulated: true, environment: { ...t.environment, gpuModels: ['Simulated GPU'], ncclSource: 'simulated' as const } };
  assert.doesNotMatch(traceLabel(loaded(sim)), /Simulated GPU/);
});
