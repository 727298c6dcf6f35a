/**
 * Which wrapper calls make a lazy NCCL group and return it (RL weight-refit groups: SGLang's,
 * verl's, OpenRLHF's `init_custom_process_group(...)` ending in `_new_process_group_helper(...)`,
 * a `make_group()` ending in `return dist.new_group(...)`), from the text of the wrapper and of
 * the call — never from a name. The wrapper index (wrapperIndex.ts) keeps these facts per
 * function and hands the calls to the finder (ScanOptions `groupMakers`), which follows the
 * returned group to its first collective (groupFlow.ts): that collective pays the lazy init and
 * connect. No `vscode` import.
 *
 * A creation is lazy here when it is `new_group` / `_new_process_group_helper` (the calls that
 * return the group they make) passing no `device_id` (or `device_id=None`), with no warm-up
 * collective after it and nothing else making it eager (CallSite `eager`), and no `**` splat that
 * could carry a `device_id`. `device_id=p` where `p` is a parameter of the wrapper defaulting to
 * `None` is forwarded: then each call decides (passing `p` not `None` makes it eager). The
 * wrapper's own `**kwargs` passed on whole: a call showing a `device_id` there is eager, any
 * other unknown. The group may be returned as an element of a tuple (`return pg, store`). A lazy
 * `init_process_group` in a function returning no value starts the default group lazily.
 */
import type { ApiName } from './apiTypes';
import type { CallSite } from './callSiteTypes';
import { BACKEND_ARG } from './pythonNames';

/** A function's source span: its name's start, its body's start and end (UTF-16 indices). */
export interface DefSpan {
  start: number;
  body: number;
  end: number;
}

/** A parameter of a function: its name, its position among the positional ones (self/cls left out; -1: keyword-only), its default as written. */
interface Param {
  name: string;
  index: number;
  default?: string;
}

/**
 * The group a wrapper returns is lazy (`{}`), or lazy unless the call passes the wrapper's
 * parameter `forwards` (which reaches the creation's `device_id`) with another value than `None`.
 */
export interface LazyGroup {
  forwards?: { param: string; index: number };
  /** The wrapper's parameter that is the creation's backend: a call passing a string naming no NCCL backend (`"gloo"`) makes no NCCL group. */
  backend?: { param: string; index: number };
  /**
   * The wrapper passes its own `**kwargs` (this name) on to the creation: a call passing
   * `device_id=` there (a keyword, or a dict splat naming it) is eager; any other call is unknown.
   */
  kwargs?: string;
  /** The wrapper returns a tuple and the group is this element of it (`return pg, store`: 0). */
  element?: number;
  /** The wrapper starts the default group lazily (`init_process_group` without `device_id`, nothing returned): its first collective follows the call. */
  default?: true;
}

/**
 * The creation APIs whose call returns the group it makes (`_new_process_group_helper`:
 * `(group, store)`; `new_subgroups` and `new_subgroups_by_enumeration`: `(this rank's subgroup,
 * all of them)`: the group first, {@link TUPLE_FIRST}); a `ProcessGroupNCCL` registered in a
 * returned front end: {@link registeredBackendGroup}.
 */
const RETURNS_GROUP: ReadonlySet<string> = new Set(['new_group', '_new_process_group_helper', 'new_subgroups']);
/** The creations that return a tuple whose first element is the group. */
const TUPLE_FIRST: ReadonlySet<string> = new Set(['_new_process_group_helper', 'new_subgroups']);
/** A target that holds a value whole: a name, an attribute, a subscript of one (`cls._cache[key]`). */
const HOLDER = /^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\[[^[\]=]+\])?$/;
const squash = (t: string): string => t.replace(/\s+/g, '');

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Splits `text` at its top-level commas (outside brackets and strings). */
function topLevel(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quote: string | undefined;
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quote) {
      if (ch === '\\') i++;
      else if (ch === quote) quote = undefined;
    } else if (ch === '"' || ch === "'") quote = ch;
    else if ('([{'.includes(ch)) depth++;
    else if (')]}'.includes(ch)) depth--;
    else if (ch === ',' && depth === 0) {
      out.push(text.slice(from, i));
      from = i + 1;
    }
  }
  out.push(text.slice(from));
  return out.map((s) => s.trim()).filter((s) => s !== '');
}

/** The text inside the parentheses that open at or after `from` (to the matching one). */
function parenthesized(text: string, from: number, to: number): string | undefined {
  const open = text.indexOf('(', from);
  if (open < 0 || open >= to) return undefined;
  const close = text.lastIndexOf(')', to);
  return close > open ? text.slice(open + 1, close) : undefined;
}

/** The parameters of the function at `def` (from `def name(…):`). */
function paramsOf(text: string, def: DefSpan): Param[] {
  const header = text.slice(def.start, def.body);
  const open = header.indexOf('(');
  const close = header.lastIndexOf(')');
  if (open < 0 || close < open) return [];
  const out: Param[] = [];
  let index = 0;
  let keywordOnly = false;
  topLevel(header.slice(open + 1, close)).forEach((p, i) => {
    if (p === '/') return;
    if (p.startsWith('*')) {
      keywordOnly = true;
      return;
    }
    const eq = p.indexOf('=');
    const name = (eq < 0 ? p : p.slice(0, eq)).split(':')[0]!.trim();
    if (!NAME.test(name) || (i === 0 && (name === 'self' || name === 'cls'))) return;
    out.push({ name, index: keywordOnly ? -1 : index++, ...(eq >= 0 ? { default: p.slice(eq + 1).trim() } : {}) });
  });
  return out;
}

/**
 * Does the function at `def` return the value of the call starting at `start`? `return f(…)`, or
 * `x = f(…)` / `x, _ = f(…)` (`tuple`: the first element is the value) and a `return x` in its body.
 */
export function returnsValueAt(text: string, start: number, def: DefSpan | undefined, tuple = false): boolean {
  return returnedAt(text, start, def, tuple ? 0 : undefined, true) !== undefined;
}

/**
 * Where the function at `def` returns the group that the call starting at `start` yields
 * (`element`: the group is that element of the tuple the call returns; undefined: the whole value):
 * `return f(…)` returns it as the call does (`{ element }`); `g = f(…)` / `g, s = f(…)` (the
 * target at `element`) then `return g` returns it whole (`{}`), `return g, s` / `return (s, g)`
 * as element 0 / 1 (`{ element: 0 }`); a cache (`cache[key] = f(…)`, or `g = f(…)` then
 * `cache[key] = g`, and `return cache[key]`) returns it whole. Undefined when it is not returned. `single`: a lone name
 * receiving a tuple-returning call holds the group itself (the `_new_process_group_helper` rule of
 * {@link returnsValueAt}).
 */
export function returnedAt(
  text: string,
  start: number,
  def: DefSpan | undefined,
  element?: number,
  single = false,
): { element?: number } | undefined {
  if (!def || start < def.body || start >= def.end) return undefined;
  const before = text.slice(text.lastIndexOf('\n', start - 1) + 1, start);
  if (/(?:^|[^A-Za-z0-9_.])return\s+$/.test(before)) return element === undefined ? {} : { element };
  const m = /^\s*([^=]+?)\s*=\s*$/.exec(before);
  if (!m) return undefined;
  const targets = topLevel(m[1]!.replace(/^\(([\s\S]*)\)$/, '$1')).map(squash);
  if (!targets.every((t) => NAME.test(t) || (targets.length === 1 && HOLDER.test(t)))) return undefined;
  let name: string | undefined;
  let carried: number | undefined;
  if (targets.length === 1) {
    name = targets[0];
    carried = single ? undefined : element;
  } else if (element !== undefined) name = targets[element];
  if (!name) return undefined;
  const returns = new RegExp('^[ \\t]*return[ \\t]+([^#\\n]+?)[ \\t]*(?:#.*)?$', 'gm');
  const body = text.slice(start, def.end);
  // Holders it is stored into whole (`cache[key] = g`): returning one returns it.
  const holders = new Set([name]);
  const stored = new RegExp(`^[ \\t]*([^=\\n]+?)[ \\t]*=[ \\t]*${escape(name)}[ \\t]*(?:#.*)?$`, 'gm');
  for (let h = stored.exec(body); h; h = stored.exec(body)) if (HOLDER.test(squash(h[1]!))) holders.add(squash(h[1]!));
  for (let r = returns.exec(body); r; r = returns.exec(body)) {
    const parts = topLevel(r[1]!.replace(/^\(([\s\S]*)\)$/, '$1')).map(squash);
    if (parts.length === 1 && holders.has(parts[0]!)) return carried === undefined ? {} : { element: carried };
    const at = parts.indexOf(name);
    if (parts.length > 1 && at >= 0 && carried === undefined) return { element: at };
  }
  return undefined;
}

/** The name of the `**kwargs` parameter of the function at `def`, or undefined. */
function kwargsParam(text: string, def: DefSpan): string | undefined {
  const header = text.slice(def.start, def.body);
  const open = header.indexOf('(');
  const close = header.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const p = topLevel(header.slice(open + 1, close)).find((x) => x.startsWith('**'));
  const name = p?.slice(2).split(':')[0]!.trim();
  return name && NAME.test(name) ? name : undefined;
}

/** What a `device_id` value does: `None` leaves it lazy, a parameter of the function (default `None`) forwards it, anything else makes it eager. */
function deviceIdValue(value: string, params: readonly Param[]): LazyGroup | 'eager' {
  if (value === 'None') return {};
  const p = NAME.test(value) ? params.find((x) => x.name === value) : undefined;
  if (p && p.default === 'None') return { forwards: { param: p.name, index: p.index } };
  return 'eager';
}

/**
 * The lazy group that `site` (a finder's site in the function at `def`) makes and the function
 * returns, or undefined: not a creation that returns its group, made eager by the code, or not
 * returned.
 */
export function lazyGroupOf(site: CallSite, text: string, def: DefSpan | undefined): LazyGroup | undefined {
  if (site.api === 'ProcessGroupNCCL') return registeredBackendGroup(site, text, def);
  if (site.api === 'init_process_group') return lazyDefaultGroup(site, text, def);
  if (!def || !RETURNS_GROUP.has(site.api) || site.warmUp?.warm) return undefined;
  const args = parenthesized(text, site.startIndex, site.endIndex);
  if (args === undefined) return undefined;
  const parts = topLevel(args);
  let lazy: LazyGroup = {};
  const device = parts.find((a) => /^device_id\s*=/.test(a));
  if (device) {
    const v = deviceIdValue(device.slice(device.indexOf('=') + 1).trim(), paramsOf(text, def));
    if (v === 'eager') return undefined;
    lazy = v;
  } else if (site.eager === true) return undefined;
  // A `**` splat may carry a device_id, unless it is a dict literal that names none; the wrapper's
  // own `**kwargs` passed on whole leaves it to each call (`kwargs`).
  const splats = parts.filter((a) => a.startsWith('**') && !(/^\*\*\s*\{/.test(a) && !a.includes('device_id')));
  const own = kwargsParam(text, def);
  if (splats.length > 1 || (splats.length === 1 && (device || !own || splats[0]!.slice(2).trim() !== own))) return undefined;
  if (splats.length === 1) lazy = { ...lazy, kwargs: own! };
  const returned = returnedAt(text, site.startIndex, def, TUPLE_FIRST.has(site.api) ? 0 : undefined, true);
  if (!returned) return undefined;
  if (returned.element !== undefined) lazy = { ...lazy, element: returned.element };
  const spec = BACKEND_ARG[site.api as ApiName];
  const backend = spec && argumentValue(parts, spec.keyword, spec.position);
  const p = backend !== undefined && NAME.test(backend) ? paramsOf(text, def).find((x) => x.name === backend) : undefined;
  return p ? { ...lazy, backend: { param: p.name, index: p.index } } : lazy;
}

/** The value a call passes for keyword `keyword` or at positional index `index` (-1: keyword only), as written. */
function argumentValue(parts: readonly string[], keyword: string, index: number): string | undefined {
  const kw = parts.find((a) => new RegExp(`^${escape(keyword)}\\s*=(?!=)`).test(a));
  if (kw) return kw.slice(kw.indexOf('=') + 1).trim();
  const positional: string[] = [];
  for (const a of parts) {
    if (a.startsWith('*')) return undefined;
    if (/^[A-Za-z_][A-Za-z0-9_]*\s*=(?!=)/.test(a)) break;
    positional.push(a);
  }
  return index >= 0 ? positional[index] : undefined;
}

/**
 * A call of a wrapper that returns `lazy`: is the group it makes lazy (`{}`), lazy unless the
 * calling function's own parameter says otherwise (`forwards`, `backend`), eager, unknown (a
 * splat that may carry the device_id), or no NCCL group at all (`notNccl`: the call passes a
 * backend literal naming no NCCL backend, `"gloo"`)?
 * `start`/`end`: the call's callee start and argument-list end; `def`: the calling function
 * (for a forwarded parameter of its own).
 */
export function lazyAtCall(
  lazy: LazyGroup,
  text: string,
  start: number,
  end: number,
  def: DefSpan | undefined,
): LazyGroup | 'eager' | 'unknown' | 'notNccl' {
  const { forwards: fw, backend: bk, kwargs: kw, element } = lazy;
  const out: LazyGroup = { ...(element === undefined ? {} : { element }), ...(lazy.default ? { default: true as const } : {}) };
  if (!fw && !bk && !kw) return out;
  const args = parenthesized(text, start, end);
  if (args === undefined) return 'unknown';
  const parts = topLevel(args);
  const params = def ? paramsOf(text, def) : [];
  if (bk) {
    const value = argumentValue(parts, bk.param, bk.index);
    // A literal backend naming no NCCL one: no NCCL group is made.
    if (value !== undefined && /^['"]/.test(value) && !/nccl/i.test(value)) return 'notNccl';
    const p = value !== undefined && NAME.test(value) ? params.find((x) => x.name === value) : undefined;
    if (p) out.backend = { param: p.name, index: p.index };
  }
  // The wrapper's `**kwargs` reach the creation: only a device_id the call shows decides (eager).
  if (kw) return passesDeviceId(parts, text, start, def) ? 'eager' : 'unknown';
  if (!fw) return out;
  const value = argumentValue(parts, fw.param, fw.index);
  if (value === undefined) return parts.some((a) => a.startsWith('*')) ? 'unknown' : out;
  const v = deviceIdValue(value, params);
  return v === 'eager' ? v : { ...out, ...v };
}

/**
 * A lazy `init_process_group` (the finder's `eager === false`: no `device_id`, no warm-up, no
 * splat) in a function that returns no value (`return` / `return None` only): calling the
 * function starts the default group lazily (`{ default: true }`).
 */
function lazyDefaultGroup(site: CallSite, text: string, def: DefSpan | undefined): LazyGroup | undefined {
  if (!def || site.eager !== false) return undefined;
  return /^[ \t]*return[ \t]+(?!None[ \t]*(?:#.*)?$)[^\s#]/m.test(text.slice(def.body, def.end)) ? undefined : { default: true };
}

/**
 * Does a call (its top-level arguments `parts`, its callee at `start`, in the function at `def`)
 * pass a `device_id` other than `None` into `**kwargs`: `device_id=…` itself, a dict literal
 * naming it splatted (`**{"device_id": d}`, `**dict(device_id=d)`), or `**name` where `name` is
 * bound earlier in the same function to such a dict (`kw = {"device_id": d}` / `kw["device_id"] = d`)?
 */
function passesDeviceId(parts: readonly string[], text: string, start: number, def: DefSpan | undefined): boolean {
  const named = (t: string): boolean => /(?:(['"])device_id\1\s*:|\bdevice_id\s*=)\s*(?!None\b)\S/.test(t);
  for (const a of parts) {
    if (/^device_id\s*=(?!=)/.test(a)) return a.slice(a.indexOf('=') + 1).trim() !== 'None';
    if (!a.startsWith('**')) continue;
    const v = a.slice(2).trim();
    if (/^(?:\{|dict\s*\()/.test(v)) {
      if (named(v)) return true;
    } else if (NAME.test(v) && def && start > def.body) {
      const body = text.slice(def.body, start);
      const bound = new RegExp(`^[ \\t]*${escape(v)}[ \\t]*(?:=[ \\t]*(?:\\{|dict[ \\t]*\\()([^\\n]*)$|\\[[ \\t]*(['"])device_id\\2[ \\t]*\\][ \\t]*=[ \\t]*(?!None\\b)\\S)`, 'gm');
      for (let m = bound.exec(body); m; m = bound.exec(body)) if (m[1] === undefined || named(`{${m[1]}`)) return true;
    }
  }
  return false;
}

/**
 * A `ProcessGroupNCCL` built directly (lazy unless the code connects it: CallSite `eager`), held in
 * a variable that is registered as the backend of a front end the function returns
 * (`backend_class = ProcessGroupNCCL(store, rank, size, options)` …
 * `pg._register_backend(device, backend_type, backend_class)` … `return pg`: vLLM's stateless
 * groups). When it is made in a branch on a parameter compared to `"nccl"`
 * (`elif backend == "nccl":`), that parameter is the backend a call passes.
 */
function registeredBackendGroup(site: CallSite, text: string, def: DefSpan | undefined): LazyGroup | undefined {
  const held = site.assignedTo?.replace(/\s+/g, '');
  if (!def || site.eager !== false || !held || !NAME.test(held)) return undefined;
  const after = text.slice(site.endIndex, def.end);
  const reg = new RegExp(
    `^[ \\t]*([A-Za-z_][A-Za-z0-9_]*)[ \\t]*\\.[ \\t]*_register_backend[ \\t]*\\([^)]*\\b${escape(held)}\\b`,
    'm',
  ).exec(after);
  if (!reg || !new RegExp(`^[ \\t]*return[ \\t]+${escape(reg[1]!)}[ \\t]*(?:#.*)?$`, 'm').test(after)) return undefined;
  // The nearest branch before the creation that tests a parameter against "nccl".
  const before = text.slice(def.body, site.startIndex);
  const branches = [...before.matchAll(/^[ \t]*(?:el)?if[ \t]+([A-Za-z_][A-Za-z0-9_]*)[ \t]*==[ \t]*(['"])nccl\2[ \t]*:/gim)];
  const name = branches[branches.length - 1]?.[1];
  const p = name ? paramsOf(text, def).find((x) => x.name === name) : undefined;
  return p ? { backend: { param: p.name, index: p.index } } : {};
}
