/**
 * Issue #28, round 2 of the hover and quick-fix readings (a new user's audit, FALSE 4 and 6,
 * MISLEADING 5 and 6), on the committed c10d runs (2×H200 and 1×H200, torch 2.11, NCCL 2.28.9):
 * the first collective's words follow the ranks of its figure; a share is of call + first in whole
 * percent (docs/METHOD.md "Percentages"); the device_id quick fix is priced by what the user pays
 * to the first collective with and without, and says noise where the totals show no saving; a
 * group the code makes of a size the run has no figure for never leads its lens, label or scan row
 * with another size's figure. Every test here failed on the code before its fix.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { scanCommand } from '../../cli/scan';
import { findings } from '../../readings/advice';
import { codeLensTitle, decorationLabel, formatMs, hoverLinks, hoverMarkdown } from '../../readings/annotationText';
import { resolveAnnotation } from '../../readings/figures';
import type { StaleRules } from '../../readings/profiles';
import { siteIsEager } from '../../readings/siteVariant';
import type { RunFile } from '../../protocol/runFile';
import type { ApiName } from '../../sites/apiMap';
import type { CallSite } from '../../sites/callSites';
import { nodeModulesGrammars } from '../../sites/callSites';
import { RESULTS, ROOT, runFolder, scanText, storeOf } from '../support/annotationFixtures';

const RULES: StaleRules = { now: Date.parse('2026-12-02T00:00:00Z'), staleAfterDays: 3650, expectedNcclVersion: '' };
const C10D_X2 = 'h200x2-torch2.11-nccl2.28.9-c10d.json';
const C10D_X1 = 'h200x1-2026-12-01/h200x1-torch2.11-nccl2.28.9-c10d.json';
const WHEEL_X2 = 'h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json';
const read = (name: string): RunFile => JSON.parse(readFileSync(join(RESULTS, name), 'utf8')) as RunFile;
const unescape = (md: string): string => md.replace(/\\([\\`*_{}[\]()#+\-.!:|<>])/g, '$1');
/** A step's median as the run file holds it (read apart from the code under test). */
function median(run: RunFile, variant: string, step: string): number {
  const s = run.experiments.find((e) => e.experiment === 'c10d')?.variants.find((v) => v.variant === variant)?.steps.find((x) => x.step === step);
  assert.ok(s, `c10d/${variant}/${step}`);
  return s.stats.median;
}

/** Lens, label and hover of every site of `text` over `runs`, as the editor asks (eager facts, group size, creator). */
async function annotateAll(runs: RunFile[], text: string) {
  const { store } = await storeOf(runFolder(runs));
  const scan = await scanText('python', text);
  const annotate = (api: ApiName, site: CallSite) =>
    resolveAnnotation(api, store.active, store.profiles, RULES, {
      eager: siteIsEager(site, scan.sites),
      ...(site.firstCollectiveOf?.api ? { creator: site.firstCollectiveOf.api } : {}),
      ...(site.groupSize !== undefined ? { groupSize: site.groupSize } : {}),
    });
  const sites = scan.sites.map((site) => {
    const a = annotate(site.api, site);
    return { site, a, lens: codeLensTitle(a, site, scan.sites), label: decorationLabel(a, site, scan.sites) ?? '', hover: unescape(hoverMarkdown(a, site, hoverLinks(a))) };
  });
  const advice = findings(scan, (api, site) => resolveAnnotation(api, store.active, store.profiles, RULES, site.groupSize !== undefined ? { groupSize: site.groupSize } : {}), text);
  return { sites, advice };
}

const LAZY = `import torch
import torch.distributed as dist

def step(x):
    dist.all_reduce(x)

def setup():
    dist.init_process_group("nccl")
    step(torch.ones(1, device="cuda"))
    dist.barrier()
`;

test('#28c FALSE 4: the first collective after a lazy init reads the figure\'s ranks: at 1 rank nothing to connect, never "init + connect"; at 2 ranks init + connect', async () => {
  for (const [name, ranks] of [
    [C10D_X1, 1],
    [C10D_X2, 2],
  ] as const) {
    const run = read(name);
    assert.equal(run.ranks, ranks);
    const { sites } = await annotateAll([run], LAZY);
    const fc = sites.find((s) => s.site.api === 'first_collective');
    assert.ok(fc, name);
    assert.equal(fc.site.groupSize, undefined, 'the code does not fix the default group\'s size: the run decides');
    const line = fc.hover.split('\n').find((l) => l.startsWith('First collective on the default group')) ?? '';
    const first = formatMs(median(run, 'init/lazy', 'first'));
    if (ranks === 1) {
      assert.doesNotMatch(line, /connect,|init \+ connect/, line);
      assert.match(line, new RegExp(`pays the group's init, ${first.replace('.', '\\.')} \\(p90 [^)]+\\), as a one-rank group in this run: nothing to connect`), line);
    } else assert.match(line, new RegExp(`pays the group's init \\+ connect, ${first.replace('.', '\\.')} \\(p90`), line);
  }
});

test('#28c FALSE 6: a creation\'s share is of call + first, in whole percent (one decimal only near 100%), with its two parts and never their sum as a second total', async () => {
  const text = `import torch
import torch.distributed as dist
dist.init_process_group("nccl", device_id=torch.device("cuda", 0))
`;
  const lazyText = 'import torch.distributed as dist\ndist.init_process_group("nccl")\n';
  const x2 = read(C10D_X2);
  const eager = (await annotateAll([x2], text)).sites.find((s) => s.site.api === 'init_process_group')!;
  assert.equal(eager.a.measured?.main.variant, 'init/eager');
  // 146.7 / (42.18 + 146.7) = 78%, never the share of the median total (147 of 186 ms = 79%).
  const call = median(x2, 'init/eager', 'call');
  const first = median(x2, 'init/eager', 'first');
  assert.equal(Math.round((100 * first) / (call + first)), 78);
  assert.match(eager.hover, /\n78% of this init_process_group is paid in its first collective \(of the call \+ first collective, 42\.2 \+ 147 ms\)\.\n/, eager.hover);
  assert.doesNotMatch(eager.hover, /79%|of 186 ms/, eager.hover);
  // Near 100%: one decimal (never "99.73%", never a sum "191 ms of 192 ms").
  const lazy = (await annotateAll([x2], lazyText)).sites.find((s) => s.site.api === 'init_process_group')!;
  assert.match(lazy.hover, /\n99\.7% of this init_process_group is paid in its first collective \(of the call \+ first collective, 0\.500 \+ 191 ms\)/, lazy.hover);
  assert.doesNotMatch(lazy.hover, /\d\.\d\d%/, lazy.hover);
  // Every share the hovers of both runs print is a whole percent, or one decimal under 1% or near 100%.
  for (const name of [C10D_X1, C10D_X2])
    for (const t of [text, lazyText, LAZY])
      for (const s of (await annotateAll([read(name)], t)).sites)
        for (const p of s.hover.match(/\d+(?:\.\d+)?%/g) ?? []) assert.match(p, /^(\d+|0\.\d|99\.\d)%$/, `${name} ${s.site.api}: ${p}\n${s.hover}`);
});

test('#28c MISLEADING 5: the device_id quick fix prices what is paid to the first collective with and without, says noise where the totals show no saving, and names the GPUs', async () => {
  for (const [name, gpus] of [
    [C10D_X2, '2× H200'],
    [C10D_X1, '1× H200'],
  ] as const) {
    const run = read(name);
    const { advice } = await annotateAll([run], LAZY);
    const fix = advice.find((f) => f.code === 'commcost.lazyInit');
    assert.ok(fix?.fix, `${name}: ${advice.map((f) => f.message).join('\n')}`);
    const without = formatMs(median(run, 'init/lazy', 'total'));
    const withIt = formatMs(median(run, 'init/eager', 'total'));
    const title = fix.fix.title;
    assert.ok(title.includes(`to the first collective on localhost (${gpus})`), title);
    assert.ok(title.includes(`${without} without, ${withIt} with it`), title);
    // 191.8 against 186.2 ms, 48.8 against 43.8 ms: the samples overlap, no saving is promised.
    assert.match(title, /within the run's noise: no saving shown/, title);
    assert.doesNotMatch(title, /less with it|took ~/, title);
    assert.match(fix.message, new RegExp(`takes ${without.replace('.', '\\.')} \\(the call [^)]+\\) without device_id and ${withIt.replace('.', '\\.')} \\(the call `), fix.message);
  }
  // The same rule where the totals do differ beyond their spread: the saving is said, from the totals.
  const run = read(C10D_X2);
  const eagerTotal = run.experiments.find((e) => e.experiment === 'c10d')!.variants.find((v) => v.variant === 'init/eager')!.steps.find((s) => s.step === 'total')!;
  const lazyTotal = median(run, 'init/lazy', 'total');
  const scale = (x: number): number => x / 4;
  eagerTotal.samples = eagerTotal.samples.map(scale);
  eagerTotal.stats = { ...eagerTotal.stats, median: scale(eagerTotal.stats.median), p90: scale(eagerTotal.stats.p90), min: scale(eagerTotal.stats.min), max: scale(eagerTotal.stats.max), mean: scale(eagerTotal.stats.mean) };
  const title = (await annotateAll([run], LAZY)).advice.find((f) => f.code === 'commcost.lazyInit')?.fix?.title ?? '';
  assert.ok(title.includes(`${formatMs(lazyTotal)} without, ${formatMs(eagerTotal.stats.median)} with it, ${formatMs(lazyTotal - eagerTotal.stats.median)} less with it`), title);
});

const SPLIT = `import torch.distributed as dist

def make():
    g = dist.split_group(split_ranks=[[0], [1]])
    return g
`;

test('#28c MISLEADING 6: split_group of one-rank groups with no one-rank figure in the run: lens, label and scan never lead with the 2-rank figure', async () => {
  const x2 = read(C10D_X2);
  const { sites } = await annotateAll([x2], SPLIT);
  const s = sites.find((x) => x.site.api === 'split_group')!;
  assert.equal(s.site.groupSize, 1);
  assert.equal(s.a.measured?.main.childRanks, 2);
  const two = formatMs(median(x2, 'split_group', 'total'));
  for (const text of [s.lens, s.label]) {
    assert.ok(!text.includes(two), `${two} in: ${text}`);
    assert.match(text, /^(⏱ )?one rank: nothing to connect · no figure for a one-rank group in this run \(its figures are of a 2-rank one\)/, text);
  }
  // The hover keeps the table and says the figures are not what this call pays.
  assert.match(s.hover, /so these figures \(of a 2-rank group\) are not what this call pays/);
  // commcost scan's row says the same.
  const dir = mkdtempSync(join(tmpdir(), 'commcost-28c-'));
  writeFileSync(join(dir, 'split.py'), SPLIT);
  let out = '';
  assert.equal(await scanCommand(['.'], { run: join(RESULTS, C10D_X2) }, { out: (t) => (out += t), err: () => undefined, cwd: dir, grammars: nodeModulesGrammars(ROOT) }), 0);
  const row = out.split('\n').find((l) => l.includes('split.py:4')) ?? '';
  assert.match(row, /one rank: nothing to connect · no figure for a one-rank group in this run/, out);
  assert.ok(!row.includes(two), row);
  // Where the runs have a one-rank figure (the 1-rank run; the NCCL split's halves beside c10d), it leads.
  const x1 = read(C10D_X1);
  const one = (await annotateAll([x1], SPLIT)).sites.find((x) => x.site.api === 'split_group')!;
  assert.ok(one.lens.startsWith(`⏱ ${formatMs(median(x1, 'split_group', 'total'))} to first collective`), one.lens);
  assert.match(one.lens, / · one rank: nothing to connect — /, one.lens);
  const both = (await annotateAll([x2, read(WHEEL_X2)], SPLIT)).sites.find((x) => x.site.api === 'split_group')!;
  assert.equal(both.a.measured?.main.childRanks, 1);
  assert.match(both.lens, /^⏱ [\d.]+ m?s [^·]+ · .*one rank: nothing to connect/, both.lens);
});
