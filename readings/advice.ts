/**
 * Diagnostics and quick fixes, derived from the figures of the run they cite (DESIGN.md,
 * "Advice follows measurement"): no figure, no advice. No `vscode` import: findings carry plain
 * ranges and text edits that diagnostics.ts / quickFixes.ts turn into VS Code objects.
 */
import { formatMs, plain, runLabel } from './annotationText';
import { followsDefaultGroup } from './readingText';
import type { CallSite, FileFacts, Position, Range, ScanResult } from '../sites/callSites';
import type { Annotation, Figure, Measured, VariantFigures } from './figures';
import type { ApiName } from '../sites/apiMap';
import { hostGpusText } from '../protocol/runNameParts';
import { judgeDifference, type SpreadFigures } from '../protocol/compareRule';

export type FindingCode = 'commcost.creationInLoop' | 'commcost.lazyInit' | 'commcost.coldGroup';

export interface TextEdit {
  range: Range;
  newText: string;
}

export interface Fix {
  title: string;
  edits: TextEdit[];
}

export interface Finding {
  code: FindingCode;
  range: Range;
  message: string;
  fix?: Fix;
}

/** A first collective worth moving: at least 1 ms and a tenth of the creation's total. */
const WORTH_MOVING_MS = 1;
const WORTH_MOVING_SHARE = 0.1;

function simulatedNote(a: Annotation): string {
  return a.simulated ? ' (SIMULATED figures, not a measurement)' : '';
}

function hostOf(a: Annotation): string {
  return plain(a.measured?.source.run.host ?? '?', 60);
}

/** The host of the cited run with the GPUs and count its run is named by ("localhost (2× H200)"; protocol/runNameParts.ts hostGpusText), never the host alone where the run names its GPUs. */
function hostGpusOf(a: Annotation): string {
  const run = a.measured?.source.run;
  return run ? plain(hostGpusText(run), 80) : '?';
}

/** `import torch` after the file's imports, when the fix needs `torch` and the file has not bound it. */
function torchImport(facts: FileFacts): { name: string; edits: TextEdit[] } {
  if (facts.torchName) return { name: facts.torchName, edits: [] };
  const at: Position = { line: facts.importInsertLine, character: 0 };
  return { name: 'torch', edits: [{ range: { start: at, end: at }, newText: 'import torch\n' }] };
}

/** The line after the statement: an insertion point at column 0, or at the end of the last line when the text has no line after it. */
function afterStatement(site: CallSite, lines: readonly string[]): { at: Position; prefix: string } {
  const end = site.statement?.range.end ?? site.range.end;
  if (end.line + 1 < lines.length) return { at: { line: end.line + 1, character: 0 }, prefix: '' };
  const last = lines[end.line] ?? '';
  return { at: { line: end.line, character: last.length }, prefix: '\n' };
}

/**
 * Whether the code makes the communicator in the creation call itself, as the run's variants are
 * told apart (c10d's eager variant: device_id bound): `init_process_group` with `device_id`,
 * `new_group` / `destroy_process_group` in a file whose `init_process_group` passes it
 * (`fileBound`), any other creation as the finder says (`site.eager`: split_group, a direct NCCL
 * init…). A warm-up collective right after a lazy creation does not count: the group is still made
 * lazily, by that collective, and pays the lazy variant's call plus first collective.
 * @returns undefined when the code does not say (a `**kwargs` that may carry device_id, no `init_process_group` in the file)
 */
function madeByCall(site: CallSite, fileBound: boolean): boolean | undefined {
  // The finder leaves `eager` undefined where the code does not say (a `**kwargs`, no init in the file).
  if (site.api === 'init_process_group' || site.api === 'new_group' || site.api === 'destroy_process_group')
    return site.keywords.includes('device_id') || (site.api !== 'init_process_group' && fileBound) ? true : site.eager === undefined ? undefined : false;
  return site.eager;
}

/**
 * The figures of a creation in a loop for `site`: where the run has a c10d variant made each way
 * ({@link Measured} `assumes`), the one the code makes (`bound`: {@link madeByCall}); else the headline's.
 */
function loopVariant(m: Measured, bound: boolean | undefined): VariantFigures {
  if (!m.assumes || bound === undefined) return m.main;
  const way = bound ? /(^|\/)eager\b/ : /(^|\/)lazy\b/;
  return [m.main, ...m.others].find((v) => way.test(v.variant)) ?? m.main;
}

/**
 * Where a group made by `site` pays its communicator's creation, as the figures that answer it
 * say: `lazy` for a c10d variant made lazily (the agent's `…lazy…` names), or — from the NCCL
 * init beneath, no c10d figures — a creation the code leaves without device_id (`bound` false):
 * the figure from creation to first collective is paid where a collective first runs on the
 * group; `eager` for an eager c10d variant or, from the NCCL init beneath, a creation with
 * device_id: the call pays the init. Undefined when neither the variant nor the code says (the
 * figures are then given as the call's and the first collective's, without a claim).
 */
function createdAt(m: Measured, v: VariantFigures, bound: boolean | undefined): 'lazy' | 'eager' | undefined {
  if (m.experiment === 'c10d') return /(^|\/)lazy\b/.test(v.variant) ? 'lazy' : /(^|\/)eager\b/.test(v.variant) ? 'eager' : undefined;
  if (m.via && m.experiment === 'init') return bound === true ? 'eager' : bound === false ? 'lazy' : undefined;
  return undefined;
}

/**
 * A creation in a loop or per step. The message says where each new group pays what the run
 * measured: for a lazily made group (no device_id), the figure from creation to first collective
 * is paid where a collective first runs on each new group, the call itself taking little; for an
 * eager one the call pays the init. Figures from the variant that matches the code ({@link loopVariant}).
 */
function creationInLoop(site: CallSite, a: Annotation, fileBound: boolean): Finding | undefined {
  const m = a.measured;
  if (!site.repeated || site.role !== 'create' || !m) return undefined;
  const bound = madeByCall(site, fileBound);
  const v = loopVariant(m, bound);
  const host = hostOf(a);
  const one =
    site.groupSize === 1
      ? ` (one rank: nothing to connect${v.childRanks === 1 ? '' : `; figures of a ${v.childRanks ?? 'larger'}-rank group, this run has no one-rank variant`})`
      : v.childRanks === 1
        ? ' (as a one-rank communicator: nothing to connect)'
        : '';
  const where = `(${plain(site.repeated.detail, 120)})`;
  const tail = `; build it once or prewarm a pool${simulatedNote(a)}`;
  const { call, first } = v;
  const total = v.total ?? (v === m.main ? m.headline : undefined);
  if (!call || !first || !total)
    return finding(site, `creating a group here costs ~${formatMs((total ?? m.headline).stats.median)} each time on ${host}${one} ${where}${tail}`);
  const beneath = m.via !== undefined && m.experiment === 'init';
  const from = beneath ? ', from the NCCL init beneath (this run has no c10d figures)' : '';
  const parts = beneath
    ? `the NCCL init ${formatMs(call.stats.median)} plus its first collective ${formatMs(first.stats.median)}${from}`
    : `the call takes ${formatMs(call.stats.median)}, its first collective ${formatMs(first.stats.median)}`;
  const each = formatMs(total.stats.median);
  switch (createdAt(m, v, bound)) {
    case 'lazy': {
      // Whose device_id: init_process_group's own; for a group made where the default group's is
      // (new_group, DeviceMesh…), the default group's — never as if this call should pass it.
      const own = site.api === 'init_process_group' ? ' without device_id' : '';
      const because = own
        ? ''
        : followsDefaultGroup(site.api)
          ? bound === false
            ? ' (the default group was created without device_id)'
            : ' (figures of groups made on a default group created without device_id)'
          : '';
      return finding(site, `each new group made here ${where}${own} costs ~${each} from creation to first collective on ${host}${one}, paid only when a collective first runs on it${because}: ${parts}${tail}`);
    }
    case 'eager':
      return finding(
        site,
        `creating a group here ${where} takes ~${formatMs(call.stats.median)} each time on ${host}${one}: made eagerly, the call pays the ${beneath ? 'NCCL ' : ''}init; its first collective takes ${formatMs(first.stats.median)} more, ~${each} to first collective${from}${tail}`,
      );
    default:
      return finding(site, `creating a group here ${where} costs ~${each} to first collective each time on ${host}${one}: ${parts}${tail}`);
  }
}

function finding(site: CallSite, message: string): Finding {
  return { code: 'commcost.creationInLoop', range: site.nameRange, message };
}

/** At one rank: what a one-rank run cannot show about connecting (advice says it beside its figure). */
const ONE_RANK = '1 rank: no peer to connect, so this does not show what a group of more ranks pays';

/** Whether `a`'s figures are of a one-rank communicator (or a one-rank run). */
function isOneRank(a: Annotation): boolean {
  const m = a.measured;
  return m !== undefined && (m.main.childRanks === 1 || m.source.run.ranks === 1);
}

/** The spread of a variant's step as the run file holds it: its per-iteration samples (ms) where the file has them, and its summary's median, min, max and n. */
function spreadOf(m: Measured, v: VariantFigures, f: Figure): SpreadFigures {
  const step = m.source.run.experiments
    ?.find((e) => e.experiment === m.experiment)
    ?.variants.find((x) => x.variant === v.variant)
    ?.steps.find((x) => x.step === f.step);
  const samples = Array.isArray(step?.samples) ? step.samples.filter((x) => Number.isFinite(x)) : [];
  return { median: f.stats.median, samples, min: f.stats.min, max: f.stats.max, n: f.stats.n };
}

/**
 * What passing device_id changes to the first collective, from the two totals by the one rule of
 * a difference (protocol/compareRule.ts `judgeDifference`: beyond the spread of both samples and
 * the practical floor): a saving or a cost only where the totals show one, else that they are
 * within the run's noise and no saving is shown. `short` for the quick fix's title.
 */
function savingWords(m: Measured, lazy: VariantFigures, without: Figure, eager: VariantFigures, withIt: Figure, short = false): string {
  const d = judgeDifference(spreadOf(m, eager, withIt), spreadOf(m, lazy, without), withIt.stats.median / without.stats.median);
  const apart = formatMs(Math.abs(without.stats.median - withIt.stats.median));
  if (d.verdict === 'lower') return `${apart} less with it`;
  if (d.verdict === 'higher') return `${apart} more with it`;
  const why =
    d.verdict === 'too-few-samples' ? 'too few samples to tell them apart' : d.verdict === 'no-spread' ? 'the run has no spread to tell them apart by' : "within the run's noise";
  return short ? `${why}: no saving shown` : `${why}, so no saving is shown (with device_id the cost is paid in the init call instead of the first collective)`;
}

/**
 * `init_process_group` without `device_id`, followed by collectives. The message says what the
 * cited run shows and what it measured — never how c10d builds the group as a finding of a run
 * without c10d figures. Offered only when the run shows that the move is worth it: the c10d
 * experiment's eager variant has a cheaper first collective than its lazy one, or (from the NCCL
 * init beneath, no c10d figures) the init call is at least a tenth of its total. At one rank both
 * say the run has one rank and what that does not show.
 */
function lazyInit(site: CallSite, a: Annotation, facts: FileFacts): Finding | undefined {
  const m = a.measured;
  if (site.api !== 'init_process_group' || site.keywords.includes('device_id') || !site.collectivesAfter || !m) return undefined;
  const one = isOneRank(a);
  const label = runLabel(m.source, a.peers ?? []).replace(/^SIMULATED · /, '');
  let message: string | undefined;
  let title: string | undefined;
  if (m.experiment === 'c10d') {
    const all = [m.main, ...m.others];
    const eager = all.find((v) => /(^|\/)eager\b/.test(v.variant));
    const lazy = all.find((v) => /(^|\/)lazy\b/.test(v.variant));
    // What the user pays to the first collective: the total step, call + first per iteration.
    const withIt = eager?.total;
    const without = lazy?.total;
    // Offered where the eager variant's first collective is cheaper (the cost moves out of it); priced
    // by what the user pays to the first collective, call + first, with and without.
    if (eager?.first && lazy?.first && withIt && without && eager.first.stats.median < lazy.first.stats.median) {
      const parts = (v: VariantFigures, t: Figure): string =>
        `${formatMs(t.stats.median)} (the call ${formatMs(v.call?.stats.median ?? 0)}, the first collective ${formatMs(v.first?.stats.median ?? 0)})`;
      message = `the run ${label}${one ? ' (1 rank)' : ''} shows init_process_group to its first collective on the default group takes ${parts(lazy, without)} without device_id and ${parts(eager, withIt)} with it: ${savingWords(m, lazy, without, eager, withIt)}${one ? `; ${ONE_RANK}` : ''}`;
      title = `Pass device_id for eager init (to the first collective on ${hostGpusOf(a)}${one ? ', 1 rank' : ''}: ${formatMs(without.stats.median)} without, ${formatMs(withIt.stats.median)} with it, ${savingWords(m, lazy, without, eager, withIt, true)}${one ? '; no peer to connect, so not what more ranks pay' : ''}; uses the current CUDA device)`;
    }
  } else if (m.main.call && m.main.total && m.main.first) {
    const { call, first, total } = m.main;
    if (call.stats.median >= WORTH_MOVING_MS && call.stats.median >= WORTH_MOVING_SHARE * total.stats.median) {
      // The init experiment times the first collective, not a connect apart.
      const second = "the NCCL communicator's first collective";
      message = `the run ${label} has no c10d figures; from the NCCL init beneath (experiment ${plain(m.experiment, 30)}${one ? ', 1 rank' : ''}), without device_id the first collective pays the init (${formatMs(call.stats.median)}) plus ${second} (${formatMs(first.stats.median)}), ${formatMs(total.stats.median)} in all${one ? `; ${ONE_RANK}` : ''}`;
      title = `Pass device_id for eager init (the NCCL init beneath takes ${formatMs(call.stats.median)} of the ${formatMs(total.stats.median)} on ${hostOf(a)}${one ? ', 1 rank' : ''}; uses the current CUDA device)`;
    }
  }
  if (!message || !title) return undefined;
  const torch = torchImport(facts);
  const arg = `device_id=${torch.name}.device("cuda", ${torch.name}.cuda.current_device())`;
  return {
    code: 'commcost.lazyInit',
    range: site.nameRange,
    message: `${message}${simulatedNote(a)}`,
    fix: {
      title,
      edits: [
        ...torch.edits,
        { range: { start: site.argumentInsert, end: site.argumentInsert }, newText: site.hasArguments ? `, ${arg}` : arg },
      ],
    },
  };
}

/**
 * What a group's first collective pays, in the words its run's variant allows: a lazily made group
 * (the agent's `…lazy…` variants) is created there too, and a one-rank communicator has nothing
 * to connect; otherwise it is the lazy connect.
 */
function firstPays(v: { variant: string; childRanks?: number }): string {
  const lazy = /(^|\/)lazy\b/.test(v.variant);
  if (v.childRanks === 1) return lazy ? 'of lazy creation (a one-rank group: nothing to connect)' : '(a one-rank group: nothing to connect)';
  // A group made eagerly: the figure says where the cost is paid, not what NCCL does there.
  return lazy ? 'of lazy creation and connect' : 'in its first collective';
}

/**
 * A group answered by the NCCL init beneath (no c10d figures): what its first collective pays as
 * that init measured it — made lazily (no device_id in the file's init_process_group nor at the
 * call: `eager` false), the init plus the connect (the total), in words that name whose device_id
 * it is (the default group's for new_group, DeviceMesh…: {@link followsDefaultGroup}); made
 * eagerly, the init's first collective — and the words for it. Undefined for other figures.
 */
function beneathPays(m: Measured, eager: boolean, api: string): { pays: Figure; words: string } | undefined {
  const { call, first, total } = m.main;
  if (!m.via || m.experiment !== 'init' || !call || !first || !total) return undefined;
  const one = m.main.childRanks === 1 || m.source.run.ranks === 1;
  const second = "the NCCL communicator's first collective";
  const limit = one ? `; ${ONE_RANK}` : '';
  // Whose device_id: init_process_group's own; a group made where the default group's is
  // (new_group, DeviceMesh…) follows the file's init_process_group; any other is made lazily.
  const why =
    api === 'init_process_group' ? 'without device_id' : followsDefaultGroup(api) ? 'no init_process_group in this file passes device_id' : 'made lazily';
  return eager
    ? { pays: first, words: `(${second}, from the NCCL init beneath: this run has no c10d figures${limit})` }
    : {
        pays: total,
        words: `(${why}: the init ${formatMs(call.stats.median)} plus ${second} ${formatMs(first.stats.median)}, from the NCCL init beneath: this run has no c10d figures${limit})`,
      };
}

/**
 * Whether the group's first collective `fc` (the finder's line) is the next statement run after
 * the creation `site`: on the statement's own last line (`g = new_group(...); all_reduce(…)`) or
 * on the first line of code after it, in the same function (after an `if` block that made it).
 */
export function firstCollectiveFollows(site: CallSite, fc: { line: number; function?: string }, lines: readonly string[]): boolean {
  if ((fc.function ?? '') !== (site.enclosingFunction ?? '')) return false;
  const end = site.statement?.range.end.line ?? site.range.end.line;
  if (fc.line === end) return true;
  if (fc.line < end) return false;
  for (let l = end + 1; l < fc.line; l++) {
    const t = (lines[l] ?? '').trim();
    if (t !== '' && !t.startsWith('#')) return false;
  }
  return true;
}

/**
 * `g = new_group(...)` / `split_group(...)` not followed by a collective on `g`: the lazy connect
 * lands in the group's first collective, which the message names when the finder followed the
 * group to one (callSites.ts `firstCollective`, across the file's functions; never a return or
 * other mention), and leaves unnamed otherwise. Offered when the run's first collective is worth
 * moving.
 */
function coldGroup(site: CallSite, a: Annotation, facts: FileFacts, lines: readonly string[], fileEager: boolean): Finding | undefined {
  const m = a.measured;
  const w = site.warmUp;
  // A group the code makes of one rank has nothing to connect: nothing to warm up.
  if (!w || w.warm || !m || !site.statement?.ownsLine || site.groupSize === 1) return undefined;
  // The first collective already follows the creation: a warm-up there would move nothing.
  if (w.firstCollective && firstCollectiveFollows(site, w.firstCollective, lines)) return undefined;
  const total = m.main.total;
  const measuredFirst: Figure | undefined = m.main.first;
  if (!measuredFirst || !total || measuredFirst.stats.median < WORTH_MOVING_MS || measuredFirst.stats.median < WORTH_MOVING_SHARE * total.stats.median)
    return undefined;
  const beneath = beneathPays(m, fileEager || site.keywords.includes('device_id'), site.api);
  const first = beneath?.pays ?? measuredFirst;
  const pays = beneath?.words ?? firstPays(m.main);
  const torch = torchImport(facts);
  const dist = facts.distName ?? `${torch.name}.distributed`;
  const where = afterStatement(site, lines);
  const indent = site.statement.indent;
  const call = `${dist}.all_reduce(${torch.name}.ones(1, device="cuda"), group=${w.variable})  # commcost: warm-up, takes the lazy connect here`;
  const fc = w.firstCollective;
  const firstAt = fc ? ` (the first one in this file: ${plain(fc.call, 60)} at line ${fc.line + 1}${fc.function ? `, in ${plain(fc.function, 60)}` : ''})` : '';
  return {
    code: 'commcost.coldGroup',
    range: site.nameRange,
    message: `the first collective on ${plain(w.variable, 60)} pays ~${formatMs(first.stats.median)} ${pays} on ${hostOf(a)}${firstAt}; warm it up right after creation${simulatedNote(a)}`,
    fix: {
      title: `Insert a warm-up collective after creation (moves ~${formatMs(first.stats.median)} here${isOneRank(a) ? '; 1 rank: no peer to connect, so not what more ranks pay' : ''})`,
      edits: [{ range: { start: where.at, end: where.at }, newText: `${where.prefix}${indent}${call}\n` }, ...torch.edits],
    },
  };
}

/**
 * The findings of one scanned file.
 * @param annotate the annotation of an API on the active profile for a site (its group size picks the variant; cached by the caller)
 * @param text the text the scan was made from (for insertion points)
 */
export function findings(scan: ScanResult, annotate: (api: ApiName, site: CallSite) => Annotation, text: string): Finding[] {
  const lines = text.split('\n');
  const out: Finding[] = [];
  const fileEager = scan.sites.some((s) => s.api === 'init_process_group' && s.keywords.includes('device_id'));
  for (const site of scan.sites) {
    const a = annotate(site.api, site);
    for (const f of [creationInLoop(site, a, fileEager), lazyInit(site, a, scan.facts), coldGroup(site, a, scan.facts, lines, fileEager)]) if (f) out.push(f);
  }
  return out;
}

/** Applies non-overlapping `edits` to `text` (used by tests to check that a fix keeps the code valid). */
export function applyEdits(text: string, edits: readonly TextEdit[]): string {
  const lines = text.split('\n');
  const offset = (p: Position): number => {
    let o = 0;
    for (let i = 0; i < p.line && i < lines.length; i++) o += (lines[i]?.length ?? 0) + 1;
    return o + p.character;
  };
  const sorted = [...edits]
    .map((e) => ({ s: offset(e.range.start), e: offset(e.range.end), t: e.newText }))
    .sort((x, y) => y.s - x.s || y.e - x.e);
  let out = text;
  for (const e of sorted) out = out.slice(0, e.s) + e.t + out.slice(e.e);
  return out;
}
