/**
 * Where a Python process group created by `g = new_group(...)` / `split_group(...)` gets its
 * first collective, across the functions of one file: the variable is followed through plain
 * assignments (`h = g`), attributes (`self.tp_group = new_group(...)`, used in another method
 * of the class), module variables (`global WORLD`), returns (`return g`, `return tp, dp`) and the
 * calls that receive them (`tp, dp = make_groups()`, `pp = self.group()`), and the first
 * collective whose argument is the group is reported. Only a collective call counts: never a
 * return, an assignment or any other mention. When the group cannot be followed to a collective,
 * nothing is reported.
 *
 * One {@link GroupFlow} per scan: it queries the tree only around the names being followed
 * (rangedQuery.ts), each part of the file at most once for all the groups of the file, and keeps
 * what it found as plain data. No `vscode` import.
 */
import type { Node, Query as TsQuery, QueryMatch, Tree } from 'web-tree-sitter';
import { parseParams, receivingParam, type Param } from './flowParams';
import { forEachMatch, mergeRanges, rangesOutside, wordRanges, type TextRange } from './rangedQuery';

/** Pattern indices are used by {@link GroupFlow}. */
export const PY_FLOW_QUERY = `
(return_statement) @return
(assignment left: (_) @lhs right: (_) @rhs)
(function_definition name: (identifier) @fname body: (block) @fbody)
(class_definition body: (block) @cbody)
(call function: (_) @cfn arguments: (argument_list) @cargs)
`;

/** A function of the file: its name and the span of its body (UTF-16 indices). */
export interface FlowFunction {
  name: string;
  start: number;
  end: number;
}

/** A collective call of the file (scanPython's list). */
export interface FlowCollective {
  start: number;
  line: number;
  /** The callee as written, e.g. `dist.all_reduce`. */
  written: string;
  /** The argument list node, and its text. */
  args: Node;
  argsText: string;
}

/** The first collective found on a group. */
export interface FirstCollective {
  /** 0-based line of the collective call. */
  line: number;
  /** The callee as written, e.g. `dist.all_reduce`. */
  call: string;
  /** The function it is in, when inside one. */
  function?: string;
}

/** An expression as plain data: its node type and text, and its elements when tuple-like. */
interface Expr {
  type: string;
  text: string;
  start: number;
  end: number;
  /** `a, b` / `(a, b)` / `[a, b]` (and such targets): the elements. */
  elements?: Expr[];
  /** A call: the last name of its callee (`make_groups` of `self.make_groups(2)`). */
  callee?: string;
  /** A call: what the callee is reached through: `self`/`cls` (a method of this class), another object, or nothing (a bare name). */
  through?: 'self' | 'object' | 'bare';
}

/** What holds the group at some point of the program. */
type Holder =
  /** A variable of a function (or of the module, `scope` undefined), bound at `boundAt`. */
  | { kind: 'name'; name: string; scope: FlowFunction | undefined; boundAt: number }
  /** An attribute path like `self.tp_group` (whitespace removed), within a class body when known. */
  | { kind: 'attr'; text: string; cls: TextRange | undefined }
  /** Function `fn` returns the group: the whole return value, or element `index` of a tuple. */
  | { kind: 'returns'; fn: FlowFunction; index: number | undefined };

/** A call of the file that is not a collective: its callee as written (whitespace removed) and its arguments. */
interface FlowCall {
  callee: string;
  argsText: string;
  args: { index?: number; keyword?: string; value: Expr }[];
}

/** An item of the file with the innermost function and class body around it. */
type Placed<T> = T & { start: number; fn: FlowFunction | undefined; cls: TextRange | undefined };

/** At most this many holders are followed per group (a guard against pathological files). */
const MAX_HOLDERS = 32;
const TUPLES: ReadonlySet<string> = new Set(['expression_list', 'tuple', 'pattern_list', 'tuple_pattern', 'list_pattern', 'list']);

const squash = (s: string): string => s.replace(/\s+/g, '');
/** The last name of a dotted path, its trailing subscripts left out (`groups` of `self.groups[key]`). */
const lastName = (s: string): string => /([A-Za-z_][A-Za-z0-9_]*)\s*$/.exec(s.replace(/(?:\[[^\]]*\]\s*)+$/, ''))?.[1] ?? s;
const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Innermost span containing `index`. */
function innermost<T extends TextRange>(spans: readonly T[], index: number): T | undefined {
  let best: T | undefined;
  for (const s of spans) if (s.start <= index && index < s.end && (!best || s.end - s.start < best.end - best.start)) best = s;
  return best;
}

function exprOf(n: Node, depth = 0): Expr {
  const e: Expr = { type: n.type, text: n.text, start: n.startIndex, end: n.endIndex };
  if (depth === 0 && TUPLES.has(n.type)) e.elements = n.namedChildren.filter((c): c is Node => c !== null && c.type !== 'comment').map((c) => exprOf(c, 1));
  if (n.type === 'call') {
    const callee = n.childForFieldName('function');
    if (callee) {
      const text = squash(callee.text);
      e.callee = lastName(text);
      e.through = !text.includes('.') ? 'bare' : /^(self|cls)\.[A-Za-z_][A-Za-z0-9_]*$/.test(text) ? 'self' : 'object';
    }
  }
  return e;
}

/**
 * A subscript of an attribute (`self.groups[key]`, `self.pgs[0]`): a group kept in a dict or list
 * attribute, followed only to the same expression text (whitespace aside).
 */
const attrSubscript = (e: Expr): boolean => e.type === 'subscript' && /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\[/.test(squash(e.text));

/** The argument values of a call's argument list (positional, and keyword values). */
function argumentValues(args: Node): Expr[] {
  const out: Expr[] = [];
  for (const a of args.namedChildren) {
    if (!a || a.type === 'comment') continue;
    const v = a.type === 'keyword_argument' ? a.childForFieldName('value') : a;
    if (v) out.push(exprOf(v, 1));
  }
  return out;
}

/**
 * Follows the groups of one scanned file to their first collectives. Create one per scan; ask
 * {@link firstCollective} per group.
 */
export class GroupFlow {
  private readonly fns: FlowFunction[];
  private readonly classes: TextRange[] = [];
  /** Each return statement's value, with the function it is in. */
  /** Return values and assignments, each with the function and class body it is in (found once, after its query). */
  private readonly returns: Placed<{ value: Expr }>[] = [];
  private readonly assignments: Placed<{ lhs: Expr; rhs: Expr }>[] = [];
  /** Calls with arguments (a group passed to a function of this file is followed into its parameter). */
  private readonly calls: Placed<FlowCall>[] = [];
  /** Per function: the parameters its `def` header writes (flowParams.ts). */
  private readonly params = new Map<FlowFunction, Param[]>();
  private unplaced: Placed<object>[] = [];
  /** Per function: the class body it is a method of, or null. */
  private readonly methods = new Map<FlowFunction, TextRange | null>();
  private readonly seen = new Set<string>();
  private covered: TextRange[] = [];
  /** Words already queried around (their ranges never change). */
  private readonly words = new Set<string>();
  private readonly args = new Map<number, { values: Expr[]; fn: FlowFunction | undefined }>();
  /** Per word: the collectives, returns and assignments whose text contains it (complete once the word was queried). */
  private readonly byWord = new Map<string, Mentions>();

  /**
   * @param functions the functions the call query already found (more are found here)
   * @param collectives every collective call of the file
   */
  constructor(
    private readonly query: TsQuery,
    private readonly tree: Tree,
    private readonly text: string,
    private readonly scale: number,
    functions: readonly FlowFunction[],
    private readonly collectives: readonly FlowCollective[],
  ) {
    this.fns = [...functions];
  }

  private collect = (m: QueryMatch): void => {
    const c = m.captures;
    const first = c[0]?.node;
    if (!first) return;
    const key = `${m.patternIndex}:${first.startIndex}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    if (m.patternIndex === 0) {
      const value = first.namedChildren.find((x): x is Node => x !== null && x.type !== 'comment');
      if (value) this.place(this.returns, { value: exprOf(value) }, first.startIndex);
    } else if (m.patternIndex === 1) {
      const lhs = c.find((x) => x.name === 'lhs')?.node;
      const rhs = c.find((x) => x.name === 'rhs')?.node;
      if (lhs && rhs) this.place(this.assignments, { lhs: exprOf(lhs), rhs: exprOf(rhs) }, lhs.startIndex);
    } else if (m.patternIndex === 2) {
      const name = c.find((x) => x.name === 'fname')?.node;
      const body = c.find((x) => x.name === 'fbody')?.node;
      if (name && body && !this.fns.some((f) => f.start === body.startIndex)) this.fns.push({ name: name.text, start: body.startIndex, end: body.endIndex });
    } else if (m.patternIndex === 3) {
      const body = c.find((x) => x.name === 'cbody')?.node;
      if (body) this.classes.push({ start: body.startIndex, end: body.endIndex });
    } else {
      const fn = c.find((x) => x.name === 'cfn')?.node;
      const args = c.find((x) => x.name === 'cargs')?.node;
      if (fn && args && args.namedChildCount > 0) this.place(this.calls, { callee: squash(fn.text), argsText: args.text, args: callArguments(args) }, fn.startIndex);
    }
  };

  /** Queries the parts of the file around `word` not queried yet (the functions around them come with them). */
  private queryAround(word: string): void {
    if (this.words.has(word)) return;
    this.words.add(word);
    const ranges = rangesOutside(mergeRanges(wordRanges(this.text, new RegExp(`${escapeRegExp(word)}(?![A-Za-z0-9_])`, 'g'), { tokens: true })), this.covered);
    if (ranges.length === 0) return;
    const done = forEachMatch(this.query, this.tree, ranges, this.scale, this.collect);
    this.covered = mergeRanges([...this.covered, ...done], 0);
    // The functions and classes around what a query found came with the same query.
    for (const x of this.unplaced) {
      x.fn = innermost(this.fns, x.start);
      x.cls = innermost(this.classes, x.start);
    }
    this.unplaced = [];
  }

  private place<T extends object>(list: Placed<T>[], item: T, start: number): void {
    const placed: Placed<T> = { ...item, start, fn: undefined, cls: undefined };
    list.push(placed);
    this.unplaced.push(placed);
  }

  /** The class body `fn` is a method of (defined directly in it), or undefined. */
  private methodOf(fn: FlowFunction): TextRange | undefined {
    let m = this.methods.get(fn);
    if (m === undefined) {
      const cls = innermost(this.classes, fn.start);
      const outer = innermost(this.fns, fn.start - 1);
      m = cls && (!outer || outer.start < cls.start) ? cls : null;
      this.methods.set(fn, m);
    }
    return m ?? undefined;
  }

  /**
   * What mentions `word`: after its query, every return and assignment containing it was
   * collected (it intersects one of the word's ranges), so the lists are complete.
   */
  private mentioning(word: string): Mentions {
    let m = this.byWord.get(word);
    if (!m) {
      this.queryAround(word);
      const has = (t: string): boolean => t.includes(word);
      m = {
        collectives: this.collectives.filter((c) => has(c.argsText)),
        returns: this.returns.filter((r) => has(r.value.text)),
        assignments: this.assignments.filter((a) => has(a.rhs.text)),
        calls: this.calls.filter((c) => has(c.argsText)),
      };
      this.byWord.set(word, m);
    }
    return m;
  }

  private argumentsOf(c: FlowCollective): { values: Expr[]; fn: FlowFunction | undefined } {
    let a = this.args.get(c.start);
    if (!a) this.args.set(c.start, (a = { values: argumentValues(c.args), fn: innermost(this.fns, c.start) }));
    return a;
  }

  /** Where the `def` of `fn` starts (its header runs from there to the body), or undefined when not found. */
  private headerStart(fn: FlowFunction): number | undefined {
    const from = Math.max(0, fn.start - 4000);
    const re = new RegExp(`(?:async\\s+)?def\\s+${escapeRegExp(fn.name)}\\s*\\(`, 'g');
    let at: number | undefined;
    for (let m = re.exec(this.text.slice(from, fn.start)); m; m = re.exec(this.text.slice(from, fn.start))) at = from + m.index;
    return at;
  }

  /** The parameters of `fn` (flowParams.ts), read once. */
  private paramsOf(fn: FlowFunction): Param[] {
    let p = this.params.get(fn);
    if (!p) {
      const at = this.headerStart(fn);
      this.params.set(fn, (p = at === undefined ? [] : parseParams(this.text.slice(at, fn.start))));
    }
    return p;
  }

  /**
   * The function of this file `call` runs: `f(…)` a plain function named f (one of that name, a
   * nested one of the calling function first), `self.f(…)` / `cls.f(…)` a method f of the calling
   * method's class. Undefined for anything else (another object's method, an import).
   */
  private functionCalled(call: Placed<FlowCall>): { fn: FlowFunction; method: boolean } | undefined {
    const bare = /^[A-Za-z_][A-Za-z0-9_]*$/.test(call.callee);
    const own = /^(?:self|cls)\.([A-Za-z_][A-Za-z0-9_]*)$/.exec(call.callee);
    if (bare) {
      const named = this.fns.filter((f) => f.name === call.callee && !this.methodOf(f));
      const nested = named.filter((f) => call.fn && innermost(this.fns, f.start - 1) === call.fn);
      const pick = nested.length === 1 ? nested : named;
      return pick.length === 1 ? { fn: pick[0]!, method: false } : undefined;
    }
    if (own && call.cls) {
      const named = this.fns.filter((f) => f.name === own[1] && this.methodOf(f) === call.cls);
      return named.length === 1 ? { fn: named[0]!, method: true } : undefined;
    }
    return undefined;
  }

  /**
   * The first collective on the group bound to `variable` (an identifier or an attribute path
   * like `self.tp_group`) by the creation call at [createdAt, createdEnd): the first one after
   * the creation in the same function when there is one, else the first in the file's text among
   * those the group was followed to; undefined when it reaches none.
   */
  firstCollective(variable: string, createdAt: number, createdEnd: number): FirstCollective | undefined {
    const { fns, classes } = this;
    this.mentioning(lastName(variable));
    const home = innermost(fns, createdAt);
    let origin: Holder;
    if (variable.includes('.')) origin = { kind: 'attr', text: squash(variable), cls: innermost(classes, createdAt) };
    else {
      // `global g` in the creating function: the module's variable.
      const global = home !== undefined && new RegExp(`^[ \\t]*global\\s[^\\n]*\\b${escapeRegExp(variable)}\\b`, 'm').test(this.text.slice(home.start, createdAt));
      origin = { kind: 'name', name: variable, scope: global ? undefined : home, boundAt: createdEnd };
    }
    return this.follow([origin], home, createdEnd);
  }

  /**
   * The first collective on the group that the call at [start, end) returns (a call of a
   * project's wrapper that makes a lazy group and returns it, as the wrapper index knows it; the
   * caller says which calls those are, this file never guesses by name): followed from what
   * receives the call's value (`self.g = make_group(...)`, `g = make_group(...)`; a function
   * returning the call's value is a wrapper of its own, the index's).
   * `start` is the callee's first character, `end` the end of the argument list (a CallSite's
   * startIndex / endIndex); `callee` the callee as written. Undefined when the value is not bound
   * or the group reaches no collective.
   * @returns the first collective and the name of what first holds the group (`self.g`)
   */
  firstCollectiveOfCall(start: number, end: number, callee: string, element?: number): (FirstCollective & { variable: string }) | undefined {
    const near = this.mentioning(lastName(squash(callee)));
    const home = innermost(this.fns, start);
    const origins: Holder[] = [];
    let variable: string | undefined;
    for (const a of near.assignments) {
      if (a.rhs.start !== start || a.rhs.end !== end) continue;
      // A wrapper returning `(group, store)`: the target at the group's place (`self.pg, self.store = …`).
      const target = element === undefined ? a.lhs : a.lhs.elements?.[element];
      const h = target && this.holderFor(target, a);
      if (h) {
        origins.push(h);
        variable ??= target.text;
      }
    }
    if (variable === undefined) return undefined;
    const first = this.follow(origins, home, end);
    return first && { ...first, variable };
  }

  /** The holder a value is bound to by `lhs` (an identifier or attribute) of an assignment placed in `fn` and `cls`. */
  private holderFor(lhs: Expr, where: { fn: FlowFunction | undefined; cls: TextRange | undefined }): Holder | undefined {
    if (lhs.type === 'identifier') return { kind: 'name', name: lhs.text, scope: where.fn, boundAt: lhs.end };
    if (lhs.type === 'attribute' || attrSubscript(lhs)) return { kind: 'attr', text: squash(lhs.text), cls: where.cls };
    return undefined;
  }

  /**
   * Follows the group from `origins` (what first holds it) to the collectives it reaches; the
   * first after `createdEnd` in `home` (the creating function) when there is one, else the first in
   * the file's text.
   */
  private follow(origins: readonly Holder[], home: FlowFunction | undefined, createdEnd: number): FirstCollective | undefined {
    const within = (span: TextRange | undefined, at: number): boolean => !span || (span.start <= at && at < span.end);
    /**
     * Is `e` a call of `fn`? A method (a function in a class body) is called through `self` or
     * `cls` inside its class, or through another object; a plain function by its bare name or
     * through a module.
     */
    const callOf = (fn: FlowFunction, e: Expr): boolean => {
      if (e.callee !== fn.name) return false;
      const cls = this.methodOf(fn);
      if (cls) return e.through === 'object' || (e.through === 'self' && within(cls, e.start));
      return e.through !== 'self';
    };
    /** Does `e` (in function `at`) denote what `h` holds, at its place in the program? */
    const denotes = (h: Holder, e: Expr, at: FlowFunction | undefined): boolean => {
      if (h.kind === 'name') {
        if (e.type !== 'identifier' || e.text !== h.name) return false;
        // A module variable is read by every function; a function's own only after it is bound.
        if (h.scope === undefined && at !== undefined) return true;
        return at === h.scope && e.start >= h.boundAt;
      }
      if (h.kind === 'attr') return (e.type === 'attribute' || attrSubscript(e)) && squash(e.text) === h.text && within(h.cls, e.start);
      return callOf(h.fn, e);
    };
    const holderFor = (lhs: Expr, where: { fn: FlowFunction | undefined; cls: TextRange | undefined }): Holder | undefined => this.holderFor(lhs, where);

    const holders: Holder[] = [];
    const keys = new Set<string>();
    const add = (h: Holder | undefined): void => {
      if (!h) return;
      const k = h.kind === 'name' ? `n:${h.name}@${h.scope?.start ?? -1}` : h.kind === 'attr' ? `a:${h.text}@${h.cls?.start ?? -1}` : `r:${h.fn.start}:${h.index ?? '*'}`;
      if (keys.has(k) || holders.length >= MAX_HOLDERS) return;
      keys.add(k);
      holders.push(h);
    };
    for (const o of origins) add(o);

    const found: (FirstCollective & { start: number; inHome: boolean })[] = [];
    for (let i = 0; i < holders.length; i++) {
      const h = holders[i]!;
      const word = h.kind === 'name' ? h.name : h.kind === 'attr' ? lastName(h.text) : h.fn.name;
      const near = this.mentioning(word);
      // A tuple element a function returns is no expression of its own: only what receives the call holds it.
      const whole = h.kind !== 'returns' || h.index === undefined;
      if (whole) {
        for (const c of near.collectives) {
          const { values, fn } = this.argumentsOf(c);
          if (!values.some((v) => denotes(h, v, fn))) continue;
          found.push({ line: c.line, call: c.written, ...(fn ? { function: fn.name } : {}), start: c.start, inHome: fn === home && c.start > createdEnd });
        }
        // Passed to a function of this file (`sync(g)`, `self.warm_up(group=g)`): its parameter holds it.
        if (h.kind !== 'returns')
          for (const call of near.calls)
            for (const arg of call.args) {
              if (!denotes(h, arg.value, call.fn)) continue;
              const target = this.functionCalled(call);
              const name = target && receivingParam(this.paramsOf(target.fn), arg, target.method);
              if (target && name) add({ kind: 'name', name, scope: target.fn, boundAt: target.fn.start });
            }
        // A parameter's default (`def log(msg, group=world):` where `world` holds it).
        if (h.kind === 'name')
          for (const fn of this.fns) {
            const p = this.paramsOf(fn).find((x) => x.defaultText === h.name);
            const header = p && this.headerStart(fn);
            if (p && header !== undefined && header >= h.boundAt && innermost(this.fns, header) === h.scope) add({ kind: 'name', name: p.name, scope: fn, boundAt: fn.start });
          }
      }
      for (const r of near.returns) {
        if (!r.fn) continue;
        if (whole && denotes(h, r.value, r.fn)) add({ kind: 'returns', fn: r.fn, index: undefined });
        // `return make_groups()`: the tuple passes through, element `index` with it.
        else if (h.kind === 'returns' && callOf(h.fn, r.value)) add({ kind: 'returns', fn: r.fn, index: h.index });
        else if (h.kind !== 'returns') r.value.elements?.forEach((e, index) => denotes(h, e, r.fn) && add({ kind: 'returns', fn: r.fn!, index }));
      }
      for (const a of near.assignments) {
        if (whole && denotes(h, a.rhs, a.fn)) add(holderFor(a.lhs, a));
        else if (h.kind === 'returns' && h.index !== undefined && callOf(h.fn, a.rhs)) {
          // `tp, dp = make_groups()`: element `index` of the returned tuple.
          const target = a.lhs.elements?.[h.index];
          if (target) add(holderFor(target, a));
        } else if (h.kind !== 'returns' && a.lhs.type === 'attribute' && a.rhs.type === 'list' && a.rhs.elements) {
          // `self.pgs = [g]`: the element read back as `self.pgs[0]`.
          a.rhs.elements.forEach((e, index) => {
            if (denotes(h, e, a.fn)) add({ kind: 'attr', text: `${squash(a.lhs.text)}[${index}]`, cls: a.cls });
          });
        } else if (h.kind !== 'returns' && a.lhs.elements && a.rhs.elements) {
          // `a, b = g, other`: the element that is the group.
          a.rhs.elements.forEach((e, index) => {
            const target = a.lhs.elements![index];
            if (target && denotes(h, e, a.fn)) add(holderFor(target, a));
          });
        }
      }
    }
    if (found.length === 0) return undefined;
    // The first executed after the creation: in the creating function after it, else in a function
    // it calls after it (in the order of those calls), else — only when all are in one function —
    // the first there; never one of several functions only because it comes first in the file.
    const calledAt = (name: string | undefined): number => {
      if (!home || name === undefined) return -1;
      const m = new RegExp(`(?<![A-Za-z0-9_])${escapeRegExp(name)}\\s*\\(`).exec(this.text.slice(createdEnd, home.end));
      return m ? m.index : -1;
    };
    const ranked = found.map((c) => {
      const at = c.inHome ? -1 : calledAt(c.function);
      return { c, rank: c.inHome ? 0 : at >= 0 ? 1 : 2, at };
    });
    ranked.sort((x, y) => x.rank - y.rank || x.at - y.at || x.c.start - y.c.start);
    const top = ranked[0]!;
    if (top.rank === 2 && new Set(ranked.map((r) => r.c.function)).size > 1) return undefined;
    const best = top.c;
    return { line: best.line, call: best.call, ...(best.function !== undefined ? { function: best.function } : {}) };
  }
}

/** What mentions a word: collectives, returns, assignments and calls whose text contains it. */
interface Mentions {
  collectives: FlowCollective[];
  returns: Placed<{ value: Expr }>[];
  assignments: Placed<{ lhs: Expr; rhs: Expr }>[];
  calls: Placed<FlowCall>[];
}

/** The arguments of a call, each with its position (positional ones) or keyword. */
function callArguments(args: Node): FlowCall['args'] {
  const out: FlowCall['args'] = [];
  let index = 0;
  for (const a of args.namedChildren) {
    if (!a || a.type === 'comment') continue;
    if (a.type === 'keyword_argument') {
      const k = a.childForFieldName('name');
      const v = a.childForFieldName('value');
      if (k && v) out.push({ keyword: k.text, value: exprOf(v, 1) });
    } else if (a.type === 'list_splat' || a.type === 'dictionary_splat') {
      index = Number.NaN;
    } else {
      if (!Number.isNaN(index)) out.push({ index, value: exprOf(a, 1) });
      index++;
    }
  }
  return out;
}
