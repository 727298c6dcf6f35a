/**
 * Field case C5 (experiment shrink-abort): the twelve ways to release the parent after
 * ncclCommShrink, each with its outcome in a run (timed, stopped by the hang guard, failed,
 * skipped, not run), and the verdict lines on them. The study published no figure for C5.
 */
import type { ErrorEvent, VariantSummary } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { fieldCaseLabel, NO_STUDY_FIGURE } from './fieldCases';
import { ms, stats, variantOf, withFewNote, type VerdictLine } from './format';
import type { Here } from './agreement';

/** One way to release the parent after a shrink (field case C5, experiment shrink-abort). */
export interface ShrinkAbortCombination {
  /** The agent's variant name, e.g. "abort/destroy/excluded-aborts". */
  variant: string;
  flag: 'NCCL_SHRINK_DEFAULT' | 'NCCL_SHRINK_ABORT';
  /** How the survivors release the parent. */
  release: 'ncclCommDestroy' | 'ncclCommAbort';
  /** What the excluded rank does with its parent at the same moment. */
  excluded: 'destroys' | 'aborts' | 'exits';
}

/** The twelve combinations of the shrink-abort experiment, in table order (flag, release, excluded rank). */
export const SHRINK_ABORT_COMBINATIONS: readonly ShrinkAbortCombination[] = (['default', 'abort'] as const).flatMap((flag) =>
  (['destroy', 'abort'] as const).flatMap((release) =>
    (['destroys', 'aborts', 'exits'] as const).map((excluded) => ({
      variant: `${flag}/${release}/excluded-${excluded}`,
      flag: flag === 'abort' ? ('NCCL_SHRINK_ABORT' as const) : ('NCCL_SHRINK_DEFAULT' as const),
      release: release === 'abort' ? ('ncclCommAbort' as const) : ('ncclCommDestroy' as const),
      excluded,
    })),
  ),
);

/** The combination pytorch/pytorch#194679 reported hanging on newer NCCL. */
export const SHRINK_ABORT_CASE = 'abort/destroy/excluded-aborts';

/** What became of one combination in a run. */
export interface ShrinkAbortOutcome extends ShrinkAbortCombination {
  /**
   * timed: it completed (medians in `text`); hang: the hang guard stopped it (TIMEOUT); failed:
   * another error ended it; skipped: the agent did not plan it; not run: the run has nothing on it.
   */
  outcome: 'timed' | 'hang' | 'failed' | 'skipped' | 'not run';
  /** The figures (ms, medians), the error's message, or why it did not run. */
  text: string;
}

type RunError = Omit<ErrorEvent, 'type'>;

/**
 * The table of field case C5 for one run: every combination of the shrink-abort experiment with
 * its outcome, read from the run's summaries and errors (a hang-guard stop is the TIMEOUT error
 * whose `where.variant` names the combination, as for C4 and C6).
 * @returns undefined when the run did not plan the experiment (skipped or not asked for).
 */
export function shrinkAbortOutcomes(run: RunFile): ShrinkAbortOutcome[] | undefined {
  const e = (run.experiments ?? []).find((x) => x.experiment === 'shrink-abort');
  if (!e) return undefined;
  const errors: RunError[] = (run.errors ?? []).filter((x) => x.where?.experiment === 'shrink-abort');
  const stop = errors[0];
  return SHRINK_ABORT_COMBINATIONS.map((c) => {
    const v = (e.variants ?? []).find((x) => x.variant === c.variant);
    if (v && (v.steps ?? []).length > 0) return { ...c, outcome: 'timed', text: timedText(v) };
    const error = errors.find((x) => x.where.variant === c.variant);
    if (error?.code === 'TIMEOUT') return { ...c, outcome: 'hang', text: `stopped by the hang guard: ${error.message}` };
    if (error)
      return { ...c, outcome: 'failed', text: `failed (${error.code}): ${error.message}${error.detail ? ` — ${error.detail}` : ''}` };
    const skipped = (run.skipped ?? []).find((x) => x.experiment === 'shrink-abort' && x.variant === c.variant);
    if (skipped) return { ...c, outcome: 'skipped', text: `skipped: ${skipped.reason}` };
    const why = stop
      ? `not run: the experiment stopped at ${stop.where.variant ?? 'an earlier step'} (${stop.code})`
      : run.status === 'running'
        ? 'not run yet'
        : `not run (run ${run.status})`;
    return { ...c, outcome: 'not run', text: why };
  });
}

function timedText(v: VariantSummary): string {
  const m = (step: string): number | undefined => stats(v, step)?.median;
  const parts: string[] = [];
  const call = m('call');
  const first = m('first');
  const release = m('release');
  const excluded = m('excludedRelease');
  if (call !== undefined) parts.push(`shrink ${ms(call)}`);
  if (first !== undefined) parts.push(`first collective ${ms(first)}`);
  if (release !== undefined) parts.push(`parent released by the survivors in ${ms(release)}`);
  if (excluded !== undefined) parts.push(`by the excluded rank in ${ms(excluded)}`);
  return `timed: ${parts.join(', ')}`;
}

const EXCLUDED_TEXT = { destroys: 'destroys it', aborts: 'aborts it', exits: 'leaves it (exits)' } as const;

/** "NCCL_SHRINK_ABORT; survivors ncclCommDestroy the parent; excluded rank aborts it". */
export function combinationText(c: ShrinkAbortCombination): string {
  return `${c.flag}; survivors ${c.release} the parent; excluded rank ${EXCLUDED_TEXT[c.excluded]}`;
}

/**
 * The C5 verdict: one line on the whole table (with the few-iterations note when the run
 * recorded fewer than 3 iterations per step), then one per combination.
 */
export function shrinkAbortLines(run: RunFile, where: string, here?: Here): VerdictLine[] {
  const outcomes = shrinkAbortOutcomes(run);
  if (!outcomes) return [];
  const count = (o: ShrinkAbortOutcome['outcome']): number => outcomes.filter((x) => x.outcome === o).length;
  const parts = [`${count('timed')} of ${outcomes.length} ways to release the parent completed`];
  if (count('hang') > 0) parts.push(`${count('hang')} stopped by the hang guard`);
  if (count('failed') > 0) parts.push(`${count('failed')} failed`);
  if (count('skipped') + count('not run') > 0) parts.push(`${count('skipped') + count('not run')} not run`);
  const reported = outcomes.find((x) => x.variant === SHRINK_ABORT_CASE)!;
  const said: Record<ShrinkAbortOutcome['outcome'], string> = {
    timed: 'completed',
    hang: 'was stopped by the hang guard: the survivors did not get out of ncclCommDestroy',
    failed: 'failed',
    skipped: 'was skipped',
    'not run': 'did not run',
  };
  let text = `${fieldCaseLabel('C5')} ${where}: after ncclCommShrink drops the last rank, ${parts.join(', ')}. The reported combination (${combinationText(reported)}) ${said[reported.outcome]}.`;
  const viaAbort = outcomes.find((x) => x.variant === 'abort/abort/excluded-aborts');
  const viaAbortRelease = stats(variantOf(run, 'shrink-abort', 'abort/abort/excluded-aborts'), 'release');
  if (reported.outcome === 'hang' && viaAbort?.outcome === 'timed' && viaAbortRelease) {
    text += ` Aborting the parent on the survivors instead completed (ncclCommAbort ${ms(viaAbortRelease.median)}).`;
  }
  text = `${withFewNote(text, here)} ${NO_STUDY_FIGURE}`;
  return [
    { id: 'shrink-abort', text },
    ...outcomes.map((o) => ({ id: `shrink-abort:${o.variant}`, text: `C5 ${o.variant} (${combinationText(o)}): ${o.text}` })),
  ];
}
