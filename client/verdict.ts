/**
 * The verdict: the study's conclusions re-derived for the host of one run. Every number in a
 * sentence is read from the run's summaries (medians over its recorded iterations); a
 * conclusion whose experiment is missing from the run is left out, never filled with a belief
 * about NCCL. Shown by the CLI after its table, by the webview and the HTML report.
 */
import type { ErrorEvent, StepStats, VariantSummary } from '../protocol/events';
import { isSimulatedRun, type RunFile } from '../protocol/runFile';

export interface VerdictLine {
  /** Stable id of the conclusion, e.g. "first-collective-share". */
  id: string;
  /** One sentence with the run's figures. */
  text: string;
}

const MiB = 2 ** 20;

function variantOf(run: RunFile, experiment: string, variant?: string): VariantSummary | undefined {
  const e = run.experiments.find((x) => x.experiment === experiment);
  return variant === undefined ? e?.variants[0] : e?.variants.find((v) => v.variant === variant);
}

function stats(v: VariantSummary | undefined, step: string): StepStats | undefined {
  return v?.steps.find((s) => s.step === step)?.stats;
}

/** 0.1234 → "12%"; ms → "176 ms" / "0.28 ms"; bytes → "484 MiB" / "1.3 GiB". */
export function pct(x: number): string {
  return `${Math.round(x * 100)}%`;
}
export function ms(x: number): string {
  if (x >= 100) return `${Math.round(x)} ms`;
  if (x >= 10) return `${x.toFixed(1)} ms`;
  return `${x.toPrecision(2)} ms`;
}
export function bytes(x: number): string {
  return x >= 2 ** 30 ? `${(x / 2 ** 30).toFixed(1)} GiB` : `${Math.round(x / MiB)} MiB`;
}

/**
 * Derives the verdict lines of `run`.
 * @returns lines in a fixed order; empty when the run has no summarised experiment.
 */
export function deriveVerdict(run: RunFile): VerdictLine[] {
  const lines: VerdictLine[] = [];
  const where = `on ${run.stamp?.hostname ?? run.host} (NCCL ${run.stamp?.ncclVersion ?? '?'})`;
  const init = variantOf(run, 'init');
  const initCall = stats(init, 'call');
  const initFirst = stats(init, 'first');
  const initTotal = stats(init, 'total');
  if (initCall && initFirst && initTotal) {
    lines.push({
      id: 'first-collective-share',
      text: `${where}, a fresh communicator costs ${ms(initTotal.median)} to its first collective; ${pct(initFirst.median / initTotal.median)} of it (${ms(initFirst.median)}) is paid by the first collective, not by ncclCommInitRankConfig (${ms(initCall.median)}).`,
    });
  }
  const rebuilds: string[] = [];
  for (const [experiment, variant, name] of [
    ['split', 'whole/splitShare=0', 'split (same shape, splitShare 0)'],
    ['split', 'whole/splitShare=1', 'split (same shape, splitShare 1)'],
    ['shrink', 'default', 'shrink'],
    ['grow', 'default', 'grow'],
  ] as const) {
    const total = stats(variantOf(run, experiment, variant), 'total');
    if (total && initTotal) rebuilds.push(`${name} ${ms(total.median)} (${pct(total.median / initTotal.median)})`);
  }
  if (rebuilds.length > 0) {
    lines.push({ id: 'rebuild-vs-init', text: `To the first collective, as a share of a fresh init: ${rebuilds.join(', ')}.` });
  }
  const floors: string[] = [];
  const abort = stats(variantOf(run, 'abort'), 'abort');
  if (abort) floors.push(`ncclCommAbort ${ms(abort.median)} (min ${ms(abort.min)})`);
  const revoke = stats(variantOf(run, 'revoke', 'idle/destroy'), 'revoke');
  if (revoke) floors.push(`ncclCommRevoke until quiet ${ms(revoke.median)}`);
  const destroy = stats(variantOf(run, 'destroy'), 'total');
  if (destroy) floors.push(`ncclCommFinalize + ncclCommDestroy ${ms(destroy.median)}`);
  if (floors.length > 0) lines.push({ id: 'teardown-floors', text: `Tearing a communicator down costs: ${floors.join('; ')}.` });

  const pool = variantOf(run, 'pool');
  const memory = pool?.memoryBytes ?? {};
  const points = Object.keys(memory).filter((k) => k.startsWith('pool after TP'));
  const poolBytes = points.length > 0 ? memory[points[points.length - 1]!] : undefined;
  const gpuBytes = run.stamp?.gpus[0]?.totalBytes;
  const sw = stats(pool, 'switch');
  const rebuild = stats(pool, 'rebuild');
  if (pool && poolBytes !== undefined && gpuBytes && sw && rebuild) {
    lines.push({
      id: 'pool',
      text: `A prewarmed pool of every TP shape (${pool.variant}) costs ${bytes(poolBytes)} per GPU (${((100 * poolBytes) / gpuBytes).toFixed(1)}% of memory) and turns a ${ms(rebuild.median)} rebuild into a ${ms(sw.median)} switch.`,
    });
  }
  const lazy = variantOf(run, 'connect-mode', 'init/runtimeConnect=1');
  const eager = variantOf(run, 'connect-mode', 'init/runtimeConnect=0');
  const lazyCall = stats(lazy, 'call');
  const eagerCall = stats(eager, 'call');
  const lazyFirst = stats(lazy, 'first');
  const eagerFirst = stats(eager, 'first');
  if (lazyCall && eagerCall && lazyFirst && eagerFirst) {
    lines.push({
      id: 'connect-mode',
      text: `With NCCL_RUNTIME_CONNECT=0, init takes ${ms(eagerCall.median)} (vs ${ms(lazyCall.median)}) and the first collective ${ms(eagerFirst.median)} (vs ${ms(lazyFirst.median)}): connecting at creation ${eagerFirst.median < lazyFirst.median ? 'removes' : 'does not remove'} the first-collective cost here.`,
    });
  }
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
      : measured.filter((x) => x.m!.later !== undefined && x.m!.later > MiB).map((x) => `${x.name}: ${bytes(x.m!.later!)} of it at the first collective`).join('; ') || 'where it lands was not recorded';
    lines.push({ id: 'one-rank-memory', text: `Field case C3: a one-rank communicator takes, per GPU, ${list}; ${landed}.` });
  }
  const reg = variantOf(run, 'registration', 'register/64MiB');
  const regFirst = stats(reg, 'register');
  const regAgain = stats(reg, 'registerAgain');
  const firstUse = stats(reg, 'firstUse');
  const secondUse = stats(reg, 'secondUse');
  if (regFirst && regAgain && firstUse && secondUse) {
    lines.push({
      id: 'registration',
      text: `Registering 64 MiB: ncclCommRegister ${ms(regFirst.median)}, again on the same range ${ms(regAgain.median)} (cache); the first collective on the buffer pays ${ms(Math.max(0, firstUse.median - secondUse.median))} more than the second.`,
    });
  }
  lines.push(...c10dLines(run), ...splitShareLines(run), ...hangCaseLines(run));
  lines.push(...shrinkAbortLines(run, where));
  if (isSimulatedRun(run)) return lines.map((l) => ({ ...l, text: `SIMULATED — ${l.text}` }));
  return lines;
}

/** One way to release the parent after a shrink (field case C5, experiment shrink-abort). */
export interface ShrinkAbortCombination {
  /** The agent's variant name, e.g. "abort/destroy/excluded-aborts". */
  variant: string;
  flag: 'NCCL_SHRINK_DEFAULT' | 'NCCL_SHRINK_ABORT';
  /** How the survivors release the parent. */
  release: 'ncclCommDestroy' | 'ncclCommAbort';
  /** What the excluded rank does with its parent at the same moment. */
  excluded: 'destroys' | 'aborts' | 'exits';
}

/** The twelve combinations of the shrink-abort experiment, in table order (flag, release, excluded rank). */
export const SHRINK_ABORT_COMBINATIONS: readonly ShrinkAbortCombination[] = (['default', 'abort'] as const).flatMap((flag) =>
  (['destroy', 'abort'] as const).flatMap((release) =>
    (['destroys', 'aborts', 'exits'] as const).map((excluded) => ({
      variant: `${flag}/${release}/excluded-${excluded}`,
      flag: flag === 'abort' ? ('NCCL_SHRINK_ABORT' as const) : ('NCCL_SHRINK_DEFAULT' as const),
      release: release === 'abort' ? ('ncclCommAbort' as const) : ('ncclCommDestroy' as const),
      excluded,
    })),
  ),
);

/** The combination pytorch/pytorch#194679 reported hanging on newer NCCL. */
export const SHRINK_ABORT_CASE = 'abort/destroy/excluded-aborts';

/** What became of one combination in a run. */
export interface ShrinkAbortOutcome extends ShrinkAbortCombination {
  /**
   * timed: it completed (medians in `text`); hang: the hang guard stopped it (TIMEOUT); failed:
   * another error ended it; skipped: the agent did not plan it; not run: the run has nothing on it.
   */
  outcome: 'timed' | 'hang' | 'failed' | 'skipped' | 'not run';
  /** The figures (ms, medians), the error's message, or why it did not run. */
  text: string;
}

type RunError = Omit<ErrorEvent, 'type'>;

/**
 * The table of field case C5 for one run: every combination of the shrink-abort experiment with
 * its outcome, read from the run's summaries and errors (a hang-guard stop is the TIMEOUT error
 * whose `where.variant` names the combination, as for C4 and C6).
 * @returns undefined when the run did not plan the experiment (skipped or not asked for).
 */
export function shrinkAbortOutcomes(run: RunFile): ShrinkAbortOutcome[] | undefined {
  const e = (run.experiments ?? []).find((x) => x.experiment === 'shrink-abort');
  if (!e) return undefined;
  const errors: RunError[] = (run.errors ?? []).filter((x) => x.where?.experiment === 'shrink-abort');
  const stop = errors[0];
  return SHRINK_ABORT_COMBINATIONS.map((c) => {
    const v = (e.variants ?? []).find((x) => x.variant === c.variant);
    if (v && (v.steps ?? []).length > 0) return { ...c, outcome: 'timed', text: timedText(v) };
    const error = errors.find((x) => x.where.variant === c.variant);
    if (error?.code === 'TIMEOUT') return { ...c, outcome: 'hang', text: `stopped by the hang guard: ${error.message}` };
    if (error) return { ...c, outcome: 'failed', text: `failed (${error.code}): ${error.message}${error.detail ? ` — ${error.detail}` : ''}` };
    const skipped = (run.skipped ?? []).find((x) => x.experiment === 'shrink-abort' && x.variant === c.variant);
    if (skipped) return { ...c, outcome: 'skipped', text: `skipped: ${skipped.reason}` };
    const why = stop
      ? `not run: the experiment stopped at ${stop.where.variant ?? 'an earlier step'} (${stop.code})`
      : run.status === 'running'
        ? 'not run yet'
        : `not run (run ${run.status})`;
    return { ...c, outcome: 'not run', text: why };
  });
}

function timedText(v: VariantSummary): string {
  const m = (step: string): number | undefined => stats(v, step)?.median;
  const parts: string[] = [];
  const call = m('call');
  const first = m('first');
  const release = m('release');
  const excluded = m('excludedRelease');
  if (call !== undefined) parts.push(`shrink ${ms(call)}`);
  if (first !== undefined) parts.push(`first collective ${ms(first)}`);
  if (release !== undefined) parts.push(`parent released by the survivors in ${ms(release)}`);
  if (excluded !== undefined) parts.push(`by the excluded rank in ${ms(excluded)}`);
  return `timed: ${parts.join(', ')}`;
}

const EXCLUDED_TEXT = { destroys: 'destroys it', aborts: 'aborts it', exits: 'leaves it (exits)' } as const;

/** "NCCL_SHRINK_ABORT; survivors ncclCommDestroy the parent; excluded rank aborts it". */
export function combinationText(c: ShrinkAbortCombination): string {
  return `${c.flag}; survivors ${c.release} the parent; excluded rank ${EXCLUDED_TEXT[c.excluded]}`;
}

/** The C5 verdict: one line on the whole table, then one per combination. */
function shrinkAbortLines(run: RunFile, where: string): VerdictLine[] {
  const outcomes = shrinkAbortOutcomes(run);
  if (!outcomes) return [];
  const count = (o: ShrinkAbortOutcome['outcome']): number => outcomes.filter((x) => x.outcome === o).length;
  const parts = [`${count('timed')} of ${outcomes.length} ways to release the parent completed`];
  if (count('hang') > 0) parts.push(`${count('hang')} stopped by the hang guard`);
  if (count('failed') > 0) parts.push(`${count('failed')} failed`);
  if (count('skipped') + count('not run') > 0) parts.push(`${count('skipped') + count('not run')} not run`);
  const reported = outcomes.find((x) => x.variant === SHRINK_ABORT_CASE)!;
  const said: Record<ShrinkAbortOutcome['outcome'], string> = {
    timed: 'completed',
    hang: 'was stopped by the hang guard: the survivors did not get out of ncclCommDestroy',
    failed: 'failed',
    skipped: 'was skipped',
    'not run': 'did not run',
  };
  let text = `Field case C5 ${where}: after ncclCommShrink drops the last rank, ${parts.join(', ')}. The reported combination (${combinationText(reported)}) ${said[reported.outcome]}.`;
  const viaAbort = outcomes.find((x) => x.variant === 'abort/abort/excluded-aborts');
  const viaAbortRelease = stats(variantOf(run, 'shrink-abort', 'abort/abort/excluded-aborts'), 'release');
  if (reported.outcome === 'hang' && viaAbort?.outcome === 'timed' && viaAbortRelease) {
    text += ` Aborting the parent on the survivors instead completed (ncclCommAbort ${ms(viaAbortRelease.median)}).`;
  }
  return [
    { id: 'shrink-abort', text },
    ...outcomes.map((o) => ({ id: `shrink-abort:${o.variant}`, text: `C5 ${o.variant} (${combinationText(o)}): ${o.text}` })),
  ];
}

/**
 * Field case C1 (experiment c10d): where the cost of a new group lands with a lazy and with an
 * eager default group, and what the figures support as a fix; then c10d's teardown figures.
 */
function c10dLines(run: RunFile): VerdictLine[] {
  const lines: VerdictLine[] = [];
  const torch = run.stamp?.torchVersion ? `torch ${run.stamp.torchVersion}` : 'c10d';
  const lazy = variantOf(run, 'c10d', 'new_group/lazy-default');
  const eager = variantOf(run, 'c10d', 'new_group/eager-default');
  const [lazyCall, lazyFirst, eagerCall, eagerFirst] = [stats(lazy, 'call'), stats(lazy, 'first'), stats(eager, 'call'), stats(eager, 'first')];
  if (lazyCall && lazyFirst && eagerCall && eagerFirst) {
    // "Moves the connect" only when the eager first collective is at most a fifth of the lazy one.
    const moved = eagerFirst.median <= lazyFirst.median / 5;
    lines.push({
      id: 'c10d-new-group',
      text:
        `Field case C1 (${torch}): new_group on a lazy default group returns in ${ms(lazyCall.median)} and its first all_reduce pays ${ms(lazyFirst.median)}; ` +
        `on an eager default group (device_id) new_group takes ${ms(eagerCall.median)} and the first all_reduce ${ms(eagerFirst.median)}. ` +
        (moved
          ? 'Eager init moves the cost into new_group here.'
          : `Eager init moves the creation into new_group, not the connect: the first all_reduce still pays ${ms(eagerFirst.median)} of ${ms(eagerCall.median + eagerFirst.median)}, so whichever collective comes first pays it (a warm-up collective right after creation takes it out of the first step).`),
    });
  }
  const parts: string[] = [];
  const destroy = stats(variantOf(run, 'c10d', 'init/eager') ?? variantOf(run, 'c10d', 'init/lazy'), 'destroy');
  if (destroy) parts.push(`destroy_process_group ${ms(destroy.median)}`);
  const abort = stats(variantOf(run, 'c10d', 'abort'), 'abort');
  if (abort) parts.push(`aborting the default group ${ms(abort.median)}`);
  const shrink = stats(variantOf(run, 'c10d', 'shrink_group'), 'call');
  if (shrink) parts.push(`shrink_group ${ms(shrink.median)} (it also releases the parent group)`);
  const split = stats(variantOf(run, 'c10d', 'split_group'), 'total');
  if (split) parts.push(`split_group to its first all_reduce ${ms(split.median)}`);
  if (parts.length > 0) lines.push({ id: 'c10d-lifecycle', text: `In ${torch}: ${parts.join('; ')}.` });
  return lines;
}

/** Field case C2 (experiment split-share): memory per GPU added by each split group, per splitShare setting. */
function splitShareLines(run: RunFile): VerdictLine[] {
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
  const names: Record<string, string> = { 'splitShare=0': 'splitShare 0', 'splitShare=1': 'splitShare 1', 'splitShare=0+env': 'NCCL_COMM_SPLIT_SHARE_RESOURCES=1' };
  const parts: string[] = [];
  for (const v of e.variants) {
    const m = perGroup(v);
    if (m) parts.push(`${names[v.variant] ?? v.variant}: ${bytes(m.total / m.groups)} per group (${bytes(m.total)} for ${m.groups})`);
  }
  return parts.length > 0 ? [{ id: 'split-share', text: `Field case C2: memory per GPU after each split group's first collective — ${parts.join('; ')}.` }] : [];
}

/** Field cases C4 (split-subset) and C6 (init-abort): the hanging variant and the way out, from the run's errors and summaries. */
function hangCaseLines(run: RunFile): VerdictLine[] {
  const lines: VerdictLine[] = [];
  /**
   * What became of a variant expected to hang: stopped by the hang guard (a TIMEOUT naming it),
   * ended by another error, completed (it has summarised steps: it did not hang), or not run.
   */
  const outcome = (experiment: string, variant: string, what: string): { clause: string; detail: string } => {
    const error = (run.errors ?? []).find((x) => x.where?.experiment === experiment && x.where.variant === variant);
    if (error?.code === 'TIMEOUT') return { clause: `${what} hung and was stopped by the hang guard`, detail: ` Hang guard: ${error.message.replace(/^timed out at [^:]*: /, '')}.` };
    if (error) return { clause: `${what} ended with ${error.code}`, detail: ` ${error.code}: ${error.message}.` };
    if ((variantOf(run, experiment, variant)?.steps ?? []).length > 0) return { clause: `${what} completed: it did not hang in this run`, detail: '' };
    return { clause: `${what} did not run (run ${run.status})`, detail: '' };
  };
  const experimentIn = (id: string): boolean => run.experiments.some((e) => e.experiment === id) || (run.errors ?? []).some((x) => x.where?.experiment === id);
  const nocolor = stats(variantOf(run, 'split-subset', 'nocolor'), 'total');
  if (experimentIn('split-subset')) {
    const c4 = outcome('split-subset', 'subset-only', 'ncclCommSplit called by only some ranks');
    lines.push({
      id: 'split-subset',
      text: `Field case C4: ${c4.clause}${nocolor ? `; with NCCL_SPLIT_NOCOLOR from the other ranks it completed, ${ms(nocolor.median)} to the first collective` : ''}.${c4.detail}`,
    });
  }
  const nonblocking = variantOf(run, 'init-abort', 'nonblocking');
  const abortStep = nonblocking?.steps.find((x) => x.step === 'abort');
  // The abort call alone (runs from before it was recorded have only the whole).
  const abortCall = nonblocking?.steps.find((x) => x.step === 'abortCall');
  if (experimentIn('init-abort')) {
    const c6 = outcome('init-abort', 'blocking', 'a blocking init whose peer never joins');
    lines.push({
      id: 'init-abort',
      text: `Field case C6: ${c6.clause}${abortStep ? `; a non-blocking one was aborted (${abortStep.label}): ${ms(abortStep.stats.median)} in all${abortCall ? `, of which ncclCommAbort itself took ${ms(abortCall.stats.median)}` : ''}` : ''}.${c6.detail}`,
    });
  }
  return lines;
}
