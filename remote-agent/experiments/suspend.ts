/**
 * suspend: ncclCommSuspend(NCCL_SUSPEND_MEM) of a warm communicator (memory released) and
 * ncclCommResume, then the first collective after the resume.
 */
import { minNcclOf } from '../../protocol/catalogue';
import { firstStep, needsNccl, needsSymbols, warmCommunicator, type ExperimentModule } from './experiment';

const NCCL_SUSPEND_MEM = 0x01;

export const suspendExperiment: ExperimentModule = {
  id: 'suspend',
  plan(ctx) {
    const skip = needsNccl(ctx, minNcclOf('suspend')) ?? needsSymbols(ctx, 'ncclCommSuspend', 'ncclCommResume');
    if (skip) return { skip };
    return [
      {
        variant: 'default',
        steps: [
          { step: 'suspend', label: 'ncclCommSuspend (NCCL_SUSPEND_MEM)', kind: 'teardown' },
          { step: 'resume', label: 'ncclCommResume', kind: 'call' },
          firstStep(ctx.options),
          { step: 'total', label: 'resume to first collective', kind: 'toFirst', sumOf: ['resume', 'first'] },
        ],
      },
    ];
  },
  async iteration(rc) {
    const comm = await warmCommunicator(rc);
    rc.markMemory('warm', [comm]);
    await rc.timed('suspend', 'ncclCommSuspend', (gen) => rc.native.commSuspend(comm, NCCL_SUSPEND_MEM, gen));
    rc.markMemory('afterSuspend', [comm]);
    await rc.timed('resume', 'ncclCommResume', (gen) => rc.native.commResume(comm, gen));
    rc.markMemory('afterResume', [comm]);
    await rc.timed('first', 'first allreduce', (gen) => rc.native.allReduce(comm, rc.options.firstCollectiveBytes, gen));
    rc.markMemory('afterFirst', [comm]);
    await rc.untimed('ncclCommDestroy', () => rc.native.commDestroy(comm));
  },
};
