/**
 * init: ncclCommInitRankConfig (blocking) on every rank; the first collective on the new
 * communicator; a steady allreduce on the warm communicator as the bandwidth reference.
 * With RunOptions.firstUse, also `default/first=broadcast` (the first use a broadcast from rank 0, then
 * the same broadcast warm) and `default/first=sendrecv` (a send/recv pair between ranks 2k and 2k+1,
 * then the same pair warm; needs 2 ranks).
 * Variant `scalable`: the same communicator made by ncclCommInitRankScalable with several unique ids
 * ({@link scalableIdCount}), each made by an evenly spaced rank ({@link idRootRank}) and handed to
 * the others by the coordinator before the barrier; planned after the others, skipped with the
 * version it needs where the library is older than 2.23.4 or lacks the symbol.
 */
import type { FirstUseKind, RunOptions, VariantPlan } from '../../protocol/events';
import { firstUseOf, firstUseVariant } from '../../protocol/events';
import { minNcclOf } from '../../protocol/catalogue';
import { BLOCKING, creationSteps, firstUseKinds, formatBytes, needsNccl, needsRanks, needsSymbols, timeFirstUse, type ExperimentModule, type PlanContext, type RankContext } from './experiment';

/** The variant timing ncclCommInitRankScalable. */
export const SCALABLE_VARIANT = 'scalable';
/** First NCCL release with ncclCommInitRankScalable. */
export const SCALABLE_SINCE = '2.23.4';
/** Ranks per unique id above which PyTorch (TORCH_NCCL_RANKS_PER_ROOT's default) spreads the bootstrap. */
export const RANKS_PER_ROOT = 128;

/**
 * How many unique ids the `scalable` variant passes at `ranks` ranks: ceil(ranks / 128), as
 * PyTorch would, but at least 2 so that several roots are exercised at the rank counts one host
 * has (PyTorch's rule gives 1 there, which is ncclCommInitRankConfig in all but name), and at most
 * `ranks` (NCCL takes at most one id per rank): 1 at one rank.
 * @throws RangeError when `ranks` is not a positive integer
 */
export function scalableIdCount(ranks: number): number {
  if (!Number.isInteger(ranks) || ranks < 1) throw new RangeError(`ranks must be a positive integer, got ${ranks}`);
  return Math.min(ranks, Math.max(2, Math.ceil(ranks / RANKS_PER_ROOT)));
}

/**
 * The rank that makes unique id `i` of `nIds` at `ranks` ranks: the ids' roots evenly spaced, the
 * first `ranks % nIds` of them one rank further apart (NCCL's documented placement of roots).
 * @throws RangeError when `i` is outside [0, nIds) or nIds outside [1, ranks]
 */
export function idRootRank(i: number, ranks: number, nIds: number): number {
  if (!(nIds >= 1 && nIds <= ranks && i >= 0 && i < nIds)) throw new RangeError(`id ${i} of ${nIds} at ${ranks} ranks`);
  const per = Math.floor(ranks / nIds);
  const longer = ranks % nIds;
  return i < longer ? i * (per + 1) : longer * (per + 1) + (i - longer) * per;
}

/** The `scalable` variant's steps, or why it cannot run on this library. */
function scalablePlan(ctx: PlanContext): VariantPlan | { skip: string } {
  const tooOld = needsNccl(ctx, SCALABLE_SINCE);
  // "ncclCommInitRankScalable needs NCCL ≥ 2.23.4, host has 2.22.3" / "ncclCommInitRankScalable not in this NCCL (2.26.2)"
  const why = tooOld ? `ncclCommInitRankScalable ${tooOld}` : needsSymbols(ctx, 'ncclCommInitRankScalable');
  if (why) return { skip: why };
  const n = scalableIdCount(ctx.ranks);
  const call = `ncclCommInitRankScalable (${n} unique id${n === 1 ? '' : 's'})`;
  return { variant: SCALABLE_VARIANT, steps: creationSteps(ctx.options, call, 'init to first collective') };
}

/** The several unique ids, in order, each made by its root rank and shared through the coordinator (untimed). */
async function scalableIds(rc: RankContext): Promise<Buffer[]> {
  const n = scalableIdCount(rc.worldSize);
  const ids: Buffer[] = [];
  for (let i = 0; i < n; i++) {
    const root = idRootRank(i, rc.worldSize, n);
    ids.push(await rc.sharedId(async () => (await rc.untimed('ncclGetUniqueId', () => rc.native.getUniqueId())).id, root));
  }
  return ids;
}

let skipped: { variant: string; reason: string }[] = [];

/** The first-use variants of `base` the run asks for, and those it cannot run here (a send/recv pair at 1 rank). */
export function firstUseVariants(ctx: PlanContext, base: string, steps: (kind: FirstUseKind) => VariantPlan['steps']): { variants: VariantPlan[]; skipped: { variant: string; reason: string }[] } {
  const variants: VariantPlan[] = [];
  const left: { variant: string; reason: string }[] = [];
  for (const kind of firstUseKinds(ctx.options)) {
    const variant = firstUseVariant(base, kind);
    const why = kind === 'sendrecv' ? needsRanks(ctx, 2) : undefined;
    if (why) left.push({ variant, reason: `a send/recv pair ${why}` });
    else variants.push({ variant, steps: steps(kind) });
  }
  return { variants, skipped: left };
}

export const initExperiment: ExperimentModule = {
  id: 'init',
  plan(ctx) {
    const skip = needsNccl(ctx, minNcclOf('init'));
    if (skip) return { skip };
    const r = firstUseVariants(ctx, 'default', (kind) =>
      kind === 'allreduce'
        ? [
            ...creationSteps(ctx.options, 'ncclCommInitRankConfig', 'init to first collective'),
            { step: 'steady', label: `steady ${formatBytes(steadyBytes(ctx.options))} allreduce`, kind: 'steady' },
          ]
        : creationSteps(ctx.options, 'ncclCommInitRankConfig', 'init to first collective', kind),
    );
    // The scalable init is first used by an allreduce: planned when the run asks for that first use.
    const scalable = firstUseKinds(ctx.options).includes('allreduce') ? scalablePlan(ctx) : undefined;
    if (scalable && 'skip' in scalable) r.skipped.push({ variant: SCALABLE_VARIANT, reason: scalable.skip });
    else if (scalable) r.variants.push(scalable);
    skipped = r.skipped;
    return r.variants.length > 0 ? r.variants : { skip: r.skipped.map((x) => x.reason).join('; ') };
  },
  skippedVariants: () => skipped,
  async iteration(rc, variant) {
    const kind = firstUseOf(variant);
    let comm: number;
    if (variant === SCALABLE_VARIANT) {
      const ids = await scalableIds(rc);
      ({ comm } = await rc.timed('call', 'ncclCommInitRankScalable', (gen) => rc.native.commInitRankScalable(rc.worldSize, ids, rc.rank, BLOCKING, gen)));
    } else {
      const id = await rc.uniqueId();
      ({ comm } = await rc.timed('call', 'ncclCommInitRankConfig', (gen) => rc.native.commInitRank(rc.worldSize, id, rc.rank, BLOCKING, gen)));
    }
    rc.markMemory('afterCall', [comm]);
    await timeFirstUse(rc, comm, kind);
    if (kind === 'allreduce') {
      // The first message of the steady size may connect another algorithm: warm it, then time.
      await rc.untimed('allreduce (warm steady size)', () => rc.native.allReduce(comm, rc.options.steadyBytes));
      await rc.timed('steady', 'steady allreduce', (gen) => rc.native.allReduce(comm, rc.options.steadyBytes, gen));
    }
    await rc.untimed('ncclCommDestroy', () => rc.native.commDestroy(comm));
  },
};

function steadyBytes(options: RunOptions): number {
  return options.steadyBytes ?? 64 << 20;
}
