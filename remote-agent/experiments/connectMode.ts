/**
 * connect-mode: the same creation with NCCL_RUNTIME_CONNECT=1 (default since 2.22: connect at
 * the first collective that needs each algorithm) and =0 (connect everything at creation), each
 * in fresh rank processes since NCCL reads the variable once: time and memory move between the
 * call and the first collective. Variants: init over all ranks (first collective small, then a
 * first large one, which may connect another algorithm), and a one-rank communicator made by
 * ncclCommSplit with color = rank (NVIDIA/nccl#2363: a 1-rank communicator allocating a network
 * buffer it never uses).
 */
import { BLOCKING, creationSteps, formatBytes, needsNccl, warmCommunicator, type ExperimentModule } from './experiment';

function parse(variant: string): { shape: 'init' | 'one-rank'; runtimeConnect: string } {
  const [shape, setting] = variant.split('/');
  return { shape: shape === 'one-rank' ? 'one-rank' : 'init', runtimeConnect: setting?.split('=')[1] ?? '1' };
}

export const connectModeExperiment: ExperimentModule = {
  id: 'connect-mode',
  variantEnv(variant) {
    return { NCCL_RUNTIME_CONNECT: parse(variant).runtimeConnect };
  },
  plan(ctx) {
    const skip = needsNccl(ctx, '2.22.3');
    if (skip) return { skip };
    const large = formatBytes(ctx.options.steadyBytes ?? 64 << 20);
    const variants = [];
    for (const rc of ['1', '0']) {
      variants.push({
        variant: `init/runtimeConnect=${rc}`,
        steps: [
          ...creationSteps(ctx.options, 'ncclCommInitRankConfig', 'init to first collective'),
          { step: 'firstLarge', label: `first ${large} allreduce (large-message algorithm)`, kind: 'first' as const },
        ],
      });
    }
    for (const rc of ['1', '0']) variants.push({ variant: `one-rank/runtimeConnect=${rc}`, steps: creationSteps(ctx.options, 'ncclCommSplit (color = rank)', 'split to first collective') });
    return variants;
  },
  async iteration(rc, variant) {
    const { shape } = parse(variant);
    if (shape === 'init') {
      const id = await rc.uniqueId();
      const { comm } = await rc.timed('call', 'ncclCommInitRankConfig', (gen) => rc.native.commInitRank(rc.worldSize, id, rc.rank, BLOCKING, gen));
      rc.markMemory('afterCall');
      await rc.timed('first', 'first allreduce', (gen) => rc.native.allReduce(comm, rc.options.firstCollectiveBytes, gen));
      rc.markMemory('afterFirst');
      await rc.timed('firstLarge', 'first large allreduce', (gen) => rc.native.allReduce(comm, rc.options.steadyBytes, gen));
      rc.markMemory('afterFirstLarge');
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
