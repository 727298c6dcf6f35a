// What the selection rule shows: the split hover headlines the child that pays the lazy connect,
// readings state the measured share in every regime (1 rank, one-rank child, ≈ 0, large), every
// annotation and the status bar name their run, a finished simulated run never becomes active by
// itself, global-storage runs record the window they came from, and the model picks the lazy or
// eager c10d variant from the call site.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { AnnotationModel } from '../../extension/annotations/annotationModel';
import {
  CELL_GAP,
  codeLensTitle,
  decorationLabel,
  formatMs,
  hoverLinks,
  hoverMarkdown,
  percent,
  reading,
  runLabel,
  statusText,
} from '../../readings/annotationText';
import { resolveAnnotation } from '../../readings/figures';
import { ProfileStore, withOrigin, workspaceIdOf } from '../../client/profileStore';
import { type StaleRules } from '../../readings/profiles';
import { runController, type RunDeps } from '../../extension/runController';
import type { RunFile } from '../../protocol/runFile';
import { loadFinder, RESULTS, rawRun, runFolder, scanText, storeOf } from '../support/annotationFixtures';

const wheel = rawRun('2.28.9-wheel');
const c10d = JSON.parse(readFileSync(join(RESULTS, 'h200x2-torch2.11-nccl2.28.9-c10d.json'), 'utf8')) as RunFile;
const RULES: StaleRules = { now: Date.parse('2026-12-01T00:00:00Z'), staleAfterDays: 30, expectedNcclVersion: '' };
const unescape = (md: string) => md.replace(/\\(.)/g, '$1');
/** A run's name (readings/runName.ts) from its own stamp: "2× H200 · NCCL 2.28.9 · 2026-11-29 19:48 UTC". */
const label = (r: RunFile) => `${r.ranks}× ${r.stamp?.gpus[0]?.name.replace(/^NVIDIA /, '')} · NCCL ${r.stamp?.ncclVersion} · ${r.stamp?.startedAt.slice(0, 16).replace('T', ' ')} UTC`;
const stats = (run: RunFile, experiment: string, variant: string, step: string) => {
  const s = run.experiments
    .find((e) => e.experiment === experiment)
    ?.variants.find((v) => v.variant === variant)
    ?.steps.find((x) => x.step === step);
  assert.ok(s, `${experiment}/${variant}/${step}`);
  return s.stats;
};

test('the ncclCommSplit hover on the 2×H200 run headlines whole/splitShare=0 (pays ~140 of ~185 ms in the first collective), never a one-rank split', async () => {
  const { store } = await storeOf(runFolder([wheel]));
  const a = resolveAnnotation('ncclCommSplit', store.active, store.profiles, RULES);
  const site = (await scanText('cpp', 'void f(){ ncclCommSplit(p, rank % 2, rank, &c, NULL); }')).sites[0];
  assert.ok(site);
  const md = unescape(hoverMarkdown(a, site, hoverLinks(a)));
  const total = stats(wheel, 'split', 'whole/splitShare=0', 'total');
  const first = stats(wheel, 'split', 'whole/splitShare=0', 'first');
  assert.match(md.split('\n')[0] ?? '', /^\*\*commcost\*\* · `ncclCommSplit` → `split` · whole\/splitShare=0$/);
  assert.ok(md.includes(`| total (split to first collective) | ${CELL_GAP}${formatMs(total.median)} |`), md);
  assert.ok(
    md.includes(`${Math.round((100 * first.median) / total.median)}% of this split is paid in its first collective`),
    md,
  );
  assert.match(md, /The headline is the 2-rank child; a one-rank child has nothing to connect\./);
  for (const v of ['halves/splitShare=0', 'halves/splitShare=1'])
    assert.match(md, new RegExp(`${v.replace('/', '\\/')}: [^·]*\\(one-rank communicator: nothing to connect\\)`));
  assert.doesNotMatch(md, /100%|is the call itself/);
  assert.ok(codeLensTitle(a).startsWith(`⏱ ${formatMs(total.median)} to first collective`), codeLensTitle(a));
});

/** The wheel run with whole/splitShare=0's first collective set to `firstMs` (total = call + first), and `ranks`. */
function splitRun(firstMs: number, ranks = 2): RunFile {
  const r: RunFile = structuredClone(wheel);
  r.ranks = ranks;
  const v = r.experiments.find((e) => e.experiment === 'split')?.variants.find((x) => x.variant === 'whole/splitShare=0');
  const call = v?.steps.find((s) => s.step === 'call');
  const first = v?.steps.find((s) => s.step === 'first');
  const total = v?.steps.find((s) => s.step === 'total');
  assert.ok(call && first && total);
  first.stats = { ...first.stats, median: firstMs };
  total.stats = { ...total.stats, median: call.stats.median + firstMs };
  return r;
}

// Readings, data-driven: [case, run, API, expected reading (first clause), must not match].
const readingCases: [string, RunFile, 'ncclCommSplit' | 'ncclCommInitRank', RegExp, RegExp][] = [
  [
    'first collective ≈ 0 (0.2 of 46.9 ms)',
    splitRun(0.2),
    'ncclCommSplit',
    /^nearly all of this split is the call itself: the first collective adds 0\.200 ms \(0\.4% of the call \+ first collective, 46\.7 \+ 0\.200 ms\)$/,
    /100%/,
  ],
  [
    'first collective 30%',
    splitRun(20),
    'ncclCommSplit',
    /^the first collective is 30% of this split \(of the call \+ first collective, 46\.7 \+ 20\.0 ms\)$/,
    /call itself|lazy connect/,
  ],
  [
    'first collective 75% (the real figures)',
    wheel,
    'ncclCommSplit',
    /^75% of this split is paid in its first collective \(of the call \+ first collective, 46\.7 \+ 140 ms\)$/,
    /call itself/,
  ],
  [
    'a run of 1 rank: init makes a one-rank communicator',
    { ...wheel, ranks: 1 },
    'ncclCommInitRank',
    // A one-rank communicator whose first collective is not ≈ 0: never "nothing to connect" beside an 82% share.
    /^one-rank communicator: no peer to connect to, yet its first collective takes 144 ms \(82% of the call \+ first collective, 31\.9 \+ 144 ms\); this run has no communicator of more ranks for this call$/,
    /lazy connect in|nothing to connect/,
  ],
];
for (const [name, run, api, expected, never] of readingCases) {
  test(`reading: ${name}`, async () => {
    const { store } = await storeOf(runFolder([run]));
    const r = reading(resolveAnnotation(api, store.active, store.profiles, RULES))?.split('; a fresh init')[0] ?? '';
    assert.match(r, expected);
    assert.doesNotMatch(r, never);
  });
}

test('percent: a share by the verdict\'s rule (docs/METHOD.md "Percentages"): whole percent, never rounded to 0% or 100% unless it is', () => {
  const cases: [number, number, string][] = [
    [140.475, 186.247, '75%'],
    [4.5, 100, '5%'],
    [0.015, 47.734, '0.03%'],
    [99.97, 100, '99.9%'],
    [99.9999, 100, '99.9%'],
    [100.0001, 100, '100.0%'],
    [197.8, 186.6, '106%'],
    [0, 5, '0%'],
    [5, 5, '100%'],
  ];
  for (const [part, whole, expected] of cases) assert.equal(percent(part, whole), expected, `${part} of ${whole}`);
});

test('a one-rank child says so in the CodeLens, label and hover (c10d shrink_group at 2 ranks)', async () => {
  const { store } = await storeOf(runFolder([c10d]));
  const a = resolveAnnotation('shrink_group', store.active, store.profiles, RULES);
  assert.equal(a.measured?.main.childRanks, 1);
  assert.match(codeLensTitle(a), /· one-rank communicator — /);
  assert.match(decorationLabel(a) ?? '', /· one-rank$/);
  assert.match(reading(a) ?? '', /^one-rank communicator: nothing to connect/);
});

test('every annotation names its run; the after-line label adds it when the run is not the active one', async () => {
  const { store } = await storeOf(runFolder([wheel, c10d]));
  assert.equal(store.active?.run.id, c10d.id);
  const split = resolveAnnotation('ncclCommSplit', store.active, store.profiles, RULES);
  const init = resolveAnnotation('init_process_group', store.active, store.profiles, RULES);
  assert.ok(codeLensTitle(split).endsWith(`— ${label(wheel)}`), codeLensTitle(split));
  assert.ok(codeLensTitle(init).endsWith(`— ${label(c10d)}`), codeLensTitle(init));
  assert.ok(decorationLabel(split)?.endsWith(` — ${label(wheel)}`), decorationLabel(split));
  assert.doesNotMatch(decorationLabel(init) ?? '', / — /);
  const site = (await scanText('cpp', 'void f(){ ncclCommSplit(p, 0, 0, &c, NULL); }')).sites[0];
  assert.ok(site && store.active);
  assert.ok(
    unescape(hoverMarkdown(split, site, hoverLinks(split))).includes(
      `*From ${label(wheel)}, not the active run (${label(c10d)}): the active run has no split.*`,
    ),
  );
  // The status bar: the active run's label; its tooltip says which call another run answers, and why.
  const t = statusText(store.active, false, [], [{ api: 'ncclCommSplit', source: split.measured!.source, why: split.why! }], {
    simulated: 1,
    foreign: 0,
  });
  assert.equal(t.text, `$(pulse) ${label(c10d)}`);
  const lines = t.tooltip.split('\n');
  assert.ok(lines.includes(`ncclCommSplit answered by ${label(wheel)} — the active run has no split`), t.tooltip);
  assert.ok(lines.includes('1 simulated run not used: choose one to see its figures (marked SIMULATED)'), t.tooltip);
  // Simulated: its ranks, never the GPU model of the stamp it copied.
  assert.equal(runLabel({ ...store.active, run: { ...c10d, simulated: true } }), label(c10d).replace(/^\d+× H200/, `SIMULATED · ${c10d.ranks} ranks`));
});

test('a finished simulated run does not become the active profile; a finished measured run does', async () => {
  const dir = runFolder([wheel]);
  const { store } = await storeOf(dir);
  const sim: RunFile = {
    ...wheel,
    id: '20261130-120000-sim',
    simulated: true,
    stamp: wheel.stamp && { ...wheel.stamp, simulated: true, startedAt: '2026-11-30T12:00:00.000Z' },
  };
  writeFileSync(join(dir, `${sim.id}.json`), JSON.stringify(sim));
  await store.reload([{ dir, source: 'workspace' }]);
  assert.equal(store.active?.run.id, wheel.id, 'a newer simulated run is not active by itself');
  assert.equal(store.runSaved(join(dir, `${sim.id}.json`)), 'simulated');
  assert.equal(store.active?.run.id, wheel.id);
  // The user chose the older run; a new measured run takes over.
  const newer: RunFile = {
    ...wheel,
    id: '20261130-130000-localhost',
    stamp: wheel.stamp && { ...wheel.stamp, startedAt: '2026-11-30T13:00:00.000Z' },
  };
  assert.ok(store.setActivePath(join(dir, `${wheel.id}.json`)));
  writeFileSync(join(dir, `${newer.id}.json`), JSON.stringify(newer));
  await store.reload([{ dir, source: 'workspace' }]);
  assert.equal(store.active?.run.id, wheel.id, 'the choice survives a reload');
  assert.equal(store.runSaved(join(dir, `${newer.id}.json`)), 'active');
  assert.equal(store.active?.run.id, newer.id);
  assert.equal(store.chosen, undefined);
});

test('global storage: a run records the window it was saved from; other windows leave it out', async () => {
  assert.equal(workspaceIdOf(undefined, []), null);
  assert.equal(workspaceIdOf(undefined, ['file:///a', 'file:///b']), 'file:///a');
  assert.equal(workspaceIdOf('file:///w.code-workspace', ['file:///a']), 'file:///w.code-workspace');
  const origins = withOrigin({ 'old.json': null, bad: 3 }, '/g/runs/20261130-002228-localhost.json', 'file:///a');
  assert.deepEqual(origins, { 'old.json': null, '20261130-002228-localhost.json': 'file:///a' });
  const dir = runFolder([c10d]);
  const store = new ProfileStore(() => undefined);
  await store.reload([{ dir, source: 'global', origins }], 'file:///b');
  assert.deepEqual([store.profiles.length, store.profiles[0]?.foreign, store.active], [1, true, undefined]);
  await store.reload([{ dir, source: 'global', origins }], 'file:///a');
  assert.equal(store.active?.run.id, c10d.id);
  assert.equal(store.profiles[0]?.origin, 'file:///a');
});

test('runController: onSaved gets the saved path before the final message; its failure is only logged', async () => {
  const events: string[] = [];
  const run: RunFile = { ...wheel, status: 'complete' };
  const deps = (onSaved: RunDeps['onSaved']): RunDeps => ({
    runMeasurement: async () => run,
    saveRun: async (dir, r) => `${dir}/${r.id}.json`,
    resultsDir: '/g/runs',
    progress: { report: () => undefined },
    panel: { update: () => undefined },
    log: { info: () => undefined, error: (l) => events.push(`error ${l}`) },
    signal: new AbortController().signal,
    confirmHostKey: async () => true,
    showInfo: async (m) => {
      events.push(`info ${m}`);
      return undefined;
    },
    showError: async () => undefined,
    openResults: () => undefined,
    showLog: () => undefined,
    ...(onSaved ? { onSaved } : {}),
  });
  const out = await runController(
    { target: 'localhost', options: run.options },
    deps((p) => void events.push(`saved ${p}`)),
  );
  assert.equal(out.kind, 'finished');
  assert.deepEqual(
    events.map((e) => e.split(' ')[0]),
    ['saved', 'info'],
  );
  assert.equal(events[0], `saved /g/runs/${run.id}.json`);
  events.length = 0;
  const out2 = await runController(
    { target: 'localhost', options: run.options },
    deps(async () => Promise.reject(new Error('disk full'))),
  );
  assert.equal(out2.kind, 'finished');
  assert.match(events[0] ?? '', /^error after saving \/g\/runs\/.*: disk full$/);
});

test('the model picks the lazy or eager c10d variant from the call site, and lists calls answered elsewhere', async () => {
  const { store } = await storeOf(runFolder([wheel, c10d]));
  const model = new AnnotationModel(await loadFinder(), store, () => RULES);
  try {
    const lazy =
      'import torch.distributed as dist\ndist.init_process_group("nccl")\ng = dist.new_group([0, 1])\ndist.destroy_process_group()\n';
    const eager = lazy.replace('"nccl")', '"nccl", device_id=0)');
    const variants = (uri: string, text: string) => {
      const s = model.open(uri, 'python', text, 1);
      return s.scan.sites.map((site) => [site.api, model.annotateSite(uri, site).measured?.main.variant]);
    };
    assert.deepEqual(variants('file:///lazy.py', lazy), [
      ['init_process_group', 'init/lazy'],
      ['new_group', 'new_group/lazy-default'],
      ['destroy_process_group', 'init/lazy'],
    ]);
    assert.deepEqual(variants('file:///eager.py', eager), [
      ['init_process_group', 'init/eager'],
      ['new_group', 'new_group/eager-default'],
      ['destroy_process_group', 'init/eager'],
    ]);
    const site = model.state('file:///lazy.py')?.scan.sites[0];
    assert.ok(site);
    const a = model.annotateSite('file:///lazy.py', site);
    assert.match(
      unescape(hoverMarkdown(a, site, hoverLinks(a))),
      /The headline assumes a lazy init: this call passes no device_id; the eager variant is listed below\./,
    );
    assert.deepEqual(model.answeredElsewhere(), []);
    model.open('file:///comm.cc', 'cpp', 'void f(){ ncclCommSplit(p, 0, 0, &c, NULL); }', 1);
    assert.deepEqual(
      model.answeredElsewhere().map((e) => [e.api, e.source.run.id, e.why]),
      [['ncclCommSplit', wheel.id, 'the active run has no split']],
    );
  } finally {
    model.dispose();
  }
});

const cases = JSON.parse(readFileSync(join(RESULTS, 'h200x2-nccl2.28.9-wheel.cases.json'), 'utf8')) as RunFile; // 2026-11-30 00:09, NCCL 2.28.9

test('memory per GPU only where it belongs to the headline: never on a teardown hover, its other variants or an abort', async () => {
  const { store } = await storeOf(runFolder([wheel, c10d]));
  const py = await scanText('python', 'import torch.distributed as dist\ndist.destroy_process_group()\n');
  const cpp = await scanText('cpp', 'void f(){ ncclCommAbort(c); ncclCommDestroy(c); }');
  for (const [api, site] of [
    ['destroy_process_group', py.sites.find((x) => x.api === 'destroy_process_group')],
    ['ncclCommAbort', cpp.sites.find((x) => x.api === 'ncclCommAbort')],
    ['ncclCommDestroy', cpp.sites.find((x) => x.api === 'ncclCommDestroy')],
  ] as const) {
    assert.ok(site, api);
    const a = resolveAnnotation(api, store.active, store.profiles, RULES);
    assert.ok(a.measured, api);
    const md = unescape(hoverMarkdown(a, site, hoverLinks(a)));
    assert.doesNotMatch(md, /Memory per GPU|\/GPU/, `${api}: ${md}`);
    assert.doesNotMatch(codeLensTitle(a), /\/GPU/);
  }
  // destroy_process_group lists init/eager as another variant, without its creation memory.
  const d = resolveAnnotation('destroy_process_group', store.active, store.profiles, RULES);
  const dmd = unescape(hoverMarkdown(d, py.sites.find((x) => x.api === 'destroy_process_group')!, hoverLinks(d)));
  assert.match(dmd, /Other variants \([^)]*\): init\/eager: [^,\n]*\(p90 [^)]*\)(\n|$)/, dmd);
  // A creation still shows its memory.
  const init = resolveAnnotation('init_process_group', store.active, store.profiles, RULES);
  const ipg = (await scanText('python', 'import torch.distributed as dist\ndist.init_process_group("nccl")\n')).sites[0];
  assert.ok(ipg);
  assert.match(unescape(hoverMarkdown(init, ipg, hoverLinks(init))), /Memory per GPU: \d/);
});

test('two runs on the same GPUs and NCCL are told apart by their start time (UTC), in hovers, labels and the status bar', async () => {
  const { store } = await storeOf(runFolder([wheel, c10d, cases]));
  const pc = store.profiles.find((p) => p.run.id === c10d.id);
  const pk = store.profiles.find((p) => p.run.id === cases.id);
  const pw = store.profiles.find((p) => p.run.id === wheel.id);
  assert.ok(pc && pk && pw);
  const lc = runLabel(pc, store.profiles);
  const lk = runLabel(pk, store.profiles);
  assert.equal(lc, label(c10d));
  assert.equal(lk, label(cases));
  assert.notEqual(lc, lk);
  assert.equal(runLabel(pw, store.profiles), label(wheel));
  // Same minute: the experiments tell them apart.
  const twin = { ...pk, key: 'twin', time: pc.time };
  assert.match(runLabel(twin, [pc, twin]), / UTC · split-share, connect-mode/);
  assert.match(runLabel(pc, [pc, twin]), / UTC · c10d$/);
  // Same GPUs, NCCL, minute and experiments, another target: the target tells them apart, and only then.
  const elsewhere = { ...pc, key: 'elsewhere', run: { ...pc.run, id: `${pc.run.id}-gpu-box`, host: 'gpu-box' } };
  assert.equal(runLabel(elsewhere, [pc, elsewhere]), `${label(c10d)} · on gpu-box`);
  assert.equal(runLabel(pc, [pc, elsewhere]), `${label(c10d)} · on ${c10d.host}`);
  // Alike in everything but the id: the id.
  const copy = { ...pc, key: 'copy', run: { ...pc.run, id: `${pc.run.id}-2` } };
  assert.equal(runLabel(copy, [pc, copy]), `${label(c10d)} · ${c10d.id}-2`);
  // The hover's "From …, not the active run (…)" and the status bar name two different runs.
  const moved = { ...wheel, id: '20261130-013000-localhost', stamp: wheel.stamp && { ...wheel.stamp, startedAt: '2026-11-30T01:30:00.000Z' } };
  const { store: s2 } = await storeOf(runFolder([moved, c10d]));
  assert.equal(s2.active?.run.id, moved.id);
  const init = resolveAnnotation('init_process_group', s2.active, s2.profiles, RULES);
  assert.equal(init.measured?.source.run.id, c10d.id);
  const ipg = (await scanText('python', 'import torch.distributed as dist\ndist.init_process_group("nccl")\n')).sites[0];
  assert.ok(ipg);
  const md = unescape(hoverMarkdown(init, ipg, hoverLinks(init)));
  assert.ok(md.includes(`*From ${label(c10d)}, not the active run (${label(moved)}):`), md);
  assert.ok(codeLensTitle(init).endsWith(`— ${label(c10d)}`), codeLensTitle(init));
  const t = statusText(s2.active, false, [], [], { simulated: 0, foreign: 0 }, s2.profiles);
  assert.equal(t.text, `$(pulse) ${label(moved)}`);
  assert.match(t.text, / 01:30 UTC$/);
});

test('the active run is the newest measured run that answers call sites, not a newer run of field cases only', async () => {
  const { store } = await storeOf(runFolder([wheel, cases]));
  assert.ok(cases.stamp && wheel.stamp && cases.stamp.startedAt > wheel.stamp.startedAt, 'the field-case run is the newer');
  assert.equal(store.active?.run.id, wheel.id);
  const t = statusText(store.active, false, [], [], { simulated: 0, foreign: 0 }, store.profiles);
  assert.equal(t.text, `$(pulse) ${label(wheel)}`);
  assert.match(t.tooltip, /\(the newest measured run with figures for annotated calls\)/);
  // Only field-case runs: the newest of them is active (something is named).
  const { store: only } = await storeOf(runFolder([cases]));
  assert.equal(only.active?.run.id, cases.id);
});

test('the hover table spaces the median and p90 columns apart', async () => {
  const { store } = await storeOf(runFolder([wheel]));
  const a = resolveAnnotation('ncclCommInitRank', store.active, store.profiles, RULES);
  const site = (await scanText('cpp', 'void f(){ ncclCommInitRank(&c, 2, id, 0); }')).sites[0];
  assert.ok(site);
  const lines = hoverMarkdown(a, site, hoverLinks(a)).split('\n');
  assert.ok(lines.includes('| step | &nbsp;&nbsp;&nbsp;&nbsp;median | &nbsp;&nbsp;&nbsp;&nbsp;p90 |'), lines.join('\n'));
  const rows = lines.filter((l) => /^\| (call|first collective|total) /.test(l));
  assert.equal(rows.length, 3);
  for (const r of rows) assert.match(r, /\| (&nbsp;){4}[\d.]+ m?s \| (&nbsp;){4}[\d.]+ m?s \|$/, r);
});
