// An experiment the active run did not ask for and its host cannot run (the Measure picker's gate,
// experimentInfo.ts unavailableReason, at the GPUs the run's stamp lists): the site says so and
// offers another host, never a Measure action that the agent would skip.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { AnnotationModel } from '../../extension/annotations/annotationModel';
import { codeLensTitle, hoverLinks, hoverMarkdown, skipGate } from '../../readings/annotationText';
import { resolveAnnotation } from '../../readings/figures';
import type { StaleRules } from '../../readings/profiles';
import { experimentNeeds, unavailableReason } from '../../readings/experimentInfo';
import type { RunFile } from '../../protocol/runFile';
import { loadFinder, RESULTS, runFolder, scanText, storeOf } from '../support/annotationFixtures';

const RULES: StaleRules = { now: Date.parse('2026-12-02T00:00:00Z'), staleAfterDays: 30, expectedNcclVersion: '' };
const read = (name: string): RunFile => JSON.parse(readFileSync(join(RESULTS, name), 'utf8')) as RunFile;

test('1-GPU c10d run that did not ask for split: ncclCommSplit says split needs more GPUs than localhost has, and offers no Measure there', async () => {
  const run = read('h200x1-trace-2026-12-01/h200x1-nccl2.28.9-init-coldstart-c10d.json');
  assert.equal(run.stamp?.gpus.length, 1);
  assert.ok(!run.experiments.some((e) => e.experiment === 'split') && !run.skipped.some((x) => x.experiment === 'split'), 'the run neither measured nor skipped split');
  const need = experimentNeeds('split').minGpus;
  assert.ok(need !== undefined && need > 1, `split needs ${need} GPUs`);
  const { store } = await storeOf(runFolder([run]));
  const gate = unavailableReason('split', { ranks: 1, ncclVersion: '2.28.9', simulated: false }, false);
  assert.ok(gate);
  const a = resolveAnnotation('ncclCommSplit', store.active, store.profiles, RULES, { unavailable: unavailableReason });
  assert.equal(a.missing?.cannotRun, gate);
  assert.equal(skipGate(a), gate);
  assert.equal(codeLensTitle(a), `⏱ split on localhost (1× H200): ${gate} · Measure on a host that meets it`);
  assert.match(a.missing?.reason ?? '', /^not measured in this run; experiment split cannot run on localhost \(1× H200\): needs \d+ GPUs/);
  const site = (await scanText('cpp', '#include <nccl.h>\nvoid f(ncclComm_t c, ncclComm_t* o) { ncclCommSplit(c, 0, 0, o, NULL); }\n')).sites.find((x) => x.api === 'ncclCommSplit');
  assert.ok(site);
  const md = hoverMarkdown(a, site, hoverLinks(a));
  assert.doesNotMatch(md, /\[Measure this on localhost\]/, md);
  assert.match(md, /localhost cannot run it as measured/, md);

  // An experiment the host can run (destroy on one GPU) keeps its Measure action, and without the gate nothing changes.
  const ungated = resolveAnnotation('ncclCommSplit', store.active, store.profiles, RULES);
  assert.equal(ungated.missing?.cannotRun, undefined);
  assert.equal(codeLensTitle(ungated), '⏱ not measured in this run · Measure this on localhost');
  const destroy = resolveAnnotation('ncclCommDestroy', store.active, store.profiles, RULES, { unavailable: unavailableReason });
  assert.equal(destroy.missing?.cannotRun, undefined);
  assert.equal(skipGate(destroy), undefined);

  // The same run on a host whose stamp lists 2 GPUs can run split: Measure stays.
  const two = read('h200x1-trace-2026-12-01/h200x1-nccl2.28.9-init-coldstart-c10d.json');
  two.stamp!.gpus = [...two.stamp!.gpus, { ...two.stamp!.gpus[0]!, ordinal: 1 }];
  const { store: s2 } = await storeOf(runFolder([two]));
  const b = resolveAnnotation('ncclCommSplit', s2.active, s2.profiles, RULES, { unavailable: unavailableReason });
  assert.equal(b.missing?.cannotRun, undefined);
  assert.equal(codeLensTitle(b), '⏱ not measured in this run · Measure this on localhost');
});

test('the annotation model: a site is gated once the gate is given (setGate, as register.ts does after loading experimentInfo), and the annotations made before it are forgotten', async () => {
  const run = read('h200x1-trace-2026-12-01/h200x1-nccl2.28.9-init-coldstart-c10d.json');
  const { store } = await storeOf(runFolder([run]));
  const model = new AnnotationModel(await loadFinder(), store, () => RULES);
  const uri = 'file:///split.cpp';
  const site = model.open(uri, 'cpp', '#include <nccl.h>\nvoid f(ncclComm_t c, ncclComm_t* o) { ncclCommSplit(c, 0, 0, o, NULL); }\n', 1).scan.sites.find((x) => x.api === 'ncclCommSplit');
  assert.ok(site);
  assert.equal(codeLensTitle(model.annotateSite(uri, site)), '⏱ not measured in this run · Measure this on localhost', 'no gate yet');
  model.setGate(unavailableReason);
  const gated = model.annotateSite(uri, site);
  assert.equal(gated.missing?.cannotRun, unavailableReason('split', { ranks: 1, ncclVersion: '2.28.9', simulated: false }, false));
  assert.match(codeLensTitle(gated), /^⏱ split on localhost \(1× H200\): needs \d+ GPUs.* · Measure on a host that meets it$/);
});
