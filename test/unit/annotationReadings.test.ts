/**
 * Annotation readings of the readings review (2026-12-01), each broken on purpose on a committed
 * run or a variant of one made here: a suspend lens, the NCCL init beneath a c10d call, the
 * default group's first collective, one-rank advice, a step the hang guard stopped,
 * ncclCommMemStats, a run with NCCL_RUNTIME_CONNECT=0, a run's size, one-rank tags. Every test
 * here failed on the code before its fix.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scanCommand, type ScanReport } from '../../cli/scan';
import { test } from 'node:test';
import { codeLensTitle, decorationLabel, formatMs, hoverLinks, hoverMarkdown, reading } from '../../readings/annotationText';
import { findings } from '../../readings/advice';
import { ms as verdictMs } from '../../readings/verdict/format';
import { resolveAnnotation } from '../../readings/figures';
import type { ApiName } from '../../sites/apiMap';
import type { CallSite } from '../../sites/callSites';
import type { StaleRules } from '../../readings/profiles';
import { profileLabel } from '../../readings/annotationText';
import { runNode } from '../../extension/runsViewModel';
import type { RunFile } from '../../protocol/runFile';
import { RESULTS, runFolder, scanText, storeOf } from '../support/annotationFixtures';
import { twoNodes } from './verdictRuns';

const RULES: StaleRules = { now: Date.parse('2026-12-02T00:00:00Z'), staleAfterDays: 30, expectedNcclVersion: '' };
const read = (name: string): RunFile => JSON.parse(readFileSync(join(RESULTS, name), 'utf8')) as RunFile;
const X1_2307 = 'h200x1-2026-12-01/h200x1-nccl2.30.7-source.json';

/** The annotation of `api` on `run` (the only run), and the site of `api` in `text` when given. */
async function annotate(run: RunFile, api: ApiName, eager?: boolean) {
  const { store } = await storeOf(runFolder([run]));
  return { a: resolveAnnotation(api, store.active, store.profiles, RULES, eager === undefined ? {} : { eager }), store };
}

async function siteOf(language: 'cpp' | 'python', text: string, api: string): Promise<CallSite> {
  const { sites } = await scanText(language, text);
  const s = sites.find((x) => x.api === api);
  assert.ok(s, `no ${api} site`);
  return s;
}

test('#20 a 1-rank run on a 2-GPU host: the hover footer gives 1 rank beside the host\'s GPUs; no "1 ranks" in the run pickers', async () => {
  const run = read(X1_2307);
  const gpu = run.stamp!.gpus[0]!;
  run.stamp!.gpus = [gpu, { ...gpu, index: 1 } as typeof gpu];
  const { a, store } = await annotate(run, 'ncclCommInitRank');
  const site = await siteOf('cpp', 'void f(){ ncclCommInitRank(&c, n, id, r); }', 'ncclCommInitRank');
  const hover = hoverMarkdown(a, site, hoverLinks(a));
  assert.match(hover, /· 1 rank \(its host has 2× NVIDIA H200\) ·/, hover);
  const p = store.profiles[0]!;
  assert.match(profileLabel(p), /· 1 rank \(its host has 2× NVIDIA H200\) ·/);
  // Without a stamp the fallback is the rank count, singular for one.
  const bare = read(X1_2307);
  delete (bare as { stamp?: unknown }).stamp;
  const { store: s2 } = await storeOf(runFolder([bare]));
  const q = s2.profiles[0]!;
  assert.match(profileLabel(q), /· 1 rank ·/);
  assert.doesNotMatch(profileLabel(q), /1 ranks/);
  const node = runNode(q, q, s2.profiles, RULES);
  assert.match(node.tooltip, /· 1 rank\n/, node.tooltip);
});

test('#21 a 1-rank run: abort, destroy and register lenses carry the one-rank tag init\'s lens has', async () => {
  const run = read(X1_2307);
  const { store } = await storeOf(runFolder([run]));
  for (const api of ['ncclCommInitRank', 'ncclCommAbort', 'ncclCommDestroy', 'ncclCommRegister'] as const) {
    const lens = codeLensTitle(resolveAnnotation(api, store.active, store.profiles, RULES));
    assert.match(lens, /· one-rank communicator/, `${api}: ${lens}`);
  }
  // At 2 ranks no tag.
  const { store: two } = await storeOf(runFolder([read('h200x2-2026-12-01/h200x2-nccl2.30.7-source.json')]));
  assert.doesNotMatch(codeLensTitle(resolveAnnotation('ncclCommAbort', two.active, two.profiles, RULES)), /one-rank/);
});

test('#1 ncclCommSuspend: its lens gives the suspend call and the memory it releases, and its hover table is the call alone', async () => {
  const run = read('h200x2-2026-12-01/h200x2-nccl2.30.7-source.json');
  const v = run.experiments.find((e) => e.experiment === 'suspend')!.variants[0]!;
  const ms = (step: string) => v.steps.find((x) => x.step === step)!.stats.median;
  assert.ok(ms('suspend') > ms('total'), 'the run: suspend 302 ms, resume to first collective 257 ms');
  const { a } = await annotate(run, 'ncclCommSuspend');
  const lens = codeLensTitle(a);
  assert.match(lens, /^⏱ 302 ms ncclCommSuspend \(NCCL_SUSPEND_MEM\) · releases 480 MiB\/GPU \(4\.0 MiB left\) — /, lens);
  assert.doesNotMatch(lens, /257 ms|to first collective|484 MiB\/GPU/, lens);
  const site = await siteOf('cpp', 'void f(){ ncclCommSuspend(c, 0); }', 'ncclCommSuspend');
  const hover = hoverMarkdown(a, site, hoverLinks(a));
  assert.doesNotMatch(hover, /\| total|\| first collective/, hover);
  assert.match(hover, /Memory per GPU: 4\.0 MiB after the call, 484 MiB before it: the call releases 480 MiB/, hover);
  assert.match(hover, /resume to first collective of the same run \(257 ms, p90 266 ms\) is ncclCommResume's figure/, hover);
  // ncclCommResume keeps the resume to first collective.
  const { a: r } = await annotate(run, 'ncclCommResume');
  assert.match(codeLensTitle(r), /^⏱ 257 ms to first collective · 484 MiB\/GPU/);
});

/** The 2-rank wheel run with the hang guard's stop of `experiment` `variant` at `step` on rank 1 (the agent's message). */
function hung(experiment: string, variant: string, step: string, stepWords: string): RunFile {
  const run = read('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
  run.status = 'partial';
  run.errors.push({
    code: 'TIMEOUT',
    message: `timed out at ${experiment} ${variant} iteration 2, step ${stepWords} on rank 1: rank 0 waited 30.0 s in ${stepWords}; rank 1 never reached ${stepWords}`,
    where: { host: 'vm', rank: 1, experiment: experiment as never, variant, iteration: 2, step },
    hint: 'a rank hung',
    fatal: false,
  });
  return run;
}

test('#8 a step the hang guard stopped reads as timed out (rank, op) with a measure-again offer, never "not measured in this run"', async () => {
  const run = hung('split', 'halves/splitShare=0', 'call', 'ncclCommSplit');
  run.experiments = run.experiments.filter((e) => e.experiment !== 'split');
  const { a } = await annotate(run, 'ncclCommSplit');
  const lens = codeLensTitle(a);
  assert.doesNotMatch(lens, /not measured/, lens);
  assert.match(lens, /^⏱ timed out on rank 1 in ncclCommSplit \(split halves\/splitShare=0, iteration 2\) in this run · Measure again on localhost$/, lens);
  const site = await siteOf('cpp', 'void f(){ ncclCommSplit(p, 0, r, &c, NULL); }', 'ncclCommSplit');
  const hover = hoverMarkdown(a, site, hoverLinks(a));
  assert.match(hover, /timed out at split halves\/splitShare=0 iteration 2, step ncclCommSplit on rank 1/, hover);
  assert.match(hover, /\[Measure again on localhost\]\(command:commcost\.remeasure/, hover);
  // An init whose first collective timed out: its reading gives the reason it has no figure.
  const init = hung('init', 'default', 'first', 'first 1 MiB allreduce');
  const v = init.experiments.find((e) => e.experiment === 'init')!.variants[0]!;
  v.steps = v.steps.filter((x) => x.step === 'call');
  const { a: i } = await annotate(init, 'ncclCommInitRank');
  const r = hoverMarkdown(i, await siteOf('cpp', 'void f(){ ncclCommInitRank(&c, n, id, r); }', 'ncclCommInitRank'), hoverLinks(i));
  assert.match(r, /no figure for its first collective \(default\): the hang guard stopped it \(timed out on rank 1 in first 1 MiB allreduce \\\(init default, iteration 2\\\)\); 30\.1 ms is the call alone/, r);
});

test('#9 ncclCommMemStats: no Measure offer for an experiment that does not exist; the run says its NCCL lacks it (version needed) or where it read it', async () => {
  const { a } = await annotate(read('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json'), 'ncclCommMemStats');
  const lens = codeLensTitle(a);
  assert.doesNotMatch(lens, /Measure/, lens);
  assert.equal(lens, '⏱ ncclCommMemStats is not in NCCL 2.28.9 (the library does not export it; needs ≥ 2.29.7)');
  assert.equal(hoverLinks(a).measure, undefined);
  const site = await siteOf('cpp', 'void f(){ ncclCommMemStats(c, &s); }', 'ncclCommMemStats');
  const hover = hoverMarkdown(a, site, hoverLinks(a));
  assert.doesNotMatch(hover, /memStats`|Measure this/, hover);
  const { a: b } = await annotate(read('h200x2-2026-12-01/h200x2-nccl2.30.7-source.json'), 'ncclCommMemStats');
  assert.equal(codeLensTitle(b), '⏱ not timed: this run read ncclCommMemStats at the memory points of init, split, shrink, pool, suspend (open the run for its counts)');
  assert.match(hoverLinks(b).openRun ?? '', /^command:commcost\.openRun/);
});

test('#11 a run with NCCL_RUNTIME_CONNECT=0: the hover says the share is paid in the first collective and names the stamp, never "the lazy connect"', async () => {
  const run = read('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
  run.stamp!.ncclEnv = { ...run.stamp!.ncclEnv, NCCL_RUNTIME_CONNECT: '0' };
  const { a } = await annotate(run, 'ncclCommInitRank');
  const hover = hoverMarkdown(a, await siteOf('cpp', 'void f(){ ncclCommInitRank(&c, n, id, r); }', 'ncclCommInitRank'), hoverLinks(a));
  assert.doesNotMatch(hover, /lazy connect/, hover);
  assert.match(hover, /82% of this init is paid in its first collective \(of the call \+ first collective, 30\.1 \+ 139 ms\); this run set NCCL_RUNTIME_CONNECT=0\./, hover);
});

test('#3 init_process_group / new_group answered by the NCCL init beneath: the init plus its first collective, said to come from the NCCL init, never "the lazy connect" share', async () => {
  const { a } = await annotate(read('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json'), 'init_process_group', false);
  const r = reading(a) ?? '';
  assert.doesNotMatch(r, /connect|82%/, r);
  assert.equal(
    r,
    "without device_id the first collective pays the init (30.1 ms) plus the NCCL communicator's first collective (139 ms), 170 ms in all, from the NCCL init beneath (experiment init; this run has no c10d figures)",
  );
  // The default group's first collective, answered by the NCCL init's first collective: never "the group's init + connect".
  const text = 'import torch\nimport torch.distributed as dist\ndef main():\n    dist.init_process_group("nccl")\n    t = torch.ones(1, device="cuda")\n    dist.all_reduce(t)\n';
  const { sites } = await scanText('python', text);
  const fc = sites.find((x) => x.api === 'first_collective');
  assert.ok(fc, 'the default group\'s first collective is a site');
  const { store } = await storeOf(runFolder([read('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json')]));
  const fa = resolveAnnotation('first_collective', store.active, store.profiles, RULES, { creator: 'init_process_group' });
  const md = hoverMarkdown(fa, fc, hoverLinks(fa));
  assert.doesNotMatch(md, /pays the group's init \+ connect/, md);
  assert.match(md, /: 139 ms \(p90 146 ms\) as the first collective after the NCCL init beneath \(this run has no c10d figures\)/, md);
  // At 1 rank: no connect, and what that does not show.
  const { a: one } = await annotate(read('h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json'), 'new_group', false);
  assert.match(reading(one) ?? '', /plus the NCCL communicator's first collective \(0\.0077 ms\), 14\.8 ms in all, .*; 1 rank: no peer to connect, so this does not show what a group of more ranks pays in its first collective$/);
});

test('#5 one-rank advice and registration: each says the run has 1 rank, no peer to connect, and what that does not show', async () => {
  const text = 'import torch\nimport torch.distributed as dist\ndist.init_process_group("nccl")\ndist.all_reduce(torch.ones(1, device="cuda"))\n';
  const fixOf = async (run: RunFile) => {
    const { store } = await storeOf(runFolder([run]));
    const scan = await scanText('python', text);
    return findings(scan, (api) => resolveAnnotation(api, store.active, store.profiles, RULES), text).find((f) => f.code === 'commcost.lazyInit');
  };
  // c10d at 1 rank: the fix's figure is said to be of one rank.
  const c10d = await fixOf(read('h200x1-2026-12-01/h200x1-torch2.11-nccl2.28.9-c10d.json'));
  assert.ok(c10d?.fix);
  assert.match(c10d.fix.title, /^Pass device_id for eager init \(to the first collective on localhost \(1× H200\), 1 rank: 48\.8 ms without, 43\.8 ms with it, within the run's noise: no saving shown; no peer to connect, so not what more ranks pay;/, c10d.fix.title);
  assert.match(c10d.message, /\(1 rank\) shows .*; 1 rank: no peer to connect, so this does not show what a group of more ranks pays$/, c10d.message);
  // The NCCL init beneath at 1 rank: no "lazy connect" that "stays".
  const nccl = await fixOf(read('h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json'));
  assert.ok(nccl?.fix);
  assert.doesNotMatch(nccl.message, /lazy connect|stays/, nccl.message);
  assert.match(nccl.message, /plus the NCCL communicator's first collective \(0\.0077 ms\), 14\.8 ms in all; 1 rank: no peer to connect/, nccl.message);
  assert.match(nccl.fix.title, /on localhost, 1 rank;/, nccl.fix.title);
  // The warm-up fix at 1 rank.
  const groupText = 'import torch\nimport torch.distributed as dist\ndef f(ranks):\n    g = dist.new_group(ranks)\n    x = 1\n    dist.all_reduce(torch.ones(1), group=g)\n';
  const { store: s1 } = await storeOf(runFolder([read('h200x1-2026-12-01/h200x1-torch2.11-nccl2.28.9-c10d.json')]));
  const cold = findings(await scanText('python', groupText), (api) => resolveAnnotation(api, s1.active, s1.profiles, RULES), groupText).find((f) => f.code === 'commcost.coldGroup');
  assert.ok(cold?.fix, 'a warm-up fix');
  assert.match(cold.fix.title, /here; 1 rank: no peer to connect, so not what more ranks pay\)$/, cold.fix.title);
  // Registration at 1 rank.
  const { a } = await annotate(read(X1_2307), 'ncclCommRegister');
  assert.equal(reading(a), '1 rank: no peer to connect, so this does not show what registering (and the first collective on the registered buffer) costs a communicator of more ranks');
  const { a: two } = await annotate(read('h200x2-2026-12-01/h200x2-nccl2.30.7-source.json'), 'ncclCommRegister');
  assert.equal(reading(two), undefined);
});

test('#4 the default group: a lazy init_process_group gives its call and points to the line of its first collective, which gives the first collective — one cost at one line', async () => {
  const text = [
    'import torch',
    'import torch.distributed as dist',
    'def main():',
    '    dist.init_process_group("nccl")',
    '    t = torch.ones(1, device="cuda")',
    '    dist.all_reduce(t)',
    '',
  ].join('\n');
  const { store } = await storeOf(runFolder([read('h200x2-torch2.11-nccl2.28.9-c10d.json')]));
  const { sites } = await scanText('python', text);
  const lensOf = (api: string) => {
    const s = sites.find((x) => x.api === api)!;
    const a = resolveAnnotation(s.api, store.active, store.profiles, RULES, { eager: false, ...(s.firstCollectiveOf?.api ? { creator: s.firstCollectiveOf.api } : {}) });
    return { lens: codeLensTitle(a, s, sites), label: decorationLabel(a, s, sites) ?? '' };
  };
  const init = lensOf('init_process_group');
  assert.match(init.lens, /^⏱ 0\.500 ms call · its first collective \(line 6\) pays 191 ms · /, init.lens);
  assert.match(init.label, /^0\.500 ms \(\+191 ms at line 6\)/, init.label);
  const first = lensOf('first_collective');
  assert.match(first.lens, /^⏱ 191 ms /, first.lens);
  // `commcost scan` (the review's repro) says the same: the call at line 4, the first collective at line 6.
  const dir = mkdtempSync(join(tmpdir(), 'commcost-default-group-'));
  writeFileSync(join(dir, 'job.py'), text);
  let out = '';
  assert.equal(await scanCommand(['.'], { json: true, run: join(RESULTS, 'h200x2-torch2.11-nccl2.28.9-c10d.json') }, { out: (t) => (out += t), err: () => {}, cwd: dir }), 0);
  const doc = JSON.parse(out) as ScanReport;
  const line4 = doc.sites.find((x) => x.line === 4)?.figure;
  assert.deepEqual([line4?.label, line4?.firstCollectiveAt?.line], ['init_process_group (lazy)', 6]);
  assert.ok(line4 && line4.medianMs < 1 && (line4.firstCollectiveAt?.medianMs ?? 0) > 100, JSON.stringify(line4));
  // With device_id the init is made at its line: no pointer.
  const eager = text.replace('init_process_group("nccl")', 'init_process_group("nccl", device_id=torch.device("cuda", 0))');
  const e = await scanText('python', eager);
  const s = e.sites.find((x) => x.api === 'init_process_group')!;
  assert.doesNotMatch(codeLensTitle(resolveAnnotation(s.api, store.active, store.profiles, RULES, { eager: true }), s, e.sites), /its first collective \(line/);
});

test('formatMs: a figure never reads "1000 ms" beside a p90 of "1.00 s" (the 1-rank abort of the 1×H200 NCCL 2.28.3 run), nor "0.000 ms"', async () => {
  assert.equal(formatMs(999.7), '1.00 s');
  assert.equal(formatMs(1000.1), '1.00 s');
  assert.equal(formatMs(99.96), '100 ms');
  assert.equal(formatMs(9.996), '10.0 ms');
  assert.equal(formatMs(0.9996), '1.00 ms');
  assert.equal(formatMs(0), '0 ms');
  assert.equal(formatMs(0.00038), '0.00038 ms');
  assert.equal(formatMs(0.017), '0.017 ms');
  // Near the timer's resolution, two significant digits as the CLI's verdict (readings/verdict/format.ts ms):
  // the 1×H200 NCCL 2.28.3 run's first collective (0.008971 ms) and 64 MiB register (0.000764 ms).
  for (const x of [0.008971, 0.000764, 0.0084, 0.0099, 0.00996, 0.0123]) assert.equal(formatMs(x), verdictMs(x), `${x} ms`);
  assert.equal(formatMs(0.0084), '0.0084 ms');
  assert.equal(formatMs(0.000764), '0.00076 ms');
  const run = read('h200x1-2026-12-01/h200x1-nccl2.28.3-system.json');
  const abort = run.experiments.find((e) => e.experiment === 'abort')!.variants[0]!.steps.find((s) => s.step === 'abort')!.stats;
  assert.ok(abort.median >= 999.5 && abort.median < 1000 && abort.p90 >= 1000, `the committed run's abort: ${abort.median} ms, p90 ${abort.p90} ms`);
  const { a } = await annotate(run, 'ncclCommAbort');
  const lens = codeLensTitle(a);
  assert.match(lens, /^⏱ 1\.00 s ncclCommAbort/, lens);
  assert.doesNotMatch(lens, /1000 ms/, lens);
});

test('a memory delta that reads 0 MiB (shrink_group also releases its parent group) is "no memory change measured", never "0 MiB/GPU" or "0.00% of the GPU"', async () => {
  const run = read('h200x2-torch2.11-nccl2.28.9-c10d.json');
  const { a } = await annotate(run, 'shrink_group');
  const site = await siteOf('python', 'import torch.distributed as dist\ndist.shrink_group([1])\n', 'shrink_group');
  const lens = codeLensTitle(a, site, [site]);
  assert.match(lens, /^⏱ 507 ms to first collective · no memory change measured · one-rank communicator — /, lens);
  assert.match(decorationLabel(a, site, [site]) ?? '', /^507 ms · no memory change measured · one-rank/);
  const hover = hoverMarkdown(a, site, hoverLinks(a));
  assert.match(hover, /Memory per GPU: no change measured after the call \(the free-memory delta reads 0 MiB\)/, hover);
  assert.doesNotMatch(`${lens}\n${hover}`, /\b0 MiB\/GPU|0\.00% of the GPU/);
  // A group that takes memory keeps its figure and its share of the GPU, as measured.
  const { a: init } = await annotate(run, 'init_process_group');
  const initSite = await siteOf('python', 'import torch.distributed as dist\ndist.init_process_group("nccl")\n', 'init_process_group');
  assert.match(hoverMarkdown(init, initSite, hoverLinks(init)), /Memory per GPU: 484 MiB after the first collective \(0\.3% of the GPU\); 0 MiB after the call/);
});

test('a one-rank shrink child is not set against the run\'s 2-rank fresh init (the verdict\'s rule); a 2-rank child still is', async () => {
  const run = read('h200x2-2026-12-01/h200x2-nccl2.30.7-source.json');
  const { a: shrink } = await annotate(run, 'ncclCommShrink');
  const r = reading(shrink) ?? '';
  assert.match(r, /; not set against this run's fresh init of 2 ranks \(174 ms to first collective\): a one-rank child has no peer to connect to$/, r);
  assert.doesNotMatch(r, /this is \d+% of it/, r);
  const { a: grow } = await annotate(run, 'ncclCommGrow');
  assert.match(reading(grow) ?? '', /; a fresh init to first collective takes 174 ms on this run \(this is 101% of it\)$/);
});

test('recovering after an abort: the sum and its parts in one unit ("1.02 s: the abort (1.00 s) then a re-init … (0.0171 s)")', async () => {
  const { a } = await annotate(read('h200x1-2026-12-01/h200x1-nccl2.28.3-system.json'), 'ncclCommAbort');
  assert.equal(reading(a), 'recovering costs 1.02 s: the abort (1.00 s) then a re-init to first collective (0.0171 s)');
  const { a: two } = await annotate(read('h200x2-2026-12-01/h200x2-nccl2.30.7-source.json'), 'ncclCommAbort');
  assert.equal(reading(two), 'recovering costs 688 ms: the abort (517 ms) then a re-init to first collective (172 ms)');
});

test('a run over several nodes: the hover footer and the run picker name its nodes and all their GPUs, never "16 ranks (its host has 2× NVIDIA H200)"', async () => {
  const run = twoNodes('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
  const { a, store } = await annotate(run, 'ncclCommInitRank');
  const site = await siteOf('cpp', 'void f(){ ncclCommInitRank(&c, n, id, r); }', 'ncclCommInitRank');
  const hover = hoverMarkdown(a, site, hoverLinks(a));
  assert.match(hover, /\*localhost \(gpu0 and gpu1, 2 nodes\) · 16 ranks on 16× NVIDIA H100 80GB HBM3 · NCCL 2\\\.28\\\.9 · /, hover);
  assert.doesNotMatch(hover, /its host has/, hover);
  assert.match(profileLabel(store.profiles[0]!), /· 16 ranks on 16× NVIDIA H100 80GB HBM3 ·/);
});

test('like with like: a hover on init_process_group with device_id never reads the "without device_id" sentence; the NCCL init\'s own figures only', async () => {
  const run = read('h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json');
  const { a } = await annotate(run, 'init_process_group', true);
  const site = await siteOf('python', 'import torch\nimport torch.distributed as dist\ndist.init_process_group("nccl", device_id=torch.device("cuda", 0))\n', 'init_process_group');
  const md = hoverMarkdown(a, site, hoverLinks(a));
  assert.doesNotMatch(md, /without device_id/, md);
  assert.match(
    md,
    /This call passes device_id, and this run has no c10d figures to show where it pays: the NCCL init beneath \(experiment init\) takes 30\.1 ms in its call and 139 ms in the NCCL communicator's first collective, 170 ms in all\./,
    md,
  );
  // Without device_id the sentence is the one for a call without it.
  const { a: lazy } = await annotate(run, 'init_process_group', false);
  const bare = await siteOf('python', 'import torch.distributed as dist\ndist.init_process_group("nccl")\n', 'init_process_group');
  assert.match(hoverMarkdown(lazy, bare, hoverLinks(lazy)), /Without device_id the first collective pays the init \(30\.1 ms\)/);
});
