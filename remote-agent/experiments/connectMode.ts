/**
 * connect-mode: the same creation with NCCL_RUNTIME_CONNECT=1 (default since 2.22: connect at
 * the first collective that needs each algorithm) and =0 (connect everything at creation), each
 * in fresh rank processes since NCCL reads the variable once: time and memory move between the
 * call and the first collective. Variants: init over all ranks (the first small collective and
 * the second, then the first large one, which may connect another algorithm, and the second), the
 * same init with NCCL_ALGO=Ring and NCCL_ALGO=Tree (NCCL connects each algorithm lazily, so each
 * pays its own connect at its first collective; Tree needs 2 ranks; when NCCL refuses the
 * algorithm for a collective, the variant fails with NCCL's own text), and a one-rank
 * communicator made by ncclCommSplit with color = rank (NVIDIA/nccl#2363: a 1-rank communicator
 * allocating a network buffer it never uses), also with NCCL_CUMEM_ENABLE=0 (field case C3 asks
 * for both memory allocators: cuMem and plain cudaMalloc).
 */
import type { StepPlan, VariantPlan } from '../../protocol/events';
import { minNcclOf } from '../../protocol/catalogue';
import { BLOCKING, creationSteps, formatBytes, needsNccl, needsRanks, warmCommunicator, type ExperimentModule, type PlanContext } from './experiment';

/** NCCL_ALGO values with a variant of their own, and the ranks each needs. */
const ALGORITHMS: readonly { algo: string; ranks: number }[] = [
  { algo: 'Ring', ranks: 1 },
  { algo: 'Tree', ranks: 2 },
];

/**
 * "init/runtimeConnect=1/algo=Tree" or "one-rank/runtimeConnect=0/cumem=0" → its parts (algo
 * undefined: NCCL chooses; cumem undefined: NCCL's default allocator).
 */
export function parseConnectVariant(variant: string): { shape: 'init' | 'one-rank'; runtimeConnect: string; algo?: string; cumem?: string } {
  const [shape, setting, extra] = variant.split('/');
  return {
    shape: shape === 'one-rank' ? 'one-rank' : 'init',
    runtimeConnect: setting?.split('=')[1] ?? '1',
    ...(extra?.startsWith('algo=') ? { algo: extra.slice(5) } : {}),
    ...(extra?.startsWith('cumem=') ? { cumem: extra.slice(6) } : {}),
  };
}

/** The steps of an init variant: creation, the first and second small collective, the first and second large one. */
function initSteps(ctx: Pick<PlanContext, 'options'>): StepPlan[] {
  const small = formatBytes(ctx.options.firstCollectiveBytes ?? 1 << 20);
  const large = formatBytes(ctx.options.steadyBytes ?? 64 << 20);
  return [
    ...creationSteps(ctx.options, 'ncclCommInitRankConfig', 'init to first collective'),
    { step: 'second', label: `second ${small} allreduce`, kind: 'steady' },
    { step: 'firstLarge', label: `first ${large} allreduce (large-message algorithm)`, kind: 'first' },
    { step: 'secondLarge', label: `second ${large} allreduce`, kind: 'steady' },
  ];
}

/** Variants the last plan left out on this host (Tree on one GPU), with why. */
let skippedVariants: { variant: string; reason: string }[] = [];

export const connectModeExperiment: ExperimentModule = {
  id: 'connect-mode',
  variantEnv(variant) {
    const { runtimeConnect, algo, cumem } = parseConnectVariant(variant);
    return { NCCL_RUNTIME_CONNECT: runtimeConnect, ...(algo ? { NCCL_ALGO: algo } : {}), ...(cumem ? { NCCL_CUMEM_ENABLE: cumem } : {}) };
  },
  plan(ctx) {
    skippedVariants = [];
    const skip = needsNccl(ctx, minNcclOf('connect-mode'));
    if (skip) return { skip };
    const variants: VariantPlan[] = [];
    for (const rc of ['1', '0']) variants.push({ variant: `init/runtimeConnect=${rc}`, steps: initSteps(ctx) });
    for (const rc of ['1', '0']) variants.push({ variant: `one-rank/runtimeConnect=${rc}`, steps: creationSteps(ctx.options, 'ncclCommSplit (color = rank)', 'split to first collective') });
    for (const rc of ['1', '0']) variants.push({ variant: `one-rank/runtimeConnect=${rc}/cumem=0`, steps: creationSteps(ctx.options, 'ncclCommSplit (color = rank)', 'split to first collective') });
    // Last: an algorithm NCCL refuses here fails its own variant only (each runs in processes of
    // its own).
    for (const { algo, ranks } of ALGORITHMS) {
      const variant = `init/runtimeConnect=1/algo=${algo}`;
      const reason = needsRanks(ctx, ranks);
      if (reason) skippedVariants.push({ variant, reason: `NCCL_ALGO=${algo} ${reason}` });
      else variants.push({ variant, steps: initSteps(ctx) });
    }
    return variants;
  },
  skippedVariants() {
    return skippedVariants;
  },
  async iteration(rc, variant) {
    const { shape } = parseConnectVariant(variant);
    if (shape === 'init') {
      const id = await rc.uniqueId();
      const { comm } = await rc.timed('call', 'ncclCommInitRankConfig', (gen) => rc.native.commInitRank(rc.worldSize, id, rc.rank, BLOCKING, gen));
      rc.markMemory('afterCall');
      await rc.timed('first', 'first allreduce', (gen) => rc.native.allReduce(comm, rc.options.firstCollectiveBytes, gen));
      rc.markMemory('afterFirst');
      await rc.timed('second', 'second allreduce', (gen) => rc.native.allReduce(comm, rc.options.firstCollectiveBytes, gen));
      await rc.timed('firstLarge', 'first large allreduce', (gen) => rc.native.allReduce(comm, rc.options.steadyBytes, gen));
      rc.markMemory('afterFirstLarge');
      await rc.timed('secondLarge', 'second large allreduce', (gen) => rc.native.allReduce(comm, rc.options.steadyBytes, gen));
      await rc.untimed('ncclCommDestroy', () => rc.native.commDestroy(comm));
      return;
    }
    const parent = await warmCommunicator(rc);
    rc.markBaseline();
    const { comm } = await rc.timed('call', 'ncclCommSplit', (gen) => rc.native.commSplit(parent, rc.rank, 0, null, gen));
    if (comm === null) throw new Error(`ncclCommSplit returned no one-rank communicator on rank ${rc.rank}`);
    rc.markMemory('afterCall');
    await rc.timed('first', 'first allreduce', (gen) => rc.native.allReduce(comm, rc.options.firstCollectiveBytes, gen));
    rc.markMemory('afterFirst');
    await rc.untimed('ncclCommDestroy (one-rank)', () => rc.native.commDestroy(comm));
    await rc.untimed('ncclCommDestroy (parent)', () => rc.native.commDestroy(parent));
  },
};
