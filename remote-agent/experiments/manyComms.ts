/**
 * many-comms (issue #29): N communicators made one after the other on the same GPUs, each warmed
 * by its first collective, the largest N of the run's counts per iteration (default 1, 2, 4, 8,
 * 16). At each N of the counts: the free-memory delta per GPU since the iteration began (for a
 * split, since the warm parent was made) with ncclCommMemStats of the N communicators where the
 * library has it (point `after N communicators`), and the N-th creation timed (steps `call/nN`,
 * `first/nN`, `total/nN`): how creation cost moves as communicators pile up.
 *
 * Shapes: `init` (ncclCommInitRankConfig over all ranks, a unique id each), `split/splitShare=0`
 * and `split/splitShare=1` (ncclCommSplit of one warm parent made with that splitShare). Knobs,
 * each on the init shape: `init/buffsize=1MiB` (NCCL_BUFFSIZE), `init/maxCTAs=2` (config minCTAs 1,
 * maxCTAs 2), `init/runtimeConnect=0` (NCCL_RUNTIME_CONNECT, NCCL ≥ 2.22.3), `init/cumem=0`
 * (NCCL_CUMEM_ENABLE) and `init/maxP2pPeers=1` (config, NCCL ≥ 2.30.3); the env knobs run in
 * rank processes of their own (NCCL reads them once per process). Memory is meaningful at one rank,
 * so it runs on one GPU; on more, every communicator spans all ranks.
 */
import { DEFAULT_COMM_COUNTS, type RunOptions, type StepPlan, type VariantPlan } from '../../protocol/events';
import { minGpusOf, minNcclOf } from '../../protocol/catalogue';
import type { CommConfig } from '../nativeBinding';
import { BLOCKING, firstStep, needsNccl, needsRanks, warmCommunicator, type ExperimentModule, type PlanContext, type RankContext } from './experiment';

/** The memory point after `n` communicators ("after 1 communicator", "after 4 communicators"). */
export function commCountPoint(n: number): string {
  return `after ${n} communicator${n === 1 ? '' : 's'}`;
}

/** The run's communicator counts, ascending. */
export function commCounts(options: Pick<RunOptions, 'commCounts'>): readonly number[] {
  return options.commCounts ?? DEFAULT_COMM_COUNTS;
}

/** One variant: how its communicators are made and what it sets. */
interface ManyVariant {
  variant: string;
  shape: 'init' | 'split';
  splitShare?: 0 | 1;
  env?: Record<string, string>;
  config?: CommConfig;
  /** Oldest NCCL the knob exists in, when newer than the experiment's. */
  minNccl?: string;
  /** The knob in words, for a skip reason. */
  knob?: string;
}

/** Every variant in run order: the three shapes, then the knobs on the init shape. */
export const MANY_VARIANTS: readonly ManyVariant[] = [
  { variant: 'init', shape: 'init' },
  { variant: 'split/splitShare=0', shape: 'split', splitShare: 0 },
  { variant: 'split/splitShare=1', shape: 'split', splitShare: 1 },
  { variant: 'init/maxCTAs=2', shape: 'init', config: { minCTAs: 1, maxCTAs: 2 }, knob: 'config minCTAs/maxCTAs' },
  { variant: 'init/maxP2pPeers=1', shape: 'init', config: { maxP2pPeers: 1 }, minNccl: '2.30.3', knob: 'config maxP2pPeers' },
  { variant: 'init/buffsize=1MiB', shape: 'init', env: { NCCL_BUFFSIZE: String(1 << 20) } },
  { variant: 'init/runtimeConnect=0', shape: 'init', env: { NCCL_RUNTIME_CONNECT: '0' }, minNccl: '2.22.3', knob: 'NCCL_RUNTIME_CONNECT' },
  { variant: 'init/cumem=0', shape: 'init', env: { NCCL_CUMEM_ENABLE: '0' } },
];

function find(variant: string): ManyVariant {
  const v = MANY_VARIANTS.find((x) => x.variant === variant);
  if (!v) throw new Error(`unknown many-comms variant ${variant}`);
  return v;
}

/** The steps of a variant: the n-th creation, its first collective and their sum at each count n. */
export function manySteps(ctx: Pick<PlanContext, 'options'>, shape: 'init' | 'split'): StepPlan[] {
  const call = shape === 'init' ? 'ncclCommInitRankConfig' : 'ncclCommSplit';
  const first = firstStep(ctx.options).label;
  return commCounts(ctx.options).flatMap((n): StepPlan[] => [
    { step: `call/n${n}`, label: `${call}, communicator ${n}`, kind: 'call' },
    { step: `first/n${n}`, label: `${first}, communicator ${n}`, kind: 'first' },
    { step: `total/n${n}`, label: `communicator ${n} to first collective`, kind: 'toFirst', sumOf: [`call/n${n}`, `first/n${n}`] },
  ]);
}

/** Variants the last plan left out on this host (a knob newer than its NCCL), with why. */
let skippedVariants: { variant: string; reason: string }[] = [];

export const manyCommsExperiment: ExperimentModule = {
  id: 'many-comms',
  variantEnv(variant) {
    return find(variant).env;
  },
  plan(ctx) {
    skippedVariants = [];
    const skip = needsNccl(ctx, minNcclOf('many-comms')) ?? needsRanks(ctx, minGpusOf('many-comms'));
    if (skip) return { skip };
    const variants: VariantPlan[] = [];
    for (const v of MANY_VARIANTS) {
      const tooOld = v.minNccl ? needsNccl(ctx, v.minNccl) : undefined;
      if (tooOld) skippedVariants.push({ variant: v.variant, reason: `${v.knob ?? v.variant} ${tooOld}` });
      else variants.push({ variant: v.variant, steps: manySteps(ctx, v.shape) });
    }
    return variants;
  },
  skippedVariants() {
    return skippedVariants;
  },
  async iteration(rc, variant) {
    const v = find(variant);
    const counts = commCounts(rc.options);
    const largest = counts[counts.length - 1] ?? 1;
    const config: CommConfig = { ...BLOCKING, ...(v.config ?? {}) };
    const parent = v.shape === 'split' ? await warmCommunicator(rc, { ...BLOCKING, splitShare: v.splitShare ?? 0 }) : undefined;
    if (parent !== undefined) rc.markBaseline();
    const comms: number[] = [];
    for (let n = 1; n <= largest; n++) {
      const timed = counts.includes(n);
      comms.push(await createAndWarm(rc, n, timed, parent, config));
      if (timed) rc.markMemory(commCountPoint(n), comms);
    }
    for (const c of comms.reverse()) await rc.untimed('ncclCommDestroy', () => rc.native.commDestroy(c));
    if (parent !== undefined) await rc.untimed('ncclCommDestroy (parent)', () => rc.native.commDestroy(parent));
  },
};

/**
 * The n-th communicator over all ranks — ncclCommSplit of `parent` when given, else
 * ncclCommInitRankConfig with `config` — and its first collective; timed as `call/nN` and
 * `first/nN` when `timed`.
 * @throws Error when ncclCommSplit returns no communicator.
 */
async function createAndWarm(rc: RankContext, n: number, timed: boolean, parent: number | undefined, config: CommConfig): Promise<number> {
  // The unique id is shared through the coordinator before the barrier, never inside the timed span.
  const id = parent === undefined ? await rc.uniqueId() : undefined;
  const make = (gen?: number): Promise<{ comm: number | null; ms: number }> =>
    parent !== undefined ? rc.native.commSplit(parent, 0, rc.rank, null, gen) : rc.native.commInitRank(rc.worldSize, id!, rc.rank, config, gen);
  const label = parent !== undefined ? 'ncclCommSplit' : 'ncclCommInitRankConfig';
  const { comm } = timed ? await rc.timed(`call/n${n}`, label, (gen) => make(gen)) : await rc.untimed(`${label} (communicator ${n})`, () => make());
  if (comm === null) throw new Error(`${label} returned no communicator ${n} on rank ${rc.rank}`);
  const first = (gen?: number) => rc.native.allReduce(comm, rc.options.firstCollectiveBytes, gen);
  if (timed) await rc.timed(`first/n${n}`, 'first allreduce', first);
  else await rc.untimed(`allreduce (first, communicator ${n})`, () => first());
  return comm;
}
