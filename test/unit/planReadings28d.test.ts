/**
 * Issue #28, round 3 of the plan (the re-audit of main at 9eec4b8): each finding as a general rule,
 * on the committed runs (x2w 2×H200 NCCL 2.28.9 wheel, x2c its c10d run, s4w 1×H200 session 4) and
 * the simulated 2-rank fixture (init + split only):
 * - a strategy's step that needs a communicator the strategy already destroyed is not priced (FALSE 3);
 * - at 1 GPU the pool of every TP shape is the TP1 communicator: its memory is that figure (FALSE 4);
 * - a "not measured" reason names what this run lacks, never an experiment it does not have (FALSE 5);
 * - the split experiment's halves price the rebuild to TPn/2 where the pool is absent (MISLEADING 3);
 * - no mean of deferred work per switch when a switch is not measured (MISLEADING 4);
 * - the study's 8-GPU estimate carries "(setting not stated)" and is set beside the run's in GB (MISLEADING 9);
 * - a rebuild to the init experiment's shape is its `total` median, as the first page reads it (MISLEADING 11);
 * - a "needs X" reason only where the run's host lacks X (MISLEADING 12).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { validateRunFile } from '../../client/runFileSchema';
import { planReshape, type Plan, type StrategyPlan } from '../../readings/plan/planner';
import { planRecovery } from '../../readings/plan/recovery';
import { planSentences, studySentence } from '../../readings/plan/sentences';
import type { PlanRun } from '../../readings/plan/terms';
import type { RunFile } from '../../protocol/runFile';
import { asPlanRuns, fourRankRun } from './planRuns';
import { load } from './verdictRuns';

const X2W = 'h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json';
const X2C = 'h200x2-torch2.11-nccl2.28.9-c10d.json';
const S4W = 'h200x1-2026-12-02/h200x1-nccl2.28.9-wheel-session4.json';
const SIM = path.join(__dirname, '..', 'fixtures', 'runs', 'simulated-2ranks-init-split.json');
const runs = (file: string): PlanRun[] => [{ file, run: load(file) }];
const sim = (): PlanRun[] => [{ file: 'sim.json', run: validateRunFile(JSON.parse(fs.readFileSync(SIM, 'utf8'))) as RunFile }];
const by = (p: Plan, id: StrategyPlan['id']): StrategyPlan => p.strategies.find((s) => s.id === id)!;
const target = (s: StrategyPlan, shape: number) => {
  const t = s.perTarget?.find((x) => x.shape === shape);
  assert.ok(t, `${s.id} has a switch to TP${shape}`);
  return t;
};
const median = (run: RunFile, experiment: string, variant: string, step: string): number =>
  run.experiments.find((e) => e.experiment === experiment)!.variants.find((v) => v.variant === variant)!.steps.find((s) => s.step === step)!.stats.median;

test('FALSE 3: destroy now never prices a split of the parent it has just destroyed; lazy prices a split only while its parent lives', () => {
  const p = planReshape(runs(X2W));
  const now = by(p, 'destroy-now');
  // Before: "to TP1 553 ms" = the TP2 destroy 508 ms + a split of that destroyed TP2 into TP1 45.5 ms.
  assert.equal(target(now, 1).ms, undefined);
  assert.equal(target(now, 1).unpriced, true);
  assert.match(target(now, 1).why!, /needs the TP2 parent, which this strategy destroys before the switch/);
  assert.ok(!planSentences(p).some((l) => /553 ms/.test(l)), 'no sum of a destroy and a split of what it destroyed');
  assert.match(planSentences(p).find((l) => l.startsWith('on-demand rebuild, destroy now'))!, /to TP1 not priced \(/);
  // The lazy rebuild keeps TP2 until the TP1 split is made: priced (45.5 ms, the pool's on-demand rebuild).
  assert.ok(Math.abs(target(by(p, 'lazy'), 1).ms! - (median(load(X2W), 'pool', 'tp2+1', 'rebuild/call') + median(load(X2W), 'pool', 'tp2+1', 'rebuild/first'))) < 1e-9);
  // At 4 ranks the lazy cycle TP4 → TP2 → TP1 has destroyed TP4 by the switch to TP1: its split of TP4 is not priced.
  const four = planReshape(asPlanRuns(fourRankRun()));
  assert.equal(target(by(four, 'lazy'), 1).unpriced, true);
  assert.equal(target(by(four, 'lazy'), 2).ms, 45);
});

test('FALSE 4: at 1 GPU the pool of every TP shape is the TP1 communicator: its memory is that communicator\'s figure', () => {
  const p = planReshape(runs(S4W));
  const one = p.estimates.find((e) => e.gpus === 1)!;
  const afterFirst = load(S4W).experiments.find((e) => e.experiment === 'init')!.variants.find((v) => v.variant === 'default')!.memoryBytes!.afterFirst!;
  assert.equal(one.bytesPerGpu, afterFirst);
  assert.equal(one.measured, true);
  assert.match(one.basis, /^measured: at 1 GPU the pool is the one TP1 communicator, init\/default\/afterFirst/);
  // The first sentence's "holds 388 MiB per GPU here" and the estimate's line say the same figure.
  const lines = planSentences(p);
  assert.match(lines[0]!, /holds 388 MiB per GPU here/);
  assert.match(lines.find((l) => l.startsWith('1 GPU'))!, /^1 GPU \(measured\): .*388 MiB per GPU/);
  // A 1-rank run without the init experiment either (c10d only) says it lacks both.
  const c10d = planReshape(runs('h200x1-2026-12-01/h200x1-torch2.11-nccl2.28.9-c10d.json')).estimates.find((e) => e.gpus === 1)!;
  assert.equal(c10d.bytesPerGpu, undefined);
  assert.match(c10d.basis, /the runs have no pool experiment; nor the TP1 communicator's memory, which is the pool at 1 GPU \(the runs have no init experiment/);
});

test('FALSE 5: a "not measured" reason names what the run lacks, never a pool, destroy or suspend experiment it does not have', () => {
  for (const [name, r] of [['x2c', runs(X2C)], ['sim', sim()]] as const) {
    const text = planSentences(planReshape(r)).join('\n');
    assert.doesNotMatch(text, /the pool experiment times only/, name);
    assert.doesNotMatch(text, /the destroy experiment destroys/, name);
    assert.doesNotMatch(text, /the suspend experiment (resumes|suspends)/, name);
    assert.match(text, /switch to TP2 inside the pool: the runs have no pool experiment/, name);
    assert.match(text, /ncclCommFinalize \+ ncclCommDestroy TP1: the runs have no destroy experiment/, name);
  }
  // A run that has them keeps the description of what they time.
  assert.match(planSentences(planReshape(runs(X2W))).join('\n'), /the pool experiment times only the switch to TP1/);
});

test('MISLEADING 3: without a pool, the split experiment\'s halves (the same split of TP2 into TP1) price the on-demand rebuild to TP1, the source named', () => {
  const p = planReshape(sim());
  const lazy = by(p, 'lazy');
  const run = sim()[0]!.run;
  const halves = median(run, 'split', 'halves/splitShare=0', 'call') + median(run, 'split', 'halves/splitShare=0', 'first');
  assert.ok(Math.abs(target(lazy, 1).ms! - halves) < 1e-9, `${target(lazy, 1).ms} vs ${halves}`);
  const terms = lazy.critical.filter((t) => t.target === 1);
  assert.deepEqual(terms.map((t) => t.source && `${t.source.experiment}/${t.source.variant}/${t.source.step}`), ['split/halves/splitShare=0/call', 'split/halves/splitShare=0/first']);
  assert.match(terms[0]!.what, /the split experiment's halves.*the runs have no pool experiment/);
  // With every switch priced, the lazy rebuild has its mean: (TP2 total + the halves) / 2.
  assert.ok(lazy.criticalMs !== undefined);
});

test('MISLEADING 4: no mean of the deferred work per switch when a switch is not measured', () => {
  const grow = by(planReshape(runs(X2W)), 'grow');
  assert.ok(grow.perTarget!.every((x) => x.ms === undefined));
  assert.equal(grow.deferredMs, undefined, 'before: 254 ms per switch on average');
  const line = planSentences(planReshape(runs(X2W))).find((l) => l.startsWith('grow to the maximum topology'))!;
  assert.doesNotMatch(line, /per switch on average/);
  assert.match(line, /deferred to the background: to TP2 nothing; to TP1 508 ms/);
  // A strategy with nothing deferred still defers 0 ms.
  assert.equal(by(planReshape(runs(X2W)), 'pool').deferredMs, 0);
});

test('MISLEADING 9: the study\'s 8-GPU estimate says "(setting not stated)" and is set beside the run\'s figure in GB, the GiB after it', () => {
  const s = studySentence(planReshape(runs(X2W)));
  assert.match(s, /^the study estimated ~15 shapes, ~1 GB at 8 GPUs \(setting not stated\)/);
  const at8 = planReshape(runs(X2W)).estimates.find((e) => e.gpus === 8)!.bytesPerGpu!;
  assert.match(s, new RegExp(`15 communicators and ${Number((at8 / 1e9).toPrecision(3))} GB \\(2\\.08 GiB\\) per GPU \\(estimate\\)$`));
});

test('MISLEADING 11: the rebuild to TP2 is the init experiment\'s total median (170 ms, as the first page), not the sum of its step medians (169 ms)', () => {
  const run = load(X2W);
  const total = median(run, 'init', 'default', 'total');
  const sum = median(run, 'init', 'default', 'call') + median(run, 'init', 'default', 'first');
  assert.notEqual(Math.round(total), Math.round(sum), 'the two differ in this run');
  const p = planReshape(runs(X2W));
  assert.equal(target(by(p, 'lazy'), 2).ms, total);
  assert.equal(by(p, 'split').prepaidMs, total);
  assert.match(planSentences(p)[0]!, /to TP2 the on-demand rebuild is 170 ms/);
});

test('MISLEADING 12: a "needs X" reason only where the run\'s host lacks X (the stamp\'s NCCL version, its GPUs, torch)', () => {
  const x2c = planRecovery(runs(X2C));
  const whys = (p: typeof x2c) => p.paths.flatMap((x) => x.missing.map((t) => t.missing!.why));
  // x2c: NCCL 2.28.9 on 2 GPUs: never "needs NCCL ≥ 2.18.1", "≥ 2.27.3", "≥ 2.28.7" nor "2 GPUs"; grow's 2.29.2 is lacking and said.
  for (const w of whys(x2c)) {
    assert.doesNotMatch(w, /needs NCCL ≥ 2\.(18\.1|27\.3|28\.7)|2 GPUs/, w);
  }
  assert.ok(whys(x2c).some((w) => /ncclCommGrow needs NCCL ≥ 2\.29\.2 —/.test(w)));
  // x2w: torch 2.11.0 in the stamp: never "needs torch".
  const x2w = planRecovery(runs(X2W));
  assert.ok(!whys(x2w).some((w) => /needs torch/.test(w)), whys(x2w).join('\n'));
  assert.ok(whys(x2w).some((w) => /^not measured in this run: the runs have no c10d experiment/.test(w)));
  // A host without torch in its stamp is still told so.
  const noTorch = load(X2W);
  delete noTorch.stamp!.torchVersion;
  assert.ok(planRecovery([{ file: 'x.json', run: noTorch }]).paths.some((x) => x.missing.some((t) => /needs torch on the GPU host/.test(t.missing!.why))));
});
