/**
 * Field case C5 without rank processes: the shrink-abort plan (gates, the twelve combinations,
 * their steps) and how a run's summaries and errors become the table of combinations that the
 * CLI, the verdict and the report show.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { VariantSummary } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { normalizeOptions } from '../../remote-agent/coordinator';
import { combinationName, parseCombination, SHRINK_ABORT_VARIANTS, shrinkAbortExperiment } from '../../remote-agent/experiments/shrinkAbort';
import { deriveVerdict, SHRINK_ABORT_CASE, SHRINK_ABORT_COMBINATIONS, shrinkAbortOutcomes } from '../../readings/verdict';
import { formatShrinkAbortTable, sanitizeForTerminal } from '../../cli/summary';

const options = normalizeOptions({ experiments: ['shrink-abort'] });
const ctx = (over: Partial<{ ranks: number; ncclVersionCode: number; symbols: Record<string, boolean> }> = {}) => ({
  ranks: 2,
  ncclVersionCode: 23102,
  symbols: { ncclCommShrink: true },
  options,
  ...over,
});

describe('shrink-abort plan', () => {
  const cases: [string, ReturnType<typeof ctx>, string][] = [
    ['NCCL 2.26.2', ctx({ ncclVersionCode: 22602 }), 'needs NCCL ≥ 2.27.3, host has 2.26.2'],
    ['no ncclCommShrink symbol', ctx({ symbols: {} }), 'ncclCommShrink not in this NCCL (2.31.2)'],
    ['one GPU', ctx({ ranks: 1 }), 'needs 2 GPUs, host has 1'],
  ];
  for (const [name, c, reason] of cases) {
    test(`skipped with the reason: ${name}`, () => {
      assert.deepEqual(shrinkAbortExperiment.plan(c), { skip: reason });
    });
  }

  test('twelve combinations, the ones where every rank releases alike first, then the reported one', () => {
    const plan = shrinkAbortExperiment.plan(ctx());
    assert.ok(Array.isArray(plan));
    assert.deepEqual(plan.map((v) => v.variant), [...SHRINK_ABORT_VARIANTS]);
    assert.equal(new Set(SHRINK_ABORT_VARIANTS).size, 12);
    assert.equal(SHRINK_ABORT_VARIANTS.indexOf(SHRINK_ABORT_CASE), 4);
    // The agent's names are the verdict's table (client/ cannot import the agent).
    assert.deepEqual([...SHRINK_ABORT_VARIANTS].sort(), SHRINK_ABORT_COMBINATIONS.map((c) => c.variant).sort());
    for (const v of SHRINK_ABORT_VARIANTS) assert.equal(combinationName(parseCombination(v)), v);
    assert.throws(() => parseCombination('abort/destroy'), /shrink-abort has no variant "abort\/destroy"/);
    for (const v of plan) {
      const steps = v.steps.map((s) => s.step);
      assert.deepEqual(steps, v.variant.endsWith('excluded-exits') ? ['call', 'first', 'total', 'release'] : ['call', 'first', 'total', 'release', 'excludedRelease'], v.variant);
    }
    const reported = plan.find((v) => v.variant === SHRINK_ABORT_CASE)!;
    assert.deepEqual(
      reported.steps.map((s) => s.label),
      ['ncclCommShrink (NCCL_SHRINK_ABORT)', 'first 1 MiB allreduce', 'shrink to first collective', 'ncclCommDestroy of the parent (survivors)', 'ncclCommAbort of the parent (excluded rank)'],
    );
    assert.deepEqual(shrinkAbortExperiment.variantEnv?.(SHRINK_ABORT_CASE), {}, 'each combination in rank processes of its own');
  });
});

function timed(variant: string, release: number): VariantSummary {
  const st = (step: string, kind: 'call' | 'first' | 'toFirst' | 'teardown', median: number) => ({
    step,
    label: step,
    kind,
    stats: { median, p90: median, min: median, max: median, mean: median, n: 1 },
    samples: [median],
  });
  return { variant, steps: [st('call', 'call', 20), st('first', 'first', 25), st('total', 'toFirst', 45), st('release', 'teardown', release)] };
}

function c5Run(over: Partial<RunFile>): RunFile {
  return {
    schema: 'commcost.run/1',
    id: 'x',
    host: 'gpu1',
    simulated: false,
    status: 'partial',
    options: { experiments: ['shrink-abort'], iterations: 1, warmup: 1, deadlineSeconds: 2 },
    ranks: 2,
    experiments: [{ experiment: 'shrink-abort', variants: [], done: 0, total: 24, samples: {}, state: 'finished' }],
    skipped: [],
    errors: [],
    ...over,
  };
}

describe('C5 table of combinations', () => {
  const hang = 'timed out at shrink-abort abort/destroy/excluded-aborts iteration 0, step ncclCommDestroy (parent) on rank 1: rank 0 waited 2.1 s in ncclCommDestroy (parent); rank 1 never reached ncclCommDestroy (parent): it last finished ncclCommAbort (parent, excluded rank)';
  const run = c5Run({
    experiments: [{ experiment: 'shrink-abort', variants: [timed('default/destroy/excluded-destroys', 3.2), timed('abort/abort/excluded-aborts', 480)], done: 4, total: 24, samples: {}, state: 'finished' }],
    errors: [
      { code: 'TIMEOUT', message: hang, where: { experiment: 'shrink-abort', variant: SHRINK_ABORT_CASE, rank: 1, step: 'release', iteration: 0 }, fatal: false },
      { code: 'NCCL_ERROR', message: 'ncclCommAbort failed on rank 1', detail: 'unhandled system error', where: { experiment: 'shrink-abort', variant: 'abort/abort/excluded-exits', rank: 1 }, fatal: false },
    ],
  });

  test('each combination is timed, stopped by the hang guard, failed or not run, read from the run', () => {
    const outcomes = shrinkAbortOutcomes(run)!;
    assert.deepEqual(outcomes.map((o) => o.variant), SHRINK_ABORT_COMBINATIONS.map((c) => c.variant));
    const by = (v: string) => outcomes.find((o) => o.variant === v)!;
    assert.equal(by('default/destroy/excluded-destroys').outcome, 'timed');
    assert.match(by('default/destroy/excluded-destroys').text, /^timed: shrink 20\.0 ms, first collective 25\.0 ms, parent released by the survivors in 3\.2 ms$/);
    assert.deepEqual([by(SHRINK_ABORT_CASE).outcome, by(SHRINK_ABORT_CASE).text], ['hang', `stopped by the hang guard: ${hang}`]);
    assert.deepEqual([by('abort/abort/excluded-exits').outcome, by('abort/abort/excluded-exits').text], ['failed', 'failed (NCCL_ERROR): ncclCommAbort failed on rank 1 — unhandled system error']);
    assert.deepEqual([by('default/abort/excluded-exits').outcome, by('default/abort/excluded-exits').text], ['not run', `not run: the experiment stopped at ${SHRINK_ABORT_CASE} (TIMEOUT)`]);
    assert.equal(shrinkAbortOutcomes({ ...run, experiments: [] }), undefined, 'no table when the run did not plan it');
  });

  test('the verdict says what the run shows, one line for the table and one per combination', () => {
    const lines = deriveVerdict(run);
    const head = lines.find((l) => l.id === 'shrink-abort')!;
    assert.equal(
      head.text,
      'Field case C5, "shrink with abort, then destroy, hangs" on gpu1 (2 ranks, GPUs not recorded) with NCCL version not recorded: after ncclCommShrink drops the last rank, 2 of 12 ways to release the parent completed, 1 stopped by the hang guard, 1 failed, 8 not run. ' +
        'The reported combination (NCCL_SHRINK_ABORT; survivors ncclCommDestroy the parent; excluded rank aborts it) was stopped by the hang guard: the survivors did not get out of ncclCommDestroy. ' +
        'Aborting the parent on the survivors instead completed (ncclCommAbort 480 ms) (here from one recorded iteration per step: each word rests on a single observation). The study published no figure for this.',
    );
    assert.equal(lines.filter((l) => l.id.startsWith('shrink-abort:')).length, 12);
    assert.ok(deriveVerdict({ ...run, simulated: true }).every((l) => l.text.startsWith('SIMULATED — ')));
    const allTimed = c5Run({ experiments: [{ experiment: 'shrink-abort', variants: SHRINK_ABORT_COMBINATIONS.map((c) => timed(c.variant, 3)), done: 24, total: 24, samples: {}, state: 'finished' }] });
    assert.match(deriveVerdict(allTimed).find((l) => l.id === 'shrink-abort')!.text, /12 of 12 ways to release the parent completed\. The reported combination .* completed \(here from one recorded iteration per step: each word rests on a single observation\)\. The study published no figure for this\.$/);
  });

  test('the CLI table has a row per combination with its outcome, terminal-safe', () => {
    const hostile = c5Run({ ...run, errors: [{ ...run.errors[0]!, message: 'hung \x1b[31mred' }] });
    const rows = formatShrinkAbortTable(sanitizeForTerminal(hostile));
    assert.match(rows[0]!, /^Field case C5, "shrink with abort, then destroy, hangs" \(shrink-abort\) on NCCL version not recorded: /);
    assert.equal(rows.length, 2 + 12);
    assert.match(rows[1]!, /^ {2}shrink flag +survivors release the parent +excluded rank +outcome$/);
    assert.ok(rows.some((r) => /^ {2}NCCL_SHRINK_ABORT +ncclCommDestroy +aborts +stopped by the hang guard: hung \\x1b\[31mred$/.test(r)), rows.join('\n'));
  });
});
