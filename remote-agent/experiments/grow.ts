/**
 * grow: a communicator of the first n−1 ranks takes the last rank back: rank 0 makes the grow
 * id with ncclCommGetUniqueId, existing ranks call ncclCommGrow with their parent, the new
 * rank with the id; then the first collective on the grown communicator.
 */
import { minGpusOf, minNcclOf } from '../../protocol/catalogue';
import { BLOCKING, creationSteps, needsNccl, needsRanks, needsSymbols, type ExperimentModule } from './experiment';

export const growExperiment: ExperimentModule = {
  id: 'grow',
  plan(ctx) {
    const skip = needsNccl(ctx, minNcclOf('grow')) ?? needsSymbols(ctx, 'ncclCommGrow', 'ncclCommGetUniqueId') ?? needsRanks(ctx, minGpusOf('grow'));
    if (skip) return { skip };
    return [{ variant: 'default', steps: creationSteps(ctx.options, 'ncclCommGrow', 'grow to first collective') }];
  },
  async iteration(rc) {
    const joining = rc.worldSize - 1;
    const id = await rc.uniqueId();
    let parent: number | null = null;
    if (rc.rank !== joining) {
      parent = (await rc.untimed('ncclCommInitRankConfig (parent of n-1)', () => rc.native.commInitRank(rc.worldSize - 1, id, rc.rank, BLOCKING))).comm;
      const p = parent;
      await rc.untimed('allreduce (warm parent)', () => rc.native.allReduce(p, rc.options.firstCollectiveBytes));
    }
    rc.markBaseline();
    const growId = await rc.sharedId(async () => (await rc.untimed('ncclCommGetUniqueId', () => rc.native.commGetUniqueId(parent!))).id);
    const { comm } = await rc.timed('call', 'ncclCommGrow', (gen) =>
      rc.rank === joining
        ? rc.native.commGrow(null, rc.worldSize, growId, joining, null, gen)
        : rc.native.commGrow(parent, rc.worldSize, rc.rank === 0 ? growId : null, -1, null, gen),
    );
    rc.markMemory('afterCall');
    await rc.timed('first', 'first allreduce', (gen) => rc.native.allReduce(comm, rc.options.firstCollectiveBytes, gen));
    rc.markMemory('afterFirst');
    await rc.untimed('ncclCommDestroy (grown)', () => rc.native.commDestroy(comm));
    if (parent !== null) {
      const p = parent;
      await rc.untimed('ncclCommDestroy (parent)', () => rc.native.commDestroy(p));
    }
  },
};
