/**
 * shrink: drop the last rank of a warm communicator with ncclCommShrink (the excluded rank does
 * not call), with NCCL_SHRINK_DEFAULT and NCCL_SHRINK_ABORT; then the first collective on the
 * child. The parent is released the way each flag requires: destroy after DEFAULT, abort after
 * ABORT (finalize/destroy after ABORT can hang, pytorch/pytorch#194679).
 *
 * `abort/inflight`: NCCL_SHRINK_ABORT with four 64 MiB allreduces in flight on the parent,
 * enqueued on every rank right before the shrink (the addon's in-flight window; the excluded
 * rank's are enqueued as it passes the barrier it sits out), and the drop check of revoke
 * (dropCheck.ts) on the survivors: `inFlightAtStart`, `inFlightCompleted`, `inFlightDropped`.
 */
import type { VariantPlan } from '../../protocol/events';
import { minGpusOf, minNcclOf } from '../../protocol/catalogue';
import { creationSteps, needsNccl, needsRanks, needsSymbols, shrinkLastRank, warmCommunicator, type ExperimentModule } from './experiment';
import { countInFlight } from './drain';
import { armDropCheck, readDropCheck, releaseDropCheck, setupDropCheck, type DropCheck } from './dropCheck';

const FLAGS: Record<string, 0 | 1> = { default: 0, abort: 1, 'abort/inflight': 1 };
const IN_FLIGHT = 4;
const IN_FLIGHT_BYTES = 64 << 20;

export const shrinkExperiment: ExperimentModule<DropCheck | undefined> = {
  id: 'shrink',
  plan(ctx) {
    const skip = needsNccl(ctx, minNcclOf('shrink')) ?? needsSymbols(ctx, 'ncclCommShrink') ?? needsRanks(ctx, minGpusOf('shrink'));
    if (skip) return { skip };
    return Object.keys(FLAGS).map(
      (variant): VariantPlan => ({
        variant,
        steps: creationSteps(
          ctx.options,
          `ncclCommShrink (${FLAGS[variant] === 1 ? 'NCCL_SHRINK_ABORT' : 'NCCL_SHRINK_DEFAULT'})${variant === 'abort/inflight' ? `, ${IN_FLIGHT} × 64 MiB allreduces in flight` : ''}`,
          'shrink to first collective',
        ),
      }),
    );
  },
  async setup(rc, variant) {
    return variant === 'abort/inflight' ? setupDropCheck(rc, IN_FLIGHT, IN_FLIGHT_BYTES) : undefined;
  },
  async iteration(rc, variant, check) {
    const flags = FLAGS[variant] ?? 0;
    const parent = await warmCommunicator(rc);
    rc.markBaseline();
    if (check) armDropCheck(rc, check, parent);
    const child = await shrinkLastRank(rc, parent, flags, 'ncclCommShrink', check ? (t) => countInFlight(rc, t) : undefined);
    if (child !== undefined) {
      if (check) {
        await rc.untimed('stream synchronize (after the shrink)', () => rc.native.streamSynchronize());
        readDropCheck(rc, check);
      }
      await rc.untimed('ncclCommDestroy (child)', () => rc.native.commDestroy(child));
    }
    if (flags === 1) await rc.untimed('ncclCommAbort (parent)', () => rc.native.commAbort(parent));
    else await rc.untimed('ncclCommDestroy (parent)', () => rc.native.commDestroy(parent));
  },
  async teardown(rc, _variant, check) {
    if (check) await releaseDropCheck(rc, check);
  },
};
