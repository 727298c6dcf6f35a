/**
 * NCCL's view in a trace (pure; no I/O): joins the creations each process's NCCL debug log tells
 * (`<host>-<pid>.nccl.log`, written by NCCL itself through NCCL_DEBUG_FILE, read by
 * protocol/ncclInitLog.ts `parseInitCreations`) to the communicators the profiler plugin saw in
 * the same process.
 *
 * Join, per process: a creation whose COMPLETE line printed a commId goes to the plugin's
 * communicator with that commId (NCCL passes the same commHash to the plugin's init); if several
 * communicators share it (one process holding two ranks of one communicator), the one with the
 * same rank and nranks. Creations without a commId (split, shrink children) go, in order, to the
 * plugin's communicators still unjoined with the same rank and nranks, in the order of their init.
 * Combining: MAX per part over an occurrence's ranks, median per part over a site's occurrences.
 */
import { normalizeCommId, parseInitCreations } from '../../protocol/ncclInitLog';
import type { TraceNcclView } from '../../protocol/trace';

/** A plugin communicator as the join needs it. */
export interface ViewComm { i: number; commId: string; rank: number; nranks: number; tInit: number }

/** A process's log text with the process it belongs to. */
export interface ProcessLog { host: string; pid: number; text: string }

/** What the join found for one process. */
export interface ProcessViews {
  /** Plugin communicator index (`i`) → its creation's view (n = 1). */
  byComm: Map<number, TraceNcclView>;
  creations: number;
  problems: string[];
}

/** The log file name NCCL writes for a process: NCCL_DEBUG_FILE = `<dir>/%h-%p.nccl.log`. */
export const NCCL_LOG_SUFFIX = '.nccl.log';

/** host and pid of a `<host>-<pid>.nccl.log` name, or null. */
export function ncclLogOwner(name: string): { host: string; pid: number } | null {
  const m = /^(.*)-(\d+)\.nccl\.log$/.exec(name);
  return m ? { host: m[1]!, pid: Number(m[2]) } : null;
}

/**
 * Splits NCCL log files into one text per process, by the `host:pid:tid` prefix NCCL puts on every
 * line (a process forked after NCCL opened its log writes into its parent's file); a line without
 * that prefix belongs to the process the file is named after. Files named otherwise are skipped.
 * @returns one entry per process, lines in file order
 */
export function splitLogsByProcess(files: Array<{ name: string; text: string }>): ProcessLog[] {
  const out = new Map<string, ProcessLog>();
  const add = (host: string, pid: number, line: string) => {
    const k = `${host}|${pid}`;
    const e = out.get(k) ?? { host, pid, text: '' };
    e.text += line + '\n';
    out.set(k, e);
  };
  for (const f of files) {
    const owner = ncclLogOwner(f.name);
    if (!owner) continue;
    for (const line of f.text.split('\n')) {
      const m = /^([^:\s]+):(\d+):\d+ /.exec(line);
      if (m) add(m[1]!, Number(m[2]), line);
      else if (line.trim()) add(owner.host, owner.pid, line);
    }
  }
  return [...out.values()];
}

/**
 * Whether a log's host (NCCL's %h: the hostname cut at the first '.') names the plugin's host
 * (gethostname, '/' replaced by '_').
 */
export function sameHost(logHost: string, pluginHost: string): boolean {
  return logHost === pluginHost || pluginHost.split('.')[0] === logHost;
}

/**
 * Joins one process's log to its plugin communicators.
 * @param comms the plugin's communicators of this process (any order)
 * @param text that process's NCCL debug log
 * @param who how the process is named in problems ("pid 123")
 */
export function joinProcessViews(comms: ViewComm[], text: string, who: string): ProcessViews {
  const log = parseInitCreations(text);
  const problems: string[] = [];
  const byComm = new Map<number, TraceNcclView>();
  if (log.malformed > 0) problems.push(`${who}: ${log.malformed} unreadable Init line(s) in NCCL's log skipped ("Init timings" lines, or Init lines too long to be NCCL's)`);
  const ordered = [...comms].sort((a, b) => a.tInit - b.tInit);
  const taken = new Set<number>();
  const withParts = log.creations.filter((c) => c.parts !== null);
  let unjoined = 0;
  // First every creation with a commId, then the rest by order (a split child's commId is never printed).
  for (const c of withParts.filter((x) => x.commId !== null)) {
    const same = ordered.filter((k) => !taken.has(k.i) && normalizeCommId(k.commId) === c.commId);
    const hit = same.find((k) => k.rank === c.rank && k.nranks === c.nranks) ?? same[0];
    if (!hit) { unjoined++; continue; }
    taken.add(hit.i);
    byComm.set(hit.i, { fn: c.fn, parts: { ...c.parts! }, n: 1, join: 'commId' });
  }
  for (const c of withParts.filter((x) => x.commId === null)) {
    const hit = ordered.find((k) => !taken.has(k.i) && k.rank === c.rank && k.nranks === c.nranks);
    if (!hit) { unjoined++; continue; }
    taken.add(hit.i);
    byComm.set(hit.i, { fn: c.fn, parts: { ...c.parts! }, n: 1, join: 'order' });
  }
  if (unjoined > 0) problems.push(`${who}: ${unjoined} creation(s) in NCCL's log matched no communicator the profiler plugin saw (NCCL older than 2.27.3 loads no plugin, or the plugin was not loaded)`);
  const noLine = log.creations.filter((c) => c.complete && c.parts === null).length;
  if (noLine > 0 && withParts.length === 0) problems.push(`${who}: NCCL's log has Init COMPLETE lines but no "Init timings" line (NCCL older than 2.23.4)`);
  // NCCL's warnings: with NCCL_DEBUG unset the job would not have printed them; the trace shows the first ones.
  const warns = text.split('\n').filter((l) => / NCCL WARN /.test(l));
  for (const w of warns.slice(0, 3)) problems.push(`${who}: NCCL warned: ${w.slice(w.indexOf('NCCL WARN ') + 10, w.indexOf('NCCL WARN ') + 310)}`);
  if (warns.length > 3) problems.push(`${who}: ${warns.length} NCCL warnings in all (the first 3 above)`);
  return { byComm, creations: log.creations.length, problems };
}

/**
 * Combines views: MAX per part (an occurrence's ranks) or median per part (a site's occurrences).
 * @returns null when `views` holds none; `n` counts the views combined; `join` is 'order' if any was joined by order
 */
export function combineViews(views: Array<TraceNcclView | null>, how: 'max' | 'median'): TraceNcclView | null {
  const v = views.filter((x): x is TraceNcclView => x !== null);
  if (v.length === 0) return null;
  const names = [...new Set(v.flatMap((x) => Object.keys(x.parts)))];
  const parts: Record<string, number> = {};
  for (const name of names) {
    const xs = v.map((x) => x.parts[name]).filter((y): y is number => y !== undefined).sort((a, b) => a - b);
    if (xs.length === 0) continue;
    parts[name] = how === 'max' ? xs[xs.length - 1]! : xs.length % 2 ? xs[(xs.length - 1) / 2]! : (xs[xs.length / 2 - 1]! + xs[xs.length / 2]!) / 2;
  }
  const fns = [...new Set(v.map((x) => x.fn).filter((f): f is string => f !== null))];
  return { fn: fns.length === 1 ? fns[0]! : null, parts, n: v.length, join: v.some((x) => x.join === 'order') ? 'order' : 'commId' };
}

/** The parts shown as NCCL's view, in NCCL's order (others the line had follow). */
export const NCCL_VIEW_PARTS = ['kernels', 'alloc', 'bootstrap', 'allgathers', 'topo', 'graphs', 'connections', 'rest'] as const;

/** "total 370 (kernels 350, bootstrap 0, topo 10, …) ms" — a view in one line; parts of 0 ms are left out. */
export function formatView(v: TraceNcclView): string {
  const f = (x: number) => (x >= 10 ? x.toFixed(0) : x.toFixed(1));
  const known = NCCL_VIEW_PARTS.filter((p) => v.parts[p] !== undefined && v.parts[p]! > 0).map((p) => `${p} ${f(v.parts[p]!)}`);
  const other = Object.keys(v.parts).filter((p) => p !== 'total' && !(NCCL_VIEW_PARTS as readonly string[]).includes(p) && v.parts[p]! > 0).map((p) => `${p} ${f(v.parts[p]!)}`);
  const total = v.parts.total !== undefined ? `total ${f(v.parts.total)}` : 'no total';
  return `${total}${known.length + other.length ? ` (${[...known, ...other].join(', ')})` : ''} ms`;
}
