/**
 * The pool at n GPUs, estimated from the memory per communicator the runs measured at each
 * communicator size (the pool experiment's points `pool after TP<s>`: one shape's memory is the
 * step between two points). Counting rule: a pool of every TP shape of n GPUs (n, n/2, …, 1) holds
 * n/s communicators of size s per shape; each GPU is in exactly one communicator of each shape, so
 * a GPU holds one communicator per shape and its memory is the sum over shapes of one
 * communicator of that size. Sizes the runs did not measure are extrapolated linearly in
 * log2(size) through the measured sizes (least squares), or held at the one measured size's figure
 * when only one was measured; never below 0. A run at n GPUs replaces the estimate.
 *
 * When a run has the many-comms experiment's curve (readings/manyComms.ts), a GPU count the pool
 * did not measure is read from it instead of extrapolated: a pool of k shapes is one init plus k−1
 * splits without sharing on each GPU, so its memory per GPU is many-comms' `init` at N = 1 plus its
 * `split/splitShare=0` at N = k−1 (the run's points, or a straight line between the two measured
 * counts around it), said so in the basis — with the caveat that those communicators span the run's
 * ranks, not the pool's sizes.
 *
 * At 1 GPU the pool of every TP shape is one TP1 communicator: on runs of 1 rank without a pool,
 * its memory is the init experiment's communicator (`init/default/afterFirst`), measured, said so. Pure.
 */
import { memoryTerm, type PlanRun } from './terms';
import { poolVariants, tpShapes } from './strategies';
import { curveMemoryAt, manyCommsCurve, type CurveMemory } from '../manyComms';

/** The memory of one communicator of `size` ranks, per GPU, measured or extrapolated. */
export interface SizeMemory {
  size: number;
  bytes: number;
  measured: boolean;
}

/** A pool of every TP shape at `gpus` GPUs. */
export interface PoolEstimate {
  gpus: number;
  /** Its TP shapes, largest first. */
  shapes: number[];
  /** Communicators over the node: Σ gpus/s over the shapes. */
  communicators: number;
  /** Communicators each GPU is in: one per shape. */
  perGpu: number;
  /** Memory per GPU (bytes); undefined when the runs measured no size. */
  bytesPerGpu?: number;
  /** True when a run at this many GPUs measured the pool: then it is no estimate. */
  measured: boolean;
  perSize: SizeMemory[];
  /** What it rests on, in words (sizes measured, file, how extrapolated). */
  basis: string;
  /** True when the memory comes from a run's many-comms curve (see the module's comment), not from the pool's sizes. */
  fromManyComms?: boolean;
}

/** Memory per GPU of `communicators` made as one init and the rest split without sharing, from the first run with a many-comms curve that reaches that count. */
export function manyCommsPool(runs: readonly PlanRun[], communicators: number): { bytes: number; perComm: number[]; basis: string } | undefined {
  const words = (m: CurveMemory): string => (m.how === 'measured' ? 'measured' : `interpolated between N=${m.from.join(' and N=')}`);
  for (const p of runs) {
    const curve = manyCommsCurve(p.run);
    if (!curve) continue;
    const init = curveMemoryAt(curve, 'init', 1);
    const splits = Array.from({ length: communicators }, (_, i) => curveMemoryAt(curve, 'split/splitShare=0', i));
    if (!init || splits.some((x) => x === undefined)) continue;
    const k = communicators - 1;
    const split = splits[k]!;
    const perComm = [init.bytes, ...splits.slice(1).map((x, i) => Math.max(0, x!.bytes - splits[i]!.bytes))];
    const ranks = `${curve.ranks} rank${curve.ranks === 1 ? '' : 's'}`;
    const splitPart = k > 0 ? ` + split/splitShare=0 at N=${k} (${words(split)})` : '';
    return {
      bytes: init.bytes + split.bytes,
      perComm,
      basis: `from many-comms (${p.file}): init at N=1 (${words(init)})${splitPart}; those communicators span ${ranks}, not the pool's sizes`,
    };
  }
  return undefined;
}

/** The per-size memory the runs measured, from the plain pool's points, with the file it came from. */
export function measuredSizes(runs: readonly PlanRun[], ranks: number): { sizes: SizeMemory[]; file?: string; variant: string; total?: number } {
  const { plain } = poolVariants(runs, ranks);
  const built = tpShapes(ranks);
  for (const p of runs) {
    const v = p.run.experiments.find((e) => e.experiment === 'pool')?.variants.find((x) => x.variant === plain);
    const points = v?.memoryBytes;
    if (!points) continue;
    const sizes: SizeMemory[] = [];
    let before = 0;
    for (const s of built) {
      const at = points[`pool after TP${s}`];
      if (typeof at !== 'number' || !Number.isFinite(at)) break;
      sizes.push({ size: s, bytes: Math.max(0, at - before), measured: true });
      before = at;
    }
    if (sizes.length > 0) return { sizes, file: p.file, variant: plain, ...(sizes.length === built.length ? { total: before } : {}) };
  }
  return { sizes: [], variant: plain };
}

/** Least squares of bytes on log2(size): [intercept, slope]; slope 0 with one size. */
function fit(sizes: readonly SizeMemory[]): [number, number] {
  const xs = sizes.map((s) => Math.log2(s.size));
  const ys = sizes.map((s) => s.bytes);
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  const sxx = xs.reduce((a, x) => a + (x - mx) ** 2, 0);
  const slope = sxx > 0 ? xs.reduce((a, x, i) => a + (x - mx) * (ys[i]! - my), 0) / sxx : 0;
  return [my - slope * mx, slope];
}

/**
 * The pool of every TP shape at each of `gpuCounts` GPUs.
 * @param ranks the runs' rank count (a pool at that count is measured when the runs have it)
 */
export function estimatePools(runs: readonly PlanRun[], ranks: number, gpuCounts: readonly number[]): PoolEstimate[] {
  const m = measuredSizes(runs, ranks);
  const [a, b] = m.sizes.length > 0 ? fit(m.sizes) : [0, 0];
  const sizeList = m.sizes.map((s) => s.size).join(', ');
  const how =
    m.sizes.length === 0
      ? 'no size measured: the runs have no pool experiment'
      : m.sizes.length === 1
        ? `size ${sizeList} measured (pool/${m.variant}, ${m.file}); other sizes held at its figure`
        : `sizes ${sizeList} measured (pool/${m.variant}, ${m.file}); other sizes extrapolated linearly in log2(size)`;
  return [...new Set(gpuCounts)].map((gpus): PoolEstimate => {
    const shapes = tpShapes(gpus);
    const perSize = shapes.map((s): SizeMemory => {
      const known = m.sizes.find((x) => x.size === s);
      return known ?? { size: s, bytes: Math.max(0, a + b * Math.log2(s)), measured: false };
    });
    const measured = gpus === ranks && m.total !== undefined;
    // At 1 GPU on a 1-rank run the pool is the init experiment's TP1 communicator: its figure is the pool's.
    const one = !measured && gpus === 1 && ranks === 1 ? memoryTerm(runs, 'the TP1 communicator', 'init', ['default'], 'afterFirst') : undefined;
    if (one?.value !== undefined && one.source) {
      return {
        gpus,
        shapes,
        communicators: 1,
        perGpu: 1,
        bytesPerGpu: one.value,
        measured: true,
        perSize: [{ size: 1, bytes: one.value, measured: true }],
        basis: `measured: at 1 GPU the pool is the one TP1 communicator, init/${one.source.variant}/${one.source.step} (${one.source.file})`,
      };
    }
    const many = measured ? undefined : manyCommsPool(runs, shapes.length);
    if (many) {
      return {
        gpus,
        shapes,
        communicators: shapes.reduce((x, s) => x + gpus / s, 0),
        perGpu: shapes.length,
        bytesPerGpu: many.bytes,
        measured: false,
        perSize: shapes.map((size, i) => ({ size, bytes: many.perComm[i] ?? 0, measured: false })),
        basis: `estimate: ${many.basis}`,
        fromManyComms: true,
      };
    }
    const bytesPerGpu = measured ? m.total : m.sizes.length > 0 ? perSize.reduce((x, s) => x + s.bytes, 0) : undefined;
    return {
      gpus,
      shapes,
      communicators: shapes.reduce((x, s) => x + gpus / s, 0),
      perGpu: shapes.length,
      ...(bytesPerGpu !== undefined ? { bytesPerGpu } : {}),
      measured,
      perSize,
      // At 1 GPU without the init experiment's figure either, the basis says both are lacking.
      basis: measured ? `measured: pool/${m.variant}, last point (${m.file})` : `estimate: ${how}${one !== undefined && m.sizes.length === 0 ? `; nor the TP1 communicator's memory, which is the pool at 1 GPU (${one.missing?.why ?? 'no figure'})` : ''}`,
    };
  });
}
