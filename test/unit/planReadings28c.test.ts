/**
 * Issue #28, "one answer per switch", from a new user's audit (2026-12-02): each strategy is priced
 * per shape switched to with the run's figure for that shape, and a switch (or destroy) the run did
 * not time is "not measured", never charged another shape's figure nor averaged over; at 1 GPU the
 * plan and the recovery section say in one line what they can and cannot show; the first page's pool
 * card names the shape whose rebuild it replaces. On the committed 1×H200 and 2×H200 runs.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatPlan } from '../../cli/plan';
import { formatRecovery } from '../../cli/planRecovery';
import { planReshape, type Plan, type StrategyPlan } from '../../readings/plan/planner';
import { planRecovery } from '../../readings/plan/recovery';
import { recoverySentences } from '../../readings/plan/recoverySentences';
import { planSentences, poolSentence } from '../../readings/plan/sentences';
import { firstPageSummary } from '../../readings/verdict/summary';
import { msText } from '../../readings/plan/units';
import { fourRankRun } from './planRuns';
import { load } from './verdictRuns';

const X2 = ['h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json', 'h200x2-2026-12-01/h200x2-nccl2.30.7-source.json'];
const X1 = ['h200x1-2026-12-01/h200x1-nccl2.28.9-wheel.json', 'h200x1-2026-12-01/h200x1-nccl2.30.7-source.json', 'h200x1-2026-12-02/h200x1-nccl2.28.9-wheel-session4.json'];
const plan = (file: string): Plan => planReshape([{ file, run: load(file) }]);
const by = (p: Plan, id: StrategyPlan['id']): StrategyPlan => p.strategies.find((s) => s.id === id)!;
const target = (s: StrategyPlan, shape: number) => s.perTarget?.find((x) => x.shape === shape);

test('FALSE 1: the pool switch the run timed (to TP1) is priced for TP1 only; a switch to TP2 is not measured and no mean is made over it', () => {
  for (const file of X2) {
    const p = plan(file);
    const pool = by(p, 'pool');
    const run = load(file);
    const sw = run.experiments.find((e) => e.experiment === 'pool')!.variants.find((v) => v.variant === 'tp2+1')!.steps.find((s) => s.step === 'switch')!;
    assert.match(sw.label ?? '', /switch to TP1/, file);
    assert.equal(target(pool, 1)?.ms, sw.stats.median, file);
    assert.equal(target(pool, 2)?.ms, undefined, file);
    assert.match(target(pool, 2)!.why!, /times only the switch to TP1/, file);
    assert.equal(pool.criticalMs, undefined, `${file}: no figure per switch over a switch not measured`);
    assert.equal(pool.breakEven.length, 0, `${file}: no break-even on a switch not measured`);
    const head = poolSentence(p);
    // Like with like: TP1's switch against TP1's rebuild; TP2's rebuild beside "not measured".
    assert.match(head, /to TP1 it turns a [\d.]+ ms on-demand rebuild \(ncclCommSplit into TP1 \+ first collective TP1\) into a [\d.]+ ms switch/, file);
    assert.match(head, /to TP2 the on-demand rebuild is [\d.]+ ms \(ncclCommInitRankConfig TP2 \+ first collective TP2\) and the pool's switch is not measured/, file);
    assert.doesNotMatch(head, /per switch on average\)? into/, file);
    assert.doesNotMatch(planSentences(p).join('\n'), /prewarmed pool: [\d.]+ ms on the critical path per switch/, file);
    assert.match(formatPlan(p), /prewarmed pool +to TP2 not measured · to TP1 [\d.]+ ms/, file);
  }
});

test('FALSE 1, general: where the pool switch to every shape is known the mean is computed; the switch goes to the shape its label names', () => {
  // 4 ranks, shapes TP4 and TP2: the synthetic pool's switch has no TP in its label, so it is the first child's (TP2).
  const p = planReshape([{ file: 'four.json', run: fourRankRun() }], { shapes: [4, 2] });
  const pool = by(p, 'pool');
  assert.equal(target(pool, 2)?.ms, 2);
  assert.equal(target(pool, 4)?.ms, undefined);
  const lazy = by(p, 'lazy');
  assert.equal(target(lazy, 4)?.ms, 100);
  assert.equal(target(lazy, 2)?.ms, 45);
  assert.equal(lazy.criticalMs, (100 + 45) / 2);
});

test('MISLEADING 3: split and shrink never defer the TP2 destroy for a switch to TP1; the TP1 child they leave is a destroy not measured', () => {
  for (const file of X2) {
    const p = plan(file);
    for (const id of ['split', 'split-share', 'shrink'] as const) {
      const s = by(p, id);
      assert.equal(target(s, 1)?.deferredMs, 0, `${file} ${id}: a switch to TP1 keeps the TP2 parent`);
      assert.equal(target(s, 2)?.deferredMs, undefined, `${file} ${id}`);
      assert.match(target(s, 2)!.deferredWhy!, /ncclCommFinalize \+ ncclCommDestroy TP1: the destroy experiment destroys a TP2 communicator/, `${file} ${id}`);
      assert.equal(s.deferredMs, undefined, `${file} ${id}`);
      assert.equal(target(s, 2)?.ms, undefined, `${file} ${id}: the switch back to the kept TP2 is not timed`);
      assert.equal(s.criticalMs, undefined, `${file} ${id}: no mean over a switch not measured`);
    }
    // The on-demand rebuild: the TP2 destroy is deferred at the switch to TP1 only.
    const lazy = by(p, 'lazy');
    const destroy = load(file).experiments.find((e) => e.experiment === 'destroy')!.variants[0]!.steps.find((x) => x.step === 'total')!.stats.median;
    assert.equal(target(lazy, 1)?.deferredMs, destroy, file);
    assert.equal(target(lazy, 2)?.deferredMs, undefined, file);
  }
});

test('MISLEADING 10: the plan at 1 GPU is one line, no table of "no switch" and "missing"; grow and split say the GPU count', () => {
  for (const file of X1) {
    const p = plan(file);
    const text = formatPlan(p);
    assert.doesNotMatch(text, /no switch +–/, file);
    assert.doesNotMatch(text, /^strategy /m, file);
    assert.doesNotMatch(text, /^ +missing /m, file);
    assert.doesNotMatch(text, /no total|prewarmed pool|grow to the maximum topology/, file);
    assert.match(text, /^- on this host \(1× NVIDIA H200, NCCL [\d.]+\), at 1 GPU the only TP shape is TP1: there is nothing to switch between/m, file);
    for (const id of ['grow', 'split', 'shrink'] as const) {
      const why = by(p, id).critical[0]!.missing!.why;
      assert.match(why, /1 rank/, `${file} ${id}`);
      assert.doesNotMatch(why, /NCCL/, `${file} ${id}`);
    }
  }
});

test('FALSE 3 and MISLEADING 9: the 1-rank recovery section says in one line what it can and cannot show; a revoke it timed is never "not measured"', () => {
  for (const file of X1) {
    const run = load(file);
    const r = planRecovery([{ file, run }]);
    const lines = recoverySentences(r);
    assert.equal(lines.length, 1, file);
    const text = formatRecovery(r);
    for (const words of ['by the survivors', 'grow back to 1 rank', 'its 1 rank lost', 'incomplete', 'missing', 'spare kept warm (1 rank']) {
      assert.ok(!text.includes(words) && !lines[0]!.includes(words), `${file}: "${words}"`);
    }
    assert.match(lines[0]!, /1 rank: losing it leaves no survivor, so this run can show only a full rebuild of its 1 rank: abort \+ re-init [\d.]+ (s|ms) after the loss/, file);
    const revoke = run.experiments.find((e) => e.experiment === 'revoke')?.variants.find((v) => v.variant === 'idle/destroy');
    if (revoke) {
      assert.doesNotMatch(text, /ncclCommRevoke until quiet \(1 rank\) — not measured/, file);
      const ms = revoke.steps.find((x) => x.step === 'revoke')!.stats.median;
      assert.match(lines[0]!, new RegExp(`this run timed "ncclCommRevoke until quiet" in revoke/idle/destroy, ${msText(ms)}`), file);
      const t = r.paths.find((x) => x.id === 'revoke-shrink')!.afterLoss.critical[0]!;
      assert.doesNotMatch(t.missing!.why, /^not measured/, file);
    }
  }
});

test('MISLEADING 4: the first page pool card says which shape it rebuilds, not the headline rebuild of all ranks', () => {
  for (const file of X2) {
    const card = firstPageSummary(load(file)).find((l) => l.kind === 'pool')!;
    assert.match(card.text, /rebuild of its one-rank TP1 child/, file);
    assert.match(card.text, /That is the rebuild of the TP1 shape only, not a rebuild of all 2 ranks: the run times no switch back to TP2\./, file);
  }
});
