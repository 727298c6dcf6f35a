/**
 * The first collective on the default process group after a lazy `init_process_group`: the
 * statements after the init in its function are read in order; a collective that runs on the
 * default group (no `group` argument, or `None` / `WORLD`, or a name bound only to it) is the answer, and a call of a
 * function of the same file (`launch()`, `self.warm_up()`) is followed into that function's body
 * (depth-first, a few levels) before the next statement; when the init's function ends first, the
 * walk goes on after the first call of that function in the file (`setup()` in `main`). Nothing is
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

/** What the walk needs from the scan: the call query (pattern 0 = a call, 4 = a function definition) and a collective test. */
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
 * The first default-group collective reached after [initStart, initEnd) inside `home` (the
 * function around the init; undefined = module level), or undefined.
 */
export function firstDefaultCollective(
  ctx: DefaultGroupContext,
  initEnd: number,
  home: { name: string; start: number; end: number } | undefined,
): DefaultCandidate | undefined {
  const visited = new Set<string>();
  let bodies = 0;
  const callsIn = (start: number, end: number): { fn: Node; args: Node }[] => {
    const out: { fn: Node; args: Node }[] = [];
    const seen = new Set<number>();
    forEachMatch(ctx.query, ctx.tree, [{ start, end }], ctx.scale, (m: QueryMatch) => {
      if (m.patternIndex !== 0) return;
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
  const walk = (start: number, end: number, depth: number): DefaultCandidate | undefined => {
    for (const { fn, args } of callsIn(start, end)) {
      const c = ctx.collectiveAt(fn, args);
      if (c) {
        if (onDefaultGroup(c, ctx.world)) return c;
        continue;
      }
      const written = fn.text.replace(/\s+/g, '');
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
  if (found || !home) return found;
  // Back in the caller: after the first call of the init's function, to the end of the function around it.
  visited.add(home.name);
  const call = firstCallOf(ctx, home);
  return call ? walk(call.end, call.scopeEnd, 1) : undefined;
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
