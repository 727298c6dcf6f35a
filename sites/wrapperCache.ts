/**
 * Cached getters (wrapper index, wrapperDerive.ts): a function that creates its group on its first
 * call and returns the cached one after — decorated with a cache (`@functools.lru_cache`,
 * `@cache`, `@cached_property`, …), or the creation stored in what a guard tests (`if _G is None:
 * _G = new_group(…)`, `if not self._pg:`, `if key not in cache: cache[key] = …`, `if not hasattr(self,
 * "_pg"):`, or an early `if _G is not None: return _G` / `if key in cache: return cache[key]`). Its
 * body stays one creation site; its callers may create, on the first call only (CallSite
 * `firstCallOnly`). From the text of the def, never by name. Pure; no `vscode` import.
 */
import { lineStartIndex } from './scanShared';
import type { DefSpan } from './wrapperGroups';

/** A decorator that caches the function's value. */
const CACHE_DECORATOR = /^\s*@\s*(?:[A-Za-z_][\w.]*\.)?(?:lru_cache|cache|cached|memoize|memoized|cached_property)\b/;

const squash = (s: string): string => s.replace(/\s+/g, '');
const indentOf = (line: string): number => /^[ \t]*/.exec(line)?.[0].length ?? 0;

/** The lines of `text` in [from, to), each with its start index. */
function linesIn(text: string, from: number, to: number): { text: string; start: number }[] {
  const out: { text: string; start: number }[] = [];
  let start = lineStartIndex(text, from);
  while (start < to) {
    const nl = text.indexOf('\n', start);
    const end = nl < 0 || nl > to ? to : nl;
    out.push({ text: text.slice(start, end), start });
    if (nl < 0) break;
    start = nl + 1;
  }
  return out;
}

/** Does guard header `line` (an `if …:`) test `target` (or, for a subscript target, its container) for being unset? */
function testsUnset(line: string, target: string, container: string | undefined): boolean {
  let m = /^\s*if\s+(.+?)\s+is\s+None\s*(?:or\b.*)?:/.exec(line);
  if (m && squash(m[1]!) === target) return true;
  m = /^\s*if\s+not\s+(.+?)\s*(?:or\b.*)?:/.exec(line);
  if (m && squash(m[1]!) === target) return true;
  m = /^\s*if\s+not\s+hasattr\s*\(\s*([\w.]+)\s*,\s*['"](\w+)['"]\s*\)\s*:/.exec(line);
  if (m && `${m[1]}.${m[2]}` === target) return true;
  m = /^\s*if\s+(.+?)\s+not\s+in\s+(.+?)\s*:/.exec(line);
  return m !== null && container !== undefined && squash(m[2]!) === container;
}

/** Does the statement at `line` (followed by `next`) return the cached value early (`if _G is not None: return _G`)? */
function returnsCached(line: string, next: string | undefined, target: string, container: string | undefined): boolean {
  const m = /^\s*if\s+(.+?)\s*:\s*(.*)$/.exec(line);
  if (!m) return false;
  const cond = squash(m[1]!);
  const body = m[2]!.trim() || (next ?? '').trim();
  const ret = /^return\s+(.+)$/.exec(body);
  if (!ret) return false;
  const value = squash(ret[1]!);
  if (cond === `${target}isnotNone` || cond === target) return value === target;
  const inCache = container !== undefined ? /^(.+)in(.+)$/.exec(cond) : null;
  return inCache !== null && inCache[2] === container && value.startsWith(`${container}[`);
}

/**
 * Whether the creation (or wrapper call) at `at` in the def at `span` of `text` is cached: the def
 * is decorated with a cache, or the call's value is stored where a guard around it — or an early
 * return before it — tests.
 */
export function cachedCreation(text: string, at: number, span: DefSpan): boolean {
  // Decorators: the lines just above `def`.
  let l = lineStartIndex(text, span.start);
  while (l > 1) {
    const prev = lineStartIndex(text, l - 2);
    const line = text.slice(prev, l - 1);
    if (!/^\s*@/.test(line)) break;
    if (CACHE_DECORATOR.test(line)) return true;
    l = prev;
  }
  // What the call's value is stored in: `_G = `, `self._pg = `, `cache[key] = `.
  const lineStart = lineStartIndex(text, at);
  const stored = /^\s*([A-Za-z_][\w.]*(?:\[[^\]=]*\])?)\s*(?::[^=]*)?=\s*$/.exec(text.slice(lineStart, at));
  if (!stored) return false;
  const target = squash(stored[1]!);
  const container = target.includes('[') ? target.slice(0, target.indexOf('[')) : undefined;
  const lines = linesIn(text, span.body, lineStart);
  // Enclosing guards: each line less indented than the one inside it, up to the def's body.
  let inside = indentOf(text.slice(lineStart, at));
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!.text;
    if (line.trim() === '' || line.trim().startsWith('#') || indentOf(line) >= inside) continue;
    inside = indentOf(line);
    if (testsUnset(line, target, container)) return true;
  }
  // An early return of the cached value before the creation.
  return lines.some((x, i) => returnsCached(x.text, lines[i + 1]?.text, target, container));
}
