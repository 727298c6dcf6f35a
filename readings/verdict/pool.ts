/**
 * Verdict line on the pool: a prewarmed communicator for every TP shape, built without sharing
 * (`tp…`, the parent's splitShare 0, as the study did) and with sharing (`tp…/splitShare=1`):
 * memory per GPU both ways (the free-memory delta at the last `pool after TP<s>` point, the pool
 * so far, and NCCL's own count, ncclCommMemStats, where the run has it), the switch inside the
 * pool and the on-demand rebuild both ways. Set beside the study's pool (+464 MB per GPU) only
 * where the pool is made as the study's was (TP4 + 2×TP2 + 4×TP1 on 4 GPUs, splitShare 0:
 * studyFigures.ts poolMakeupDiffers); a pool of other shapes is named with both makeups, not
 * compared; one TP2 child is set beside the study's (~76 MB) wherever the run has one. A pool of
 * one shape (one rank) has no child to share, and is said so. NCCL's count is said as NCCL's,
 * with how it stands against the free-memory delta (memStatsWords).
 */
import type { VariantSummary } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { memStatsGap } from '../manyComms';
import { poolMakeupDiffers, STUDY_FIGURES as S } from '../studyFigures';
import { costWordsOf, figureClause, relation, relationClause, studyNotCompared, studySentence, type Clause, type Here } from './agreement';
import { bytes, fewIterationsNote, failureOf, isBelowTimer, isNoMemory, ms, pct, stats, times, type VerdictLine } from './format';

/** The TP shapes of a pool variant: "tp4+2+1" → [4, 2, 1]; "tp2+1/splitShare=1" → [2, 1]. */
export function poolShapes(variant: string): number[] {
  return (variant.split('/')[0]!.match(/\d+/g) ?? []).map(Number);
}

/** One pool variant's figures: memory per GPU of the whole pool (bytes, the free-memory delta at its last `pool after TP<s>` point), NCCL's count of it, one TP2 child, switch and rebuild (ms, step medians). */
export interface PoolFigures {
  variant: string;
  shapes: number[];
  bytes?: number;
  memStatsBytes?: number;
  tp2ChildBytes?: number;
  sw?: number;
  rebuild?: number;
}

/** The figures of one pool variant, read from its summary (memory points and step medians). */
export function poolFigures(v: VariantSummary): PoolFigures {
  const shapes = poolShapes(v.variant);
  const memory = v.memoryBytes ?? {};
  // The points in shape order (largest first): each is the pool so far, the last is the whole pool.
  const points = shapes.map((s) => `pool after TP${s}`).filter((p) => memory[p] !== undefined);
  const last = points[points.length - 1];
  const out: PoolFigures = { variant: v.variant, shapes, sw: stats(v, 'switch')?.median, rebuild: stats(v, 'rebuild')?.median };
  if (last !== undefined) {
    out.bytes = memory[last];
    const m = v.memStats?.[last]?.totalBytes;
    if (m !== undefined && Number.isFinite(m)) out.memStatsBytes = m;
  }
  // One TP2 child per GPU: the step from the point before TP2 (each GPU is in one TP2 child).
  const i = shapes.indexOf(2);
  if (i > 0 && memory['pool after TP2'] !== undefined && memory[`pool after TP${shapes[i - 1]}`] !== undefined) {
    out.tp2ChildBytes = memory['pool after TP2']! - memory[`pool after TP${shapes[i - 1]}`]!;
  }
  return out;
}

/**
 * NCCL's own count beside the free-memory delta, said as NCCL's count (summed over the pool's
 * communicators) and, chosen by the two figures (readings/manyComms.ts memStatsGap, the many-comms
 * notes' rule): within 10% of the delta; above it, the counts overlap and their sum is not memory
 * used; below it, NCCL left part uncounted. Either way the delta is what the GPU lost.
 */
function memStatsWords(f: PoolFigures): string | undefined {
  if (f.memStatsBytes === undefined) return undefined;
  const count = `NCCL's own count, ncclCommMemStats summed over the pool's communicators, ${bytes(f.memStatsBytes)}`;
  if (isNoMemory(f.bytes!)) return `${count}; the free-memory delta is what the GPU lost`;
  const gap = memStatsGap(f.memStatsBytes, f.bytes!);
  if (gap === undefined) return `${count}, within 10% of the free-memory delta`;
  if (gap === 'over') return `${count}, ${times(f.memStatsBytes / f.bytes!)} the free-memory delta: the counts overlap, so their sum is not memory used; the delta is`;
  return `${count}, below the free-memory delta: it leaves ${bytes(f.bytes! - f.memStatsBytes)} uncounted; the delta is what the GPU lost`;
}

function memoryWords(f: PoolFigures, gpuBytes: number | undefined): string {
  const nccl = memStatsWords(f);
  if (isNoMemory(f.bytes!)) return `no memory change measured per GPU (the free-memory delta reads ${bytes(f.bytes!)}${nccl ? `; ${nccl}` : ''})`;
  const share = gpuBytes ? `${pct(f.bytes! / gpuBytes)} of its memory` : undefined;
  // Beside NCCL's count, the figure is named as the free-memory delta: two counts, told apart.
  const delta = nccl === undefined ? share : `${share ? `${share}, ` : ''}the free-memory delta`;
  const extra = [delta, nccl].filter((x) => x !== undefined).join('; ');
  return `${bytes(f.bytes!)} per GPU${extra ? ` (${extra})` : ''}`;
}

/** "takes 872 MiB per GPU (…)" or "shows no memory change per GPU (…)". */
function takesWords(f: PoolFigures, gpuBytes: number | undefined): string {
  return isNoMemory(f.bytes!) ? memoryWords(f, gpuBytes).replace(/^no memory change measured/, 'shows no memory change') : `takes ${memoryWords(f, gpuBytes)}`;
}

function childName(shapes: number[]): string {
  const child = shapes[1];
  return child === undefined ? 'its child' : child === 1 ? 'its one-rank child' : `its TP${child} child`;
}

/** "turns a 49.2 ms rebuild of its one-rank child … into a 0.023 ms switch (…)" or the switch against the rebuild. */
function switchWords(f: PoolFigures): string | undefined {
  if (f.sw === undefined || f.rebuild === undefined) return undefined;
  if (isBelowTimer(f.sw) && !isBelowTimer(f.rebuild))
    return `turns a ${ms(f.rebuild)} rebuild of ${childName(f.shapes)} (split + first collective) into a switch below the timer's resolution (it reads 0 ms)`;
  // A rebuild that reads 0 ms is not set against the switch: "(0 ms) costs more than … (0 ms)".
  if (isBelowTimer(f.rebuild))
    return isBelowTimer(f.sw)
      ? `switching to ${childName(f.shapes)} and rebuilding it on demand both read 0 ms here, below the timer's resolution: neither is set against the other`
      : `switching to ${childName(f.shapes)} takes ${ms(f.sw)}; rebuilding it on demand reads 0 ms here, below the timer's resolution, so the two are not set against each other`;
  const r = relation(f.sw, f.rebuild);
  return r === 'lower'
    ? `turns a ${ms(f.rebuild)} rebuild of ${childName(f.shapes)} (split + first collective) into a ${ms(f.sw)} switch (the rebuild costs ${times(f.rebuild / f.sw)} the switch)`
    : `switching to ${childName(f.shapes)} (${ms(f.sw)}) ${costWordsOf(f.sw, f.rebuild)} rebuilding it on demand (${ms(f.rebuild)}) here`;
}

/**
 * pool: memory of a prewarmed pool, and the switch inside it against an on-demand rebuild, for
 * the plain pool and, where the run has it, the pool with splitShare 1. At one rank (one shape,
 * TP1): the one communicator's memory, and that there is no child to share, switch to or rebuild.
 * @returns undefined when the run has no pool memory figure.
 */
export function poolLine(run: RunFile, here: Here): VerdictLine | undefined {
  const e = run.experiments.find((x) => x.experiment === 'pool');
  const plainV = e?.variants.find((v) => !v.variant.endsWith('/splitShare=1'));
  const sharedV = e?.variants.find((v) => v.variant.endsWith('/splitShare=1'));
  if (!plainV) {
    // The pool was planned but stopped before any figure: what stopped it, from the run's errors.
    const failure = e ? failureOf(run, 'pool') : undefined;
    return failure ? { id: 'pool', text: `The prewarmed pool has no figure in this run (${failure.text}).` } : undefined;
  }
  const plain = poolFigures(plainV);
  const shared = sharedV ? poolFigures(sharedV) : undefined;
  const gpuBytes = run.stamp?.gpus[0]?.totalBytes;
  if (plain.bytes === undefined) return undefined;

  if (plain.shapes.length === 1) {
    const tp = plain.shapes[0]!;
    const call = stats(plainV, `call/tp${tp}`)?.median;
    const first = stats(plainV, `first/tp${tp}`)?.median;
    const built = call !== undefined && first !== undefined ? `, built in ${ms(call)} with its first collective ${ms(first)}` : '';
    const text =
      `The pool here has one shape (TP${tp}) and no child to share: it is the one communicator, ${memoryWords(plain, gpuBytes)}${built}; ` +
      `there is no switch or rebuild to time and no splitShare 1 pool.`;
    return { id: 'pool', text: `${text} ${studyNotCompared([S.poolBytes, S.tp2ChildBytes], `one shape, no child`)}` };
  }

  const plainSwitch = switchWords(plain);
  let text = `A prewarmed pool of every TP shape (${plain.variant}, splitShare 0) ${takesWords(plain, gpuBytes)}${plainSwitch ? ` and ${plainSwitch}` : ''}.`;
  if (shared?.bytes !== undefined) {
    const sharedSwitch = switchWords(shared);
    // A ratio only between two pools that both show memory: "no memory change" is said, never divided by.
    const ratio = !isNoMemory(plain.bytes) && !isNoMemory(shared.bytes) ? `, ${times(shared.bytes / plain.bytes)} the pool without sharing` : '';
    text += ` With splitShare 1 (every child sharing the parent's resources) it ${takesWords(shared, gpuBytes)}${ratio}${sharedSwitch ? `, and ${sharedSwitch}` : ''}.`;
  }
  const childWords = (x: number): string => (isNoMemory(x) ? 'no memory change measured' : `${bytes(x)} per GPU`);
  if (plain.tp2ChildBytes !== undefined) {
    const sharedChild = shared?.tp2ChildBytes;
    text += ` One TP2 child takes ${childWords(plain.tp2ChildBytes)}${sharedChild !== undefined ? ` (${isNoMemory(sharedChild) ? 'no memory change measured' : bytes(sharedChild)} with splitShare 1)` : ''}.`;
  }
  // A figure that reads no memory change or 0 ms is not set beside the study's (no "0 MiB (0×)").
  const clauses: Clause[] = [];
  const unset: string[] = [];
  // Like with like: the pool's memory is set beside the study's only for a pool made as the
  // study's was (TP4 + 2×TP2 + 4×TP1 on 4 GPUs, splitShare 0); another makeup is named, not compared.
  const makeup = poolMakeupDiffers(plain.shapes);
  if (isNoMemory(plain.bytes)) unset.push('the pool here shows no memory change');
  else if (makeup === undefined) clauses.push(figureClause(plain.bytes, S.poolBytes, `pool per GPU (here ${plain.variant})`));
  if (plain.tp2ChildBytes !== undefined && !isNoMemory(plain.tp2ChildBytes)) clauses.push(figureClause(plain.tp2ChildBytes, S.tp2ChildBytes, 'one TP2 child per GPU'));
  // A switch to a one-rank child runs a collective with no peer: named beside the study's switch
  // (a collective among several ranks + graph capture), not judged against it.
  const switchToOne = plain.shapes[1] === 1;
  if (plain.sw !== undefined && !switchToOne) {
    if (isBelowTimer(plain.sw)) unset.push("the switch here reads 0 ms, below the timer's resolution");
    else clauses.push(figureClause(plain.sw, S.poolSwitch, 'switch'));
  }
  const onChild = stats(plainV, 'steady/child')?.median;
  const onFresh = stats(plainV, 'steady/fresh')?.median;
  const child = plain.shapes[1];
  if (child !== undefined && child > 1 && onChild !== undefined && onFresh !== undefined) {
    text += ` A 64 MiB allreduce on the pooled child ${costWordsOf(onChild, onFresh)} on a freshly split one (${ms(onChild)} vs ${ms(onFresh)}).`;
    clauses.push(relationClause(onChild, onFresh, S.steadyChild, S.steadyFresh, '64 MB allreduce, child against fresh'));
  }
  const named =
    plain.sw !== undefined && switchToOne
      ? ` ${studyNotCompared([S.poolSwitch], 'the switch here is to a one-rank child, whose collective has no peer')}`
      : '';
  const notSet = unset.length > 0 ? ` ${studyNotCompared(isNoMemory(plain.bytes) ? [S.poolBytes] : [S.poolSwitch], unset.join('; '))}` : '';
  const otherMakeup = makeup !== undefined && !isNoMemory(plain.bytes) ? ` ${studyNotCompared([S.poolBytes], makeup)}` : '';
  // The switch/rebuild words are judgements: with no study sentence to carry the few-iterations
  // note, the line carries it.
  const few = clauses.length === 0 ? fewIterationsNote(here) : undefined;
  const sentence = studySentence(here, clauses);
  return { id: 'pool', text: `${few ? `${text.replace(/\.$/, '')} (${few}).` : text}${sentence ? ` ${sentence}` : ''}${otherMakeup}${named}${notSet}` };
}
