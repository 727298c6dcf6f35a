/**
 * init: ncclCommInitRankConfig (blocking) on every rank; the first collective on the new
 * communicator; a steady allreduce on the warm communicator as the bandwidth reference.
 */
import type { RunOptions } from '../../protocol/events';
import { minNcclOf } from '../../protocol/catalogue';
import { BLOCKING, firstStep, formatBytes, needsNccl, type ExperimentModule } from './experiment';

export const initExperiment: ExperimentModule = {
  id: 'init',
  plan(ctx) {
    const skip = needsNccl(ctx, minNcclOf('init'));
    if (skip) return { skip };
    return [
      {
        variant: 'default',
        steps: [
          { step: 'call', label: 'ncclCommInitRankConfig', kind: 'call' },
          firstStep(ctx.options),
          { step: 'total', label: 'init to first collective', kind: 'toFirst', sumOf: ['call', 'first'] },
          { step: 'steady', label: `steady ${formatBytes(steadyBytes(ctx.options))} allreduce`, kind: 'steady' },
        ],
      },
    ];
  },
  async iteration(rc) {
    const id = await rc.uniqueId();
    const { comm } = await rc.timed('call', 'ncclCommInitRankConfig', (gen) =>
      rc.native.commInitRank(rc.worldSize, id, rc.rank, BLOCKING, gen),
    );
    rc.markMemory('afterCall', [comm]);
    await rc.timed('first', 'first allreduce', (gen) => rc.native.allReduce(comm, rc.options.firstCollectiveBytes, gen));
    rc.markMemory('afterFirst', [comm]);
    // The first message of the steady size may connect another algorithm: warm it, then time.
    await rc.untimed('allreduce (warm steady size)', () => rc.native.allReduce(comm, rc.options.steadyBytes));
    await rc.timed('steady', 'steady allreduce', (gen) => rc.native.allReduce(comm, rc.options.steadyBytes, gen));
    await rc.untimed('ncclCommDestroy', () => rc.native.commDestroy(comm));
  },
};

function steadyBytes(options: RunOptions): number {
  return options.steadyBytes ?? 64 << 20;
}
