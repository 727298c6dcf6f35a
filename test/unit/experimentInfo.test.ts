import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { validateRunFile } from '../../client/runFileSchema';
import {
  EXPERIMENT_DESCRIPTIONS,
  expectedDuration,
  experimentNeeds,
  defaultExperiments,
  formatDuration,
  hostFactsFrom,
  lastRunText,
  hostFactsOf,
  needsText,
  skippedNote,
  unavailableReason,
} from '../../readings/experimentInfo';
import { DEFAULT_RUN_OPTIONS, EXPERIMENT_IDS, type ExperimentId } from '../../protocol/events';
import { EXPERIMENT_NEEDS, versionCode } from '../../protocol/catalogue';
import { CATALOGUE } from '../../remote-agent/experiments/catalogue';

const root = join(__dirname, '..', '..');
const runOf = (name: string) =>
  validateRunFile(JSON.parse(readFileSync(join(root, 'docs', 'results', 'h200x2-2026-12-01', name), 'utf8')), name);

test('every experiment has a description; package.json offers every id with the same description', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const sections = Array.isArray(pkg.contributes.configuration) ? pkg.contributes.configuration : [pkg.contributes.configuration];
  const prop = sections.map((s: { properties: Record<string, any> }) => s.properties['commcost.experiments']).find((p: unknown) => p);
  assert.deepEqual(prop.items.enum, [...EXPERIMENT_IDS]);
  for (const id of EXPERIMENT_IDS) assert.ok(EXPERIMENT_DESCRIPTIONS[id].length > 20, id);
  assert.deepEqual(prop.items.enumDescriptions, EXPERIMENT_IDS.map((id) => EXPERIMENT_DESCRIPTIONS[id]));
});

test('needs are read from the experiment modules: grow NCCL ≥ 2.29.2 and 2 GPUs, revoke ≥ 2.28.7, suspend ≥ 2.29.7, destroy none', () => {
  assert.deepEqual(experimentNeeds('grow'), { minNccl: '2.29.2', minGpus: 2 });
  assert.equal(experimentNeeds('revoke').minNccl, '2.28.7');
  assert.equal(experimentNeeds('suspend').minNccl, '2.29.7');
  assert.equal(experimentNeeds('split').minGpus, 2);
  assert.equal(experimentNeeds('init').minGpus, undefined);
  assert.equal(needsText(experimentNeeds('destroy')), '');
  assert.equal(needsText(experimentNeeds('grow')), 'NCCL ≥ 2.29.2 · ≥ 2 GPUs');
  assert.match(needsText(experimentNeeds('c10d')), /torch/);
});

test('unavailable on a host whose last run had NCCL 2.28.9 on 2 GPUs: grow and suspend, with why; not on the simulated NCCL; nothing known: none', () => {
  const facts = hostFactsOf(runOf('h200x2-nccl2.28.9-wheel.json'));
  assert.deepEqual(facts, { ranks: 2, ncclVersion: '2.28.9', simulated: false });
  const out = EXPERIMENT_IDS.filter((id) => unavailableReason(id, facts, false));
  assert.deepEqual(out, ['grow', 'suspend']);
  assert.equal(unavailableReason('grow', facts, false), "needs NCCL ≥ 2.29.2, the host's last run loaded 2.28.9");
  assert.equal(unavailableReason('split', { ranks: 1, simulated: false }, false), "needs 2 GPUs, the host's last run had 1");
  assert.equal(unavailableReason('grow', facts, true), undefined, 'the simulated NCCL has every API');
  assert.match(unavailableReason('c10d', undefined, true) ?? '', /not with the simulated NCCL/);
  assert.equal(unavailableReason('grow', undefined, false), undefined);
});

test('a failed run is never the host\'s capability record: a failed no-GPU Measure, then Measure offers the same defaults as before it', () => {
  const good = runOf('h200x2-nccl2.28.9-wheel.json');
  // What a Measure that failed with no GPU saves (client/runModel.ts: no rank started).
  const noGpu = { ...good, id: 'failed-no-gpu', status: 'failed' as const, ranks: 0, experiments: [], stamp: { ...good.stamp!, gpus: [] } };
  const oneRankFailed = { ...noGpu, id: 'failed-one-rank', ranks: 1 };
  const wanted: ExperimentId[] = ['init', 'split', 'shrink', 'pool'];
  const before = defaultExperiments(wanted, [good], false);
  assert.deepEqual(before, wanted);
  assert.deepEqual(defaultExperiments(wanted, [noGpu, good], false), before, 'a failed no-GPU run drops nothing');
  assert.deepEqual(defaultExperiments(wanted, [oneRankFailed, noGpu, good], false), before);
  assert.deepEqual(hostFactsFrom([noGpu, good]), hostFactsOf(good));
  // Nothing but failed runs: nothing known (the same defaults as a host never measured).
  assert.equal(hostFactsFrom([noGpu, oneRankFailed]), undefined);
  assert.deepEqual(defaultExperiments(wanted, [oneRankFailed], false), defaultExperiments(wanted, [], false));
  // A run that ran on one GPU still gates split.
  assert.deepEqual(defaultExperiments(wanted, [{ ...good, ranks: 1 }], false), ['init', 'pool']);
});

test('expected duration: from the step medians of a saved run × iterations (a lower bound), else unknown — never invented', () => {
  const run = runOf('h200x2-nccl2.30.7-source.json');
  const e = run.experiments.find((x) => x.experiment === 'grow')!;
  let perIteration = 0;
  for (const v of e.variants) for (const s of v.steps) if (!s.sumOf) perIteration += s.stats.median;
  const text = expectedDuration('grow', 10, 1, [run]);
  assert.ok(text.startsWith(`≥ ${formatDuration(perIteration * 11)} timed at 10 iterations`), text);
  assert.match(text, /from the run of 2026-12-01/);
  assert.equal(expectedDuration('grow', 10, 1, [runOf('h200x2-nccl2.28.9-wheel.json')]), 'duration unknown until measured');
  assert.equal(expectedDuration('init', 10, 1, []), 'duration unknown until measured');
  assert.equal(formatDuration(860), '0.9 s');
  assert.equal(formatDuration(75_000), '75 s');
  assert.equal(formatDuration(600_000), '10.0 min');
});

test('the completion message says what was skipped and why (ncclCommGrow on NCCL 2.28.9), and when nothing was measured', () => {
  const run = runOf('h200x2-nccl2.28.9-wheel.json');
  assert.equal(skippedNote(run), ' — skipped: grow (needs NCCL ≥ 2.29.2, host has 2.28.9); suspend (needs NCCL ≥ 2.29.7, host has 2.28.9)');
  const onlyGrow = { skipped: [{ experiment: 'grow' as const, reason: 'needs NCCL ≥ 2.29.2, host has 2.28.9' }], experiments: [] };
  assert.equal(skippedNote(onlyGrow), ' — nothing measured: every experiment was skipped: grow (needs NCCL ≥ 2.29.2, host has 2.28.9)');
  assert.equal(skippedNote(runOf('h200x2-nccl2.30.7-source.json')), '');
});

// The catalogue (protocol/catalogue.ts) is the one table both sides read: every agent module's
// plan, asked at a host that lacks everything, skips for exactly the need the table gives, and
// plans once the need is met — so the picker's gate can never drift from the agent's.

const EVERY_SYMBOL = new Proxy({} as Record<string, boolean>, { get: () => true });
const skipAt = (id: ExperimentId, ranks: number, ncclVersionCode: number): string | undefined => {
  const p = CATALOGUE[id].plan({ ranks, ncclVersionCode, symbols: EVERY_SYMBOL, options: { ...DEFAULT_RUN_OPTIONS, experiments: [id] } });
  return 'skip' in p ? p.skip : undefined;
};

for (const id of EXPERIMENT_IDS.filter((x) => x !== 'c10d')) {
  test(`catalogue: ${id}'s module gates its plan on the catalogue's needs (${JSON.stringify(EXPERIMENT_NEEDS[id])})`, () => {
    const need = EXPERIMENT_NEEDS[id];
    const tooOld = skipAt(id, 1024, 0);
    if (need.minNccl) {
      assert.match(tooOld ?? '', new RegExp(`needs NCCL ≥ ${need.minNccl.replace(/\./g, '\\.')}`));
      assert.doesNotMatch(skipAt(id, 1024, versionCode(need.minNccl)) ?? '', /needs NCCL/, 'plans at its oldest NCCL');
    } else assert.doesNotMatch(tooOld ?? '', /needs NCCL/);
    const oneGpu = skipAt(id, 1, 99_99_99);
    if (need.minGpus && need.minGpus > 1) {
      assert.match(oneGpu ?? '', new RegExp(`needs ${need.minGpus} GPUs`));
      assert.equal(skipAt(id, need.minGpus, 99_99_99), undefined, `plans at ${need.minGpus} GPUs`);
    } else assert.doesNotMatch(oneGpu ?? '', /needs \d+ GPUs/);
  });
}

test("the Measure picker names the host's last run by its GPUs, NCCL and start, never by the host alone; a failed run is passed over", () => {
  const good = runOf('h200x2-nccl2.28.9-wheel.json');
  const noGpu = { ...good, id: 'failed-no-gpu', status: 'failed' as const, ranks: 0, experiments: [], stamp: { ...good.stamp!, gpus: [] } };
  const text = lastRunText('localhost', [noGpu, good]);
  assert.equal(text, `localhost's last run: ${good.ranks}× ${good.stamp!.gpus[0]!.name.replace(/^NVIDIA /, '')} · NCCL ${good.stamp!.ncclVersion} · ${good.stamp!.startedAt.slice(0, 16).replace('T', ' ')} UTC`);
  const sim = { ...good, simulated: true };
  assert.match(lastRunText('localhost', [sim]), /^localhost's last run: SIMULATED · 2 ranks · NCCL /);
  assert.doesNotMatch(lastRunText('localhost', [sim]), /H200/);
  assert.match(lastRunText('gpu-a', [noGpu]), /^nothing measured on gpu-a yet/);
});
