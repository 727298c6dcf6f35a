/**
 * drain: four allreduces of 16, 64, 128 and 256 MiB in flight on a warm communicator, then
 * the time until quiet: ncclCommFinalize followed by the stream synchronize (the graceful
 * path), or the stream synchronize alone (the comparison).
 */
import { warmCommunicator, type ExperimentModule } from './experiment';

const IN_FLIGHT = [16 << 20, 64 << 20, 128 << 20, 256 << 20];

export const drainExperiment: ExperimentModule<{ buffer: number; comm?: number }> = {
  id: 'drain',
  plan() {
    return [
      {
        variant: 'finalize',
        steps: [
          { step: 'finalize', label: 'ncclCommFinalize, 4 allreduces in flight', kind: 'teardown' },
          { step: 'sync', label: 'stream synchronize after finalize', kind: 'teardown' },
          { step: 'total', label: 'until quiet', kind: 'teardown', sumOf: ['finalize', 'sync'] },
        ],
      },
      { variant: 'stream-sync', steps: [{ step: 'sync', label: 'stream synchronize, 4 allreduces in flight', kind: 'teardown' }] },
    ];
  },
  async setup(rc, variant) {
    const { buffer } = await rc.untimed('cuMemAlloc 256 MiB', () => rc.native.memAlloc(IN_FLIGHT[IN_FLIGHT.length - 1]!, 'cuda'));
    return { buffer, comm: variant === 'stream-sync' ? await warmCommunicator(rc) : undefined };
  },
  async iteration(rc, variant, state) {
    const comm = state.comm ?? (await warmCommunicator(rc));
    for (const bytes of IN_FLIGHT) {
      await rc.untimed('allreduce (enqueue, in flight)', () => rc.native.allReduce(comm, bytes, undefined, { buffer: state.buffer, sync: false }));
    }
    if (variant === 'stream-sync') {
      await rc.timed('sync', 'stream synchronize', (gen) => rc.native.streamSynchronize(gen));
      return;
    }
    await rc.timed('finalize', 'ncclCommFinalize', (gen) => rc.native.commFinalize(comm, gen));
    await rc.timed('sync', 'stream synchronize', (gen) => rc.native.streamSynchronize(gen));
    await rc.untimed('ncclCommDestroy', () => rc.native.commDestroy(comm));
  },
  async teardown(rc, _variant, state) {
    const comm = state.comm;
    if (comm !== undefined) await rc.untimed('ncclCommDestroy', () => rc.native.commDestroy(comm));
    await rc.untimed('cuMemFree', () => rc.native.memFree(state.buffer));
  },
};
