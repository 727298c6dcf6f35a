/**
 * split-share (field case C2, NVIDIA/nccl#964, #864; pytorch/pytorch#129865): K groups over
 * all ranks made one after the other by ncclCommSplit of one warm parent, each warmed by its
 * first collective, with the parent's splitShare 0, 1, and 0 overridden by
 * NCCL_COMM_SPLIT_SHARE_RESOURCES=1 (recorded in the variant's env). Memory per GPU after each
 * group shows whether groups share the parent's resources (flat) or not (linear in K).
 */
import type { StepPlan } from '../../protocol/events';
import { minGpusOf, minNcclOf } from '../../protocol/catalogue';
import { needsNccl, needsRanks, warmCommunicator, type ExperimentModule } from './experiment';

/** How many groups: K = 1 … max(n, 3), so that growth is visible on 2 GPUs too. */
export function groupCount(ranks: number): number {
  return Math.max(ranks, 3);
}

function parse(variant: string): { splitShare: 0 | 1; override: boolean } {
  return { splitShare: variant === 'splitShare=1' ? 1 : 0, override: variant === 'splitShare=0+env' };
}

export const splitShareExperiment: ExperimentModule = {
  id: 'split-share',
  variantEnv(variant): Record<string, string> {
    return parse(variant).override ? { NCCL_COMM_SPLIT_SHARE_RESOURCES: '1' } : {};
  },
  plan(ctx) {
    const skip = needsNccl(ctx, minNcclOf('split-share')) ?? needsRanks(ctx, minGpusOf('split-share'));
    if (skip) return { skip };
    const steps: StepPlan[] = [];
    for (let k = 1; k <= groupCount(ctx.ranks); k++) {
      steps.push({ step: `call/g${k}`, label: `ncclCommSplit, group ${k}`, kind: 'call' });
      steps.push({ step: `first/g${k}`, label: `first allreduce, group ${k}`, kind: 'first' });
    }
    return ['splitShare=0', 'splitShare=1', 'splitShare=0+env'].map((variant) => ({ variant, steps }));
  },
  async iteration(rc, variant) {
    const { splitShare } = parse(variant);
    const parent = await warmCommunicator(rc, { blocking: 1, splitShare });
    rc.markBaseline();
    const groups: number[] = [];
    for (let k = 1; k <= groupCount(rc.worldSize); k++) {
      const { comm } = await rc.timed(`call/g${k}`, 'ncclCommSplit', (gen) => rc.native.commSplit(parent, 0, rc.rank, null, gen));
      if (comm === null) throw new Error(`ncclCommSplit returned no group ${k} on rank ${rc.rank}`);
      groups.push(comm);
      await rc.timed(`first/g${k}`, 'first allreduce', (gen) => rc.native.allReduce(comm, rc.options.firstCollectiveBytes, gen));
      rc.markMemory(`after ${k} group${k === 1 ? '' : 's'}`);
    }
    for (const g of groups.reverse()) await rc.untimed('ncclCommDestroy (group)', () => rc.native.commDestroy(g));
    await rc.untimed('ncclCommDestroy (parent)', () => rc.native.commDestroy(parent));
  },
};
