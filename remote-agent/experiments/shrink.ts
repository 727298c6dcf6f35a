/**
 * shrink: drop the last rank of a warm communicator with ncclCommShrink (the excluded rank does
 * not call), with NCCL_SHRINK_DEFAULT and NCCL_SHRINK_ABORT; then the first collective on the
 * child. The parent is released the way each flag requires: destroy after DEFAULT, abort after
 * ABORT (finalize/destroy after ABORT can hang, pytorch/pytorch#194679).
 */
import { creationSteps, needsNccl, needsRanks, needsSymbols, shrinkLastRank, warmCommunicator, type ExperimentModule } from './experiment';

const FLAGS: Record<string, 0 | 1> = { default: 0, abort: 1 };

export const shrinkExperiment: ExperimentModule = {
  id: 'shrink',
  plan(ctx) {
    const skip = needsNccl(ctx, '2.27.3') ?? needsSymbols(ctx, 'ncclCommShrink') ?? needsRanks(ctx, 2);
    if (skip) return { skip };
    return Object.keys(FLAGS).map((variant) => ({
      variant,
      steps: creationSteps(ctx.options, `ncclCommShrink (${variant === 'abort' ? 'NCCL_SHRINK_ABORT' : 'NCCL_SHRINK_DEFAULT'})`, 'shrink to first collective'),
    }));
  },
  async iteration(rc, variant) {
    const flags = FLAGS[variant] ?? 0;
    const parent = await warmCommunicator(rc);
    rc.markBaseline();
    const child = await shrinkLastRank(rc, parent, flags, 'ncclCommShrink');
    if (child !== undefined) await rc.untimed('ncclCommDestroy (child)', () => rc.native.commDestroy(child));
    if (flags === 1) await rc.untimed('ncclCommAbort (parent)', () => rc.native.commAbort(parent));
    else await rc.untimed('ncclCommDestroy (parent)', () => rc.native.commDestroy(parent));
  },
};
