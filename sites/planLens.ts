/**
 * Where a "plan this reshape" CodeLens goes, and with which TP shapes (pure, no `vscode` import).
 *
 * A reshape routine is found from the call-site finder's output (callSites.ts, pythonSites.ts),
 * not by parsing again: a Python function with a communicator creation (role `create`:
 * `new_group`, `split_group`, `init_process_group`, an NCCL init…) that the finder says runs in a
 * loop (`repeated.kind === 'loop'`) or that sits in a list/set/dict comprehension or generator, or
 * a function that tears down communicators and then creates others (a destroy + new_group routine;
 * a setup that creates groups and destroys them at its end is not one).
 *
 * The shapes are read from literals only, and each says where it came from:
 * - the size of a creation's literal ranks (`ranks=[0, 1]`, `list(range(0, 4, 2))`,
 *   `range(s, s + 2)`, `split_ranks=[[0, 1], [2, 3]]`);
 * - a loop over literal sizes around a creation that uses the loop variable as a size
 *   (`for tp in (4, 2, 1): … range(start, start + tp)`), or whose name says it is one (`tp`,
 *   `tp_size`, `size`, `world_size`, `degree`);
 * - for a routine, the literal sizes of the file's other creations assigned to the same target
 *   (`self.tp_group = new_group(ranks=[0, 1, 2, 3])` in `__init__`: the shape it switches from).
 * Fewer than two distinct shapes: the run's default shapes (every TP shape of its GPU count),
 * and the lens says that only those literal shapes were in the code.
 */
import type { CallSite } from './callSiteTypes';

/** One reshape routine the lens is shown over. Lines are 0-based. */
export interface ReshapeRoutine {
  /** The enclosing function, or undefined at module level. */
  functionName?: string;
  /** The line of its `def` (module level: the first creation's line). */
  line: number;
  kind: 'loop' | 'routine';
  /** Why it is a reshape routine, in words: "creates groups in a for loop (line 8)". */
  why: string;
  /** The distinct TP shapes found in literals, in the order they appear (may be empty). */
  shapes: number[];
  /** How each shape (or set of shapes) was found: "TP4, TP2, TP1 from `for tp in (4, 2, 1)` (line 7)". */
  inferred: string[];
}

const SIZE_NAME = /^(?:tp|tp_?size|size|world_?size|degree|tp_?degree|shape|n_?ranks|group_?size)$/i;

const indentOf = (line: string): number => /^\s*/.exec(line)![0].length;

/** Literal integer tuple/list `(4, 2, 1)` / `[4, 2, 1]` → [4, 2, 1]; undefined when not all integers. */
export function literalInts(text: string): number[] | undefined {
  const m = /^\s*[([]\s*((?:\d+\s*,\s*)*\d+)\s*,?\s*[)\]]\s*$/.exec(text);
  return m ? m[1]!.split(',').map((x) => Number(x.trim())) : undefined;
}

/**
 * The number of ranks of a literal ranks expression, or undefined: `[0, 1]` → 2,
 * `list(range(0, 4, 2))` → 2, `range(4)` → 4, `range(s, s + 2)` → 2; `range(v)` and
 * `range(s, s + v)` → `{ variable: v }` (the size is the variable's value).
 */
export function ranksSize(expr: string): number | { variable: string } | undefined {
  const e = expr.trim().replace(/^list\s*\(\s*(.*)\s*\)$/s, '$1').trim();
  const list = /^\[\s*((?:\d+\s*,\s*)*\d+)\s*,?\s*\]$/.exec(e);
  if (list) return list[1]!.split(',').length;
  const r = /^range\s*\((.*)\)$/s.exec(e);
  if (!r) return undefined;
  const args = r[1]!.split(',').map((a) => a.trim()).filter((a) => a !== '');
  const int = (a: string | undefined) => (a !== undefined && /^\d+$/.test(a) ? Number(a) : undefined);
  if (args.length === 1) {
    const n = int(args[0]);
    if (n !== undefined) return n;
    return /^[A-Za-z_]\w*$/.test(args[0]!) ? { variable: args[0]! } : undefined;
  }
  if (args.length === 2 || args.length === 3) {
    const [a, b, step] = [args[0]!, args[1]!, args[2] === undefined ? 1 : int(args[2])];
    if (step === undefined || step < 1) return undefined;
    const [na, nb] = [int(a), int(b)];
    if (na !== undefined && nb !== undefined) return Math.max(0, Math.ceil((nb - na) / step));
    // range(s, s + k): k / step ranks; range(s, s + v): the variable's value (step 1 only).
    const plus = new RegExp(`^${a.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\s*\\+\\s*(\\w+)$`).exec(b);
    if (plus) {
      const k = int(plus[1]);
      if (k !== undefined) return Math.ceil(k / step);
      if (step === 1 && /^[A-Za-z_]\w*$/.test(plus[1]!)) return { variable: plus[1]! };
    }
  }
  return undefined;
}

/** The ranks argument of a creation call's text: `ranks=…` or the first positional argument. */
function ranksArgument(call: string): string | undefined {
  const open = call.indexOf('(');
  if (open < 0) return undefined;
  // Split the arguments at depth-0 commas.
  const args: string[] = [];
  let depth = 0;
  let start = open + 1;
  for (let i = open + 1; i < call.length; i++) {
    const ch = call[i]!;
    if ('([{'.includes(ch)) depth++;
    else if (')]}'.includes(ch)) {
      if (depth === 0) {
        args.push(call.slice(start, i));
        break;
      }
      depth--;
    } else if (ch === ',' && depth === 0) {
      args.push(call.slice(start, i));
      start = i + 1;
    }
  }
  const kw = args.find((a) => /^\s*ranks\s*=/.test(a));
  if (kw) return kw.replace(/^\s*ranks\s*=/, '');
  const first = args[0];
  return first !== undefined && !/^\s*\w+\s*=/.test(first) && first.trim() !== '' ? first : undefined;
}

/**
 * The group a teardown call names as its first argument (`destroy_process_group(parent)` →
 * `parent`, `ncclCommDestroy(comm)` → `comm`); undefined when it names none (the default group
 * and every group with it) or the argument is not a plain name or attribute.
 */
function teardownTarget(site: CallSite, lines: readonly string[]): string | undefined {
  const text = lines.slice(site.range.start.line, site.range.end.line + 1).join('\n');
  const open = text.indexOf('(', site.range.start.line === site.range.end.line ? site.range.start.character : 0);
  if (open < 0) return undefined;
  const m = /^\(\s*(?:group\s*=\s*)?([A-Za-z_][\w.]*)\s*[,)]/.exec(text.slice(open));
  return m?.[1];
}

/** The `for` headers around `line` (innermost first) within the function indented at `fnIndent`. */
function loopsAround(lines: readonly string[], line: number, fnIndent: number): { line: number; variable: string; iterable: string }[] {
  const out: { line: number; variable: string; iterable: string }[] = [];
  let indent = indentOf(lines[line] ?? '');
  for (let i = line - 1; i >= 0; i--) {
    const l = lines[i]!;
    if (l.trim() === '' || l.trim().startsWith('#')) continue;
    const ind = indentOf(l);
    if (ind >= indent) continue;
    if (ind <= fnIndent && /^\s*(?:async\s+)?def\s/.test(l)) break;
    indent = ind;
    const m = /^\s*for\s+([A-Za-z_]\w*)\s+in\s+(.*?):\s*(?:#.*)?$/.exec(l);
    if (m) out.push({ line: i, variable: m[1]!, iterable: m[2]! });
    if (ind === 0) break;
  }
  return out;
}

/**
 * The comprehension loop that follows a call (`[new_group(…) for s in (0, 2)]`): the text after
 * the call up to the comprehension's closing bracket, on the call's last line and the lines that
 * continue it.
 */
function comprehensionAfter(site: CallSite, lines: readonly string[]): { variable: string; iterable: string } | undefined {
  const end = site.range.end;
  let rest = (lines[end.line] ?? '').slice(end.character);
  for (let i = end.line + 1; i < Math.min(lines.length, end.line + 4) && !/[\])}]/.test(rest); i++) rest += ` ${lines[i]!.trim()}`;
  const m = /^\s*for\s+([A-Za-z_]\w*)\s+in\s+(.+?)\s*(?:\bif\b[^\])}]*)?[\])}]/.exec(rest);
  return m ? { variable: m[1]!, iterable: m[2]! } : undefined;
}

/** The text between two (line, character) positions. */
function slice(lines: readonly string[], r: CallSite['range']): string {
  if (r.start.line === r.end.line) return (lines[r.start.line] ?? '').slice(r.start.character, r.end.character);
  return [
    (lines[r.start.line] ?? '').slice(r.start.character),
    ...lines.slice(r.start.line + 1, r.end.line),
    (lines[r.end.line] ?? '').slice(0, r.end.character),
  ].join('\n');
}

const tpList = (shapes: readonly number[]) => shapes.map((s) => `TP${s}`).join(', ');

/** The shapes one creation site shows in literals, with how they were found. */
function siteShapes(site: CallSite, lines: readonly string[], fnIndent: number): { shapes: number[]; how: string } | undefined {
  const call = slice(lines, site.range);
  const arg = ranksArgument(call);
  const size = arg !== undefined ? ranksSize(arg) : undefined;
  const at = `line ${site.range.start.line + 1}`;
  // split_group(split_ranks=[[0, 1], [2, 3]]): the size of the first literal group.
  const split = /\bsplit_ranks\s*=\s*(\[\s*\[\s*((?:\d+\s*,\s*)*\d+)\s*,?\s*\](?:\s*,\s*\[[^\]]*\])*\s*,?\s*\])/.exec(call);
  if (split) {
    const k = split[2]!.split(',').length;
    return { shapes: [k], how: `TP${k} from the split ranks \`${split[1]!.trim()}\` (${at})` };
  }
  if (typeof size === 'number' && size >= 1) return { shapes: [size], how: `TP${size} from the ranks \`${arg!.trim()}\` (${at})` };
  const loops: { line?: number; variable: string; iterable: string }[] = [...loopsAround(lines, site.range.start.line, fnIndent)];
  const comp = comprehensionAfter(site, lines);
  if (comp) loops.unshift(comp);
  const uses = (v: string) => new RegExp(`\\b${v}\\b`).test(call);
  for (const loop of loops) {
    const values = literalInts(loop.iterable);
    if (!values || values.some((v) => v < 1)) continue;
    const asSize = typeof size === 'object' ? size.variable === loop.variable : SIZE_NAME.test(loop.variable) && uses(loop.variable);
    if (!asSize) continue;
    const where = loop.line !== undefined ? `line ${loop.line + 1}` : at;
    return { shapes: values, how: `${tpList(values)} from \`for ${loop.variable} in ${loop.iterable.trim()}\` (${where})` };
  }
  return undefined;
}

/** The `def` line of `name` at or above `line`, with its indentation. */
function defLine(lines: readonly string[], name: string, line: number): { line: number; indent: number } | undefined {
  const simple = name.split('.').pop() ?? name;
  const re = new RegExp(`^\\s*(?:async\\s+)?def\\s+${simple.replace(/[^\w]/g, '')}\\s*\\(`);
  for (let i = line; i >= 0; i--) if (re.test(lines[i]!)) return { line: i, indent: indentOf(lines[i]!) };
  return undefined;
}

/**
 * The reshape routines of a Python document.
 * @param sites the finder's sites of the document (ScanResult.sites; sites through wrappers too)
 * @param text the document's text the sites were found in
 * @returns one routine per qualifying function (module level counts as one), in line order
 */
export function findReshapeRoutines(sites: readonly CallSite[], text: string): ReshapeRoutine[] {
  const lines = text.split('\n');
  const python = sites.filter((s) => s.language === 'python');
  const byFunction = new Map<string, CallSite[]>();
  for (const s of python) {
    const key = s.enclosingFunction ?? '';
    byFunction.set(key, [...(byFunction.get(key) ?? []), s]);
  }
  const out: ReshapeRoutine[] = [];
  for (const [fn, list] of byFunction) {
    const creations = list.filter((s) => s.role === 'create');
    if (creations.length === 0) continue;
    const teardowns = list.filter((s) => s.role === 'teardown');
    const first = creations[0]!;
    const def = fn ? defLine(lines, fn, first.range.start.line) : undefined;
    const fnIndent = def?.indent ?? -1;
    const inLoop = creations.filter((s) => s.repeated?.kind === 'loop');
    const inComprehension = creations.filter((s) => s.repeated?.kind !== 'loop' && comprehensionAfter(s, lines) !== undefined);
    let kind: ReshapeRoutine['kind'];
    let why: string;
    if (inLoop.length > 0 || inComprehension.length > 0) {
      kind = 'loop';
      const s = inLoop[0];
      why = s ? `creates groups ${s.repeated!.detail}` : `creates groups in a comprehension (line ${inComprehension[0]!.range.start.line + 1})`;
    } else {
      // A reshape: a teardown followed by a creation in the same function (destroy, then new_group).
      // A setup that creates its groups and tears them down at its end is not one.
      // Or a teardown of a group this function did not create (the old shape, e.g. a parent
      // after its children were split off). A setup that creates its groups and tears them, or
      // everything (`destroy_process_group()`), down at its end is not one.
      const made = new Set(creations.map((c) => c.warmUp?.variable ?? /^\s*([\w.]+)\s*=/.exec(lines[c.range.start.line] ?? '')?.[1]).filter((v): v is string => !!v));
      const oldShape = (t: CallSite): boolean => {
        const arg = teardownTarget(t, lines);
        return arg !== undefined && !made.has(arg);
      };
      const torn =
        teardowns.find((t) => creations.some((c) => c.range.start.line > t.range.start.line)) ?? teardowns.find(oldShape);
      if (!torn) continue;
      const after = creations.find((c) => c.range.start.line > torn.range.start.line);
      kind = 'routine';
      why = after
        ? `tears down (line ${torn.range.start.line + 1}) and then creates (line ${after.range.start.line + 1}) communicators`
        : `creates (line ${first.range.start.line + 1}) communicators and tears down another (line ${torn.range.start.line + 1})`;
    }
    const shapes: number[] = [];
    const inferred: string[] = [];
    const add = (found: { shapes: number[]; how: string } | undefined) => {
      if (!found) return;
      const fresh = found.shapes.filter((x) => !shapes.includes(x));
      if (fresh.length === 0) return;
      shapes.push(...fresh);
      inferred.push(found.how);
    };
    if (kind === 'routine') {
      // The shape it switches from: the file's other creations assigned to the same target.
      const targets = new Set(creations.map((s) => s.assignedTo).filter((t): t is string => t !== undefined));
      for (const s of python) {
        if (s.role !== 'create' || (s.enclosingFunction ?? '') === fn || !s.assignedTo || !targets.has(s.assignedTo)) continue;
        const found = siteShapes(s, lines, -1);
        if (found) add({ shapes: found.shapes, how: `${found.how}, the shape \`${s.assignedTo}\` had before` });
      }
    }
    for (const s of kind === 'loop' ? [...inLoop, ...inComprehension] : creations) add(siteShapes(s, lines, fnIndent));
    out.push({ ...(fn ? { functionName: fn } : {}), line: def?.line ?? first.range.start.line, kind, why, shapes, inferred });
  }
  return out.sort((a, b) => a.line - b.line);
}

/** What the lens offers: its title, its tooltip and the shapes it opens the plan with. */
export interface PlanLensText {
  title: string;
  tooltip: string;
  /** The shapes the plan opens with; undefined: the run's default shapes (the planner's). */
  shapes?: number[];
}

/**
 * The lens's words for `routine`.
 * @param defaultShapes the run's default TP shapes (planner `tpShapes(ranks)`), largest first;
 *   undefined when there is no run to plan from
 * @param runLabel the run the plan is computed on ("h200 · NCCL 2.30.7 · 2026-12-01"), if any
 */
export function planLensText(routine: ReshapeRoutine, defaultShapes: readonly number[] | undefined, runLabel?: string): PlanLensText {
  const arrow = (s: readonly number[]) => s.map((x) => `tp${x}`).join(' → ');
  const where = routine.functionName ? `${routine.functionName} ${routine.why}` : `this code ${routine.why}`;
  const own = routine.shapes.length >= 2;
  const found = routine.inferred.length > 0 ? `Inferred from the code: ${routine.inferred.join('; ')}.` : 'No shape is written as a literal in the code.';
  if (own) {
    return {
      title: `commcost: plan this reshape (${arrow(routine.shapes)})`,
      tooltip: `${where}. ${found} Opens the Plan section${runLabel ? ` on ${runLabel}` : ''} with these shapes.`,
      shapes: [...routine.shapes],
    };
  }
  if (!defaultShapes) {
    return { title: 'commcost: plan this reshape (no run to plan from)', tooltip: `${where}. ${found} Measure a run first: the plan adds up its figures.` };
  }
  const only = routine.shapes.length === 1 ? ` Only TP${routine.shapes[0]} is written in the code: the plan` : ' The plan';
  return {
    title: `commcost: plan this reshape (${arrow(defaultShapes)}, the run's shapes)`,
    tooltip: `${where}. ${found}${only} uses every TP shape of the run's GPU count (${arrow(defaultShapes)})${runLabel ? `, on ${runLabel}` : ''}.`,
  };
}

/**
 * The calls a "plan this recovery" lens is shown over: a call that aborts, revokes, shrinks or
 * grows a communicator (NCCL's, c10d's, or a wrapper's that ends in one: `callsInto`).
 * `destroy_process_group` counts only when the same function creates a group after it (a destroy
 * + re-create), not as a script's final cleanup.
 */
const RECOVERY_NCCL = new Set<string>(['ncclCommAbort', 'ncclCommRevoke', 'ncclCommShrink', 'ncclCommGrow']);
const RECOVERY_C10D = new Set<string>(['shrink_group', '_abort_process_group', 'ProcessGroup.abort']);

/** One function (or module level) with recovery calls, the lens's place. Lines are 0-based. */
export interface RecoveryRoutine {
  /** The enclosing function, or undefined at module level. */
  functionName?: string;
  /** Its `def` line (Python), else the first recovery call's line. */
  line: number;
  /** The recovery calls found, each API once, in line order: "ncclCommAbort", "destroy_process_group". */
  apis: string[];
  /** Why the lens is here, in words: "calls ncclCommAbort (line 12) and ncclCommShrink (line 15)". */
  why: string;
}

/**
 * The functions of a document (Python, C or C++) that call a recovery API: abort, revoke, shrink,
 * grow, or destroy_process_group followed by a creation (a destroy + re-create).
 * @param sites the finder's sites of the document (ScanResult.sites; sites through wrappers too)
 * @param text the document's text the sites were found in
 * @returns one routine per qualifying function (module level counts as one), in line order
 */
export function findRecoveryRoutines(sites: readonly CallSite[], text: string): RecoveryRoutine[] {
  const lines = text.split('\n');
  const byFunction = new Map<string, CallSite[]>();
  for (const s of sites) byFunction.set(s.enclosingFunction ?? '', [...(byFunction.get(s.enclosingFunction ?? '') ?? []), s]);
  const out: RecoveryRoutine[] = [];
  for (const [fn, list] of byFunction) {
    const sorted = [...list].sort((a, b) => a.range.start.line - b.range.start.line);
    const recovery = sorted.filter(
      (s) =>
        RECOVERY_NCCL.has(s.api) ||
        RECOVERY_C10D.has(s.api) ||
        (s.callsInto !== undefined && RECOVERY_NCCL.has(s.callsInto)) ||
        (s.api === 'destroy_process_group' && sorted.some((c) => c.role === 'create' && c.range.start.line > s.range.start.line)),
    );
    if (recovery.length === 0) continue;
    const apis: string[] = [];
    const calls: string[] = [];
    for (const s of recovery) {
      if (apis.includes(s.api)) continue;
      apis.push(s.api);
      calls.push(`${s.api} (line ${s.range.start.line + 1})`);
    }
    const first = recovery[0]!;
    const def = fn && first.language === 'python' ? defLine(lines, fn, first.range.start.line) : undefined;
    const why = `calls ${calls.length === 1 ? calls[0] : `${calls.slice(0, -1).join(', ')} and ${calls[calls.length - 1]}`}${apis.includes('destroy_process_group') ? ', then re-creates a group' : ''}`;
    out.push({ ...(fn ? { functionName: fn } : {}), line: def?.line ?? first.range.start.line, apis, why });
  }
  return out.sort((a, b) => a.line - b.line);
}

/**
 * The recovery lens's words for `routine`: "commcost: plan this recovery (ncclCommAbort,
 * ncclCommShrink)", its tooltip naming the run the paths are priced on, or asking for a run.
 * @param runLabel the run the recovery is planned on ("h200 · NCCL 2.30.7 · 2026-12-01"); undefined: no run
 * @param ranks that run's rank count (the figures' communicator size)
 */
export function recoveryLensText(routine: RecoveryRoutine, runLabel?: string, ranks?: number): { title: string; tooltip: string } {
  const where = `${routine.functionName ?? 'this code'} ${routine.why}`;
  if (runLabel === undefined) {
    return { title: 'commcost: plan this recovery (no run to plan from)', tooltip: `${where}. Measure a run first (abort, revoke, shrink, grow): the recovery paths add up its figures.` };
  }
  const at = ranks !== undefined ? ` (${ranks} rank${ranks === 1 ? '' : 's'})` : '';
  return {
    title: `commcost: plan this recovery (${routine.apis.join(', ')})`,
    tooltip: `${where}. Opens the Recovery section on ${runLabel}${at}: abort + re-init, revoke + shrink, shrink with NCCL_SHRINK_ABORT, the grow back, c10d re-create and a spare kept warm, each priced with that run's figures after one rank is lost.`,
  };
}
