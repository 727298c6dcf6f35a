/**
 * Verdict line on cold start: a fresh process's first communicator to its first collective
 * against a second one in the same process (medians of `cold` and `warm`; the variant's `ratios`
 * where the run has them); then NCCL's own view of the two creations (`ncclInit`, its `Init
 * timings` lines, ms in the run file: NCCL prints seconds with two decimals, so a 10 ms
 * resolution), or why that view is missing (`ncclInit.note`); then the study's 493–523 ms vs 98 ms.
 *
 * Like with like (issue #28): the study's cold figure includes the process's first CUDA and
 * library initialisation, which commcost times apart (`cudaContext`, `ncclLoad`). For the
 * comparison they are added back, iteration by iteration ({@link coldAsStudied}); a run without
 * those steps has no figure of the study's quantity, and its cold figure is named, not judged.
 * The study measured both figures across nodes, over InfiniBand: a run on one host sets the same
 * quantity beside them and does not judge it, the transports differ (agreement.ts studySentence,
 * `acrossNodesOnly`); a run across nodes is judged.
 */
import type { NcclInitSummary, VariantSummary } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { quantileSorted } from '../../protocol/rankTest';
import { STUDY_FIGURES as S } from '../studyFigures';
import { costWords, figureClause, relation, relationClause, studyNotCompared, studySentence, type Here } from './agreement';
import { isBelowTimer, median, ms, msAll, stats, times, variantOf, withFewNote, type VerdictLine } from './format';

/** NCCL's figures are whole 10 ms steps (seconds with two decimals): shown as whole ms. */
function ncclMs(x: number): string {
  return `${Math.round(x)} ms`;
}

/** A ratio of the variant's summary by id (e.g. "coldOverWarm"), when finite. */
export function ratioOf(v: VariantSummary | undefined, id: string): number | undefined {
  const r = v?.ratios?.find((x) => x.id === id)?.value;
  return r !== undefined && Number.isFinite(r) ? r : undefined;
}

/**
 * NCCL's view in one sentence: each creation's total and its `kernels` part (ms, medians), from
 * how many recorded iterations, with the 10 ms resolution; or why it is missing.
 * @param recorded the variant's recorded iterations (the `cold` step's n).
 * @returns '' when the run has no NCCL view and no note (a run file from before it existed).
 */
export function ncclViewSentence(view: NcclInitSummary | undefined, recorded: number | undefined): string {
  if (!view) return '';
  const parts: string[] = [];
  for (const [creation, words] of [
    ['cold', 'the cold init'],
    ['warm', 'the warm one'],
  ] as const) {
    const m = view.medians?.[creation];
    if (!m || m.total === undefined) continue;
    // NCCL prints 0.00 s for a part below its resolution: said so, never "0 ms".
    const kernels =
      m.kernels === undefined ? '' : m.kernels === 0 ? ', "kernels" below that resolution' : `, ${ncclMs(m.kernels)} of it in "kernels"`;
    parts.push(`${words} ${ncclMs(m.total)}${kernels}`);
  }
  const counts = Object.values(view.iterations ?? {});
  const fewest = counts.length > 0 ? Math.min(...counts) : 0;
  const from = recorded !== undefined && fewest < recorded ? ` (read in ${fewest} of ${recorded} iterations)` : '';
  let text = '';
  if (parts.length > 0) {
    text = `NCCL's own Init timings (seconds with two decimals, so a 10 ms resolution): ${parts.join('; ')}${from}.`;
  }
  if (view.note)
    text += `${text ? ' ' : ''}${parts.length > 0 ? "NCCL's view is partial" : "NCCL's own view (Init timings) is missing"}: ${view.note}.`;
  else if (parts.length === 0) text = "NCCL's own view (Init timings) is missing: no creation line was read.";
  if (view.malformedLines > 0)
    text += ` ${view.malformedLines} unreadable Init timings line${view.malformedLines === 1 ? ' was' : 's were'} skipped.`;
  return text;
}

/** The cold figure as the study measured it: with the process's CUDA context and NCCL's load added back. */
export interface ColdAsStudied {
  /** Median over the iterations of cold + cudaContext + ncclLoad (ms). */
  value: number;
  /** Medians of the two parts added back (ms). */
  cudaContext: number;
  ncclLoad: number;
}

/**
 * The run's cold figure with what the study's includes and commcost times apart added back: per
 * iteration `cold` + `cudaContext` + `ncclLoad` (each the MAX over ranks), then the median, as
 * every figure is a median of per-iteration values. From the medians' sum when the samples are
 * not all there. Undefined when the run has no `cudaContext` or `ncclLoad` figure.
 */
export function coldAsStudied(v: VariantSummary | undefined): ColdAsStudied | undefined {
  const step = (id: string) => v?.steps.find((x) => x.step === id);
  const [cold, cuda, load] = [step('cold'), step('cudaContext'), step('ncclLoad')];
  if (!cold?.stats || !cuda?.stats || !load?.stats) return undefined;
  const samples = [cold.samples, cuda.samples, load.samples];
  const n = cold.samples?.length ?? 0;
  const whole = n > 0 && samples.every((x) => x !== undefined && x.length === n && x.every(Number.isFinite));
  const value = whole
    ? quantileSorted(cold.samples!.map((c, i) => c + cuda.samples![i]! + load.samples![i]!).sort((a, b) => a - b), 0.5)
    : cold.stats.median + cuda.stats.median + load.stats.median;
  return { value, cudaContext: cuda.stats.median, ncclLoad: load.stats.median };
}

/** cold-start: a fresh process's first communicator to its first collective, against a warm one, and NCCL's view of both. */
export function coldStartLine(run: RunFile, here: Here): VerdictLine | undefined {
  const v = variantOf(run, 'cold-start', 'default');
  const cold = median(run, 'cold-start', 'default', 'cold');
  const warm = median(run, 'cold-start', 'default', 'warm');
  if (cold === undefined || warm === undefined) return undefined;
  const r = relation(cold, warm);
  // A figure that reads 0 ms makes no ratio: said so in words, never divided by.
  const zero = [isBelowTimer(cold) && 'cold', isBelowTimer(warm) && 'warm'].filter((x): x is string => x !== false);
  const initRatio = ratioOf(v, 'coldInitOverWarmInit');
  const ratio =
    zero.length > 0
      ? `no ratio: ${zero.length === 2 ? 'both read' : `the ${zero[0]} one reads`} 0 ms, below the timer's resolution`
      : `${times(ratioOf(v, 'coldOverWarm') ?? cold / warm)}${initRatio !== undefined && initRatio > 0 ? `; the init call alone ${times(initRatio)}` : ''}`;
  // One unit for both figures: they are compared.
  const [coldText, warmText] = msAll([cold, warm]);
  const text =
    `A fresh process's first communicator costs ${coldText} to its first collective, a second one in the same process ${warmText}: ` +
    `cold ${costWords(r)} warm (${ratio}).`;
  const view = ncclViewSentence(v?.ncclInit, stats(v, 'cold')?.n);
  // Each figure runs to the first collective, which at one rank has no peer to connect to while
  // the study's communicators had several: named, not judged (as firstCollectiveShare does). The
  // cost words are still a judgement: with no study sentence to carry the few-iterations note,
  // the line carries it.
  const oneRank = run.ranks < 2 && S.coldToFirst.host.ranks >= 2;
  const asStudied = coldAsStudied(v);
  let addedBack = '';
  let study: string;
  if (oneRank) {
    study = studyNotCompared(
      [S.coldToFirst, S.warmToFirst],
      `these run to the first collective, which at 1 rank has no peer to connect to; the study's communicators had ${S.coldToFirst.host.ranksText}`,
    );
  } else if (asStudied === undefined || zero.length > 0) {
    // Without the process's start the cold figure is not the quantity the study measured: named.
    const why =
      zero.length > 0
        ? "a figure here reads 0 ms, below the timer's resolution"
        : "the study's cold figure includes the process's first CUDA and library initialisation, and this run has no figure of them to add back";
    study = [studyNotCompared([S.coldToFirst], why), studySentence(here, [figureClause(warm, S.warmToFirst, 'warm')])].filter((x) => x !== '').join(' ');
  } else {
    const withStart = asStudied.value;
    addedBack =
      ` The study's cold figure includes the process's first CUDA and library initialisation, which commcost times apart: ` +
      `with the CUDA context (${ms(asStudied.cudaContext)}) and NCCL's load (${ms(asStudied.ncclLoad)}) added back, cold is ${ms(withStart)} (median of the per-iteration sums), ${times(withStart / warm)} warm.`;
    study = studySentence(here, [
      figureClause(withStart, S.coldToFirst, 'cold with its CUDA and library start'),
      relationClause(withStart, warm, S.coldToFirst, S.warmToFirst, 'cold (with its start) against warm'),
      figureClause(warm, S.warmToFirst, 'warm'),
    ]);
  }
  return { id: 'cold-start', text: `${oneRank ? withFewNote(text, here) : text}${view ? ` ${view}` : ''}${addedBack} ${study}` };
}
