/**
 * The size of the group a creation makes, where the code fixes it (CallSite `groupSize`): a rank
 * list literal (`new_group([rank])`, `new_group(ranks=[0, 1, 2, 3])`), a list of such lists all of
 * one length or a comprehension making one (`split_group(split_ranks=[[r] for r in range(world)])`,
 * `new_subgroups_by_enumeration([[0, 1], [2, 3]])`), `new_subgroups(group_size=2)`, and a split
 * whose color is the caller's own rank (`ncclCommSplit(comm, rank, …)`, nccl4py's
 * `comm.split(rank, …)`: every rank a color of its own, so one rank per child). Read from the
 * call's text, never by the variable's value elsewhere; undefined when the code does not fix it.
 * Pure; no `vscode` import.
 */
import type { ApiName } from './apiTypes';

/** The top-level comma-separated parts of `inner` (brackets, parentheses, braces and strings kept whole). */
export function topLevelParts(inner: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quote = '';
  let from = 0;
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 0) {
      out.push(inner.slice(from, i).trim());
      from = i + 1;
    }
  }
  const last = inner.slice(from).trim();
  if (last !== '') out.push(last);
  return out;
}

/** The arguments of a call's argument list text `(…)`: positional values in order, keyword values by name. */
function argumentsOf(argsText: string): { positional: string[]; keyword: Map<string, string> } {
  const inner = argsText.trim().replace(/^\(/, '').replace(/\)$/, '');
  const positional: string[] = [];
  const keyword = new Map<string, string>();
  for (const part of topLevelParts(inner)) {
    const kw = /^([A-Za-z_][A-Za-z0-9_]*)\s*=(?!=)\s*([\s\S]*)$/.exec(part);
    if (kw) keyword.set(kw[1]!, kw[2]!.trim());
    else positional.push(part);
  }
  return { positional, keyword };
}

/** A list or tuple literal's elements (undefined for anything else, or one with a splat). */
function literalElements(value: string): string[] | undefined {
  const v = value.trim();
  const open = v[0];
  const close = open === '[' ? ']' : open === '(' ? ')' : undefined;
  if (!close || v[v.length - 1] !== close) return undefined;
  const inner = v.slice(1, -1);
  const parts = topLevelParts(inner);
  // A parenthesized expression is no tuple; a splat has no length the code shows.
  if (open === '(' && parts.length === 1 && !/,\s*$/.test(inner)) return undefined;
  if (parts.some((p) => p.startsWith('*'))) return undefined;
  return parts;
}

/** `[ELEM for … in …]`: the element expression, else undefined. */
function comprehensionElement(value: string): string | undefined {
  const v = value.trim();
  if (!v.startsWith('[') || !v.endsWith(']')) return undefined;
  const inner = v.slice(1, -1);
  let depth = 0;
  let quote = '';
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth--;
    else if (depth === 0 && /\sfor\s/.test(inner.slice(i, i + 5)) && /\s/.test(c)) return inner.slice(0, i).trim();
  }
  return undefined;
}

/** The ranks of a rank list written as a literal (`[rank]`, `[0, 1]`), else undefined. */
function rankListSize(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const elements = literalElements(value);
  return elements && elements.length > 0 ? elements.length : undefined;
}

/** The size of every group of a list of rank lists (all one length), from a literal or a comprehension; else undefined. */
function groupsSize(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const element = comprehensionElement(value);
  if (element !== undefined) return rankListSize(element);
  const lists = literalElements(value);
  if (!lists || lists.length === 0) return undefined;
  const sizes = lists.map(rankListSize);
  const first = sizes[0];
  return first !== undefined && sizes.every((s) => s === first) ? first : undefined;
}

/** A split color that is the caller's own rank (`rank`, `my_rank`, `args.rank`, `comm->rank`, `self.global_rank`). */
const OWN_RANK = /^(?:[A-Za-z_][A-Za-z0-9_]*(?:\.|->))*(?:my_?|global_?|world_?)?rank(?:_?id)?$/i;

/**
 * The ranks of the group created by the call of `api` written `written` with argument list text
 * `argsText` (`(…)`), where the code fixes it; undefined otherwise (see the file comment).
 */
export function groupSizeOf(api: ApiName, written: string, argsText: string): number | undefined {
  const name = written.replace(/\s+/g, '').split(/\.|->|::/).pop() ?? written;
  const a = argumentsOf(argsText);
  switch (api) {
    case 'new_group':
      return rankListSize(a.keyword.get('ranks') ?? a.positional[0]);
    case 'split_group':
      return groupsSize(a.keyword.get('split_ranks') ?? a.positional[1]);
    case 'new_subgroups': {
      if (name === 'new_subgroups_by_enumeration') return groupsSize(a.keyword.get('ranks_per_subgroup_list') ?? a.positional[0]);
      const n = a.keyword.get('group_size') ?? a.positional[0];
      return n !== undefined && /^\d+$/.test(n) && Number(n) > 0 ? Number(n) : undefined;
    }
    case 'ncclCommSplit': {
      // `ncclCommSplit(comm, color, key, &newcomm, config)`; a method on a communicator: `comm.split(color, key)`.
      const color = name === 'ncclCommSplit' ? a.positional[1] : (a.keyword.get('color') ?? a.positional[0]);
      return color !== undefined && OWN_RANK.test(color.replace(/\s+/g, '')) ? 1 : undefined;
    }
    default:
      return undefined;
  }
}
