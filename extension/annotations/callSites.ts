/**
 * The call-site finder: parses Python and C/C++ with tree-sitter (web-tree-sitter + the shipped
 * `.wasm` grammars) and finds the communicator calls of {@link API_MAP}, with ranges and what
 * the diagnostics need (inside a loop or a per-step function, keyword arguments, the variable a
 * group is assigned to, whether a warm-up collective follows). No `vscode` import.
 *
 * Offsets and columns are UTF-16 code units (what web-tree-sitter reports for a JavaScript
 * string, and what VS Code uses).
 */
import { join } from 'node:path';
import type { Language as TsLanguage, Node, Parser as TsParser, Query as TsQuery, QueryMatch, Tree } from 'web-tree-sitter';
import { API_MAP, NCCL_APIS, PYTHON_APIS, type ApiName, type ApiRole } from './apiMap';
import { GroupFlow, PY_FLOW_QUERY, type FirstCollective } from './groupFlow';
import { forEachMatch, mergeRanges, probeIndexScale, rangesOutside, wordRanges } from './rangedQuery';

/** VS Code language ids the finder reads; `c` uses the C++ grammar. */
export type SourceLanguage = 'python' | 'cpp' | 'c';

export function isSourceLanguage(id: string): id is SourceLanguage {
  return id === 'python' || id === 'cpp' || id === 'c';
}

export interface Position {
  line: number;
  character: number;
}
export interface Range {
  start: Position;
  end: Position;
}

/** Why a call runs more than once. */
export interface Repetition {
  kind: 'loop' | 'perStep';
  /** e.g. "inside a for loop (line 12)", "in train_step, called in a loop at line 40". */
  detail: string;
}

/** The statement a call sits in, for inserting code after it. */
export interface StatementInfo {
  range: Range;
  /** The statement's leading whitespace (its column's indentation). */
  indent: string;
  /** True when only whitespace precedes the statement on its first line. */
  ownsLine: boolean;
}

/** After a `g = new_group(...)`: does a collective on `g` come before its first other use? */
export interface WarmUpInfo {
  variable: string;
  warm: boolean;
  /**
   * Not warm: the first collective on the group, followed across the file's functions through
   * assignments, attributes and returns (groupFlow.ts); absent when it cannot be found. Never a
   * return or other mention of the group.
   */
  firstCollective?: FirstCollective;
}

export interface CallSite {
  api: ApiName;
  role: ApiRole;
  language: 'python' | 'cpp';
  /** The callee as written: `dist.new_group`, `ng`, `ncclCommSplit`. */
  written: string;
  /** The whole call expression. */
  range: Range;
  /** The callee. */
  nameRange: Range;
  startIndex: number;
  endIndex: number;
  repeated?: Repetition;
  /** Name of the innermost enclosing function, when inside one. */
  enclosingFunction?: string;
  /** Python keyword argument names. */
  keywords: string[];
  /** Where a keyword argument can be added: after the last argument, or after `(`. */
  argumentInsert: Position;
  hasArguments: boolean;
  /** Python: the assignment target, e.g. `g` or `self.tp_group`. */
  assignedTo?: string;
  statement?: StatementInfo;
  /** `init_process_group`: a collective call follows it in the file. */
  collectivesAfter?: boolean;
  /** `new_group` / `split_group` assigned to a variable. */
  warmUp?: WarmUpInfo;
}

/** File-level facts the quick fixes need to write valid code. */
export interface FileFacts {
  /** The name bound to the `torch` module (`torch`, or an alias), when bound. */
  torchName?: string;
  /** How to reach torch.distributed: `dist`, `torch.distributed`, … when bound. */
  distName?: string;
  /** The line after the last top-level import (0 when none). */
  importInsertLine: number;
}

export interface ScanResult {
  language: 'python' | 'cpp';
  sites: CallSite[];
  facts: FileFacts;
}

/** Paths of the three `.wasm` files (runtime + grammars). */
export interface GrammarFiles {
  runtime: string;
  python: string;
  cpp: string;
}

/** The `.wasm` files as shipped in `dist/grammars/` (see scripts/build.mjs). */
export function shippedGrammars(dir: string): GrammarFiles {
  return { runtime: join(dir, 'tree-sitter.wasm'), python: join(dir, 'tree-sitter-python.wasm'), cpp: join(dir, 'tree-sitter-cpp.wasm') };
}

/** The `.wasm` files inside node_modules (tests and benchmarks). */
export function nodeModulesGrammars(root: string): GrammarFiles {
  const nm = join(root, 'node_modules');
  return {
    runtime: join(nm, 'web-tree-sitter', 'tree-sitter.wasm'),
    python: join(nm, 'tree-sitter-python', 'tree-sitter-python.wasm'),
    cpp: join(nm, 'tree-sitter-cpp', 'tree-sitter-cpp.wasm'),
  };
}

// ---------------------------------------------------------------------------------------------
// Names

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

const DIST = 'torch.distributed';
/** Fully qualified Python callee → API. */
const PY_QUALIFIED = new Map<string, ApiName>();
// The module-level functions of torch.distributed (the mesh and method entries are mapped below).
const MESH_OR_METHOD: readonly string[] = ['ProcessGroup.abort', 'init_device_mesh', 'DeviceMesh'];
for (const name of PYTHON_APIS.filter((n) => !MESH_OR_METHOD.includes(n))) {
  PY_QUALIFIED.set(`${DIST}.${name}`, name);
  PY_QUALIFIED.set(`${DIST}.distributed_c10d.${name}`, name);
}
for (const prefix of [`${DIST}.device_mesh`, DIST]) {
  PY_QUALIFIED.set(`${prefix}.init_device_mesh`, 'init_device_mesh');
  PY_QUALIFIED.set(`${prefix}.DeviceMesh`, 'DeviceMesh');
}
PY_QUALIFIED.set(`${DIST}.ProcessGroup.abort`, 'ProcessGroup.abort');
PY_QUALIFIED.set(`${DIST}.distributed_c10d.ProcessGroup.abort`, 'ProcessGroup.abort');

const PY_COLLECTIVE_NAMES = [
  'all_reduce',
  'all_gather',
  'all_gather_into_tensor',
  'all_gather_object',
  'broadcast',
  'broadcast_object_list',
  'reduce',
  'reduce_scatter',
  'reduce_scatter_tensor',
  'all_to_all',
  'all_to_all_single',
  'barrier',
  'gather',
  'scatter',
  'send',
  'recv',
  'isend',
  'irecv',
  'batch_isend_irecv',
];
const PY_COLLECTIVES: ReadonlySet<string> = new Set(PY_COLLECTIVE_NAMES.flatMap((n) => [`${DIST}.${n}`, `${DIST}.distributed_c10d.${n}`]));

/** Receivers of `.abort()` taken for a process group (besides variables assigned from a group-creating call). */
const GROUP_RECEIVER = /(^|[._])(pg|process_group|[a-z]*group)$/i;
/** Function names that run once per training or inference step. */
const PER_STEP_NAME = /(^|_)(step|train_step|training_step|forward|backward|iteration|microbatch|on_batch|per_batch)(_|$)/i;

// ---------------------------------------------------------------------------------------------
// Queries

// Few captures per match: every captured node crosses from WebAssembly into a JavaScript
// object, and \`node.parent\` walks down from the root in tree-sitter ≥ 0.24, so the scan never
// climbs the tree: what it needs about a call's surroundings is captured here.
//
// Python is queried only around words found in the text (see rangedQuery.ts): imports around
// `import`, calls around the names a call of interest must end with. A ranged query reports
// every match whose root intersects a range, so the loops and functions around a call come with
// it. Pattern indices are used by scanPython.
const PY_IMPORT_QUERY = `
(import_statement) @import
(import_from_statement) @import
`;
/** Every import statement contains this keyword (a keyword token is never followed by an identifier character). */
const PY_IMPORT_WORD = /import(?![A-Za-z0-9_])/g;

const PY_CALL_QUERY = `
(call function: [(identifier) (attribute)] @fn arguments: (_) @args)
(assignment left: [(identifier) (attribute)] @lhs right: (call) @rhs)
(for_statement body: (block) @loop) @for
(while_statement body: (block) @loop) @while
(function_definition name: (identifier) @fname body: (block) @fbody)
`;

const CPP_QUERY = `
(call_expression function: [(identifier) (field_expression) (qualified_identifier)] @fn arguments: (argument_list) @args)
(for_statement body: (_) @loop) @for
(for_range_loop body: (_) @loop) @for
(while_statement body: (_) @loop) @while
(do_statement body: (_) @loop) @do
(function_definition declarator: (_) @fdecl body: (compound_statement) @fbody)
`;

/** The compiled Python queries, and how ranges are passed to them ({@link probeIndexScale}). */
interface PythonQueries {
  imports: TsQuery;
  calls: TsQuery;
  /** Returns, assignments, functions and classes: following a group (groupFlow.ts). */
  flow: TsQuery;
  scale: number;
}

/** web-tree-sitter's module, loaded on first use. */
type WebTreeSitter = typeof import('web-tree-sitter');

/**
 * Parses and scans documents. Create with {@link CallSiteFinder.load} (loads the runtime and
 * both grammars once; ~tens of ms); then {@link parse} and {@link scan} are synchronous.
 */
export class CallSiteFinder {
  private constructor(
    private readonly parsers: { python: TsParser; cpp: TsParser },
    private readonly queries: { python: PythonQueries; cpp: TsQuery },
  ) {}

  /**
   * Loads web-tree-sitter and the grammars from `files`.
   * @throws Error when a `.wasm` file is missing or not loadable
   */
  static async load(files: GrammarFiles): Promise<CallSiteFinder> {
    const ts: WebTreeSitter = await import('web-tree-sitter');
    await ts.Parser.init({ locateFile: () => files.runtime });
    const [py, cpp] = await Promise.all([ts.Language.load(files.python), ts.Language.load(files.cpp)]);
    const parser = (lang: TsLanguage): TsParser => {
      const p = new ts.Parser();
      p.setLanguage(lang);
      return p;
    };
    const pyParser = parser(py);
    const calls = new ts.Query(py, PY_CALL_QUERY);
    const python: PythonQueries = { imports: new ts.Query(py, PY_IMPORT_QUERY), calls, flow: new ts.Query(py, PY_FLOW_QUERY), scale: probeIndexScale(pyParser, calls) };
    return new CallSiteFinder({ python: pyParser, cpp: parser(cpp) }, { python, cpp: new ts.Query(cpp, CPP_QUERY) });
  }

  /**
   * Parses `text`; with `oldTree` (already `edit`ed to match), re-parses incrementally.
   * @throws Error when tree-sitter returns no tree (it does so only when cancelled)
   */
  parse(language: SourceLanguage, text: string, oldTree?: Tree): Tree {
    const tree = this.parsers[grammarOf(language)].parse(text, oldTree ?? null);
    if (!tree) throw new Error('tree-sitter returned no tree');
    return tree;
  }

  /** Finds the call sites of `tree` (parsed from `text` in `language`). */
  scan(language: SourceLanguage, tree: Tree, text: string): ScanResult {
    const grammar = grammarOf(language);
    return grammar === 'python' ? scanPython(this.queries.python, tree, text) : scanCpp(this.queries.cpp, tree);
  }

  dispose(): void {
    this.parsers.python.delete();
    this.parsers.cpp.delete();
    this.queries.python.imports.delete();
    this.queries.python.calls.delete();
    this.queries.python.flow.delete();
    this.queries.cpp.delete();
  }
}

function grammarOf(language: SourceLanguage): 'python' | 'cpp' {
  return language === 'python' ? 'python' : 'cpp';
}

// ---------------------------------------------------------------------------------------------
// Shared scanning helpers

interface Span {
  start: number;
  end: number;
  line: number;
}
interface FunctionSpan extends Span {
  name: string;
}

const pos = (p: { row: number; column: number }): Position => ({ line: p.row, character: p.column });
const rangeOf = (n: Node): Range => ({ start: pos(n.startPosition), end: pos(n.endPosition) });

/** Innermost span containing [start, end). Spans are few per file; a linear pass is enough. */
function innermost<T extends Span>(spans: readonly T[], start: number, end: number): T | undefined {
  let best: T | undefined;
  for (const s of spans) if (s.start <= start && end <= s.end && (!best || s.end - s.start < best.end - best.start)) best = s;
  return best;
}

function lineStartIndex(text: string, index: number): number {
  return text.lastIndexOf('\n', index - 1) + 1;
}

/** The statement starting at `start` and ending at `end` (indices), from the text alone. */
function statementInfo(start: number, end: Position, startPos: Position, text: string): StatementInfo {
  const ls = lineStartIndex(text, start);
  const before = text.slice(ls, start);
  const ownsLine = /^[ \t]*$/.test(before);
  return { range: { start: startPos, end }, indent: ownsLine ? before : (/^[ \t]*/.exec(before)?.[0] ?? ''), ownsLine };
}

function repetition(
  start: number,
  end: number,
  loops: readonly (Span & { kind: string })[],
  fn: FunctionSpan | undefined,
  calledInLoop: ReadonlyMap<string, number>,
): Repetition | undefined {
  const loop = innermost(loops, start, end);
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

function lastSegment(callee: string): string {
  const m = /([A-Za-z_][A-Za-z0-9_]*)\s*$/.exec(callee);
  return m?.[1] ?? callee;
}

// ---------------------------------------------------------------------------------------------
// Python

/** Local name → fully qualified name, from the file's imports. `*` marks `from torch.distributed import *`. */
function pythonBindings(imports: readonly Node[]): { bindings: Map<string, string>; star: boolean; lastTopLevelImportLine: number } {
  const bindings = new Map<string, string>();
  let star = false;
  let lastTopLevelImportLine = -1;
  for (const imp of imports) {
    if (imp.startPosition.column === 0) lastTopLevelImportLine = Math.max(lastTopLevelImportLine, imp.endPosition.row);
    if (imp.type === 'import_statement') {
      for (const n of imp.namedChildren) {
        if (!n) continue;
        if (n.type === 'dotted_name') {
          const first = n.text.split('.')[0] ?? n.text;
          bindings.set(first, first);
        } else if (n.type === 'aliased_import') {
          const name = n.childForFieldName('name')?.text;
          const alias = n.childForFieldName('alias')?.text;
          if (name && alias) bindings.set(alias, name.replace(/\s+/g, ''));
        }
      }
    } else {
      const moduleNode = imp.childForFieldName('module_name');
      const module = moduleNode?.text.replace(/\s+/g, '');
      if (!moduleNode || !module || module.startsWith('.')) continue;
      for (const n of imp.namedChildren) {
        if (!n || n.startIndex === moduleNode.startIndex) continue;
        if (n.type === 'wildcard_import') {
          if (module === DIST || module === `${DIST}.distributed_c10d` || module === `${DIST}.device_mesh`) star = true;
        } else if (n.type === 'dotted_name') {
          bindings.set(n.text, `${module}.${n.text}`);
        } else if (n.type === 'aliased_import') {
          const name = n.childForFieldName('name')?.text;
          const alias = n.childForFieldName('alias')?.text;
          if (name && alias) bindings.set(alias, `${module}.${name}`);
        }
      }
    }
  }
  return { bindings, star, lastTopLevelImportLine };
}

/** Resolves a dotted callee through the import bindings; undefined when it is not a dotted name. */
function qualify(callee: string, bindings: ReadonlyMap<string, string>, star: boolean): string | undefined {
  if (!/^[A-Za-z_][A-Za-z0-9_]*(\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)*$/.test(callee)) return undefined;
  const parts = callee.split('.').map((p) => p.trim());
  const head = parts[0] ?? '';
  const bound = bindings.get(head);
  if (bound) return [bound, ...parts.slice(1)].join('.');
  // Unbound: `dist` is taken for torch.distributed by convention; a bare name under a star import.
  if (head === 'dist') return [DIST, ...parts.slice(1)].join('.');
  if (star && parts.length === 1) return `${DIST}.${head}`;
  return undefined;
}

function pythonFacts(bindings: ReadonlyMap<string, string>, lastImportLine: number): FileFacts {
  let torchName: string | undefined;
  let distName: string | undefined;
  for (const [local, full] of bindings) {
    if (full === 'torch' && !torchName) torchName = local;
    if (full === DIST && !distName) distName = local;
  }
  if (!distName && torchName) distName = `${torchName}.distributed`;
  return { ...(torchName ? { torchName } : {}), ...(distName ? { distName } : {}), importInsertLine: lastImportLine + 1 };
}

interface PyCall {
  fn: Node;
  args: Node;
}

/**
 * The last name of every callee {@link qualify} can resolve to a call site or a collective (and
 * of `x.abort`): a dotted callee keeps its last part; a bare one is an import alias (added per
 * file) or, under a star import, the name itself.
 */
const PY_API_LAST_NAMES: readonly string[] = [
  ...new Set([...PY_QUALIFIED.keys(), ...PY_COLLECTIVES].map((q) => q.slice(q.lastIndexOf('.') + 1)).concat('abort')),
];

/** A global regex for occurrences of `names` not followed by an identifier character. */
function namesRegExp(names: Iterable<string>): RegExp {
  const sorted = [...new Set(names)].sort((x, y) => y.length - x.length).map(escapeRegExp);
  return new RegExp(`(?:${sorted.join('|')})(?![A-Za-z0-9_])`, 'g');
}

function scanPython(q: PythonQueries, tree: Tree, text: string): ScanResult {
  // 1. Imports, around the keyword they contain.
  const imports: Node[] = [];
  const seenImports = new Set<number>();
  forEachMatch(q.imports, tree, mergeRanges(wordRanges(text, PY_IMPORT_WORD)), q.scale, (m) => {
    const node = m.captures[0]?.node;
    if (node && !seenImports.has(node.startIndex)) {
      seenImports.add(node.startIndex);
      imports.push(node);
    }
  });
  imports.sort((x, y) => x.startIndex - y.startIndex);
  const { bindings, star, lastTopLevelImportLine } = pythonBindings(imports);

  // 2. Calls that can be a site or a collective (their callee ends with an API name or an alias),
  // with the loops and functions around them and the assignments they are the value of.
  const names = [...PY_API_LAST_NAMES];
  for (const [local, full] of bindings) if (PY_QUALIFIED.has(full) || PY_COLLECTIVES.has(full)) names.push(local);
  const calls: (PyCall & { key: number })[] = [];
  const loops: (Span & { kind: string })[] = [];
  const functions: FunctionSpan[] = [];
  const assigned = new Map<number, { start: number; text: string }>();
  const seenCalls = new Set<number>();
  const seenLoops = new Set<number>();
  const seenFunctions = new Set<number>();
  // A match can come from two ranges: each kind is keyed by the start of a node only it has.
  const collect = (m: QueryMatch): void => {
    const c = m.captures;
    switch (m.patternIndex) {
      case 0: {
        const fn = c.find((x) => x.name === 'fn')?.node;
        const args = c.find((x) => x.name === 'args')?.node;
        if (fn && args && !seenCalls.has(args.startIndex)) {
          seenCalls.add(args.startIndex);
          calls.push({ fn, args, key: args.startIndex });
        }
        break;
      }
      case 1: {
        const lhs = c.find((x) => x.name === 'lhs')?.node;
        const rhs = c.find((x) => x.name === 'rhs')?.node;
        if (lhs && rhs && !assigned.has(rhs.startIndex)) assigned.set(rhs.startIndex, { start: lhs.startIndex, text: lhs.text });
        break;
      }
      case 2:
      case 3: {
        const body = c.find((x) => x.name === 'loop')?.node;
        const stmt = c.find((x) => x.name !== 'loop')?.node;
        if (body && stmt && !seenLoops.has(body.startIndex)) {
          seenLoops.add(body.startIndex);
          loops.push({ start: body.startIndex, end: body.endIndex, line: stmt.startPosition.row, kind: m.patternIndex === 2 ? 'for' : 'while' });
        }
        break;
      }
      default: {
        const name = c.find((x) => x.name === 'fname')?.node;
        const body = c.find((x) => x.name === 'fbody')?.node;
        if (name && body && !seenFunctions.has(body.startIndex)) {
          seenFunctions.add(body.startIndex);
          functions.push({ name: name.text, start: body.startIndex, end: body.endIndex, line: name.startPosition.row });
        }
      }
    }
  };
  const covered = forEachMatch(q.calls, tree, mergeRanges(wordRanges(text, namesRegExp(names), { tokens: true })), q.scale, collect);
  // In the order a whole-tree query reports calls: when it reaches their arguments.
  calls.sort((x, y) => x.key - y.key);

  const collectives: { start: number; end: number; line: number; args: string; argsNode: Node; written: string }[] = [];
  const candidates: { call: PyCall; api: ApiName; written: string }[] = [];
  for (const call of calls) {
    const written = call.fn.text;
    const full = qualify(written, bindings, star);
    if (full) {
      if (PY_COLLECTIVES.has(full)) {
        collectives.push({ start: call.fn.startIndex, end: call.args.endIndex, line: call.fn.startPosition.row, args: call.args.text, argsNode: call.args, written });
        continue;
      }
      const api = PY_QUALIFIED.get(full);
      if (api) {
        candidates.push({ call, api, written });
        continue;
      }
    }
    if (/\.\s*abort$/.test(written)) candidates.push({ call, api: 'ProcessGroup.abort', written });
  }

  // 3. Per-step detection: for each function enclosing a candidate, the first call by its name
  // inside a loop (the loops around a call come with it).
  const calledInLoop = new Map<string, number>();
  const enclosing = new Set<string>();
  for (const { call } of candidates) {
    const f = innermost(functions, call.fn.startIndex, call.args.endIndex);
    if (f) enclosing.add(f.name.split(/::|\./).pop() ?? f.name);
  }
  if (enclosing.size > 0) {
    const before = calls.length;
    // Calls around a name inside a range already queried came with that query.
    forEachMatch(q.calls, tree, rangesOutside(mergeRanges(wordRanges(text, namesRegExp(enclosing), { tokens: true })), covered), q.scale, collect);
    if (calls.length > before) calls.sort((x, y) => x.key - y.key);
    if (loops.length > 0)
      for (const call of calls) {
        const name = lastSegment(call.fn.text);
        if (enclosing.has(name) && !calledInLoop.has(name) && innermost(loops, call.fn.startIndex, call.args.endIndex))
          calledInLoop.set(name, call.fn.startPosition.row);
      }
  }

  const groupVariables = new Set<string>();
  const sites: CallSite[] = [];
  for (const { call, api, written } of candidates) {
    const site = pythonSite(call, api, written, text, loops, functions, calledInLoop, assigned);
    if (site.assignedTo && API_MAP[api].role === 'create') groupVariables.add(site.assignedTo);
    sites.push(site);
  }
  // `x.abort()` counts only on a process group: a variable assigned from a group-creating call,
  // the ProcessGroup class itself, or a receiver named like a group.
  const kept = sites.filter((s) => {
    if (s.api !== 'ProcessGroup.abort' || qualify(s.written, bindings, star) === `${DIST}.ProcessGroup.abort`) return true;
    const receiver = s.written.replace(/\s*\.\s*abort$/, '');
    return groupVariables.has(receiver) || GROUP_RECEIVER.test(receiver);
  });
  let lines: string[] | undefined;
  let flow: GroupFlow | undefined;
  for (const s of kept) {
    if (s.api === 'init_process_group') s.collectivesAfter = collectives.some((c) => c.start >= s.endIndex);
    if ((s.api === 'new_group' || s.api === 'split_group') && s.assignedTo && s.statement?.ownsLine) {
      lines ??= text.split('\n');
      s.warmUp = warmUpAfter(s, s.assignedTo, lines, collectives);
      if (!s.warmUp.warm) {
        flow ??= new GroupFlow(q.flow, tree, text, q.scale, functions, collectives.map((c) => ({ start: c.start, line: c.line, written: c.written, args: c.argsNode, argsText: c.args })));
        const first = flow.firstCollective(s.assignedTo, s.startIndex, s.endIndex);
        if (first) s.warmUp.firstCollective = first;
      }
    }
  }
  return { language: 'python', sites: kept, facts: pythonFacts(bindings, lastTopLevelImportLine) };
}

function pythonSite(
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
  const range: Range = { start: pos(fn.startPosition), end: pos(args.endPosition) };
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
  const repeated = repetition(start, end, loops, fnSpan, calledInLoop);
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
  };
}

/** The position of `index`, given a known position `known` at index `knownIndex` ≥ `index` on a nearby line. */
function indexToPosition(text: string, index: number, known: { row: number; column: number }, knownIndex: number): Position {
  if (index === knownIndex) return pos(known);
  let line = known.row;
  for (let i = index; i < knownIndex; i++) if (text.charCodeAt(i) === 10) line--;
  return { line, character: index - lineStartIndex(text, index) };
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

const indentOf = (line: string): number => /^[ \t]*/.exec(line)?.[0].length ?? 0;

/**
 * After the statement that created `variable` (from the text: Python blocks are indentation):
 * warm when the next statement of the block is a collective naming the variable. Where a cold
 * group gets its first collective is found by groupFlow.ts.
 */
function warmUpAfter(
  site: CallSite,
  variable: string,
  lines: readonly string[],
  collectives: readonly { start: number; line: number; args: string }[],
): WarmUpInfo {
  const mention = new RegExp(`(^|[^A-Za-z0-9_.])${escapeRegExp(variable)}(?![A-Za-z0-9_])`);
  const indent = site.statement?.indent.length ?? 0;
  for (let l = (site.statement?.range.end.line ?? site.range.end.line) + 1; l < lines.length; l++) {
    const line = lines[l] ?? '';
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    if (indentOf(line) < indent) break;
    // The next statement of the block.
    if (indentOf(line) === indent) return { variable, warm: collectives.some((c) => c.line === l && mention.test(c.args)) };
  }
  return { variable, warm: false };
}

// ---------------------------------------------------------------------------------------------
// C / C++

function cppFunctionName(decl: Node): string {
  let d: Node | null = decl;
  for (let i = 0; d && i < 8; i++) {
    if (d.type === 'function_declarator') return d.childForFieldName('declarator')?.text ?? d.text;
    d = d.childForFieldName('declarator');
  }
  return decl.text.split('(')[0]?.trim() ?? decl.text;
}

function scanCpp(query: TsQuery, tree: Tree): ScanResult {
  const calls: { fn: Node; args: Node }[] = [];
  const loops: (Span & { kind: string })[] = [];
  const functions: FunctionSpan[] = [];
  for (const m of query.matches(tree.rootNode)) {
    const c = m.captures;
    if (m.patternIndex === 0) {
      const args = c.find((x) => x.name === 'args')?.node;
      const fn = c.find((x) => x.name === 'fn')?.node;
      if (args && fn) calls.push({ fn, args });
    } else if (m.patternIndex >= 1 && m.patternIndex <= 4) {
      const body = c.find((x) => x.name === 'loop')?.node;
      const stmt = c.find((x) => x.name !== 'loop');
      if (body && stmt)
        loops.push({
          start: body.startIndex,
          end: body.endIndex,
          line: stmt.node.startPosition.row,
          kind: stmt.name === 'do' ? 'do-while' : stmt.name,
        });
    } else {
      const decl = c.find((x) => x.name === 'fdecl')?.node;
      const body = c.find((x) => x.name === 'fbody')?.node;
      if (decl && body)
        functions.push({ name: cppFunctionName(decl), start: body.startIndex, end: body.endIndex, line: decl.startPosition.row });
    }
  }
  const calledInLoop = new Map<string, number>();
  const sites: CallSite[] = [];
  const named = calls.map((c) => ({ ...c, name: lastSegment(c.fn.text) }));
  if (loops.length > 0) {
    for (const { fn, args, name } of named) {
      if (!calledInLoop.has(name) && !NCCL_SET.has(name) && !C_COLLECTIVES.has(name) && innermost(loops, fn.startIndex, args.endIndex))
        calledInLoop.set(name, fn.startPosition.row);
    }
  }
  for (const { fn, args, name } of named) {
    if (!NCCL_SET.has(name)) continue;
    const api = name as ApiName;
    const start = fn.startIndex;
    const end = args.endIndex;
    const fnSpan = innermost(functions, start, end);
    const repeated = repetition(start, end, loops, fnSpan, calledInLoop);
    const range: Range = { start: pos(fn.startPosition), end: pos(args.endPosition) };
    sites.push({
      api,
      role: API_MAP[api].role,
      language: 'cpp',
      written: fn.text,
      range,
      nameRange: rangeOf(fn),
      startIndex: start,
      endIndex: end,
      ...(repeated ? { repeated } : {}),
      ...(fnSpan ? { enclosingFunction: fnSpan.name } : {}),
      keywords: [],
      argumentInsert: { line: range.end.line, character: Math.max(0, range.end.character - 1) },
      hasArguments: args.namedChildCount > 0,
    });
  }
  return { language: 'cpp', sites, facts: { importInsertLine: 0 } };
}

// ---------------------------------------------------------------------------------------------
// Incremental edits

/** One text change as VS Code reports it (relative to the text before the change). */
export interface TextChange {
  rangeOffset: number;
  rangeLength: number;
  range: Range;
  text: string;
}

/** The tree-sitter edit of `change` (UTF-16 offsets and columns, as web-tree-sitter uses). */
export function treeEditOf(change: TextChange): {
  startIndex: number;
  oldEndIndex: number;
  newEndIndex: number;
  startPosition: { row: number; column: number };
  oldEndPosition: { row: number; column: number };
  newEndPosition: { row: number; column: number };
} {
  const lines = change.text.split('\n');
  const lastLen = lines[lines.length - 1]?.length ?? 0;
  const start = change.range.start;
  const newEnd =
    lines.length === 1 ? { row: start.line, column: start.character + lastLen } : { row: start.line + lines.length - 1, column: lastLen };
  return {
    startIndex: change.rangeOffset,
    oldEndIndex: change.rangeOffset + change.rangeLength,
    newEndIndex: change.rangeOffset + change.text.length,
    startPosition: { row: start.line, column: start.character },
    oldEndPosition: { row: change.range.end.line, column: change.range.end.character },
    newEndPosition: newEnd,
  };
}

/**
 * One document's tree, kept for incremental re-parsing: {@link edit} applies changes to the old
 * tree at once (cheap); {@link reparse} re-parses against it.
 */
export class ParsedDocument {
  private tree: Tree | undefined;
  private edited = false;
  scan: ScanResult | undefined;

  constructor(
    private readonly finder: CallSiteFinder,
    readonly language: SourceLanguage,
  ) {}

  /** Records VS Code content changes (in event order) on the old tree. */
  edit(changes: readonly TextChange[]): void {
    if (!this.tree) return;
    for (const c of changes) this.tree.edit(treeEditOf(c));
    this.edited = true;
  }

  /** Parses `text` (incrementally when an edited tree is kept) and scans it. */
  reparse(text: string): ScanResult {
    const old = this.tree;
    const tree = this.finder.parse(this.language, text, this.edited ? old : undefined);
    old?.delete();
    this.tree = tree;
    this.edited = false;
    this.scan = this.finder.scan(this.language, tree, text);
    return this.scan;
  }

  dispose(): void {
    this.tree?.delete();
    this.tree = undefined;
  }
}
