/**
 * The first page: the answer to "what does a communicator cost here" in a few lines, before the
 * verdict's detail. Four questions, always in this order — what a rebuild costs to its first
 * collective, how much of it the first collective pays (where a lazy connect is paid), what
 * teardown costs, what a pool would cost and save — each answered by the run's own medians with
 * the step they come from, and beside it the study's figure for the same quantity: judged by the
 * verdict's rules (agreement.ts) where studyFigures.ts `studyNotComparedWhy` allows it, else
 * named with why it is not compared.
 *
 * Every line is chosen by the run's regime: a failed run gets one line, what failed, and nothing
 * else; a simulated run says so first and marks every figure simulated (never compared with the
 * study); a partial or running run names what is absent; a 1-rank run says what 1 rank cannot show
 * (no peer: no connect; a split it timed makes a one-rank child; a shrink or grow it did not time
 * needs 2 GPUs) instead of lines of "missing". Pure: no I/O,
 * browser-safe; never throws on a run its code did not foresee (a line that cannot be formed says so).
 */
import { minGpusOf } from '../../protocol/catalogue';
import type { ExperimentId } from '../../protocol/runOptions';
import { isSimulatedRun, type RunFile } from '../../protocol/runFile';
import { poolMakeupDiffers, STUDY_FIGURES as S, STUDY_SHARES, studyNotComparedWhy, type StudyFigure, type StudyRegime } from '../studyFigures';
import { figureClause, judgement, shareClauseOf, type Clause } from './agreement';
import { bytes, failureOf, isBelowTimer, isNoMemory, ms, msAll, pct, stats, variantOf } from './format';
import { oneRankChildren, oneRankChildWords } from './oneRankChildren';
import { poolFigures } from './pool';
import { c10dFirstCollectiveLine, c10dRebuildLine, c10dTeardownLine, orC10d } from './summaryC10d';

// The line types live in summaryTypes.ts (shared with summaryC10d.ts); re-exported for the views.
export type { SummaryKind, SummaryLine, SummaryStudy } from './summaryTypes';
import type { SummaryKind, SummaryLine, SummaryStudy } from './summaryTypes';

/** "2 ranks" / "1 rank". */
function ranksWord(n: number): string {
  return `${n} rank${n === 1 ? '' : 's'}`;
}

/** The source of a step median in words: "init · default · total, median of 10". */
function stepSource(run: RunFile, experiment: string, variant: string | undefined, step: string): string {
  const v = variantOf(run, experiment, variant);
  const n = stats(v, step)?.n;
  return `${experiment} · ${v?.variant ?? variant ?? ''} · ${step}${n !== undefined ? `, median of ${n}` : ''}`;
}

/** A figure in words, marked when it is not a measurement. */
function figureWords(text: string, simulated: boolean): string {
  return simulated ? `${text} (simulated)` : text;
}

/** The study's figure `f` beside a run figure: compared by `clause` unless `why` (the one rule, studyNotComparedWhy) says not. */
function studyOf(f: StudyFigure, why: string | undefined, clause?: () => Clause): SummaryStudy {
  const base = { what: f.what, written: f.written, setting: f.host.text, source: f.source };
  if (why !== undefined || clause === undefined) return { ...base, notCompared: why ?? 'this run has no figure of the same quantity' };
  const c = clause();
  return { ...base, comparison: c.notJudged !== undefined ? `${c.text}: not judged (${c.notJudged})` : `${c.text}: ${judgement(c)}` };
}

/** Why an experiment has no figure in this run, in a few words: not asked for, or what stopped it. */
function absentWords(run: RunFile, experiment: ExperimentId): string {
  const e = run.experiments.find((x) => x.experiment === experiment);
  if (!e) {
    const need = minGpusOf(experiment);
    return run.ranks < need ? `the ${experiment} experiment needs ${need} GPUs or more` : `the ${experiment} experiment was not part of this run`;
  }
  const failure = failureOf(run, experiment);
  if (failure) return failure.text === 'it failed: see the errors' ? `the ${experiment} experiment failed (see the errors)` : failure.text;
  return e.state === 'finished' ? `the ${experiment} experiment recorded no figure` : `the ${experiment} experiment ${e.state === 'stopped' ? 'stopped before its summary' : 'has not finished yet'}`;
}

/** The line of a question the run has no figure for: the question, and why, in one line. */
function absentLine(kind: SummaryKind, label: string, why: string): SummaryLine {
  return { kind, label, text: `No figure in this run: ${why}.`, study: [] };
}

/** What the run is, when that changes how its lines read: failed, simulated, running, partial, 1 rank. */
function regimeLines(run: RunFile, simulated: boolean): SummaryLine[] {
  const out: SummaryLine[] = [];
  if (simulated)
    out.push({
      kind: 'regime',
      label: 'Simulated',
      text: "Every figure below comes from commcost's simulated NCCL, not from a measurement: none is set against the study's.",
      study: [],
    });
  if (run.status === 'running') {
    out.push({ kind: 'regime', label: 'Running', text: 'The run is still going: the lines below are of the experiments summarised so far.', study: [] });
  } else if (run.status === 'partial') {
    const absent = run.experiments.filter((e) => e.variants.length === 0).map((e) => e.experiment);
    const first = run.errors.find((e) => !e.expected);
    const why = first ? ` (${String(first.code)}: ${String(first.message)})` : '';
    out.push({
      kind: 'regime',
      label: 'Partial',
      text: `The run stopped early${why}; ${absent.length > 0 ? `no figure for ${absent.join(', ')}` : 'every experiment it began has a figure'}.`,
      study: [],
    });
  }
  if (run.ranks === 1) out.push(oneRankRegimeLine(run));
  return out;
}

/**
 * The 1-rank regime line: what 1 rank cannot show, chosen by the run's figures. A communicator of
 * 1 rank has no peer: no connect, ever. A split, shrink or grow the run did time (connect-mode's
 * `ncclCommSplit (color = rank)`, c10d's `split_group`: oneRankChildren.ts) is named with its
 * figures as a one-rank child, not a split into parts; only the calls it did not time are said to
 * need 2 GPUs or more (catalogue.ts `minGpusOf`).
 */
function oneRankRegimeLine(run: RunFile): SummaryLine {
  const timed = oneRankChildren(run);
  const calls = ['split', 'shrink', 'grow'] as const;
  const named = timed.map((g) => `its ${g.call} here, ${oneRankChildWords(g)}, makes a one-rank child, not a ${g.call} of a communicator of several ranks`);
  const untimed = calls.filter((c) => !timed.some((g) => g.call === c) && minGpusOf(c) > 1);
  const need = untimed.length > 0 ? `${listOr(untimed, 'and')} ${untimed.length === 1 ? 'needs' : 'need'} 2 GPUs or more` : '';
  const wanted = ['a connect', ...calls.filter((c) => timed.some((g) => g.call === c)).map((c) => `a ${c} of several ranks`), ...untimed.map((c) => `a ${c}`)];
  return {
    kind: 'regime',
    label: '1 rank',
    text:
      `A communicator of 1 rank has no peer to connect to: this run cannot show a connect` +
      `${[...named, ...(need ? [need] : [])].map((x) => `; ${x}`).join('')}. Measure on 2 GPUs or more for ${listOr(wanted, 'or')}.`,
    study: [],
  };
}

/** "a", "a and b", "a, b or c". */
function listOr(xs: readonly string[], word: 'and' | 'or'): string {
  return xs.length <= 1 ? (xs[0] ?? '') : `${xs.slice(0, -1).join(', ')} ${word} ${xs[xs.length - 1]!}`;
}

/** Rebuild: a fresh communicator of the run's ranks to its first collective (and the headline split beside it). */
function rebuildLine(run: RunFile, regime: StudyRegime, simulated: boolean): SummaryLine {
  const label = 'Rebuild to first collective';
  const init = variantOf(run, 'init');
  const total = stats(init, 'total')?.median;
  if (total === undefined) return absentLine('rebuild', label, absentWords(run, 'init'));
  const call = stats(init, 'call')?.median;
  const first = stats(init, 'first')?.median;
  const f = regime.nodes > 1 ? S.nodesFreshToFirst : S.initToFirst;
  const step = stepSource(run, 'init', undefined, 'total');
  if (isBelowTimer(total))
    return {
      kind: 'rebuild',
      label,
      text: `A fresh communicator of ${ranksWord(run.ranks)} reads 0 ms to its first collective: below the timer's resolution, no cost to state.`,
      figure: figureWords('0 ms', simulated),
      step,
      study: [studyOf(f, 'the figure here is below the timer\'s resolution')],
    };
  const parts = call !== undefined && first !== undefined ? ` (ncclCommInitRankConfig ${ms(call)}, then the first collective ${ms(first)})` : '';
  // The headline split (splitShare 0, a child of several ranks), as the verdict's rebuild line names it.
  const [splitV, splitName] = run.ranks >= 4 ? ['halves/splitShare=0', 'a split into halves'] : ['whole/splitShare=0', 'a split of the same shape'];
  const split = stats(variantOf(run, 'split', splitV), 'total')?.median;
  const splitText = split !== undefined && !isBelowTimer(split) ? `; ${splitName} (splitShare 0) ${ms(split)}` : '';
  return {
    kind: 'rebuild',
    label,
    text: `Rebuilding a communicator of ${ranksWord(run.ranks)} from scratch costs ${ms(total)} to its first collective${parts}${splitText}.`,
    figure: figureWords(ms(total), simulated),
    step,
    study: [studyOf(f, studyNotComparedWhy(f, regime, 'fresh init'), () => figureClause(total, f, 'init to first collective'))],
  };
}

/**
 * The study's first-collective share beside the run's: derived by commcost from two published
 * figures (STUDY_SHARES.initFirst, (92 − 43) of 92 ms), said so, never as a figure of the study.
 */
function shareStudy(why: string | undefined, clause?: () => Clause): SummaryStudy {
  const share = STUDY_SHARES.initFirst;
  const s = studyOf(S.initToFirst, why, clause);
  return {
    ...s,
    what: "the first collective's share of init to the first 1 MB allreduce",
    written: `${pct(share.part / share.total)} (derived by commcost ${share.derivation})`,
    source: share.from.map((f) => f.measurement).join('; ') + ` (${S.initToFirst.document})`,
  };
}

/** How much of the fresh init's cost the first collective pays: where a lazy connect lands, said by the figures only. */
function firstCollectiveLine(run: RunFile, regime: StudyRegime, simulated: boolean): SummaryLine {
  const label = 'First collective';
  const v = variantOf(run, 'init');
  const call = stats(v, 'call')?.median;
  const first = stats(v, 'first')?.median;
  if (call === undefined || first === undefined) return absentLine('first-collective', label, absentWords(run, 'init'));
  const step = stepSource(run, 'init', undefined, 'first');
  const shareFigure = S.initToFirst;
  if (run.ranks < 2) {
    return {
      kind: 'first-collective',
      label,
      text: `1 rank: nothing to connect, so no lazy connect to measure; the first collective here takes ${ms(first)}.`,
      figure: figureWords(ms(first), simulated),
      step,
      study: [shareStudy(studyNotComparedWhy(shareFigure, regime, 'first collective'))],
    };
  }
  const sum = call + first;
  if (isBelowTimer(sum))
    return { ...absentLine('first-collective', label, "ncclCommInitRankConfig and the first collective both read 0 ms, below the timer's resolution"), step };
  const env = run.stamp?.ncclEnv?.NCCL_RUNTIME_CONNECT;
  const mode = typeof env === 'string' ? ` (this run set NCCL_RUNTIME_CONNECT=${env})` : '';
  // The connect-mode experiment shows what connecting at creation does to the first collective, where the run has it.
  const eager = stats(variantOf(run, 'connect-mode', 'init/runtimeConnect=0'), 'first')?.median;
  const lazy = stats(variantOf(run, 'connect-mode', 'init/runtimeConnect=1'), 'first')?.median;
  const modes =
    eager !== undefined && lazy !== undefined
      ? `; with NCCL_RUNTIME_CONNECT=0 (connect at creation) the first collective takes ${ms(eager)}, with runtime connect ${ms(lazy)}`
      : '';
  const why = studyNotComparedWhy(shareFigure, regime, 'first collective');
  return {
    kind: 'first-collective',
    label,
    text: `Of that, the first collective pays ${ms(first)} (${pct(first / sum)} of the call + first collective)${mode}${modes}.`,
    figure: figureWords(`${ms(first)} (${pct(first / sum)})`, simulated),
    step,
    study: [shareStudy(why, () => shareClauseOf(first, sum, STUDY_SHARES.initFirst, "first collective's share"))],
  };
}

/** Teardown: finalize + destroy, abort and revoke until quiet, each a step median. */
function teardownLine(run: RunFile, regime: StudyRegime, simulated: boolean): SummaryLine {
  const label = 'Teardown';
  const floors: { name: string; value: number; f: StudyFigure; step: string }[] = [];
  const destroy = stats(variantOf(run, 'destroy'), 'total')?.median;
  if (destroy !== undefined) floors.push({ name: 'ncclCommFinalize + ncclCommDestroy', value: destroy, f: S.destroy, step: stepSource(run, 'destroy', undefined, 'total') });
  const abort = stats(variantOf(run, 'abort'), 'abort')?.median;
  if (abort !== undefined) floors.push({ name: 'ncclCommAbort', value: abort, f: S.abort, step: stepSource(run, 'abort', undefined, 'abort') });
  const revoke = stats(variantOf(run, 'revoke', 'idle/destroy'), 'revoke')?.median;
  if (revoke !== undefined) floors.push({ name: 'ncclCommRevoke until quiet', value: revoke, f: S.revoke, step: stepSource(run, 'revoke', 'idle/destroy', 'revoke') });
  if (floors.length === 0) return absentLine('teardown', label, absentWords(run, 'destroy'));
  // The floors side by side in one unit ("1.00 s; 0.987 s", never "1.00 s; 987 ms").
  const inSeconds = msAll(floors.map((t) => t.value).filter((x) => !isBelowTimer(x)))[0]?.endsWith(' s') === true;
  const words = (x: number): string => (isBelowTimer(x) ? "0 ms (below the timer's resolution)" : msAll([x], inSeconds)[0]!);
  const head = floors[0]!;
  return {
    kind: 'teardown',
    label,
    text: `Tearing a communicator of ${ranksWord(run.ranks)} down costs ${floors.map((t) => `${t.name} ${words(t.value)}`).join('; ')}.`,
    figure: figureWords(words(head.value), simulated),
    step: floors.map((t) => t.step).join('; '),
    study: floors.map((t) =>
      studyOf(t.f, isBelowTimer(t.value) ? "the figure here is below the timer's resolution" : studyNotComparedWhy(t.f, regime, 'teardown'), () => figureClause(t.value, t.f)),
    ),
  };
}

/** The child a pool's switch goes to, in words: "its one-rank TP1 child" (no peer), "its TP2 child". */
function childWords(tp: number): string {
  return tp === 1 ? 'its one-rank TP1 child' : `its TP${tp} child`;
}

/** The pool: its memory per GPU (the cost) and the rebuild a switch inside it replaces (the saving). */
function poolSummaryLine(run: RunFile, regime: StudyRegime, simulated: boolean): SummaryLine {
  const label = 'Pool';
  const e = run.experiments.find((x) => x.experiment === 'pool');
  const v = e?.variants.find((x) => !x.variant.endsWith('/splitShare=1'));
  const p = v ? poolFigures(v) : undefined;
  if (!v || !p || p.bytes === undefined) return absentLine('pool', label, absentWords(run, 'pool'));
  const memory = isNoMemory(p.bytes) ? 'no memory change measured per GPU' : `${bytes(p.bytes)} per GPU`;
  const step = `pool · ${v.variant} · memory at "pool after TP${p.shapes[p.shapes.length - 1]}"`;
  if (p.shapes.length < 2) {
    return {
      kind: 'pool',
      label,
      text: `At ${ranksWord(run.ranks)} the pool is one communicator (TP${p.shapes[0] ?? 1}), ${memory}: no child to switch to, so nothing for a pool to save here.`,
      figure: figureWords(memory, simulated),
      step,
      study: [studyOf(S.poolBytes, studyNotComparedWhy(S.poolBytes, regime, 'pool') ?? 'one shape, no child')],
    };
  }
  const saves =
    p.sw !== undefined && p.rebuild !== undefined
      ? isBelowTimer(p.rebuild)
        ? `; an on-demand rebuild reads 0 ms here (below the timer's resolution), so the pool saves nothing measurable`
        : `, and turns a ${ms(p.rebuild)} rebuild of ${childWords(p.shapes[1] ?? 1)} (split + first collective) into a ${isBelowTimer(p.sw) ? "switch below the timer's resolution" : `${ms(p.sw)} switch`}`
      : '';
  // The saving is of a switch to the first child only (the one switch the pool experiment times):
  // said so, never read as the headline's rebuild of all the run's ranks (issue #28).
  const which =
    saves !== '' && p.shapes[0] !== undefined
      ? ` That is the rebuild of the TP${p.shapes[1] ?? 1} shape only, not a rebuild of all ${ranksWord(run.ranks)}: the run times no switch back to TP${p.shapes[0]}.`
      : '';
  // Like with like: only a pool made as the study's was (studyFigures.ts poolMakeupDiffers).
  const why = isNoMemory(p.bytes) ? 'the pool here shows no memory change' : (studyNotComparedWhy(S.poolBytes, regime, 'pool') ?? poolMakeupDiffers(p.shapes));
  return {
    kind: 'pool',
    label,
    text: `A prewarmed pool of every TP shape (${v.variant}) costs ${memory}${saves}.${which}`,
    figure: figureWords(memory, simulated),
    step: p.sw !== undefined ? `${step}; switch and rebuild, medians of ${stats(v, 'switch')?.n ?? '?'}` : step,
    study: [studyOf(S.poolBytes, why, () => figureClause(p.bytes!, S.poolBytes, `pool per GPU (here ${v.variant})`))],
  };
}

/**
 * The first page of `run`: the regime line(s), then the four answers (rebuild, first collective,
 * teardown, pool), each with its figure, step and the study's figure beside it; a question the run
 * has no NCCL figure for is answered by its c10d figure where it has one, named as the torch call
 * (summaryC10d.ts). A failed run gives one line: what failed.
 * @returns lines in that fixed order; never throws (a line whose figures its code did not foresee
 * reads "could not be formed", with why).
 */
export function firstPageSummary(run: RunFile): SummaryLine[] {
  let simulated: boolean;
  try {
    simulated = isSimulatedRun(run);
  } catch {
    simulated = run.simulated === true;
  }
  if (run.status === 'failed') {
    const e = (Array.isArray(run.errors) ? run.errors : []).find((x) => !x.expected);
    const what = e ? `${String(e.code)}: ${String(e.message)}` : 'it ended before any rank started, and its file lists no error';
    const none = !(Array.isArray(run.experiments) ? run.experiments : []).some((x) => Array.isArray(x.variants) && x.variants.length > 0);
    return [{ kind: 'regime', label: 'Failed', text: `This ${simulated ? 'simulated ' : ''}run failed${none ? ' before any figure was recorded' : ''} (${what}).`, study: [] }];
  }
  const regime: StudyRegime = { ranks: run.ranks, nodes: Array.isArray(run.nodes) && run.nodes.length > 1 ? run.nodes.length : 1, simulated };
  const read = (kind: SummaryKind, label: string, f: () => SummaryLine): SummaryLine => {
    try {
      return f();
    } catch (err) {
      return { kind, label, text: `This line could not be formed from the run's figures (${err instanceof Error ? err.message : String(err)}).`, study: [] };
    }
  };
  // A question the run has no NCCL figure for is answered by its c10d figure, named as the torch call (summaryC10d.ts).
  const answers = [
    read('rebuild', 'Rebuild to first collective', () => orC10d(rebuildLine(run, regime, simulated), () => c10dRebuildLine(run, simulated))),
    read('first-collective', 'First collective', () => orC10d(firstCollectiveLine(run, regime, simulated), () => c10dFirstCollectiveLine(run, simulated))),
    read('teardown', 'Teardown', () => orC10d(teardownLine(run, regime, simulated), () => c10dTeardownLine(run, regime, simulated))),
    read('pool', 'Pool', () => poolSummaryLine(run, regime, simulated)),
  ];
  // Nothing to show: one line, not four lines of "no figure".
  if (answers.every((l) => l.figure === undefined))
    return [
      ...regimeLines(run, simulated),
      { kind: 'regime', label: 'No answer', text: 'This run has no figure for a rebuild, its first collective, teardown or a pool.', study: [] },
    ];
  // A simulated figure is never stated as a measurement: each answer with a figure says so in its sentence too.
  const marked = simulated ? answers.map((l) => (l.figure === undefined ? l : { ...l, text: `Simulated: ${l.text}` })) : answers;
  return [...regimeLines(run, simulated), ...marked];
}
