/**
 * Verdict line on cold start: a fresh process's first communicator to its first collective
 * against a second one in the same process (medians of `cold` and `warm`; the variant's `ratios`
 * where the run has them), beside the study's 493–523 ms vs 98 ms; then NCCL's own view of the
 * two creations (`ncclInit`, its `Init timings` lines, ms in the run file: NCCL prints seconds
 * with two decimals, so a 10 ms resolution), or why that view is missing (`ncclInit.note`).
 */
import type { NcclInitSummary, VariantSummary } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { STUDY_FIGURES as S } from '../studyFigures';
import { costWords, figureClause, relation, relationClause, studyNotCompared, studySentence, type Here } from './agreement';
import { isBelowTimer, median, msAll, stats, times, variantOf, withFewNote, type VerdictLine } from './format';

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
  const study = oneRank
    ? studyNotCompared(
        [S.coldToFirst, S.warmToFirst],
        `these run to the first collective, which at 1 rank has no peer to connect to; the study's communicators had ${S.coldToFirst.host.ranks} ranks`,
      )
    : studySentence(here, [
        figureClause(cold, S.coldToFirst, 'cold'),
        figureClause(warm, S.warmToFirst, 'warm'),
        relationClause(cold, warm, S.coldToFirst, S.warmToFirst, 'cold against warm'),
      ]);
  return { id: 'cold-start', text: `${oneRank ? withFewNote(text, here) : text}${view ? ` ${view}` : ''} ${study}` };
}
