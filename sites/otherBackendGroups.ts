/**
 * Which Python variables only ever hold process groups of another backend (gloo, mpi, xccl, …),
 * so that tearing one down (`dist.destroy_process_group(_TP_CPU_GROUP)`, `cpu_group.shutdown()`)
 * is none of NCCL's, also when the group reached the variable through an alias
 * (`cpu_group = new_group(ranks, backend="gloo")` … `_TP_CPU_GROUP = cpu_group`). Read from the
 * text's plain assignments; the tree gave the creations (pythonSites.ts). Also which group a
 * teardown acts on, as written: a method's receiver, or the first argument. No `vscode` import.
 */
import type { ApiName } from './apiTypes';
import { DIST } from './pythonNames';
import { innermost, lastSegment, lineStartIndex, type FunctionSpan } from './scanShared';

const squash = (s: string): string => s.replace(/\s+/g, '');

/** `name = value` or `name: T = value` alone on a line (not `==`); the value without a trailing comment. */
const ASSIGNMENT = /^[ \t]*([A-Za-z_][\w.]*)[ \t]*(?::[^=\n]*)?=(?!=)[ \t]*(.*?)[ \t]*(?:#.*)?$/;
const GLOBAL = /^[ \t]*global[ \t]+([\w, \t]+)$/;
const NAME = /^[A-Za-z_][\w.]*$/;
/** How many aliases are followed (`a = b`, `b = c`, …). */
const MAX_ALIASES = 8;

interface Assignment {
  /** Index of the line's start in the text. */
  line: number;
  /** Index of the assigned name. */
  at: number;
  value: string;
  fn: FunctionSpan | undefined;
}

export class OtherBackendGroups {
  private readonly byName = new Map<string, Assignment[]>();
  private readonly globals = new Set<string>();
  private readonly seeds: ReadonlySet<string>;
  private readonly memo = new Map<string, boolean>();

  /**
   * `seeds`: where a creation of a group of another backend is assigned (the assigned name as
   * written without spaces, and the index of the assignment's start in `text`). `functions`: the
   * function bodies the scan knows (a plain name assigned in one is local to it, unless a
   * `global` statement names it).
   */
  constructor(
    text: string,
    seeds: readonly { name: string; index: number }[],
    private readonly functions: readonly FunctionSpan[],
  ) {
    this.seeds = new Set(seeds.map((s) => `${s.name}@${lineStartIndex(text, s.index)}`));
    let start = 0;
    for (const line of text.split('\n')) {
      const g = GLOBAL.exec(line);
      if (g?.[1]) for (const n of g[1].split(',')) this.globals.add(n.trim());
      const m = ASSIGNMENT.exec(line);
      // A value ending in a comma is a keyword argument of a call spread over lines, not an assignment.
      if (m?.[1] && m[2] !== undefined && !m[2].endsWith(',')) {
        const at = start + line.length - line.trimStart().length;
        const list = this.byName.get(m[1]) ?? [];
        list.push({ line: start, at, value: m[2], fn: innermost(this.functions, at, at) });
        this.byName.set(m[1], list);
      }
      start += line.length + 1;
    }
  }

  /**
   * Whether `name` (as written, without spaces), read at index `at`, only ever holds groups of
   * another backend: each of its assignments in scope is such a creation, `None`, or another such
   * variable. False when it has no assignment in scope (a parameter, an import) or any other one.
   */
  has(name: string, at: number, depth = 0): boolean {
    if (depth > MAX_ALIASES) return false;
    const local = !name.includes('.') && !this.globals.has(name);
    const fn = local ? innermost(this.functions, at, at) : undefined;
    const key = `${name}@${fn?.start ?? -1}`;
    const known = this.memo.get(key);
    if (known !== undefined) return known;
    this.memo.set(key, false); // a cycle of aliases holds nothing known
    const all = this.byName.get(name) ?? [];
    const inScope = local ? all.filter((a) => a.fn === fn) : all;
    const holds =
      inScope.length > 0 &&
      inScope.some((a) => a.value !== 'None') &&
      inScope.every(
        (a) =>
          this.seeds.has(`${name}@${a.line}`) ||
          a.value === 'None' ||
          (NAME.test(a.value) && a.value !== name && this.has(a.value, a.at, depth + 1)),
      );
    this.memo.set(key, holds);
    return holds;
  }
}

/** The process-group methods that tear a group down: API → method. */
const GROUP_METHODS: Partial<Record<ApiName, string>> = { 'ProcessGroup.abort': 'abort', 'ProcessGroup.shutdown': 'shutdown' };

/**
 * The method a teardown call is written as (`pg.abort()`, `self.cpu_group.shutdown()`), when it is
 * one on a receiver rather than a qualified torch name (`_shutdown_backend(pg)`); else undefined.
 */
export function groupMethod(api: ApiName, written: string, fulls: (w: string) => string[]): string | undefined {
  const method = GROUP_METHODS[api];
  if (!method || lastSegment(squash(written)) !== method || !squash(written).includes('.')) return undefined;
  return fulls(written).some((f) => f === `${DIST}.${api}` || f === `${DIST}.distributed_c10d.${api}`) ? undefined : method;
}

/** The first argument of a call (`(group)`, `(group=pg)`, `(self.tp_group, …)`) when it is a name, without spaces. */
export function firstArgument(argsText: string): string | undefined {
  const m = /^\(\s*(?:group\s*=\s*)?([A-Za-z_][\w.\s]*?)\s*[,)]/.exec(argsText);
  return m?.[1] ? squash(m[1]) : undefined;
}

/**
 * `destroy_process_group(self)`: the group destroyed is the object whose method this is, a process
 * group implemented in Python (a ProcessGroup subclass registered with c10d, as torchft's are),
 * not one c10d's NCCL factory made; the NCCL communicators such a class may hold belong to a backend
 * it keeps and are torn down by that backend's own abort / shutdown. So it is no NCCL teardown.
 * `argsText`: the argument list with its parentheses.
 */
export function destroysItself(api: ApiName, argsText: string): boolean {
  return api === 'destroy_process_group' && firstArgument(argsText) === 'self';
}

/**
 * Is `receiver` bound, earlier in the function the call at `at` is in (`fnStart`: its body's
 * start), to a group's CUDA backend (`backend = pg._get_backend(torch.device("cuda"))`)? Then its
 * `abort()` / `shutdown()` tears that NCCL backend down, whatever the variable is called. A
 * variable that also holds another device's backend on another path is still one (the CUDA path
 * is an NCCL teardown).
 */
export function holdsCudaBackend(receiver: string, text: string, fnStart: number, at: number): boolean {
  if (!NAME.test(receiver)) return false;
  const escaped = receiver.replace(/\./g, '\\.');
  const bound = new RegExp(
    `(?:^|[^\\w.])${escaped}[ \\t]*=[ \\t]*[\\w.]+[ \\t]*\\.[ \\t]*_get_backend[ \\t]*\\([ \\t]*(?:torch[ \\t]*\\.[ \\t]*)?device[ \\t]*\\([ \\t]*(['"])cuda(?::\\d+)?\\1`,
    'm',
  );
  return bound.test(text.slice(fnStart, at));
}
