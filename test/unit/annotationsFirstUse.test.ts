// A group first used by something other than an allreduce (issue #32): the first collective's site
// reads the run's variant first used that way (init's `default/first=broadcast`) and says so; a run
// without it gives the allreduce's figure and says that too.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { AnnotationModel } from '../../extension/annotations/annotationModel';
import { hoverLinks, hoverMarkdown } from '../../readings/annotationText';
import type { StaleRules } from '../../readings/profiles';
import type { RunFile } from '../../protocol/runFile';
import { firstUseKindOf } from '../../sites/apiMap';
import { loadFinder, RESULTS, runFolder, storeOf } from '../support/annotationFixtures';

const RULES: StaleRules = { now: Date.parse('2026-12-01T00:00:00Z'), staleAfterDays: 30, expectedNcclVersion: '' };
const unescape = (md: string) => md.replace(/\\(.)/g, '$1');
const base = JSON.parse(readFileSync(join(RESULTS, 'h200x2-2026-12-01', 'h200x2-nccl2.28.9-wheel.json'), 'utf8')) as RunFile;

/** The committed run with (synthetic, for the test) first-use variants of init: each `first` step set to `ms`. */
function withFirstUse(ms: Record<string, number>): RunFile {
  const run = structuredClone(base);
  run.experiments = run.experiments.filter((e) => e.experiment !== 'c10d');
  const init = run.experiments.find((e) => e.experiment === 'init')!;
  const plain = init.variants.find((v) => v.variant === 'default')!;
  for (const [variant, median] of Object.entries(ms)) {
    const v = structuredClone(plain);
    v.variant = variant;
    for (const s of v.steps) if (s.step === 'first') s.stats = { ...s.stats, median, p90: median };
    init.variants.push(v);
  }
  return run;
}

const job = (op: string) =>
  ['import torch.distributed as dist', 'tp = None', 'def setup():', '    global tp', '    dist.init_process_group("nccl")', '    tp = dist.new_group([0, 1])',
    'def step(x):', `    dist.${op}(x, 0, group=tp)`, ''].join('\n');

test('the first collective of a group first used by a broadcast reads the run\'s first=broadcast variant and says so', async () => {
  assert.equal(firstUseKindOf('broadcast'), 'broadcast');
  assert.equal(firstUseKindOf('isend'), 'sendrecv');
  assert.equal(firstUseKindOf('all_gather'), undefined);
  const { store } = await storeOf(runFolder([withFirstUse({ 'default/first=broadcast': 777 })]));
  const model = new AnnotationModel(await loadFinder(), store, () => RULES);
  try {
    const read = (op: string) => {
      const site = model.open(`file:///${op}.py`, 'python', job(op), 1).scan.sites.find((s) => s.api === 'first_collective');
      assert.ok(site, `a first collective in ${op}`);
      assert.equal(site.firstCollectiveOf?.collective, op);
      const a = model.annotateSite(`file:///${op}.py`, site);
      return { a, md: unescape(hoverMarkdown(a, site, hoverLinks(a))) };
    };
    const b = read('broadcast');
    assert.equal(b.a.measured?.main.variant, 'default/first=broadcast');
    assert.equal(b.a.measured?.firstUse, 'broadcast');
    assert.match(b.md, /first used by `broadcast`: the figure is the run's broadcast variant \(default\/first=broadcast\)/);
    const ar = read('all_reduce');
    assert.equal(ar.a.measured?.main.variant, 'default', 'an allreduce first use keeps the plain variant');
    const ag = read('all_gather');
    assert.equal(ag.a.measured?.main.variant, 'default');
    assert.match(ag.md, /first used by `all_gather`; the figure is the allreduce's/);
    const p2p = read('send');
    assert.equal(p2p.a.measured?.main.variant, 'default');
    assert.equal(p2p.a.measured?.firstUseAsked, 'sendrecv');
    assert.match(p2p.md, /measure it: --first-use sendrecv/);
  } finally {
    model.dispose?.();
  }
});
