/**
 * How the wrapper index (wrapperIndex.ts) resolves a call to the def it names, from the per-file
 * facts (wrapperFacts.ts) and the module table (pythonModules.ts): `f(…)` (a function of this file,
 * or imported by `from m import f`, through re-exports and star imports), `m.f(…)` / `pkg.m.f(…)`,
 * `self.f(…)` / `cls.f(…)`, `C(…)` (a class's `__init__`), and methods called on an instance
 * (wrapperFacts.ts `instanceOf`). Pure; no `vscode` import.
 */
import type { Binding, ModuleRef, ModuleTable } from './pythonModules';
import { defId, type DefId } from './wrapperDerive';
import { instanceOf, type Call, type FileEntry } from './wrapperFacts';

/** What a resolution reads: the module table, a file's facts (parsing it if need be), and where it looked. */
export interface ResolveContext {
  modules: ModuleTable;
  entry: (path: string) => FileEntry | undefined;
  consult: (path: string) => void;
}

/** Resolves calls to defs (see the file comment); stateless between calls but for its context. */
export class CallResolver {
  private readonly modules: ModuleTable;
  private readonly entry: (path: string) => FileEntry | undefined;
  private readonly consult: (path: string) => void;

  constructor(ctx: ResolveContext) {
    this.modules = ctx.modules;
    this.entry = ctx.entry;
    this.consult = ctx.consult;
  }

  /** The def `call` (in file `f`) names, or undefined. */
  resolve(f: FileEntry, call: Call): DefId | undefined {
    const parts = call.callee.split('.');
    const name = parts[parts.length - 1]!;
    if (parts.length === 1) {
      const local = defIn(f, name);
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
    if (parts[0] === 'self' || parts[0] === 'cls') {
      const cls = f.defs[call.def]?.cls;
      if (parts.length === 3 && parts[0] === 'self') return this.instanceMethod(f, call, `self.${parts[1]}`, name);
      if (parts.length !== 2 || !cls) return undefined;
      const key = `${cls}.${name}`;
      return f.defByKey.has(key) ? defId(f.path, key) : undefined;
    }
    const b = f.imports.bindings.get(parts[0]!);
    if (!b && parts.length === 2) return this.instanceMethod(f, call, parts[0]!, name);
    const g = b ? this.moduleOf(f.path, b, parts.slice(1, -1), 0) : undefined;
    return g ? this.lookup(g, name, 0) : undefined;
  }

  /** Method `method` of the class whose instance `receiver` holds at `call` (wrapperFacts.ts `instanceOf`). */
  private instanceMethod(f: FileEntry, call: Call, receiver: string, method: string): DefId | undefined {
    const ctor = instanceOf(f, call, receiver);
    const parts = ctor?.split('.') ?? [];
    const name = parts[parts.length - 1];
    if (!ctor || !name) return undefined;
    let cls: { path: string; name: string } | undefined;
    if (parts.length === 1) {
      const b = f.imports.bindings.get(name);
      cls = f.classes.has(name) ? { path: f.path, name } : b?.kind === 'member' ? this.classIn(f.path, b.ref, b.name, 0) : undefined;
    } else {
      const b = f.imports.bindings.get(parts[0]!);
      const g = b ? this.moduleOf(f.path, b, parts.slice(1, -1), 0) : undefined;
      cls = g ? this.classIn(g, undefined, name, 0) : undefined;
    }
    const key = cls && `${cls.name}.${method}`;
    return cls && key && this.entry(cls.path)?.defByKey.has(key) ? defId(cls.path, key) : undefined;
  }

  /** Class `name` of the module `ref` names from `from` (or of file `from` itself), through re-exports. */
  private classIn(from: string, ref: ModuleRef | undefined, name: string, depth: number): { path: string; name: string } | undefined {
    const path = ref ? this.modules.resolve(from, ref) : from;
    const g = path ? this.entry(path) : undefined;
    if (!path || !g) return undefined;
    this.consult(path);
    if (g.classes.has(name)) return { path, name };
    const b = g.imports.bindings.get(name);
    return b?.kind === 'member' && depth < 4 ? this.classIn(path, b.ref, b.name, depth + 1) : undefined;
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

  /** `name` in module file `path`: defined there, or imported there from another module (re-exports, a few levels). */
  private lookup(path: string, name: string, depth: number): DefId | undefined {
    this.consult(path);
    const g = this.entry(path);
    if (!g) return undefined;
    const d = defIn(g, name);
    if (d || depth >= 4) return d;
    const b = g.imports.bindings.get(name);
    return b?.kind === 'member' ? this.member(path, b.ref, b.name, depth + 1) : undefined;
  }

  private member(from: string, ref: ModuleRef, name: string, depth: number): DefId | undefined {
    const g = this.modules.resolve(from, ref);
    return g ? this.lookup(g, name, depth) : undefined;
  }
}

function defIn(f: FileEntry, name: string): DefId | undefined {
  if (f.functions.has(name)) return defId(f.path, name);
  if (f.classes.has(name) && f.defByKey.has(`${name}.__init__`)) return defId(f.path, `${name}.__init__`);
  return undefined;
}
