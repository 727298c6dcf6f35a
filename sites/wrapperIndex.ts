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
 * without parsing anything (wrapperDerive.ts: from the functions that make a lifecycle call
 * themselves, a chain length at a time, {@link MAX_HOPS} + 2 links at most; a function becomes a
 * wrapper of an API once, by its shortest chain, so cycles end), and after an edit only where it can
 * change (the edited file's functions, those whose resolutions looked into it, the callers of those
 * whose chains changed). Caller sites are built on demand ({@link WrapperIndex.callerSites}).
 *
 * Calls that resolve: `f(…)` (a function of this file, or imported by `from m import f`, through
 * re-exports), `m.f(…)` / `pkg.m.f(…)` (`import pkg.m as m`, `from pkg import m`), `self.f(…)` /
 * `cls.f(…)` (a method of the enclosing class, same file), `C(…)` (a class whose `__init__` is a
 * wrapper), `x.f(…)` / `self.x.f(…)` on an instance (`x = C(…)` in the same function, at module
 * level through `global`, `self.x = C(…)` in the class's methods: wrapperFacts.ts `instanceOf`;
 * `C` as `C(…)` resolves, or a function returning a `C`), a module-level holder of another file,
 * `C.f(…)`, `super().f(…)`, `get_group().f(…)`, the method defined in the class or inherited from a
 * base (wrapperResolve.ts); a wrapper imported under another name. C/C++/CUDA files the same way, by
 * name (cppWrapperFacts.ts: functions, methods, named lambdas; `CppNames` resolves their calls
 * within the file and across the C/C++ files). No `vscode` import.
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
import { ModuleTable } from './pythonModules';
import { CallResolver } from './wrapperResolve';
import {
  callerSite,
  derivationKey,
  FACTS_QUERY,
  pythonFacts,
  surfaceOf,
  type Call,
  type FileEntry,
} from './wrapperFacts';
import { defId, NOT_A_WRAPPER_ROLE, sameAliases, WrapperDerivation, type DefId, type Wrapper, type WrapperTable } from './wrapperDerive';
import { lazyAtCall } from './wrapperGroups';
import { CPP_FACTS_QUERY, cppFacts, CppNames } from './cppWrapperFacts';
import { mayHaveSites, textCalls } from './prefilter';
import { callAliases } from './wrapperNames';
import { reachKey, wokenText, wakeTests, WakeTests, type DormantFile } from './wrapperWake';
import { ResolutionMemo } from './wrapperMemo';

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
  /**
   * How to read the file's text again (the CLI: from disk). Given, a Python file the prefilter
   * turns away keeps only its calls (prefilter.ts `textCalls`), not its text, until it is woken.
   */
  reread?: () => string;
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
  /** Resolutions memoised per call (wrapperMemo.ts): a Python file added or removed (another module table) makes all of them stale. */
  private readonly memo = new ResolutionMemo((f, call) => (f.language === 'python' ? this.resolver.resolve(f, call) : this.cppNames.resolve(f, call)));
  /** groupFirstSites per file entry (a new entry per setFile), for one set of maker calls. */
  private readonly firsts = new WeakMap<FileEntry, { key: string; sites: CallSite[] }>();
  /** The derived table; undefined while a change since the last derivation is not derived yet. */
  private table: WrapperTable | undefined;
  /** The derivation, kept between changes: one updates only the defs {@link pending} names (wrapperDerive.ts). */
  private readonly derivation = new WrapperDerivation();
  /** The next derivation starts from scratch (the module table changed, or nothing was derived yet). */
  private full = true;
  /** Defs whose facts or call resolutions changed since the last derivation. */
  private pending = new Set<DefId>();
  /** The aliases of the last derivation (wrapperNames.ts `callAliases`): the next one compares its own with them. */
  private aliases: Map<string, Set<string>> | undefined;
  /**
   * Files the prefilter turned away (prefilter.ts: no lifecycle name of their own) and no known
   * wrapper's name woke yet: kept as text, parsed when a wrapper's name appears in them
   * ({@link derive}) or a resolution looks into them ({@link entry}).
   */
  private readonly dormant = new Map<string, DormantFile>();
  /** How many dormant files were parsed so far: a derivation during which one was is done again. */
  private woken = 0;
  /** Whether a dormant file's text may call a wrapper of the last derivation (wrapperWake.ts), and what made the tests. */
  private readonly wake = new WakeTests();
  /** Dormant files whose text could not be read again when woken ({@link SetFileOptions.reread}), with why. */
  readonly notReadAgain = new Map<string, string>();
  private aliasesVersion = 0;
  private reachVersion = 0;

  /** C/C++: the defs by name (calls resolve by name), the facts query (compiled on the first C/C++ tree). */
  private readonly cppNames = new CppNames();
  private cppQuery: TsQuery | undefined;

  private readonly resolver = new CallResolver({
    modules: this.modules,
    entry: (path) => this.entry(path),
    consult: (path) => this.memo.consult(path),
    compiled: (name) => this.cppNames.uniqueFree(name),
  });

  private constructor(
    private readonly finder: CallSiteFinder,
    private readonly query: TsQuery,
    private readonly compile: (tree: Tree, source: string) => TsQuery,
  ) {}

  /** An empty index on `finder` (compiles its one query). */
  static async create(finder: CallSiteFinder): Promise<WrapperIndex> {
    const ts = await import('web-tree-sitter');
    const probe = finder.parse('python', '');
    try {
      return new WrapperIndex(finder, new ts.Query(probe.language, FACTS_QUERY), (tree, source) => new ts.Query(tree.language, source));
    } finally {
      probe.delete();
    }
  }

  /**
   * Parses `text` as the file at `path` (incrementally after {@link editFile} when its tree is
   * kept), scans it unless `options.scan` is given, and records its functions, imports and calls,
   * replacing what the index knew of it. Only this file is parsed; the wrappers are re-derived on
   * the next read, from the facts kept of every file. A file with no lifecycle name of its own
   * (prefilter.ts) and no known wrapper's name is not parsed until one of them needs it.
   * @throws Error when tree-sitter returns no tree
   */
  setFile(path: string, language: SourceLanguage, text: string, options: SetFileOptions = {}): void {
    const parse = options.scan !== undefined || options.keepTree === true || mayHaveSites(language, text);
    const dropText = options.reread !== undefined && language === 'python';
    const calls = !parse && language === 'python' && ((this.table && this.wake.python) || dropText) ? textCalls(text) : undefined;
    const cppWakes = !parse && language !== 'python' && this.table !== undefined && this.wake.cpp?.(text) === true;
    if (!parse && !cppWakes && !(calls && this.wake.python?.(calls, text))) {
      // Still dormant: nothing derived looked into it, nothing changes. A new file changes the
      // module table; a parsed one loses its facts (a resolution that needs them wakes it).
      const wasDormant = this.dormant.has(path);
      const parsed = this.files.get(path);
      const wasParsed = parsed !== undefined;
      this.dropTree(path);
      this.forget(path);
      this.dormant.set(path, { language, ...(dropText ? { reread: options.reread } : { text }), ...(calls ? { calls } : {}) });
      this.wake.madeDormant(path);
      if (language === 'python') this.modules.add(path);
      if (!wasDormant && !wasParsed && language === 'python') this.modulesChanged();
      if (wasParsed) this.surfaceChanged(path);
      if (parsed) this.changedDefs(parsed);
      if (reachKey(parsed) !== reachKey(undefined)) this.reachVersion++;
      if (!wasDormant) this.table = undefined;
      return;
    }
    // A dormant file was in the module table already, and no resolution looked into it (one that does wakes it).
    const wasDormant = this.dormant.delete(path);
    this.parseFile(path, language, text, options, false, wasDormant);
  }

  /** The facts of `path`, parsing it first when it is dormant (a resolution looks into it). */
  private entry(path: string): FileEntry | undefined {
    const f = this.files.get(path);
    if (f) return f;
    const d = this.dormant.get(path);
    if (!d) return undefined;
    this.dormant.delete(path);
    this.woken++;
    this.parseFile(path, d.language, wokenText(d, path, this.notReadAgain), {}, true);
    return this.files.get(path);
  }

  private parseFile(path: string, language: SourceLanguage, text: string, options: SetFileOptions, woken = false, wasDormant = woken): void {
    const kept = this.trees.get(path);
    const tree = this.finder.parse(language, text, kept?.edited ? kept.tree : undefined);
    kept?.tree.delete();
    this.trees.delete(path);
    try {
      // A woken file has no lifecycle name of its own (prefilter.ts): the finder would find nothing.
      const sites = woken ? [] : (options.scan ?? this.finder.scan(language, tree, text)).sites;
      const entry: FileEntry =
        language === 'python'
          ? pythonFacts(this.query, tree, text, path, sites)
          : cppFacts((this.cppQuery ??= this.compile(tree, CPP_FACTS_QUERY)), tree, text, path, language, sites);
      const old = this.files.get(path);
      this.forget(path);
      const sameSurface = old !== undefined && surfaceOf(old) === surfaceOf(entry);
      // A dormant file (woken, or set with a lifecycle name now) was in the module table already, and no resolution looked into it.
      if (!old && language === 'python' && !wasDormant) this.modulesChanged();
      else if (!sameSurface) this.surfaceChanged(path);
      // Most edits (typing in a function body) change nothing the wrappers are derived from: the
      // derived table stays (its sites of this file keep their meaning; positions are read anew).
      if (!(sameSurface && this.table && derivationKey(old, this.table.names) === derivationKey(entry, this.table.names))) {
        this.table = undefined;
        if (old) this.changedDefs(old);
        this.changedDefs(entry);
      }
      this.files.set(path, entry);
      if (reachKey(old) !== reachKey(entry)) this.reachVersion++;
      if (language === 'python') this.modules.add(path);
      else {
        // C/C++ calls resolve by name across files: another name table, every resolution again.
        this.cppNames.add(entry);
        if (!sameSurface) this.modulesChanged();
      }
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
    if (reachKey(this.files.get(path)) !== reachKey(undefined)) this.reachVersion++;
    const wasDormant = this.dormant.delete(path);
    if (wasDormant) this.modules.remove(path);
    if (this.forget(path) || wasDormant) {
      this.modulesChanged();
      this.table = undefined;
    }
  }

  /** Every resolution is stale: the next derivation starts from scratch. */
  private modulesChanged(): void {
    this.memo.clear();
    this.full = true;
  }

  /** The resolutions that looked into `path` are stale: their defs are re-derived. */
  private surfaceChanged(path: string): void {
    for (const [call, from] of this.memo.invalidate(path)) {
      const def = this.files.get(from)?.defs[call.def];
      if (def) this.pending.add(defId(from, def.key));
    }
  }

  /** The defs of `f` (as it is, or as it was) are re-derived at the next derivation. */
  private changedDefs(f: FileEntry): void {
    for (const d of f.defs) this.pending.add(defId(f.path, d.key));
  }

  private forget(path: string): boolean {
    const old = this.files.get(path);
    if (!old) return false;
    for (const [name, calls] of old.calls) {
      const set = this.callers.get(name);
      set?.delete(path);
      if (set?.size === 0) this.callers.delete(name);
      this.memo.forget(calls);
    }
    this.files.delete(path);
    this.modules.remove(path);
    if (old.language !== 'python') {
      this.cppNames.remove(old);
      this.modulesChanged();
    }
    return true;
  }

  has(path: string): boolean {
    return this.files.has(path) || this.dormant.has(path);
  }

  /** Paths of the indexed files (parsed or not). */
  paths(): string[] {
    return [...this.files.keys(), ...this.dormant.keys()];
  }

  /** How many indexed files were parsed (the others hold no name that matters; for tests and the benchmark). */
  parsedCount(): number {
    this.derive();
    return this.files.size;
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
    const t = this.derive();
    const f = this.files.get(path);
    if (!f || f.calls.size === 0) return [];
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
    const t = this.derive();
    const f = this.files.get(path);
    if (!f || f.language !== 'python' || f.calls.size === 0) return [];
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
    return this.memo.resolve(f, call);
  }

  /**
   * Which defs are wrappers, re-derived from the per-file facts after any change (wrapperDerive.ts);
   * the dormant files that name one of them are parsed then, and the derivation done again, until
   * a derivation wakes none.
   */
  private derive(): WrapperTable {
    while (!this.table) {
      const woken = this.woken;
      const aliases = callAliases(this.files.values());
      const inputs = { files: this.files, callers: this.callers, resolve: (f: FileEntry, call: Call) => this.resolve(f, call), aliases };
      const dirty = this.pending;
      this.pending = new Set();
      // Another module table may change any resolution: from scratch. Other aliases change which
      // names the wrappers are called by: the update re-derives the callers of those whose changed.
      if (this.full || !this.aliases) {
        this.full = false;
        this.derivation.rebuild(inputs);
      } else {
        const changed = !sameAliases(this.aliases, aliases);
        if (changed) this.aliasesVersion++;
        this.derivation.update(inputs, dirty, changed);
      }
      this.aliases = aliases;
      const t = this.derivation.table();
      // The wake tests, made again when what they are made of changed; the dormant files tested.
      const key = `${this.derivation.version}:${this.aliasesVersion}:${this.reachVersion}`;
      for (const path of this.wake.refresh(key, () => wakeTests(this.files, t, aliases, this.wake.reachedAs(this.reachVersion, this.files)), this.dormant)) {
        const d = this.dormant.get(path);
        if (d && this.wake.wakes(d)) this.entry(path);
      }
      if (this.woken === woken) this.table = t;
    }
    return this.table;
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
    this.cppQuery?.delete();
    this.cppQuery = undefined;
    this.files.clear();
    this.dormant.clear();
    this.callers.clear();
    this.memo.clear();
    this.table = undefined;
    this.full = true;
  }
}

