/**
 * The names under which the wrapper index (wrapperIndex.ts) finds the calls of a def beyond its own:
 * imports under another name, subclasses (which inherit a constructor and methods), module-level
 * holders of an instance. Read from the parsed files' facts (wrapperFacts.ts); pure, no `vscode` import.
 */
import type { FileEntry } from './wrapperFacts';

/**
 * The other names a call of a def may be written with, in the parsed files: an import under another
 * name (`from m import f as g`: `f` → `g`); a class's subclasses, which inherit its `__init__` (`Base`
 * → `Sub`, a call `Sub(…)`), and `__init__` itself (`super().__init__(…)`, `Base.__init__(self, …)`).
 */
export function callAliases(files: Iterable<FileEntry>): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const add = (name: string, alias: string): void => {
    let set = out.get(name);
    if (!set) out.set(name, (set = new Set()));
    set.add(alias);
  };
  for (const f of files) {
    for (const [local, b] of f.imports.bindings) if (b.kind === 'member' && b.name !== local) add(b.name, local);
    for (const [cls, bases] of f.bases)
      for (const b of bases) {
        add(b.slice(b.lastIndexOf('.') + 1), cls);
        add(b.slice(b.lastIndexOf('.') + 1), '__init__');
      }
  }
  return out;
}

/**
 * The names under which the parsed files may reach a class's methods, by the class's name: its
 * subclasses (by the last name of the bases they write, transitively) and the module-level holders
 * of an instance of either (`_TP = GroupCoordinator(…)`). For the wake test (prefilter.ts), a superset.
 */
export function reachedAs(files: Iterable<FileEntry>): (cls: string) => string[] {
  const children = new Map<string, Set<string>>();
  const holders = new Map<string, Set<string>>();
  const add = (m: Map<string, Set<string>>, k: string, v: string): void => {
    let set = m.get(k);
    if (!set) m.set(k, (set = new Set()));
    set.add(v);
  };
  const last = (dotted: string): string => dotted.slice(dotted.lastIndexOf('.') + 1);
  for (const f of files) {
    for (const [c, bases] of f.bases) for (const b of bases) add(children, last(b), c);
    for (const [k, list] of f.instances) if (f.moduleNames.has(k)) for (const i of list) add(holders, last(i.ctor), k);
  }
  return (cls) => {
    const seen = new Set([cls]);
    for (const c of seen) for (const child of children.get(c) ?? []) seen.add(child);
    const out = new Set<string>();
    for (const c of seen) {
      if (c !== cls) out.add(c);
      for (const h of holders.get(c) ?? []) out.add(h);
    }
    return [...out];
  };
}
