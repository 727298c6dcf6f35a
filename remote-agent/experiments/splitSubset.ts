/**
 * split-subset (field case C4, NVIDIA-NeMo/RL#3189, pytorch/pytorch#148162): a side group made
 * by ncclCommSplit when only the first half of the ranks call it. `nocolor`: the other ranks
 * call too with NCCL_SPLIT_NOCOLOR (the fix) and the split is timed. `subset-only`: they never
 * call, so the callers block; the hang guard is expected to stop it at the deadline with
 * "rank R never reached ncclCommSplit", kill every rank and keep what was measured before.
 */
import { minGpusOf, minNcclOf } from '../../protocol/catalogue';
import { creationSteps, needsNccl, needsRanks, warmCommunicator, type ExperimentModule } from './experiment';

const NOCOLOR = -1;

export const splitSubsetExperiment: ExperimentModule<{ parent: number }> = {
  id: 'split-subset',
  plan(ctx) {
    const skip = needsNccl(ctx, minNcclOf('split-subset')) ?? needsRanks(ctx, minGpusOf('split-subset'));
    if (skip) return { skip };
    return [
      { variant: 'nocolor', steps: creationSteps(ctx.options, 'ncclCommSplit (others pass NCCL_SPLIT_NOCOLOR)', 'split to first collective') },
      {
        variant: 'subset-only',
        hangIsResult: 'field case C4: when only some ranks call ncclCommSplit, the callers block',
        steps: creationSteps(ctx.options, 'ncclCommSplit (only the subset calls)', 'split to first collective'),
      },
    ];
  },
  async setup(rc) {
    return { parent: await warmCommunicator(rc) };
  },
  async iteration(rc, variant, { parent }) {
    const inSubset = rc.rank < Math.ceil(rc.worldSize / 2);
    if (variant === 'subset-only') {
      // Untimed on purpose: a barrier would make the callers wait for ranks that never come.
      if (!inSubset) return new Promise<never>(() => undefined); // this rank never calls
      await rc.untimed('ncclCommSplit', () => rc.native.commSplit(parent, 0, rc.rank, null));
      throw new Error('ncclCommSplit returned although part of the parent never called it');
    }
    const { comm } = await rc.timed('call', 'ncclCommSplit', (gen) => rc.native.commSplit(parent, inSubset ? 0 : NOCOLOR, rc.rank, null, gen));
    if (!inSubset) {
      if (comm !== null) throw new Error(`NCCL_SPLIT_NOCOLOR gave rank ${rc.rank} a communicator`);
      await rc.sitOut('first');
      return;
    }
    if (comm === null) throw new Error(`ncclCommSplit returned no communicator on rank ${rc.rank}`);
    await rc.timed('first', 'first allreduce', (gen) => rc.native.allReduce(comm, rc.options.firstCollectiveBytes, gen));
    await rc.untimed('ncclCommDestroy (side group)', () => rc.native.commDestroy(comm));
  },
  async teardown(rc, _variant, { parent }) {
    await rc.untimed('ncclCommDestroy (parent)', () => rc.native.commDestroy(parent));
  },
};
