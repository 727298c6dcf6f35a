/**
 * Helpers shared by the Python and C/C++ scans (pythonSites.ts, cppSites.ts): spans of loops and
 * functions, positions, statements and why a call repeats. No `vscode` import.
 */
import type { Node } from 'web-tree-sitter';
import type { Position, Range, Repetition, StatementInfo } from './callSiteTypes';

export interface Span {
  start: number;
  end: number;
  line: number;
}
export interface FunctionSpan extends Span {
  name: string;
}

/** A C/C++ loop: its body's span, the statement's 0-based line, its kind ("for", "while", "do-while", …). */
export interface LoopSpan extends Span {
  kind: string;
}

/**
 * The loop one match of a C/C++ loop pattern captured (`@loop` the body, the other capture the
 * statement, named by its kind: `do` reads "do-while"); undefined when either capture is absent.
 */
export function loopOfMatch(captures: readonly { name: string; node: Node }[]): LoopSpan | undefined {
  const body = captures.find((x) => x.name === 'loop')?.node;
  const stmt = captures.find((x) => x.name !== 'loop');
  if (!body || !stmt) return undefined;
  return { start: body.startIndex, end: body.endIndex, line: stmt.node.startPosition.row, kind: stmt.name === 'do' ? 'do-while' : stmt.name };
}

/** Function names that run once per training or inference step. */
const PER_STEP_NAME = /(^|_)(step|train_step|training_step|forward|backward|iteration|microbatch|on_batch|per_batch)(_|$)/i;

export const pos = (p: { row: number; column: number }): Position => ({ line: p.row, character: p.column });
export const rangeOf = (n: Node): Range => ({ start: pos(n.startPosition), end: pos(n.endPosition) });

/** Innermost span containing [start, end). Spans are few per file; a linear pass is enough. */
export function innermost<T extends Span>(spans: readonly T[], start: number, end: number): T | undefined {
  let best: T | undefined;
  for (const s of spans) if (s.start <= start && end <= s.end && (!best || s.end - s.start < best.end - best.start)) best = s;
  return best;
}

export function lineStartIndex(text: string, index: number): number {
  return text.lastIndexOf('\n', index - 1) + 1;
}

/** The statement starting at `start` and ending at `end` (indices), from the text alone. */
export function statementInfo(start: number, end: Position, startPos: Position, text: string): StatementInfo {
  const ls = lineStartIndex(text, start);
  const before = text.slice(ls, start);
  const ownsLine = /^[ \t]*$/.test(before);
  return { range: { start: startPos, end }, indent: ownsLine ? before : (/^[ \t]*/.exec(before)?.[0] ?? ''), ownsLine };
}

/**
 * Why the call at [start, end) runs more than once: a loop around it, or a function that runs per
 * step. `from`: where the process running the call begins when the code forks or spawns it
 * (forkedLoops.ts `processStart`; -1 none): a loop beginning before it starts a process each round.
 */
export function repetition(
  start: number,
  end: number,
  loops: readonly (Span & { kind: string })[],
  fn: FunctionSpan | undefined,
  calledInLoop: ReadonlyMap<string, number>,
  from = -1,
): Repetition | undefined {
  const loop = innermost(from < 0 ? loops : loops.filter((l) => l.start >= from), start, end);
  // A loop counts when it is inside the call's function (or there is no function).
  if (loop && (!fn || (fn.start <= loop.start && loop.end <= fn.end))) {
    return { kind: 'loop', detail: `inside a ${loop.kind} loop (line ${loop.line + 1})` };
  }
  if (fn) {
    const simple = fn.name.split(/::|\./).pop() ?? fn.name;
    const line = calledInLoop.get(simple);
    if (line !== undefined) return { kind: 'perStep', detail: `in ${simple}, which is called in a loop at line ${line + 1}` };
    if (PER_STEP_NAME.test(simple)) return { kind: 'perStep', detail: `in ${simple}, which by its name runs per step` };
  }
  return undefined;
}

/** The last identifier of a callee as written (`dist.new_group` → `new_group`). */
export function lastSegment(callee: string): string {
  const m = /([A-Za-z_][A-Za-z0-9_]*)\s*$/.exec(callee);
  return m?.[1] ?? callee;
}

export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A global regex for occurrences of `names` not followed by an identifier character. */
export function namesRegExp(names: Iterable<string>): RegExp {
  const sorted = [...new Set(names)].sort((x, y) => y.length - x.length).map(escapeRegExp);
  return new RegExp(`(?:${sorted.join('|')})(?![A-Za-z0-9_])`, 'g');
}
