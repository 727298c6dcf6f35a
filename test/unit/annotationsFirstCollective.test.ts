// A lazy group's first collective: its figures are those of the creating API's lazy variant
// (new_group → new_group/lazy-default, the default group → init/lazy), its hover names the group
// and what it pays, it is never said to be paid each step, and a creation whose eagerness the
// code does not show says the lazy headline is an assumption.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { AnnotationModel } from '../../extension/annotations/annotationModel';
import { codeLensTitle, decorationLabel, formatMs, hoverLinks, hoverMarkdown } from '../../readings/annotationText';
import { resolveAnnotation } from '../../readings/figures';
import type { StaleRules } from '../../readings/profiles';
import type { RunFile } from '../../protocol/runFile';
import { CALLSITES, loadFinder, RESULTS, runFolder, storeOf } from '../support/annotationFixtures';

const c10d = JSON.parse(readFileSync(join(RESULTS, 'h200x2-torch2.11-nccl2.28.9-c10d.json'), 'utf8')) as RunFile;
const RULES: StaleRules = { now: Date.parse('2026-12-01T00:00:00Z'), staleAfterDays: 30, expectedNcclVersion: '' };
const unescape = (md: string) => md.replace(/\\(.)/g, '$1');
const first = (variant: string) => {
  const s = c10d.experiments
    .find((e) => e.experiment === 'c10d')
    ?.variants.find((v) => v.variant === variant)
    ?.steps.find((x) => x.step === 'first');
  assert.ok(s, `c10d/${variant}/first`);
  return s.stats;
};

const TRAIN = [
  'import torch.distributed as dist', // 1
  'tp = None', // 2
  'def setup():', // 3
  '    global tp', // 4
  '    dist.init_process_group("nccl")', // 5
  '    tp = dist.new_group([0, 1])', // 6
  'def train_step(x):', // 7
  '    dist.all_reduce(x, group=tp)', // 8: tp's first collective
  '    return x * 2', // 9
  '',
].join('\n');
const LAZY_FIRST = readFileSync(join(CALLSITES, 'lazy_first.py'), 'utf8');

test("a lazy group's first collective is answered by its creating API's lazy variant, and its hover names the group and what it pays once", async () => {
  const { store } = await storeOf(runFolder([c10d]));
  const model = new AnnotationModel(await loadFinder(), store, () => RULES);
  try {
    const sites = model.open('file:///train.py', 'python', TRAIN, 1).scan.sites.filter((s) => s.api === 'first_collective');
    const lazy = model.open('file:///lazy_first.py', 'python', LAZY_FIRST, 1).scan.sites.filter((s) => s.api === 'first_collective');
    const variants = (uri: string, list: typeof sites) =>
      list.map((s) => [s.range.start.line + 1, s.firstCollectiveOf?.api, model.annotateSite(uri, s).measured?.main.variant]);
    assert.deepEqual(variants('file:///train.py', sites), [[8, 'new_group', 'new_group/lazy-default']]);
    assert.deepEqual(variants('file:///lazy_first.py', lazy), [
      [8, 'init_process_group', 'init/lazy'],
      [20, 'new_group', 'new_group/lazy-default'],
    ]);
    const tp = sites[0];
    assert.ok(tp);
    assert.equal(tp.repeated, undefined, 'a first collective is not repeated: its connect is paid once');
    const a = model.annotateSite('file:///train.py', tp);
    const md = unescape(hoverMarkdown(a, tp, hoverLinks(a)));
    const s = first('new_group/lazy-default');
    assert.match(md.split('\n')[0] ?? '', /^\*\*commcost\*\* · `first_collective` → `c10d` · new_group\/lazy-default$/);
    assert.ok(
      md.includes(
        `First collective on \`tp\` (created at line 6 by new_group): pays the group's init + connect, ${formatMs(s.median)} (p90 ${formatMs(s.p90)}) — once, on this first call`,
      ),
      md,
    );
    assert.doesNotMatch(md, /paid each time/);
    const d = lazy[0];
    assert.ok(d);
    const ad = model.annotateSite('file:///lazy_first.py', d);
    assert.match(unescape(hoverMarkdown(ad, d, hoverLinks(ad))), /First collective on the default group \(created at line 17 by init_process_group\)/);
  } finally {
    model.dispose();
  }
});

test('the first collective of a split_group answers with split_group, of an unknown creation with the lazy variants in order', async () => {
  const { store } = await storeOf(runFolder([c10d]));
  const bySplit = resolveAnnotation('first_collective', store.active, store.profiles, RULES, { creator: 'split_group' });
  assert.equal(bySplit.measured?.main.variant, 'split_group');
  const unknown = resolveAnnotation('first_collective', store.active, store.profiles, RULES);
  assert.equal(unknown.measured?.main.variant, 'init/lazy');
});

test('a first collective in a per-step function is never said to be paid each time', async () => {
  const { store } = await storeOf(runFolder([c10d]));
  const model = new AnnotationModel(await loadFinder(), store, () => RULES);
  try {
    const site = model.open('file:///train.py', 'python', TRAIN, 1).scan.sites.find((s) => s.range.start.line === 7);
    assert.ok(site);
    // Even a site marked repeated (e.g. by another finder) says it pays once.
    const marked = { ...site, repeated: { kind: 'perStep' as const, detail: 'in train_step, which by its name runs per step' } };
    const a = model.annotateSite('file:///train.py', marked);
    const md = unescape(hoverMarkdown(a, marked, hoverLinks(a)));
    assert.doesNotMatch(md, /paid each time/, md);
    assert.match(md, /once, on this first call/);
  } finally {
    model.dispose();
  }
});

test('a creation whose eagerness the code does not show says the lazy headline is an assumption, not what an absent init passes', async () => {
  const { store } = await storeOf(runFolder([c10d]));
  const model = new AnnotationModel(await loadFinder(), store, () => RULES);
  try {
    const text = 'import torch.distributed as dist\ndef make(ranks):\n    return dist.new_group(ranks)\n';
    const site = model.open('file:///groups.py', 'python', text, 1).scan.sites.find((s) => s.api === 'new_group');
    assert.ok(site);
    assert.equal(site.eager, undefined);
    const a = model.annotateSite('file:///groups.py', site);
    const md = unescape(hoverMarkdown(a, site, hoverLinks(a)));
    assert.match(md, /The headline assumes a lazy init because the code does not show which; the eager variant is listed below\./);
    assert.doesNotMatch(md, /this file's init_process_group/);
    // A teardown has no eager fact of its own: the file's lazy init_process_group is what it says.
    const withInit = 'import torch.distributed as dist\ndist.init_process_group("nccl")\ndist.destroy_process_group()\n';
    const destroy = model.open('file:///destroy.py', 'python', withInit, 1).scan.sites.find((s) => s.api === 'destroy_process_group');
    assert.ok(destroy);
    const ad = model.annotateSite('file:///destroy.py', destroy);
    assert.match(unescape(hoverMarkdown(ad, destroy, hoverLinks(ad))), /The headline assumes a lazy init: no init_process_group in this file passes device_id/);
    // A teardown in a file with no init_process_group names no init that the file does not have.
    const alone = model.open('file:///teardown.py', 'python', 'import torch.distributed as dist\ndef stop():\n    dist.destroy_process_group()\n', 1);
    const lone = alone.scan.sites.find((s) => s.api === 'destroy_process_group');
    assert.ok(lone);
    const al = model.annotateSite('file:///teardown.py', lone);
    const loneMd = unescape(hoverMarkdown(al, lone, hoverLinks(al)));
    assert.match(loneMd, /no init_process_group in this file passes device_id/);
    assert.doesNotMatch(loneMd, /this file's init_process_group/);
  } finally {
    model.dispose();
  }
});

test("a lazy creation whose first collective is a line of its own gives its call and points there: one cost is not shown at two lines", async () => {
  const { store } = await storeOf(runFolder([c10d]));
  const model = new AnnotationModel(await loadFinder(), store, () => RULES);
  try {
    const stats = (step: string) =>
      c10d.experiments.find((e) => e.experiment === 'c10d')!.variants.find((v) => v.variant === 'new_group/lazy-default')!.steps.find((s) => s.step === step)!.stats;
    const sites = model.open('file:///train.py', 'python', TRAIN, 1).scan.sites;
    const create = sites.find((s) => s.api === 'new_group');
    assert.ok(create?.warmUp?.firstCollective, 'the finder follows tp to train_step');
    const a = model.annotateSite('file:///train.py', create);
    const lens = codeLensTitle(a, create);
    assert.match(lens, new RegExp(`^⏱ ${formatMs(stats('call').median).replace('.', '\\.')} call · its first collective \\(line 8\\) pays ${formatMs(stats('first').median)} ·`), lens);
    assert.doesNotMatch(lens, /to first collective/);
    assert.equal(decorationLabel(a, create)?.startsWith(`${formatMs(stats('call').median)} (+${formatMs(stats('first').median)} at line 8)`), true, decorationLabel(a, create));
    // Without the site (or with a warm-up right after the creation), the total to first collective stays the headline.
    assert.match(codeLensTitle(a), new RegExp(`^⏱ ${formatMs(stats('total').median)} to first collective`));
    const warm = 'import torch.distributed as dist\ndist.init_process_group("nccl")\ntp = dist.new_group([0, 1])\ndist.all_reduce(x, group=tp)\n';
    const w = model.open('file:///warm.py', 'python', warm, 1).scan.sites.find((s) => s.api === 'new_group');
    assert.ok(w);
    assert.match(codeLensTitle(model.annotateSite('file:///warm.py', w), w), /to first collective/);
  } finally {
    model.dispose();
  }
});
