/**
 * split: ncclCommSplit of a warm parent, with the parent's splitShare 0 and 1, into halves
 * (color = rank < n/2) and, because 2 GPUs make halves of single ranks, into one child of the
 * same shape (every rank the same color); then the first collective on the child.
 */
import type { VariantPlan } from '../../protocol/events';
import { creationSteps, needsNccl, needsRanks, warmCommunicator, type ExperimentModule } from './experiment';

type Shape = 'halves' | 'whole';

function parseVariant(variant: string): { shape: Shape; splitShare: 0 | 1 } {
  const [shape, share] = variant.split('/');
  return { shape: shape === 'halves' ? 'halves' : 'whole', splitShare: share === 'splitShare=1' ? 1 : 0 };
}

export const splitExperiment: ExperimentModule<{ parent: number }> = {
  id: 'split',
  plan(ctx) {
    const skip = needsNccl(ctx, '2.18.1') ?? needsRanks(ctx, 2);
    if (skip) return { skip };
    const variants: VariantPlan[] = [];
    for (const shape of ['halves', 'whole'] as Shape[]) {
      for (const share of [0, 1]) {
        variants.push({ variant: `${shape}/splitShare=${share}`, steps: creationSteps(ctx.options, 'ncclCommSplit', 'split to first collective') });
      }
    }
    return variants;
  },
  async setup(rc, variant) {
    return { parent: await warmCommunicator(rc, { blocking: 1, splitShare: parseVariant(variant).splitShare }) };
  },
  async iteration(rc, variant, state) {
    const { shape } = parseVariant(variant);
    const color = shape === 'halves' ? (rc.rank < rc.worldSize / 2 ? 0 : 1) : 0;
    const { comm: child } = await rc.timed('call', 'ncclCommSplit', (gen) => rc.native.commSplit(state.parent, color, rc.rank, null, gen));
    if (child === null) throw new Error(`ncclCommSplit returned no communicator for color ${color} on rank ${rc.rank}`);
    rc.markMemory('afterCall');
    await rc.timed('first', 'first allreduce', (gen) => rc.native.allReduce(child, rc.options.firstCollectiveBytes, gen));
    rc.markMemory('afterFirst');
    await rc.untimed('ncclCommDestroy (child)', () => rc.native.commDestroy(child));
  },
  async teardown(rc, _variant, state) {
    await rc.untimed('ncclCommDestroy (parent)', () => rc.native.commDestroy(state.parent));
  },
};
