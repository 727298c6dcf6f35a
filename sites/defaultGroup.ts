/**
 * The first collective on the default process group after a lazy `init_process_group`: the
 * statements after the init in its function are read in order; a collective that runs on the
 * default group (no `group` argument, or `None` / `WORLD`, or a name bound only to it) is the answer, and a call of a
 * function of the same file (`launch()`, `self.warm_up()`) is followed into that function's body
 * (depth-first, a few levels) before the next statement; when the init's function ends first, the
 * walk goes on after the first call of that function in the file (`setup()` in `main`). A call
 * through a registry of the file's functions (`REGISTRY[name](…)`, or `fn = REGISTRY[name]` …
 * `fn(…)`, `REGISTRY` a module-level dict literal whose values are all functions of the file) is
 * followed into each registered function: each one's first collective is a first collective (the
 * run calls one of them), and the walk stops there when every one of them reaches one. Nothing is
 * reported when no collective is reached in the file. Queries only the bodies it reads (rangedQuery.ts). No `vscode` import.
 */
import type { Node, Query as TsQuery, QueryMatch, Tree } from 'web-tree-sitter';
import { GROUP_POSITION } from './pythonNames';
import { forEachMatch } from './rangedQuery';
import { escapeRegExp, lastSegment } from './scanShared';

/** A collective call as pythonSites.ts found it. */
export interface DefaultCandidate {
  start: number;
  line: number;
  written: string;
  /** The callee and the argument list. */
  fn: Node;
  args: Node;
}

/** What the walk needs from the scan: the call query (pattern 0 = a call, 4 = a function definition, 5 = a call through a subscript) and a collective test. */
export interface DefaultGroupContext {
  query: TsQuery;
  tree: Tree;
  text: string;
  scale: number;
  /** The collective starting at `start` (its callee), or undefined when the call there is no collective. */
  collectiveAt: (fn: Node, args: Node) => DefaultCandidate | undefined;
  /** Names that hold the default group ({@link worldAliases}). */
  world?: ReadonlySet<string>;
}

const DEF = /^[ \t]*(?:async[ \t]+)?def[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(/gm;
const definitions = new WeakMap<DefaultGroupContext, Map<string, number>>();

/** Each function name defined in the file → the index of its first `def` (one pass over the text per scan). */
function definitionsOf(ctx: DefaultGroupContext): Map<string, number> {
  let d = definitions.get(ctx);
  if (!d) {
    d = new Map();
    DEF.lastIndex = 0;
    for (let m = DEF.exec(ctx.text); m; m = DEF.exec(ctx.text)) if (m[1] && !d.has(m[1])) d.set(m[1], m.index + m[0].indexOf('def'));
    definitions.set(ctx, d);
  }
  return d;
}

/** `NAME = {` at module level, a dict literal of `"key": function` entries up to its closing brace (no nested braces). */
const REGISTRY = /^([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?::[^=\n]*)?=[ \t]*\{([^{}]*)\}/gm;
const REGISTRY_ENTRY = /^\s*(?:"[^"\n]*"|'[^'\n]*'|[A-Za-z_][A-Za-z0-9_.]*)\s*:\s*([A-Za-z_][A-Za-z0-9_]*)\s*$/;
const registries = new WeakMap<DefaultGroupContext, Map<string, string[]>>();

/**
 * The file's registries of functions: each module-level name bound to a dict literal whose values
 * are all names of functions the file defines (`TESTS = {"a": run_a, "b": run_b}`) → those
 * function names, in order. A name bound twice at module level is no registry.
 */
function registriesOf(ctx: DefaultGroupContext): Map<string, string[]> {
  let r = registries.get(ctx);
  if (r) return r;
  r = new Map();
  const twice = new Set<string>();
  const defs = definitionsOf(ctx);
  REGISTRY.lastIndex = 0;
  for (let m = REGISTRY.exec(ctx.text); m; m = REGISTRY.exec(ctx.text)) {
    const name = m[1]!;
    if (r.has(name)) twice.add(name);
    const entries = (m[2] ?? '').replace(/#.*$/gm, '').split(',').filter((e) => e.trim() !== '');
    const fns = entries.map((e) => REGISTRY_ENTRY.exec(e)?.[1]);
    if (fns.length > 0 && fns.every((f): f is string => f !== undefined && defs.has(f))) r.set(name, [...new Set(fns)]);
  }
  for (const n of twice) r.delete(n);
  registries.set(ctx, r);
  return r;
}

/**
 * The registered functions a call `written` (whitespace removed, at `at`) dispatches to:
 * `REG[…](…)` / `REG.get(…)(…)` directly, or a name last bound in its function, before the call,
 * by `name = REG[…]` / `name = REG.get(…)`. Undefined for any other call.
 */
function dispatchedThrough(ctx: DefaultGroupContext, written: string, at: number): string[] | undefined {
  const regs = registriesOf(ctx);
  if (regs.size === 0) return undefined;
  const direct = /^([A-Za-z_][A-Za-z0-9_]*)(?:\[.*\]|\.get\(.*\))$/s.exec(written)?.[1];
  if (direct) return regs.get(direct);
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(written)) return undefined;
  // The text of the call's function before it: from the last `def` line above the call.
  let defAt = 0;
  for (const d of definitionsOf(ctx).values()) if (d < at && d > defAt) defAt = d;
  const scope = ctx.text.slice(defAt, at);
  const re = new RegExp(`^[ \\t]*${escapeRegExp(written)}[ \\t]*=[ \\t]*(.+)$`, 'gm');
  let last: string | undefined;
  for (let m = re.exec(scope); m; m = re.exec(scope)) last = m[1];
  const reg = last && /^([A-Za-z_][A-Za-z0-9_]*)(?:\[|\.get\()/.exec(last.trim())?.[1];
  return reg ? regs.get(reg) : undefined;
}

/** Functions followed at most this deep, and at most this many bodies in all. */
const MAX_DEPTH = 4;
const MAX_BODIES = 24;

const ASSIGNED = /^[ \t]*([A-Za-z_][A-Za-z0-9_.]*)[ \t]*(?::[^=\n]*)?=(?!=)[ \t]*(.*)$/gm;
const DEFAULT_GROUP_VALUE = /^(?:[A-Za-z_][A-Za-z0-9_.]*\.)?(?:WORLD|_get_default_group\(\))$/;

/**
 * The names `text` binds only to the default group (`pg = dist.group.WORLD`,
 * `world = GroupMember.WORLD`, `g = _get_default_group()`), each assigned nothing else anywhere
 * in the file; read from the text, one pass.
 */
export function worldAliases(text: string): Set<string> {
  const world = new Set<string>();
  const other = new Set<string>();
  ASSIGNED.lastIndex = 0;
  for (let m = ASSIGNED.exec(text); m; m = ASSIGNED.exec(text)) {
    const value = (m[2] ?? '').replace(/#.*$/, '').replace(/\s+/g, '');
    (DEFAULT_GROUP_VALUE.test(value) ? world : other).add(m[1] ?? '');
  }
  for (const n of other) world.delete(n);
  return world;
}

/**
 * Does the collective run on the default group (its `group` argument absent, `None`, `…WORLD`,
 * or a name of `world`, those {@link worldAliases} found)?
 */
export function onDefaultGroup(c: DefaultCandidate, world?: ReadonlySet<string>): boolean {
  const name = lastSegment(c.written);
  let positional = 0;
  for (const a of c.args.namedChildren) {
    if (!a || a.type === 'comment') continue;
    if (a.type === 'keyword_argument') {
      if (a.childForFieldName('name')?.text !== 'group') continue;
      const v = a.childForFieldName('value');
      const value = v?.text.replace(/\s+/g, '') ?? '';
      return !v || v.type === 'none' || /(^|\.)WORLD$/.test(value) || world?.has(value) === true;
    }
    if (a.type === 'list_splat' || a.type === 'dictionary_splat') return false;
    positional++;
  }
  return positional <= (GROUP_POSITION[name] ?? 99);
}

/**
 * The first default-group collectives reached after [initStart, initEnd) inside `home` (the
 * function around the init; undefined = module level): one, or one per registered function where
 * the run dispatches through a registry (see the file's header); empty when none is reached.
 */
export function firstDefaultCollectives(
  ctx: DefaultGroupContext,
  initEnd: number,
  home: { name: string; start: number; end: number } | undefined,
): DefaultCandidate[] {
  const visited = new Set<string>();
  /** First collectives of registered functions whose siblings did not all reach one: kept, and the walk goes on. */
  const alternatives: DefaultCandidate[] = [];
  let bodies = 0;
  const callsIn = (start: number, end: number): { fn: Node; args: Node }[] => {
    const out: { fn: Node; args: Node }[] = [];
    const seen = new Set<number>();
    forEachMatch(ctx.query, ctx.tree, [{ start, end }], ctx.scale, (m: QueryMatch) => {
      if (m.patternIndex !== 0 && m.patternIndex !== 5) return;
      const fn = m.captures.find((x) => x.name === 'fn')?.node;
      const args = m.captures.find((x) => x.name === 'args')?.node;
      if (fn && args && fn.startIndex >= start && fn.startIndex < end && !seen.has(fn.startIndex)) {
        seen.add(fn.startIndex);
        out.push({ fn, args });
      }
    });
    return out.sort((a, b) => a.fn.startIndex - b.fn.startIndex);
  };
  /** The body of the file's function `name` (the first definition), via its `def`. */
  const bodyOf = (name: string): { start: number; end: number } | undefined => {
    const at = definitionsOf(ctx).get(name);
    if (at === undefined) return undefined;
    let body: { start: number; end: number } | undefined;
    forEachMatch(ctx.query, ctx.tree, [{ start: at, end: at + 3 }], ctx.scale, (q: QueryMatch) => {
      if (body || q.patternIndex !== 4) return;
      const fname = q.captures.find((x) => x.name === 'fname')?.node;
      const b = q.captures.find((x) => x.name === 'fbody')?.node;
      if (fname?.text === name && b && b.startIndex > at) body = { start: b.startIndex, end: b.endIndex };
    });
    return body;
  };
  const walk = (start: number, end: number, depth: number): DefaultCandidate[] | undefined => {
    for (const { fn, args } of callsIn(start, end)) {
      const c = ctx.collectiveAt(fn, args);
      if (c) {
        if (onDefaultGroup(c, ctx.world)) return [c];
        continue;
      }
      const written = fn.text.replace(/\s+/g, '');
      const registered = depth < MAX_DEPTH ? dispatchedThrough(ctx, written, fn.startIndex) : undefined;
      if (registered) {
        const found: DefaultCandidate[] = [];
        for (const name of registered) {
          const body = visited.has(name) || bodies >= MAX_BODIES ? undefined : bodyOf(name);
          if (!body) continue;
          visited.add(name);
          bodies++;
          found.push(...(walk(body.start, body.end, depth + 1) ?? []));
        }
        if (found.length === registered.length) return found;
        alternatives.push(...found);
        continue;
      }
      const m = /^(?:(?:self|cls)\.)?([A-Za-z_][A-Za-z0-9_]*)$/.exec(written);
      if (!m?.[1] || depth >= MAX_DEPTH || bodies >= MAX_BODIES || visited.has(m[1]) || !definitionsOf(ctx).has(m[1])) continue;
      visited.add(m[1]);
      const body = bodyOf(m[1]);
      if (!body) continue;
      bodies++;
      const found = walk(body.start, body.end, depth + 1);
      if (found) return found;
    }
    return undefined;
  };
  const found = walk(initEnd, home ? home.end : ctx.text.length, 0);
  if (found || !home) return [...alternatives, ...(found ?? [])];
  // Back in the caller: after the first call of the init's function, to the end of the function around it.
  visited.add(home.name);
  const call = firstCallOf(ctx, home);
  return [...alternatives, ...((call ? walk(call.end, call.scopeEnd, 1) : undefined) ?? [])];
}

/** The first call of function `fn` in the file outside its own body: its end, and the end of the function it is in (or of the file). */
function firstCallOf(
  ctx: DefaultGroupContext,
  fn: { name: string; start: number; end: number },
): { end: number; scopeEnd: number } | undefined {
  const re = new RegExp(`(?<![A-Za-z0-9_.])(?:(?:self|cls)\\s*\\.\\s*)?${escapeRegExp(fn.name)}\\s*\\(`, 'g');
  for (let m = re.exec(ctx.text); m; m = re.exec(ctx.text)) {
    const at = m.index;
    if (at >= fn.start && at < fn.end) continue;
    let call: Node | undefined;
    const scopes: { start: number; end: number }[] = [];
    forEachMatch(ctx.query, ctx.tree, [{ start: at, end: at + m[0].length }], ctx.scale, (q: QueryMatch) => {
      if (q.patternIndex === 0) {
        const f = q.captures.find((x) => x.name === 'fn')?.node;
        const args = q.captures.find((x) => x.name === 'args')?.node;
        if (f && args && f.startIndex === at) call = args;
      } else if (q.patternIndex === 4) {
        const b = q.captures.find((x) => x.name === 'fbody')?.node;
        if (b && b.startIndex <= at && at < b.endIndex) scopes.push({ start: b.startIndex, end: b.endIndex });
      }
    });
    if (!call) continue;
    const scope = scopes.sort((a, b) => a.end - a.start - (b.end - b.start))[0];
    return { end: call.endIndex, scopeEnd: scope ? scope.end : ctx.text.length };
  }
  return undefined;
}
