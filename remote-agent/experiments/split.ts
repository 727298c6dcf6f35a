/**
 * split: ncclCommSplit of a warm parent, with the parent's splitShare 0 and 1, into halves
 * (color = rank < n/2) and, because 2 GPUs make halves of single ranks, into one child of the
 * same shape (every rank the same color); then the first collective on the child.
 * Over several nodes with several ranks each, also by topology: intra-node (color = node: each
 * child stays on one node, NVLink) and inter-node (color = the rank's position on its node:
 * each child has one rank per node, so every link crosses the network).
 * With RunOptions.firstUse, each shape's splitShare=0 variant also comes first used by a broadcast
 * (`…/splitShare=0/first=broadcast`) or a send/recv pair within the child (`…/first=sendrecv`).
 */
import type { VariantPlan } from '../../protocol/events';
import { firstUseOf } from '../../protocol/events';
import { minGpusOf, minNcclOf } from '../../protocol/catalogue';
import { creationSteps, needsNccl, needsRanks, timeFirstUse, warmCommunicator, type ExperimentModule } from './experiment';
import { firstUseVariants } from './init';

type Shape = 'halves' | 'whole' | 'intra-node' | 'inter-node';
const SHAPES: readonly Shape[] = ['halves', 'whole', 'intra-node', 'inter-node'];

function parseVariant(variant: string): { shape: Shape; splitShare: 0 | 1 } {
  const [shape, share] = variant.split('/');
  return { shape: SHAPES.find((s) => s === shape) ?? 'whole', splitShare: share === 'splitShare=1' ? 1 : 0 };
}

/** True when the ranks span several nodes and some node holds more than one: topology splits differ from halves and singles. */
export function hasTopologySplits(nodeOfRank: number[] | undefined): boolean {
  if (!nodeOfRank) return false;
  const counts = new Map<number, number>();
  for (const n of nodeOfRank) counts.set(n, (counts.get(n) ?? 0) + 1);
  return counts.size > 1 && [...counts.values()].some((c) => c > 1);
}

/**
 * The split color of `rank` for `shape`: halves by rank, one child for whole, the node for
 * intra-node, the rank's position among its node's ranks for inter-node.
 */
export function splitColor(shape: Shape, rank: number, worldSize: number, nodeOfRank: number[] | undefined): number {
  switch (shape) {
    case 'halves':
      return rank < worldSize / 2 ? 0 : 1;
    case 'whole':
      return 0;
    case 'intra-node':
      return nodeOfRank?.[rank] ?? 0;
    case 'inter-node': {
      const node = nodeOfRank?.[rank] ?? 0;
      return (nodeOfRank ?? []).slice(0, rank).filter((n) => n === node).length;
    }
  }
}

export const splitExperiment: ExperimentModule<{ parent: number }> = {
  id: 'split',
  plan(ctx) {
    const skip = needsNccl(ctx, minNcclOf('split')) ?? needsRanks(ctx, minGpusOf('split'));
    if (skip) return { skip };
    const variants: VariantPlan[] = [];
    const shapes: Shape[] = hasTopologySplits(ctx.nodeOfRank) ? ['halves', 'whole', 'intra-node', 'inter-node'] : ['halves', 'whole'];
    for (const shape of shapes) {
      variants.push(...firstUseVariants(ctx, `${shape}/splitShare=0`, (kind) => creationSteps(ctx.options, 'ncclCommSplit', 'split to first collective', kind)).variants);
      variants.push({ variant: `${shape}/splitShare=1`, steps: creationSteps(ctx.options, 'ncclCommSplit', 'split to first collective') });
    }
    return variants;
  },
  async setup(rc, variant) {
    return { parent: await warmCommunicator(rc, { blocking: 1, splitShare: parseVariant(variant).splitShare }) };
  },
  async iteration(rc, variant, state) {
    const { shape } = parseVariant(variant);
    const color = splitColor(shape, rc.rank, rc.worldSize, rc.nodeOfRank);
    const { comm: child } = await rc.timed('call', 'ncclCommSplit', (gen) => rc.native.commSplit(state.parent, color, rc.rank, null, gen));
    if (child === null) throw new Error(`ncclCommSplit returned no communicator for color ${color} on rank ${rc.rank}`);
    rc.markMemory('afterCall', [child]);
    await timeFirstUse(rc, child, firstUseOf(variant), rc.native.commUserRank(child), rc.native.commCount(child));
    await rc.untimed('ncclCommDestroy (child)', () => rc.native.commDestroy(child));
  },
  async teardown(rc, _variant, state) {
    await rc.untimed('ncclCommDestroy (parent)', () => rc.native.commDestroy(state.parent));
  },
};
