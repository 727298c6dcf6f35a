/**
 * Verdict lines on a communicator's lifecycle: the first collective's share of a fresh init,
 * rebuilds (split, shrink, grow) against a fresh init, teardown, connect mode, registration,
 * suspend/resume (the pool is in pool.ts, drain and the drop check in inFlight.ts, cold start in
 * coldStart.ts). Each sentence is chosen by the regime its figures fall in
 * (agreement.ts) and each line that the study measured ends with the study's figure and whether
 * this host agrees. A line whose experiment (or step) is missing from the run is left out.
 */
import type { VariantSummary } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { splitNotComparedWhy, STUDY_FIGURES as S, studyNotComparedWhy, type StudyFigure } from '../studyFigures';
import {
  costWordsOf,
  figureClause,
  relation,
  relationClause,
  shareClause,
  shareRegime,
  studyNotCompared,
  studySentence,
  type Clause,
  type Here,
} from './agreement';
import { aRanks, bytes, failureOf, fewIterationsNote, isBelowTimer, median, MiB, ms, msAll, pct, stats, variantOf, withFewNote, type VerdictLine } from './format';

const NO_STUDY = 'The study published no figure for this.';

/** "a fresh communicator of 2 ranks" / "of 1 rank". */
function freshOf(ranks: number): string {
  return `a fresh communicator of ${ranks} rank${ranks === 1 ? '' : 's'}`;
}

/**
 * Why init has no figure to its first collective, from the run: "its first collective has no
 * figure (timed out at init default iteration 2, step first …)"; undefined when init's total is there.
 */
function initFirstMissing(run: RunFile): string | undefined {
  if (median(run, 'init', undefined, 'total') !== undefined) return undefined;
  const failure = failureOf(run, 'init');
  return `its first collective has no figure in this run${failure ? ` (${failure.text})` : ''}`;
}

/** Why the rebuilds have no fresh init to be set against, in a few words (the init line gives the error). */
function freshMissingWords(run: RunFile): string {
  if (median(run, 'init', undefined, 'call') === undefined) return 'no init figure in this run';
  const failure = failureOf(run, 'init');
  return `the init's first collective has no figure in this run${failure ? (failure.timedOut ? ': it timed out' : ': it failed') : ''}`;
}

/** init: where the cost of a fresh communicator to its first collective lies. */
export function firstCollectiveShare(run: RunFile, where: string, here: Here): VerdictLine | undefined {
  const call = median(run, 'init', undefined, 'call');
  const first = median(run, 'init', undefined, 'first');
  const total = median(run, 'init', undefined, 'total');
  if (call === undefined || (first === undefined && total !== undefined)) return undefined;
  if (first === undefined || total === undefined) {
    // The call was timed but the first collective was not (it timed out, or the run stopped):
    // the call is said, and why there is no total, from the run's errors.
    return { id: 'first-collective-share', text: `${where}, ${freshOf(run.ranks)}: ncclCommInitRankConfig ${ms(call)}; ${initFirstMissing(run)}.` };
  }
  if (isBelowTimer(total)) {
    return {
      id: 'first-collective-share',
      text: `${where}, ${freshOf(run.ranks)} reads 0 ms to its first collective (ncclCommInitRankConfig ${ms(call)}, the first collective ${ms(first)}): below the timer's resolution, no cost to divide or set beside the study's.`,
    };
  }
  const of = `${freshOf(run.ranks)} costs ${ms(total)} to its first collective`;
  // Shares are of call + first (their medians; docs/METHOD.md, "Percentages"), so the two add up to
  // 100%, and the study clause gives the same share; the median total need not be that sum.
  const sum = call + first;
  const regime = shareRegime(first, sum);
  const firstText = isBelowTimer(first) ? `${ms(first)} (below the timer's resolution)` : `${ms(first)} (${pct(first / sum)})`;
  // One figure per quantity in one sentence: the total said is the median total; the shares are
  // of call + first, said as such, and their sum is never printed beside it as a second total.
  const notSum =
    Math.abs(sum - total) > 0.005 * total
      ? ` (shares of the call + first collective, each the median of its part: the median total need not be their sum)`
      : '';
  const how =
    regime === 'negligible'
      ? `nearly all of it is ncclCommInitRankConfig (${ms(call)}); the first collective adds ${firstText}`
      : regime === 'majority'
        ? `most of it, ${ms(first)} (${pct(first / sum)}), is paid by the first collective, not by ncclCommInitRankConfig (${ms(call)})${notSum}`
        : `ncclCommInitRankConfig pays ${ms(call)} (${pct(call / sum)}) and the first collective ${ms(first)} (${pct(first / sum)})${notSum}`;
  // One rank has no peer to connect to, while the study's communicators had several: its
  // first-collective share and its init-to-first-collective total are named, not judged. Across
  // nodes the study's own figure across nodes (a fresh init to its first collective) is the one
  // compared; it published no share across nodes.
  const acrossNodes = (run.nodes?.length ?? 1) > 1;
  const study =
    run.ranks < 2 && S.initToFirst.host.ranks >= 2
      ? studyNotCompared(
          [S.initCall, S.initToFirst],
          `a communicator of 1 rank has no peer to connect to, the study's had ${S.initToFirst.host.ranksText}`,
        )
      : acrossNodes
        ? studySentence(here, [figureClause(total, S.nodesFreshToFirst, 'a fresh init to its first collective')])
        : studySentence(here, [
            shareClause(first, sum, S.initToFirst.min - S.initCall.min, S.initToFirst.min, S.initToFirst.host, "first collective's share"),
            figureClause(total, S.initToFirst, 'init to first collective'),
          ]);
  return { id: 'first-collective-share', text: `${where}, ${of}: ${how}. ${study}` };
}

/** The split variant a headline uses: a multi-rank child with its lazy connect (DESIGN, "Readings follow measurement"). */
function headlineSplit(ranks: number): { variant: string; share1: string; name: string; childRanks: number } {
  // The halves are colored rank < n/2 (remote-agent split.ts): at an odd n the first child is the
  // larger, ceil(n/2) ranks, and it is on the critical path (the step is the MAX over ranks), as
  // the annotations say (apiMap.ts splitChildRanks).
  return ranks >= 4
    ? { variant: 'halves/splitShare=0', share1: 'halves/splitShare=1', name: 'split into halves', childRanks: Math.ceil(ranks / 2) }
    : { variant: 'whole/splitShare=0', share1: 'whole/splitShare=1', name: 'split of the same shape', childRanks: ranks };
}

function rankWords(n: number): string {
  return aRanks(n, 'child');
}

/**
 * split, shrink, grow to their first collective, against a fresh init of the same run. Without a
 * fresh-init figure (its first collective timed out) or with one that reads 0 ms, each rebuild is
 * still given, said not set against it; a rebuild experiment that stopped without a figure is
 * named with what stopped it (the run's errors).
 */
export function rebuildLine(run: RunFile, here: Here): VerdictLine | undefined {
  const freshMedian = median(run, 'init', undefined, 'total');
  // A fresh init that reads 0 ms is below the timer's resolution: nothing is divided by it.
  const fresh = freshMedian !== undefined && !isBelowTimer(freshMedian) ? freshMedian : undefined;
  const split = headlineSplit(run.ranks);
  const splitName = `${split.name} (${rankWords(split.childRanks)})`;
  const share0Measured = median(run, 'split', split.variant, 'total') !== undefined;
  const rebuilds: { name: string; experiment: string; variant: string }[] = [
    { name: `${splitName}, splitShare 0`, experiment: 'split', variant: split.variant },
    // "the same" only when the splitShare 0 entry it refers to is there.
    { name: share0Measured ? `the same with splitShare 1` : `${splitName}, splitShare 1`, experiment: 'split', variant: split.share1 },
    { name: `shrink (to ${rankWords(run.ranks - 1)})`, experiment: 'shrink', variant: 'default' },
    { name: `grow (to ${run.ranks} ranks)`, experiment: 'grow', variant: 'default' },
  ];
  const parts: string[] = [];
  const totals: Record<string, number | undefined> = {};
  let judged = false;
  for (const r of rebuilds) {
    const total = median(run, r.experiment, r.variant, 'total');
    const first = median(run, r.experiment, r.variant, 'first');
    totals[`${r.experiment} ${r.variant}`] = total;
    if (total === undefined) continue;
    const firstNote =
      first === undefined
        ? ''
        : isBelowTimer(first)
          ? `; its first collective below the timer's resolution`
          : shareRegime(first, total) === 'negligible'
            ? `; its first collective negligible, ${ms(first)}`
            : `; ${ms(first)} of it in the first collective`;
    if (isBelowTimer(total)) {
      // A rebuild that reads 0 ms is not a cost: neither divided nor called cheaper.
      parts.push(`${r.name}: 0 ms, below the timer's resolution`);
      continue;
    }
    if (fresh === undefined) {
      parts.push(`${r.name}: ${ms(total)}${firstNote ? ` (${firstNote.slice(2)})` : ''}`);
      continue;
    }
    // A one-rank child (a shrink of 2 ranks) has no peer to connect to, while the fresh init it
    // would be set against has run.ranks: not like for like, so said, not compared (review defect 15).
    const childRanks = r.experiment === 'shrink' ? run.ranks - 1 : r.experiment === 'split' ? split.childRanks : run.ranks;
    if (childRanks === 1 && run.ranks > 1) {
      parts.push(
        `${r.name}: ${ms(total)}${firstNote ? ` (${firstNote.slice(2)})` : ''}, not set against the ${run.ranks}-rank fresh init (a one-rank child has no peer to connect to)`,
      );
      continue;
    }
    judged = true;
    const rel = relation(total, fresh);
    parts.push(
      `${r.name}: ${ms(total)} (${pct(total / fresh)} of a fresh init, ${rel === 'same' ? 'about the same' : rel === 'lower' ? 'cheaper' : 'costlier'}${firstNote})`,
    );
  }
  // The headline split (what user code pays: splitShare 0, a multi-rank child) when the run has the
  // split experiment but no figure for that variant (it failed, timed out, or the run stopped
  // first): said with what stopped it, never left for the splitShare 1 figure to stand in for it.
  if (!share0Measured && run.experiments.some((e) => e.experiment === 'split')) {
    const failure = failureOf(run, 'split', split.variant);
    const call = median(run, 'split', split.variant, 'call');
    const what = call === undefined ? 'no figure in this run' : `no figure to the first collective in this run (the call alone ${ms(call)})`;
    parts.unshift(`${splitName}, splitShare 0: ${what}${failure ? ` (${failure.text})` : ''}`);
  }
  // Shrink and grow planned but without a figure: what stopped them.
  for (const [experiment, name] of [
    ['shrink', `shrink (to ${rankWords(run.ranks - 1)})`],
    ['grow', `grow (to ${run.ranks} ranks)`],
  ] as const) {
    if (totals[`${experiment} default`] !== undefined || !run.experiments.some((e) => e.experiment === experiment)) continue;
    const failure = failureOf(run, experiment, 'default');
    if (failure) parts.push(`${name}: no figure in this run (${failure.text})`);
  }
  if (parts.length === 0) return undefined;
  const clauses: Clause[] = [];
  const splitTotal = totals[`split ${split.variant}`];
  const splitFirst = median(run, 'split', split.variant, 'first');
  const share1 = totals[`split ${split.share1}`];
  const shrink = totals['shrink default'];
  const grow = totals['grow default'];
  const acrossNodes = (run.nodes?.length ?? 1) > 1;
  const usable = (x: number | undefined): x is number => x !== undefined && !isBelowTimer(x);
  const splitCall = median(run, 'split', split.variant, 'call');
  // Like with like: the study split 4 ranks in half and set each 2-rank child against a fresh init
  // of 4 ranks. A split that keeps the parent's ranks (`whole`, below 4 ranks) sets a child of the
  // parent's shape against a fresh init of that shape, and a shared child reuses every connection:
  // its share, its ratio to a fresh init and splitShare 1 against 0 are named with both settings,
  // not judged (studyFigures.ts splitNotComparedWhy).
  const splitWhy = splitNotComparedWhy(run.ranks, split.variant.startsWith('halves/'), split.childRanks, fresh !== undefined);
  const splitNamed: StudyFigure[] = [];
  if (usable(splitTotal) && splitFirst !== undefined && splitCall !== undefined && !isBelowTimer(splitCall + splitFirst)) {
    if (splitWhy !== undefined) splitNamed.push(S.splitCall, S.splitFirst);
    else
      clauses.push(
        shareClause(
          splitFirst,
          // Of call + first, as every share (docs/METHOD.md, "Percentages").
          splitCall + splitFirst,
          S.splitFirst.min,
          S.splitCall.min + S.splitFirst.min,
          S.splitFirst.host,
          "split's first-collective share",
        ),
      );
    if (fresh !== undefined) {
      if (splitWhy !== undefined) splitNamed.push(S.splitToFirst, S.freshToFirst);
      else clauses.push(relationClause(splitTotal, fresh, S.splitToFirst, S.freshToFirst, 'split against a fresh init'));
    }
  }
  if (usable(splitTotal) && usable(share1)) {
    if (splitWhy !== undefined) splitNamed.push(S.splitShare1ToFirst, S.splitShare0ToFirst);
    else clauses.push(relationClause(share1, splitTotal, S.splitShare1ToFirst, S.splitShare0ToFirst, 'splitShare 1 against 0'));
  }
  // A shrink of 2 ranks leaves a one-rank child, with no peer to connect to: set beside the
  // study's shrink of a multi-rank communicator it is named, not judged (like with like).
  const shrinkStudy = acrossNodes ? S.nodesShrinkToFirst : S.shrinkToFirst;
  const shrinkToOne = shrink !== undefined && run.ranks - 1 === 1 && shrinkStudy.host.ranks > 2;
  if (usable(shrink) && !shrinkToOne && fresh !== undefined)
    clauses.push(relationClause(shrink, fresh, shrinkStudy, acrossNodes ? S.nodesFreshToFirst : S.freshToFirst, 'shrink against a fresh init'));
  if (usable(grow) && fresh !== undefined)
    clauses.push(
      relationClause(
        grow,
        fresh,
        acrossNodes ? S.nodesGrowToFirst : S.growToFirst,
        acrossNodes ? S.nodesFreshToFirst : S.freshToFirst,
        'grow against a fresh init',
      ),
    );
  const named = [
    shrinkToOne
      ? studyNotCompared(
          [shrinkStudy],
          `the shrink here leaves a one-rank child (no peer to connect to), the study shrank a communicator of ${shrinkStudy.host.ranksText}`,
        )
      : '',
    // The reason in full once; the study's second setting (its unversioned figures) refers to it.
    splitWhy !== undefined && splitNamed.length > 0
      ? studyNotCompared(splitNamed, (() => {
          let said = false;
          return () => (said ? 'the split is made differently, as above' : ((said = true), splitWhy));
        })())
      : '',
  ]
    .filter((x) => x !== '')
    .join(' ');
  // The "cheaper"/"costlier" words are judgements too: with no study sentence to carry the
  // few-iterations note, the line carries it.
  const few = judged && clauses.length === 0 ? fewIterationsNote(here) : undefined;
  const study = [studySentence(here, clauses), named].filter((x) => x !== '').join(' ');
  const against =
    fresh !== undefined
      ? `, against a fresh init (${ms(fresh)})`
      : freshMedian !== undefined
        ? `, not set against a fresh init (it reads 0 ms, below the timer's resolution)`
        : `, not set against a fresh init (${freshMissingWords(run)})`;
  return {
    id: 'rebuild-vs-init',
    text: `To the first collective${against}: ${parts.join('; ')}${few ? ` (${few})` : ''}.${study ? ` ${study}` : ''}`,
  };
}

/** abort, revoke, finalize + destroy. */
export function teardownLine(run: RunFile, here: Here): VerdictLine | undefined {
  const floors: string[] = [];
  const clauses: Clause[] = [];
  const abort = stats(variantOf(run, 'abort'), 'abort');
  const revoke = median(run, 'revoke', 'idle/destroy', 'revoke');
  const destroy = median(run, 'destroy', undefined, 'total');
  // The floors are set side by side, so every figure of the line is in one unit ("1.00 s (min
  // 0.992 s); … 0.499 s", never "1.00 s (min 992 ms); … 499 ms").
  const shown = [abort?.median, abort?.min, revoke, destroy].filter((x): x is number => x !== undefined && !isBelowTimer(x));
  const inSeconds = msAll(shown)[0]?.endsWith(' s') === true;
  const t = (x: number): string => msAll([x], inSeconds)[0]!;
  // A floor that reads 0 ms is below the timer's resolution: said so, not set beside the study's.
  const below = " (0 ms: below the timer's resolution)";
  if (abort) {
    if (isBelowTimer(abort.median)) floors.push(`ncclCommAbort${below}`);
    else {
      floors.push(`ncclCommAbort ${t(abort.median)} (min ${t(abort.min)})`);
      clauses.push(figureClause(abort.median, S.abort));
    }
  }
  if (revoke !== undefined) {
    floors.push(`ncclCommRevoke until quiet${isBelowTimer(revoke) ? below : ` ${t(revoke)}`}`);
    if (!isBelowTimer(revoke)) clauses.push(figureClause(revoke, S.revoke));
  }
  if (destroy !== undefined) {
    floors.push(`ncclCommFinalize + ncclCommDestroy${isBelowTimer(destroy) ? below : ` ${t(destroy)}`}`);
    if (!isBelowTimer(destroy)) clauses.push(figureClause(destroy, S.destroy));
  }
  if (floors.length === 0) return undefined;
  // At one rank there is no peer to tear down with, while the study's communicators had 2–8 GPUs
  // (and the runs show the floors move with the rank count): named, not judged. The study measured
  // abort and destroy on one node and across nodes, so a run over several hosts is judged.
  // One rule with the study charts' Figure 3 note (studyFigures.ts studyNotComparedWhy); a simulated
  // run is left to studySentence, which names the figures of its clauses.
  const why = studyNotComparedWhy(S.abort, { ranks: run.ranks, nodes: run.nodes?.length ?? 1 }, 'teardown');
  const named = [abort && S.abort, revoke !== undefined && S.revoke, destroy !== undefined && S.destroy].filter((f): f is StudyFigure => f !== false && f !== undefined);
  // Each figure's reason names its own study setting (revoke's GPU count is not stated; abort's is 2–8 GPUs).
  const regime = { ranks: run.ranks, nodes: run.nodes?.length ?? 1 };
  const study = why !== undefined ? studyNotCompared(named, (f) => studyNotComparedWhy(f, regime, 'teardown') ?? why) : studySentence(here, clauses);
  return {
    id: 'teardown-floors',
    text: `Tearing a communicator of ${run.ranks} rank${run.ranks === 1 ? '' : 's'} down costs: ${floors.join('; ')}.${study ? ` ${study}` : ''}`,
  };
}

/** connect-mode: NCCL_RUNTIME_CONNECT 1 (lazy) against 0 (connect at creation). */
export function connectModeLine(run: RunFile, here?: Here): VerdictLine | undefined {
  const lazy = variantOf(run, 'connect-mode', 'init/runtimeConnect=1');
  const eager = variantOf(run, 'connect-mode', 'init/runtimeConnect=0');
  const [lazyCall, eagerCall, lazyFirst, eagerFirst] = [
    stats(lazy, 'call'),
    stats(eager, 'call'),
    stats(lazy, 'first'),
    stats(eager, 'first'),
  ].map((s) => s?.median);
  if (lazyCall === undefined || eagerCall === undefined || lazyFirst === undefined || eagerFirst === undefined) return undefined;
  const lazyTotal = stats(lazy, 'total')?.median ?? lazyCall + lazyFirst;
  const eagerTotal = stats(eager, 'total')?.median ?? eagerCall + eagerFirst;
  const figures = `init ${ms(eagerCall)} with NCCL_RUNTIME_CONNECT=0 vs ${ms(lazyCall)} with runtime connect, first collective ${ms(eagerFirst)} vs ${ms(lazyFirst)}`;
  let text: string;
  if (run.ranks < 2) {
    // One rank has no peer: its first collective connects nothing either way, so the run shows
    // the two modes' figures, not what the mode does to a connect.
    text = `A communicator of 1 rank has no peer to connect to, so this run does not show what NCCL_RUNTIME_CONNECT=0 does to the connect; to the first collective it ${costWordsOf(eagerTotal, lazyTotal)} runtime connect here (${ms(eagerTotal)} vs ${ms(lazyTotal)}; ${figures}).`;
  } else if (shareRegime(lazyFirst, lazyTotal) === 'negligible') {
    text = `With runtime connect the first collective already costs only ${ms(lazyFirst)} of ${ms(lazyTotal)}: NCCL_RUNTIME_CONNECT=0 has no first-collective cost to remove here (${figures}).`;
  } else if (shareRegime(eagerFirst, eagerTotal) === 'negligible') {
    text = `NCCL_RUNTIME_CONNECT=0 moves the first-collective cost into init here (${figures}); to the first collective it ${costWordsOf(eagerTotal, lazyTotal)} runtime connect (${ms(eagerTotal)} vs ${ms(lazyTotal)}).`;
  } else if (relation(eagerFirst, lazyFirst) === 'lower') {
    text = `NCCL_RUNTIME_CONNECT=0 lowers the first collective but does not remove it here (${figures}).`;
  } else {
    text = `NCCL_RUNTIME_CONNECT=0 does not lower the first collective here (${figures}).`;
  }
  return { id: 'connect-mode', text: `${withFewNote(text, here)} ${NO_STUDY}` };
}

/** registration: ncclCommRegister of 64 MiB, again, and the first collectives on the buffer. */
export function registrationLine(run: RunFile, here?: Here): VerdictLine | undefined {
  const reg = variantOf(run, 'registration', 'register/64MiB');
  const [first, again, firstUse, secondUse] = ['register', 'registerAgain', 'firstUse', 'secondUse'].map((s) => stats(reg, s)?.median);
  if (first === undefined || again === undefined || firstUse === undefined || secondUse === undefined) return undefined;
  const againWords = costWordsOf(again, first);
  const againText =
    relation(again, first) === 'lower'
      ? `again on the same range ${ms(again)}, less (the registration cache)`
      : `again on the same range ${ms(again)}, ${againWords.startsWith('costs ') ? againWords.replace('costs ', '') : againWords.replace(/^is /, '')} the first`;
  const r = relation(firstUse, secondUse);
  const useText =
    r === 'higher'
      ? `the first collective on the buffer pays ${ms(firstUse - secondUse)} more than the second (${ms(firstUse)} vs ${ms(secondUse)})`
      : `the first collective on the buffer ${costWordsOf(firstUse, secondUse)} the second (${ms(firstUse)} vs ${ms(secondUse)})`;
  // One rank has no peer: a collective on the buffer moves nothing between GPUs, so the run does
  // not show what registration saves a communicator of several ranks.
  const oneRank = run.ranks < 2 ? ' A communicator of 1 rank has no peer to exchange the buffer with, so this does not show what registration saves a communicator of several ranks.' : '';
  return { id: 'registration', text: `${withFewNote(`Registering 64 MiB: ncclCommRegister ${ms(first)}, ${againText}; ${useText}.`, here)}${oneRank} ${NO_STUDY}` };
}

/**
 * NCCL's own count (ncclCommMemStats) at the suspend points beside the free-memory delta, both as
 * measured: "ncclCommMemStats still counts 384 MiB suspendable after suspend (384 MiB before,
 * 388 MiB in all); the free-memory delta drops to 4 MiB." Undefined without MemStats at `warm`
 * and `afterSuspend` (NCCL < 2.29.7: the run's memStatsNote says why).
 */
function memStatsAcrossSuspend(v: VariantSummary): string | undefined {
  const before = v.memStats?.warm;
  const after = v.memStats?.afterSuspend;
  if (!before || !after) return undefined;
  const delta = v.memoryBytes?.afterSuspend;
  const deltaText =
    delta === undefined ? '' : `; the free-memory delta ${delta < (v.memoryBytes?.warm ?? delta) ? 'drops to' : 'reads'} ${bytes(delta)}`;
  const same = Math.abs(after.suspendableBytes - before.suspendableBytes) < MiB;
  const counts = same
    ? `ncclCommMemStats still counts ${bytes(after.suspendableBytes)} suspendable after suspend, as before it (${bytes(after.totalBytes)} in all)`
    : `ncclCommMemStats counts ${bytes(before.suspendableBytes)} suspendable before suspend and ${bytes(after.suspendableBytes)} after it (${bytes(before.totalBytes)} and ${bytes(after.totalBytes)} in all)`;
  return `${counts}${deltaText}.`;
}

/** suspend: ncclCommSuspend / ncclCommResume against destroy + a fresh init in the same run. */
export function suspendLine(run: RunFile, here?: Here): VerdictLine | undefined {
  const v = variantOf(run, 'suspend', 'default');
  const [suspend, resume, first] = ['suspend', 'resume', 'first'].map((s) => stats(v, s)?.median);
  if (!v || suspend === undefined || resume === undefined || first === undefined) return undefined;
  const back = stats(v, 'total')?.median ?? resume + first;
  const m = v.memoryBytes ?? {};
  let memory = '';
  if (m.warm !== undefined && m.afterSuspend !== undefined) {
    const released = m.warm - m.afterSuspend;
    memory =
      released > MiB
        ? ` and releases ${bytes(released)} of the communicator's ${bytes(m.warm)} per GPU`
        : ` and releases no device memory measurable here (${bytes(Math.max(0, released))} of the communicator's ${bytes(m.warm)} per GPU)`;
  }
  let text = `ncclCommSuspend (NCCL_SUSPEND_MEM) takes ${ms(suspend)}${memory}; ncclCommResume takes ${ms(resume)} and the first collective after it ${ms(first)} (${ms(back)} back to the first collective).`;
  const nccl = memStatsAcrossSuspend(v);
  if (nccl) text += ` ${nccl}`;
  const destroy = median(run, 'destroy', undefined, 'total');
  const init = median(run, 'init', undefined, 'total');
  // The two sides of a comparison in one unit ("1.20 s vs 0.681 s", never "1.20 s vs 681 ms").
  const vs = (a: number, b: number): string => msAll([a, b]).join(' vs ');
  const against: string[] = [];
  // A figure that reads 0 ms (or less) is below the timer's resolution: a comparison with it is
  // named, never read as cheaper or costlier ("suspending costs less than … (0 ms vs 507 ms)").
  const zero = (...xs: number[]): boolean => xs.some((x) => isBelowTimer(x));
  const notSet = (what: string, other: string, a: number, b: number): string =>
    `${what} is not set against ${other} (${vs(a, b)}: a figure below the timer's resolution)`;
  if (destroy !== undefined)
    against.push(
      zero(suspend, destroy)
        ? notSet('suspending', 'a finalize + destroy', suspend, destroy)
        : `suspending ${costWordsOf(suspend, destroy)} a finalize + destroy (${vs(suspend, destroy)})`,
    );
  if (init !== undefined)
    against.push(
      zero(back, init)
        ? notSet('resuming to the first collective', 'a fresh init to its first collective', back, init)
        : `resuming to the first collective ${costWordsOf(back, init)} a fresh init to its first collective (${vs(back, init)})`,
    );
  if (destroy !== undefined && init !== undefined && !zero(suspend, back, destroy, init)) {
    const r = relation(suspend + back, destroy + init);
    // The way back to the first collective is what a job waits for when it needs the communicator
    // again: a way is "the cheaper way" only when its round trip is cheaper and its way back is not
    // the longer one; otherwise both facts are said.
    const backR = relation(back, init);
    const way =
      r === 'lower'
        ? backR === 'higher'
          ? ', but the way back that a job waits for, resume to the first collective, is the longer one: neither way is the cheaper on both counts here'
          : ': suspend/resume is the cheaper way here'
        : r === 'higher'
          ? backR === 'lower'
            ? ', but the way back that a job waits for, resume to the first collective, is the shorter one: neither way is the cheaper on both counts here'
            : ': destroy + re-init is the cheaper way here'
          : '';
    against.push(`the round trip, suspend + resume, ${costWordsOf(suspend + back, destroy + init)} destroy + re-init (${vs(suspend + back, destroy + init)})${way}`);
  }
  if (against.length > 0) text += ` ${withFewNote(`In this run, ${against.join('; ')}.`, here)}`;
  return { id: 'suspend', text: `${text} ${NO_STUDY}` };
}

/** The experiments whose lines would say nothing when they stopped before any figure, in words. */
const STOPPED_NAMES: Record<string, string> = {
  init: 'a fresh init (ncclCommInitRankConfig and its first collective)',
  destroy: 'ncclCommFinalize + ncclCommDestroy',
  abort: 'ncclCommAbort',
  revoke: 'ncclCommRevoke',
  suspend: 'ncclCommSuspend and ncclCommResume',
  'connect-mode': 'the NCCL_RUNTIME_CONNECT comparison',
  registration: 'ncclCommRegister',
  drain: 'the drain sweep',
  'cold-start': 'the cold start',
};

/**
 * The experiments of the run that stopped before any summarised figure (no variant), each with
 * what stopped it from the run's errors: "No figure in this run for ncclCommAbort (timed out at
 * abort default iteration 0, …)." Split, shrink, grow and the pool are said in their own lines;
 * field cases' expected hangs are their results. Undefined when every such experiment has figures.
 */
export function stoppedLine(run: RunFile): VerdictLine | undefined {
  const parts: string[] = [];
  for (const e of run.experiments) {
    const name = STOPPED_NAMES[e.experiment];
    if (!name || e.variants.length > 0) continue;
    const failure = failureOf(run, e.experiment);
    if (failure) parts.push(`${name} (${failure.text})`);
  }
  return parts.length === 0 ? undefined : { id: 'stopped', text: `No figure in this run for ${parts.join('; ')}.` };
}
