/**
 * The one-line reading of an annotation (the sentence its figures allow, in every regime: a
 * one-rank child, a lazily made group, a first collective ≈ 0 or the majority, a headline
 * variant that shares its parent's resources, a first collective with no figure) and the gate of
 * an experiment the host cannot run. Pure; re-exported by annotationText.ts.
 */
import { timeoutOf, type Annotation, type Measured, type RunError } from './figures';
import { escapeMarkdown, formatMs, percent, plain } from './formatText';
import type { CallSite } from '../sites/callSites';

/**
 * Where the hang guard stopped a step, in plain words from a TIMEOUT error of the run (the
 * agent's message "timed out at split halves/splitShare=0 iteration 0, step ncclCommSplit on rank
 * 1: …", else its `where`): "timed out on rank 1 in ncclCommSplit (split halves/splitShare=0,
 * iteration 0)". Plain text (run-file text made safe with `plain`); escape it for Markdown.
 */
export function timeoutWords(e: RunError): string {
  const m = /^timed out at (.+?) iteration (\d+), step (.+?) on rank (\d+)/.exec(e.message);
  if (m) return `timed out on rank ${m[4]} in ${plain(m[3] ?? '', 60)} (${plain(m[1] ?? '', 60)}, iteration ${m[2]})`;
  const w = e.where ?? {};
  const at = [w.experiment, w.variant].filter(Boolean).join(' ');
  return `timed out${w.rank !== undefined ? ` on rank ${w.rank}` : ''}${w.step ? ` at step ${plain(w.step, 60)}` : ''}${at ? ` (${plain(at, 80)}${w.iteration !== undefined ? `, iteration ${w.iteration}` : ''})` : ''}`;
}

/** Below this share of the total the first collective counts as ≈ 0: "nearly all of it is the call itself". */
export const FIRST_NEGLIGIBLE_SHARE = 0.02;

/** What the reading calls the thing created: "init", "split", "init_process_group", …. */
function noun(a: Annotation, m: Measured): string {
  if (m.experiment === 'c10d') return a.api;
  return ['init', 'split', 'shrink', 'grow'].includes(m.experiment) ? m.experiment : 'creation';
}

/**
 * The run's NCCL_RUNTIME_CONNECT where its stamp sets it (for all ranks, or for the variant):
 * "; this run set NCCL_RUNTIME_CONNECT=0", else "".
 */
function connectStamp(m: Measured): string {
  const stamp = m.source.run.stamp;
  const value = stamp?.variantEnv?.[`${m.experiment} ${m.main.variant}`]?.NCCL_RUNTIME_CONNECT ?? stamp?.ncclEnv?.NCCL_RUNTIME_CONNECT;
  return typeof value === 'string' ? `; this run set NCCL_RUNTIME_CONNECT=${escapeMarkdown(value, 20)}` : '';
}

/** At one rank: what a one-rank figure does not show. */
const ONE_RANK_LIMIT = '1 rank: no peer to connect, so this does not show what a group of more ranks pays in its first collective';

/**
 * The creations whose group is made where the default group's is: eagerly at the call when the
 * file's `init_process_group` passes device_id, at the group's first collective otherwise
 * (sites/pythonEager.ts `eagerOf`, which reads `fileEager` for them). Their device_id sentence is
 * the default group's, never one that would have the user pass device_id to this call.
 */
const FOLLOWS_DEFAULT_GROUP: ReadonlySet<string> = new Set(['new_group', 'new_subgroups', 'init_device_mesh', 'DeviceMesh', 'DeviceMesh._flatten', 'DeviceMesh._unflatten']);

/** Whether `api` makes its group where the default group's is made ({@link FOLLOWS_DEFAULT_GROUP}): its device_id sentence is the default group's. */
export function followsDefaultGroup(api: string): boolean {
  return FOLLOWS_DEFAULT_GROUP.has(api);
}

/** How a c10d creation answered by the NCCL init beneath makes its group, from the code (CallSite `keywords`, `eager`). */
type BeneathWay =
  /** `device_id=` at this call. */
  | 'own'
  /** Eager by the code without device_id at this call (a warm-up collective next, split_group, the file's init passing it). */
  | 'eager'
  /** `init_process_group` without device_id, or a group of {@link FOLLOWS_DEFAULT_GROUP} in a file whose init passes none. */
  | 'lazy'
  /** The code does not say (no site, a `**kwargs`, no init_process_group in the file): init_process_group reads as `lazy` (its hover's headline note says so). */
  | 'unknown';

function beneathWay(site: Pick<CallSite, 'keywords' | 'eager'> | undefined): BeneathWay {
  if (site?.keywords.includes('device_id')) return 'own';
  return site?.eager === true ? 'eager' : site?.eager === false ? 'lazy' : 'unknown';
}

/**
 * A c10d creation answered by the NCCL init beneath it (the run has no c10d figures): the init
 * call and its first collective as that experiment measured them, and what a group made lazily
 * pays in its first collective, said to come from the NCCL init; at one rank, what that does not
 * show. Whose device_id decides follows the call: `init_process_group`'s own ("without device_id
 * the first collective pays …"); for a group made where the default group's is
 * ({@link FOLLOWS_DEFAULT_GROUP}: new_group, DeviceMesh…) the default group's ("the default group
 * was created without device_id, so …", or "if …" where the code does not show it); any other
 * creation names no device_id ("made lazily, …").
 */
function beneathInit(m: Measured, api: string, call: number, first: number, total: number, way: BeneathWay): string {
  const single = m.main.childRanks === 1 || m.source.run.ranks === 1;
  const one = single ? `; ${ONE_RANK_LIMIT}` : '';
  // The init experiment times the first collective, not a connect apart (and one rank has no peer).
  const second = "the NCCL communicator's first collective";
  const figures = `the NCCL init beneath (experiment ${escapeMarkdown(m.experiment, 30)}) takes ${formatMs(call)} in its call and ${formatMs(first)} in ${second}, ${formatMs(total)} in all`;
  // A call made eagerly is never read the sentence of a lazy one; where it pays is not in this
  // run (no c10d figures): only the NCCL init's own figures are said.
  if (way === 'own') return `this call passes device_id, and this run has no c10d figures to show where it pays: ${figures}${connectStamp(m)}${one}`;
  if (way === 'eager') return `the code makes this group's communicator at or right after this call, and this run has no c10d figures to show where it pays: ${figures}${connectStamp(m)}${one}`;
  const pays = `the first collective on this group pays the init (${formatMs(call)}) plus ${second} (${formatMs(first)}), ${formatMs(total)} in all, from the NCCL init beneath (experiment ${escapeMarkdown(m.experiment, 30)}; this run has no c10d figures)${connectStamp(m)}${one}`;
  const known = way === 'lazy';
  // init_process_group's own device_id (its headline note says when the code does not show it).
  if (api === 'init_process_group')
    return `without device_id the first collective pays the init (${formatMs(call)}) plus ${second} (${formatMs(first)}), ${formatMs(total)} in all, from the NCCL init beneath (experiment ${escapeMarkdown(m.experiment, 30)}; this run has no c10d figures)${connectStamp(m)}${one}`;
  if (FOLLOWS_DEFAULT_GROUP.has(api))
    return known ? `the default group was created without device_id, so ${pays}` : `if the default group is created without device_id (the code here does not show it), ${pays}`;
  return known ? `made lazily, ${pays}` : `if made lazily (the code here does not show it), ${pays}`;
}

/**
 * One sentence read off the figures, e.g. "82% of this init is paid in its first collective
 * (144 ms of 176 ms)": the share of the first collective in the total as measured,
 * whatever its size; "nearly all of this … is the call itself" only when the first collective is
 * ≈ 0 (below {@link FIRST_NEGLIGIBLE_SHARE}); a one-rank child says it has nothing to connect.
 * Undefined when the figures say nothing more than the numbers.
 * @param site the call site, when known: a call that passes device_id (or is made eagerly) is
 *   never read as one without it
 */
export function reading(a: Annotation, site?: Pick<CallSite, 'keywords' | 'eager'>): string | undefined {
  const m = a.measured;
  const r = figuresReading(a, site);
  if (!m || m.groupSize === undefined || (a.entry.role !== 'create' && a.entry.role !== 'firstCollective')) return r;
  const n = m.main.childRanks;
  if (m.groupSize === 1)
    return n === 1
      ? `${ONE_RANK_CODE} (the code makes one-rank groups)${r ? `; ${r}` : ''}`
      : `${ONE_RANK_CODE}: the code makes one-rank groups, and this run has no one-rank variant for this call, so these figures (of a ${n ?? 'larger'}-rank group) are not what this call pays`;
  if (n !== undefined && n !== m.groupSize)
    return `the code makes ${m.groupSize}-rank groups; these figures are of a ${n}-rank group${r ? `: ${r}` : ''}`;
  return r;
}

/** What a group the code makes of one rank reads (lens, hover, advice): never a connect to warm up. */
export const ONE_RANK_CODE = 'one rank: nothing to connect';

/**
 * The first collective's share of a creation, by docs/METHOD.md "Percentages": of call + first
 * (their medians, ms), written by the verdict's `pct` (through {@link percent}) and said with its
 * two parts ("of the call + first collective, 42.2 + 147 ms"), never with their sum as a second
 * total. Without a call figure, of the median total, said as such ("of 186 ms to first collective").
 */
function firstShare(call: number | undefined, first: number, total: number): { share: number; p: string; of: string } {
  if (call === undefined || !(call + first > 0)) return { share: first / total, p: percent(first, total), of: `of ${formatMs(total)} to first collective` };
  const [c, f] = sameUnit([call, first]);
  const unit = / (ms|s)$/.exec(f ?? '')?.[0] ?? '';
  const parts = unit && c?.endsWith(unit) ? `${c.slice(0, -unit.length)} + ${f}` : `${c} + ${f}`;
  return { share: first / (call + first), p: percent(first, call + first), of: `of the call + first collective, ${parts}` };
}

/** {@link reading} before the group size the code fixes is set against the figures'. */
function figuresReading(a: Annotation, site?: Pick<CallSite, 'keywords' | 'eager'>): string | undefined {
  const m = a.measured;
  if (!m) return undefined;
  const { call, first, total } = m.main;
  if (a.entry.role === 'create' && a.entry.answer.first && !first && call)
    // A creation whose first collective the run has no figure for (it failed, or the run stopped):
    // the headline is the call alone, never read as the whole cost.
  {
    const hung = timeoutOf(m.source.run, m.experiment, m.main.variant);
    const why = hung ? `: the hang guard stopped it (${escapeMarkdown(timeoutWords(hung), 200)})` : '';
    return `this run has no figure for its first collective (${escapeMarkdown(m.main.variant, 60)})${why}${why ? ';' : ':'} ${formatMs(call.stats.median)} is the call alone`;
  }
  if (a.entry.role === 'create' && first && total && total.stats.median > 0 && m.via && m.experiment === 'init' && call)
    return beneathInit(m, a.api, call.stats.median, first.stats.median, total.stats.median, beneathWay(site));
  if (a.entry.role === 'create' && first && total && total.stats.median > 0) {
    const what = noun(a, m);
    // The share is of call + first (their medians; docs/METHOD.md "Percentages"), as the verdict's,
    // said with its two parts; the total said elsewhere is the median total, which need not be their sum.
    const { share, p, of } = firstShare(call?.stats.median, first.stats.median, total.stats.median);
    // A variant the agent runs lazily (c10d `init/lazy`, `new_group/lazy-default`): its call only
    // registers the group, so its first collective also creates the communicator (the run's call
    // step says how little the call took).
    const lazy = /(^|\/)lazy\b/.test(m.main.variant);
    let sentence: string;
    if (m.main.childRanks === 1) {
      sentence =
        share < FIRST_NEGLIGIBLE_SHARE
          ? `one-rank communicator: nothing to connect; its first collective takes ${formatMs(first.stats.median)} (${p} ${of}), and this run has no communicator of more ranks for this call`
          : `one-rank communicator: no peer to connect to, yet its first collective takes ${formatMs(first.stats.median)} (${p} ${of})${lazy ? `: the group is made lazily, so its first collective creates the communicator${call ? ` (the call takes ${formatMs(call.stats.median)})` : ''}` : ''}; this run has no communicator of more ranks for this call`;
    } else if (share >= 0.5 && lazy) {
      sentence = `${p} of this ${what} is paid in its first collective (${of}): the group is made lazily, so its first collective creates the communicator and connects it${call ? ` (the call takes ${formatMs(call.stats.median)})` : ''}`;
    } else if (share >= 0.5) {
      // What the figures show is where the cost is paid; what NCCL does there is not measured.
      sentence = `${p} of this ${what} is paid in its first collective (${of})${connectStamp(m)}`;
    } else if (share < FIRST_NEGLIGIBLE_SHARE) {
      sentence = `nearly all of this ${what} is the call itself: the first collective adds ${formatMs(first.stats.median)} (${p} ${of})`;
    } else {
      sentence = `the first collective is ${p} of this ${what} (${of})`;
    }
    if (m.freshInit && m.freshInit.stats.median > 0) {
      // A one-rank child has no peer to connect to, a fresh init of several ranks has: like with
      // like, as the verdict's rebuild line ("not set against the 2-rank fresh init").
      const ranks = m.source.run.ranks;
      sentence +=
        m.main.childRanks === 1 && ranks > 1
          ? `; not set against this run's fresh init of ${ranks} ranks (${formatMs(m.freshInit.stats.median)} to first collective): a one-rank child has no peer to connect to`
          : `; a fresh init to first collective takes ${formatMs(m.freshInit.stats.median)} on this run (this is ${percent(total.stats.median, m.freshInit.stats.median)} of it)`;
    }
    // A splitShare=1 child shares its parent's resources: a headline of it stands for "this split"
    // only with that said, and with the splitShare=0 split missing from the run said too.
    if (/splitShare=1/.test(m.main.variant)) {
      const share0 = m.others.some((o) => /splitShare=0/.test(o.variant) && o.childRanks !== 1);
      sentence = `with splitShare=1 (the child shares its parent's resources): ${sentence}${share0 ? '' : '; this run has no splitShare=0 split of more than one rank'}`;
    }
    return sentence;
  }
  if (a.entry.role === 'register' && (m.main.childRanks === 1 || m.source.run.ranks === 1))
    return `1 rank: no peer to connect, so this does not show what registering (and the first collective on the registered buffer) costs a communicator of more ranks`;
  if (m.experiment === 'destroy' && total && total.stats.median > 0) {
    const destroy = [call, ...m.main.extra].find((f) => f?.step === 'destroy');
    if (destroy)
      return `${percent(destroy.stats.median, total.stats.median)} of finalize + destroy (${formatMs(total.stats.median)}) is ncclCommDestroy`;
  }
  if (m.experiment === 'abort' && call) {
    const reinit = m.main.extra.find((f) => f.step === 'total');
    if (reinit) {
      // A sum and its parts in one unit: "1.02 s: the abort (1.00 s) then a re-init … (0.0171 s)".
      const [sum, abort, again] = sameUnit([call.stats.median + reinit.stats.median, call.stats.median, reinit.stats.median]);
      return `recovering costs ${sum}: the abort (${abort}) then a re-init to first collective (${again})`;
    }
  }
  return undefined;
}

/**
 * Times (ms) written in one unit: each as {@link formatMs} when all are below 1 s, else each in
 * seconds with three significant digits ("1.02 s", "1.00 s", "0.0171 s"), so that a sum and its
 * parts never mix s and ms.
 */
function sameUnit(xs: readonly number[]): string[] {
  if (!xs.some((x) => Math.abs(x) >= 999.5)) return xs.map(formatMs);
  const inSeconds = (x: number): string => (Math.abs(x) >= 99.95 ? (x / 1000).toFixed(3) : String(Number((x / 1000).toPrecision(3))));
  return xs.map((x) => (Math.abs(x) >= 999.5 ? formatMs(x) : `${inSeconds(x)} s`));
}

/**
 * The condition a skipped experiment needs and the host lacks, from the run's skip reason as the
 * agent writes it ("needs 2 GPUs, host has 1", "needs NCCL ≥ 2.29.2, host has 2.28.9"): measuring
 * again on that host would skip it again; or, for an experiment the run did not ask for, the
 * Measure picker's gate for its host (figures.ts `missing.cannotRun`). Undefined when `a` has
 * figures or neither holds.
 */
export function skipGate(a: Annotation): string | undefined {
  if (a.measured) return undefined;
  if (a.missing?.cannotRun) return a.missing.cannotRun;
  const m = /^skipped on .+?: (.*\bneeds\b.*\bhost has\b.*)$/.exec(a.missing?.reason ?? '');
  return m?.[1];
}
