/**
 * drain: allreduces in flight on a warm communicator, then the time until quiet, as the study
 * measured it: one in-flight allreduce of 16, 64, 128 or 256 MiB, or the mix of the four (the
 * variants named `finalize` and `stream-sync`). Either ncclCommFinalize followed by a stream
 * synchronize in the same span (the graceful path: `finalize` is the call alone, `sync` the rest
 * until the stream is quiet, `total` both), or the stream synchronize alone (the comparison).
 *
 * The allreduces are enqueued after the barrier released, right before the timed call, by the
 * addon's in-flight window (armInFlight): a CUDA event recorded after them is queried as the
 * call begins, and each rank counts `inFlightAtStart` (1 when the event was not yet complete:
 * cuEventQuery == CUDA_ERROR_NOT_READY) and `inFlightEnqueued`. A drain figure is a drain only
 * where `inFlightAtStart` was 1.
 */
import type { StepPlan, VariantPlan } from '../../protocol/events';
import { formatBytes, warmCommunicator, type ExperimentModule, type RankContext } from './experiment';
import type { Timed } from '../nativeBinding';

/** The study's in-flight sizes, bytes (each alone, then the four together). */
export const DRAIN_SIZES: readonly number[] = [16 << 20, 64 << 20, 128 << 20, 256 << 20];

type Mode = 'finalize' | 'stream-sync';

/** The in-flight sizes of a variant: `finalize/64MiB` → [64 MiB]; `finalize` → all four. @throws Error for an unknown variant */
export function drainSizes(variant: string): { mode: Mode; sizes: number[] } {
  const [mode, size] = variant.split('/');
  if (mode !== 'finalize' && mode !== 'stream-sync') throw new Error(`drain has no variant "${variant}"`);
  if (size === undefined) return { mode, sizes: [...DRAIN_SIZES] };
  const bytes = DRAIN_SIZES.find((b) => formatBytes(b).replace(' ', '') === size);
  if (bytes === undefined) throw new Error(`drain has no variant "${variant}" (sizes: ${DRAIN_SIZES.map((b) => formatBytes(b).replace(' ', '')).join(', ')})`);
  return { mode, sizes: [bytes] };
}

function inFlightWords(sizes: number[]): string {
  return sizes.length === 1 ? `one ${formatBytes(sizes[0]!)} allreduce in flight` : `${sizes.length} allreduces in flight (${sizes.map(formatBytes).join(', ')})`;
}

/** The variants: each size alone, then the mix, for finalize and for the stream synchronize. */
export function drainVariants(): VariantPlan[] {
  const variants: VariantPlan[] = [];
  for (const mode of ['finalize', 'stream-sync'] as const) {
    for (const name of [...DRAIN_SIZES.map((b) => `${mode}/${formatBytes(b).replace(' ', '')}`), mode]) {
      const { sizes } = drainSizes(name);
      const steps: StepPlan[] =
        mode === 'finalize'
          ? [
              { step: 'finalize', label: `ncclCommFinalize, ${inFlightWords(sizes)}`, kind: 'teardown' },
              { step: 'sync', label: 'then until the stream is quiet', kind: 'teardown' },
              { step: 'total', label: 'finalize until quiet', kind: 'teardown', sumOf: ['finalize', 'sync'] },
            ]
          : [{ step: 'sync', label: `stream synchronize, ${inFlightWords(sizes)}`, kind: 'teardown' }];
      variants.push({ variant: name, steps });
    }
  }
  return variants;
}

/** Counts what the in-flight window saw (absent window: nothing was in flight). */
export function countInFlight(rc: Pick<RankContext, 'count'>, t: Timed): void {
  rc.count('inFlightAtStart', t.inFlight?.atStart ? 1 : 0);
  rc.count('inFlightEnqueued', t.inFlight?.enqueued ?? 0);
}

export const drainExperiment: ExperimentModule<{ buffer: number; comm?: number }> = {
  id: 'drain',
  plan() {
    return drainVariants();
  },
  async setup(rc, variant) {
    const { mode } = drainSizes(variant);
    const { buffer } = await rc.untimed(`cuMemAlloc ${formatBytes(Math.max(...DRAIN_SIZES))}`, () => rc.native.memAlloc(Math.max(...DRAIN_SIZES), 'cuda'));
    return { buffer, comm: mode === 'stream-sync' ? await warmCommunicator(rc) : undefined };
  },
  async iteration(rc, variant, state) {
    const { mode, sizes } = drainSizes(variant);
    const comm = state.comm ?? (await warmCommunicator(rc));
    // Enqueued by the next timed op after its barrier, right before its span (in place on one buffer).
    const arm = (untilQuiet: boolean) => rc.native.armInFlight(sizes.map((bytes) => ({ comm, bytes, buffer: state.buffer })), { untilQuiet });
    if (mode === 'stream-sync') {
      arm(false);
      countInFlight(rc, await rc.timed('sync', 'stream synchronize', (gen) => rc.native.streamSynchronize(gen)));
      return;
    }
    arm(true);
    const t = await rc.timed('window', 'ncclCommFinalize until the stream is quiet', (gen) => rc.native.commFinalize(comm, gen));
    countInFlight(rc, t);
    const callMs = t.inFlight?.callMs ?? t.ms;
    rc.record('finalize', callMs);
    rc.record('sync', t.ms - callMs);
    await rc.untimed('ncclCommDestroy', () => rc.native.commDestroy(comm));
  },
  async teardown(rc, _variant, state) {
    const comm = state.comm;
    if (comm !== undefined) await rc.untimed('ncclCommDestroy', () => rc.native.commDestroy(comm));
    await rc.untimed('cuMemFree', () => rc.native.memFree(state.buffer));
  },
};
