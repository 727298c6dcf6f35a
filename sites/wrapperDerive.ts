/**
 * The derivation of the wrapper index (wrapperIndex.ts): which functions are wrappers of which
 * lifecycle APIs, with their chains and the lazy groups they pass on, from the per-file facts
 * (wrapperFacts.ts) alone — no parsing. Pure; no `vscode` import.
 */
import type { CallSite } from './callSites';
import { qualifyCallee } from './pythonModules';
import { passedOn, type Call, type FileEntry } from './wrapperFacts';
import { lazyAtCall, type LazyGroup } from './wrapperGroups';
import { cachedCreation } from './wrapperCache';

/** Rounds of the walk from direct wrappers to their callers' functions: a chain has at most this + 2 links. */
export const MAX_HOPS = 4;

export type DefId = string;
export const defId = (path: string, key: string): DefId => `${path}\u0000${key}`;

export interface Inner {
  api: string;
  chain: string[];
  /** The finder's site at the end of the chain. */
  site: CallSite;
  /** The wrapper returns the group that site makes, lazily, or starts the default group lazily (wrapperGroups.ts). */
  lazy?: LazyGroup;
  /** A link of the chain is a cached getter (wrapperCache.ts): a call creates on the first call only. */
  cached?: true;
}
export interface Wrapper {
  path: string;
  def: number;
  inners: Inner[];
}

/** Roles whose call sites do not make their function a wrapper: a group's first collective belongs to that group. */
export const NOT_A_WRAPPER_ROLE: ReadonlySet<string> = new Set(['firstCollective']);

/**
 * `name` and the names it is imported as elsewhere (`from m import create_group as make`, also
 * through a re-export under another name): what a call of it may be written as. `aliases`: a
 * name → the local names imports bind it to (wrapperIndex.ts `importAliases`).
 */
export function namesOf(name: string, aliases: ReadonlyMap<string, ReadonlySet<string>>): string[] {
  const seen = new Set([name]);
  for (const n of seen) for (const a of aliases.get(n) ?? []) seen.add(a);
  return [...seen];
}

/** The derived wrappers by def, their callable names (imported aliases included), and the memo of their lifecycle-call counts. */
export interface WrapperTable {
  wrappers: Map<DefId, Wrapper>;
  names: Set<string>;
  counts: Map<DefId, number>;
}

/** Whether two alias maps (wrapperNames.ts `callAliases`) bind the same names. */
export function sameAliases(a: ReadonlyMap<string, ReadonlySet<string>>, b: ReadonlyMap<string, ReadonlySet<string>>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) {
    const w = b.get(k);
    if (!w || w.size !== v.size) return false;
    for (const x of v) if (!w.has(x)) return false;
  }
  return true;
}

/** What a derivation reads: the per-file facts, the callers by name, the resolution of a call, the import aliases. */
export interface DeriveInputs {
  files: ReadonlyMap<string, FileEntry>;
  /** A callee's last name → the paths of the files calling it. */
  callers: ReadonlyMap<string, ReadonlySet<string>>;
  /** The def a call resolves to (memoised by the index; may parse a dormant file). */
  resolve: (f: FileEntry, call: Call) => DefId | undefined;
  /** A name → the names imports and subclasses bind it to (wrapperNames.ts `callAliases`). */
  aliases: ReadonlyMap<string, ReadonlySet<string>>;
}

/**
 * Which defs of `files` are wrappers, derived from scratch (see {@link WrapperDerivation}: the same
 * rule, over every def).
 */
export function deriveWrappers(
  files: ReadonlyMap<string, FileEntry>,
  callers: ReadonlyMap<string, ReadonlySet<string>>,
  resolve: (f: FileEntry, call: Call) => DefId | undefined,
  aliases: ReadonlyMap<string, ReadonlySet<string>> = new Map(),
): WrapperTable {
  const d = new WrapperDerivation();
  d.rebuild({ files, callers, resolve, aliases });
  return d.table();
}

/** A call of a def, with the name it is kept under in its file's `calls` (its callee's last name). */
interface NamedCall {
  name: string;
  call: Call;
}

/** The calls of each def of a file, in source order (memo per file entry). */
const callsByDef = new WeakMap<FileEntry, Map<number, NamedCall[]>>();
function callsOf(f: FileEntry, def: number): readonly NamedCall[] {
  let m = callsByDef.get(f);
  if (!m) {
    m = new Map();
    for (const [name, calls] of f.calls)
      for (const call of calls) {
        if (call.def < 0) continue;
        let list = m.get(call.def);
        if (!list) m.set(call.def, (list = []));
        list.push({ name, call });
      }
    for (const list of m.values()) list.sort((a, b) => a.call.start - b.call.start);
    callsByDef.set(f, m);
  }
  return m.get(def) ?? [];
}

/** The indices of the finder's sites of each def of a file, in the file's site order (memo per file entry). */
const sitesByDef = new WeakMap<FileEntry, Map<number, number[]>>();
function sitesOf(f: FileEntry, def: number): readonly number[] {
  let m = sitesByDef.get(f);
  if (!m) {
    m = new Map();
    f.siteDefs.forEach((d, i) => {
      if (d < 0) return;
      let list = m!.get(d);
      if (!list) m!.set(d, (list = []));
      list.push(i);
    });
    sitesByDef.set(f, m);
  }
  return m.get(def) ?? [];
}

const sameInner = (a: Inner, b: Inner): boolean =>
  a.api === b.api &&
  a.site === b.site &&
  a.cached === b.cached &&
  a.chain.length === b.chain.length &&
  a.chain.every((x, i) => x === b.chain[i]) &&
  JSON.stringify(a.lazy ?? null) === JSON.stringify(b.lazy ?? null);
const sameInners = (a: readonly Inner[], b: readonly Inner[]): boolean => a.length === b.length && a.every((x, i) => sameInner(x, b[i]!));
const sameNames = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x) => b.includes(x));
const ofLength = (inners: readonly Inner[], n: number): Inner[] => inners.filter((i) => i.chain.length === n);

/**
 * The wrapper table of a workspace, derived from scratch ({@link rebuild}) or updated after some
 * defs changed ({@link update}), with the same result either way. The rule, per def and per chain
 * length L (2 … {@link MAX_HOPS} + 2), so that a def's result depends only on its own facts and on
 * its callees' results at length L − 1:
 * - length 2: the finder's sites in the def (roles other than {@link NOT_A_WRAPPER_ROLE}), in the
 *   file's site order, one per API;
 * - length L: the def's calls in source order (not `notNccl`) whose callee resolves to another def C
 *   with chains of length L − 1, written with a name C is called as (`namesOf` its call name); for
 *   each of C's chains of that length, in C's order, an API the def has no chain for yet, unless the
 *   chain already passes through the def's display name (cycles) or the call passes another backend
 *   to the one the wrapper forwards (wrapperGroups.ts `lazyAtCall`).
 * A def's chains are kept shortest first. A def with no chain is not a wrapper.
 *
 * An update re-derives, length by length, only the defs whose result can change: the defs given
 * (a changed file's, those with a call whose resolution was re-done), the defs whose result changed
 * at a shorter length, and the callers of a def whose chains of the length below changed (found by
 * name through `callers`, then resolved). Everything else keeps its result. Pure; no `vscode` import.
 */
export class WrapperDerivation {
  private readonly wrappers = new Map<DefId, Wrapper>();
  /** Each wrapper's call name (its callers are looked up by it, also once it is gone) and the names it is called as. */
  private readonly meta = new Map<DefId, { callName: string; names: readonly string[] }>();
  /** How many wrappers each name may call (the names of {@link table}). */
  private readonly nameRefs = new Map<string, number>();
  private readonly names = new Set<string>();
  /** Counts the changes of which defs are wrappers (a def becoming one, or ceasing to be one). */
  version = 0;

  /** The current table: live maps (another derivation changes them); a fresh memo of counts. */
  table(): WrapperTable {
    return { wrappers: this.wrappers, names: this.names, counts: new Map() };
  }

  /** Derives every def of `inputs.files` from scratch. */
  rebuild(inputs: DeriveInputs): void {
    this.wrappers.clear();
    this.meta.clear();
    this.version++;
    this.nameRefs.clear();
    this.names.clear();
    this.run(inputs, new Set(), true);
  }

  /**
   * Re-derives after a change: `dirty` holds the defs whose facts or call resolutions changed
   * since the last derivation (defs that are gone included); `aliasesChanged`: `inputs.aliases`
   * differ from the last derivation's (the wrappers whose names changed have their callers, by
   * the names before and after, re-derived).
   */
  update(inputs: DeriveInputs, dirty: ReadonlySet<DefId>, aliasesChanged = false): void {
    this.run(inputs, dirty, false, aliasesChanged);
  }

  private run(inputs: DeriveInputs, given: ReadonlySet<DefId>, all: boolean, aliasesChanged = false): void {
    const { files, resolve, aliases } = inputs;
    const memo = new Map<string, string[]>();
    const calledAs = (name: string): string[] => {
      let n = memo.get(name);
      if (!n) memo.set(name, (n = namesOf(name, aliases)));
      return n;
    };
    const locate = (id: DefId): { f: FileEntry; def: number } | undefined => {
      const cut = id.indexOf('\u0000');
      const f = files.get(id.slice(0, cut));
      const def = f?.defByKey.get(id.slice(cut + 1));
      return f && def !== undefined ? { f, def } : undefined;
    };
    // The defs whose result differs from the table's: their chains at the lengths derived so far.
    const next = new Map<DefId, Inner[]>();
    const old = (id: DefId): readonly Inner[] => this.wrappers.get(id)?.inners ?? [];
    const current = (id: DefId): readonly Inner[] => next.get(id) ?? old(id);
    // Names a changed def may be called by (besides the table's): which calls are worth resolving.
    const extra = new Set<string>();
    const ctx: Ctx = { resolve, calledAs, locate, current, extra };
    const every = new Set(given);
    if (aliasesChanged)
      for (const [id, { callName, names }] of this.meta) {
        const now = calledAs(callName);
        if (sameNames(now, names)) continue;
        // Its calls written with a name it had or has now: their eligibility may have changed.
        every.add(id);
        for (const n of now) extra.add(n);
        for (const caller of this.callersOf(id, inputs, ctx, [...new Set([...names, ...now])])) every.add(caller);
      }
    const changedTo = (id: DefId, inners: Inner[], at: { f: FileEntry; def: number } | undefined): void => {
      next.set(id, inners);
      if (at) for (const n of calledAs(at.f.defs[at.def]!.callName)) extra.add(n);
    };

    // Length 2: the defs' own lifecycle calls.
    let changed = new Set<DefId>();
    const seeds = new Set(every);
    if (all) for (const f of files.values()) for (const d of f.siteDefs) if (d >= 0) seeds.add(defId(f.path, f.defs[d]!.key));
    for (const id of seeds) {
      const at = locate(id);
      const fresh = at ? this.direct(at.f, at.def) : [];
      if (!sameInners(fresh, ofLength(old(id), 2))) {
        changedTo(id, fresh, at);
        changed.add(id);
      }
    }

    // Longer chains, a length at a time: a def's chains of length L take its callees' of L − 1.
    for (let length = 3; length <= MAX_HOPS + 2; length++) {
      const dirty = new Set<DefId>([...every, ...next.keys()]);
      for (const id of changed) for (const caller of this.callersOf(id, inputs, ctx)) dirty.add(caller);
      if (dirty.size === 0) break;
      const now = new Set<DefId>();
      for (const id of dirty) {
        const at = locate(id);
        const lower = current(id).filter((i) => i.chain.length < length);
        const fresh = at ? this.longer(at.f, at.def, id, length, lower, ctx) : [];
        const touched = next.get(id);
        if (!sameInners(fresh, ofLength(old(id), length))) now.add(id);
        if (touched) touched.push(...fresh);
        else if (now.has(id)) changedTo(id, [...lower, ...fresh], at);
      }
      changed = now;
    }

    // The table: the changed defs' results, and the given defs' places (a def's index may move in its file).
    for (const id of new Set([...every, ...next.keys()])) {
      const at = locate(id);
      const inners = current(id);
      if (!at || inners.length === 0) {
        if (this.wrappers.delete(id)) this.version++;
        if (this.meta.has(id)) this.countNames(id, undefined, []);
        continue;
      }
      const callName = at.f.defs[at.def]!.callName;
      if (!this.wrappers.has(id)) this.version++;
      this.wrappers.set(id, { path: at.f.path, def: at.def, inners: [...inners] });
      const meta = this.meta.get(id);
      if (meta?.callName !== callName || !sameNames(meta.names, calledAs(callName))) this.countNames(id, callName, calledAs(callName));
    }
  }

  private countNames(id: DefId, callName: string | undefined, names: readonly string[]): void {
    const was = this.meta.get(id);
    for (const n of was?.names ?? []) {
      const c = (this.nameRefs.get(n) ?? 0) - 1;
      if (c > 0) this.nameRefs.set(n, c);
      else {
        this.nameRefs.delete(n);
        this.names.delete(n);
      }
    }
    if (callName === undefined) {
      this.meta.delete(id);
      return;
    }
    this.meta.set(id, { callName, names });
    for (const n of names) {
      this.nameRefs.set(n, (this.nameRefs.get(n) ?? 0) + 1);
      this.names.add(n);
    }
  }

  /** The def's chains of length 2: its own lifecycle calls, one per API, in the file's site order. */
  private direct(f: FileEntry, def: number): Inner[] {
    const out: Inner[] = [];
    const d = f.defs[def]!;
    for (const i of sitesOf(f, def)) {
      const site = f.sites[i]!;
      if (NOT_A_WRAPPER_ROLE.has(site.role) || out.some((x) => x.api === site.api)) continue;
      const lazy = f.siteLazy[i];
      out.push({
        api: site.api,
        chain: [d.display, qualifyCallee(site.written.replace(/\s+/g, ''), f.imports)],
        site,
        ...(lazy ? { lazy } : {}),
        ...(site.role === 'create' && cachedCreation(f.text, site.startIndex, d.span) ? { cached: true as const } : {}),
      });
    }
    return out;
  }

  /** The def's chains of `length` (≥ 3), given its shorter ones (`lower`): see the class comment. */
  private longer(f: FileEntry, def: number, id: DefId, length: number, lower: readonly Inner[], ctx: Ctx): Inner[] {
    const have = new Set(lower.map((i) => i.api));
    const d = f.defs[def]!;
    const out: Inner[] = [];
    for (const { name, call } of callsOf(f, def)) {
      if (call.notNccl || !(this.names.has(name) || ctx.extra.has(name))) continue;
      const target = ctx.resolve(f, call);
      if (!target || target === id) continue;
      const callee = ofLength(ctx.current(target), length - 1);
      if (callee.length === 0) continue;
      const at = ctx.locate(target);
      if (!at || !ctx.calledAs(at.f.defs[at.def]!.callName).includes(name)) continue;
      for (const inner of callee) {
        if (have.has(inner.api) || inner.chain.includes(d.display)) continue;
        const lazy = inner.lazy && lazyAtCall(inner.lazy, f.text, call.start, call.end, d.span);
        // A call passing another backend ("gloo") to the backend the wrapper forwards makes no NCCL group.
        if (lazy === 'notNccl') continue;
        const cached = inner.cached || (inner.site.role === 'create' && cachedCreation(f.text, call.start, d.span));
        out.push({
          api: inner.api,
          chain: [d.display, ...inner.chain],
          site: inner.site,
          ...(lazy && lazy !== 'eager' && lazy !== 'unknown' ? passedOn(f, call, lazy) : {}),
          ...(cached ? { cached: true as const } : {}),
        });
        have.add(inner.api);
      }
    }
    return out;
  }

  /**
   * The defs with a call that resolves to `id`, written with a name it is called as (its call
   * name now, else the one it had when it was a wrapper). Resolves those calls (memoised by the index).
   */
  private callersOf(id: DefId, inputs: DeriveInputs, ctx: Ctx, names?: readonly string[]): Set<DefId> {
    const out = new Set<DefId>();
    const at = ctx.locate(id);
    const callName = at ? at.f.defs[at.def]!.callName : this.meta.get(id)?.callName;
    if (callName === undefined) return out;
    for (const name of names ?? ctx.calledAs(callName))
      for (const path of inputs.callers.get(name) ?? []) {
        const f = inputs.files.get(path);
        if (!f) continue;
        for (const call of f.calls.get(name) ?? []) {
          if (call.def < 0 || call.notNccl) continue;
          if (ctx.resolve(f, call) === id) out.add(defId(f.path, f.defs[call.def]!.key));
        }
      }
    return out;
  }
}

/** What the steps of one derivation share. */
interface Ctx {
  resolve: DeriveInputs['resolve'];
  calledAs: (name: string) => string[];
  locate: (id: DefId) => { f: FileEntry; def: number } | undefined;
  /** A def's chains as derived so far in this derivation. */
  current: (id: DefId) => readonly Inner[];
  extra: Set<string>;
}
