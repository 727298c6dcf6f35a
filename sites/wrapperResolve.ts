/**
 * How the wrapper index (wrapperIndex.ts) resolves a call to the def it names, from the per-file
 * facts (wrapperFacts.ts) and the module table (pythonModules.ts): `f(…)` (a function of this file,
 * or imported by `from m import f`, through re-exports and star imports), `m.f(…)` / `pkg.m.f(…)`,
 * `self.f(…)` / `cls.f(…)`, `C(…)` (a class's `__init__`), methods called on an instance
 * (wrapperFacts.ts `instanceOf`) or on a module-level holder of another file (`from m import _TP` …
 * `_TP.destroy()`, `m._TP.destroy()`), `C.f(…)` / `m.C.f(…)` (a static or class method), and
 * `super().f(…)`; a method a class does not define is looked up in its bases, in the order written
 * (wrapperClasses.ts), a few levels up. Pure; no `vscode` import.
 */
import type { Binding, ModuleRef, ModuleTable } from './pythonModules';
import { defId, type DefId } from './wrapperDerive';
import { instanceOf, type Call, type FileEntry } from './wrapperFacts';

/** How many base classes up a method is looked for, and how many re-exports a class is followed through. */
const MAX_DEPTH = 4;
/** A class by its name (CapWords: `Backend`, `cb.Backend`, `_Private`). */
const CONSTRUCTOR = /^(?:[A-Za-z_][A-Za-z0-9_]*\.)*_*[A-Z][A-Za-z0-9_]*$/;

/** A class: the file it is defined in and its name. */
interface ClassRef {
  path: string;
  name: string;
}

/** What a resolution reads: the module table, a file's facts (parsing it if need be), and where it looked. */
export interface ResolveContext {
  modules: ModuleTable;
  entry: (path: string) => FileEntry | undefined;
  consult: (path: string) => void;
  /** The C/C++ function of the workspace a call of the project's compiled module names (cppWrapperFacts.ts `uniqueFree`), if any. */
  compiled?: (name: string) => DefId | undefined;
}

/** Resolves calls to defs (see the file comment); stateless between calls but for its context. */
export class CallResolver {
  private readonly modules: ModuleTable;
  private readonly entry: (path: string) => FileEntry | undefined;
  private readonly consult: (path: string) => void;
  private readonly compiled: ((name: string) => DefId | undefined) | undefined;

  constructor(ctx: ResolveContext) {
    this.modules = ctx.modules;
    this.entry = ctx.entry;
    this.consult = ctx.consult;
    this.compiled = ctx.compiled;
  }

  /** The def `call` (in file `f`) names, or undefined. */
  resolve(f: FileEntry, call: Call): DefId | undefined {
    // `get_group().m(…)`: method `m` of the class whose instance `get_group` returns.
    const returned = /^(.+)\(\)\.([A-Za-z_][A-Za-z0-9_]*)$/.exec(call.callee);
    if (returned) {
      const cls = this.factoryClass(f, returned[1]!, call.def);
      return cls ? this.methodOf(cls, returned[2]!, 0) : undefined;
    }
    const parts = call.callee.split('.');
    const name = parts[parts.length - 1]!;
    if (parts.length === 1) {
      const local = this.nestedIn(f, call.def, name) ?? this.defIn(f, name);
      if (local) return local;
      const b = f.imports.bindings.get(name);
      if (b?.kind === 'member') return this.member(f.path, b.ref, b.name, 0);
      if (b) return undefined;
      for (const star of f.imports.stars) {
        const g = this.modules.resolve(f.path, star);
        const d = g ? this.lookup(g, name, 1) : undefined;
        if (d) return d;
      }
      return undefined;
    }
    if (parts[0] === 'self' || parts[0] === 'cls' || parts[0] === 'super') {
      const cls = f.defs[call.def]?.cls;
      if (parts.length === 3 && parts[0] === 'self') return this.instanceMethod(f, call, `self.${parts[1]}`, name);
      if (parts.length !== 2 || !cls) return undefined;
      // `super().f(…)` starts at the bases; `self.f(…)` / `cls.f(…)` at the class itself.
      if (parts[0] !== 'super') return this.methodOf({ path: f.path, name: cls }, name, 0);
      for (const base of f.bases.get(cls) ?? []) {
        const c = this.classNamed(f, base);
        const d = c && this.methodOf(c, name, 1);
        if (d) return d;
      }
      return undefined;
    }
    const b = f.imports.bindings.get(parts[0]!);
    if (!b && parts.length === 2)
      return f.classes.has(parts[0]!) ? this.methodOf({ path: f.path, name: parts[0]! }, name, 0) : this.instanceMethod(f, call, parts[0]!, name);
    if (!b) return undefined;
    const g = this.moduleOf(f.path, b, parts.slice(1, -1), 0);
    if (g) return this.lookup(g, name, 0);
    // `C.f(…)` / `m.C.f(…)` (a class's static or class method) and `_TP.f(…)` / `m._TP.f(…)` (a
    // module-level holder of an instance): the part before the method names a class or a holder.
    const owner = parts[parts.length - 2]!;
    const where =
      parts.length === 2
        ? b.kind === 'member'
          ? this.modules.resolve(f.path, b.ref)
          : undefined
        : this.moduleOf(f.path, b, parts.slice(1, -2), 0);
    const cls = where ? (this.classIn(where, undefined, owner, 0) ?? this.holderClass(where, owner)) : undefined;
    if (cls) return this.methodOf(cls, name, 0);
    // `_C.create_comm(…)` on the project's own compiled module (`import pkg._C as _C` inside
    // pkg/, `from . import _C`: no Python source of it here): the C/C++ function of that name.
    if (parts.length === 2 && this.compiled) {
      const ref = b.kind === 'module' ? b.ref : { level: b.ref.level, dotted: b.ref.dotted === '' ? b.name : `${b.ref.dotted}.${b.name}` };
      if (ownCompiledModule(f.path, ref, this.modules)) return this.compiled(name);
    }
    return undefined;
  }

  /** The nested function `name` defined in def `at` or a def around it (Python's enclosing scopes), or undefined. */
  private nestedIn(f: FileEntry, at: number, name: string): DefId | undefined {
    for (let d = at, hops = 0; d >= 0 && hops < 8; d = f.defs[d]?.parent ?? -1, hops++) {
      const inner = f.defs.find((x) => x.parent === d && x.callName === name);
      if (inner) return defId(f.path, inner.key);
    }
    return undefined;
  }

  /** Function `name` of file `f`, or the `__init__` class `name` of `f` defines or inherits (what `name(…)` runs). */
  private defIn(f: FileEntry, name: string): DefId | undefined {
    if (f.functions.has(name)) return defId(f.path, name);
    return f.classes.has(name) ? this.methodOf({ path: f.path, name }, '__init__', 0) : undefined;
  }

  /**
   * Def `method` of class `cls`, or of the first of its bases (in the order written, depth first)
   * that has it: what a call on an instance of `cls` runs. Undefined when none within {@link MAX_DEPTH} levels.
   */
  private methodOf(cls: ClassRef, method: string, depth: number): DefId | undefined {
    const g = this.entry(cls.path);
    if (!g) return undefined;
    this.consult(cls.path);
    const key = `${cls.name}.${method}`;
    if (g.defByKey.has(key)) return defId(cls.path, key);
    if (depth >= MAX_DEPTH) return undefined;
    for (const base of g.bases.get(cls.name) ?? []) {
      const c = this.classNamed(g, base);
      const d = c && this.methodOf(c, method, depth + 1);
      if (d) return d;
    }
    return undefined;
  }

  /**
   * The class a module-level name of file `path` holds an instance of (`_TP = GroupCoordinator(…)`
   * at module level, or in a function through `global`; every assignment the same class), also
   * through re-exports (`from .coordinator import _TP` in a package's `__init__.py`), or undefined.
   */
  private holderClass(path: string, name: string, depth = 0): ClassRef | undefined {
    const g = this.entry(path);
    if (!g) return undefined;
    this.consult(path);
    const b = g.imports.bindings.get(name);
    if (b?.kind === 'member' && depth < MAX_DEPTH) {
      const from = this.modules.resolve(path, b.ref);
      return from ? this.holderClass(from, b.name, depth + 1) : undefined;
    }
    const list = g.moduleNames.has(name) ? g.instances.get(name) : undefined;
    if (!list || list.length === 0 || !list.every((i) => i.ctor === list[0]!.ctor)) return undefined;
    return this.classNamed(g, list[0]!.ctor) ?? this.factoryClass(g, list[0]!.ctor, list[0]!.def);
  }

  /** The class a constructor's or a base's text (`C`, `m.C`) names in file `f`: its own, imported, or in an imported module. */
  private classNamed(f: FileEntry, text: string): ClassRef | undefined {
    const parts = text.split('.');
    const name = parts[parts.length - 1];
    if (!name) return undefined;
    if (parts.length === 1) {
      const b = f.imports.bindings.get(name);
      return f.classes.has(name) ? { path: f.path, name } : b?.kind === 'member' ? this.classIn(f.path, b.ref, b.name, 0) : undefined;
    }
    const b = f.imports.bindings.get(parts[0]!);
    const g = b ? this.moduleOf(f.path, b, parts.slice(1, -1), 0) : undefined;
    return g ? this.classIn(g, undefined, name, 0) : undefined;
  }

  /** Method `method` of the class whose instance `receiver` holds at `call` (wrapperFacts.ts `instanceOf`). */
  private instanceMethod(f: FileEntry, call: Call, receiver: string, method: string): DefId | undefined {
    const ctor = instanceOf(f, call, receiver);
    const cls = ctor ? this.classNamed(f, ctor) ?? this.factoryClass(f, ctor, call.def) : undefined;
    return cls ? this.methodOf(cls, method, 0) : undefined;
  }

  private factoryDepth = 0;

  /**
   * The class whose instance the function `callee` (as called in def `def` of `f`) returns: the one
   * its return annotation names (`-> GroupCoordinator`), else the one every `return` of its body
   * constructs (`return GroupCoordinator(…)`), else the one of the module-level holder every `return`
   * returns (`return _TP`); undefined otherwise (vLLM's `_TP = init_model_parallel_group(…)`, `get_tp_group()`).
   */
  private factoryClass(f: FileEntry, callee: string, def: number): ClassRef | undefined {
    if (this.factoryDepth >= MAX_DEPTH) return undefined;
    this.factoryDepth++;
    try {
      const id = this.resolve(f, { callee, def } as Call);
      const [path, key] = id?.split('\u0000') ?? [];
      const g = path ? this.entry(path) : undefined;
      const d = g && key !== undefined ? g.defs[g.defByKey.get(key) ?? -1] : undefined;
      if (!g || !d || key!.endsWith('.__init__')) return undefined;
      const header = g.text.slice(d.span.start, d.span.body);
      const body = g.text.slice(d.span.body, d.span.end);
      const annotated = /->\s*(['"]?)([A-Za-z_][A-Za-z0-9_.]*)\1\s*:\s*$/.exec(header)?.[2];
      const built = [...body.matchAll(/(?<![A-Za-z0-9_.])return\s+([A-Za-z_][A-Za-z0-9_.]*)\s*\(/g)].map((m) => m[1]!);
      const returns = body.match(/(?<![A-Za-z0-9_.])return(?![A-Za-z0-9_])/g)?.length ?? 0;
      const same = (l: string[]): string | undefined => (l.length > 0 && l.length === returns && l.every((b) => b === l[0]) ? l[0] : undefined);
      const cls = annotated ?? same(built);
      if (cls) return CONSTRUCTOR.test(cls) ? this.classNamed(g, cls) : undefined;
      const held = same([...body.matchAll(/(?<![A-Za-z0-9_.])return[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?:#[^\n]*)?$/gm)].map((m) => m[1]!));
      return held ? this.holderClass(path!, held) : undefined;
    } finally {
      this.factoryDepth--;
    }
  }

  /** Class `name` of the module `ref` names from `from` (or of file `from` itself), through re-exports. */
  private classIn(from: string, ref: ModuleRef | undefined, name: string, depth: number): ClassRef | undefined {
    const path = ref ? this.modules.resolve(from, ref) : from;
    const g = path ? this.entry(path) : undefined;
    if (!path || !g) return undefined;
    this.consult(path);
    if (g.classes.has(name)) return { path, name };
    const b = g.imports.bindings.get(name);
    return b?.kind === 'member' && depth < MAX_DEPTH ? this.classIn(path, b.ref, b.name, depth + 1) : undefined;
  }

  /**
   * The module file a binding names, with `extra` dotted parts after it: `import a.b as z` → a/b;
   * `from pkg import m` → pkg/m, else what pkg/__init__.py binds `m` to (`mpu = parallel_state`).
   */
  private moduleOf(from: string, b: Binding, extra: readonly string[], depth: number): string | undefined {
    if (b.kind === 'module') return this.modules.resolve(from, b.ref, extra);
    const sub = this.modules.resolve(
      from,
      { level: b.ref.level, dotted: b.ref.dotted === '' ? b.name : `${b.ref.dotted}.${b.name}` },
      extra,
    );
    if (sub || depth >= 4) return sub;
    const pkg = this.modules.resolve(from, b.ref);
    if (pkg) this.consult(pkg);
    const inner = pkg ? this.entry(pkg)?.imports.bindings.get(b.name) : undefined;
    return pkg && inner ? this.moduleOf(pkg, inner, extra, depth + 1) : undefined;
  }

  /** `name` in module file `path`: defined there, or imported there from another module (re-exports, also by a star import; a few levels). */
  private lookup(path: string, name: string, depth: number): DefId | undefined {
    this.consult(path);
    const g = this.entry(path);
    if (!g) return undefined;
    const d = this.defIn(g, name);
    if (d || depth >= MAX_DEPTH) return d;
    const b = g.imports.bindings.get(name);
    if (b) return b.kind === 'member' ? this.member(path, b.ref, b.name, depth + 1) : undefined;
    // A package's `__init__.py` re-exporting a module's names by `from .inner import *`.
    for (const star of g.imports.stars) {
      const s = this.modules.resolve(path, star);
      const found = s && s !== path ? this.lookup(s, name, depth + 1) : undefined;
      if (found) return found;
    }
    return undefined;
  }

  private member(from: string, ref: ModuleRef, name: string, depth: number): DefId | undefined {
    const g = this.modules.resolve(from, ref);
    return g ? this.lookup(g, name, depth) : undefined;
  }
}



/**
 * Whether `ref`, imported by the Python file at `from`, is a module of the importing file's own
 * project with no Python source in the workspace (a compiled extension: pybind11, Cython): a
 * relative import, or an absolute one whose first part names a folder above the importing file.
 */
export function ownCompiledModule(from: string, ref: ModuleRef, modules: ModuleTable): boolean {
  if (ref.dotted === '' || modules.resolve(from, ref) !== undefined) return false;
  if (ref.level > 0) return true;
  const top = ref.dotted.split('.')[0]!;
  if (top === ref.dotted) return false;
  return from.split(/[\\/]/).slice(0, -1).includes(top);
}
