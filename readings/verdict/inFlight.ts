/**
 * Verdict lines on work in flight: the drain sweep (drain: 16/64/128/256 MiB alone and the four,
 * ncclCommFinalize until quiet and a stream synchronize alone) and the drop check (revoke
 * `inflight/*`, shrink `abort/inflight`). Every sentence is chosen by the run's counts
 * (`counts` of a variant summary, docs/METHOD.md "Work in flight and the drop check"): a drain
 * figure is stated, and set beside the study, only for a variant whose work was in flight at
 * every rank-iteration (`inFlightAtStart.min === 1`); the drop check is read only where the run
 * has its counts.
 */
import type { CountSummary, VariantSummary } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { STUDY_DRAIN_IN_FLIGHT, STUDY_FIGURES as S } from '../studyFigures';
import { rangeClause, studyNotCompared, studySentence, type Here } from './agreement';
import { isBelowTimer, ms, stats, variantOf, type VerdictLine } from './format';

const NO_STUDY = 'The study published no figure for this.';

/** A count of a variant's summary (min, max, sum, n over rank-iterations), if the run has it. */
export function countOf(v: VariantSummary | undefined, name: string): CountSummary | undefined {
  const c = v?.counts?.[name];
  return c && Number.isFinite(c.min) && Number.isFinite(c.max) && Number.isFinite(c.n) && c.n > 0 ? c : undefined;
}

/** "the work had finished before the call in k of n rank-iterations", from `inFlightAtStart`. */
function finishedWords(atStart: CountSummary): string {
  return `the work had finished before the call in ${atStart.n - atStart.sum} of ${atStart.n} rank-iteration${atStart.n === 1 ? '' : 's'}`;
}

/** One drain variant as the line reads it. */
interface DrainFigure {
  mode: 'finalize' | 'stream-sync';
  /** "16 MiB alone", "the 4 together (16 MiB, 64 MiB, 128 MiB, 256 MiB)". */
  name: string;
  /** finalize until quiet (`total`), or the stream synchronize (`sync`), ms. */
  value: number;
  finalize?: number;
  sync?: number;
  /** in flight at every rank-iteration / not at some / not counted by the run. */
  state: 'in flight' | 'finished' | 'not counted';
  atStart?: CountSummary;
  /** Allreduces in flight as the call began, from the variant (alone: 1; the mix: its label's count, the catalogue's 4). */
  inFlight: number;
}

/** The variant's in-flight sizes in words, from its name (`finalize/64MiB`) or its step label ("4 allreduces in flight (16 MiB, …)"). */
function drainName(v: VariantSummary): string {
  const size = /^[^/]+\/(\d+)([KMG]iB)$/.exec(v.variant);
  if (size) return `${size[1]} ${size[2]} alone`;
  const label = v.steps.map((s) => s.label).find((l) => /allreduces in flight/.test(l)) ?? '';
  const m = /(\d+) allreduces in flight(?: \(([^)]*)\))?/.exec(label);
  if (!m) return 'the allreduces together';
  return `the ${m[1]} together${m[2] ? ` (${m[2]})` : ''}`;
}

function drainFigures(run: RunFile): DrainFigure[] {
  const e = run.experiments.find((x) => x.experiment === 'drain');
  const out: DrainFigure[] = [];
  for (const v of e?.variants ?? []) {
    const mode = v.variant.split('/')[0];
    if (mode !== 'finalize' && mode !== 'stream-sync') continue;
    const value = stats(v, mode === 'finalize' ? 'total' : 'sync')?.median;
    if (value === undefined) continue;
    const atStart = countOf(v, 'inFlightAtStart');
    const name = drainName(v);
    const together = /^the (\d+) together/.exec(name);
    // A variant named by a size (`finalize/64MiB`) has one allreduce in flight; the mix (`finalize`)
    // has the count its label gives, and every commcost version made it of the catalogue's four
    // (16, 64, 128, 256 MiB; DESIGN.md, "Experiment catalogue").
    const inFlight = name.endsWith(' alone') ? 1 : together ? Number(together[1]) : STUDY_DRAIN_IN_FLIGHT;
    out.push({
      mode,
      inFlight,
      name,
      value,
      finalize: stats(v, 'finalize')?.median,
      sync: mode === 'finalize' ? stats(v, 'sync')?.median : undefined,
      state: !atStart ? 'not counted' : atStart.min >= 1 ? 'in flight' : 'finished',
      atStart,
    });
  }
  return out;
}

function spanText(values: number[]): string {
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  return ms(lo) === ms(hi) ? ms(lo) : `${ms(lo).replace(/ ms$/, '')}–${ms(hi)}`;
}

const MODE_WORDS = { finalize: 'ncclCommFinalize until quiet', 'stream-sync': 'a stream synchronize alone' } as const;
const MODE_SHORT = { finalize: 'finalize', 'stream-sync': 'stream synchronize' } as const;

/**
 * drain: the sweep of in-flight allreduces, then ncclCommFinalize until quiet or a stream
 * synchronize alone. A variant's figure is a drain figure only when its work was in flight at
 * every rank-iteration (`inFlightAtStart.min === 1`): those are given per size, and those with
 * four allreduces in flight, as the study's drain had, are set beside the study's 7–112 ms (one
 * figure against its range, several: lowest against its lower end, highest against its upper);
 * one allreduce alone is a drain of another count, said not set beside it. Every other variant is said "not a drain
 * figure" with the count of rank-iterations whose work had finished before the call, or, in a
 * run without the count, that whether work was in flight is not known. Never compared with the
 * study without a drain figure: the study's figure is then named with its host and source, not
 * compared (agreement.ts studyNotCompared).
 */
export function drainLine(run: RunFile, here: Here): VerdictLine | undefined {
  const figures = drainFigures(run);
  if (figures.length === 0) return undefined;
  const sentences: string[] = [];
  const drained = figures.filter((f) => f.state === 'in flight');
  for (const mode of ['finalize', 'stream-sync'] as const) {
    const list = drained.filter((f) => f.mode === mode);
    if (list.length === 0) continue;
    // The parts of finalize until quiet are given for the allreduces together (the study's case).
    const items = list.map((f) => {
      const parts =
        !f.name.endsWith(' alone') && f.finalize !== undefined && f.sync !== undefined
          ? ` (finalize ${ms(f.finalize)} + stream synchronize ${ms(f.sync)})`
          : '';
      return `${f.name} ${ms(f.value)}${parts}`;
    });
    sentences.push(`${MODE_WORDS[mode]}: ${items.join(', ')}`);
  }
  let text = '';
  if (sentences.length > 0) text = `Drain, with the work in flight at every rank-iteration as the call began: ${sentences.join('; ')}.`;

  const finished = figures.filter((f) => f.state === 'finished');
  if (finished.length > 0) {
    // Variants with the same count read as one group.
    const groups = new Map<string, DrainFigure[]>();
    for (const f of finished) {
      const key = finishedWords(f.atStart!);
      groups.set(key, [...(groups.get(key) ?? []), f]);
    }
    const measured = (list: DrainFigure[]): string =>
      (['finalize', 'stream-sync'] as const)
        .map((mode) => {
          const values = list.filter((f) => f.mode === mode).map((f) => f.value);
          return values.length > 0 ? `${MODE_WORDS[mode]} ${spanText(values)}` : undefined;
        })
        .filter((x): x is string => x !== undefined)
        .join(', ');
    if (finished.length === figures.length && groups.size === 1) {
      const [words] = [...groups.keys()];
      text = `Drain (${sizesWords(finished)}, enqueued right before the call): in every variant ${words}: not a drain figure (${measured(finished)}, with the work already done).`;
    } else {
      const parts = [...groups.entries()].map(
        ([words, list]) => `${list.map((f) => `${MODE_SHORT[f.mode]} ${f.name}`).join(', ')}: ${words} (${measured(list)})`,
      );
      text += `${text ? ' ' : ''}Not drain figures: ${parts.join('; ')}.`;
    }
  }

  const uncounted = figures.filter((f) => f.state === 'not counted');
  if (uncounted.length > 0) {
    const items = uncounted.map((f) => {
      const parts =
        f.finalize !== undefined && f.sync !== undefined ? ` (finalize ${ms(f.finalize)} + stream synchronize ${ms(f.sync)})` : '';
      return `${MODE_WORDS[f.mode]} ${ms(f.value)}${parts} with ${enqueuedWords(f.name)} enqueued before the call`;
    });
    text += `${text ? ' ' : 'Drain: '}${items.join('; ')}: this run has no inFlightAtStart count, so whether the work was still in flight as the call began is not known: not known to be a drain figure.`;
  }

  // A figure that reads 0 ms is below the timer's resolution: not set beside the study's range.
  // Like with like: the study's drain had four allreduces in flight (STUDY_DRAIN_IN_FLIGHT); a drain
  // of another count (one allreduce alone) is not set beside it.
  const measured = drained.filter((f) => f.mode === 'finalize' && !isBelowTimer(f.value));
  const alike = measured.filter((f) => f.inFlight === STUDY_DRAIN_IN_FLIGHT);
  const other = measured.filter((f) => f.inFlight !== STUDY_DRAIN_IN_FLIGHT);
  const sweep = alike.map((f) => f.value);
  const countWords = (f: DrainFigure): string => (f.inFlight === 1 ? 'one allreduce' : `${f.inFlight} allreduces`);
  const otherWords =
    other.length > 0
      ? `the drains here with ${[...new Set(other.map(countWords))].join(' or ')} in flight (${other.map((f) => f.name).join(', ')}), the study's with ${STUDY_DRAIN_IN_FLIGHT}`
      : undefined;
  let study: string;
  if (sweep.length > 0) {
    const name = alike.length === 1 ? `until quiet, ${alike[0]!.name.replace(/ \(.*\)$/, '')}` : `until quiet with ${STUDY_DRAIN_IN_FLIGHT} in flight (the sweep)`;
    study = `${otherWords ? `Not set beside the study's: ${otherWords}. ` : ''}${studySentence(here, [rangeClause(Math.min(...sweep), Math.max(...sweep), S.drain, name)])}`;
  } else {
    // Named with its host and source, as every study figure the verdict gives (agreement.ts).
    study = studyNotCompared(
      [S.drain],
      otherWords ?? (drained.some((f) => f.mode === 'finalize') ? "the drain here reads 0 ms, below the timer's resolution" : 'this run has no drain figure'),
    );
  }
  return { id: 'drain', text: `${text} ${study}` };
}

/** "one 16 MiB allreduce", "4 allreduces (16 MiB, …)", from a drain variant's name in words. */
function enqueuedWords(name: string): string {
  const alone = /^(.*) alone$/.exec(name);
  if (alone) return `one ${alone[1]} allreduce`;
  const together = /^the (\d+) together(.*)$/.exec(name);
  return together ? `${together[1]} allreduces${together[2]}` : 'the allreduces';
}

/** "16 MiB, 64 MiB, 128 MiB, 256 MiB alone and the 4 together": the sizes of drain variants, each named once. */
function sizesWords(list: DrainFigure[]): string {
  const names = [...new Set(list.map((f) => f.name.replace(/ \(.*\)$/, '')))];
  const alone = names.filter((n) => n.endsWith(' alone')).map((n) => n.replace(' alone', ''));
  const together = names.filter((n) => !n.endsWith(' alone'));
  return [...(alone.length > 0 ? [`${alone.join(', ')} alone`] : []), ...together].join(' and ');
}

/** The variants of the drop check, with what is timed in words and the call that should drop the work. */
const DROP_CHECKS = [
  { experiment: 'revoke', variant: 'inflight/destroy', name: 'ncclCommRevoke (then ncclCommDestroy)', call: 'revoke' },
  {
    experiment: 'revoke',
    variant: 'inflight/shrink-abort',
    name: 'ncclCommRevoke (then ncclCommShrink with NCCL_SHRINK_ABORT)',
    call: 'revoke',
  },
  { experiment: 'shrink', variant: 'abort/inflight', name: 'ncclCommShrink with NCCL_SHRINK_ABORT', call: 'shrink' },
] as const;

/** "4" or "3–4": a count that may vary over rank-iterations. */
function countWords(c: CountSummary): string {
  return c.min === c.max ? String(c.min) : `${c.min}–${c.max}`;
}

/**
 * The drop check of revoke and NCCL_SHRINK_ABORT: how many of the allreduces enqueued right before
 * the call completed and how many were dropped, read back from the data (`inFlightCompleted`,
 * `inFlightDropped`; counts per rank-iteration), said only as far as the run shows that the work
 * was in flight as the call began (`inFlightAtStart` of the same variant):
 * - no `inFlightAtStart` count: whether anything was in flight is not known, so the read-back is
 *   said, never "nothing was dropped";
 * - in flight at no rank-iteration (`max` 0): the work had finished before the call, nothing was
 *   left to drop;
 * - in flight at some or every rank-iteration: the read-back is said with that count; none dropped
 *   reads "none dropped", never when the revoke or shrink "took effect" (the run does not time that).
 * Undefined when the run has no such counts (older runs, NCCL without revoke).
 */
export function dropCheckLine(run: RunFile): VerdictLine | undefined {
  const parts: string[] = [];
  for (const d of DROP_CHECKS) {
    const v = variantOf(run, d.experiment, d.variant);
    const dropped = countOf(v, 'inFlightDropped');
    const completed = countOf(v, 'inFlightCompleted');
    if (!dropped || !completed) continue;
    const enqueued = countOf(v, 'inFlightEnqueued');
    const atStart = countOf(v, 'inFlightAtStart');
    const n = dropped.n;
    const head = `${d.name} with ${enqueued ? countWords(enqueued) : countWords({ ...completed, min: completed.min + dropped.min, max: completed.max + dropped.max })} allreduces enqueued right before the call`;
    if (atStart && atStart.max === 0) {
      parts.push(`${head}: ${finishedWords(atStart)}, so nothing was left to drop (${countWords(completed)} completed)`);
      continue;
    }
    const of = `${n} rank-iteration${n === 1 ? '' : 's'}`;
    const readBack =
      dropped.max === 0
        ? `${countWords(completed)} completed and none dropped on every rank (${of})`
        : dropped.min === dropped.max && completed.min === completed.max
          ? `${dropped.min} dropped, ${completed.min} completed on every rank (${of})`
          : `${countWords(dropped)} dropped and ${countWords(completed)} completed per rank-iteration (${dropped.sum} dropped and ${completed.sum} completed over ${of})`;
    if (!atStart) {
      // Without the count the run cannot show the work was in flight at the call: no drop finding.
      parts.push(
        `${head}: this run has no inFlightAtStart count, so whether they were still in flight as the ${d.call} began is not known; read back after it, ${readBack}${dropped.max === 0 ? ': not shown to be work the ' + d.call + ' let finish' : ''}`,
      );
      continue;
    }
    const inFlight = `in flight as the ${d.call} began in ${atStart.sum} of ${atStart.n} rank-iteration${atStart.n === 1 ? '' : 's'}${atStart.min === 0 ? ` (${finishedWords(atStart)})` : ''}`;
    parts.push(`${head}: ${inFlight}; read back after it, ${readBack}`);
  }
  if (parts.length === 0) return undefined;
  return {
    id: 'drop-check',
    text: `Drop check (each in-flight allreduce's slice read back after the call): ${parts.join('; ')}. ${NO_STUDY}`,
  };
}
