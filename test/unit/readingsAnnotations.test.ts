/**
 * Annotation readings broken on purpose (hover sentence, CodeLens title, hover link), on the
 * committed 1- and 2-GPU runs and on variants of them: a one-rank lazy group, a lazy c10d group,
 * a failed splitShare 0 split, a first collective with no figure, an experiment the host cannot
 * run. Every test here failed on the code before its fix.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { scanCommand } from '../../cli/scan';
import { findings } from '../../readings/advice';
import { nodeModulesGrammars } from '../../sites/callSites';
import { codeLensTitle, formatMs, hoverLinks, hoverMarkdown, reading, skipGate, statusText } from '../../readings/annotationText';
import { resolveAnnotation } from '../../readings/figures';
import type { StaleRules } from '../../readings/profiles';
import type { RunFile } from '../../protocol/runFile';
import type { TraceFile, TraceSite } from '../../protocol/trace';
import { parseTrace } from '../../client/traceStore';
import { type TraceObservation } from '../../readings/traces';
import { observedLabel, observedSentence } from '../../readings/tracesText';
import { RESULTS, runFolder, scanText, storeOf } from '../support/annotationFixtures';

const RULES: StaleRules = { now: Date.parse('2026-12-02T00:00:00Z'), staleAfterDays: 30, expectedNcclVersion: '' };
const read = (name: string): RunFile => JSON.parse(readFileSync(join(RESULTS, name), 'utf8')) as RunFile;
const step = (run: RunFile, e: string, v: string, s: string): number => {
  const x = run.experiments.find((y) => y.experiment === e)?.variants.find((y) => y.variant === v)?.steps.find((y) => y.step === s);
  assert.ok(x, `${e}/${v}/${s}`);
  return x.stats.median;
};

test('1 rank, a lazy new_group: its first collective creates the communicator (99%): never "nothing to connect" beside that share', async () => {
  const run = read('h200x1-2026-12-01/h200x1-torch2.11-nccl2.28.9-c10d.json');
  const { store } = await storeOf(runFolder([run]));
  const a = resolveAnnotation('new_group', store.active, store.profiles, RULES);
  assert.equal(a.measured?.main.variant, 'new_group/lazy-default');
  const r = reading(a) ?? '';
  assert.ok(step(run, 'c10d', 'new_group/lazy-default', 'first') > 10 * step(run, 'c10d', 'new_group/lazy-default', 'call'));
  assert.doesNotMatch(r, /nothing to connect/, r);
  assert.match(r, /^one-rank communicator: no peer to connect to, yet its first collective takes 50\.0 ms \(99% of the call \+ first collective, 0\.460 \+ 50\.0 ms\): the group is made lazily, so its first collective creates the communicator \(the call takes 0\.460 ms\)/, r);
});

test('2 ranks, a lazy new_group: the first collective is the creation and the connect, not "the lazy connect" alone', async () => {
  const run = read('h200x2-torch2.11-nccl2.28.9-c10d.json');
  const { store } = await storeOf(runFolder([run]));
  const r = reading(resolveAnnotation('new_group', store.active, store.profiles, RULES)) ?? '';
  assert.doesNotMatch(r, /is the lazy connect/, r);
  assert.match(r, /^99\.7% of this new_group is paid in its first collective \(of the call \+ first collective, 0\.408 \+ 191 ms\): the group is made lazily, so its first collective creates the communicator and connects it \(the call takes 0\.408 ms\)$/, r);
  // The eager variant reads as the share its first collective pays (what NCCL does there is not measured).
  const eager = reading(resolveAnnotation('new_group', store.active, store.profiles, RULES, { eager: true })) ?? '';
  assert.match(eager, /^82% of this new_group is paid in its first collective \(of the call \+ first collective, 31\.5 \+ 148 ms\)$/, eager);
});

test('a failed whole/splitShare=0 split: the splitShare=1 headline says so and that the run has no splitShare=0 split of more than one rank', async () => {
  const run = read('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
  const split = run.experiments.find((e) => e.experiment === 'split')!;
  split.variants = split.variants.filter((v) => v.variant !== 'whole/splitShare=0');
  const { store } = await storeOf(runFolder([run]));
  const a = resolveAnnotation('ncclCommSplit', store.active, store.profiles, RULES);
  assert.equal(a.measured?.main.variant, 'whole/splitShare=1');
  const r = reading(a) ?? '';
  assert.match(r, /^with splitShare=1 \(the child shares its parent's resources\): nearly all of this split is the call itself/, r);
  assert.match(r, /; this run has no splitShare=0 split of more than one rank$/, r);
  // With it measured, the headline is splitShare=0 and says nothing of the kind.
  const { store: whole } = await storeOf(runFolder([read('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json')]));
  assert.doesNotMatch(reading(resolveAnnotation('ncclCommSplit', whole.active, whole.profiles, RULES)) ?? '', /splitShare/);
});

test('a split whose first collective has no figure: the reading says the headline is the call alone', async () => {
  const run = read('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
  run.status = 'partial';
  const v = run.experiments.find((e) => e.experiment === 'split')!.variants.find((x) => x.variant === 'whole/splitShare=0')!;
  v.steps = v.steps.filter((s) => s.step === 'call');
  const { store } = await storeOf(runFolder([run]));
  const a = resolveAnnotation('ncclCommSplit', store.active, store.profiles, RULES);
  assert.equal(a.measured?.main.variant, 'whole/splitShare=0');
  assert.equal(reading(a), `this run has no figure for its first collective (whole/splitShare=0): 33.9 ms is the call alone`);
});

test('an experiment the host cannot run (needs 2 GPUs, host has 1): the lens and hover say why and never offer to measure it on that host again', async () => {
  const run = read('h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json');
  const { store } = await storeOf(runFolder([run]));
  const a = resolveAnnotation('ncclCommSplit', store.active, store.profiles, RULES);
  // The host is named with the GPUs and count its run is named by (#28).
  assert.equal(a.missing?.reason, 'skipped on localhost (1× H200): needs 2 GPUs, host has 1');
  assert.equal(skipGate(a), 'needs 2 GPUs, host has 1');
  assert.equal(codeLensTitle(a), '⏱ skipped on localhost (1× H200): needs 2 GPUs, host has 1 · Measure on a host that meets it');
  const site = (await scanText('cpp', 'void f(){ ncclCommSplit(p, rank % 2, rank, &c, NULL); }')).sites[0];
  assert.ok(site);
  const md = hoverMarkdown(a, site, hoverLinks(a));
  assert.doesNotMatch(md, /Measure this on localhost/, md);
  assert.match(md, /localhost cannot run it as measured/, md);
  // An experiment merely left out of the run keeps its Measure link on the same host.
  const { store: two } = await storeOf(runFolder([read('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json')]));
  const reg = resolveAnnotation('ncclCommRegister', two.active, two.profiles, RULES);
  assert.equal(reg.missing?.reason, 'not measured in this run');
  assert.equal(skipGate(reg), undefined);
  assert.equal(codeLensTitle(reg), '⏱ not measured in this run · Measure this on localhost');
});

test('1 GPU, no c10d figures: shrink_group inherits the ncclCommShrink skip (measuring there would skip it again); split_group says its ncclCommSplit was skipped and what measuring it there gives', async () => {
  const run = read('h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json');
  assert.deepEqual(
    run.skipped.filter((x) => x.experiment === 'split' || x.experiment === 'shrink').map((x) => x.reason),
    ['needs 2 GPUs, host has 1', 'needs 2 GPUs, host has 1'],
  );
  const { store } = await storeOf(runFolder([run]));
  const shrink = resolveAnnotation('shrink_group', store.active, store.profiles, RULES);
  assert.equal(shrink.missing?.experiment, 'c10d');
  assert.equal(shrink.missing?.reason, 'skipped on localhost (1× H200; the ncclCommShrink behind it, experiment shrink): needs 2 GPUs, host has 1');
  assert.equal(skipGate(shrink), 'needs 2 GPUs, host has 1');
  assert.equal(codeLensTitle(shrink), '⏱ skipped on localhost (1× H200): needs 2 GPUs, host has 1 · Measure on a host that meets it');
  const site = (await scanText('python', 'import torch.distributed as dist\ng = dist.shrink_group([1])\n')).sites.find((x) => x.api === 'shrink_group');
  assert.ok(site);
  const md = hoverMarkdown(shrink, site, hoverLinks(shrink));
  assert.doesNotMatch(md, /Measure this on localhost/, md);
  assert.match(md, /localhost cannot run it as measured/, md);
  // c10d times split_group on one GPU (the committed 1-GPU c10d run has it): the Measure link stays, and the reading says the split beneath was skipped.
  const c10d = read('h200x1-2026-12-01/h200x1-torch2.11-nccl2.28.9-c10d.json');
  assert.ok(c10d.experiments.find((e) => e.experiment === 'c10d')?.variants.some((v) => v.variant === 'split_group'));
  const split = resolveAnnotation('split_group', store.active, store.profiles, RULES);
  assert.equal(
    split.missing?.reason,
    'not measured in this run; the ncclCommSplit behind it (experiment split) was skipped on localhost (1× H200): needs 2 GPUs, host has 1; measured there, it makes a one-rank communicator: nothing to connect',
  );
  assert.equal(skipGate(split), undefined);
  // The lens says the skip beneath as ncclCommSplit's own lens does, and keeps the Measure (#28).
  assert.equal(
    codeLensTitle(split),
    '⏱ not measured in this run · the ncclCommSplit behind it was skipped on localhost (1× H200): needs 2 GPUs, host has 1 · Measure this on localhost (a one-rank group there)',
  );
  const splitSite = (await scanText('python', 'import torch.distributed as dist\ng = dist.split_group(None, [[0]])\n')).sites.find((x) => x.api === 'split_group');
  assert.ok(splitSite);
  // The hover gives the whole reason, never cut.
  assert.match(hoverMarkdown(split, splitSite, hoverLinks(split)), /one\\-rank communicator\\: nothing to connect\.\n/);
  // An old NCCL on one GPU: the shrink beneath skipped for its version (c10d loads torch's NCCL, so not inherited),
  // and shrink_group is never called a one-rank communicator there (dropping a rank of one leaves none).
  const old = read('h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json');
  old.skipped = old.skipped.map((x) => (x.experiment === 'shrink' ? { ...x, reason: 'needs NCCL ≥ 2.27.3, host has 2.26.2' } : x));
  const { store: oldStore } = await storeOf(runFolder([old]));
  assert.equal(
    resolveAnnotation('shrink_group', oldStore.active, oldStore.profiles, RULES).missing?.reason,
    'not measured in this run; the ncclCommShrink behind it (experiment shrink) was skipped on localhost (1× H200): needs NCCL ≥ 2.27.3, host has 2.26.2',
  );
  // A 2-GPU run without c10d figures answers both from the NCCL calls beneath.
  const { store: two } = await storeOf(runFolder([read('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json')]));
  for (const api of ['split_group', 'shrink_group'] as const) assert.ok(resolveAnnotation(api, two.active, two.profiles, RULES).measured, api);
});

test("a c10d run's skip of one variant answers for that variant alone (an old torch without split_group, one GPU for shrink_group)", async () => {
  const run = read('h200x1-2026-12-01/h200x1-torch2.11-nccl2.28.9-c10d.json');
  const exp = run.experiments.find((e) => e.experiment === 'c10d')!;
  exp.variants = exp.variants.filter((v) => v.variant !== 'split_group');
  run.skipped = [{ experiment: 'c10d', variant: 'split_group', reason: 'torch 2.4.1 has no split_group (needs torch ≥ 2.5)' }, ...run.skipped];
  const { store } = await storeOf(runFolder([run]));
  assert.equal(resolveAnnotation('shrink_group', store.active, store.profiles, RULES).missing?.reason, 'skipped on localhost (1× H200): needs 2 GPUs, host has 1');
  assert.equal(resolveAnnotation('split_group', store.active, store.profiles, RULES).missing?.reason, 'skipped on localhost (1× H200): torch 2.4.1 has no split_group (needs torch ≥ 2.5)');
});

test('a traced first collective creates the group only when it was made lazily, and connects it only when it has more than one rank', () => {
  const t = JSON.parse(readFileSync(join(RESULTS, 'h200x2-2026-12-01', 'trace-torch-tp-reshape-nccl2.28.9.json'), 'utf8')) as TraceFile;
  const base = t.sites.find((x) => x.api === 'new_group' && x.firstCollective !== null) ?? t.sites.find((x) => x.api === 'new_group')!;
  const observe = (site: TraceSite): TraceObservation => ({
    trace: parseTrace(JSON.stringify({ ...t, sites: [site] }), '/traces/t.json', 't', 0),
    role: 'firstCollective',
    sites: [site],
    tracedLine: 10,
    shift: 0,
  });
  const sized = (n: number) => base.occurrences.map((o) => ({ ...o, commRanks: o.commRanks.map(() => n) }));
  const lazy2 = observe({ ...base, lazy: true, line: 7, occurrences: sized(2) });
  assert.match(observedSentence(lazy2), /this first collective creates and connects the group made at line 7/);
  assert.match(observedLabel(lazy2), /first collective \(init \+ connect\)/);
  // A C communicator (made by ncclCommInitRank, not lazily): its first collective connects it, it does not create it.
  const eager2 = observe({ ...base, lazy: false, line: 7, occurrences: sized(2) });
  assert.match(observedSentence(eager2), /this first collective connects the group made at line 7/);
  assert.doesNotMatch(observedSentence(eager2) + observedLabel(eager2), /creates|init \+/);
  // One rank: nothing to connect.
  const eager1 = observe({ ...base, lazy: false, line: 7, occurrences: sized(1), connect: null });
  assert.doesNotMatch(observedSentence(eager1) + observedLabel(eager1), /connects|\(connect|\+ connect/);
  assert.match(observedSentence(eager1), /this first collective runs on the one-rank group made at line 7 \(nothing to connect\)/);
  const lazy1 = observe({ ...base, lazy: true, line: 7, occurrences: sized(1), connect: null });
  assert.match(observedSentence(lazy1), /this first collective creates the one-rank group made at line 7 \(nothing to connect\)/);
  assert.match(observedLabel(lazy1), /first collective \(init\)/);
});

test('quick fixes on a lazily made group: its first collective pays the lazy creation (and, at 2 ranks, the connect), never "lazy connect" alone; a one-rank figure says so', async () => {
  const text = ['import torch', 'import torch.distributed as dist', 'dist.init_process_group("nccl")', 'for i in range(3):', '    g = dist.new_group([0, 1])', ''].join('\n');
  const scan = await scanText('python', text);
  const messages = async (run: RunFile) => {
    const { store } = await storeOf(runFolder([run]));
    return findings(scan, (api) => resolveAnnotation(api, store.active, store.profiles, RULES), text).map((f) => f.message);
  };
  const two = await messages(read('h200x2-torch2.11-nccl2.28.9-c10d.json'));
  const cold2 = two.find((m) => m.startsWith('the first collective on g'));
  assert.ok(cold2, two.join('\n'));
  assert.match(cold2, /pays ~191 ms of lazy creation and connect on localhost/);
  const one = await messages(read('h200x1-2026-12-01/h200x1-torch2.11-nccl2.28.9-c10d.json'));
  const cold1 = one.find((m) => m.startsWith('the first collective on g'));
  assert.ok(cold1, one.join('\n'));
  assert.match(cold1, /pays ~50\.0 ms of lazy creation \(a one-rank group: nothing to connect\)/);
  assert.doesNotMatch(one.join('\n'), /of lazy connect/);
  const loop1 = one.find((m) => m.startsWith('each new group made here'));
  assert.match(loop1 ?? '', /costs ~50\.5 ms from creation to first collective on localhost \(as a one-rank communicator: nothing to connect\)/);
  assert.doesNotMatch(two.find((m) => m.startsWith('each new group made here')) ?? '', /one-rank/);
});

test('a group made in a loop: lazily (no device_id), the figure to first collective is paid where a collective first runs on each new group; eagerly, the call pays the init; from the run\'s own figures in every regime', async () => {
  const lazyText = ['import torch', 'import torch.distributed as dist', 'dist.init_process_group("nccl")', 'for i in range(3):', '    g = dist.new_group([0, 1])', ''].join('\n');
  const eagerText = lazyText.replace('"nccl")', '"nccl", device_id=torch.device("cuda", 0))');
  const loopOf = async (run: RunFile, text: string): Promise<string> => {
    const { store } = await storeOf(runFolder([run]));
    // A simulated run is never active by itself: it answers when chosen.
    const active = store.active ?? store.profiles[0];
    const context = store.active ? {} : { chosen: active };
    const f = findings(await scanText('python', text), (api) => resolveAnnotation(api, active, store.profiles, RULES, context), text).find((x) => x.code === 'commcost.creationInLoop');
    assert.ok(f, text);
    return f.message;
  };
  const ms = (x: number) => formatMs(x).replace('.', '\\.');
  // 2 ranks, c10d figures: the lazy variant's call is small; its total is paid at the group's first collective.
  const c10d2 = read('h200x2-torch2.11-nccl2.28.9-c10d.json');
  const [lc, lf, lt] = ['call', 'first', 'total'].map((s) => step(c10d2, 'c10d', 'new_group/lazy-default', s)) as [number, number, number];
  const lazy2 = await loopOf(c10d2, lazyText);
  // The device_id is the default group's, never new_group's (#28).
  assert.match(lazy2, new RegExp(`^each new group made here \\(inside a for loop \\(line 4\\)\\) costs ~${ms(lt)} from creation to first collective on localhost, paid only when a collective first runs on it \\(the default group was created without device_id\\): the call takes ${ms(lc)}, its first collective ${ms(lf)}; build it once or prewarm a pool$`), lazy2);
  assert.doesNotMatch(lazy2, /creating a group here costs/, lazy2);
  const [ec, ef, et] = ['call', 'first', 'total'].map((s) => step(c10d2, 'c10d', 'new_group/eager-default', s)) as [number, number, number];
  const eager2 = await loopOf(c10d2, eagerText);
  assert.equal(eager2, `creating a group here (inside a for loop (line 4)) takes ~${formatMs(ec)} each time on localhost: made eagerly, the call pays the init; its first collective takes ${formatMs(ef)} more, ~${formatMs(et)} to first collective; build it once or prewarm a pool`);
  // A warm-up collective right after the lazy creation makes the group there, lazily: the lazy
  // variant's figures, never "made eagerly, the call pays the init" (the 1×H200 screenshot's loop).
  const warmText = lazyText.replace('    g = dist.new_group([0, 1])\n', '    g = dist.new_group([0, 1])\n    dist.all_reduce(torch.ones(1, device="cuda"), group=g)\n');
  assert.notEqual(warmText, lazyText);
  const warm2 = await loopOf(c10d2, warmText);
  assert.match(warm2, new RegExp(`^each new group made here \\(inside a for loop \\(line 4\\)\\) costs ~${ms(lt)} from creation to first collective .*\\(the default group was created without device_id\\)`), warm2);
  assert.doesNotMatch(warm2, /made eagerly/, warm2);
  assert.match(await loopOf(read('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json'), warmText), /\) costs .*\(the default group was created without device_id\): the NCCL init .* from the NCCL init beneath/);
  // 1 rank: still a one-rank communicator, said so.
  const c10d1 = read('h200x1-2026-12-01/h200x1-torch2.11-nccl2.28.9-c10d.json');
  assert.match(await loopOf(c10d1, lazyText), /\) costs ~50\.5 ms from creation to first collective on localhost \(as a one-rank communicator: nothing to connect\), paid only when a collective first runs on it \(the default group was created without device_id\): the call takes 0\.460 ms/);
  // No c10d figures: from the NCCL init beneath, said so; lazily, the init itself is paid at the first collective.
  const wheel = read('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
  const [ic, ifirst, it] = ['call', 'first', 'total'].map((s) => step(wheel, 'init', 'default', s)) as [number, number, number];
  assert.equal(
    await loopOf(wheel, lazyText),
    `each new group made here (inside a for loop (line 4)) costs ~${formatMs(it)} from creation to first collective on localhost, paid only when a collective first runs on it (the default group was created without device_id): the NCCL init ${formatMs(ic)} plus its first collective ${formatMs(ifirst)}, from the NCCL init beneath (this run has no c10d figures); build it once or prewarm a pool`,
  );
  assert.match(await loopOf(wheel, eagerText), new RegExp(`takes ~${ms(ic)} each time on localhost: made eagerly, the call pays the NCCL init; its first collective takes ${ms(ifirst)} more, ~${ms(it)} to first collective, from the NCCL init beneath \\(this run has no c10d figures\\)`));
  // Simulated figures keep their note.
  const sim = { ...c10d2, simulated: true, stamp: c10d2.stamp && { ...c10d2.stamp, simulated: true } };
  assert.match(await loopOf(sim, lazyText), /prewarm a pool \(SIMULATED figures, not a measurement\)$/);
});

test('a partial run is named partial in the CodeLens and the status bar: what it lacks was not measured', async () => {
  const run = read('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
  run.status = 'partial';
  run.experiments = run.experiments.filter((e) => e.experiment === 'init');
  const { store } = await storeOf(runFolder([run]));
  const init = resolveAnnotation('ncclCommInitRank', store.active, store.profiles, RULES);
  assert.match(codeLensTitle(init), / — 2× H200 · NCCL 2\.28\.9 · 2026-12-01 \d\d:\d\d UTC · partial$/);
  assert.match(statusText(store.active, false, [], [], { simulated: 0, foreign: 0 }).text, /2× H200 · NCCL 2\.28\.9 · 2026-12-01 \d\d:\d\d UTC · partial$/);
  const split = resolveAnnotation('ncclCommSplit', store.active, store.profiles, RULES);
  assert.equal(split.measured, undefined);
  assert.equal(split.missing?.reason, 'not measured in this run');
  const { store: whole } = await storeOf(runFolder([read('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json')]));
  assert.doesNotMatch(codeLensTitle(resolveAnnotation('ncclCommInitRank', whole.active, whole.profiles, RULES)), /partial/);
});

test('commcost scan marks a figure of a one-rank communicator (table and JSON); a 2-rank figure is not marked', async () => {
  const example = join(RESULTS, '..', '..', 'examples', 'trace', 'nccl_lifecycle.c');
  const scanWith = async (runFile: string, json: boolean): Promise<string> => {
    let out = '';
    const code = await scanCommand([example], { run: join(RESULTS, runFile), json }, { out: (t) => (out += t), err: () => undefined, cwd: join(RESULTS, '..', '..'), grammars: nodeModulesGrammars(join(RESULTS, '..', '..')) });
    assert.equal(code, 0);
    return out;
  };
  const one = await scanWith('h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json', false);
  const row = one.split('\n').find((l) => l.includes('nccl_lifecycle.c:72'));
  assert.match(row ?? '', /14\.8 ms init to first collective \(init default, p90 [\d.]+ ms, n = 5, one-rank communicator: nothing to connect\)/, one);
  const doc = JSON.parse(await scanWith('h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json', true)) as { sites: { line: number; figure: { childRanks: number | null } | null }[] };
  assert.equal(doc.sites.find((s) => s.line === 72)?.figure?.childRanks, 1);
  const two = await scanWith('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json', false);
  assert.doesNotMatch(two.split('\n').find((l) => l.includes('nccl_lifecycle.c:72')) ?? '', /one-rank/);
});
