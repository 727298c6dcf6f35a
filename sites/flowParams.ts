/**
 * The parameters of a Python function as its `def` header writes them, for groupFlow.ts: a group
 * passed to a function of the same file is followed into the parameter that receives it (by
 * position or keyword), and a group given as a parameter's default (`def log(msg, group=world):`)
 * into that parameter. Text only; no `vscode` import.
 */
import { topLevelParts } from './groupSize';

/** One parameter: its name, whether it is `*args` / `**kwargs`, and its default's text (whitespace removed). */
export interface Param {
  name: string;
  star: 0 | 1 | 2;
  defaultText?: string;
}

/**
 * The parameters of the function whose header is `header` (from `def` to the body: `def f(a, b:
 * int = 2, *args, group=None, **kw) -> X:`); [] when the text is no such header.
 */
export function parseParams(header: string): Param[] {
  const open = header.indexOf('(');
  if (!/^\s*(?:async\s+)?def\s/.test(header) || open < 0) return [];
  let depth = 0;
  let close = -1;
  for (let i = open; i < header.length && close < 0; i++) {
    const ch = header[i];
    if (ch === '(') depth++;
    else if (ch === ')' && --depth === 0) close = i;
  }
  if (close < 0) return [];
  const out: Param[] = [];
  for (const part of topLevelParts(header.slice(open + 1, close))) {
    if (part === '*' || part === '/') continue;
    const m = /^(\*{0,2})\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?::[^=]*)?(?:=\s*([\s\S]+))?$/.exec(part);
    if (!m) continue;
    out.push({ name: m[2]!, star: m[1]!.length as 0 | 1 | 2, ...(m[3] !== undefined ? { defaultText: m[3].replace(/\s+/g, '') } : {}) });
  }
  return out;
}

/**
 * The parameter of `params` that receives argument `index` (positional) or `keyword` of a call;
 * `skipFirst` for a method called through its instance (`self`/`cls` is not passed). Undefined for
 * an argument that lands in `*args` / `**kwargs` or none.
 */
export function receivingParam(params: readonly Param[], arg: { index?: number; keyword?: string }, skipFirst: boolean): string | undefined {
  if (arg.keyword !== undefined) return params.find((p) => p.star === 0 && p.name === arg.keyword)?.name;
  if (arg.index === undefined) return undefined;
  const positional = params.filter((p, i) => p.star === 0 && !(skipFirst && i === 0));
  const starAt = params.findIndex((p) => p.star === 1);
  const p = positional[arg.index];
  if (!p) return undefined;
  // A parameter after `*args` is keyword-only.
  return starAt >= 0 && params.indexOf(p) > starAt ? undefined : p.name;
}
