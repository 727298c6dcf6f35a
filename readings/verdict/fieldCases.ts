/**
 * Verdict lines on the field cases: C1 (c10d new_group and c10d's lifecycle), C2 (split-share
 * memory), C3 (a one-rank communicator's memory, from connect-mode), C4 (split-subset) and C6
 * (init-abort). Each sentence is chosen by the run's figures and errors; a case whose experiment
 * is missing from the run is left out. C5 is in shrinkAbort.ts. Each case line names its case in
 * words on the label's first use ({@link fieldCaseLabel}) and ends with "The study published no
 * figure for this." (the cases come from public reports, not from the study), after the
 * few-iterations note when the run recorded fewer than 3 iterations per step (format.ts
 * withFewNote: each case line is a judgement no study sentence carries); a one-rank run's C1
 * line says what one rank shows and what it cannot (there is no peer to connect to).
 */
import type { VariantSummary } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { STUDY_FIGURES as S } from '../studyFigures';
import { figureClause, shareRegime, studyNotCompared, studySentence, type Here } from './agreement';
import { bytes, MiB, ms, msAll, stats, variantOf, withFewNote, type VerdictLine } from './format';

/** Said at the end of every field-case line: the cases come from public reports, not from the study. */
export const NO_STUDY_FIGURE = 'The study published no figure for this.';

/**
 * The field cases by label, in the words of docs' field cases (the public reports they come from,
 * paraphrased): what each label stands for, said on its first use in the verdict.
 */
export const FIELD_CASES = {
  C1: 'the first collective on a new group is slow',
  C2: 'each group costs hundreds of MB; with splitShare it should not',
  C3: 'a one-rank communicator allocates half a gigabyte',
  C4: 'split hangs when only some ranks call it',
  C5: 'shrink with abort, then destroy, hangs',
  C6: 'init can hang without bound; abort must get us out',
} as const;

/**
 * A field case's label with its name in words: 'Field case C4, "split hangs when only some ranks
 * call it"'; `extra` (e.g. the torch version) follows in parentheses.
 */
export function fieldCaseLabel(id: keyof typeof FIELD_CASES, extra?: string): string {
  return `Field case ${id}, "${FIELD_CASES[id]}"${extra ? ` (${extra})` : ''}`;
}

/**
 * Field case C1 (experiment c10d): where the cost of a new group lands with a lazy and with an
 * eager default group, and what the figures support as a fix; then c10d's teardown figures.
 */
export function c10dLines(run: RunFile, here: Here): VerdictLine[] {
  const lines: VerdictLine[] = [];
  const torch = run.stamp?.torchVersion ? `torch ${run.stamp.torchVersion}` : 'c10d';
  const lazy = variantOf(run, 'c10d', 'new_group/lazy-default');
  const eager = variantOf(run, 'c10d', 'new_group/eager-default');
  const [lazyCall, lazyFirst, eagerCall, eagerFirst] = [
    stats(lazy, 'call'),
    stats(lazy, 'first'),
    stats(eager, 'call'),
    stats(eager, 'first'),
  ];
  if (lazyCall && lazyFirst && eagerCall && eagerFirst) {
    // Nothing to move when both first all_reduces are negligible (one rank, or connected at creation).
    const nothing =
      shareRegime(lazyFirst.median, lazyCall.median + lazyFirst.median) === 'negligible' &&
      shareRegime(eagerFirst.median, eagerCall.median + eagerFirst.median) === 'negligible';
    // "Moves the cost" only when the eager first collective is at most a fifth of the lazy one. What
    // the first all_reduce still pays is named by its figure, never called "the connect": the c10d
    // experiment does not time the connect apart.
    const moved = eagerFirst.median <= lazyFirst.median / 5;
    const creationMoved = eagerCall.median > lazyCall.median * 1.1;
    // One rank has no peer to connect to: its figures show where the creation lands, never
    // whether eager init moves a connect (review defect 5).
    const oneRank = run.ranks < 2;
    const oneRankNote = !oneRank
      ? ''
      : nothing
        ? ' At 1 rank there is no peer to connect to, so this does not show whether a group of 2 or more ranks has a first-collective cost to move.'
        : moved
          ? ' At 1 rank there is no peer to connect to, so this shows where the creation lands, not whether eager init moves a connect (a run of 2 or more ranks shows that).'
          : ' At 1 rank there is no peer to connect to: what the first all_reduce pays here is not a connect, and a run of 2 or more ranks shows what eager init does to one.';
    lines.push({
      id: 'c10d-new-group',
      text:
        `${fieldCaseLabel('C1', torch)}: new_group on a lazy default group returns in ${ms(lazyCall.median)} and its first all_reduce pays ${ms(lazyFirst.median)}; ` +
        `on an eager default group (device_id) new_group takes ${ms(eagerCall.median)} and the first all_reduce ${ms(eagerFirst.median)}. ` +
        (nothing
          ? 'Both first all_reduces are negligible here: there is no first-collective cost for eager init or a warm-up collective to move.'
          : moved
            ? 'Eager init moves the cost into new_group here.'
            : `${creationMoved ? "Eager init moves the creation into new_group, not all of the first all_reduce's cost" : 'Eager init does not move the first-collective cost here'}: the first all_reduce still pays ${ms(eagerFirst.median)} of ${ms(eagerCall.median + eagerFirst.median)}, so whichever collective comes first pays it (a warm-up collective right after creation takes it out of the first step).`) +
        `${oneRankNote}`,
    });
    // Its words are judgements: with no study sentence to carry the few-iterations note, the line carries it.
    lines[lines.length - 1]!.text = `${withFewNote(lines[lines.length - 1]!.text, here)} ${NO_STUDY_FIGURE}`;
  }
  const parts: string[] = [];
  // Each destroy names the default group it tore down (eager: init_process_group with device_id;
  // lazy: without), the eager one first: never one variant's figure as "destroy_process_group".
  const destroys = (['eager', 'lazy'] as const)
    .map((mode) => ({ mode, st: stats(variantOf(run, 'c10d', `init/${mode}`), 'destroy') }))
    .filter((d): d is { mode: 'eager' | 'lazy'; st: NonNullable<typeof d.st> } => d.st !== undefined);
  const destroy = destroys[0]?.st;
  if (destroys.length > 0)
    parts.push(`destroy_process_group ${destroys.map((d) => `${ms(d.st.median)} of ${d.mode === 'eager' ? 'an eager default group (device_id)' : 'a lazy default group'}`).join(', ')}`);
  // A one-rank group has no peer (as the lifecycle's teardown line says): named, not judged.
  const study = !destroy
    ? ` ${NO_STUDY_FIGURE}`
    : run.ranks < 2 && S.c10dDestroy.host.ranks >= 2
      ? ` ${studyNotCompared([S.c10dDestroy], `a process group of 1 rank, the study's had ${S.c10dDestroy.host.ranksText}`)}`
      : ` ${studySentence(here, [figureClause(destroy.median, S.c10dDestroy)])}`;
  const abort = stats(variantOf(run, 'c10d', 'abort'), 'abort');
  if (abort) parts.push(`aborting the default group ${ms(abort.median)}`);
  const shrink = stats(variantOf(run, 'c10d', 'shrink_group'), 'call');
  if (shrink) parts.push(`shrink_group ${ms(shrink.median)} (it also releases the parent group)`);
  const split = stats(variantOf(run, 'c10d', 'split_group'), 'total');
  if (split) parts.push(`split_group to its first all_reduce ${ms(split.median)}`);
  if (parts.length > 0) lines.push({ id: 'c10d-lifecycle', text: `In ${torch}: ${parts.join('; ')}.${study}` });
  return lines;
}

/** Field case C2 (experiment split-share): memory per GPU added by each split group, per splitShare setting. */
export function splitShareLines(run: RunFile, here?: Here): VerdictLine[] {
  const e = run.experiments.find((x) => x.experiment === 'split-share');
  if (!e) return [];
  const perGroup = (v: VariantSummary): { groups: number; total: number } | undefined => {
    const points = Object.entries(v.memoryBytes ?? {})
      .map(([k, b]) => ({ groups: Number(/^after (\d+) groups?$/.exec(k)?.[1]), b }))
      .filter((p) => Number.isInteger(p.groups) && p.groups > 0)
      .sort((a, b) => a.groups - b.groups);
    const last = points[points.length - 1];
    return last ? { groups: last.groups, total: last.b } : undefined;
  };
  const names: Record<string, string> = {
    'splitShare=0': 'splitShare 0',
    'splitShare=1': 'splitShare 1',
    'splitShare=0+env': 'NCCL_COMM_SPLIT_SHARE_RESOURCES=1',
  };
  const parts: string[] = [];
  for (const v of e.variants) {
    const m = perGroup(v);
    if (m) parts.push(`${names[v.variant] ?? v.variant}: ${bytes(m.total / m.groups)} per group (${bytes(m.total)} for ${m.groups})`);
  }
  return parts.length > 0
    ? [{ id: 'split-share', text: `${withFewNote(`${fieldCaseLabel('C2')}: memory per GPU after each split group's first collective — ${parts.join('; ')}.`, here)} ${NO_STUDY_FIGURE}` }]
    : [];
}

/** Field cases C4 (split-subset) and C6 (init-abort): the hanging variant and the way out, from the run's errors and summaries. */
export function hangCaseLines(run: RunFile, here?: Here): VerdictLine[] {
  const lines: VerdictLine[] = [];
  /**
   * What became of a variant expected to hang: stopped by the hang guard (a TIMEOUT naming it),
   * ended by another error, completed (it has summarised steps: it did not hang), or not run.
   */
  const outcome = (experiment: string, variant: string, what: string): { clause: string; detail: string } => {
    const error = (run.errors ?? []).find((x) => x.where?.experiment === experiment && x.where.variant === variant);
    if (error?.code === 'TIMEOUT')
      return {
        clause: `${what} hung and was stopped by the hang guard`,
        detail: ` Hang guard: ${error.message.replace(/^timed out at [^:]*: /, '')}.`,
      };
    if (error) return { clause: `${what} ended with ${error.code}`, detail: ` ${error.code}: ${error.message}.` };
    if ((variantOf(run, experiment, variant)?.steps ?? []).length > 0)
      return { clause: `${what} completed: it did not hang in this run`, detail: '' };
    return { clause: `${what} did not run (run ${run.status})`, detail: '' };
  };
  const experimentIn = (id: string): boolean =>
    run.experiments.some((e) => e.experiment === id) || (run.errors ?? []).some((x) => x.where?.experiment === id);
  const nocolor = stats(variantOf(run, 'split-subset', 'nocolor'), 'total');
  if (experimentIn('split-subset')) {
    const c4 = outcome('split-subset', 'subset-only', 'ncclCommSplit called by only some ranks');
    lines.push({
      id: 'split-subset',
      text: `${withFewNote(`${fieldCaseLabel('C4')}: ${c4.clause}${nocolor ? `; with NCCL_SPLIT_NOCOLOR from the other ranks it completed, ${ms(nocolor.median)} to the first collective` : ''}.`, here)}${c4.detail} ${NO_STUDY_FIGURE}`,
    });
  }
  const nonblocking = variantOf(run, 'init-abort', 'nonblocking');
  const abortStep = nonblocking?.steps.find((x) => x.step === 'abort');
  // The abort call alone (runs from before it was recorded have only the whole).
  const abortCall = nonblocking?.steps.find((x) => x.step === 'abortCall');
  if (experimentIn('init-abort')) {
    const c6 = outcome('init-abort', 'blocking', 'a blocking init whose peer never joins');
    let aborted = '';
    if (abortStep) {
      // One unit for the poll in the step's label and the whole, which are set side by side:
      // "polled 1.50 s … 1.50 s in all", never "polled 1500 ms … 1.50 s in all". The abort call,
      // a part thousands of times smaller, keeps its own unit ("0.11 ms", not "0.000105 s").
      const polled = [...abortStep.label.matchAll(/(\d+(?:\.\d+)?) ms\b/g)].map((m) => Number(m[1]));
      const written = msAll([abortStep.stats.median, ...polled]);
      const whole = written[0]!;
      const call = abortCall ? ms(abortCall.stats.median) : '';
      let i = 1;
      const label = abortStep.label.replace(/(\d+(?:\.\d+)?) ms\b/g, () => written[i++]!);
      aborted = `; a non-blocking one was aborted (${label}): ${whole} in all${abortCall ? `, of which ncclCommAbort itself took ${call}` : ''}`;
    }
    lines.push({
      id: 'init-abort',
      text: `${withFewNote(`${fieldCaseLabel('C6')}: ${c6.clause}${aborted}.`, here)}${c6.detail} ${NO_STUDY_FIGURE}`,
    });
  }
  return lines;
}

/**
 * Field case C3 (experiment connect-mode, one-rank variants): a one-rank communicator's memory
 * per GPU for each setting the run measured, and whether it lands at creation or at the first
 * collective (more than 1 MiB after the call counts as landing at the first collective).
 */
export function oneRankMemoryLine(run: RunFile, here?: Here): VerdictLine | undefined {
  // Runs before 0.1.0's baseline fix counted the warm parent too and recorded it as `parent`.
  const childBytes = (m: Record<string, number> | undefined): number | undefined =>
    m?.afterFirst === undefined ? undefined : m.afterFirst - (m.parent ?? 0);
  // A one-rank communicator's memory per setting, and where it lands: at creation (afterCall) or at its first collective.
  const oneRankMemory = (variant: string): { total: number; later?: number } | undefined => {
    const m = variantOf(run, 'connect-mode', variant)?.memoryBytes;
    const total = childBytes(m);
    if (total === undefined) return undefined;
    return m?.afterCall === undefined ? { total } : { total, later: total - (m.afterCall - (m.parent ?? 0)) };
  };
  const settings = [
    ['with runtime connect', 'one-rank/runtimeConnect=1'],
    ['without', 'one-rank/runtimeConnect=0'],
    ['with runtime connect and NCCL_CUMEM_ENABLE=0', 'one-rank/runtimeConnect=1/cumem=0'],
    ['without it and NCCL_CUMEM_ENABLE=0', 'one-rank/runtimeConnect=0/cumem=0'],
  ] as const;
  const measured = settings.map(([name, variant]) => ({ name, m: oneRankMemory(variant) })).filter((x) => x.m !== undefined);
  if (measured.length >= 2 && measured[0]!.name === settings[0][0] && measured[1]!.name === settings[1][0]) {
    const list = measured.map((x) => `${bytes(x.m!.total)} ${x.name}`).join(', ');
    const landed = measured.every((x) => x.m!.later !== undefined && x.m!.later <= MiB)
      ? 'all of it at creation, none at the first collective'
      : measured
          .filter((x) => x.m!.later !== undefined && x.m!.later > MiB)
          .map((x) => `${x.name}: ${bytes(x.m!.later!)} of it at the first collective`)
          .join('; ') || 'where it lands was not recorded';
    return { id: 'one-rank-memory', text: `${withFewNote(`${fieldCaseLabel('C3')}: a one-rank communicator takes, per GPU, ${list}; ${landed}.`, here)} ${NO_STUDY_FIGURE}` };
  }
  return undefined;
}
