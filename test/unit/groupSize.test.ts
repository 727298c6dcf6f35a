/**
 * Group size from the code (issue #27, rule 1): where the code fixes the size of the group a
 * creation makes (split_ranks of one-element lists, a one-element rank list, a split colored by
 * the caller's own rank), the figures come from a variant of that size and a one-rank group reads
 * "one rank: nothing to connect", never "warm it up"; where the code does not fix it, the hover says
 * which size the figures are of. Each test failed on the code before the rule.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { scanCommand, type ScanReport } from '../../cli/scan';
import { findings } from '../../readings/advice';
import { codeLensTitle, hoverLinks, hoverMarkdown, reading } from '../../readings/annotationText';
import { resolveAnnotation } from '../../readings/figures';
import type { StaleRules } from '../../readings/profiles';
import type { RunFile } from '../../protocol/runFile';
import type { CallSite } from '../../sites/callSites';
import { RESULTS, runFolder, scanText, storeOf } from '../support/annotationFixtures';

const RULES: StaleRules = { now: Date.parse('2026-12-02T00:00:00Z'), staleAfterDays: 3650, expectedNcclVersion: '' };
const read = (name: string): RunFile => JSON.parse(readFileSync(join(RESULTS, name), 'utf8')) as RunFile;
const C10D = 'h200x2-torch2.11-nccl2.28.9-c10d.json';
const WHEEL = 'h200x2-nccl2.28.9-wheel.json';

const sizeOf = async (language: 'python' | 'cpp', text: string, written: string): Promise<number | undefined> =>
  (await scanText(language, text)).sites.find((s) => s.written === written)?.groupSize;

test('group size: the finder records the size the code fixes, and none where it does not', async () => {
  const py = (call: string): string => `import torch.distributed as dist\ndef f(rank, world, ranks):\n    g = ${call}\n`;
  assert.equal(await sizeOf('python', py('dist.split_group(split_ranks=[[r] for r in range(world)])'), 'dist.split_group'), 1);
  assert.equal(await sizeOf('python', py('dist.split_group(None, [[0, 1], [2, 3]])'), 'dist.split_group'), 2);
  assert.equal(await sizeOf('python', py('dist.split_group(None, [[0, 1], [2]])'), 'dist.split_group'), undefined);
  assert.equal(await sizeOf('python', py('dist.new_group([rank])'), 'dist.new_group'), 1);
  assert.equal(await sizeOf('python', py('dist.new_group(ranks=[0, 1, 2, 3], backend="nccl")'), 'dist.new_group'), 4);
  assert.equal(await sizeOf('python', py('dist.new_group(ranks)'), 'dist.new_group'), undefined);
  assert.equal(await sizeOf('python', py('dist.new_group([*ranks])'), 'dist.new_group'), undefined);
  assert.equal(await sizeOf('python', py('dist.new_subgroups(group_size=2)'), 'dist.new_subgroups'), 2);
  const c = (color: string): string => `#include <nccl.h>\nvoid f(ncclComm_t comm, int rank, int my_rank) {\n  ncclComm_t a;\n  ncclCommSplit(comm, ${color}, rank, &a, NULL);\n}\n`;
  assert.equal(await sizeOf('cpp', c('rank'), 'ncclCommSplit'), 1);
  assert.equal(await sizeOf('cpp', c('my_rank'), 'ncclCommSplit'), 1);
  assert.equal(await sizeOf('cpp', c('rank % 2'), 'ncclCommSplit'), undefined);
  assert.equal(await sizeOf('cpp', c('0'), 'ncclCommSplit'), undefined);
});

/** The annotation of `site` over the runs of `runs`, given its group size as the editor gives it. */
async function annotated(runs: RunFile[], site: CallSite) {
  const { store } = await storeOf(runFolder(runs));
  const annotate = (api: CallSite['api'], s?: CallSite) =>
    resolveAnnotation(api, store.active, store.profiles, RULES, s?.groupSize !== undefined ? { groupSize: s.groupSize } : {});
  return { a: annotate(site.api, site), annotate };
}

test('group size: split_group(split_ranks=[[r] for r in range(world)]) reads the one-rank split, "one rank: nothing to connect", never the 2-rank child\'s 150 ms nor "warm it up"', async () => {
  const text = 'import torch.distributed as dist\n\ndef f(world):\n    g = dist.split_group(split_ranks=[[r] for r in range(world)])\n    x = 1\n    dist.all_reduce(x, group=g)\n';
  const scan = await scanText('python', text);
  const site = scan.sites.find((s) => s.api === 'split_group')!;
  const { a, annotate } = await annotated([read(C10D), read(WHEEL)], site);
  const m = a.measured!;
  assert.equal(m.main.childRanks, 1, `variant ${m.main.variant}`);
  assert.match(reading(a) ?? '', /^one rank: nothing to connect/);
  const lens = codeLensTitle(a, site, scan.sites);
  assert.match(lens, /one rank: nothing to connect/, lens);
  assert.doesNotMatch(lens, /149|150/, lens);
  const hover = hoverMarkdown(a, site, hoverLinks(a));
  assert.match(hover, /One rank: nothing to connect/, hover);
  const advice = findings(scan, annotate, text);
  assert.ok(!advice.some((f) => /warm it up/.test(f.message)), advice.map((f) => f.message).join('\n'));
});

test('group size: new_group([rank]) with no one-rank variant in the run says the figures are of a 2-rank group and not what it pays; no warm-up advice', async () => {
  const text = 'import torch.distributed as dist\n\ndef f(rank):\n    g = dist.new_group([rank])\n    x = 1\n    dist.all_reduce(x, group=g)\n';
  const scan = await scanText('python', text);
  const site = scan.sites.find((s) => s.api === 'new_group')!;
  const { a, annotate } = await annotated([read(C10D)], site);
  assert.match(reading(a) ?? '', /^one rank: nothing to connect: .*of a 2-rank group\) are not what this call pays/);
  // No one-rank figure in the run: the lens says so, never the 2-rank figure as its headline (#28c).
  assert.match(codeLensTitle(a, site, scan.sites), /^⏱ one rank: nothing to connect · no figure for a one-rank group in this run \(its figures are of a 2-rank one\) — /);
  assert.deepEqual(
    findings(scan, annotate, text).filter((f) => f.code === 'commcost.coldGroup'),
    [],
  );
  // The same group of a size the code does not fix: the warm-up advice stays, and the hover says which size the figures are of.
  const open = text.replace('[rank]', 'ranks').replace('f(rank)', 'f(ranks)');
  const openScan = await scanText('python', open);
  const openSite = openScan.sites.find((s) => s.api === 'new_group')!;
  assert.equal(openSite.groupSize, undefined);
  const o = await annotated([read(C10D)], openSite);
  assert.equal(findings(openScan, o.annotate, open).filter((f) => f.code === 'commcost.coldGroup').length, 1);
  assert.match(hoverMarkdown(o.a, openSite, hoverLinks(o.a)), /Figures of a 2-rank group: the code does not fix this group's size\./);
});

test('group size: commcost scan of ncclCommSplit(comm, rank, …) gives the one-rank split (halves on 2 ranks) and its group size', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'commcost-size-'));
  writeFileSync(join(dir, 'split.cc'), '#include <nccl.h>\nvoid f(ncclComm_t comm, int rank) {\n  ncclComm_t a;\n  ncclCommSplit(comm, rank, rank, &a, NULL);\n}\n');
  let out = '';
  assert.equal(await scanCommand(['.'], { json: true, run: join(RESULTS, WHEEL) }, { out: (t) => (out += t), err: () => {}, cwd: dir }), 0);
  const site = (JSON.parse(out) as ScanReport).sites.find((s) => s.api === 'ncclCommSplit')!;
  assert.equal(site.groupSize, 1);
  assert.equal(site.figure?.childRanks, 1);
  assert.match(site.figure?.variant ?? '', /^halves\//);
});
