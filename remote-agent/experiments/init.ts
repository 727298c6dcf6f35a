/**
 * init: ncclCommInitRankConfig (blocking) on every rank; the first collective on the new
 * communicator; a steady allreduce on the warm communicator as the bandwidth reference.
 * With RunOptions.firstUse, also `default/first=broadcast` (the first use a broadcast from rank 0, then
 * the same broadcast warm) and `default/first=sendrecv` (a send/recv pair between ranks 2k and 2k+1,
 * then the same pair warm; needs 2 ranks).
 */
import type { FirstUseKind, RunOptions, VariantPlan } from '../../protocol/events';
import { firstUseOf, firstUseVariant } from '../../protocol/events';
import { minNcclOf } from '../../protocol/catalogue';
import { BLOCKING, creationSteps, firstUseKinds, formatBytes, needsNccl, needsRanks, timeFirstUse, type ExperimentModule, type PlanContext } from './experiment';

let skipped: { variant: string; reason: string }[] = [];

/** The first-use variants of `base` the run asks for, and those it cannot run here (a send/recv pair at 1 rank). */
export function firstUseVariants(ctx: PlanContext, base: string, steps: (kind: FirstUseKind) => VariantPlan['steps']): { variants: VariantPlan[]; skipped: { variant: string; reason: string }[] } {
  const variants: VariantPlan[] = [];
  const left: { variant: string; reason: string }[] = [];
  for (const kind of firstUseKinds(ctx.options)) {
    const variant = firstUseVariant(base, kind);
    const why = kind === 'sendrecv' ? needsRanks(ctx, 2) : undefined;
    if (why) left.push({ variant, reason: `a send/recv pair ${why}` });
    else variants.push({ variant, steps: steps(kind) });
  }
  return { variants, skipped: left };
}

export const initExperiment: ExperimentModule = {
  id: 'init',
  plan(ctx) {
    const skip = needsNccl(ctx, minNcclOf('init'));
    if (skip) return { skip };
    const r = firstUseVariants(ctx, 'default', (kind) =>
      kind === 'allreduce'
        ? [
            ...creationSteps(ctx.options, 'ncclCommInitRankConfig', 'init to first collective'),
            { step: 'steady', label: `steady ${formatBytes(steadyBytes(ctx.options))} allreduce`, kind: 'steady' },
          ]
        : creationSteps(ctx.options, 'ncclCommInitRankConfig', 'init to first collective', kind),
    );
    skipped = r.skipped;
    return r.variants.length > 0 ? r.variants : { skip: r.skipped.map((x) => x.reason).join('; ') };
  },
  skippedVariants: () => skipped,
  async iteration(rc, variant) {
    const kind = firstUseOf(variant);
    const id = await rc.uniqueId();
    const { comm } = await rc.timed('call', 'ncclCommInitRankConfig', (gen) =>
      rc.native.commInitRank(rc.worldSize, id, rc.rank, BLOCKING, gen),
    );
    rc.markMemory('afterCall', [comm]);
    await timeFirstUse(rc, comm, kind);
    if (kind === 'allreduce') {
      // The first message of the steady size may connect another algorithm: warm it, then time.
      await rc.untimed('allreduce (warm steady size)', () => rc.native.allReduce(comm, rc.options.steadyBytes));
      await rc.timed('steady', 'steady allreduce', (gen) => rc.native.allReduce(comm, rc.options.steadyBytes, gen));
    }
    await rc.untimed('ncclCommDestroy', () => rc.native.commDestroy(comm));
  },
};

function steadyBytes(options: RunOptions): number {
  return options.steadyBytes ?? 64 << 20;
}
