/**
 * revoke: ncclCommRevoke of a warm communicator, polled until quiet (the floor a fault-tolerant
 * job pays to stop a communicator without tearing it down), idle or with four 64 MiB
 * allreduces in flight; then either ncclCommDestroy, or ncclCommShrink(NCCL_SHRINK_ABORT)
 * dropping the last rank and the child's first collective (the parent then aborted).
 *
 * In flight means enqueued after the barrier, right before the revoke (the addon's in-flight
 * window: `inFlightAtStart` counts 1 when the event recorded after them was not yet complete as
 * the revoke began). The drop check: the four allreduces sum a buffer of 1.0 into four slices
 * of a zeroed buffer; after the revoke and a stream synchronize each slice is read back (first,
 * middle and last float): a slice holding the number of ranks everywhere completed, any other
 * was dropped (`inFlightCompleted`, `inFlightDropped`, per rank).
 */
import { minNcclOf } from '../../protocol/catalogue';
import { firstStep, needsNccl, needsRanks, needsSymbols, warmCommunicator, type ExperimentModule } from './experiment';
import type { StepPlan } from '../../protocol/events';
import { countInFlight } from './drain';
import { armDropCheck, readDropCheck, releaseDropCheck, setupDropCheck, type DropCheck } from './dropCheck';

const IN_FLIGHT = 4;
const IN_FLIGHT_BYTES = 64 << 20;

function parse(variant: string): { inflight: boolean; then: 'destroy' | 'shrink-abort' } {
  const [load, then] = variant.split('/');
  return { inflight: load === 'inflight', then: then === 'shrink-abort' ? 'shrink-abort' : 'destroy' };
}

export const revokeExperiment: ExperimentModule<DropCheck | undefined> = {
  id: 'revoke',
  plan(ctx) {
    const skip = needsNccl(ctx, minNcclOf('revoke')) ?? needsSymbols(ctx, 'ncclCommRevoke');
    if (skip) return { skip };
    const canShrink = !needsSymbols(ctx, 'ncclCommShrink') && !needsRanks(ctx, 2);
    const revokeSteps: StepPlan[] = [
      { step: 'revokeCall', label: 'ncclCommRevoke (call alone)', kind: 'teardown' },
      { step: 'revoke', label: 'ncclCommRevoke until quiet', kind: 'teardown' },
    ];
    const variants = [];
    for (const load of ['idle', 'inflight']) {
      variants.push({
        variant: `${load}/destroy`,
        steps: [...revokeSteps, { step: 'destroy', label: 'ncclCommDestroy after revoke', kind: 'teardown' as const }, { step: 'total', label: 'revoke + destroy', kind: 'teardown' as const, sumOf: ['revoke', 'destroy'] }],
      });
      if (canShrink) {
        variants.push({
          variant: `${load}/shrink-abort`,
          steps: [
            ...revokeSteps,
            { step: 'call', label: 'ncclCommShrink (NCCL_SHRINK_ABORT) after revoke', kind: 'call' as const },
            firstStep(ctx.options),
            { step: 'total', label: 'revoke + shrink to first collective', kind: 'toFirst' as const, sumOf: ['revoke', 'call', 'first'] },
          ],
        });
      }
    }
    return variants;
  },
  async setup(rc, variant) {
    return parse(variant).inflight ? setupDropCheck(rc, IN_FLIGHT, IN_FLIGHT_BYTES) : undefined;
  },
  async iteration(rc, variant, check) {
    const { then } = parse(variant);
    const comm = await warmCommunicator(rc);
    // Idle: an empty window, so the run shows nothing was in flight; in flight: the four allreduces.
    if (check) armDropCheck(rc, check, comm);
    else rc.native.armInFlight([]);
    const revoked = await rc.timed('revoke', 'ncclCommRevoke', (gen) => rc.native.commRevoke(comm, gen));
    rc.record('revokeCall', revoked.callMs);
    countInFlight(rc, revoked);
    await rc.untimed('stream synchronize (after revoke)', () => rc.native.streamSynchronize());
    if (check) readDropCheck(rc, check);
    if (then === 'destroy') {
      await rc.timed('destroy', 'ncclCommDestroy', (gen) => rc.native.commDestroy(comm, gen));
      return;
    }
    const excluded = rc.worldSize - 1;
    if (rc.rank === excluded) {
      await rc.sitOut('call');
      await rc.sitOut('first');
    } else {
      const { comm: child } = await rc.timed('call', 'ncclCommShrink (NCCL_SHRINK_ABORT)', (gen) => rc.native.commShrink(comm, [excluded], 1, null, gen));
      if (child === null) throw new Error(`ncclCommShrink returned no communicator on surviving rank ${rc.rank}`);
      await rc.timed('first', 'first allreduce', (gen) => rc.native.allReduce(child, rc.options.firstCollectiveBytes, gen));
      await rc.untimed('ncclCommDestroy (child)', () => rc.native.commDestroy(child));
    }
    await rc.untimed('ncclCommAbort (revoked parent)', () => rc.native.commAbort(comm));
  },
  async teardown(rc, _variant, check) {
    if (check) await releaseDropCheck(rc, check);
  },
};
