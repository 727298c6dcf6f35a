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

/**
 * Which defs of `files` are wrappers (see wrapperIndex.ts): the defs making a lifecycle call
 * themselves, then breadth first, {@link MAX_HOPS} rounds at most, the defs calling them (`callers`:
 * a callee's last name → the paths of the files calling it; `resolve`: the def a call resolves to).
 * A def takes each API once, by its shortest chain, with the lazy group it passes on (wrapperGroups.ts).
 * `aliases` (a name → the names imports bind it to) adds the calls of a def under an imported alias.
 */
export function deriveWrappers(
  files: ReadonlyMap<string, FileEntry>,
  callers: ReadonlyMap<string, ReadonlySet<string>>,
  resolve: (f: FileEntry, call: Call) => DefId | undefined,
  aliases: ReadonlyMap<string, ReadonlySet<string>> = new Map(),
): WrapperTable {
  const calledAs = (name: string): string[] => namesOf(name, aliases);
  const wrappers = new Map<DefId, Wrapper>();
  const entryOf = (f: FileEntry, def: number): Wrapper => {
    const id = defId(f.path, f.defs[def]!.key);
    let w = wrappers.get(id);
    if (!w) wrappers.set(id, (w = { path: f.path, def, inners: [] }));
    return w;
  };
  let frontier = new Set<string>();
  for (const f of files.values()) {
    f.sites.forEach((site, i) => {
      const def = f.siteDefs[i]!;
      if (def < 0 || NOT_A_WRAPPER_ROLE.has(site.role)) return;
      const w = entryOf(f, def);
      if (w.inners.some((x) => x.api === site.api)) return;
      const lazy = f.siteLazy[i];
      w.inners.push({
        api: site.api,
        chain: [f.defs[def]!.display, qualifyCallee(site.written.replace(/\s+/g, ''), f.imports)],
        site,
        ...(lazy ? { lazy } : {}),
        ...(site.role === 'create' && cachedCreation(f.text, site.startIndex, f.defs[def]!.span) ? { cached: true as const } : {}),
      });
      frontier.add(f.defs[def]!.callName);
    });
  }
  // Breadth first: the functions calling the wrappers that gained an API in the last round take
  // the chains that round made (chains of round + 2 links), so a chain grows one link a round.
  for (let round = 0; round < MAX_HOPS && frontier.size > 0; round++) {
    const next = new Set<string>();
    for (const name of [...frontier].flatMap(calledAs)) {
      for (const path of callers.get(name) ?? []) {
        const f = files.get(path)!;
        for (const call of f.calls.get(name) ?? []) {
          if (call.def < 0 || call.notNccl) continue;
          const target = resolve(f, call);
          const callee = target ? wrappers.get(target) : undefined;
          if (!callee) continue;
          const w = entryOf(f, call.def);
          if (w === callee) continue;
          const display = f.defs[call.def]!.display;
          for (const inner of callee.inners) {
            if (inner.chain.length > round + 2 || w.inners.some((x) => x.api === inner.api) || inner.chain.includes(display)) continue;
            const lazy = inner.lazy && lazyAtCall(inner.lazy, f.text, call.start, call.end, f.defs[call.def]?.span);
            // A call passing another backend ("gloo") to the backend the wrapper forwards makes no NCCL group.
            if (lazy === 'notNccl') continue;
            const cached = inner.cached || (inner.site.role === 'create' && cachedCreation(f.text, call.start, f.defs[call.def]!.span));
            w.inners.push({
              api: inner.api,
              chain: [display, ...inner.chain],
              site: inner.site,
              ...(lazy && lazy !== 'eager' && lazy !== 'unknown' ? passedOn(f, call, lazy) : {}),
              ...(cached ? { cached: true as const } : {}),
            });
            next.add(f.defs[call.def]!.callName);
          }
        }
      }
    }
    frontier = next;
  }
  return {
    wrappers,
    names: new Set([...wrappers.values()].flatMap((w) => calledAs(files.get(w.path)!.defs[w.def]!.callName))),
    counts: new Map(),
  };
}
