/**
 * The first page's answers from the c10d experiment, for a run that has no figure of the NCCL
 * call a question is about (a c10d-only run: `commcost measure --experiments c10d`). The rule, one
 * for every question (summary.ts `firstPageSummary`): the run's NCCL figure answers where it has
 * one; else its c10d figure answers, named as the torch call it is (`init_process_group` with or
 * without `device_id`, its first `all_reduce`, `destroy_process_group`, the default group's abort),
 * never as the NCCL call; else the question reads "No figure in this run".
 *
 * Beside each stands the study's figure of the same c10d call where the study gives one (only
 * `destroy_process_group`, 0.94–0.96 s on A40: studyFigures.ts `c10dDestroy`), judged by the
 * verdict's rules where `studyNotComparedWhy` allows it; the study's figures of the NCCL calls are
 * named as another call, never judged against a c10d figure. Pure: no I/O, browser-safe.
 */
import type { RunFile } from '../../protocol/runFile';
import { STUDY_FIGURES as S, studyNotComparedWhy, type StudyFigure, type StudyRegime } from '../studyFigures';
import { figureClause, judgement } from './agreement';
import { isBelowTimer, ms, pct, stats, variantOf } from './format';
import type { SummaryLine, SummaryStudy } from './summaryTypes';

/** The c10d creation variants, the one with `device_id` first (the headline where the run has it). */
const INITS = [
  { variant: 'init/eager', call: 'init_process_group(device_id)', with: 'with device_id' },
  { variant: 'init/lazy', call: 'init_process_group without device_id', with: 'without device_id' },
] as const;

/** One c10d init variant's medians (ms) and its name, or undefined when the run lacks its total. */
interface InitFigures {
  variant: string;
  call: string;
  with: string;
  callMs: number;
  firstMs: number;
  totalMs: number;
  destroyMs?: number;
  n?: number;
}

/** The c10d init variants the run has, with device_id first. */
function inits(run: RunFile): InitFigures[] {
  return INITS.flatMap((i): InitFigures[] => {
    const v = variantOf(run, 'c10d', i.variant);
    const [call, first, total] = [stats(v, 'call'), stats(v, 'first'), stats(v, 'total')];
    if (!call || !first || !total) return [];
    const destroy = stats(v, 'destroy')?.median;
    return [{ ...i, callMs: call.median, firstMs: first.median, totalMs: total.median, n: total.n, ...(destroy !== undefined ? { destroyMs: destroy } : {}) }];
  });
}

/** "c10d · init/eager · total, median of 5". */
function source(run: RunFile, variant: string, step: string): string {
  const n = stats(variantOf(run, 'c10d', variant), step)?.n;
  return `c10d · ${variant} · ${step}${n !== undefined ? `, median of ${n}` : ''}`;
}

const marked = (text: string, simulated: boolean): string => (simulated ? `${text} (simulated)` : text);

/** The study's figure `f` beside a c10d figure: compared (with the verdict's judgement) unless `why` says not. */
function beside(f: StudyFigure, why: string | undefined, value?: number): SummaryStudy {
  const base = { what: f.what, written: f.written, setting: f.host.text, source: f.source };
  if (why !== undefined || value === undefined) return { ...base, notCompared: why ?? 'this run has no figure of the same quantity' };
  const c = figureClause(value, f);
  return { ...base, comparison: c.notJudged !== undefined ? `${c.text}: not judged (${c.notJudged})` : `${c.text}: ${judgement(c)}` };
}

/** Why the study's figure of an NCCL call is not set beside the run's c10d figure: another call. */
function otherCall(ncclCall: string, c10dCall: string): string {
  return `it is of ${ncclCall}; this run timed torch's ${c10dCall}, another call`;
}

/** "2 ranks" / "1 rank". */
const ranksWord = (n: number): string => `${n} rank${n === 1 ? '' : 's'}`;

/**
 * Rebuild, from c10d: a process group of the run's ranks created by init_process_group, to its
 * first all_reduce (`c10d · init/eager · total`, else `init/lazy`), with the other way beside it.
 * @returns undefined when the run has no c10d init figure.
 */
export function c10dRebuildLine(run: RunFile, simulated: boolean): SummaryLine | undefined {
  const all = inits(run);
  const head = all[0];
  if (!head) return undefined;
  const parts = (i: InitFigures): string => `the call ${ms(i.callMs)}, then the first all_reduce ${ms(i.firstMs)}`;
  const other = all[1] ? `; ${all[1].call} ${ms(all[1].totalMs)} (${parts(all[1])})` : '';
  return {
    kind: 'rebuild',
    label: 'Rebuild to first collective (c10d)',
    text:
      `This run measured torch's c10d calls, not ncclCommInitRankConfig: creating a process group of ${ranksWord(run.ranks)} with ` +
      `${head.call} costs ${ms(head.totalMs)} to its first all_reduce (${parts(head)})${other}.`,
    figure: marked(ms(head.totalMs), simulated),
    step: source(run, head.variant, 'total'),
    study: [beside(S.initToFirst, otherCall('ncclCommInitRank and its first 1 MB allreduce', 'init_process_group and its first all_reduce'))],
  };
}

/**
 * First collective, from c10d: what the first all_reduce pays of each init variant, with its share
 * of call + first all_reduce (docs/METHOD.md "Percentages") where the group has a peer; at 1 rank
 * the figures only (nothing to connect).
 * @returns undefined when the run has no c10d init figure.
 */
export function c10dFirstCollectiveLine(run: RunFile, simulated: boolean): SummaryLine | undefined {
  const all = inits(run);
  const head = all[0];
  if (!head) return undefined;
  const share = (i: InitFigures): string => (isBelowTimer(i.callMs + i.firstMs) ? '' : ` (${pct(i.firstMs / (i.callMs + i.firstMs))} of the call + first all_reduce)`);
  const words = (i: InitFigures): string => `${i.with}, init_process_group returns in ${ms(i.callMs)} and the first all_reduce takes ${ms(i.firstMs)}${run.ranks < 2 ? '' : share(i)}`;
  const text =
    run.ranks < 2
      ? `1 rank: nothing to connect, so no lazy connect to measure; ${all.map(words).join('; ')}.`
      : `${all.map(words).join('; ')}.`;
  return {
    kind: 'first-collective',
    label: 'First collective (c10d)',
    text: text.charAt(0).toUpperCase() + text.slice(1),
    figure: marked(run.ranks < 2 || isBelowTimer(head.callMs + head.firstMs) ? ms(head.firstMs) : `${ms(head.firstMs)} (${pct(head.firstMs / (head.callMs + head.firstMs))})`, simulated),
    step: source(run, head.variant, 'first'),
    study: [],
  };
}

/**
 * Teardown, from c10d: destroy_process_group after each init variant and the default group's
 * abort (`c10d · init/eager · destroy`, `init/lazy · destroy`, `abort · abort`), beside the study's
 * c10d destroy_process_group (compared where `studyNotComparedWhy` allows) and its ncclCommAbort
 * (named: another call).
 * @returns undefined when the run has no c10d teardown figure.
 */
export function c10dTeardownLine(run: RunFile, regime: StudyRegime, simulated: boolean): SummaryLine | undefined {
  const destroys = inits(run).filter((i) => i.destroyMs !== undefined);
  const abort = stats(variantOf(run, 'c10d', 'abort'), 'abort')?.median;
  const head = destroys[0];
  if (!head && abort === undefined) return undefined;
  const parts: string[] = [];
  if (head) parts.push(`destroy_process_group ${ms(head.destroyMs!)} after init ${head.with}${destroys[1] ? ` (${ms(destroys[1].destroyMs!)} after init ${destroys[1].with})` : ''}`);
  if (abort !== undefined) parts.push(`aborting the default process group ${ms(abort)}`);
  const study: SummaryStudy[] = [];
  if (head) {
    const why = isBelowTimer(head.destroyMs!) ? "the figure here is below the timer's resolution" : studyNotComparedWhy(S.c10dDestroy, regime, 'c10d destroy_process_group');
    study.push(beside(S.c10dDestroy, why, head.destroyMs));
  }
  if (abort !== undefined) study.push(beside(S.abort, otherCall('ncclCommAbort', 'abort of the default process group')));
  const steps = [...(head ? [source(run, head.variant, 'destroy')] : []), ...(abort !== undefined ? [source(run, 'abort', 'abort')] : [])];
  return {
    kind: 'teardown',
    label: 'Teardown (c10d)',
    text: `This run measured torch's c10d calls, not ncclCommFinalize + ncclCommDestroy: tearing a process group of ${ranksWord(run.ranks)} down costs ${parts.join('; ')}.`,
    figure: marked(ms(head ? head.destroyMs! : abort!), simulated),
    step: steps.join('; '),
    study,
  };
}

/**
 * The run's NCCL answer `line` where it has a figure; else the c10d answer `c10d()` where the run
 * has one; else `line` (its "No figure in this run").
 */
export function orC10d(line: SummaryLine, c10d: () => SummaryLine | undefined): SummaryLine {
  return line.figure !== undefined ? line : (c10d() ?? line);
}
