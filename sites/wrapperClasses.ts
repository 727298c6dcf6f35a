/**
 * What the wrapper index (wrapperIndex.ts) reads of a file's classes beyond their methods: the
 * bases each top-level class names (`class SubCoordinator(GroupCoordinator):`, `class P(mod.Base,
 * Generic[T], metaclass=M)`: the dotted names only), so that a method a class inherits, `super().m(…)`
 * and `cls.m(…)` resolve to the base's def (wrapperResolve.ts); and the callee text of
 * `super().m` / `super(Cls, self).m`, kept as `super.m`, and of a method called on a function's value
 * (`get_tp_group().destroy`), kept as `get_tp_group().destroy`. Pure, from the text; no `vscode` import.
 */

/** A base written as a dotted name (`Base`, `pkg.mod.Base`); subscripts, calls and keywords are not followed. */
const BASE = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/**
 * The bases of the class whose header is `header` (the text from its name to its body: `Sub(Base, m.Mixin):`),
 * in the order written; [] when it names none. Keyword arguments (`metaclass=`) and bases that are not
 * dotted names (`Generic[T]`, `make_base()`) are left out.
 */
export function classBases(header: string): string[] {
  const open = header.indexOf('(');
  const close = header.lastIndexOf(')');
  if (open < 0 || close < open) return [];
  const out: string[] = [];
  let depth = 0;
  let start = open + 1;
  for (let i = open + 1; i <= close; i++) {
    const c = header[i];
    if (c === '(' || c === '[' || c === '{') depth++;
    else if ((c === ')' || c === ']' || c === '}') && i < close) depth--;
    if ((c === ',' && depth === 0) || i === close) {
      const part = header
        .slice(start, i)
        .replace(/#[^\n]*/g, '')
        .replace(/\s+/g, '');
      if (BASE.test(part)) out.push(part);
      start = i + 1;
    }
  }
  return out;
}

/** `super().m` / `super(Cls, self).m` (whitespace removed) → `super.m`; undefined for any other callee. */
export function superCallee(text: string): string | undefined {
  const m = /^super\((?:[A-Za-z_][A-Za-z0-9_.]*,[A-Za-z_][A-Za-z0-9_]*)?\)\.([A-Za-z_][A-Za-z0-9_]*)$/.exec(text);
  return m ? `super.${m[1]!}` : undefined;
}

/**
 * `f(…).m` / `mod.f(…).m` (whitespace removed; arguments without parentheses of their own) →
 * `f().m`: a method called on what a function returns (vLLM's `get_tp_group().destroy()`); undefined otherwise.
 */
export function returnedCallee(text: string): string | undefined {
  const m = /^([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\([^()]*\)\.([A-Za-z_][A-Za-z0-9_]*)$/.exec(text);
  return m && m[1] !== 'super' ? `${m[1]!}().${m[2]!}` : undefined;
}
