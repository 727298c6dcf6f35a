/**
 * The facts the wrapper index (wrapperIndex.ts) keeps of one Python file, read from its tree in
 * one whole-tree query: its functions and methods, its imports (pythonModules.ts), and the calls
 * that may reach a function of the workspace, each attributed to the function or method it is
 * in (a nested function's calls count for the function around it). No `vscode` import.
 */
import type { Query as TsQuery, Tree } from 'web-tree-sitter';
import type { CallSite, SourceLanguage } from './callSites';
import type { Repetition } from './callSiteTypes';
import type { WrapperCallSite } from './wrapperTypes';
import { addImport, emptyImports, type ImportFacts } from './pythonModules';
import { cachedCreation } from './wrapperCache';
import { classBases, returnedCallee, superCallee } from './wrapperClasses';
import { lazyGroupOf, returnedAt, returnsValueAt, type DefSpan, type LazyGroup } from './wrapperGroups';

export interface Def {
  /** `name`, or `Class.name` for a method. */
  key: string;
  /** The name a call ends with: the function's, the method's, the class's for `__init__`. */
  callName: string;
  /** How a chain shows it. */
  display: string;
  cls?: string;
  line: number;
  /** Where it is in the file's text (wrapperGroups.ts reads its parameters and returns). */
  span: DefSpan;
  /** A nested function: the def it is defined in (a bare call of its name resolves to it only there). */
  parent?: number;
}

/** A call whose callee may name a function of the workspace. Positions are 0-based, UTF-16. */
export interface Call {
  callee: string;
  /** Index into the file's defs of the function or method it is in; -1 at module or class level. */
  def: number;
  start: number;
  end: number;
  line: number;
  col: number;
  nameEndLine: number;
  nameEndCol: number;
  endLine: number;
  endCol: number;
  argsLine: number;
  argsCol: number;
  hasArgs: boolean;
  /** Passes `backend="…"` naming no NCCL backend (`"gloo"`, `"mpi"`): taken as forwarded to the group it makes, so not an NCCL call. */
  notNccl?: true;
  /** Memo (wrapperGroups.ts `returnsValueAt`): whether the function it is in returns its value. */
  returned?: boolean;
  /** C/C++ (cppWrapperFacts.ts): a loop of its function repeats it in one process; its site through wrappers carries it. */
  repeated?: Repetition;
  /** C/C++ (cppWrapperFacts.ts): the class of the object of `obj.m(…)` / `ptr->m(…)` where its function declares it (`Cls &obj`, `auto &obj = Cls::get()`). */
  receiverClass?: string;
  /** The index's memo (wrapperIndex.ts): what the call resolved to, at which module-table version, and the other files it looked into. */
  resolved?: string | undefined;
  resolvedAt?: number;
  deps?: string[];
}

export interface FileEntry {
  path: string;
  language: SourceLanguage;
  sites: CallSite[];
  /** For each site: the def it is in (-1: none). */
  siteDefs: number[];
  /** For each site: the lazy group it makes and its def returns (wrapperGroups.ts), if so. */
  siteLazy: (LazyGroup | undefined)[];
  /** The text the facts were read from (the first collectives of lazy groups made through wrappers are found in it on demand). */
  text: string;
  defs: Def[];
  defByKey: Map<string, number>;
  /** Top-level function names and class names. */
  functions: Set<string>;
  classes: Set<string>;
  /** The bases each top-level class names, as written (wrapperClasses.ts `classBases`): its inherited methods resolve there. */
  bases: Map<string, string[]>;
  imports: ImportFacts;
  /** Calls by the last name of their callee. */
  calls: Map<string, Call[]>;
  /**
   * Variables assigned a call's value (`b = Backend(…)`, `self.comm = cb.Backend(…)`, `_TP =
   * init_group(…)`): name (`b`, `self.comm`) → where (the def, -1 at module level) and the callee. The
   * resolver follows a constructor, or a function that returns a constructor's value.
   */
  instances: Map<string, Instance[]>;
  /** Names assigned at module level (a function's `global` may rebind them). */
  moduleNames: Set<string>;
}

/** A variable assigned the value of a call of `ctor` in def `def` (-1: module level). */
export interface Instance {
  def: number;
  ctor: string;
}

export const FACTS_QUERY = `
(function_definition name: (identifier) @name body: (block) @body)
(class_definition name: (identifier) @name body: (block) @body)
(call function: [(identifier) (attribute)] @fn arguments: (_) @args)
(import_statement) @import
(import_from_statement) @import
(assignment left: [(identifier) (attribute)] @lhs right: (call function: [(identifier) (attribute)] @ctor))
`;

/** A `backend="…"` keyword argument with a string literal. */
const BACKEND_KEYWORD = /(?:^|[(,\s])backend\s*=\s*(['"])([^'"\n]*)\1/;
/** A module-level `name = other` line (`mpu = parallel_state` in megatron/core/__init__.py). */
const MODULE_ALIAS = /^([A-Za-z_][A-Za-z0-9_]*)[ \t]*=[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?:#.*)?$/gm;

/** `x = y` at module level where `y` is imported: `x` is bound as `y` is (an alias of a module or function). */
function addModuleAliases(text: string, imports: ImportFacts): void {
  MODULE_ALIAS.lastIndex = 0;
  for (let m = MODULE_ALIAS.exec(text); m; m = MODULE_ALIAS.exec(text)) {
    const bound = imports.bindings.get(m[2]!);
    if (bound && !imports.bindings.has(m[1]!)) imports.bindings.set(m[1]!, bound);
  }
}

const CALLEE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;
/** A module-level assignment's target. */
const MODULE_NAME = /^([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?::[^=\n]*)?=(?!=)/gm;
/** An instance variable: a name, or `self.name`. */
const INSTANCE_TARGET = /^(?:self\.)?[A-Za-z_][A-Za-z0-9_]*$/;

interface Span {
  start: number;
  body: number;
  end: number;
  kind: 'function' | 'class';
  name: string;
  line: number;
  parent?: Span;
  /** Functions: the def index when indexed (top-level or method). */
  def?: number;
  /** The nearest indexed def at or above this span (-1: none). */
  owner: number;
}

/** The spans holding each position of `starts` (sorted ascending): the innermost span's owner, or -1. */
function owners(spans: readonly Span[], starts: readonly number[]): number[] {
  const out: number[] = [];
  const stack: Span[] = [];
  let i = 0;
  for (const at of starts) {
    while (i < spans.length && spans[i]!.start <= at) {
      const s = spans[i++]!;
      while (stack.length > 0 && stack[stack.length - 1]!.end <= s.start) stack.pop();
      stack.push(s);
    }
    while (stack.length > 0 && stack[stack.length - 1]!.end <= at) stack.pop();
    out.push(stack.length > 0 ? stack[stack.length - 1]!.owner : -1);
  }
  return out;
}

/** Reads the defs, imports and calls of a Python tree (one whole-tree query) and attributes the finder's sites to defs. */
export function pythonFacts(query: TsQuery, tree: Tree, text: string, path: string, sites: CallSite[]): FileEntry {
  const spans: Span[] = [];
  const imports = emptyImports();
  const raw: {
    callee: string;
    fn: { s: number; sl: number; sc: number; el: number; ec: number };
    a: { s: number; e: number; sl: number; sc: number; el: number; ec: number };
  }[] = [];
  const assigned: { target: string; ctor: string; at: number }[] = [];
  for (const m of query.matches(tree.rootNode)) {
    const c = m.captures;
    if (m.patternIndex <= 1) {
      const name = c.find((x) => x.name === 'name')?.node;
      const body = c.find((x) => x.name === 'body')?.node;
      if (name && body)
        spans.push({
          start: name.startIndex,
          body: body.startIndex,
          end: body.endIndex,
          kind: m.patternIndex === 0 ? 'function' : 'class',
          name: name.text,
          line: name.startPosition.row,
          owner: -1,
        });
    } else if (m.patternIndex === 2) {
      const fn = c[0]?.name === 'fn' ? c[0].node : c.find((x) => x.name === 'fn')?.node;
      const args = c.find((x) => x.name === 'args')?.node;
      if (!fn || !args) continue;
      const written = fn.text.replace(/\s+/g, '');
      const callee = CALLEE.test(written) ? written : (superCallee(written) ?? returnedCallee(written));
      if (!callee) continue;
      const fs = fn.startPosition;
      const fe = fn.endPosition;
      const as = args.startPosition;
      const ae = args.endPosition;
      raw.push({
        callee,
        fn: { s: fn.startIndex, sl: fs.row, sc: fs.column, el: fe.row, ec: fe.column },
        a: { s: args.startIndex, e: args.endIndex, sl: as.row, sc: as.column, el: ae.row, ec: ae.column },
      });
    } else if (m.patternIndex <= 4) {
      const node = c[0]?.node;
      if (node) addImport(node.text, imports);
    } else {
      const lhs = c.find((x) => x.name === 'lhs')?.node;
      const ctor = c.find((x) => x.name === 'ctor')?.node;
      const target = lhs?.text.replace(/\s+/g, '') ?? '';
      const callee = ctor?.text.replace(/\s+/g, '') ?? '';
      // A constructor's value, or a function's that may return one (wrapperResolve.ts `factoryClass`).
      if (lhs && INSTANCE_TARGET.test(target) && CALLEE.test(callee)) assigned.push({ target, ctor: callee, at: lhs.startIndex });
    }
  }

  addModuleAliases(text, imports);

  // Nesting: a function directly in a class body is a method; in another function, nested (its
  // calls count for the function around it).
  spans.sort((x, y) => x.start - y.start || y.end - x.end);
  const defs: Def[] = [];
  const defByKey = new Map<string, number>();
  const functions = new Set<string>();
  /** Names of nested functions (their bare calls are kept). */
  const nested = new Set<string>();
  const classes = new Set<string>();
  const bases = new Map<string, string[]>();
  const stack: Span[] = [];
  for (const s of spans) {
    while (stack.length > 0 && stack[stack.length - 1]!.end <= s.start) stack.pop();
    const parent = stack[stack.length - 1];
    if (parent) s.parent = parent;
    if (s.kind === 'class') {
      if (!parent) {
        classes.add(s.name);
        bases.set(s.name, classBases(text.slice(s.start, s.body)));
      }
      s.owner = parent?.owner ?? -1;
    } else if (!parent || parent.kind === 'class') {
      const cls = parent?.name;
      const key = cls ? `${cls}.${s.name}` : s.name;
      if (!defByKey.has(key)) {
        const def: Def = {
          key,
          callName: cls && s.name === '__init__' ? cls : s.name,
          display: cls ? (s.name === '__init__' ? cls : key) : s.name,
          line: s.line,
          span: { start: s.start, body: s.body, end: s.end },
          ...(cls ? { cls } : {}),
        };
        defByKey.set(key, defs.length);
        s.def = defs.length;
        defs.push(def);
      }
      s.owner = s.def ?? parent?.owner ?? -1;
      if (!parent) functions.add(s.name);
    } else if (parent.owner >= 0) {
      // A nested function is a def of its own, called by name in the function around it
      // (wrapperResolve.ts `defIn`): `def unflatten(…): return mesh._unflatten(…)` inside a
      // builder makes each `unflatten(…)` a call site. A callback never called by name stays
      // uncredited (`callbackOnly`).
      const outer = defs[parent.owner]!;
      const key = `${outer.key}.<locals>.${s.name}`;
      if (!defByKey.has(key)) {
        defByKey.set(key, defs.length);
        s.def = defs.length;
        defs.push({
          key,
          callName: s.name,
          display: `${outer.display}.${s.name}`,
          line: s.line,
          span: { start: s.start, body: s.body, end: s.end },
          parent: parent.owner,
          ...(outer.cls ? { cls: outer.cls } : {}),
        });
        nested.add(s.name);
      }
      s.owner = s.def ?? parent.owner;
    } else {
      s.owner = parent.owner;
    }
    stack.push(s);
  }

  const instances = new Map<string, Instance[]>();
  assigned.sort((x, y) => x.at - y.at);
  const assignedOwners = owners(
    spans,
    assigned.map((a) => a.at),
  );
  assigned.forEach((a, i) => {
    let list = instances.get(a.target);
    if (!list) instances.set(a.target, (list = []));
    list.push({ def: assignedOwners[i]!, ctor: a.ctor });
  });
  const moduleNames = new Set<string>();
  MODULE_NAME.lastIndex = 0;
  for (let m = MODULE_NAME.exec(text); m; m = MODULE_NAME.exec(text)) moduleNames.add(m[1]!);

  // Keep the calls that may reach a function of the workspace.
  raw.sort((x, y) => x.fn.s - y.fn.s);
  const callOwners = owners(
    spans,
    raw.map((r) => r.fn.s),
  );
  const calls = new Map<string, Call[]>();
  const maybeLocal = imports.stars.length > 0;
  raw.forEach((r, i) => {
    const dot = r.callee.indexOf('.');
    // `get_group().m`: kept as a call of `get_group` is.
    const first = (dot < 0 ? r.callee : r.callee.slice(0, dot)).replace(/\(\)$/, '');
    const keep =
      dot < 0
        ? functions.has(first) || nested.has(first) || classes.has(first) || imports.bindings.has(first) || maybeLocal
        : first === 'self' ||
          first === 'cls' ||
          first === 'super' ||
          classes.has(first) ||
          functions.has(first) ||
          imports.bindings.has(first) ||
          instances.has(first);
    if (!keep) return;
    const last = dot < 0 ? r.callee : r.callee.slice(r.callee.lastIndexOf('.') + 1);
    const backend = BACKEND_KEYWORD.exec(text.slice(r.a.s, r.a.e));
    const call: Call = {
      callee: r.callee,
      def: callOwners[i]!,
      start: r.fn.s,
      end: r.a.e,
      line: r.fn.sl,
      col: r.fn.sc,
      nameEndLine: r.fn.el,
      nameEndCol: r.fn.ec,
      endLine: r.a.el,
      endCol: r.a.ec,
      argsLine: r.a.sl,
      argsCol: r.a.sc,
      hasArgs: r.a.e - r.a.s > 2,
      ...(backend && !/nccl/i.test(backend[2]!) ? { notNccl: true as const } : {}),
    };
    let list = calls.get(last);
    if (!list) calls.set(last, (list = []));
    list.push(call);
  });

  const order = sites.map((s, i) => ({ s, i })).sort((x, y) => x.s.startIndex - y.s.startIndex);
  const siteOwners = owners(
    spans,
    order.map((o) => o.s.startIndex),
  );
  const siteDefs: number[] = new Array<number>(sites.length).fill(-1);
  order.forEach((o, k) => (siteDefs[o.i] = callbackOnly(spans, o.s.startIndex, text) ? -1 : siteOwners[k]!));
  const siteLazy = sites.map((s, i) => lazyGroupOf(s, text, defs[siteDefs[i]!]?.span));
  return {
    path,
    language: 'python',
    sites,
    siteDefs,
    siteLazy,
    text,
    defs,
    defByKey,
    functions,
    classes,
    bases,
    imports,
    calls,
    instances,
    moduleNames,
  };
}

/**
 * Whether the call at `at` is in a function nested in another that the outer one never calls by
 * name — a callback it only hands on (`threading.Timer(30, on_timeout)`, `signal.signal(…,
 * handler)`): its lifecycle call is not the outer function's (never credited to it, nor to its callers).
 */
function callbackOnly(spans: readonly Span[], at: number, text: string): boolean {
  let inner: Span | undefined;
  for (const s of spans) if (s.start <= at && at < s.end && (!inner || s.start >= inner.start)) inner = s;
  for (let s = inner; s && s.kind === 'function' && s.parent; s = s.parent) {
    if (s.parent.kind !== 'function') return false;
    const body = text.slice(s.parent.body, s.parent.end);
    const called = new RegExp(`(?<![A-Za-z0-9_.])${s.name}\\s*\\(`, 'g');
    let direct = false;
    for (let m = called.exec(body); m && !direct; m = called.exec(body)) direct = !/\bdef\s+$/.test(body.slice(Math.max(0, m.index - 8), m.index));
    if (!direct) return true;
  }
  return false;
}

/**
 * The callee whose value `receiver` (`b`, `self.comm`) holds where `call` is: `self.x` as the
 * methods of the call's class assign it; a name as the call's own function assigns it, else — a
 * module-level name its function neither assigns nor takes as a parameter — as the file assigns
 * it anywhere (`global`). Undefined when none, or when the assignments call different callees.
 */
export function instanceOf(f: FileEntry, call: Call, receiver: string): string | undefined {
  const list = f.instances.get(receiver);
  if (!list) return undefined;
  const single = (l: readonly Instance[]): string | undefined =>
    l.length > 0 && l.every((i) => i.ctor === l[0]!.ctor) ? l[0]!.ctor : undefined;
  const def = f.defs[call.def];
  if (receiver.startsWith('self.')) return def?.cls ? single(list.filter((i) => f.defs[i.def]?.cls === def.cls)) : undefined;
  const local = list.filter((i) => i.def === call.def);
  if (local.length > 0 || !def) return single(local);
  if (!f.moduleNames.has(receiver)) return undefined;
  const params = f.text.slice(def.span.start, def.span.body);
  if (new RegExp(`[(,]\\s*\\**${receiver}\\s*[:=,)]`).test(params)) return undefined;
  return single(list);
}

/**
 * What other files may resolve to in this one: its top-level functions, its classes with an
 * `__init__`, its methods (called on instances), its classes' bases (inherited methods), its module-level
 * instances (holders), its imports (re-exports). An edit that leaves it unchanged keeps every other
 * file's resolutions.
 */
export function surfaceOf(f: FileEntry): string {
  const classes = [...f.classes].filter((c) => f.defByKey.has(`${c}.__init__`));
  const bindings = [...f.imports.bindings].map(
    ([k, b]) => `${k}=${b.kind}:${b.ref.level}:${b.ref.dotted}${b.kind === 'member' ? `:${b.name}` : ''}`,
  );
  const stars = f.imports.stars.map((r) => `${r.level}:${r.dotted}`);
  const methods = [...f.defByKey.keys()].filter((k) => k.includes('.'));
  const inherit = [...f.bases].map(([c, b]) => `${c}(${b.join(',')})`);
  // Module-level holders (`_TP = GroupCoordinator(…)`): other files call methods on them.
  const holders = [...f.instances].filter(([k]) => f.moduleNames.has(k)).map(([k, l]) => `${k}=${l.map((i) => i.ctor).join('/')}`);
  return [
    inherit.sort().join(','),
    holders.sort().join(','),
    [...f.functions].sort().join(','),
    classes.sort().join(','),
    methods.sort().join(','),
    bindings.sort().join(','),
    stars.join(','),
  ].join('|');
}

/**
 * What the derived wrappers take from a file, given the names of the wrappers: its defs, the
 * finder's sites per def (API, role, callee, the lazy group its def returns), its calls of those
 * names per def (whether the def returns their value, their arguments). Equal before and after an
 * edit: the table derived before still holds.
 */
export function derivationKey(f: FileEntry, names: ReadonlySet<string>): string {
  const parts = [f.defs.map((d) => d.key).join(',')];
  // What instance methods resolve through (instanceOf).
  for (const [k, l] of f.instances) parts.push(`${k}=${l.map((i) => `${i.def}:${i.ctor}`).join('/')}`);
  parts.push([...f.moduleNames].join(','));
  for (const [c, b] of f.bases) parts.push(`${c}(${b.join(',')})`);
  // Whether a creation or a call of a wrapper is cached (wrapperCache.ts): a guard edited around it changes it.
  const cached = (at: number, def: number): string => (f.defs[def] && cachedCreation(f.text, at, f.defs[def].span) ? '$' : '');
  f.sites.forEach((s, i) =>
    parts.push(`${f.siteDefs[i]}:${s.api}:${s.role}:${s.written}:${JSON.stringify(f.siteLazy[i] ?? null)}${cached(s.startIndex, f.siteDefs[i]!)}`),
  );
  for (const name of names)
    for (const c of f.calls.get(name) ?? [])
      // Its arguments: a forwarded device_id is read from them (wrapperGroups.ts `lazyAtCall`).
      parts.push(`${c.def}>${c.callee}${c.notNccl ? '!' : ''}${returnedByCaller(f, c) ? '^' : ''}${cached(c.start, c.def)}${f.text.slice(c.start, c.end)}`);
  return parts.join('|');
}

/** Does the function a call is in return the call's value (memoised on the call)? */
export function returnedByCaller(f: FileEntry, call: Call): boolean {
  return (call.returned ??= returnsValueAt(f.text, call.start, f.defs[call.def]?.span));
}

/**
 * The lazy group `lazy` that `call` receives, as the calling function passes it on by returning it
 * (`return make(…)`, `pg, store = make(…)` … `return pg`, `g = make(…)` … `return g, rank`: its
 * `element` follows, wrapperGroups.ts `returnedAt`): `{ lazy }`, or `{}` when not returned.
 */
export function passedOn(f: FileEntry, call: Call, lazy: LazyGroup): { lazy?: LazyGroup } {
  if (lazy.default) return { lazy };
  if (!returnedByCaller(f, call) && lazy.element === undefined) return {};
  const r = returnedAt(f.text, call.start, f.defs[call.def]?.span, lazy.element);
  if (!r) return {};
  const rest: LazyGroup = { ...lazy };
  delete rest.element;
  return { lazy: r.element === undefined ? rest : { ...rest, element: r.element } };
}

/** The site of `call` reaching `inner`: the inner site's meaning (api, role, callsInto, eager, keywords), the call's position. */
export function callerSite(
  f: FileEntry,
  call: Call,
  inner: { site: CallSite; chain: string[]; cached?: true },
  wrapper: WrapperCallSite['wrapper'],
): WrapperCallSite {
  const meaning = inner.site as CallSite & Record<string, unknown>;
  const extra: Record<string, unknown> = {};
  // Fields the finder may add about what the call does (not where it is).
  for (const k of ['callsInto', 'eager']) if (meaning[k] !== undefined) extra[k] = meaning[k];
  const enclosing = f.defs[call.def];
  return {
    ...(extra as Partial<CallSite>),
    api: inner.site.api,
    role: inner.site.role,
    language: f.language === 'python' ? 'python' : 'cpp',
    written: call.callee.replace(/^super\./, 'super().'),
    range: { start: { line: call.line, character: call.col }, end: { line: call.endLine, character: call.endCol } },
    nameRange: { start: { line: call.line, character: call.col }, end: { line: call.nameEndLine, character: call.nameEndCol } },
    startIndex: call.start,
    endIndex: call.end,
    ...(enclosing ? { enclosingFunction: enclosing.key.split('.').pop()! } : {}),
    keywords: [...inner.site.keywords],
    argumentInsert: { line: call.argsLine, character: call.argsCol + 1 },
    hasArguments: call.hasArgs,
    chain: [...inner.chain],
    wrapper,
    ...(call.repeated ? { repeated: call.repeated } : {}),
    ...(inner.cached ? { firstCallOnly: true as const } : {}),
  };
}
