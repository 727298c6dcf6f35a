/**
 * The call sites the Python scan (pythonSites.ts) reports, built from the nodes it found: a
 * lifecycle call's site (range, enclosing function, repetition, keywords, assignment target,
 * statement) and a lazy group's first collective. No `vscode` import.
 */
import type { Node } from 'web-tree-sitter';
import { API_MAP, FIRST_COLLECTIVE, type ApiName } from './apiMap';
import type { CallSite, Range } from './callSiteTypes';
import type { DefaultCandidate } from './defaultGroup';
import { processStart } from './forkedLoops';
import { innermost, lineStartIndex, pos, rangeOf, repetition, statementInfo, type FunctionSpan, type Span } from './scanShared';

/** A call the scan found: its callee and argument list nodes, and the callee as written and its node type. */
export interface PyCall {
  fn: Node;
  args: Node;
  /** The callee's text and node type (read once: each read crosses into WebAssembly). */
  written: string;
  type: string;
}

/**
 * The site of lifecycle call `call` of API `api`: `loops` and `functions` (spans, indices into
 * `text`) give its repetition and enclosing function, `calledInLoop` the functions called in a
 * loop (name → line), `assigned` the assignment target of a call (keyed by the callee's start).
 */
export function pythonSite(
  call: PyCall,
  api: ApiName,
  written: string,
  text: string,
  loops: readonly (Span & { kind: string })[],
  functions: readonly FunctionSpan[],
  calledInLoop: ReadonlyMap<string, number>,
  assigned: ReadonlyMap<number, { start: number; text: string }>,
): CallSite {
  const { fn, args } = call;
  const start = fn.startIndex;
  const end = args.endIndex;
  const range: Range = { start: pos(calledNameStart(fn)), end: pos(args.endPosition) };
  // Keywords and the last argument: only where a fix may add a keyword (children cost a walk).
  const keywords: string[] = [];
  let lastArg: Node | null = null;
  if (api === 'init_process_group' && args.type === 'argument_list') {
    for (const a of args.namedChildren) {
      if (!a || a.type === 'comment') continue;
      lastArg = a;
      if (a.type === 'keyword_argument') {
        const k = a.childForFieldName('name')?.text;
        if (k) keywords.push(k);
      }
    }
  }
  const fnSpan = innermost(functions, start, end);
  const repeated = repetition(start, end, loops, fnSpan, calledInLoop, loops.length > 0 ? processStart(fn, text) : -1);
  const lhs = assigned.get(start);
  const assignedTo = lhs?.text;
  const stmtStart = lhs?.start ?? start;
  const stmtStartPos = indexToPosition(text, stmtStart, fn.startPosition, start);
  return {
    api,
    role: API_MAP[api].role,
    language: 'python',
    written,
    range,
    nameRange: rangeOf(fn),
    startIndex: start,
    endIndex: end,
    ...(repeated ? { repeated } : {}),
    ...(fnSpan ? { enclosingFunction: fnSpan.name } : {}),
    keywords,
    argumentInsert: lastArg ? pos(lastArg.endPosition) : { line: args.startPosition.row, character: args.startPosition.column + 1 },
    hasArguments: lastArg !== null,
    ...(assignedTo ? { assignedTo } : {}),
    statement: statementInfo(stmtStart, range.end, stmtStartPos, text),
    callsInto: API_MAP[api].callsInto,
  };
}

/** The site of a lazy group's first collective `c` (created by `creation`, held in `variable`). */
export function firstCollectiveSite(
  c: DefaultCandidate & { end: number },
  variable: string,
  creation: { line: number; api: ApiName; groupSize?: number },
  functions: readonly FunctionSpan[],
): CallSite {
  const nameRange: Range = rangeOf(c.fn);
  const range: Range = { start: nameRange.start, end: pos(c.args.endPosition) };
  const fnSpan = innermost(functions, c.start, c.end);
  // Never `repeated`: the group's init and connect are paid by its first call only, even when
  // the collective sits in a loop or a per-step function.
  return {
    api: FIRST_COLLECTIVE,
    role: API_MAP[FIRST_COLLECTIVE].role,
    language: 'python',
    written: c.written,
    range,
    nameRange,
    startIndex: c.start,
    endIndex: c.end,
    ...(fnSpan ? { enclosingFunction: fnSpan.name } : {}),
    keywords: [],
    argumentInsert: { line: c.args.startPosition.row, character: c.args.startPosition.column + 1 },
    hasArguments: c.args.namedChildCount > 0,
    callsInto: API_MAP[FIRST_COLLECTIVE].callsInto,
    firstCollectiveOf: { variable, line: creation.line, api: creation.api, collective: c.written.split('.').pop() ?? c.written },
    ...(creation.groupSize !== undefined ? { groupSize: creation.groupSize } : {}),
  };
}

/**
 * Where a call's site starts: the callee's start, or, for a method called on a receiver written
 * over several lines (`mesh[\n  "dp", "cp"\n]._flatten(...)`), the start of the method's name, so
 * the site sits on the line that names the call, not on the line where its receiver begins.
 */
function calledNameStart(fn: Node): { row: number; column: number } {
  if (fn.type !== 'attribute') return fn.startPosition;
  const name = fn.childForFieldName('attribute');
  const object = fn.childForFieldName('object');
  if (!name || !object || object.startPosition.row === object.endPosition.row) return fn.startPosition;
  return name.startPosition;
}

/** The position of `index`, given a known position `known` at index `knownIndex` ≥ `index` on a nearby line. */
function indexToPosition(
  text: string,
  index: number,
  known: { row: number; column: number },
  knownIndex: number,
): { line: number; character: number } {
  if (index === knownIndex) return pos(known);
  let line = known.row;
  for (let i = index; i < knownIndex; i++) if (text.charCodeAt(i) === 10) line--;
  return { line, character: index - lineStartIndex(text, index) };
}
