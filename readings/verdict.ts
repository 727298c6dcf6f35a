/**
 * The verdict: the study's conclusions re-derived for the host of one run. Every number in a
 * sentence is read from the run's summaries (medians over its recorded iterations); every
 * sentence is chosen by the regime its figures fall in (a first collective that is negligible,
 * the minority or the majority of the cost; a rebuild cheaper or costlier than a fresh init; …),
 * so it is true at 1, 2 and n ranks, simulated, partial or on an old NCCL. A conclusion whose
 * experiment is missing from the run is left out, never filled with a belief about NCCL. Each
 * line the study measured ends with the study's figure (readings/studyFigures.ts) and whether this
 * host agrees, is of the same order, or differs, with the band (readings/verdict/agreement.ts;
 * docs/METHOD.md, "The verdict"). Shown by
 * the CLI after its table, by the webview and the HTML report.
 *
 * The lines live by concern in readings/verdict/: lifecycle.ts, pool.ts, inFlight.ts (drain and the
 * drop check), coldStart.ts, fieldCases.ts, shrinkAbort.ts.
 */
import { isSimulatedRun, type RunFile } from '../protocol/runFile';
import type { Here } from './verdict/agreement';
import { c10dLines, hangCaseLines, oneRankMemoryLine, splitShareLines } from './verdict/fieldCases';
import type { VerdictLine } from './verdict/format';
import { describeHost, describeWhere } from './verdict/host';
import { coldStartLine } from './verdict/coldStart';
import { dropCheckLine, drainLine } from './verdict/inFlight';
import { connectModeLine, firstCollectiveShare, rebuildLine, registrationLine, stoppedLine, suspendLine, teardownLine } from './verdict/lifecycle';
import { poolLine } from './verdict/pool';
import { shrinkAbortLines } from './verdict/shrinkAbort';

export { bytes, ms, pct, type VerdictLine } from './verdict/format';
export { describeHost, describeWhere, nodeNames } from './verdict/host';
export {
  combinationText,
  SHRINK_ABORT_CASE,
  SHRINK_ABORT_COMBINATIONS,
  shrinkAbortOutcomes,
  type ShrinkAbortCombination,
  type ShrinkAbortOutcome,
} from './verdict/shrinkAbort';

/**
 * Derives the verdict lines of `run`.
 * @returns lines in a fixed order; empty when the run has no summarised experiment. Every line of
 * a simulated run starts with "SIMULATED — ".
 */
export function deriveVerdict(run: RunFile): VerdictLine[] {
  // Where and "here" fall back to the run's host and rank count if its stamp or nodes are malformed.
  const safe = (f: () => string, fallback: string): string => {
    try {
      return f();
    } catch {
      return fallback;
    }
  };
  const where = safe(() => describeWhere(run), `on ${String(run.host)}`);
  const here: Here = {
    host: safe(() => describeHost(run), `${run.ranks} rank${run.ranks === 1 ? '' : 's'} on ${String(run.host)}`),
    simulated: safe(() => String(isSimulatedRun(run)), String(run.simulated === true)) === 'true',
    ...(typeof run.options?.iterations === 'number' ? { iterations: run.options.iterations } : {}),
    ...(Array.isArray(run.nodes) && run.nodes.length > 1 ? { nodes: run.nodes.length } : {}),
  };
  // A reading never throws (this also runs in the live reducer, client/runModel.ts): a line whose
  // figures its code did not foresee is replaced by a line that says so, the others kept.
  const read = (id: string, f: () => VerdictLine | VerdictLine[] | undefined): VerdictLine[] => {
    try {
      const l = f();
      return l === undefined ? [] : Array.isArray(l) ? l : [l];
    } catch (e) {
      return [{ id: `unread:${id}`, text: `The ${id} reading could not be formed from this run's figures (${e instanceof Error ? e.message : String(e)}).` }];
    }
  };
  const lines = [
    ...read('first-collective-share', () => firstCollectiveShare(run, where, here)),
    ...read('rebuild-vs-init', () => rebuildLine(run, here)),
    ...read('teardown-floors', () => teardownLine(run, here)),
    ...read('suspend', () => suspendLine(run, here)),
    ...read('cold-start', () => coldStartLine(run, here)),
    ...read('pool', () => poolLine(run, here)),
    ...read('connect-mode', () => connectModeLine(run, here)),
    ...read('one-rank-memory', () => oneRankMemoryLine(run, here)),
    ...read('registration', () => registrationLine(run, here)),
    ...read('drain', () => drainLine(run, here)),
    ...read('drop-check', () => dropCheckLine(run)),
    ...read('c10d', () => c10dLines(run, here)),
    ...read('split-share', () => splitShareLines(run, here)),
    ...read('hang-cases', () => hangCaseLines(run, here)),
    ...read('shrink-abort', () => shrinkAbortLines(run, where, here)),
    ...read('stopped', () => stoppedLine(run)),
  ];
  if (here.simulated) return lines.map((l) => ({ ...l, text: `SIMULATED — ${l.text}` }));
  return lines;
}
