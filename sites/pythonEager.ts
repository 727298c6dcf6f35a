/**
 * Whether a Python creation makes its communicator at the line (eager) or leaves it to the group's
 * first collective (lazy), from the code only: `device_id=`, `eager_connect_single_device`, a
 * warm-up collective as the next statement, `split_group`, a direct NCCL init; and a backend the
 * file registers itself (not NCCL). Used by pythonSites.ts. No `vscode` import.
 */
import { API_MAP, type ApiName } from './apiMap';
import type { CallSite, WarmUpInfo } from './callSiteTypes';
import type { ArgumentText } from './pythonNames';
import { escapeRegExp } from './scanShared';

const squash = (s: string): string => s.replace(/\s+/g, '');

/**
 * A group whose backend is one the file registers itself (`Backend.register_backend(name, creator)`
 * with the same variable): the file's own backend, not NCCL.
 */
export function registeredBackend(api: ApiName, args: readonly ArgumentText[], text: string): boolean {
  if (api !== 'new_group' && api !== 'init_process_group') return false;
  const backend = args.find((a) => a.keyword === 'backend');
  if (!backend || backend.type !== 'identifier' || !text.includes('register_backend')) return false;
  return new RegExp(`register_backend\\s*\\(\\s*${escapeRegExp(backend.text)}\\s*,`).test(text);
}

/** Whether a creation is eager by the code (see CallSite `eager`); undefined when the code does not say. */
export function eagerOf(
  s: CallSite & { args: ArgumentText[] },
  fileEager: boolean | undefined,
  sites: readonly CallSite[],
  text: string,
): boolean | undefined {
  const role = API_MAP[s.api].role;
  if (role !== 'create') return undefined;
  const kw = (k: string): boolean => s.args.some((a) => a.keyword === k);
  const splat = s.args.some((a) => a.text.startsWith('**'));
  switch (s.api) {
    case 'split_group':
    case 'shrink_group':
    case 'eager_connect_single_device':
    case 'PyNcclCommunicator':
      return true;
    case 'new_group':
    case 'new_subgroups':
    case 'init_device_mesh':
    case 'DeviceMesh':
    case 'DeviceMesh._flatten':
    case 'DeviceMesh._unflatten':
    case '_new_process_group_helper':
      if (kw('device_id') || s.warmUp?.warm) return true;
      if (splat || s.api === '_new_process_group_helper') return undefined;
      return fileEager;
    case 'ProcessGroupNCCL': {
      const v = s.assignedTo ? squash(s.assignedTo) : undefined;
      if (!v) return false;
      const connect = new RegExp(`${escapeRegExp(v)}\\s*\\.\\s*eager_connect_single_device\\s*\\(`);
      const fn = s.enclosingFunction;
      const same = sites.some(
        (x) =>
          x.api === 'eager_connect_single_device' &&
          x.startIndex > s.endIndex &&
          x.enclosingFunction === fn &&
          connect.test(x.written + '('),
      );
      return same || connect.test(text.slice(s.endIndex, s.endIndex + 2000));
    }
    case 'init_collective_group':
    case 'init_distributed':
    case 'new_comm':
    case 'ProcessGroupNCCL.configure':
      return undefined;
    default:
      // NCCL's own creation functions (C, ctypes, nccl4py): the call makes the communicator.
      return API_MAP[s.api].language === 'cpp' ? true : undefined;
  }
}

const indentOf = (line: string): number => /^[ \t]*/.exec(line)?.[0].length ?? 0;

/** The 0-based line of the statement after `site`'s in its block, or undefined when the block ends. */
function nextStatementLine(site: CallSite, lines: readonly string[]): number | undefined {
  const indent = site.statement?.indent.length ?? 0;
  for (let l = (site.statement?.range.end.line ?? site.range.end.line) + 1; l < lines.length; l++) {
    const line = lines[l] ?? '';
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    if (indentOf(line) < indent) return undefined;
    if (indentOf(line) === indent) return l;
  }
  return undefined;
}

/** Is the next statement after `site` a collective that `accepts`? (A warm-up right after creation.) */
export function nextStatementIsCollective<C>(
  site: CallSite,
  lines: readonly string[],
  collectivesOnLine: ReadonlyMap<number, readonly C[]>,
  accepts: (c: C) => boolean,
): boolean {
  if (!site.statement?.ownsLine) return false;
  const l = nextStatementLine(site, lines);
  return l !== undefined && (collectivesOnLine.get(l)?.some(accepts) ?? false);
}

/**
 * After the statement that created `variable` (from the text: Python blocks are indentation):
 * warm when the next statement of the block — on the next line, or after a `;` on the same one —
 * is a collective naming the variable; that warm-up is the group's first collective (its
 * `firstCollective`). Where a cold group gets its first collective is found by groupFlow.ts.
 */
export function warmUpAfter(
  site: CallSite,
  variable: string,
  lines: readonly string[],
  collectivesOnLine: ReadonlyMap<number, readonly { argsText: string; start: number; line: number; written: string }[]>,
): WarmUpInfo {
  const mention = new RegExp(`(^|[^A-Za-z0-9_.])${escapeRegExp(variable)}(?![A-Za-z0-9_])`);
  const names = (c: { argsText: string }): boolean => mention.test(c.argsText);
  const end = site.statement?.range.end ?? site.range.end;
  const rest = lines[end.line]?.slice(end.character) ?? '';
  // `g = new_group(…); dist.barrier(group=g)`: the next statement on the same line.
  const sameLine = /^\s*;/.test(rest) ? collectivesOnLine.get(end.line)?.find((c) => c.start >= site.endIndex && names(c)) : undefined;
  let warmUp = sameLine;
  if (!warmUp && nextStatementIsCollective(site, lines, collectivesOnLine, names)) {
    const l = nextStatementLine(site, lines);
    warmUp = l === undefined ? undefined : collectivesOnLine.get(l)?.find(names);
  }
  if (!warmUp) return { variable, warm: false };
  const fn = site.enclosingFunction;
  return { variable, warm: true, firstCollective: { line: warmUp.line, call: warmUp.written, ...(fn ? { function: fn } : {}) } };
}
