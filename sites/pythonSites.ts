/**
 * The Python scan: the NCCL lifecycle call sites of one parsed file, as real code writes them —
 * c10d (`dist.new_group`, aliases, DeepSpeed's `deepspeed.comm`), backends built directly
 * (`ProcessGroupNCCL(...)`, `eager_connect_single_device`), framework constructors
 * (`PyNcclCommunicator`, Ray collective groups, torchcomms, torchft's `configure`), nccl4py, CuPy's
 * `cupy.cuda.nccl` (`NcclCommunicator`, `initAll`, `commSplit`, `destroy`, `abort`), and
 * NCCL through ctypes (`lib.ncclCommInitRank(...)`, `self._funcs["ncclCommInitRank"](...)`);
 * which names count is pythonNames.ts. Groups of another backend (gloo, mpi, xccl, …), stores,
 * strings, comments and ctypes prototypes are not call sites. Each creation says whether the
 * code makes it eager; a lazy group's first collective is a site of its own.
 *
 * Queried only around the words that matter (rangedQuery.ts). No `vscode` import.
 */
import type { Node, Query as TsQuery, QueryMatch, Tree } from 'web-tree-sitter';
import { API_MAP, type ApiName } from './apiMap';
import type { CallSite, ScanOptions, ScanResult } from './callSiteTypes';
import { elseStandIns } from './pythonBranches';
import { firstDefaultCollectives, onDefaultGroup, worldAliases, type DefaultCandidate } from './defaultGroup';
import { GroupFlow } from './groupFlow';
import {
  COMM_RECEIVER,
  CUPY_METHODS,
  GROUP_RECEIVER,
  MESH_METHODS,
  MESH_RECEIVER,
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
import { eagerOf, nextStatementIsCollective, registeredBackend, warmUpAfter } from './pythonEager';
import { firstCollectiveSite, pythonSite, type PyCall } from './pythonSiteBuild';
import { argumentsOf, pythonBindings, pythonFacts } from './pythonImports';
import { OtherBackendGroups, destroysItself, firstArgument, groupMethod, holdsCudaBackend } from './otherBackendGroups';
import { forEachMatch, mergeRanges, rangesOutside, wordRanges } from './rangedQuery';
import { processStart } from './forkedLoops';
import { groupSizeOf } from './groupSize';
import { innermost, lastSegment, lineStartIndex, namesRegExp, type FunctionSpan, type Span } from './scanShared';

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

const squash = (s: string): string => s.replace(/\s+/g, '');
const receiverOf = (written: string): string => squash(written).replace(/\.[A-Za-z_][A-Za-z0-9_]*$/, '');
const SUBSCRIPT_NCCL = /\[\s*(?:"|')(ncclComm[A-Za-z]+)(?:"|')\s*\]$/;

/** At most this many lazy `init_process_group` calls per file are followed to their first collective. */
const MAX_DEFAULT_WALKS = 8;

/** What a creating call makes, for the methods called on what it is assigned to. */
type Maker = 'nccl4py' | 'torchcomms' | 'cupy' | 'torchft' | 'ncclBackend' | 'otherBackend' | 'deviceMesh';

/**
 * Finds the call sites of a parsed Python file (`text` is what `tree` was parsed from);
 * `options.groupMakers`: calls of wrappers that return a lazy group (the wrapper index's), whose
 * first collectives are sites too.
 */
export function scanPython(q: PythonQueries, tree: Tree, text: string, options?: ScanOptions): ScanResult {
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
  savedReferences(text, b.all);
  const libs = librariesOf(b.all);
  // Callees repeat (`dist.all_reduce` many times): each is resolved once.
  const resolved = new Map<string, string[]>();
  const fulls = (written: string): string[] => {
    let r = resolved.get(written);
    if (!r) resolved.set(written, (r = qualifyAll(written, b.all, b.star)));
    return r;
  };

  // 2. Calls that can be a site or a collective (their callee ends with a name of interest or an
  // alias), with the loops and functions around them and the assignments they are the value of.
  const names = [...QUALIFIED_LAST_NAMES, ...NCCL_NAMES, ...Object.keys(MESH_METHODS), 'abort', 'shutdown', 'eager_connect_single_device'];
  if (libs.nccl4py) names.push(...Object.keys(NCCL4PY_METHODS));
  if (libs.torchcomms) names.push(...Object.keys(TORCHCOMMS_METHODS));
  if (libs.cupy) names.push(...Object.keys(CUPY_METHODS));
  if (libs.torchft) names.push('configure');
  for (const [local, all] of b.all)
    if (
      all.some((f) => qualifiedApi(f) || PY_COLLECTIVES.has(f) || isTorchftNccl(f) || OTHER_BACKEND.test(f.slice(f.lastIndexOf('.') + 1)))
    )
      names.push(local);
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
          calls.push({ fn, args, key: args.startIndex, written: fn.text, type: fn.type });
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
          loops.push({
            start: body.startIndex,
            end: body.endIndex,
            line: stmt.startPosition.row,
            kind: m.patternIndex === 2 ? 'for' : 'while',
          });
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
  // An element of a list of communicators (`comms[i].destroy()`) is one of them.
  const isComm = (receiver: string, at: number, lib: 'nccl4py' | 'torchcomms' | 'cupy'): boolean => {
    const r = receiver.replace(/\[[^\]]*\]$/, '');
    const maker = makerOf(r, at);
    return maker === lib || (libs[lib] && maker === undefined && COMM_RECEIVER.test(r));
  };
  // A device mesh: a variable assigned a mesh (init_device_mesh, DeviceMesh, a mesh re-shaped), a
  // dimension of one (`mesh["dp", "cp"]`), or a name like a mesh's where torch's device mesh is imported.
  const isMesh = (receiver: string, at: number): boolean => {
    const r = withoutSubscripts(receiver);
    const maker = makerOf(r, at);
    return maker === 'deviceMesh' || (libs.torchMesh && maker === undefined && MESH_RECEIVER.test(r));
  };
  // In text order: a child (`half = comm.split(...)`) is a communicator of its parent's library.
  for (const call of calls) {
    if (call.type === 'subscript' || !assigned.has(call.fn.startIndex)) continue;
    const written = squash(call.written);
    const fs = fulls(written);
    const method = lastSegment(written);
    const receiver = receiverOf(written);
    let maker: Maker | undefined;
    if (call.type === 'attribute' && ['split', 'shrink', 'grow'].includes(method) && isComm(receiver, call.fn.startIndex, 'nccl4py'))
      maker = 'nccl4py';
    else if (call.type === 'attribute' && method === 'split' && isComm(receiver, call.fn.startIndex, 'torchcomms')) maker = 'torchcomms';
    else if (call.type === 'attribute' && method === 'commSplit' && isComm(receiver, call.fn.startIndex, 'cupy')) maker = 'cupy';
    else if (call.type === 'attribute' && method in MESH_METHODS && isMesh(receiver, call.fn.startIndex)) maker = 'deviceMesh';
    else if (fs.some((f) => ['init_device_mesh', 'DeviceMesh'].includes(qualifiedApi(f) ?? ''))) maker = 'deviceMesh';
    else if (fs.some((f) => /^cupy(_backends)?\..*\.NcclCommunicator(\.initAll)?$/.test(f) && qualifiedApi(f))) maker = 'cupy';
    else if (fs.some((f) => /^nccl\./.test(f) && /\.(init|init_all)$/.test(f))) maker = 'nccl4py';
    else if (fs.some((f) => qualifiedApi(f) === 'new_comm')) maker = 'torchcomms';
    else if (fs.some(isTorchftNccl)) maker = 'torchft';
    else if (fs.some((f) => qualifiedApi(f) === 'ProcessGroupNCCL')) maker = 'ncclBackend';
    else if (fs.some((f) => OTHER_BACKEND.test(f.slice(f.lastIndexOf('.') + 1)))) maker = 'otherBackend';
    const target = maker && assignedName(call);
    if (maker && target) makers.set(target, maker);
  }

  const collectives: (DefaultCandidate & { end: number; argsText: string })[] = [];
  const collectivesOnLine = new Map<number, (DefaultCandidate & { end: number; argsText: string })[]>();
  const collectiveStarts = new Set<number>();
  const candidates: { call: PyCall; api: ApiName; written: string }[] = [];
  for (const call of calls) {
    const written = call.written;
    if (call.type === 'subscript') {
      const name = SUBSCRIPT_NCCL.exec(squash(written))?.[1];
      if (name && NCCL_NAMES.has(name)) candidates.push({ call, api: name as ApiName, written });
      continue;
    }
    const fs = fulls(written);
    if (fs.some((f) => PY_COLLECTIVES.has(f))) {
      collectives.push({
        start: call.fn.startIndex,
        end: call.args.endIndex,
        line: call.fn.startPosition.row,
        written,
        fn: call.fn,
        args: call.args,
        argsText: call.args.text,
      });
      collectiveStarts.add(call.fn.startIndex);
      const line = call.fn.startPosition.row;
      collectivesOnLine.set(line, [...(collectivesOnLine.get(line) ?? []), collectives[collectives.length - 1]!]);
      continue;
    }
    const api = fs.map(qualifiedApi).find((a) => a !== undefined);
    if (api) {
      candidates.push({ call, api, written });
      continue;
    }
    const method = lastSegment(written);
    const isMethod = call.type === 'attribute';
    const receiver = isMethod ? receiverOf(written) : '';
    const at = call.fn.startIndex;
    if (NCCL_NAMES.has(method)) {
      // NCCL through ctypes (or any wrapper named after the function it calls).
      candidates.push({ call, api: method as ApiName, written });
    } else if (isMethod && method in NCCL4PY_METHODS && isComm(receiver, at, 'nccl4py')) {
      candidates.push({ call, api: NCCL4PY_METHODS[method]!, written });
    } else if (isMethod && method in TORCHCOMMS_METHODS && isComm(receiver, at, 'torchcomms')) {
      candidates.push({ call, api: TORCHCOMMS_METHODS[method]!, written });
    } else if (isMethod && method in CUPY_METHODS && isComm(receiver, at, 'cupy')) {
      candidates.push({ call, api: CUPY_METHODS[method]!, written });
    } else if (isMethod && method in MESH_METHODS && isMesh(receiver, at)) {
      candidates.push({ call, api: MESH_METHODS[method]!, written });
    } else if (isMethod && method === 'configure' && torchftReceiver(receiver, makerOf(receiver, at), fulls)) {
      candidates.push({ call, api: 'ProcessGroupNCCL.configure', written });
    } else if (isMethod && method === 'eager_connect_single_device' && makerOf(receiver, at) !== 'otherBackend') {
      candidates.push({ call, api: 'eager_connect_single_device', written });
    } else if (isMethod && method === 'abort') {
      candidates.push({ call, api: 'ProcessGroup.abort', written });
    } else if (isMethod && method === 'shutdown') {
      candidates.push({ call, api: 'ProcessGroup.shutdown', written });
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
    forEachMatch(
      q.calls,
      tree,
      rangesOutside(mergeRanges(wordRanges(text, namesRegExp(enclosing), { tokens: true })), covered),
      q.scale,
      collect,
    );
    if (calls.length > before) calls.sort((x, y) => x.key - y.key);
    if (loops.length > 0)
      for (const call of calls) {
        const name = lastSegment(call.written);
        if (!enclosing.has(name) || calledInLoop.has(name) || !innermost(loops, call.fn.startIndex, call.args.endIndex)) continue;
        // A call a forked or spawned process makes runs once per process (forkedLoops.ts).
        const from = processStart(call.fn, text);
        if (innermost(from < 0 ? loops : loops.filter((l) => l.start >= from), call.fn.startIndex, call.args.endIndex))
          calledInLoop.set(name, call.fn.startPosition.row);
      }
  }

  // 5. Sites: NCCL groups only; `x.abort()` / `x.shutdown()` only on a process group.
  const groupVariables = new Set<string>();
  // Where a group of another backend is assigned (`cpu_group = new_group(ranks, backend="gloo")`).
  const otherBackendAssignments: { name: string; index: number }[] = [];
  // The group a teardown acts on, as written: a method's receiver, destroy_process_group's argument.
  const tornDown = new Map<CallSite, { group: string; at: number }>();
  const sites: (CallSite & { args: ArgumentText[] })[] = [];
  for (const { call, api, written } of candidates) {
    const argsText = call.args.text;
    // Only a keyword, a splat, a string or a `Backend.X` can make a difference (walking the arguments costs).
    const args = /[=*"']|Backend/.test(argsText) ? argumentsOf(call.args) : [];
    if (!makesNccl(api, args)) {
      const lhs = API_MAP[api].role === 'create' ? assigned.get(call.fn.startIndex) : undefined;
      if (lhs) otherBackendAssignments.push({ name: squash(lhs.text), index: lhs.start });
      continue;
    }
    if (registeredBackend(api, args, text) || destroysItself(api, argsText)) continue;
    const method = groupMethod(api, written, fulls);
    if ((method || api === 'destroy_process_group' || api === 'ProcessGroup.shutdown') && /gloo/i.test(written + argsText)) continue;
    const site = pythonSite(call, api, written, text, loops, functions, calledInLoop, assigned);
    const size = API_MAP[api].role === 'create' ? groupSizeOf(api, written, argsText) : undefined;
    if (size !== undefined) site.groupSize = size;
    if (site.assignedTo && API_MAP[api].role === 'create') groupVariables.add(site.assignedTo);
    const group = method ? receiverOf(written) : API_MAP[api].role === 'teardown' ? firstArgument(argsText) : undefined;
    const full = { ...site, args };
    if (group) tornDown.set(full, { group, at: call.fn.startIndex });
    sites.push(full);
  }
  // A teardown of a variable that only ever holds groups of another backend is none of NCCL's.
  const otherGroups = otherBackendAssignments.length > 0 ? new OtherBackendGroups(text, otherBackendAssignments, functions) : undefined;
  // A name imported under `if C:` and bound to a stand-in under its `else:` runs the stand-in there.
  const standIn = elseStandIns(text);
  const kept = sites.filter((s) => {
    if (standIn?.(s.written.split('.')[0]!, s.startIndex)) return false;
    const torn = tornDown.get(s);
    if (torn && otherGroups?.has(torn.group, torn.at)) return false;
    if (!groupMethod(s.api, s.written, fulls)) return true;
    const receiver = receiverOf(s.written);
    if (groupVariables.has(receiver) || GROUP_RECEIVER.test(receiver)) return true;
    const fn = innermost(functions, s.startIndex, s.endIndex);
    return holdsCudaBackend(receiver, text, fn?.start ?? lineStartIndex(text, Math.max(0, s.startIndex - 4000)), s.startIndex);
  });

  // 6. Eager or lazy, warm-ups, and the first collectives of lazy groups.
  let lines: string[] | undefined;
  let flow: GroupFlow | undefined;
  const inits = kept.filter((s) => s.api === 'init_process_group');
  const lastCollective = collectives.reduce((m, c) => Math.max(m, c.start), -1);
  const world =
    inits.length > 0 || (options?.groupMakers ?? []).some((m) => m.api === 'init_process_group') ? worldAliases(text) : undefined;
  for (const s of inits) {
    s.collectivesAfter = lastCollective >= s.endIndex;
    lines ??= text.split('\n');
    const warm = nextStatementIsCollective(s, lines, collectivesOnLine, (c) => onDefaultGroup(c, world));
    s.eager = s.keywords.includes('device_id') || warm ? true : s.args.some((a) => a.text.startsWith('**')) ? undefined : false;
  }
  const fileEager = inits.some((s) => s.eager === true) ? true : inits.some((s) => s.eager === false) ? false : undefined;
  const firsts: CallSite[] = [];
  const firstAt = new Set<number>();
  const addFirst = (c: DefaultCandidate & { end: number }, variable: string, creation: { line: number; api: ApiName; groupSize?: number }): void => {
    if (firstAt.has(c.start)) return;
    firstAt.add(c.start);
    firsts.push(firstCollectiveSite(c, variable, creation, functions));
  };
  const groupFlow = (): GroupFlow =>
    (flow ??= new GroupFlow(
      q.flow,
      tree,
      text,
      q.scale,
      functions,
      collectives.map((c) => ({ start: c.start, line: c.line, written: c.written, args: c.args, argsText: c.argsText })),
    ));
  const creationOf = (s: CallSite): { line: number; api: ApiName; groupSize?: number } => ({
    line: s.range.start.line,
    api: s.api,
    ...(s.groupSize !== undefined ? { groupSize: s.groupSize } : {}),
  });
  for (const s of kept) {
    if ((s.api === 'new_group' || s.api === 'split_group') && s.assignedTo && s.statement?.ownsLine) {
      lines ??= text.split('\n');
      s.warmUp = warmUpAfter(s, s.assignedTo, lines, collectivesOnLine);
    }
    if (s.eager === undefined) s.eager = eagerOf(s, fileEager, kept, text);
    if (s.warmUp && !s.warmUp.warm) {
      const first = groupFlow().firstCollective(s.warmUp.variable, s.startIndex, s.endIndex);
      if (first) {
        s.warmUp.firstCollective = first;
        const c = s.eager === false ? collectivesOnLine.get(first.line)?.find((x) => x.written === first.call) : undefined;
        if (c) addFirst(c, s.warmUp.variable, creationOf(s));
      }
    }
  }
  // Groups made lazily by a project's wrapper and returned (the wrapper index says which calls).
  const wrapped = options?.groupMakers ?? [];
  for (const m of wrapped) {
    if (collectives.length === 0) break;
    if (m.api === 'init_process_group') continue;
    const first = groupFlow().firstCollectiveOfCall(m.startIndex, m.endIndex, m.written, m.element);
    const c = first && collectivesOnLine.get(first.line)?.find((x) => x.written === first.call);
    if (first && c) addFirst(c, first.variable, { line: m.line, api: m.api });
  }
  const ctx = {
    query: q.calls,
    tree,
    text,
    scale: q.scale,
    collectiveAt: (fn: Node, args: Node): DefaultCandidate | undefined =>
      collectiveStarts.has(fn.startIndex) || fulls(fn.text).some((f) => PY_COLLECTIVES.has(f))
        ? { start: fn.startIndex, line: fn.startPosition.row, written: fn.text, fn, args }
        : undefined,
    world,
  };
  // Lazy inits, then calls of a project's wrapper that makes one (the wrapper index's groupMakers).
  const lazyInits = [
    ...inits.filter((s) => s.eager === false).map((s) => ({ startIndex: s.startIndex, endIndex: s.endIndex, ...creationOf(s) })),
    ...wrapped.filter((m) => m.api === 'init_process_group'),
  ];
  // A file with more lazy inits than this is generated or pathological: the first ones are followed.
  for (const s of lazyInits.slice(0, MAX_DEFAULT_WALKS)) {
    for (const c of firstDefaultCollectives(ctx, s.endIndex, innermost(functions, s.startIndex, s.endIndex)))
      addFirst({ ...c, end: c.args.endIndex }, 'the default group', { line: s.line, api: s.api });
  }
  const out: CallSite[] = [...kept.map(({ args: _args, ...site }) => site), ...firsts].sort((x, y) => x.startIndex - y.startIndex);
  return { language: 'python', sites: out, facts: pythonFacts(b.last, b.lastTopLevelImportLine) };
}

/**
 * A name bound to an API by a plain assignment — a saved reference (`old_new_group = dist.new_group`)
 * or a `functools.partial` of it whose arguments name no other backend (`ng =
 * functools.partial(dist.new_group, backend="nccl")`) — is bound as the API is (added to `all`, the
 * import bindings: local name → qualified names). Only names the imports already reach, never by name alone.
 */
function savedReferences(text: string, all: Map<string, string[]>): void {
  if (all.size === 0) return;
  SAVED_REFERENCE.lastIndex = 0;
  for (let m = SAVED_REFERENCE.exec(text); m; m = SAVED_REFERENCE.exec(text)) {
    const [, local, partial, target, rest] = m;
    if (!local || !target || all.has(local) || (partial && /gloo|mpi|ucc|xccl/i.test(rest ?? ''))) continue;
    const head = target.split('.')[0]!;
    const bound = all.get(head);
    if (!bound) continue;
    const fulls = bound.map((f) => f + target.slice(head.length)).filter((f) => qualifiedApi(f) !== undefined);
    if (fulls.length > 0) all.set(local, fulls);
  }
}
/** `name = dotted.name` or `name = [functools.]partial(dotted.name, …)` on a line of its own. */
const SAVED_REFERENCE =
  /^[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*(?:((?:functools\.)?partial)\([ \t]*)?([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)[ \t]*(?:(?<=\S)[ \t]*(?:#.*)?$|,([^\n]*)\)[ \t]*(?:#.*)?$|\)[ \t]*(?:#.*)?$)/gm;

/** `x.configure(...)` on torchft's NCCL group: `x` made by its constructor, or the constructor call itself. */
function torchftReceiver(receiver: string, maker: Maker | undefined, fulls: (w: string) => string[]): boolean {
  if (maker === 'torchft') return true;
  const ctor = /^([A-Za-z_][\w.]*)\(.*\)$/s.exec(receiver)?.[1];
  return ctor !== undefined && fulls(ctor).some(isTorchftNccl);
}

/** `mesh["dp", "cp"]`, `m[m.mesh_dim_names[1:]]` → `mesh`, `m`: the receiver without its trailing subscripts (brackets balanced). */
function withoutSubscripts(receiver: string): string {
  let end = receiver.length;
  while (end > 0 && receiver[end - 1] === ']') {
    let depth = 0;
    let i = end - 1;
    for (; i >= 0; i--) {
      if (receiver[i] === ']') depth++;
      else if (receiver[i] === '[' && --depth === 0) break;
    }
    if (i <= 0) break;
    end = i;
  }
  return receiver.slice(0, end);
}
