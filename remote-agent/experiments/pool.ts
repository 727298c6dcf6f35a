/**
 * pool: a prewarmed communicator for every reachable tensor-parallel shape (n, n/2, …, 1) of
 * the visible GPUs, built by ncclCommSplit of the full communicator, each warmed by its first
 * collective; memory per GPU after each shape; a 64 MiB allreduce on a pooled child vs on a
 * freshly built one; five 16 MiB collectives interleaved on parent and child; the switch
 * inside the pool (handle swap + one collective on the target + capture and instantiate one
 * allreduce in a CUDA graph) against an on-demand rebuild of the same shape.
 *
 * Two variants: `tp<shapes>` builds the children without sharing (the parent's splitShare 0, as
 * the study did), `tp<shapes>/splitShare=1` from a parent created with splitShare 1, so every
 * child shares the parent's resources. The memory points `pool after TP<s>` are the pool so far
 * (free-memory delta since the iteration began, and ncclCommMemStats of every pooled
 * communicator where the library has it): one shape's memory is the step between two points,
 * the pool's total the last point.
 */
import type { StepPlan } from '../../protocol/events';
import { minNcclOf } from '../../protocol/catalogue';
import { BLOCKING, formatBytes, needsNccl, type ExperimentModule, type RankContext } from './experiment';

/** TP shapes of `n` GPUs: n, n/2, … while even, then 1 (6 → 6, 3, 1). */
export function tpShapes(n: number): number[] {
  const shapes = [n];
  let s = n;
  while (s > 1) {
    s = s % 2 === 0 ? s / 2 : 1;
    shapes.push(s);
  }
  return shapes;
}

const INTERLEAVED = 5;
const INTERLEAVED_BYTES = 16 << 20;

export const poolExperiment: ExperimentModule = {
  id: 'pool',
  plan(ctx) {
    const skip = needsNccl(ctx, minNcclOf('pool'));
    if (skip) return { skip };
    const [n, ...children] = tpShapes(ctx.ranks);
    const steps: StepPlan[] = [
      { step: `call/tp${n}`, label: `ncclCommInitRankConfig TP${n}`, kind: 'call' },
      { step: `first/tp${n}`, label: `first allreduce TP${n}`, kind: 'first' },
    ];
    for (const s of children) {
      steps.push({ step: `call/tp${s}`, label: `ncclCommSplit into TP${s}`, kind: 'call' });
      steps.push({ step: `first/tp${s}`, label: `first allreduce TP${s}`, kind: 'first' });
    }
    if (children.length > 0) {
      const t = children[0]!;
      const steady = formatBytes(ctx.options.steadyBytes ?? 64 << 20);
      steps.push(
        { step: 'steady/child', label: `${steady} allreduce on the pooled TP${t} child`, kind: 'steady' },
        { step: 'steady/fresh', label: `${steady} allreduce on a freshly built TP${t}`, kind: 'steady' },
        { step: 'interleaved', label: `${INTERLEAVED} × ${formatBytes(INTERLEAVED_BYTES)} allreduces alternating TP${n} and TP${t}`, kind: 'steady' },
        { step: 'switchCollective', label: `switch to TP${t}: one collective on the pooled child`, kind: 'steady' },
        { step: 'switchCapture', label: 'switch: capture one allreduce in a CUDA graph', kind: 'steady' },
        { step: 'switchInstantiate', label: 'switch: instantiate the graph', kind: 'steady' },
        { step: 'switch', label: `switch to TP${t} inside the pool`, kind: 'steady', sumOf: ['switchCollective', 'switchCapture', 'switchInstantiate'] },
        { step: 'rebuild/call', label: `on-demand rebuild: ncclCommSplit into TP${t}`, kind: 'call' },
        { step: 'rebuild/first', label: 'on-demand rebuild: first allreduce', kind: 'first' },
        { step: 'rebuild', label: `on-demand rebuild of TP${t} to first collective`, kind: 'toFirst', sumOf: ['rebuild/call', 'rebuild/first'] },
      );
    }
    const name = `tp${tpShapes(ctx.ranks).join('+')}`;
    // A pool of one shape has no children to share with: only the plain variant.
    return children.length > 0 ? [{ variant: name, steps }, { variant: `${name}/splitShare=1`, steps }] : [{ variant: name, steps }];
  },
  async iteration(rc, variant) {
    const [n, ...shapes] = tpShapes(rc.worldSize);
    const id = await rc.uniqueId();
    const config = variant.endsWith('/splitShare=1') ? { ...BLOCKING, splitShare: 1 as const } : BLOCKING;
    const { comm: parent } = await rc.timed(`call/tp${n}`, 'ncclCommInitRankConfig', (gen) => rc.native.commInitRank(rc.worldSize, id, rc.rank, config, gen));
    await rc.timed(`first/tp${n}`, 'first allreduce', (gen) => rc.native.allReduce(parent, rc.options.firstCollectiveBytes, gen));
    rc.markMemory(`pool after TP${n}`, [parent]);
    const children: number[] = [];
    for (const s of shapes) {
      children.push(await splitAndWarm(rc, parent, s, `call/tp${s}`, `first/tp${s}`));
      rc.markMemory(`pool after TP${s}`, [parent, ...children]);
    }
    const target = children[0];
    if (target !== undefined) {
      const t = shapes[0]!;
      const steady = rc.options.steadyBytes;
      await rc.untimed('allreduce (warm steady size on child)', () => rc.native.allReduce(target, steady));
      await rc.timed('steady/child', 'allreduce on pooled child', (gen) => rc.native.allReduce(target, steady, gen));
      const fresh = await splitAndWarm(rc, parent, t);
      await rc.untimed('allreduce (warm steady size on fresh)', () => rc.native.allReduce(fresh, steady));
      await rc.timed('steady/fresh', 'allreduce on fresh communicator', (gen) => rc.native.allReduce(fresh, steady, gen));
      await rc.untimed('ncclCommDestroy (fresh)', () => rc.native.commDestroy(fresh));

      let interleaved = 0;
      for (let i = 0; i < INTERLEAVED; i++) {
        const comm = i % 2 === 0 ? parent : target;
        interleaved += (await rc.timed(`interleaved.${i}`, 'interleaved allreduce', (gen) => rc.native.allReduce(comm, INTERLEAVED_BYTES, gen))).ms;
      }
      rc.record('interleaved', interleaved);

      await rc.timed('switchCollective', 'allreduce on the pooled child', (gen) => rc.native.allReduce(target, rc.options.firstCollectiveBytes, gen));
      const graph = await rc.timed('switchGraph', 'CUDA graph capture + instantiate + launch', (gen) => rc.native.graphAllReduce(target, rc.options.firstCollectiveBytes, gen));
      rc.record('switchCapture', graph.captureMs);
      rc.record('switchInstantiate', graph.instantiateMs);

      const rebuilt = await splitAndWarm(rc, parent, t, 'rebuild/call', 'rebuild/first');
      await rc.untimed('ncclCommDestroy (rebuilt)', () => rc.native.commDestroy(rebuilt));
    }
    for (const c of children.reverse()) await rc.untimed('ncclCommDestroy (pooled child)', () => rc.native.commDestroy(c));
    await rc.untimed('ncclCommDestroy (TP parent)', () => rc.native.commDestroy(parent));
  },
};

/** Splits `parent` into groups of `size` consecutive ranks and runs the first collective; timed when step ids are given. */
async function splitAndWarm(rc: RankContext, parent: number, size: number, callStep?: string, firstStep?: string): Promise<number> {
  const color = Math.floor(rc.rank / size);
  const split = (gen?: number) => rc.native.commSplit(parent, color, rc.rank, null, gen);
  const { comm } = callStep ? await rc.timed(callStep, 'ncclCommSplit', split) : await rc.untimed('ncclCommSplit', () => split());
  if (comm === null) throw new Error(`ncclCommSplit returned no TP${size} communicator on rank ${rc.rank}`);
  const first = (gen?: number) => rc.native.allReduce(comm, rc.options.firstCollectiveBytes, gen);
  if (firstStep) await rc.timed(firstStep, 'first allreduce', first);
  else await rc.untimed('allreduce (first)', () => first());
  return comm;
}
