/**
 * The facts the wrapper index (wrapperIndex.ts) keeps of one C/C++/CUDA file, read from its tree
 * in one whole-tree query, in the shape of the Python facts (wrapperFacts.ts `FileEntry`): its
 * functions — free functions (`ns::f` too), methods defined in their class or out of it
 * (`Cls::m`), lambdas assigned to a name (`auto mk = [&](…) { … };`) — the calls that may reach
 * one of them, each attributed to the innermost such function it is in, and the finder's sites
 * (cppSites.ts) attributed the same way. Also how a call of such a function is resolved
 * ({@link CppNames}): by name within the file, then across the C/C++ files of the workspace when
 * one file alone defines the name (no include is followed), and a method called on an object
 * (`obj.m(…)`, `ptr->m(…)`) when one class of the workspace alone defines a method of that name.
 * Pure; no `vscode` import.
 */
import type { Node, Query as TsQuery, Tree } from 'web-tree-sitter';
import type { CallSite, Repetition, SourceLanguage } from './callSiteTypes';
import type { Call, Def, FileEntry } from './wrapperFacts';
import { defId, type DefId } from './wrapperDerive';
import { emptyImports } from './pythonModules';
import { processStart } from './forkedLoops';
import { innermost, lastSegment, loopOfMatch, repetition, type FunctionSpan, type LoopSpan } from './scanShared';

export const CPP_FACTS_QUERY = `
(function_definition declarator: (_) @decl body: (compound_statement) @body) @def
(init_declarator declarator: (identifier) @name value: (lambda_expression body: (compound_statement) @body)) @lambda
(assignment_expression left: (identifier) @name right: (lambda_expression body: (compound_statement) @body)) @lambda
(call_expression function: [(identifier) (field_expression) (qualified_identifier)] @fn arguments: (argument_list) @args)
(for_statement body: (_) @loop) @for
(for_range_loop body: (_) @loop) @for
(while_statement body: (_) @loop) @while
(do_statement body: (_) @loop) @do
`;

/**
 * Member names of the standard library's types (smart pointers, containers, threads, streams):
 * `p.reset()` on a `std::unique_ptr` is never taken for a workspace class's `reset` method.
 */
const STD_MEMBERS: ReadonlySet<string> = new Set(
  'reset release get swap clear push_back emplace_back emplace insert erase find at begin end size empty resize reserve join detach lock unlock wait notify_one notify_all load store exchange close open flush read write count front back pop_back data str c_str'.split(
    ' ',
  ),
);

const CPP_NOT_TYPES: ReadonlySet<string> = new Set('auto const return else case new delete sizeof typename struct class static volatile'.split(' '));

/**
 * The class the receiver `recv` of a call at `end` is declared with in `text` between `start` (its
 * function's start) and `end`: the last declaration `Cls obj`, `Cls &obj`, `Cls *ptr`, `ns::Cls obj`,
 * or `auto &obj = Cls::f(…)` (a static member of `Cls`: taken as handing out a `Cls`). Undefined
 * when it is not declared there (a parameter of a template, a member, a global) or not by a plain
 * class name.
 */
function declaredClass(text: string, start: number, end: number, recv: string): string | undefined {
  if (!/^[A-Za-z_]\w*$/.test(recv)) return undefined;
  const body = text.slice(start, end);
  const re = new RegExp(
    `(?:\\bauto\\s*[&*]*\\s*${recv}\\s*=\\s*(?:[A-Za-z_]\\w*::)*([A-Za-z_]\\w*)::[A-Za-z_]\\w*\\s*\\()|(?:(?:[A-Za-z_]\\w*::)*\\b([A-Za-z_]\\w*)\\s*[&*]*\\s+[&*]*${recv}\\s*[;=({\\[,)])`,
    'g',
  );
  let found: string | undefined;
  for (const m of body.matchAll(re)) {
    const cls = m[1] ?? m[2];
    if (cls && !CPP_NOT_TYPES.has(cls)) found = cls;
  }
  return found;
}

/** A C/C++ callee's parts: `ns::Cls::m` → ['ns', 'Cls', 'm'], `p->m` → receiver `p`, name `m`. */
function partsOf(callee: string): { scope: string[]; receiver?: string; name: string } {
  const arrow = Math.max(callee.lastIndexOf('->'), callee.lastIndexOf('.'));
  if (arrow >= 0) {
    const receiver = callee.slice(0, arrow);
    return { scope: [], receiver, name: callee.slice(arrow + (callee[arrow] === '.' ? 1 : 2)) };
  }
  const parts = callee.split('::');
  return { scope: parts.slice(0, -1), name: parts[parts.length - 1]! };
}

/** The name a function definition's declarator declares (`f`, `Cls::m`, `m` in a class body), or undefined (operators, destructors, templates). */
function declaredName(decl: Node): Node | undefined {
  let d: Node | null = decl;
  for (let i = 0; d && i < 8; i++) {
    if (d.type === 'function_declarator') {
      const n = d.childForFieldName('declarator');
      return n && (n.type === 'identifier' || n.type === 'field_identifier' || n.type === 'qualified_identifier') ? n : undefined;
    }
    d = d.childForFieldName('declarator');
  }
  return undefined;
}

/** The class a method defined in its class body belongs to (`class Pool { void build() {…} };`). */
function enclosingClass(def: Node): string | undefined {
  const list = def.parent;
  if (list?.type !== 'field_declaration_list') return undefined;
  const cls = list.parent;
  return cls && (cls.type === 'class_specifier' || cls.type === 'struct_specifier') ? cls.childForFieldName('name')?.text : undefined;
}

interface DefSpanCpp extends FunctionSpan {
  def: number;
}

/**
 * Reads the functions, calls and loops of a C/C++ tree (one whole-tree query) and attributes the
 * finder's `sites` to the functions they are in. A call in a loop of its function carries the
 * loop (`repeated`), but not a loop that forks or spawns a process each round (forkedLoops.ts).
 * @param query {@link CPP_FACTS_QUERY} compiled for the C/C++ grammar
 */
export function cppFacts(query: TsQuery, tree: Tree, text: string, path: string, language: SourceLanguage, sites: CallSite[]): FileEntry {
  const defs: Def[] = [];
  const defByKey = new Map<string, number>();
  const functions = new Set<string>();
  const classes = new Set<string>();
  const spans: DefSpanCpp[] = [];
  const loops: LoopSpan[] = [];
  const raw: { fn: Node; args: Node }[] = [];
  const lambdas: { name: Node; body: Node; node: Node }[] = [];
  const addDef = (key: string, def: Def, body: Node): void => {
    // Overloads share one def: a call by name may be any of them.
    const known = defByKey.get(key);
    if (known !== undefined) {
      spans.push({ name: def.display, start: body.startIndex, end: body.endIndex, line: def.line, def: known });
      return;
    }
    defByKey.set(key, defs.length);
    spans.push({ name: def.display, start: body.startIndex, end: body.endIndex, line: def.line, def: defs.length });
    defs.push(def);
  };
  for (const m of query.matches(tree.rootNode)) {
    const c = m.captures;
    const get = (name: string): Node | undefined => c.find((x) => x.name === name)?.node;
    if (m.patternIndex === 0) {
      const decl = get('decl');
      const body = get('body');
      const node = get('def');
      const name = decl && declaredName(decl);
      if (!name || !body || !node) continue;
      const span = { start: node.startIndex, body: body.startIndex, end: body.endIndex };
      const line = name.startPosition.row;
      if (name.type === 'qualified_identifier') {
        const parts = name.text.replace(/\s+/g, '').split('::');
        const fn = parts[parts.length - 1]!;
        const cls = parts[parts.length - 2]!;
        if (fn === cls || !/^[A-Za-z_]\w*$/.test(fn)) continue;
        classes.add(cls);
        addDef(`${cls}.${fn}`, { key: `${cls}.${fn}`, callName: fn, display: `${cls}::${fn}`, cls, line, span }, body);
      } else {
        const cls = enclosingClass(node);
        if (cls !== undefined) {
          if (name.text === cls) continue;
          classes.add(cls);
          addDef(
            `${cls}.${name.text}`,
            { key: `${cls}.${name.text}`, callName: name.text, display: `${cls}::${name.text}`, cls, line, span },
            body,
          );
        } else {
          // A `static` function is the file's own: other files never resolve to it.
          const isStatic = node.namedChildren.some((k) => k?.type === 'storage_class_specifier' && k.text === 'static');
          if (!isStatic) functions.add(name.text);
          addDef(name.text, { key: name.text, callName: name.text, display: name.text, line, span }, body);
        }
      }
    } else if (m.patternIndex <= 2) {
      const name = get('name');
      const body = get('body');
      const node = get('lambda');
      if (name && body && node) lambdas.push({ name, body, node });
    } else if (m.patternIndex === 3) {
      const fn = get('fn');
      const args = get('args');
      if (fn && args) raw.push({ fn, args });
    } else {
      const loop = loopOfMatch(c);
      if (loop) loops.push(loop);
    }
  }
  // Lambdas after the functions: one in a function is keyed under it (`main/mk`), one at file level by its name.
  for (const l of lambdas) {
    const outer = innermost(spans, l.node.startIndex, l.node.endIndex);
    const key = outer ? `${defs[outer.def]!.key}/${l.name.text}` : l.name.text;
    const span = { start: l.node.startIndex, body: l.body.startIndex, end: l.body.endIndex };
    addDef(key, { key, callName: l.name.text, display: l.name.text, line: l.name.startPosition.row, span }, l.body);
  }

  const calls = new Map<string, Call[]>();
  for (const { fn, args } of raw) {
    const callee = fn.text.replace(/\s+/g, '');
    const name = lastSegment(callee);
    if (!/^[A-Za-z_]\w*$/.test(name) || /^std::/.test(callee)) continue;
    const owner = innermost(spans, fn.startIndex, args.endIndex);
    const from = loops.length > 0 ? processStart(fn, text) : -1;
    const repeated: Repetition | undefined = repetition(fn.startIndex, args.endIndex, loops, owner, new Map(), from);
    const recv = partsOf(callee).receiver;
    const receiverClass = recv !== undefined && owner ? declaredClass(text, owner.start, fn.startIndex, recv) : undefined;
    const call: Call = {
      callee,
      ...(receiverClass ? { receiverClass } : {}),
      def: owner?.def ?? -1,
      start: fn.startIndex,
      end: args.endIndex,
      line: fn.startPosition.row,
      col: fn.startPosition.column,
      nameEndLine: fn.endPosition.row,
      nameEndCol: fn.endPosition.column,
      endLine: args.endPosition.row,
      endCol: args.endPosition.column,
      argsLine: args.startPosition.row,
      argsCol: args.startPosition.column,
      hasArgs: args.namedChildCount > 0,
      ...(repeated ? { repeated } : {}),
    };
    let list = calls.get(name);
    if (!list) calls.set(name, (list = []));
    list.push(call);
  }
  const siteDefs = sites.map((s) => innermost(spans, s.startIndex, s.endIndex)?.def ?? -1);
  return {
    path,
    language,
    sites,
    siteDefs,
    siteLazy: sites.map(() => undefined),
    text,
    defs,
    defByKey,
    functions,
    classes,
    bases: new Map(),
    imports: emptyImports(),
    calls,
    instances: new Map(),
    moduleNames: new Set(),
  };
}

/**
 * The C/C++ defs of the workspace by name, for resolving calls across files: non-`static` free
 * functions by name, methods by their name. Kept by the index as files come and go ({@link add},
 * {@link remove}).
 */
export class CppNames {
  private readonly free = new Map<string, Set<string>>();
  private readonly methods = new Map<string, Set<DefId>>();

  add(f: FileEntry): void {
    for (const name of f.functions) put(this.free, name, f.path);
    for (const d of f.defs) if (d.cls && d.key === `${d.cls}.${d.callName}`) put(this.methods, d.callName, defId(f.path, d.key));
  }

  remove(f: FileEntry): void {
    for (const name of f.functions) take(this.free, name, f.path);
    for (const d of f.defs) if (d.cls) take(this.methods, d.callName, defId(f.path, d.key));
  }

  /**
   * The def `call` (in C/C++ file `f`) names, or undefined when none or more than one could be meant:
   * `f(…)` — a lambda of the calling function, a function or lambda of the file, a method of the
   * calling method's class, else the one file defining a non-`static` `f`; `A::m(…)` — the method
   * (or namespace function) `m` of `A`, else as `m(…)`; `this->m(…)` — the calling method's class;
   * `obj.m(…)` / `ptr->m(…)` — the method `m` of the object's class where its function declares it
   * (`Cls &obj`, `Cls *ptr`, `auto &obj = Cls::get(…)`), else the one class defining a method `m`
   * (never a standard library member name). A method a declared class inherits is not followed.
   */
  resolve(f: FileEntry, call: Call): DefId | undefined {
    const { scope, receiver, name } = partsOf(call.callee);
    const caller = f.defs[call.def];
    if (receiver !== undefined) {
      if (receiver === 'this' || receiver === '(*this)') return caller?.cls ? this.method(f, caller.cls, name) : undefined;
      if (STD_MEMBERS.has(name)) return undefined;
      if (call.receiverClass) return this.method(f, call.receiverClass, name);
      const all = this.methods.get(name);
      return all?.size === 1 ? [...all][0] : undefined;
    }
    if (scope.length > 0) {
      const owner = scope[scope.length - 1]!;
      if (owner === '') return this.freeFunction(f, name);
      return this.method(f, owner, name) ?? this.freeFunction(f, name);
    }
    if (caller) {
      const local = f.defByKey.get(`${caller.key}/${name}`);
      if (local !== undefined) return defId(f.path, `${caller.key}/${name}`);
    }
    if (f.defByKey.has(name)) return defId(f.path, name);
    if (caller?.cls) {
      const m = this.method(f, caller.cls, name);
      if (m) return m;
    }
    return this.freeFunction(f, name);
  }

  /**
   * The one non-`static` free function `name` of the workspace's C/C++ files, or undefined when
   * none or several define it: what a Python call of the project's compiled module runs
   * (wrapperResolve.ts `compiled`; pybind11 binds `m.def("name", &name)` under the same name).
   */
  uniqueFree(name: string): DefId | undefined {
    const paths = this.free.get(name);
    return paths?.size === 1 ? defId([...paths][0]!, name) : undefined;
  }

  private method(f: FileEntry, cls: string, name: string): DefId | undefined {
    const key = `${cls}.${name}`;
    if (f.defByKey.has(key)) return defId(f.path, key);
    const found = [...(this.methods.get(name) ?? [])].filter((id) => id.endsWith(`\u0000${key}`));
    return found.length === 1 ? found[0] : undefined;
  }

  private freeFunction(f: FileEntry, name: string): DefId | undefined {
    if (f.defByKey.has(name) && f.defs[f.defByKey.get(name)!]!.cls === undefined) return defId(f.path, name);
    const paths = this.free.get(name);
    return paths?.size === 1 ? defId([...paths][0]!, name) : undefined;
  }
}

function put<V>(m: Map<string, Set<V>>, k: string, v: V): void {
  let s = m.get(k);
  if (!s) m.set(k, (s = new Set()));
  s.add(v);
}

function take<V>(m: Map<string, Set<V>>, k: string, v: V): void {
  const s = m.get(k);
  s?.delete(v);
  if (s?.size === 0) m.delete(k);
}

/**
 * A test that a C/C++ file not parsed yet (no NCCL lifecycle name of its own) may call one of the
 * C/C++ wrappers named `names` (their call names): one of them followed by `(`. Undefined for none.
 */
export function cppWakeTest(names: Iterable<string>): ((text: string) => boolean) | undefined {
  const list = [...new Set(names)].filter((n) => /^[A-Za-z_]\w*$/.test(n));
  if (list.length === 0) return undefined;
  const re = new RegExp(`(?<![A-Za-z0-9_])(?:${list.join('|')})\\s*\\(`);
  return (text) => re.test(text);
}
