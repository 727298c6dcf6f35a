/**
 * Python imports and module files for the wrapper index (wrapperIndex.ts): what a local name is
 * bound to by a file's imports, and which file of the workspace an import names. Pure (no
 * tree-sitter, no `vscode`): an import statement's text is enough, and module names come from
 * file paths.
 *
 * Absolute imports (`megatron.core.parallel_state`) match the trailing folders of a file's path
 * (a workspace has no reliable `sys.path`: `python/sglang/srt/utils.py` answers `sglang.srt.utils`);
 * when several files match, the one that shares the longest folder with the importing file wins.
 * Relative imports (`from .utils import f`, `from .. import x`) are resolved from the importing
 * file's folder, as Python does.
 */
import { dirname, join, sep } from 'node:path';

/** A module as an import names it: `level` 0 = absolute, 1 = `.`, 2 = `..`; `dotted` may be '' (`from . import x`). */
export interface ModuleRef {
  level: number;
  dotted: string;
}

/** What an import binds a local name to: a module (`import a.b as z`) or a name in a module (`from a.b import f`). */
export type Binding = { kind: 'module'; ref: ModuleRef } | { kind: 'member'; ref: ModuleRef; name: string };

/** A file's imports: local name → binding, and the modules of `from m import *`. */
export interface ImportFacts {
  bindings: Map<string, Binding>;
  stars: ModuleRef[];
}

export function emptyImports(): ImportFacts {
  return { bindings: new Map(), stars: [] };
}

const IDENT = /^[A-Za-z_][A-Za-z0-9_]*$/;
const DOTTED = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/**
 * Adds the bindings of one `import` / `from … import` statement (its source text, as tree-sitter
 * delimits it) to `into`. Text that is not an import statement adds nothing.
 */
export function addImport(statement: string, into: ImportFacts): void {
  // Comments and line continuations out, then one line (an import holds no strings).
  const text = statement
    .replace(/#[^\n]*/g, '')
    .replace(/\\\r?\n/g, ' ')
    .replace(/[()]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  const from = /^from (\.*)\s*([A-Za-z0-9_.]*) import (.+)$/.exec(text);
  if (from) {
    const ref: ModuleRef = { level: from[1]!.length, dotted: from[2]! };
    if (ref.dotted !== '' && !DOTTED.test(ref.dotted)) return;
    if (ref.level === 0 && ref.dotted === '') return;
    const names = from[3]!.trim();
    if (names === '*') {
      into.stars.push(ref);
      return;
    }
    for (const part of names.split(',')) {
      const m = /^([A-Za-z_][A-Za-z0-9_]*)(?: as ([A-Za-z_][A-Za-z0-9_]*))?$/.exec(part.trim());
      if (m) into.bindings.set(m[2] ?? m[1]!, { kind: 'member', ref, name: m[1]! });
    }
    return;
  }
  const imp = /^import (.+)$/.exec(text);
  if (!imp) return;
  for (const part of imp[1]!.split(',')) {
    const m = /^([A-Za-z0-9_.]+)(?: as ([A-Za-z_][A-Za-z0-9_]*))?$/.exec(part.trim());
    if (!m || !DOTTED.test(m[1]!)) continue;
    const dotted = m[1]!;
    // `import a.b.c` binds `a` (to the package a); `import a.b as z` binds z to a.b.
    if (m[2]) into.bindings.set(m[2], { kind: 'module', ref: { level: 0, dotted } });
    else {
      const first = dotted.split('.')[0]!;
      into.bindings.set(first, { kind: 'module', ref: { level: 0, dotted: first } });
    }
  }
}

/** The dotted name `callee` means through `imports` (`dist.new_group` → `torch.distributed.new_group`); unchanged when its first name is not imported absolutely. */
export function qualifyCallee(callee: string, imports: ImportFacts): string {
  const dot = callee.indexOf('.');
  const first = dot < 0 ? callee : callee.slice(0, dot);
  const rest = dot < 0 ? '' : callee.slice(dot);
  const b = imports.bindings.get(first);
  if (!b || b.ref.level > 0) return callee;
  const base = b.kind === 'module' ? b.ref.dotted : `${b.ref.dotted}.${b.name}`;
  return `${base}${rest}`;
}

/** Module names kept per file: the last folders of its path (deeper ones never name a module in practice). */
const MAX_MODULE_DEPTH = 10;

/** The module path of a file, as parts: `a/b/c.py` → [a, b, c]; `a/b/__init__.py` → [a, b]. Undefined for a non-Python file. */
function moduleParts(path: string): string[] | undefined {
  if (!path.endsWith('.py')) return undefined;
  const parts = path
    .slice(0, -3)
    .split(sep)
    .filter((p) => p !== '');
  if (parts[parts.length - 1] === '__init__') parts.pop();
  return parts;
}

/** The trailing module names of `path` that are valid dotted names: `c`, `b.c`, `a.b.c`. */
function moduleNames(path: string): string[] {
  const parts = moduleParts(path);
  if (!parts) return [];
  const out: string[] = [];
  for (let i = parts.length - 1; i >= Math.max(0, parts.length - MAX_MODULE_DEPTH); i--) {
    if (!IDENT.test(parts[i]!)) break;
    out.push(parts.slice(i).join('.'));
  }
  return out;
}

function commonPrefixLength(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/**
 * The Python files of a workspace by module name, kept up to date file by file
 * ({@link add} / {@link remove}); {@link resolve} answers which file an import names.
 */
export class ModuleTable {
  private readonly byName = new Map<string, Set<string>>();
  private readonly files = new Set<string>();

  /** Records the Python file at absolute `path` (other files are ignored). */
  add(path: string): void {
    if (this.files.has(path) || !path.endsWith('.py')) return;
    this.files.add(path);
    for (const name of moduleNames(path)) {
      let set = this.byName.get(name);
      if (!set) this.byName.set(name, (set = new Set()));
      set.add(path);
    }
  }

  remove(path: string): void {
    if (!this.files.delete(path)) return;
    for (const name of moduleNames(path)) {
      const set = this.byName.get(name);
      set?.delete(path);
      if (set?.size === 0) this.byName.delete(name);
    }
  }

  /**
   * The file of module `ref` + `extra` (more dotted parts, e.g. from `pkg.sub.f` after `import pkg`)
   * imported from the file at `from`; undefined when no recorded file is that module.
   */
  resolve(from: string, ref: ModuleRef, extra: readonly string[] = []): string | undefined {
    const parts = [...(ref.dotted === '' ? [] : ref.dotted.split('.')), ...extra];
    if (ref.level > 0) {
      let dir = dirname(from);
      for (let i = 1; i < ref.level; i++) dir = dirname(dir);
      const base = join(dir, ...parts);
      if (parts.length > 0 && this.files.has(`${base}.py`)) return `${base}.py`;
      const init = join(base, '__init__.py');
      return this.files.has(init) ? init : undefined;
    }
    if (parts.length === 0) return undefined;
    const found = this.byName.get(parts.join('.'));
    if (!found || found.size === 0) return undefined;
    if (found.size === 1) return found.values().next().value;
    // Several files end with this module path: the nearest to the importing file, then the first by path.
    let best: string | undefined;
    let bestLen = -1;
    for (const candidate of found) {
      const len = commonPrefixLength(dirname(candidate), dirname(from));
      if (len > bestLen || (len === bestLen && best !== undefined && candidate < best)) {
        best = candidate;
        bestLen = len;
      }
    }
    return best;
  }
}
