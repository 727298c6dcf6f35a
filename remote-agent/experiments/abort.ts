/**
 * abort: ncclCommAbort of a communicator that has run its first collective; then the rebuild a
 * fault-tolerant job pays next: a fresh init after the abort and its first collective.
 */
import { BLOCKING, firstStep, warmCommunicator, type ExperimentModule } from './experiment';

export const abortExperiment: ExperimentModule = {
  id: 'abort',
  plan(ctx) {
    return [
      {
        variant: 'default',
        steps: [
          { step: 'abort', label: 'ncclCommAbort', kind: 'teardown' },
          { step: 'reinit', label: 'ncclCommInitRankConfig after abort', kind: 'call' },
          firstStep(ctx.options),
          { step: 'total', label: 're-init to first collective', kind: 'toFirst', sumOf: ['reinit', 'first'] },
        ],
      },
    ];
  },
  async iteration(rc) {
    const comm = await warmCommunicator(rc);
    await rc.timed('abort', 'ncclCommAbort', (gen) => rc.native.commAbort(comm, gen));
    const id = await rc.uniqueId();
    const { comm: fresh } = await rc.timed('reinit', 'ncclCommInitRankConfig', (gen) => rc.native.commInitRank(rc.worldSize, id, rc.rank, BLOCKING, gen));
    rc.markMemory('afterCall');
    await rc.timed('first', 'first allreduce', (gen) => rc.native.allReduce(fresh, rc.options.firstCollectiveBytes, gen));
    rc.markMemory('afterFirst');
    await rc.untimed('ncclCommDestroy', () => rc.native.commDestroy(fresh));
  },
};
