/**
 * Issue #28, hover and CodeLens wordings found misleading on the committed 1×H200 and 2×H200
 * NCCL 2.30.7 runs: a skip names the host's GPUs as the run's name does; a c10d call whose NCCL
 * call beneath was skipped says that skip as the call beneath's lens does; "Other variants" sets
 * the headline's quantity beside the headline; "nothing to connect" only on creation figures; the
 * device_id sentence on new_group / DeviceMesh is the default group's. Every test here failed on
 * the code before its fix.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { codeLensTitle, formatMs, hoverLinks, hoverMarkdown } from '../../readings/annotationText';
import { findings } from '../../readings/advice';
import { resolveAnnotation } from '../../readings/figures';
import type { StaleRules } from '../../readings/profiles';
import type { ApiName } from '../../sites/apiMap';
import type { CallSite } from '../../sites/callSites';
import type { RunFile } from '../../protocol/runFile';
import { RESULTS, ROOT, runFolder, scanText, storeOf } from '../support/annotationFixtures';

const RULES: StaleRules = { now: Date.parse('2026-12-02T00:00:00Z'), staleAfterDays: 30, expectedNcclVersion: '' };
const read = (name: string): RunFile => JSON.parse(readFileSync(join(RESULTS, name), 'utf8')) as RunFile;
const X1 = 'h200x1-2026-12-01/h200x1-nccl2.30.7-source.json';
const X2 = 'h200x2-2026-12-01/h200x2-nccl2.30.7-source.json';
/** Markdown escapes undone, to match sentences. */
const unescape = (md: string): string => md.replace(/\\([\\`*_{}[\]()#+\-.!:|<>])/g, '$1');
const median = (run: RunFile, e: string, v: string, s: string): number => {
  const x = run.experiments.find((y) => y.experiment === e)?.variants.find((y) => y.variant === v)?.steps.find((y) => y.step === s);
  assert.ok(x, `${e}/${v}/${s}`);
  return x.stats.median;
};

async function storeWith(run: RunFile) {
  return (await storeOf(runFolder([run]))).store;
}

/** A bare site of `api` (the hover reads its role and keywords only, as a C call would give). */
function bareSite(api: ApiName, role: string): CallSite {
  return { api, role, keywords: [], range: { start: { line: 0, character: 0 }, end: { line: 0, character: 1 } } } as unknown as CallSite;
}

test('#28.1 a skip names the host with the GPUs and count its run is named by; a run without GPU names keeps the host', async () => {
  const store = await storeWith(read(X1));
  const split = resolveAnnotation('ncclCommSplit', store.active, store.profiles, RULES);
  assert.equal(codeLensTitle(split), '⏱ skipped on localhost (1× H200): needs 2 GPUs, host has 1 · Measure on a host that meets it');
  assert.equal(split.missing?.reason, 'skipped on localhost (1× H200): needs 2 GPUs, host has 1');
  // shrink_group inherits the skip of the ncclCommShrink beneath: the GPUs and the call beneath in one parenthesis.
  const shrink = resolveAnnotation('shrink_group', store.active, store.profiles, RULES);
  assert.equal(shrink.missing?.reason, 'skipped on localhost (1× H200; the ncclCommShrink behind it, experiment shrink): needs 2 GPUs, host has 1');
  assert.equal(codeLensTitle(shrink), '⏱ skipped on localhost (1× H200): needs 2 GPUs, host has 1 · Measure on a host that meets it');
  // The hover names the active run as its label does, never by its host alone.
  const md = unescape(hoverMarkdown(split, bareSite('ncclCommSplit', 'create'), hoverLinks(split)));
  assert.match(md, /\nActive profile: 1× H200 · NCCL 2\.30\.7 · 2026-12-01 \d\d:\d\d UTC\n/, md);
  // The same rule on another GPU model and count: the words come from the stamp, not from this file.
  const other = read(X1);
  other.ranks = 2;
  other.stamp!.gpus = [0, 1].map((index) => ({ ...other.stamp!.gpus[0]!, name: 'NVIDIA A100-SXM4-80GB', index }));
  other.skipped = [{ experiment: 'split', reason: 'needs 4 GPUs, host has 2' }];
  const s2 = await storeWith(other);
  assert.equal(codeLensTitle(resolveAnnotation('ncclCommSplit', s2.active, s2.profiles, RULES)), '⏱ skipped on localhost (2× A100-SXM4-80GB): needs 4 GPUs, host has 2 · Measure on a host that meets it');
  // An old run file whose stamp names no GPU: the host alone, as before.
  const old = read(X1);
  old.stamp!.gpus = [];
  const s3 = await storeWith(old);
  assert.equal(codeLensTitle(resolveAnnotation('ncclCommSplit', s3.active, s3.profiles, RULES)), '⏱ skipped on localhost: needs 2 GPUs, host has 1 · Measure on a host that meets it');
  // A simulated run names no GPU model it did not run on.
  const sim = JSON.parse(readFileSync(join(ROOT, 'test', 'fixtures', 'runs', 'simulated-2ranks-init-split.json'), 'utf8')) as RunFile;
  sim.experiments = sim.experiments.filter((e) => e.experiment !== 'split');
  sim.skipped = [{ experiment: 'split', reason: 'needs 4 GPUs, host has 2' }];
  const s4 = await storeWith(sim);
  const p = s4.profiles[0]!;
  const lens = codeLensTitle(resolveAnnotation('ncclCommSplit', p, s4.profiles, RULES, { chosen: p }));
  assert.equal(lens, 'SIMULATED · ⏱ skipped on localhost: needs 4 GPUs, host has 2 · Measure on a host that meets it');
});

test('#28.2 split_group at 1 GPU: its lens says the skip of the ncclCommSplit beneath in the words of ncclCommSplit\'s own lens, and keeps its Measure', async () => {
  const store = await storeWith(read(X1));
  const nccl = codeLensTitle(resolveAnnotation('ncclCommSplit', store.active, store.profiles, RULES));
  const cause = /skipped on (.+?) · Measure/.exec(nccl)?.[1];
  assert.ok(cause, nccl);
  const c10d = resolveAnnotation('split_group', store.active, store.profiles, RULES);
  const lens = codeLensTitle(c10d);
  assert.equal(lens, `⏱ not measured in this run · the ncclCommSplit behind it was skipped on ${cause} · Measure this on localhost (a one-rank group there)`);
  // The hover says the same skip.
  assert.match(unescape(hoverMarkdown(c10d, bareSite('split_group', 'create'), hoverLinks(c10d))), /the ncclCommSplit behind it \(experiment split\) was skipped on localhost \(1× H200\): needs 2 GPUs, host has 1/);
  // Where nothing beneath was skipped (the split merely left out of a 2-GPU run), no skip is said.
  const two = read(X2);
  two.experiments = two.experiments.filter((e) => e.experiment !== 'split');
  const s2 = await storeWith(two);
  assert.equal(codeLensTitle(resolveAnnotation('split_group', s2.active, s2.profiles, RULES)), '⏱ not measured in this run · Measure this on localhost');
});

test('#28.3 the revoke hover\'s "Other variants" sets the headline\'s quantity beside the headline, named; a variant without it names its own', async () => {
  for (const name of [X1, X2]) {
    const run = read(name);
    const store = await storeWith(run);
    const a = resolveAnnotation('ncclCommRevoke', store.active, store.profiles, RULES);
    assert.equal(a.measured?.headline.step, 'revoke');
    const md = unescape(hoverMarkdown(a, bareSite('ncclCommRevoke', 'teardown'), hoverLinks(a)));
    const line = md.split('\n').find((l) => l.startsWith('Other variants'));
    assert.ok(line, md);
    assert.ok(line.startsWith('Other variants (ncclCommRevoke until quiet): '), line);
    for (const v of a.measured!.others) {
      const want = formatMs(median(run, 'revoke', v.variant, 'revoke'));
      assert.match(line, new RegExp(`${v.variant.replace(/[/-]/g, (c) => `\\${c}`)}: ${want.replace('.', '\\.')} \\(p90`), `${name}: ${line}`);
      // Never the variant's total (revoke + destroy, or revoke + shrink to first collective) unnamed.
      const total = formatMs(median(run, 'revoke', v.variant, 'total'));
      if (total !== want) assert.doesNotMatch(line, new RegExp(`${v.variant.replace(/[/-]/g, (c) => `\\${c}`)}: ${total.replace('.', '\\.')}`), line);
    }
  }
  // A variant whose run lacks the headline's step names the figure it gives instead (here the
  // teardown step the answer falls back to: the destroy after the revoke).
  const run = read(X1);
  const inflight = run.experiments.find((e) => e.experiment === 'revoke')!.variants.find((v) => v.variant === 'inflight/destroy')!;
  inflight.steps = inflight.steps.filter((s) => s.step !== 'revoke' && s.step !== 'revokeCall');
  const store = await storeWith(run);
  const a = resolveAnnotation('ncclCommRevoke', store.active, store.profiles, RULES);
  const md = unescape(hoverMarkdown(a, bareSite('ncclCommRevoke', 'teardown'), hoverLinks(a)));
  assert.match(md, new RegExp(`inflight/destroy: ncclCommDestroy after revoke ${formatMs(median(run, 'revoke', 'inflight/destroy', 'destroy'))} \\(p90`), md);
});

test('#28.4 at 1 rank a teardown, registration or suspend is a one-rank communicator, never "nothing to connect"; a creation keeps it', async () => {
  const store = await storeWith(read(X1));
  for (const [api, role] of [
    ['ncclCommRevoke', 'teardown'],
    ['ncclCommDestroy', 'teardown'],
    ['ncclCommFinalize', 'teardown'],
    ['ncclCommAbort', 'teardown'],
    ['destroy_process_group', 'teardown'],
    ['ncclCommRegister', 'register'],
    ['ncclCommSuspend', 'suspend'],
  ] as const) {
    const a = resolveAnnotation(api, store.active, store.profiles, RULES);
    assert.equal(a.entry.role, role, api);
    const md = unescape(hoverMarkdown(a, bareSite(api, role), hoverLinks(a)));
    assert.doesNotMatch(md, /nothing to connect/, `${api}: ${md}`);
    assert.match(md.split('\n')[0] ?? '', /\(one-rank communicator\)$/, `${api}: ${md}`);
  }
  const init = resolveAnnotation('ncclCommInitRank', store.active, store.profiles, RULES);
  assert.match(unescape(hoverMarkdown(init, bareSite('ncclCommInitRank', 'create'), hoverLinks(init))).split('\n')[0] ?? '', /\(one-rank communicator: nothing to connect\)$/);
});

const PY = `import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh, DeviceMesh

def setup():
    dist.init_process_group("nccl")
    tp = dist.new_group([0, 1])
    mesh = init_device_mesh("cuda", (2,))
    m2 = DeviceMesh("cuda", [0, 1])
    for i in range(4):
        g = dist.new_group([0, 1])
    return tp

def step(tp):
    dist.all_reduce(torch.ones(1, device="cuda"), group=tp)
`;

test('#28.5 new_group and DeviceMesh read the device_id sentence as the default group\'s, never as if the call should pass it; init_process_group keeps its own', async () => {
  for (const name of [X1, X2]) {
    const run = read(name);
    const store = await storeWith(run);
    const scan = await scanText('python', PY);
    const annotate = (api: ApiName, site: CallSite) => resolveAnnotation(api, store.active, store.profiles, RULES, { eager: site.eager === true });
    const total = formatMs(median(run, 'init', 'default', 'total'));
    for (const site of scan.sites.filter((s) => s.role === 'create')) {
      const a = annotate(site.api, site);
      const md = unescape(hoverMarkdown(a, site, hoverLinks(a)));
      if (site.api === 'init_process_group') {
        assert.match(md, /\nWithout device_id the first collective pays the init/, md);
        continue;
      }
      assert.ok(['new_group', 'init_device_mesh', 'DeviceMesh'].includes(site.api), site.api);
      assert.doesNotMatch(md, /without device_id the first collective/i, `${site.api}: ${md}`);
      assert.match(md, new RegExp(`The default group was created without device_id, so the first collective on this group pays the init .*, ${total.replace('.', '\\.')} in all`), `${site.api}: ${md}`);
    }
    // Advice: a new_group in a loop, and a group's cold first collective, say it of the default group.
    const found = findings(scan, annotate, PY);
    const loop = found.find((f) => f.code === 'commcost.creationInLoop');
    assert.ok(loop, found.map((f) => f.message).join('\n'));
    assert.doesNotMatch(loop.message, /\) without device_id costs/, loop.message);
    assert.match(loop.message, /paid only when a collective first runs on it \(the default group was created without device_id\)/, loop.message);
    for (const f of found.filter((x) => x.code === 'commcost.coldGroup')) {
      assert.doesNotMatch(f.message, /\(without device_id:/, f.message);
      assert.match(f.message, /\(no init_process_group in this file passes device_id: the init /, f.message);
    }
  }
  // The file's init_process_group passes device_id: new_group made eagerly by it is never said to pass device_id itself.
  const store = await storeWith(read(X1));
  const eagerPy = PY.replace('init_process_group("nccl")', 'init_process_group("nccl", device_id=torch.device("cuda", 0))');
  const eagerScan = await scanText('python', eagerPy);
  for (const site of eagerScan.sites.filter((s) => s.role === 'create')) {
    const a = resolveAnnotation(site.api, store.active, store.profiles, RULES, { eager: site.eager === true });
    const md = unescape(hoverMarkdown(a, site, hoverLinks(a)));
    if (site.api === 'init_process_group') assert.match(md, /\nThis call passes device_id, and this run has no c10d figures/, md);
    else assert.doesNotMatch(md, /this call passes device_id|without device_id/i, `${site.api}: ${md}`);
  }
  // Where the file has no init_process_group, the default group's way is not known: said as a condition.
  const bare = await scanText('python', 'import torch.distributed as dist\ntp = dist.new_group([0])\n');
  const site = bare.sites.find((s) => s.api === 'new_group')!;
  const a = resolveAnnotation('new_group', store.active, store.profiles, RULES, {});
  assert.match(unescape(hoverMarkdown(a, site, hoverLinks(a))), /\nIf the default group is created without device_id \(the code here does not show it\), the first collective on this group pays/);
});
