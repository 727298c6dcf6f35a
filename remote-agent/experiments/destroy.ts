/**
 * destroy: ncclCommFinalize then ncclCommDestroy of a communicator that has run its first
 * collective (the graceful release).
 */
import { warmCommunicator, type ExperimentModule } from './experiment';

export const destroyExperiment: ExperimentModule = {
  id: 'destroy',
  plan() {
    return [
      {
        variant: 'default',
        steps: [
          { step: 'finalize', label: 'ncclCommFinalize', kind: 'teardown' },
          { step: 'destroy', label: 'ncclCommDestroy', kind: 'teardown' },
          { step: 'total', label: 'finalize + destroy', kind: 'teardown', sumOf: ['finalize', 'destroy'] },
        ],
      },
    ];
  },
  async iteration(rc) {
    const comm = await warmCommunicator(rc);
    await rc.timed('finalize', 'ncclCommFinalize', (gen) => rc.native.commFinalize(comm, gen));
    await rc.timed('destroy', 'ncclCommDestroy', (gen) => rc.native.commDestroy(comm, gen));
  },
};
