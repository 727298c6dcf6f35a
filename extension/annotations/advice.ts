/**
 * Diagnostics and quick fixes, derived from the figures of the run they cite (DESIGN.md,
 * "Advice follows measurement"): no figure, no advice. No `vscode` import: findings carry plain
 * ranges and text edits that diagnostics.ts / quickFixes.ts turn into VS Code objects.
 */
import { formatMs, plain, runLabel } from './annotationText';
import type { CallSite, FileFacts, Position, Range, ScanResult } from './callSites';
import type { Annotation, Figure } from './figures';
import type { ApiName } from './apiMap';

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

function creationInLoop(site: CallSite, a: Annotation): Finding | undefined {
  const m = a.measured;
  if (!site.repeated || site.role !== 'create' || !m) return undefined;
  const each = m.main.total ?? m.headline;
  return {
    code: 'commcost.creationInLoop',
    range: site.nameRange,
    message: `creating a group here costs ~${formatMs(each.stats.median)} each time on ${hostOf(a)}${m.main.childRanks === 1 ? ' (as a one-rank communicator: nothing to connect)' : ''} (${plain(site.repeated.detail, 120)}); build it once or prewarm a pool${simulatedNote(a)}`,
  };
}

/**
 * `init_process_group` without `device_id`, followed by collectives: with lazy init the NCCL
 * communicator is built inside the first collective (call + lazy connect = the run's total);
 * eager init moves the call out. Offered only when the run shows that the move is worth it: the
 * c10d experiment's eager variant has a cheaper first collective than its lazy one, or the init
 * experiment's call is at least a tenth of its total.
 */
function lazyInit(site: CallSite, a: Annotation, facts: FileFacts): Finding | undefined {
  const m = a.measured;
  if (site.api !== 'init_process_group' || site.keywords.includes('device_id') || !site.collectivesAfter || !m) return undefined;
  let shows: string | undefined;
  let moved: number | undefined;
  if (m.experiment === 'c10d') {
    const all = [m.main, ...m.others];
    const eager = all.find((v) => /eager/.test(v.variant))?.first;
    const lazy = all.find((v) => /lazy/.test(v.variant))?.first;
    if (eager && lazy && eager.stats.median < lazy.stats.median) {
      moved = lazy.stats.median - eager.stats.median;
      shows = `the first collective takes ${formatMs(lazy.stats.median)} after a lazy init and ${formatMs(eager.stats.median)} after an eager one`;
    }
  } else if (m.main.call && m.main.total && m.main.first) {
    const { call, first, total } = m.main;
    if (call.stats.median >= WORTH_MOVING_MS && call.stats.median >= WORTH_MOVING_SHARE * total.stats.median) {
      moved = call.stats.median;
      shows = `the communicator init (${formatMs(call.stats.median)}) moves out of the first collective; its lazy connect (${formatMs(first.stats.median)}) stays`;
    }
  }
  if (!shows || moved === undefined) return undefined;
  const torch = torchImport(facts);
  const arg = `device_id=${torch.name}.device("cuda", ${torch.name}.cuda.current_device())`;
  return {
    code: 'commcost.lazyInit',
    range: site.nameRange,
    message: `init_process_group without device_id builds the NCCL communicator lazily inside the first collective; the run ${runLabel(m.source, a.peers ?? []).replace(/^SIMULATED · /, '')} shows ${shows}${simulatedNote(a)}`,
    fix: {
      title: `Pass device_id for eager init (moves ~${formatMs(moved)} out of the first collective on ${hostOf(a)}; uses the current CUDA device)`,
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
  return lazy ? 'of lazy creation and connect' : 'of lazy connect';
}

/**
 * `g = new_group(...)` / `split_group(...)` not followed by a collective on `g`: the lazy connect
 * lands in the group's first collective, which the message names when the finder followed the
 * group to one (callSites.ts `firstCollective`, across the file's functions; never a return or
 * other mention), and leaves unnamed otherwise. Offered when the run's first collective is worth
 * moving.
 */
function coldGroup(site: CallSite, a: Annotation, facts: FileFacts, lines: readonly string[]): Finding | undefined {
  const m = a.measured;
  const w = site.warmUp;
  if (!w || w.warm || !m || !site.statement?.ownsLine) return undefined;
  const first: Figure | undefined = m.main.first;
  const total = m.main.total;
  if (!first || !total || first.stats.median < WORTH_MOVING_MS || first.stats.median < WORTH_MOVING_SHARE * total.stats.median)
    return undefined;
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
    message: `the first collective on ${plain(w.variable, 60)} pays ~${formatMs(first.stats.median)} ${firstPays(m.main)} on ${hostOf(a)}${firstAt}; warm it up right after creation${simulatedNote(a)}`,
    fix: {
      title: `Insert a warm-up collective after creation (moves ~${formatMs(first.stats.median)} here)`,
      edits: [{ range: { start: where.at, end: where.at }, newText: `${where.prefix}${indent}${call}\n` }, ...torch.edits],
    },
  };
}

/**
 * The findings of one scanned file.
 * @param annotate the annotation of an API on the active profile (cached by the caller)
 * @param text the text the scan was made from (for insertion points)
 */
export function findings(scan: ScanResult, annotate: (api: ApiName) => Annotation, text: string): Finding[] {
  const lines = text.split('\n');
  const out: Finding[] = [];
  for (const site of scan.sites) {
    const a = annotate(site.api);
    for (const f of [creationInLoop(site, a), lazyInit(site, a, scan.facts), coldGroup(site, a, scan.facts, lines)]) if (f) out.push(f);
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
