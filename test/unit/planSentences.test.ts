/**
 * The plan's sentences at 1, 2 and 4 ranks, on recorded runs (docs/results) and simulated ones:
 * each chosen by the figures it states; a missing term said missing, with why. And `commcost
 * plan` end to end on the committed 2×H200 runs (the table, the sources, bad input).
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { test } from 'node:test';
import { planReshape } from '../../readings/plan/planner';
import { planSentences, poolSentence, strategySentence } from '../../readings/plan/sentences';
import { formatPlan, planCommand } from '../../cli/plan';
import { CommcostError } from '../../client/errors';
import { asPlanRuns, fourRankRun, h200x1, h200x2 } from './planRuns';

const GiB = 2 ** 30;
const inputs = { switchEveryMs: 2000, stepMs: 30, budget: { bytes: 60 * GiB } };

test('2 ranks, recorded: the study\'s sentence with the run\'s own figures', () => {
  const plan = planReshape(h200x2(), inputs);
  assert.equal(
    poolSentence(plan),
    // Like with like per shape switched to (issue #28): the pool's switch was timed to TP1 only.
    "on this host (2× NVIDIA H200, NCCL 2.28.9), a pool of 2 shapes costs 872 MiB per GPU, 1.4% of a 60 GiB budget: to TP2 the on-demand rebuild is 176 ms (ncclCommInitRankConfig TP2 + first collective TP2) and the pool's switch is not measured (switch to TP2 inside the pool: the pool experiment times only the switch to TP1 (pool/tp2+1/switch); no switch to TP2); to TP1 it turns a 49.2 ms on-demand rebuild (ncclCommSplit into TP1 + first collective TP1) into a 0.023 ms switch; no figure per switch on average: a switch to one of the shapes was not measured",
  );
  const lines = planSentences(plan);
  assert.ok(lines.includes('on-demand rebuild (lazy connect): 112 ms on the critical path per switch (the mean over the shapes switched to: to TP2 176 ms, to TP1 49.2 ms): 3.7× a 30 ms step once, 5.6% amortised over 2 s; deferred to the background: to TP2 not measured (ncclCommFinalize + ncclCommDestroy TP1: the destroy experiment destroys a TP2 communicator; the runs time no destroy of a TP1 one); to TP1 508 ms; holds 484 MiB per GPU, 0.79% of a 60 GiB budget'), lines.join('\n'));
  assert.ok(lines.some((l) => l.startsWith('pool kept suspended: no switch measured — to TP2 not measured (ncclCommResume of TP2: suspend was skipped in h200x2-nccl2.28.9-wheel.catalogue.json: needs NCCL ≥ 2.29.7, host has 2.28.9); to TP1 not measured (ncclCommResume of TP1: suspend was skipped in h200x2-nccl2.28.9-wheel.catalogue.json: needs NCCL ≥ 2.29.7, host has 2.28.9)')), lines.join('\n'));
  assert.ok(lines.some((l) => l.startsWith('8 GPUs (estimate): a pool of every TP shape (TP8 + TP4 + TP2 + TP1) is 15 communicators, 4 per GPU, 2.08 GiB per GPU — estimate: sizes 2, 1 measured')));
  // The study's estimate has no setting, and is set beside the run's in its own unit (GB), the GiB after it (round 3).
  assert.ok(lines.some((l) => l.startsWith('the study estimated ~15 shapes, ~1 GB at 8 GPUs (setting not stated)') && l.endsWith('from these runs, 15 communicators and 2.23 GB (2.08 GiB) per GPU (estimate)')));
  assert.ok(!lines.some((l) => l.includes('SIMULATED')));
});

test('1 rank, recorded: one TP shape, nothing to switch between: no switch priced; split and its kin missing for the GPU count', () => {
  const plan = planReshape(h200x1(), inputs);
  const head = poolSentence(plan);
  // One shape: nothing to switch between, no switch priced (issue #28: never "a switch is a rebuild of …").
  assert.match(head, /^on this host \(1× NVIDIA H200, NCCL 2\.28\.9\), at 1 GPU the only TP shape is TP1: there is nothing to switch between at this GPU count, so no switch is priced; a run on 2 GPUs prices/);
  assert.doesNotMatch(head, /turns|a switch is a rebuild/);
  assert.ok(!planSentences(plan).some((l) => / per switch/.test(l)), planSentences(plan).join('\n'));
  const split = plan.strategies.find((s) => s.id === 'split')!;
  assert.match(strategySentence(plan, split), /^split from the maximum topology: no total — missing ncclCommSplit into halves \(a communicator of 1 rank has no halves to split into\)$/);
  assert.ok(planSentences(plan).some((l) => l.startsWith('1 GPU (measured): a pool of every TP shape (TP1) is 1 communicator, 1 per GPU')));
});

test('4 ranks: the pool sentence, a pool that does not fit, a pool switch that is not shorter', () => {
  const plan = planReshape(asPlanRuns(fourRankRun()), { switchEveryMs: 1000, stepMs: 20, budget: { bytes: 10 * GiB } });
  assert.match(poolSentence(plan), /^on this host \(4× NVIDIA H200, NCCL [^)]+\), a pool of 3 shapes costs 1000 MiB per GPU, 9\.8% of a 10 GiB budget: to TP4 the on-demand rebuild is 100 ms \(ncclCommInitRankConfig TP4 \+ first collective TP4\) and the pool's switch is not measured \(.*\); to TP2 it turns a 45 ms on-demand rebuild \(ncclCommSplit into TP2 \+ first collective TP2\) into a 2 ms switch; to TP1 the pool's switch is not measured \(.*\) and the on-demand rebuild it replaces is not priced \(ncclCommSplit into TP1 \+ first collective TP1: the split into TP1 needs the TP4 parent, which this strategy destroyed at the switch away from TP4; .*\); no figure per switch on average: a switch to one of the shapes was not measured$/);
  const small = planReshape(asPlanRuns(fourRankRun()), { budget: { bytes: 512 * 2 ** 20 } });
  assert.match(poolSentence(small), /costs 1000 MiB per GPU, more than the 512 MiB budget \(195% of it\): to TP4 /);
  const slow = fourRankRun();
  const pool = slow.experiments.find((e) => e.experiment === 'pool')!.variants[0]!;
  pool.steps.find((s) => s.step === 'switch')!.stats.median = 150;
  assert.match(poolSentence(planReshape(asPlanRuns(slow), {})), /; to TP2 its 150 ms switch is no shorter than the 45 ms on-demand rebuild \(ncclCommSplit into TP2 \+ first collective TP2\);/);
  const noGpuShare = planReshape(asPlanRuns(fourRankRun()), {});
  assert.match(poolSentence(noGpuShare), /costs 1000 MiB per GPU, 0\.7% of the GPU's memory: to TP4/);
});

test('simulated runs are said so first, at 1, 2 and 4 ranks', () => {
  for (const ranks of [1, 2, 4]) {
    const run = fourRankRun({ simulated: true, ranks });
    const lines = planSentences(planReshape(asPlanRuns(run), inputs));
    assert.match(lines[0]!, /^SIMULATED — in this simulated run \(/, `${ranks} ranks`);
    assert.doesNotMatch(lines[0]!, /on this host/);
  }
});

test('a run over several nodes: the plan names its nodes and all their GPUs, never the one host its stamp is of', () => {
  const run = fourRankRun();
  // The stamp is of one host (vm, 4× NVIDIA H200); the run spanned gpu0 and gpu1, 2 GPUs each.
  run.nodes = [0, 1].map((index) => ({ index, hostname: `gpu${index}`, address: `10.0.0.${index + 1}`, ranks: [2 * index, 2 * index + 1], gpus: ['NVIDIA H200', 'NVIDIA H200'] }));
  const plan = planReshape(asPlanRuns(run), inputs);
  assert.equal(plan.host.hostname, 'gpu0 and gpu1');
  assert.equal(plan.host.text, '4× NVIDIA H200 over 2 nodes');
  assert.match(formatPlan(plan), /^plan for 4× H200 over 2 hosts · NCCL [\d.]+ · \d{4}-\d\d-\d\d \d\d:\d\d UTC \(gpu0 and gpu1\) — runs run1\.json$/m);
  assert.doesNotMatch(formatPlan(plan), /plan for vm/);
  assert.match(poolSentence(plan), /^on gpu0 and gpu1 \(4× NVIDIA H200 over 2 nodes, NCCL [\d.]+\), a pool of 3 shapes/);
  // A node whose GPU model the stamp did not measure: no GPU memory to take a share of.
  run.nodes[1]!.gpus = ['NVIDIA H100', 'NVIDIA H100'];
  const mixed = planReshape(asPlanRuns(run), {});
  assert.equal(mixed.host.text, '4 ranks over 2 nodes');
  assert.equal(mixed.host.gpuBytes, undefined);
  // One host: the run's name (readings/runName.ts), its GPUs and count, not its host.
  const one = fourRankRun();
  assert.match(formatPlan(planReshape(asPlanRuns(one), {})), new RegExp(`^plan for 4× H200 · NCCL ${one.stamp!.ncclVersion.replace(/\./g, '\\.')} · \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC — runs`, 'm'));
  assert.doesNotMatch(formatPlan(planReshape(asPlanRuns(one), {})), /plan for .*\(vm\)/);
});

test('an odd world size: the halves split is named by its larger child, ceil(n/2) ranks (split.ts colors rank < n/2), whose figure the MAX over ranks is', () => {
  const note = (ranks: number) => planReshape(asPlanRuns(fourRankRun({ ranks })), {}).strategies.find((s) => s.id === 'split')!.note;
  assert.equal(note(5), "the child is the split experiment's halves (TP3, the larger half: the step is the MAX over ranks)");
  assert.equal(note(4), "the child is the split experiment's halves (TP2)");
  assert.equal(note(3), "the child is the split experiment's halves (TP2, the larger half: the step is the MAX over ranks)");
});

test('a background cost longer than the interval is said so', () => {
  const plan = planReshape(asPlanRuns(fourRankRun()), { switchEveryMs: 200 });
  const lazy = plan.strategies.find((s) => s.id === 'lazy')!;
  assert.match(strategySentence(plan, lazy), /deferred to the background: .*; to TP2 300 ms — longer than the 200 ms between switches, so it is not done before the next;/);
  const calm = planReshape(asPlanRuns(fourRankRun()), { switchEveryMs: 2000 });
  assert.doesNotMatch(strategySentence(calm, calm.strategies.find((s) => s.id === 'lazy')!), /longer than/);
});

const results = path.join(__dirname, '..', '..', 'docs', 'results');

test('commcost plan on the 2×H200 runs: a row per strategy, every term with its step and file', async () => {
  let out = '';
  const code = await planCommand(
    { run: [path.join(results, 'h200x2-nccl2.28.9-wheel.catalogue.json'), path.join(results, 'h200x2-nccl2.28.9-wheel.json')], switchEvery: '2s', step: '30ms', kvBudget: '60GiB' },
    (t) => (out += t),
  );
  assert.equal(code, 0);
  // Per shape switched to (issue #28): the pool's switch to TP2 was not timed, so no mean, shares or break-even.
  assert.match(out, /^prewarmed pool +to TP2 not measured · to TP1 0\.023 ms +– +– +200 ms +0 ms +872 MiB +0\.61% +1\.4% +–$/m);
  assert.match(out, /^on-demand rebuild \(lazy connect\) +112 ms +3\.7× +5\.6% +0 ms +to TP2 not measured · to TP1 508 ms +484 MiB/m);
  assert.match(out, /0\.023 ms {2}switch to TP1 inside the pool .* — pool\/tp2\+1\/switch \(median, .*h200x2-nccl2\.28\.9-wheel\.catalogue\.json\)/);
  assert.match(out, /missing {2}switch to TP2 inside the pool — not measured: the pool experiment times only the switch to TP1/);
  // The rebuild of TP2 is the init experiment's total (its median), as the first page and the verdict read it (round 3).
  assert.match(out, /176 ms {2}ncclCommInitRankConfig TP2 \+ first collective TP2 \(its lazy connect\) — init\/default\/total \(median, .*h200x2-nccl2\.28\.9-wheel\.json\)/);
  assert.match(out, /^grow to the maximum topology +to TP2 not measured · to TP1 not measured/m);
  let json = '';
  await planCommand({ run: [path.join(results, 'h200x2-nccl2.28.9-wheel.json')], json: true }, (t) => (json += t));
  const doc = JSON.parse(json) as { commcostPlan: number; strategies: { id: string }[]; sentences: string[] };
  assert.equal(doc.commcostPlan, 1);
  assert.equal(doc.strategies.length, 10);
});

test('commcost plan: bad input says what, where and what to do', async () => {
  const run = [path.join(results, 'h200x2-nccl2.28.9-wheel.json')];
  const rejects = (flags: Parameters<typeof planCommand>[0], message: RegExp) =>
    assert.rejects(planCommand(flags, () => undefined), (e: unknown) => e instanceof CommcostError && e.code === 'BAD_INPUT' && message.test(e.message) && (e.hint ?? '').length > 0);
  await rejects({}, /commcost plan needs a run/);
  await rejects({ run, step: '30' }, /--step "30" is not a duration/);
  await rejects({ run, kvBudget: '2' }, /--kv-budget "2": a number without a unit/);
  await rejects({ run, shapes: 'tpx' }, /--shapes: "tpx" is not a TP shape/);
  await rejects({ run, gpus: 'eight' }, /--gpus "eight" is not a GPU count/);
  await rejects({ run: [...run, path.join(results, 'h200x1-2026-12-01', 'h200x1-nccl2.30.7-source.json')] }, /cannot be combined with .*: NCCL 2\.30\.7 vs 2\.28\.9/);
});
