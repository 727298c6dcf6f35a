/**
 * Expected hangs in run files saved before the agent marked them (`expected: true`).
 *
 * Field cases C4, C5 and C6 end some variants in a hang on purpose: their plans declare
 * `hangIsResult` (splitSubset.ts, shrinkAbort.ts, initAbort.ts). Since then the coordinator
 * reports a hang-guard stop (TIMEOUT) of such a variant with `expected: true`, the plan's own
 * reason as the hint ({@link expectedHangHint}), and leaves the run complete. Runs saved before
 * that list the same stops as failures ("every rank must make the same NCCL calls") and say
 * `partial`. {@link migrateExpectedHangs} rewrites such a run as the agent would write it today:
 * pure, no I/O; `scripts/migrate-expected-hangs.mjs` applies it to files.
 *
 * The hint comes from the plan of the error's experiment and variant, re-made from the run's own
 * ranks, NCCL version, symbols and options (the coordinator's plan of that run), never from the
 * file's text. Only a TIMEOUT of a variant whose plan declares `hangIsResult` is changed: any
 * other error stays an error and keeps the run partial.
 */
import { DEFAULT_RUN_OPTIONS, type ErrorEvent, type ExperimentId, type VariantPlan } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { CATALOGUE } from './catalogue';
import type { PlanContext } from './experiment';

/**
 * The hint of an expected hang, as the coordinator writes it (remote-agent/coordinator.ts,
 * `runSession`): the plan's `hangIsResult`, then that the hang guard ended it as the case expects.
 */
export function expectedHangHint(hangIsResult: string): string {
  return `${hangIsResult}: the hang guard ended it at the deadline, as this case expects`;
}

/** One error the migration marked as an expected hang. */
export interface MigratedHang {
  experiment: ExperimentId;
  variant: string;
  /** The hint the file had before. */
  oldHint?: string;
  /** The plan's hint (see {@link expectedHangHint}). */
  hint: string;
}

/** What {@link migrateExpectedHangs} did. */
export interface HangMigration {
  /** The run as the agent writes it now; the input itself when nothing changed. */
  run: RunFile;
  /** The errors marked `expected: true`. */
  migrated: MigratedHang[];
  /** The status before and after (equal when it did not change). */
  status: { before: RunFile['status']; after: RunFile['status'] };
  /** True when `run` differs from the input. */
  changed: boolean;
}

type RunError = Omit<ErrorEvent, 'type'>;

/**
 * The variant's plan in this run, re-made by the experiment's module from what the run recorded
 * (ranks, stamp.ncclVersionCode and ncclSymbols, options, the nodes' rank placement); undefined
 * when the run lacks a stamp, the experiment is unknown, its plan skips, or planning throws.
 */
function plannedVariant(run: RunFile, experiment: ExperimentId, variant: string): VariantPlan | undefined {
  const module = CATALOGUE[experiment];
  const stamp = run.stamp;
  if (!module || !stamp) return undefined;
  const nodeOfRank: number[] = [];
  for (const n of run.nodes ?? []) for (const r of n.ranks) nodeOfRank[r] = n.index;
  const ctx: PlanContext = {
    ranks: run.ranks,
    ncclVersionCode: stamp.ncclVersionCode,
    symbols: stamp.ncclSymbols ?? {},
    options: { ...DEFAULT_RUN_OPTIONS, ...run.options },
    ...(run.nodes && run.nodes.length > 0 ? { nodeOfRank } : {}),
  };
  try {
    const plan = module.plan(ctx);
    return 'skip' in plan ? undefined : plan.find((v) => v.variant === variant);
  } catch {
    return undefined;
  }
}

/**
 * The status the agent gives a run with these errors (remote-agent/coordinator.ts `runInner`,
 * recorded by the run model from `run/done`): partial when a failure other than an expected hang
 * happened or the run was cancelled, else complete. Only a `partial` run is reconsidered; it
 * becomes complete when every error is an expected hang, every experiment finished (an
 * experiment the run stopped before summarising says `stopped`) and no variant has recorded
 * samples without a summary or an error of its own (a run cancelled inside a variant). A cancel
 * that fell exactly between two variants leaves no trace in a file of that time: such a file
 * with an expected hang would read complete.
 */
export function statusAfterExpectedHangs(run: RunFile): RunFile['status'] {
  if (run.status !== 'partial') return run.status;
  if (run.errors.some((e) => e.expected !== true)) return 'partial';
  if (run.experiments.some((e) => e.state !== 'finished')) return 'partial';
  for (const e of run.experiments) {
    for (const variant of Object.keys(e.samples ?? {})) {
      const summarised = e.variants.some((v) => v.variant === variant);
      const explained = run.errors.some((x) => x.where.experiment === e.experiment && x.where.variant === variant);
      if (!summarised && !explained) return 'partial';
    }
  }
  return 'complete';
}

/**
 * Marks the hang-guard stops of variants whose plan declares `hangIsResult` as expected hangs
 * (`expected: true`, the plan's hint) and recomputes the status ({@link statusAfterExpectedHangs}).
 * Idempotent: an error already marked is left as it is, so a run the agent wrote after the change
 * comes back unchanged. Pure: the input is not modified.
 * @param run a validated run file (client/runFileSchema.ts `validateRunFile`)
 */
export function migrateExpectedHangs(run: RunFile): HangMigration {
  const migrated: MigratedHang[] = [];
  const errors = run.errors.map((e): RunError => {
    const { experiment, variant } = e.where;
    if (e.code !== 'TIMEOUT' || e.expected === true || experiment === undefined || variant === undefined) return e;
    const reason = plannedVariant(run, experiment, variant)?.hangIsResult;
    if (reason === undefined) return e;
    const hint = expectedHangHint(reason);
    migrated.push({ experiment, variant, ...(e.hint !== undefined ? { oldHint: e.hint } : {}), hint });
    return { ...e, hint, fatal: false, expected: true };
  });
  if (migrated.length === 0) return { run, migrated, status: { before: run.status, after: run.status }, changed: false };
  const next: RunFile = { ...run, errors };
  next.status = statusAfterExpectedHangs(next);
  return { run: next, migrated, status: { before: run.status, after: next.status }, changed: true };
}
