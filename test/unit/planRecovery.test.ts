/**
 * The recovery paths after a lost rank (readings/plan/recovery.ts) on the committed runs of
 * docs/results: 2×H200 on NCCL 2.30.7 and 2.28.9 (with its field cases and c10d runs), 1×H200 on
 * 2.30.7. Every term is traced back to its run step (median and p90), a term the run lacks is
 * named with what would measure it, and the paths are ordered by the job's wait after the loss;
 * then `commcost plan --recovery` as text and JSON.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { planCommand } from '../../cli/plan';
import { CommcostError } from '../../client/errors';
import type { RunFile } from '../../protocol/runFile';
import { ShowPlanNotification } from '../../protocol/webviewMessages';
import { needsWords, planRecovery, recoveryEmptyLine, type RecoveryPath, type RecoveryPlan, type RecoveryTerm } from '../../readings/plan/recovery';
import { dominantSentence, recoverySentences, revokeVersusAbort } from '../../readings/plan/recoverySentences';
import type { PlanRun } from '../../readings/plan/terms';
import { asPlanRuns, fourRankRun } from './planRuns';
import { load } from './verdictRuns';

const results = path.join(__dirname, '..', '..', 'docs', 'results');
const X2_2307 = 'h200x2-2026-12-01/h200x2-nccl2.30.7-source.json';
const X2_2289 = ['h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json', 'h200x2-nccl2.28.9-wheel.cases.json', 'h200x2-torch2.11-nccl2.28.9-c10d.json'];
const X1_2307 = 'h200x1-2026-12-01/h200x1-nccl2.30.7-source.json';
const runs = (...files: string[]): PlanRun[] => files.map((file) => ({ file, run: load(file) }));

const allTerms = (p: RecoveryPath): RecoveryTerm[] => [...p.afterLoss.critical, ...p.afterLoss.background, ...(p.onReturn?.critical ?? []), ...(p.onReturn?.background ?? [])];
const byId = (plan: RecoveryPlan, id: RecoveryPath['id']): RecoveryPath => plan.paths.find((p) => p.id === id)!;

/** Every measured term's median and p90 are its source step's, in the file it names. */
function assertTraceable(plan: RecoveryPlan, given: PlanRun[]): number {
  let n = 0;
  for (const p of plan.paths) {
    for (const t of allTerms(p)) {
      if (t.value === undefined) {
        // A step the run timed in another variant is never "not measured in this run" (issue #28, FALSE 3).
        if (t.elsewhere) assert.match(t.missing!.why, /^no figure for this path in (this run|these runs): .*, a variant this path does not use$/, `${p.id}: ${t.what}`);
        else assert.match(t.missing!.why, /^not measured in (this run|these runs): /, `${p.id}: ${t.what}`);
        continue;
      }
      const src = t.source!;
      const run: RunFile = given.find((g) => g.file === src.file)!.run;
      const step = run.experiments.find((e) => e.experiment === src.experiment)!.variants.find((v) => v.variant === src.variant)!.steps.find((s) => s.step === src.step)!;
      assert.equal(t.value, step.stats.median, `${p.id}: ${t.what}`);
      assert.equal(t.p90, step.stats.p90, `${p.id}: ${t.what} p90`);
      n++;
    }
  }
  return n;
}

/** Paths with a wait after the loss come first, shortest first; the rest after. */
function assertOrdered(plan: RecoveryPlan): void {
  const waits = plan.paths.map((p) => p.afterLoss.criticalMs);
  const timed = waits.filter((w): w is number => w !== undefined);
  assert.deepEqual(waits.slice(0, timed.length), timed, 'timed paths first');
  assert.deepEqual(timed, [...timed].sort((a, b) => a - b), 'shortest wait first');
}

test('2×H200, NCCL 2.30.7: every term traced to its step; the shrink parent\'s release and c10d named as not measured; ordered by the wait after the loss', () => {
  const given = runs(X2_2307);
  const plan = planRecovery(given);
  assert.equal(plan.host.ranks, 2);
  assert.equal(assertTraceable(plan, given), 15);
  assertOrdered(plan);
  assert.deepEqual(plan.paths.map((p) => p.id), ['shrink-abort', 'revoke-shrink', 'abort-reinit', 'c10d-recreate', 'spare']);
  // The sources the METHOD table gives.
  const src = (t: RecoveryTerm) => `${t.source?.experiment}/${t.source?.variant}/${t.source?.step}`;
  assert.deepEqual(byId(plan, 'revoke-shrink').afterLoss.critical.map(src), ['revoke/inflight/shrink-abort/revoke', 'revoke/inflight/shrink-abort/call', 'revoke/inflight/shrink-abort/first']);
  assert.deepEqual(byId(plan, 'revoke-shrink').onReturn!.critical.map(src), ['grow/default/call', 'grow/default/first']);
  assert.deepEqual(byId(plan, 'shrink-abort').afterLoss.critical.map(src), ['shrink/abort/inflight/call', 'shrink/abort/inflight/first']);
  assert.deepEqual(byId(plan, 'abort-reinit').afterLoss.critical.map(src), ['abort/default/abort', 'abort/default/reinit', 'abort/default/first']);
  // The pool's switch at 2 ranks is to a one-rank TP1 child (no peer): no figure for a switch to a spare of 2 ranks.
  const sw = byId(plan, 'spare').afterLoss.critical[0]!;
  assert.equal(sw.source, undefined);
  assert.match(sw.missing!.why, /^not measured in this run: the pool's switch here is to a one-rank TP1 child \(tp2\+1\), whose collective has no peer, not to a spare of 2 ranks$/);
  assert.equal(byId(plan, 'spare').afterLoss.criticalMs, undefined);
  // What the run lacks: the C5 release (background) and every c10d term; the totals say so.
  const release = byId(plan, 'revoke-shrink').afterLoss.background[0]!;
  assert.equal(release.value, undefined);
  // The host has NCCL 2.30.7 and 2 GPUs: no "needs" it meets is said, only what the run lacks (round 3).
  assert.equal(release.missing!.why, 'not measured in this run: the runs have no shrink-abort experiment, which measures it');
  assert.equal(byId(plan, 'revoke-shrink').afterLoss.backgroundMs, undefined);
  assert.equal(byId(plan, 'revoke-shrink').complete, false);
  const c10d = byId(plan, 'c10d-recreate');
  assert.equal(c10d.afterLoss.criticalMs, undefined);
  assert.equal(c10d.cycleMs, undefined);
  // The stamp has torch 2.11.0: "needs torch" is not said of this host.
  assert.equal(c10d.missing[0]!.missing!.why, 'not measured in this run: the runs have no c10d experiment, which measures it');
  // The drop checks as measured: 4 in flight, none dropped.
  assert.equal(byId(plan, 'revoke-shrink').drops.dropped?.max, 0);
  assert.equal(byId(plan, 'revoke-shrink').drops.enqueued?.max, 4);
  assert.match(byId(plan, 'shrink-abort').drops.text, /none dropped, 4 completed on every rank \(5 rank-iterations, shrink\/abort\/inflight\)/);
  assert.match(byId(plan, 'abort-reinit').drops.text, /^not measured in this run: the abort experiment has no drop check/);
});

test('hand-checked sums on the 2.30.7 run: abort + re-init, revoke + shrink with its grow back, the spare', () => {
  const plan = planRecovery(runs(X2_2307));
  const close = (a: number | undefined, b: number) => assert.ok(a !== undefined && Math.abs(a - b) < 1e-6, `${a} vs ${b}`);
  // abort/default: abort 516.531786 + reinit 30.711… + first 141.541… (the file's medians).
  const abort = byId(plan, 'abort-reinit');
  close(abort.afterLoss.criticalMs, 516.531786 + abort.afterLoss.critical[1]!.value! + abort.afterLoss.critical[2]!.value!);
  assert.equal(Math.round(abort.afterLoss.criticalMs!), 689);
  // revoke/inflight/shrink-abort: revoke 505.844 + call 25.173 + first 0.015 = 531.03; grow 30.709 + 145.056 = 175.77.
  const revoke = byId(plan, 'revoke-shrink');
  assert.equal(Math.round(revoke.afterLoss.criticalMs! * 10) / 10, 531);
  assert.equal(Math.round(revoke.onReturn!.criticalMs! * 10) / 10, 175.8);
  close(revoke.cycleMs, revoke.afterLoss.criticalMs! + revoke.onReturn!.criticalMs!);
  // The spare: no switch figure (the pool's is to a one-rank child); abort 516.5 in the background, init 32.6 + 142.1 when the rank returns.
  const spare = byId(plan, 'spare');
  assert.equal(spare.afterLoss.criticalMs, undefined);
  assert.equal(spare.onReturn!.criticalMs, 0);
  assert.equal(spare.onReturn!.backgroundMs!.toFixed(1), '174.7');
  assert.equal(
    revokeVersusAbort(plan),
    "revoke + shrink: the job waits 531 ms after the loss against abort + re-init's 689 ms, 158 ms shorter; when the rank returns the grow back adds 176 ms (ncclCommGrow 1 → 2 ranks: 30.7 ms + first collective on the grown 2 ranks: 145 ms), so over the loss and the return it waits 707 ms against 689 ms, 18 ms longer. Abort + re-init rebuilds all 2 ranks at once: its figure has no wait for the lost rank's replacement",
  );
  assert.equal(dominantSentence(plan, abort), "abort + re-init: ncclCommAbort (2 ranks) is 517 ms of the 689 ms the job waits after the loss (75%), at this run's 2 ranks");
});

test('2×H200, NCCL 2.28.9 with its cases and c10d runs: the grow back is named missing, the C5 release and c10d are measured', () => {
  const given = runs(...X2_2289);
  const plan = planRecovery(given);
  assertTraceable(plan, given);
  assertOrdered(plan);
  const revoke = byId(plan, 'revoke-shrink');
  assert.equal(revoke.afterLoss.background[0]!.source?.variant, 'abort/abort/excluded-exits');
  assert.equal(revoke.afterLoss.background[0]!.source?.file, 'h200x2-nccl2.28.9-wheel.cases.json');
  assert.equal(revoke.onReturn!.criticalMs, undefined);
  assert.equal(revoke.cycleMs, undefined);
  assert.equal(revoke.missing[0]!.what, 'ncclCommGrow 1 → 2 ranks');
  assert.equal(
    revoke.missing[0]!.missing!.why,
    'not measured in these runs: ncclCommGrow needs NCCL ≥ 2.29.2 — grow was skipped in h200x2-2026-12-01/h200x2-nccl2.28.9-wheel.json: needs NCCL ≥ 2.29.2, host has 2.28.9',
  );
  assert.match(revokeVersusAbort(plan)!, /the grow back when the rank returns has no figure \(ncclCommGrow 1 → 2 ranks: not measured in these runs: .*\), so its total over the loss and the return is incomplete/);
  const c10d = byId(plan, 'c10d-recreate');
  assert.ok(c10d.complete);
  assert.deepEqual(c10d.afterLoss.critical.map((t) => t.source?.variant), ['init/eager', 'init/eager', 'init/eager']);
  assert.equal(needsWords('grow'), 'NCCL ≥ 2.29.2 and 2 GPUs');
});

test('1×H200, NCCL 2.30.7: only the full rebuild has a total; abort\'s share said at 1 rank; no "0 ranks" anywhere', () => {
  const given = runs(X1_2307);
  const plan = planRecovery(given);
  assertTraceable(plan, given);
  assertOrdered(plan);
  assert.equal(plan.paths[0]!.id, 'abort-reinit');
  assert.deepEqual(plan.paths.filter((p) => p.afterLoss.criticalMs !== undefined).map((p) => p.id), ['abort-reinit']);
  const abort = plan.paths[0]!;
  assert.equal(abort.afterLoss.critical[0]!.value, 1000.110769);
  // The abort dominates here because this run's figures say so (98%), and the sentence says the rank count.
  assert.equal(dominantSentence(plan, abort), "abort + re-init: ncclCommAbort (1 rank) is 1 s of the 1.02 s the job waits after the loss (98%), at this run's 1 rank");
  // NCCL 2.30.7 has shrink: only the GPUs this 1-rank host lacks are said.
  assert.match(byId(plan, 'shrink-abort').missing[0]!.missing!.why, /ncclCommShrink needs 2 GPUs — a communicator of 1 rank has no survivor/);
  assert.match(byId(plan, 'spare').missing[0]!.missing!.why, /the pool's switch needs 2 GPUs/);
  // At 1 rank the section is one line of what it can and cannot show (issue #28), not the n-rank sentences.
  assert.deepEqual(recoverySentences(plan), [
    'on this host (1× NVIDIA H200, NCCL 2.30.7), 1 rank: losing it leaves no survivor, so this run can show only a full rebuild of its 1 rank: abort + re-init 1.02 s after the loss (ncclCommAbort 1 s + ncclCommInitRankConfig after abort 20 ms + first collective of the re-init 0.0082 ms); c10d destroy + re-create not measured (the runs have no c10d experiment, which measures it); revoke + shrink, shrink (NCCL_SHRINK_ABORT), spare kept warm need 2 GPUs (this run timed "ncclCommRevoke until quiet" in revoke/idle/destroy, 987 ms, outside any of them)',
  ]);
  const text = JSON.stringify(plan) + recoverySentences(plan).join('\n');
  assert.doesNotMatch(text, /\b0 ranks|1 → 0|0 → 1/);
  assert.equal(revokeVersusAbort(plan), undefined);
});

test('runs of different rank counts are not combined: a one-rank figure is never set beside a two-rank one', () => {
  assert.throws(() => planRecovery(runs(X2_2307, X1_2307)), /cannot be combined/);
});

test('commcost plan --recovery: the table, each term with its step, the sentences; --json; reshape flags refused', async () => {
  const file = path.join(results, X2_2307);
  let out = '';
  assert.equal(await planCommand({ run: [file], recovery: true }, (t) => (out += t)), 0);
  // Named by its GPUs, NCCL and start (readings/runName.ts), never "for vm".
  assert.match(out, /^recovery plan for 2× H200 · NCCL 2\.30\.7 · \d{4}-\d\d-\d\d \d\d:\d\d UTC — runs /m);
  assert.match(out, /^spare kept warm +incomplete +691 ms +0 ms +incomplete +not measured +incomplete$/m);
  assert.match(out, /^revoke \+ shrink +531 ms +incomplete +176 ms +707 ms +0 of 4 dropped +incomplete$/m);
  assert.match(out, /^abort \+ re-init +689 ms +0 ms +– \(full size\) +689 ms +not measured +complete$/m);
  assert.match(out, /^c10d destroy \+ re-create +incomplete +0 ms +– \(full size\) +incomplete +not measured +incomplete$/m);
  assert.match(out, /517 ms \(p90 520 ms\) {2}ncclCommAbort \(2 ranks\) — abort\/default\/abort \(median, .*h200x2-nccl2\.30\.7-source\.json\)/);
  assert.match(out, /missing {2}destroy_process_group \(2 ranks\) — not measured in this run: /);
  assert.match(out, /^- revoke \+ shrink: the job waits 531 ms after the loss against abort \+ re-init's 689 ms, 158 ms shorter/m);
  let json = '';
  await planCommand({ run: [file], recovery: true, json: true }, (t) => (json += t));
  const doc = JSON.parse(json) as { commcostRecovery: number; host: { ranks: number }; paths: { id: string; afterLoss: { criticalMs?: number } }[]; sentences: string[] };
  assert.equal(doc.commcostRecovery, 1);
  assert.equal(doc.host.ranks, 2);
  assert.deepEqual(doc.paths.map((p) => p.id), ['shrink-abort', 'revoke-shrink', 'abort-reinit', 'c10d-recreate', 'spare']);
  assert.ok(doc.sentences.length > 5);
  const rejects = (flags: Parameters<typeof planCommand>[0], message: RegExp) =>
    assert.rejects(planCommand(flags, () => undefined), (e: unknown) => e instanceof CommcostError && e.code === 'BAD_INPUT' && message.test(e.message) && (e.hint ?? '').length > 0);
  await rejects({ run: [file], recovery: true, shapes: 'tp2,tp1' }, /--shapes plans a reshape, not a recovery/);
  await rejects({ recovery: true }, /no run to plan from/);
});

test('plan/show may ask for the Recovery section', () => {
  assert.ok(ShowPlanNotification.is({ id: 'host:1', method: 'plan/show', params: { section: 'recovery', origin: 'from recover in a.c' } }));
  assert.ok(!ShowPlanNotification.is({ id: 'host:1', method: 'plan/show', params: { section: 'other' } }));
});

test('a run that measured no recovery term gets one line for the Recovery section, not a table of "incomplete"', () => {
  assert.equal(recoveryEmptyLine(planRecovery(runs('h200x1-2026-12-02/h200x1-nccl2.28.9-many-comms.json'))), 'no figures for a recovery plan: the run measured none of abort, revoke, shrink, grow, c10d, pool');
  assert.equal(recoveryEmptyLine(planRecovery(runs(X2_2307))), undefined);
  assert.equal(recoveryEmptyLine(planRecovery(runs(X1_2307))), undefined, 'one rank: abort + re-init is measured');
});

test('the spare: the pool switch stands for it only when its target has peers, and names that target', () => {
  const withLabel = (tp: number) => {
    const run = fourRankRun();
    const sw = run.experiments.find((e) => e.experiment === 'pool')!.variants[0]!.steps.find((s) => s.step === 'switch')!;
    sw.label = `switch to TP${tp} inside the pool`;
    return planRecovery(asPlanRuns(run));
  };
  const toTwo = byId(withLabel(2), 'spare').afterLoss.critical[0]!;
  assert.equal(toTwo.value, 2, 'a switch to a 2-rank child is kept');
  assert.match(toTwo.what, /timed as the pool's switch to a TP2 child of 2 ranks \(not a spare of 4\)$/);
  const toOne = byId(withLabel(1), 'spare').afterLoss.critical[0]!;
  assert.equal(toOne.value, undefined, 'a switch to a one-rank child has no peer: no figure');
  assert.match(toOne.missing!.why, /one-rank TP1 child \(tp4\+2\+1\), whose collective has no peer, not to a spare of 4 ranks/);
});
