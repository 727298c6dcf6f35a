/**
 * The Python scan: the NCCL lifecycle call sites of one parsed file, as real code writes them —
 * c10d (`dist.new_group`, aliases, DeepSpeed's `deepspeed.comm`), backends built directly
 * (`ProcessGroupNCCL(...)`, `eager_connect_single_device`), framework constructors
 * (`PyNcclCommunicator`, Ray collective groups, torchcomms, torchft's `configure`), nccl4py, and
 * NCCL through ctypes (`lib.ncclCommInitRank(...)`, `self._funcs["ncclCommInitRank"](...)`);
 * which names count is pythonNames.ts. Groups of another backend (gloo, mpi, xccl, …), stores,
 * strings, comments and ctypes prototypes are not call sites. Each creation says whether the
 * code makes it eager; a lazy group's first collective is a site of its own.
 *
 * Queried only around the words that matter (rangedQuery.ts). No `vscode` import.
 */
import type { Node, Query as TsQuery, QueryMatch, Tree } from 'web-tree-sitter';
import { API_MAP, FIRST_COLLECTIVE, type ApiName } from './apiMap';
import type { CallSite, FileFacts, Range, ScanResult, WarmUpInfo } from './callSiteTypes';
import { firstDefaultCollective, onDefaultGroup, type DefaultCandidate } from './defaultGroup';
import { GroupFlow } from './groupFlow';
import {
  COMM_RECEIVER,
  DIST,
  GROUP_RECEIVER,
  NCCL4PY_METHODS,
  NCCL_NAMES,
  OTHER_BACKEND,
  PY_COLLECTIVES,
  QUALIFIED_LAST_NAMES,
  TORCHCOMMS_METHODS,
  isTorchftNccl,
  librariesOf,
  makesNccl,
  qualifiedApi,
  qualifyAll,
  type ArgumentText,
} from './pythonNames';
import { forEachMatch, mergeRanges, rangesOutside, wordRanges } from './rangedQuery';
import { escapeRegExp, innermost, lastSegment, namesRegExp, pos, rangeOf, repetition, statementInfo, lineStartIndex, type FunctionSpan, type Span } from './scanShared';

export const PY_IMPORT_QUERY = `
(import_statement) @import
(import_from_statement) @import
`;
/** Every import statement contains this keyword (a keyword token is never followed by an identifier character). */
const PY_IMPORT_WORD = /import(?![A-Za-z0-9_])/g;

// Pattern indices are used below and by defaultGroup.ts (0 = call, 4 = function); 5 is a call
// through a subscript (`self._funcs["ncclCommInitRank"](...)`).
export const PY_CALL_QUERY = `
(call function: [(identifier) (attribute)] @fn arguments: (_) @args)
(assignment left: [(identifier) (attribute)] @lhs right: (call) @rhs)
(for_statement body: (block) @loop) @for
(while_statement body: (block) @loop) @while
(function_definition name: (identifier) @fname body: (block) @fbody)
(call function: (subscript) @fn arguments: (_) @args)
`;

/** The compiled Python queries, and how ranges are passed to them (rangedQuery.ts `probeIndexScale`). */
export interface PythonQueries {
  imports: TsQuery;
  calls: TsQuery;
  /** Returns, assignments, functions and classes: following a group (groupFlow.ts). */
  flow: TsQuery;
  scale: number;
}

interface PyCall {
  fn: Node;
  args: Node;
}

/** Local name → every fully qualified name it is imported as (in order); the last one also in `last`. */
interface Bindings {
  all: Map<string, string[]>;
  last: Map<string, string>;
  star: boolean;
  lastTopLevelImportLine: number;
}

function pythonBindings(imports: readonly Node[]): Bindings {
  const all = new Map<string, string[]>();
  const last = new Map<string, string>();
  const bind = (local: string, full: string): void => {
    const list = all.get(local) ?? [];
    if (!list.includes(full)) list.push(full);
    all.set(local, list);
    last.set(local, full);
  };
  let star = false;
  let lastTopLevelImportLine = -1;
  for (const imp of imports) {
    if (imp.startPosition.column === 0) lastTopLevelImportLine = Math.max(lastTopLevelImportLine, imp.endPosition.row);
    if (imp.type === 'import_statement') {
      for (const n of imp.namedChildren) {
        if (!n) continue;
        if (n.type === 'dotted_name') {
          const first = n.text.split('.')[0] ?? n.text;
          bind(first, first);
        } else if (n.type === 'aliased_import') {
          const name = n.childForFieldName('name')?.text;
          const alias = n.childForFieldName('alias')?.text;
          if (name && alias) bind(alias, name.replace(/\s+/g, ''));
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
          bind(n.text, `${module}.${n.text}`);
        } else if (n.type === 'aliased_import') {
          const name = n.childForFieldName('name')?.text;
          const alias = n.childForFieldName('alias')?.text;
          if (name && alias) bind(alias, `${module}.${name}`);
        }
      }
    }
  }
  return { all, last, star, lastTopLevelImportLine };
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

/** The arguments of a call as the backend rule and the eager facts read them. */
function argumentsOf(args: Node): ArgumentText[] {
  const out: ArgumentText[] = [];
  if (args.type !== 'argument_list') return out;
  for (const a of args.namedChildren) {
    if (!a || a.type === 'comment') continue;
    if (a.type === 'keyword_argument') {
      const v = a.childForFieldName('value');
      out.push({ keyword: a.childForFieldName('name')?.text ?? '', type: v?.type ?? '', text: v?.text ?? '' });
    } else out.push({ type: a.type, text: a.type === 'dictionary_splat' || a.type === 'list_splat' ? `*${a.text}` : a.text });
  }
  return out;
}

const squash = (s: string): string => s.replace(/\s+/g, '');
const receiverOf = (written: string): string => squash(written).replace(/\.[A-Za-z_][A-Za-z0-9_]*$/, '');
const SUBSCRIPT_NCCL = /\[\s*(?:"|')(ncclComm[A-Za-z]+)(?:"|')\s*\]$/;

/** What a creating call makes, for the methods called on what it is assigned to. */
type Maker = 'nccl4py' | 'torchcomms' | 'torchft' | 'ncclBackend' | 'otherBackend';

/** Finds the call sites of a parsed Python file (`text` is what `tree` was parsed from). */
export function scanPython(q: PythonQueries, tree: Tree, text: string): ScanResult {
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
  const b = pythonBindings(imports);
  const libs = librariesOf(b.all);
  const fulls = (written: string): string[] => qualifyAll(written, b.all, b.star);

  // 2. Calls that can be a site or a collective (their callee ends with a name of interest or an
  // alias), with the loops and functions around them and the assignments they are the value of.
  const names = [...QUALIFIED_LAST_NAMES, ...NCCL_NAMES, 'abort', 'eager_connect_single_device'];
  if (libs.nccl4py) names.push(...Object.keys(NCCL4PY_METHODS));
  if (libs.torchcomms) names.push(...Object.keys(TORCHCOMMS_METHODS));
  if (libs.torchft) names.push('configure');
  for (const [local, all] of b.all)
    if (all.some((f) => qualifiedApi(f) || PY_COLLECTIVES.has(f) || isTorchftNccl(f) || OTHER_BACKEND.test(f.slice(f.lastIndexOf('.') + 1)))) names.push(local);
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
      case 0:
      case 5: {
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

  // 3. What each call is. First the calls that make something whose methods count.
  // Keyed by the function the variable is assigned in (`backend_class` of one method is not another's).
  const makers = new Map<string, Maker>();
  const scoped = (name: string, at: number): string => `${innermost(functions, at, at)?.start ?? -1}:${name}`;
  const assignedName = (call: PyCall): string | undefined => {
    const lhs = assigned.get(call.fn.startIndex);
    return lhs ? scoped(squash(lhs.text), call.fn.startIndex) : undefined;
  };
  const makerOf = (receiver: string, at: number): Maker | undefined => makers.get(scoped(receiver, at)) ?? makers.get(`-1:${receiver}`);
  const isComm = (receiver: string, at: number, lib: 'nccl4py' | 'torchcomms'): boolean => {
    const maker = makerOf(receiver, at);
    return maker === lib || (libs[lib] && maker === undefined && COMM_RECEIVER.test(receiver));
  };
  // In text order: a child (`half = comm.split(...)`) is a communicator of its parent's library.
  for (const call of calls) {
    if (call.fn.type !== 'attribute' && call.fn.type !== 'identifier') continue;
    const written = squash(call.fn.text);
    const target = assignedName(call);
    if (!target) continue;
    const fs = fulls(written);
    const method = lastSegment(written);
    const receiver = receiverOf(written);
    let maker: Maker | undefined;
    if (call.fn.type === 'attribute' && ['split', 'shrink', 'grow'].includes(method) && isComm(receiver, call.fn.startIndex, 'nccl4py')) maker = 'nccl4py';
    else if (call.fn.type === 'attribute' && method === 'split' && isComm(receiver, call.fn.startIndex, 'torchcomms')) maker = 'torchcomms';
    else if (fs.some((f) => /^nccl\./.test(f) && /\.(init|init_all)$/.test(f))) maker = 'nccl4py';
    else if (fs.some((f) => qualifiedApi(f) === 'new_comm')) maker = 'torchcomms';
    else if (fs.some(isTorchftNccl)) maker = 'torchft';
    else if (fs.some((f) => qualifiedApi(f) === 'ProcessGroupNCCL')) maker = 'ncclBackend';
    else if (fs.some((f) => OTHER_BACKEND.test(f.slice(f.lastIndexOf('.') + 1)))) maker = 'otherBackend';
    if (maker) makers.set(target, maker);
  }

  const collectives: (DefaultCandidate & { end: number; argsText: string })[] = [];
  const collectiveStarts = new Set<number>();
  const candidates: { call: PyCall; api: ApiName; written: string }[] = [];
  for (const call of calls) {
    const written = call.fn.text;
    if (call.fn.type === 'subscript') {
      const name = SUBSCRIPT_NCCL.exec(squash(written))?.[1];
      if (name && NCCL_NAMES.has(name)) candidates.push({ call, api: name as ApiName, written });
      continue;
    }
    const fs = fulls(written);
    if (fs.some((f) => PY_COLLECTIVES.has(f))) {
      collectives.push({ start: call.fn.startIndex, end: call.args.endIndex, line: call.fn.startPosition.row, written, fn: call.fn, args: call.args, argsText: call.args.text });
      collectiveStarts.add(call.fn.startIndex);
      continue;
    }
    const api = fs.map(qualifiedApi).find((a) => a !== undefined);
    if (api) {
      candidates.push({ call, api, written });
      continue;
    }
    const method = lastSegment(written);
    const isMethod = call.fn.type === 'attribute';
    const receiver = isMethod ? receiverOf(written) : '';
    const at = call.fn.startIndex;
    if (NCCL_NAMES.has(method)) {
      // NCCL through ctypes (or any wrapper named after the function it calls).
      candidates.push({ call, api: method as ApiName, written });
    } else if (isMethod && method in NCCL4PY_METHODS && isComm(receiver, at, 'nccl4py')) {
      candidates.push({ call, api: NCCL4PY_METHODS[method]!, written });
    } else if (isMethod && method in TORCHCOMMS_METHODS && isComm(receiver, at, 'torchcomms')) {
      candidates.push({ call, api: TORCHCOMMS_METHODS[method]!, written });
    } else if (isMethod && method === 'configure' && torchftReceiver(receiver, makerOf(receiver, at), fulls)) {
      candidates.push({ call, api: 'ProcessGroupNCCL.configure', written });
    } else if (isMethod && method === 'eager_connect_single_device' && makerOf(receiver, at) !== 'otherBackend') {
      candidates.push({ call, api: 'eager_connect_single_device', written });
    } else if (isMethod && method === 'abort') {
      candidates.push({ call, api: 'ProcessGroup.abort', written });
    }
  }

  // 4. Per-step detection: for each function enclosing a candidate, the first call by its name
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

  // 5. Sites: NCCL groups only; `x.abort()` only on a process group.
  const groupVariables = new Set<string>();
  const sites: (CallSite & { args: ArgumentText[] })[] = [];
  for (const { call, api, written } of candidates) {
    const args = argumentsOf(call.args);
    if (!makesNccl(api, args) || registeredBackend(api, args, text)) continue;
    if ((api === 'destroy_process_group' || api === 'ProcessGroup.abort') && /gloo/i.test(api === 'ProcessGroup.abort' ? written : (args[0]?.text ?? ''))) continue;
    const site = pythonSite(call, api, written, text, loops, functions, calledInLoop, assigned);
    if (site.assignedTo && API_MAP[api].role === 'create') groupVariables.add(site.assignedTo);
    sites.push({ ...site, args });
  }
  const kept = sites.filter((s) => {
    if (s.api !== 'ProcessGroup.abort' || fulls(s.written).includes(`${DIST}.ProcessGroup.abort`)) return true;
    const receiver = s.written.replace(/\s*\.\s*abort$/, '');
    return groupVariables.has(receiver) || GROUP_RECEIVER.test(receiver);
  });

  // 6. Eager or lazy, warm-ups, and the first collectives of lazy groups.
  let lines: string[] | undefined;
  let flow: GroupFlow | undefined;
  const inits = kept.filter((s) => s.api === 'init_process_group');
  for (const s of inits) {
    s.collectivesAfter = collectives.some((c) => c.start >= s.endIndex);
    lines ??= text.split('\n');
    const warm = nextStatementIsCollective(s, lines, collectives, (c) => onDefaultGroup(c));
    s.eager = s.keywords.includes('device_id') || warm ? true : s.args.some((a) => a.text.startsWith('**')) ? undefined : false;
  }
  const fileEager = inits.some((s) => s.eager === true) ? true : inits.some((s) => s.eager === false) ? false : undefined;
  const firsts: CallSite[] = [];
  const firstAt = new Set<number>();
  const addFirst = (c: DefaultCandidate & { end: number }, variable: string, creation: CallSite): void => {
    if (firstAt.has(c.start)) return;
    firstAt.add(c.start);
    firsts.push(firstCollectiveSite(c, variable, creation, loops, functions, calledInLoop));
  };
  for (const s of kept) {
    if ((s.api === 'new_group' || s.api === 'split_group') && s.assignedTo && s.statement?.ownsLine) {
      lines ??= text.split('\n');
      s.warmUp = warmUpAfter(s, s.assignedTo, lines, collectives);
    }
    if (s.eager === undefined) s.eager = eagerOf(s, fileEager, kept, text);
    if (s.warmUp && !s.warmUp.warm) {
      flow ??= new GroupFlow(q.flow, tree, text, q.scale, functions, collectives.map((c) => ({ start: c.start, line: c.line, written: c.written, args: c.args, argsText: c.argsText })));
      const first = flow.firstCollective(s.warmUp.variable, s.startIndex, s.endIndex);
      if (first) {
        s.warmUp.firstCollective = first;
        const c = s.eager === false ? collectives.find((x) => x.line === first.line && x.written === first.call) : undefined;
        if (c) addFirst(c, s.warmUp.variable, s);
      }
    }
  }
  for (const s of inits) {
    if (s.eager !== false) continue;
    const home = innermost(functions, s.startIndex, s.endIndex);
    const c = firstDefaultCollective(
      {
        query: q.calls,
        tree,
        text,
        scale: q.scale,
        collectiveAt: (fn, args) => (fulls(fn.text).some((f) => PY_COLLECTIVES.has(f)) ? { start: fn.startIndex, line: fn.startPosition.row, written: fn.text, fn, args } : undefined),
      },
      s.endIndex,
      home,
    );
    if (c) addFirst({ ...c, end: c.args.endIndex }, 'the default group', s);
  }
  const out: CallSite[] = [...kept.map(({ args: _args, ...site }) => site), ...firsts].sort((x, y) => x.startIndex - y.startIndex);
  return { language: 'python', sites: out, facts: pythonFacts(b.last, b.lastTopLevelImportLine) };
}

/** `x.configure(...)` on torchft's NCCL group: `x` made by its constructor, or the constructor call itself. */
function torchftReceiver(receiver: string, maker: Maker | undefined, fulls: (w: string) => string[]): boolean {
  if (maker === 'torchft') return true;
  const ctor = /^([A-Za-z_][\w.]*)\(.*\)$/s.exec(receiver)?.[1];
  return ctor !== undefined && fulls(ctor).some(isTorchftNccl);
}

/**
 * A group whose backend is one the file registers itself (`Backend.register_backend(name, creator)`
 * with the same variable): the file's own backend, not NCCL.
 */
function registeredBackend(api: ApiName, args: readonly ArgumentText[], text: string): boolean {
  if (api !== 'new_group' && api !== 'init_process_group') return false;
  const backend = args.find((a) => a.keyword === 'backend');
  if (!backend || backend.type !== 'identifier' || !text.includes('register_backend')) return false;
  return new RegExp(`register_backend\\s*\\(\\s*${escapeRegExp(backend.text)}\\s*,`).test(text);
}

/** Whether a creation is eager by the code (see CallSite `eager`); undefined when the code does not say. */
function eagerOf(s: CallSite & { args: ArgumentText[] }, fileEager: boolean | undefined, sites: readonly CallSite[], text: string): boolean | undefined {
  const role = API_MAP[s.api].role;
  if (role !== 'create') return undefined;
  const kw = (k: string): boolean => s.args.some((a) => a.keyword === k);
  const splat = s.args.some((a) => a.text.startsWith('**'));
  switch (s.api) {
    case 'split_group':
    case 'shrink_group':
    case 'eager_connect_single_device':
    case 'PyNcclCommunicator':
      return true;
    case 'new_group':
    case 'new_subgroups':
    case 'init_device_mesh':
    case 'DeviceMesh':
    case '_new_process_group_helper':
      if (kw('device_id') || s.warmUp?.warm) return true;
      if (splat || s.api === '_new_process_group_helper') return undefined;
      return fileEager;
    case 'ProcessGroupNCCL': {
      const v = s.assignedTo ? squash(s.assignedTo) : undefined;
      if (!v) return false;
      const connect = new RegExp(`${escapeRegExp(v)}\\s*\\.\\s*eager_connect_single_device\\s*\\(`);
      const fn = s.enclosingFunction;
      const same = sites.some((x) => x.api === 'eager_connect_single_device' && x.startIndex > s.endIndex && x.enclosingFunction === fn && connect.test(x.written + '('));
      return same || connect.test(text.slice(s.endIndex, s.endIndex + 2000));
    }
    case 'init_collective_group':
    case 'init_distributed':
    case 'new_comm':
    case 'ProcessGroupNCCL.configure':
      return undefined;
    default:
      // NCCL's own creation functions (C, ctypes, nccl4py): the call makes the communicator.
      return API_MAP[s.api].language === 'cpp' ? true : undefined;
  }
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
    callsInto: API_MAP[api].callsInto,
  };
}

/** The site of a lazy group's first collective `c` (created by `creation`, held in `variable`). */
function firstCollectiveSite(
  c: DefaultCandidate & { end: number },
  variable: string,
  creation: CallSite,
  loops: readonly (Span & { kind: string })[],
  functions: readonly FunctionSpan[],
  calledInLoop: ReadonlyMap<string, number>,
): CallSite {
  const nameRange: Range = rangeOf(c.fn);
  const range: Range = { start: nameRange.start, end: pos(c.args.endPosition) };
  const fnSpan = innermost(functions, c.start, c.end);
  const repeated = repetition(c.start, c.end, loops, fnSpan, calledInLoop);
  return {
    api: FIRST_COLLECTIVE,
    role: API_MAP[FIRST_COLLECTIVE].role,
    language: 'python',
    written: c.written,
    range,
    nameRange,
    startIndex: c.start,
    endIndex: c.end,
    ...(repeated ? { repeated } : {}),
    ...(fnSpan ? { enclosingFunction: fnSpan.name } : {}),
    keywords: [],
    argumentInsert: { line: c.args.startPosition.row, character: c.args.startPosition.column + 1 },
    hasArguments: c.args.namedChildCount > 0,
    callsInto: API_MAP[FIRST_COLLECTIVE].callsInto,
    firstCollectiveOf: { variable, line: creation.range.start.line },
  };
}

/** The position of `index`, given a known position `known` at index `knownIndex` ≥ `index` on a nearby line. */
function indexToPosition(text: string, index: number, known: { row: number; column: number }, knownIndex: number): { line: number; character: number } {
  if (index === knownIndex) return pos(known);
  let line = known.row;
  for (let i = index; i < knownIndex; i++) if (text.charCodeAt(i) === 10) line--;
  return { line, character: index - lineStartIndex(text, index) };
}

const indentOf = (line: string): number => /^[ \t]*/.exec(line)?.[0].length ?? 0;

/** The 0-based line of the statement after `site`'s in its block, or undefined when the block ends. */
function nextStatementLine(site: CallSite, lines: readonly string[]): number | undefined {
  const indent = site.statement?.indent.length ?? 0;
  for (let l = (site.statement?.range.end.line ?? site.range.end.line) + 1; l < lines.length; l++) {
    const line = lines[l] ?? '';
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    if (indentOf(line) < indent) return undefined;
    if (indentOf(line) === indent) return l;
  }
  return undefined;
}

/** Is the next statement after `site` a collective that `accepts`? (A warm-up right after creation.) */
function nextStatementIsCollective<C extends { line: number }>(site: CallSite, lines: readonly string[], collectives: readonly C[], accepts: (c: C) => boolean): boolean {
  if (!site.statement?.ownsLine) return false;
  const l = nextStatementLine(site, lines);
  return l !== undefined && collectives.some((c) => c.line === l && accepts(c));
}

/**
 * After the statement that created `variable` (from the text: Python blocks are indentation):
 * warm when the next statement of the block is a collective naming the variable. Where a cold
 * group gets its first collective is found by groupFlow.ts.
 */
function warmUpAfter(site: CallSite, variable: string, lines: readonly string[], collectives: readonly { line: number; argsText: string }[]): WarmUpInfo {
  const mention = new RegExp(`(^|[^A-Za-z0-9_.])${escapeRegExp(variable)}(?![A-Za-z0-9_])`);
  return { variable, warm: nextStatementIsCollective(site, lines, collectives, (c) => mention.test(c.argsText)) };
}
