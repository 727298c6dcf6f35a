/**
 * The wrapper index of a workspace: Python functions whose body makes a lifecycle call (as the
 * finder, callSites.ts, reports it) turn their callers into call sites, across the files of the
 * workspace where the import resolves (pythonModules.ts), through several hops:
 * Megatron-LM's `group = create_group(ranks, …)` is a `new_group` call site "via `create_group` →
 * `torch.distributed.new_group`", and so is a call of a function that calls `create_group`.
 *
 * Kept per file (file → its functions and methods, imports, the finder's sites, the calls that
 * may reach another function of the workspace), so an edit re-parses only that file
 * ({@link WrapperIndex.setFile}); which functions are wrappers is then re-derived from these facts
 * without parsing anything (a breadth-first walk from the functions that make a lifecycle call
 * themselves, {@link MAX_HOPS} rounds at most; a function becomes a wrapper of an API once, by its
 * shortest chain, so cycles end). Caller sites are built on demand ({@link WrapperIndex.callerSites}).
 *
 * Calls that resolve: `f(…)` (a function of this file, or imported by `from m import f`, through
 * re-exports), `m.f(…)` / `pkg.m.f(…)` (`import pkg.m as m`, `from pkg import m`), `self.f(…)` /
 * `cls.f(…)` (a method of the enclosing class, same file), `C(…)` (a class whose `__init__` is a
 * wrapper), `x.f(…)` / `self.x.f(…)` on an instance (`x = C(…)` in the same function, at module
 * level through `global`, `self.x = C(…)` in the class's methods: wrapperFacts.ts `instanceOf`;
 * `C` as `C(…)` resolves, the method defined in its class). C/C++ files keep the finder's sites
 * only. No `vscode` import.
 */
import type { Query as TsQuery, Tree } from 'web-tree-sitter';
import {
  treeEditOf,
  type CallSite,
  type CallSiteFinder,
  type GroupMakerCall,
  type ScanResult,
  type SourceLanguage,
  type TextChange,
} from './callSites';
import { ModuleTable, type Binding, type ModuleRef } from './pythonModules';
import {
  callerSite,
  derivationKey,
  FACTS_QUERY,
  instanceOf,
  otherFacts,
  pythonFacts,
  surfaceOf,
  type Call,
  type FileEntry,
} from './wrapperFacts';
import { defId, deriveWrappers, NOT_A_WRAPPER_ROLE, type DefId, type Wrapper, type WrapperTable } from './wrapperDerive';
import { lazyAtCall } from './wrapperGroups';

export { MAX_HOPS } from './wrapperDerive';

import type { WrapperCallSite } from './wrapperTypes';

export type { WrapperCallSite };

/** A function found to be a wrapper (for tests and the benchmark). */
export interface WrapperInfo {
  file: string;
  /** `name`, `Class.name`. */
  key: string;
  line: number;
  /** One chain per API the wrapper reaches, in the order found. */
  chains: { api: string; chain: string[] }[];
}

// ---------------------------------------------------------------------------------------------
// The index

/** Options of {@link WrapperIndex.setFile}. */
export interface SetFileOptions {
  /** The finder's scan of this same text (the editor's), so the file is not scanned twice. */
  scan?: ScanResult;
  /**
   * Keep the tree so the next {@link WrapperIndex.setFile} after {@link WrapperIndex.editFile}
   * re-parses incrementally (open documents); without it a kept tree is dropped.
   */
  keepTree?: boolean;
}

/**
 * The wrappers of one workspace. Create with {@link WrapperIndex.create}; feed it files with
 * {@link setFile} (paths are absolute; the text is the document's, saved or not) and
 * {@link removeFile}; read {@link sites}, {@link callerSites}, {@link wrappers}.
 */
export class WrapperIndex {
  private readonly files = new Map<string, FileEntry>();
  private readonly modules = new ModuleTable();
  /** Last callee name → the files that call it. */
  private readonly callers = new Map<string, Set<string>>();
  /** Trees of open documents, for incremental re-parses. */
  private readonly trees = new Map<string, { tree: Tree; edited: boolean }>();
  /**
   * Resolutions are memoised per call, with the files they looked into: a file whose surface
   * changed (surfaceOf) makes stale the resolutions that looked into it; a Python file added or
   * removed (another module table) makes all of them stale.
   */
  private moduleVersion = 0;
  private readonly dependents = new Map<string, Set<Call>>();
  /** The files the resolution under way looked into. */
  private consulted: string[] | undefined;
  /** groupFirstSites per file entry (a new entry per setFile), for one set of maker calls. */
  private readonly firsts = new WeakMap<FileEntry, { key: string; sites: CallSite[] }>();
  private table: WrapperTable | undefined;

  private constructor(
    private readonly finder: CallSiteFinder,
    private readonly query: TsQuery,
  ) {}

  /** An empty index on `finder` (compiles its one query). */
  static async create(finder: CallSiteFinder): Promise<WrapperIndex> {
    const ts = await import('web-tree-sitter');
    const probe = finder.parse('python', '');
    try {
      return new WrapperIndex(finder, new ts.Query(probe.language, FACTS_QUERY));
    } finally {
      probe.delete();
    }
  }

  /**
   * Parses `text` as the file at `path` (incrementally after {@link editFile} when its tree is
   * kept), scans it unless `options.scan` is given, and records its functions, imports and calls,
   * replacing what the index knew of it. Only this file is parsed; the wrappers are re-derived on
   * the next read, from the facts kept of every file.
   * @throws Error when tree-sitter returns no tree
   */
  setFile(path: string, language: SourceLanguage, text: string, options: SetFileOptions = {}): void {
    const kept = this.trees.get(path);
    const tree = this.finder.parse(language, text, kept?.edited ? kept.tree : undefined);
    kept?.tree.delete();
    this.trees.delete(path);
    try {
      const sites = (options.scan ?? this.finder.scan(language, tree, text)).sites;
      const entry: FileEntry = language === 'python' ? pythonFacts(this.query, tree, text, path, sites) : otherFacts(path, language, sites);
      const old = this.files.get(path);
      this.forget(path);
      const sameSurface = old !== undefined && surfaceOf(old) === surfaceOf(entry);
      if (!old && language === 'python') this.modulesChanged();
      else if (!sameSurface) this.surfaceChanged(path);
      // Most edits (typing in a function body) change nothing the wrappers are derived from: the
      // derived table stays (its sites of this file keep their meaning; positions are read anew).
      if (!(sameSurface && this.table && derivationKey(old, this.table.names) === derivationKey(entry, this.table.names)))
        this.table = undefined;
      this.files.set(path, entry);
      if (language === 'python') this.modules.add(path);
      for (const name of entry.calls.keys()) {
        let set = this.callers.get(name);
        if (!set) this.callers.set(name, (set = new Set()));
        set.add(path);
      }
    } finally {
      if (options.keepTree) this.trees.set(path, { tree, edited: false });
      else tree.delete();
    }
  }

  /** Records VS Code content changes (in event order) on the kept tree of `path`, if any; then call {@link setFile}. */
  editFile(path: string, changes: readonly TextChange[]): void {
    const kept = this.trees.get(path);
    if (!kept) return;
    for (const c of changes) kept.tree.edit(treeEditOf(c));
    kept.edited = true;
  }

  /** Drops the kept tree of `path` (its document closed); the facts stay. */
  dropTree(path: string): void {
    this.trees.get(path)?.tree.delete();
    this.trees.delete(path);
  }

  /** Forgets the file at `path` (deleted, or no longer in the workspace). */
  removeFile(path: string): void {
    this.dropTree(path);
    if (this.forget(path)) {
      this.modulesChanged();
      this.table = undefined;
    }
  }

  private modulesChanged(): void {
    this.moduleVersion++;
    this.dependents.clear();
  }

  private surfaceChanged(path: string): void {
    for (const call of this.dependents.get(path) ?? []) call.resolvedAt = -1;
    this.dependents.delete(path);
  }

  private forget(path: string): boolean {
    const old = this.files.get(path);
    if (!old) return false;
    for (const [name, calls] of old.calls) {
      const set = this.callers.get(name);
      set?.delete(path);
      if (set?.size === 0) this.callers.delete(name);
      for (const call of calls) for (const dep of call.deps ?? []) this.dependents.get(dep)?.delete(call);
    }
    this.files.delete(path);
    this.modules.remove(path);
    return true;
  }

  has(path: string): boolean {
    return this.files.has(path);
  }

  /** Paths of the indexed files. */
  paths(): string[] {
    return [...this.files.keys()];
  }

  /** The finder's own sites of the file (the inner calls of wrappers among them), [] when not indexed. */
  directSites(path: string): CallSite[] {
    return this.files.get(path)?.sites ?? [];
  }

  /**
   * Every call site of the file: the finder's, those made through wrappers, and the first
   * collectives of lazy groups made through wrappers ({@link groupFirstSites}), in source order.
   */
  sites(path: string): (CallSite | WrapperCallSite)[] {
    return [...this.directSites(path), ...this.callerSites(path), ...this.groupFirstSites(path)].sort(
      (a, b) => a.startIndex - b.startIndex,
    );
  }

  /** Every wrapper found, with its chains (for tests and the benchmark). */
  wrappers(): WrapperInfo[] {
    const t = this.derive();
    return [...t.wrappers.values()].map((w) => {
      const def = this.files.get(w.path)!.defs[w.def]!;
      return { file: w.path, key: def.key, line: def.line, chains: w.inners.map((i) => ({ api: i.api, chain: i.chain })) };
    });
  }

  /**
   * The calls of the file that reach a lifecycle call through wrappers: one site per API the
   * callee reaches, with its chain. A call the finder reports itself is not repeated; a call that
   * passes `backend="gloo"` (any literal naming no NCCL backend) is not an NCCL call.
   */
  callerSites(path: string): WrapperCallSite[] {
    const f = this.files.get(path);
    if (!f || f.calls.size === 0) return [];
    const t = this.derive();
    const direct = new Set(f.sites.map((s) => s.startIndex));
    const out: WrapperCallSite[] = [];
    for (const name of t.names) {
      for (const call of f.calls.get(name) ?? []) {
        if (direct.has(call.start) || call.notNccl) continue;
        const target = this.resolve(f, call);
        const w = target ? t.wrappers.get(target) : undefined;
        if (!w || !target) continue;
        const def = this.files.get(w.path)!.defs[w.def]!;
        const calls = this.countCalls(target, w, t);
        for (const inner of w.inners) {
          // The caller decides a group whose device_id or backend the wrapper forwards.
          const lazy = inner.lazy && lazyAtCall(inner.lazy, f.text, call.start, call.end, f.defs[call.def]?.span);
          if (lazy === 'notNccl') continue;
          const site = callerSite(f, call, inner, { file: w.path, line: def.line, calls });
          if (lazy === 'eager') site.eager = true;
          else if (lazy && lazy !== 'unknown') {
            if (lazy.forwards) delete site.eager;
            else site.eager = false;
          }
          out.push(site);
        }
      }
    }
    return out.sort((a, b) => a.startIndex - b.startIndex);
  }

  /**
   * The first collectives of the groups that the file's calls of wrappers make lazily and return
   * (`self.g = init_custom_process_group(...)` … `dist.broadcast(t, group=self.g)` in another
   * method): found by the finder (ScanOptions `groupMakers`, groupFlow.ts) in the file's text,
   * re-parsed unless its tree is kept unedited; kept until the file or the wrappers change. A call
   * that makes the group eager (passes the `device_id` the wrapper forwards) has none.
   */
  groupFirstSites(path: string): CallSite[] {
    const f = this.files.get(path);
    if (!f || f.language !== 'python' || f.calls.size === 0) return [];
    const t = this.derive();
    const makers: GroupMakerCall[] = [];
    for (const name of t.names) {
      for (const call of f.calls.get(name) ?? []) {
        if (call.notNccl) continue;
        const target = this.resolve(f, call);
        const w = target ? t.wrappers.get(target) : undefined;
        const inner = w?.inners.find((i) => i.lazy);
        if (!inner?.lazy) continue;
        const lazy = lazyAtCall(inner.lazy, f.text, call.start, call.end, f.defs[call.def]?.span);
        if (lazy === 'eager' || lazy === 'unknown' || lazy === 'notNccl' || lazy.forwards) continue;
        makers.push({
          startIndex: call.start,
          endIndex: call.end,
          written: call.callee,
          line: call.line,
          api: inner.api as GroupMakerCall['api'],
          ...(lazy.element !== undefined ? { element: lazy.element } : {}),
        });
      }
    }
    if (makers.length === 0) return [];
    makers.sort((a, b) => a.startIndex - b.startIndex);
    const key = makers.map((m) => `${m.startIndex}:${m.api}`).join('|');
    const memo = this.firsts.get(f);
    if (memo?.key === key) return memo.sites;
    const kept = this.trees.get(path);
    const tree = kept && !kept.edited ? kept.tree : this.finder.parse('python', f.text);
    try {
      const direct = new Set(f.sites.filter((s) => s.role === 'firstCollective').map((s) => s.startIndex));
      const sites = this.finder
        .scan('python', tree, f.text, { groupMakers: makers })
        .sites.filter((s) => s.role === 'firstCollective' && !direct.has(s.startIndex));
      this.firsts.set(f, { key, sites });
      return sites;
    } finally {
      if (tree !== kept?.tree) tree.delete();
    }
  }

  /** The def a call resolves to (see the file comment), or undefined; memoised until a file it looked into changes its surface. */
  private resolve(f: FileEntry, call: Call): DefId | undefined {
    if (call.resolvedAt !== this.moduleVersion) {
      const consulted: string[] = [];
      this.consulted = consulted;
      try {
        call.resolved = this.resolveNow(f, call);
      } finally {
        this.consulted = undefined;
      }
      call.resolvedAt = this.moduleVersion;
      for (const dep of call.deps ?? []) this.dependents.get(dep)?.delete(call);
      const deps = [...new Set(consulted)].filter((p) => p !== f.path);
      if (deps.length > 0) call.deps = deps;
      else delete call.deps;
      for (const dep of deps) {
        let set = this.dependents.get(dep);
        if (!set) this.dependents.set(dep, (set = new Set()));
        set.add(call);
      }
    }
    return call.resolved;
  }

  private resolveNow(f: FileEntry, call: Call): DefId | undefined {
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
    return cls && key && this.files.get(cls.path)?.defByKey.has(key) ? defId(cls.path, key) : undefined;
  }

  /** Class `name` of the module `ref` names from `from` (or of file `from` itself), through re-exports. */
  private classIn(from: string, ref: ModuleRef | undefined, name: string, depth: number): { path: string; name: string } | undefined {
    const path = ref ? this.modules.resolve(from, ref) : from;
    const g = path ? this.files.get(path) : undefined;
    if (!path || !g) return undefined;
    this.consulted?.push(path);
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
    if (pkg) this.consulted?.push(pkg);
    const inner = pkg ? this.files.get(pkg)?.imports.bindings.get(b.name) : undefined;
    return pkg && inner ? this.moduleOf(pkg, inner, extra, depth + 1) : undefined;
  }

  /** `name` in module file `path`: defined there, or imported there from another module (re-exports, a few levels). */
  private lookup(path: string, name: string, depth: number): DefId | undefined {
    this.consulted?.push(path);
    const g = this.files.get(path);
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

  /** Which defs are wrappers, re-derived from the per-file facts after any change (no parsing; wrapperDerive.ts). */
  private derive(): WrapperTable {
    return (this.table ??= deriveWrappers(this.files, this.callers, (f, call) => this.resolve(f, call)));
  }

  /** How many lifecycle calls the wrapper's body makes: the finder's sites in it and its calls of wrappers. */
  private countCalls(id: DefId, w: Wrapper, t: WrapperTable): number {
    const known = t.counts.get(id);
    if (known !== undefined) return known;
    const f = this.files.get(w.path)!;
    let n = f.siteDefs.filter((d, i) => d === w.def && !NOT_A_WRAPPER_ROLE.has(f.sites[i]!.role)).length;
    for (const name of t.names)
      for (const call of f.calls.get(name) ?? []) {
        if (call.def !== w.def || call.notNccl) continue;
        const target = this.resolve(f, call);
        if (target && t.wrappers.has(target)) n++;
      }
    t.counts.set(id, n);
    return n;
  }

  /** Frees the query and the kept trees (the finder is the caller's). */
  dispose(): void {
    for (const path of [...this.trees.keys()]) this.dropTree(path);
    this.query.delete();
    this.files.clear();
    this.callers.clear();
    this.dependents.clear();
    this.table = undefined;
  }
}

function defIn(f: FileEntry, name: string): DefId | undefined {
  if (f.functions.has(name)) return defId(f.path, name);
  if (f.classes.has(name) && f.defByKey.has(`${name}.__init__`)) return defId(f.path, `${name}.__init__`);
  return undefined;
}
