/**
 * shrink-abort (field case C5, pytorch/pytorch#194679): after ncclCommShrink drops the last rank,
 * how the parent is released decides whether the survivors get out. Every combination of the
 * shrink flag (NCCL_SHRINK_DEFAULT / NCCL_SHRINK_ABORT), how the survivors release the parent
 * (ncclCommDestroy / ncclCommAbort) and what the excluded rank does with its parent at the same
 * moment (destroys it, aborts it, or leaves the iteration without releasing it: "exits"). The
 * report: on newer NCCL, survivors that destroy the parent after NCCL_SHRINK_ABORT while the
 * excluded rank aborted it block forever.
 *
 * Each iteration: a warm parent over all ranks; the survivors time ncclCommShrink (the excluded
 * rank does not call) and the child's first collective; then, after one barrier, the survivors
 * time their release of the parent (`release`) while the excluded rank times its own
 * (`excludedRelease`), or passes the barrier and returns. A combination either completes and is
 * timed, or is stopped by the hang guard ("… step ncclCommDestroy (parent) … rank R never reached
 * ncclCommDestroy (parent)").
 *
 * Each combination runs in rank processes of its own (variantEnv), so a hang ends only its own
 * processes. The coordinator ends an experiment at its first failed variant, so the run order
 * puts first the combinations where every rank releases the parent the same way, then the case's
 * own (abort/destroy/excluded-aborts), then those where the ranks release it differently (the
 * likeliest to hang).
 */
import type { StepPlan } from '../../protocol/events';
import { minGpusOf, minNcclOf } from '../../protocol/catalogue';
import { creationSteps, needsNccl, needsRanks, needsSymbols, shrinkLastRank, warmCommunicator, type ExperimentModule, type PlanContext } from './experiment';

/** One combination: shrink flag, the survivors' release of the parent, the excluded rank's. */
export interface ShrinkAbortCombination {
  flag: 'default' | 'abort';
  release: 'destroy' | 'abort';
  excluded: 'destroys' | 'aborts' | 'exits';
}

/** "abort/destroy/excluded-aborts". */
export function combinationName(c: ShrinkAbortCombination): string {
  return `${c.flag}/${c.release}/excluded-${c.excluded}`;
}

/** The combination a variant name stands for. @throws Error for a name that is not one. */
export function parseCombination(variant: string): ShrinkAbortCombination {
  const m = /^(default|abort)\/(destroy|abort)\/excluded-(destroys|aborts|exits)$/.exec(variant);
  if (!m) throw new Error(`shrink-abort has no variant "${variant}"`);
  return { flag: m[1] as ShrinkAbortCombination['flag'], release: m[2] as ShrinkAbortCombination['release'], excluded: m[3] as ShrinkAbortCombination['excluded'] };
}

/** All twelve combinations in run order (see the file comment). */
export const SHRINK_ABORT_VARIANTS: readonly string[] = [
  // Every rank releases the parent the same way.
  'default/destroy/excluded-destroys',
  'abort/destroy/excluded-destroys',
  'default/abort/excluded-aborts',
  'abort/abort/excluded-aborts',
  // The case reported in pytorch/pytorch#194679.
  'abort/destroy/excluded-aborts',
  // The ranks release it differently, or the excluded rank not at all.
  'default/destroy/excluded-aborts',
  'abort/abort/excluded-exits',
  'default/abort/excluded-exits',
  'abort/abort/excluded-destroys',
  'default/abort/excluded-destroys',
  'abort/destroy/excluded-exits',
  'default/destroy/excluded-exits',
];

const FLAG_NAME = { default: 'NCCL_SHRINK_DEFAULT', abort: 'NCCL_SHRINK_ABORT' } as const;
const FLAG_VALUE = { default: 0, abort: 1 } as const;
const RELEASE_CALL = { destroy: 'ncclCommDestroy', abort: 'ncclCommAbort' } as const;

/** The excluded rank's release call, or undefined when it leaves the parent as it is. */
function excludedCall(c: ShrinkAbortCombination): 'ncclCommDestroy' | 'ncclCommAbort' | undefined {
  return c.excluded === 'destroys' ? 'ncclCommDestroy' : c.excluded === 'aborts' ? 'ncclCommAbort' : undefined;
}

/** The steps of one combination. */
export function shrinkAbortSteps(ctx: Pick<PlanContext, 'options'>, c: ShrinkAbortCombination): StepPlan[] {
  const steps: StepPlan[] = [
    ...creationSteps(ctx.options, `ncclCommShrink (${FLAG_NAME[c.flag]})`, 'shrink to first collective'),
    { step: 'release', label: `${RELEASE_CALL[c.release]} of the parent (survivors)`, kind: 'teardown' },
  ];
  const call = excludedCall(c);
  if (call) steps.push({ step: 'excludedRelease', label: `${call} of the parent (excluded rank)`, kind: 'teardown' });
  return steps;
}

export const shrinkAbortExperiment: ExperimentModule = {
  id: 'shrink-abort',
  variantEnv() {
    // Every combination in rank processes of its own (a hang ends only its own); no variables
    // beyond the run's.
    return {};
  },
  plan(ctx) {
    const skip = needsNccl(ctx, minNcclOf('shrink-abort')) ?? needsSymbols(ctx, 'ncclCommShrink') ?? needsRanks(ctx, minGpusOf('shrink-abort'));
    if (skip) return { skip };
    // Each combination either ends or hangs on this NCCL version: both are the case's answer.
    return SHRINK_ABORT_VARIANTS.map((variant) => ({
      variant,
      hangIsResult: 'field case C5: this way of releasing the parent after a shrink hangs on this NCCL version',
      steps: shrinkAbortSteps(ctx, parseCombination(variant)),
    }));
  },
  async iteration(rc, variant) {
    const c = parseCombination(variant);
    const parent = await warmCommunicator(rc);
    rc.markBaseline();
    const child = await shrinkLastRank(rc, parent, FLAG_VALUE[c.flag], `ncclCommShrink (${FLAG_NAME[c.flag]})`);
    if (child === undefined) {
      // The excluded rank took no part in the shrink; it releases its parent at the same moment as the survivors.
      const call = excludedCall(c);
      if (!call) {
        // "Exits": passes the release barrier and leaves the iteration with the parent as it is
        // (its process ends with the rank session).
        await rc.sitOut('release');
        return;
      }
      await rc.timed('excludedRelease', `${call} (parent, excluded rank)`, (gen) => (call === 'ncclCommAbort' ? rc.native.commAbort(parent, gen) : rc.native.commDestroy(parent, gen)));
      return;
    }
    // The child stays alive while the parent is released, as in a job that goes on with it.
    const release = RELEASE_CALL[c.release];
    await rc.timed('release', `${release} (parent)`, (gen) => (c.release === 'abort' ? rc.native.commAbort(parent, gen) : rc.native.commDestroy(parent, gen)));
    await rc.untimed('ncclCommDestroy (child)', () => rc.native.commDestroy(child));
  },
};
