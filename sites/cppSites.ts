/**
 * The C/C++/CUDA scan: every call of an NCCL lifecycle function (apiMap.ts `NCCL_APIS`) — also
 * through a function pointer named after it (`real_ncclCommSplit(...)`, `pfn_ncclCommInitRank(...)`)
 * and inside macro invocations (`NCCLCHECK(...)`, `NCCLCHECKGOTO(..., res, fail)`) or code the
 * grammar could not parse (CUDA's `<<<…>>>`), where an identifier followed by `(` is taken for a
 * call — never in a comment, a string, a `#pragma` or a declaration. No `vscode` import.
 */
import type { Node, QueryMatch, Query as TsQuery, Tree } from 'web-tree-sitter';
import { API_MAP, NCCL_APIS, type ApiName } from './apiMap';
import type { CallSite, Range, ScanResult } from './callSiteTypes';
import { forEachMatch, mergeRanges, rangesOutside, wordRanges, type TextRange } from './rangedQuery';
import { processStart } from './forkedLoops';
import { groupSizeOf } from './groupSize';
import { innermost, lastSegment, loopOfMatch, pos, rangeOf, repetition, type FunctionSpan, type LoopSpan } from './scanShared';

export const CPP_QUERY = `
(call_expression function: [(identifier) (field_expression) (qualified_identifier)] @fn arguments: (argument_list) @args)
(for_statement body: (_) @loop) @for
(for_range_loop body: (_) @loop) @for
(while_statement body: (_) @loop) @while
(do_statement body: (_) @loop) @do
(function_definition declarator: (_) @fdecl body: (compound_statement) @fbody)
`;

const NCCL_SET: ReadonlySet<string> = new Set(NCCL_APIS);
const C_COLLECTIVES: ReadonlySet<string> = new Set([
  'ncclAllReduce',
  'ncclBroadcast',
  'ncclBcast',
  'ncclReduce',
  'ncclAllGather',
  'ncclReduceScatter',
  'ncclAlltoAll',
  'ncclSend',
  'ncclRecv',
]);

/** An NCCL lifecycle function's name, alone or after a pointer prefix ending in `_` (`real_`, `pfn_`). */
const CALLEE = new RegExp(`^(?:[A-Za-z0-9]*_)?(${[...NCCL_APIS].sort((a, b) => b.length - a.length).join('|')})$`);
/** The same names in the text, followed by `(`: candidates the query may have missed. */
const IN_TEXT = new RegExp(
  `(?<![A-Za-z0-9_])(?:[A-Za-z0-9]*_)?(?:${[...NCCL_APIS].sort((a, b) => b.length - a.length).join('|')})(?=\\s*\\()`,
  'g',
);

/** Every NCCL lifecycle name in the text, with or without a pointer prefix: where the query has to look. */
const NAMES_IN_TEXT = new RegExp(`(?:${[...NCCL_APIS].sort((a, b) => b.length - a.length).join('|')})`, 'g');

/** Around each name: the line it is on is enough for the call's node to intersect the range. */
function around(text: string, r: TextRange): TextRange {
  const start = text.lastIndexOf('\n', r.start - 1) + 1;
  const eol = text.indexOf('\n', r.end);
  return { start, end: eol < 0 ? text.length : eol };
}

/**
 * The query's matches that concern NCCL calls: first around the NCCL names in the text (the calls,
 * and as ancestors intersecting those ranges their loops and functions), then around the names of
 * the functions holding them (calls of those functions in a loop make their sites repeated). The
 * rest of the file is not walked (rangedQuery.ts). `scale` 0: the whole tree once. Each match once.
 */
function relevantMatches(query: TsQuery, tree: Tree, text: string, scale: number): QueryMatch[] {
  const out: QueryMatch[] = [];
  const seen = new Set<string>();
  const visit = (m: QueryMatch): void => {
    const first = m.captures[0]?.node;
    const key = `${m.patternIndex}:${first?.startIndex}:${first?.endIndex}`;
    if (seen.has(key)) return;
    seen.add(key);
    out.push(m);
  };
  const names = wordRanges(text, NAMES_IN_TEXT);
  if (names.length === 0) return out;
  if (scale === 0) {
    forEachMatch(query, tree, names, 0, visit);
    return out;
  }
  const first = mergeRanges(names.map((r) => around(text, r)));
  const covered = forEachMatch(query, tree, first, scale, visit);
  // The functions that hold an NCCL name: their callers, wherever they are, may call them in a loop.
  const holders = new Set<string>();
  for (const m of out) {
    if (m.patternIndex !== 5) continue;
    const decl = m.captures.find((x) => x.name === 'fdecl')?.node;
    const body = m.captures.find((x) => x.name === 'fbody')?.node;
    if (decl && body && names.some((r) => body.startIndex <= r.start && r.end <= body.endIndex)) {
      const simple = cppFunctionName(decl).split(/::|\./).pop();
      if (simple && /^[A-Za-z_]\w*$/.test(simple)) holders.add(simple);
    }
  }
  if (holders.size > 0 && covered.length === first.length) {
    const callers = wordRanges(text, new RegExp(`\\b(?:${[...holders].join('|')})\\b`, 'g')).map((r) => around(text, r));
    forEachMatch(query, tree, rangesOutside(mergeRanges(callers), covered), scale, visit);
  }
  return out;
}

/** The NCCL API a callee names, or undefined. */
function apiOf(callee: string): ApiName | undefined {
  const m = CALLEE.exec(lastSegment(callee));
  return m?.[1] && NCCL_SET.has(m[1]) ? (m[1] as ApiName) : undefined;
}

function cppFunctionName(decl: Node): string {
  let d: Node | null = decl;
  for (let i = 0; d && i < 8; i++) {
    if (d.type === 'function_declarator') return d.childForFieldName('declarator')?.text ?? d.text;
    d = d.childForFieldName('declarator');
  }
  return decl.text.split('(')[0]?.trim() ?? decl.text;
}

const NOT_CODE = new Set([
  'comment',
  'string_literal',
  'raw_string_literal',
  'char_literal',
  'string_content',
  'raw_string_content',
  'system_lib_string',
  'escape_sequence',
]);

/**
 * Is the identifier at [start, end) a call the query did not see (inside a macro's arguments, an
 * ERROR node, or a macro invocation the grammar read as a declaration)? Not when the text there is
 * a comment, a string or a preprocessor line, nor when it is the name a declaration or definition
 * declares.
 */
function unparsedCall(tree: Tree, text: string, start: number, end: number): boolean {
  const node = tree.rootNode.descendantForIndex(start, end);
  if (!node || NOT_CODE.has(node.type)) return false;
  // A preprocessor line's text is raw (`#define`, `#pragma`): what it expands to is counted where it is used.
  const lineStart = text.lastIndexOf('\n', start - 1) + 1;
  if (/^[ \t]*#/.test(text.slice(lineStart, start))) return false;
  let n: Node | null = node;
  let from: Node = node;
  for (let i = 0; n && i < 8; i++) {
    if (NOT_CODE.has(n.type) || n.type.startsWith('preproc_')) return false;
    // The name a declaration declares is no call; a name inside its parameters is a macro
    // invocation read as a declaration (`NCCLCHECK(ncclCommDestroy(c))` without its `;`).
    if (n.type === 'function_declarator') {
      const d = n.childForFieldName('declarator');
      if (!(d && d.startIndex === from.startIndex && d.endIndex === from.endIndex)) return true;
      // `MACRO(name(args))` read as the declaration `MACRO (name(args))`: a parenthesized declarator.
      return n.parent?.type === 'parenthesized_declarator';
    }
    if (n.type === 'call_expression' || n.type === 'ERROR' || n.type === 'argument_list' || n.type === 'compound_statement') return true;
    from = n;
    n = n.parent;
  }
  return true;
}

/**
 * Finds the NCCL lifecycle call sites of a parsed C/C++/CUDA file.
 * @param scale rangedQuery.ts `probeIndexScale` of this web-tree-sitter: the query then runs only
 *   around NCCL names ({@link relevantMatches}); 0 (default) queries the whole tree
 */
export function scanCpp(query: TsQuery, tree: Tree, text: string, scale = 0): ScanResult {
  const calls: { fn: Node; args: Node }[] = [];
  const loops: LoopSpan[] = [];
  const functions: FunctionSpan[] = [];
  for (const m of relevantMatches(query, tree, text, scale)) {
    const c = m.captures;
    if (m.patternIndex === 0) {
      const args = c.find((x) => x.name === 'args')?.node;
      const fn = c.find((x) => x.name === 'fn')?.node;
      if (args && fn) calls.push({ fn, args });
    } else if (m.patternIndex >= 1 && m.patternIndex <= 4) {
      const loop = loopOfMatch(c);
      if (loop) loops.push(loop);
    } else {
      const decl = c.find((x) => x.name === 'fdecl')?.node;
      const body = c.find((x) => x.name === 'fbody')?.node;
      if (decl && body)
        functions.push({ name: cppFunctionName(decl), start: body.startIndex, end: body.endIndex, line: decl.startPosition.row });
    }
  }
  const calledInLoop = new Map<string, number>();
  const named = calls.map((c) => ({ ...c, name: lastSegment(c.fn.text) }));
  if (loops.length > 0) {
    for (const { fn, args, name } of named) {
      if (calledInLoop.has(name) || apiOf(name) || C_COLLECTIVES.has(name) || !innermost(loops, fn.startIndex, args.endIndex)) continue;
      // A call in the child's branch of `if (fork() == 0)` runs once per process (forkedLoops.ts).
      const from = processStart(fn, text);
      if (innermost(from < 0 ? loops : loops.filter((l) => l.start >= from), fn.startIndex, args.endIndex))
        calledInLoop.set(name, fn.startPosition.row);
    }
  }
  const sites: CallSite[] = [];
  const at = new Set<number>();
  const add = (api: ApiName, written: string, start: number, end: number, range: Range, nameRange: Range, hasArguments: boolean): void => {
    if (at.has(start)) return;
    at.add(start);
    const fnSpan = innermost(functions, start, end);
    const node = loops.length > 0 ? tree.rootNode.descendantForIndex(start, start + 1) : null;
    const repeated = repetition(start, end, loops, fnSpan, calledInLoop, node ? processStart(node, text) : -1);
    const entry = API_MAP[api];
    sites.push({
      api,
      role: entry.role,
      language: 'cpp',
      written,
      range,
      nameRange,
      startIndex: start,
      endIndex: end,
      ...(repeated ? { repeated } : {}),
      ...(fnSpan ? { enclosingFunction: fnSpan.name } : {}),
      keywords: [],
      argumentInsert: { line: range.end.line, character: Math.max(0, range.end.character - 1) },
      hasArguments,
      callsInto: entry.callsInto,
      ...(entry.role === 'create' ? { eager: true } : {}),
    });
    const size = entry.role === 'create' ? groupSizeOf(api, written, text.slice(start + written.length, end)) : undefined;
    if (size !== undefined) sites[sites.length - 1]!.groupSize = size;
  };
  for (const { fn, args, name } of named) {
    const api = apiOf(name);
    if (!api) continue;
    add(
      api,
      fn.text,
      fn.startIndex,
      args.endIndex,
      { start: pos(fn.startPosition), end: pos(args.endPosition) },
      rangeOf(fn),
      args.namedChildCount > 0,
    );
  }
  // Calls the grammar did not parse as calls: inside macro arguments or ERROR nodes.
  IN_TEXT.lastIndex = 0;
  for (let m = IN_TEXT.exec(text); m; m = IN_TEXT.exec(text)) {
    const start = m.index;
    const end = start + m[0].length;
    if (at.has(start) || sites.some((x) => x.startIndex <= start && start < x.endIndex)) continue;
    const api = apiOf(m[0]);
    if (!api || !unparsedCall(tree, text, start, end)) continue;
    const close = closingParen(text, text.indexOf('(', end));
    const nameRange = { start: positionAt(text, start), end: positionAt(text, end) };
    add(
      api,
      m[0],
      start,
      close,
      { start: nameRange.start, end: positionAt(text, close) },
      nameRange,
      !/^\(\s*\)/.test(text.slice(text.indexOf('(', end))),
    );
  }
  sites.sort((x, y) => x.startIndex - y.startIndex);
  return { language: 'cpp', sites, facts: { importInsertLine: 0 } };
}

/** The index just after the `)` that closes the `(` at `open` (or the end of the line when unbalanced). */
function closingParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length && i < open + 4000; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i + 1;
  }
  const eol = text.indexOf('\n', open);
  return eol < 0 ? text.length : eol;
}

function positionAt(text: string, index: number): { line: number; character: number } {
  let line = 0;
  let last = -1;
  for (let i = text.indexOf('\n'); i >= 0 && i < index; i = text.indexOf('\n', i + 1)) {
    line++;
    last = i;
  }
  return { line, character: index - last - 1 };
}
