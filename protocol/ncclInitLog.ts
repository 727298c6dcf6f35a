/**
 * NCCL's own account of a communicator's creation, read from its debug log (NCCL_DEBUG=INFO,
 * NCCL_DEBUG_SUBSYS including INIT). Pure; imports only protocol/. Used by the agent's cold-start
 * experiment (remote-agent/ncclInitTimings.ts) and by `commcost trace` (client/trace/ncclView.ts).
 *
 * The `Init timings` INFO line that NCCL ≥ 2.23.4 writes at the end of every creation, e.g.
 *
 *   host:1234:1240 [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank 0 nranks 1 total 0.37
 *   (kernels 0.35, alloc 0.00, bootstrap 0.00, allgathers 0.00, topo 0.01, graphs 0.00,
 *   connections 0.00, rest 0.01)
 *
 * (one line; seconds with two decimals, src/init.cc `ncclCommInitRankFunc`). Earlier releases print
 * `Init timings: rank R nranks N total T (kernels …, bootstrap …, …)` without the function and
 * without `alloc`. Reading is lenient: whatever parts a line has are kept (a missing or unreadable
 * part is left out, an unknown part is kept under its own name); a line that names `Init timings`
 * but has no readable rank, nranks and total, or is longer than {@link MAX_LOG_LINE_CHARS}, is
 * skipped and counted as malformed. Never throws; linear in the log's size.
 *
 * The same function also prints, on the creating thread, `<fn> comm 0x… rank R nranks N … commId
 * 0x<hash> - Init START` and `… - Init COMPLETE` (commId = NCCL's commHash, the value the profiler
 * plugin's init receives; 2.30 prefixes START with `[Rank R] `); a split child prints `parent 0x…
 * childCount C color K key Y` instead of a commId. {@link parseInitCreations} joins each timings
 * line to the COMPLETE line before it on the same thread.
 */
import type { NcclInitParts } from './events';

/** One readable `Init timings` line. */
export interface InitTimingsLine {
  /** The creating function NCCL names ("ncclCommInitRankConfig", "ncclCommSplit"); absent in the older format. */
  fn?: string;
  rank: number;
  nranks: number;
  /** `total` and every part the line printed, ms (NCCL's seconds × 1000). */
  parts: Record<string, number>;
}

/** What a log's text held. */
export interface InitTimingsLog {
  /** Readable lines, in the log's order. */
  lines: InitTimingsLine[];
  /** Lines naming `Init timings` that could not be read, or over MAX_LOG_LINE_CHARS (skipped). */
  malformed: number;
}

/**
 * The longest line read, characters. NCCL's INIT lines are a few hundred characters; a longer
 * line is not NCCL's (or was garbled) and is skipped without a pattern ever running on it: one
 * naming `Init timings`, `Init START` or `Init COMPLETE` is counted as malformed. With the
 * patterns below, each linear in its line, the whole reading is linear in the log's size.
 */
export const MAX_LOG_LINE_CHARS = 4096;

const NUM = '(-?\\d+(?:\\.\\d+)?(?:[eE][-+]?\\d+)?)';
const HEAD = new RegExp(`Init timings(?:\\s*-\\s*([A-Za-z_][\\w]*))?\\s*:\\s*rank\\s+(\\d+)\\s+nranks\\s+(\\d+)\\s+total\\s+${NUM}`);
const NUMBER = new RegExp(`^${NUM}$`);
const PART_NAME = /^[A-Za-z_][\w ]*$/;
const SPACE = /\s/;

/**
 * One `name value` item of the parenthesised parts ("kernels 0.35", "rest 0.01"): the value is
 * the last word, the name (letters, digits, _ and spaces) what comes before it. Scanned once
 * from the end: a pattern with a lazy name before `\s+` backtracks quadratically on a long run of
 * spaces (issue #21, item 7). @returns null when the item is not readable.
 */
function partOf(item: string): [name: string, value: number] | null {
  const t = item.trim();
  let i = t.length - 1;
  while (i >= 0 && !SPACE.test(t[i]!)) i--;
  if (i < 0) return null;
  const value = NUMBER.exec(t.slice(i + 1));
  const name = t.slice(0, i).trimEnd();
  if (!value || !PART_NAME.test(name)) return null;
  return [name.toLowerCase().replace(/\s+/g, '_'), Number(value[1])];
}

/** One `Init timings` line's content, or null when it is not readable. */
function timingsOf(raw: string): InitTimingsLine | null {
  const head = HEAD.exec(raw);
  const total = head ? Number(head[4]) : NaN;
  if (!head || !Number.isFinite(total)) return null;
  const parts: Record<string, number> = { total: total * 1000 };
  // The parenthesised parts after the total; a line cut short keeps the parts it still has.
  const rest = raw.slice(head.index + head[0].length);
  const open = rest.indexOf('(');
  if (open >= 0) {
    const close = rest.indexOf(')', open);
    for (const item of rest.slice(open + 1, close < 0 ? undefined : close).split(',')) {
      const p = partOf(item);
      if (!p) continue;
      const [name, v] = p;
      if (Number.isFinite(v) && name !== 'total' && !Object.hasOwn(parts, name)) parts[name] = v * 1000;
    }
  }
  return { ...(head[1] ? { fn: head[1] } : {}), rank: Number(head[2]), nranks: Number(head[3]), parts };
}

/**
 * Reads every `Init timings` line of an NCCL debug log (any text: other lines are ignored).
 * @param text the log's content (one NCCL_DEBUG_FILE, or several joined by newlines).
 * @returns the readable lines in order, and how many such lines could not be read.
 */
export function parseInitTimings(text: string): InitTimingsLog {
  const lines: InitTimingsLine[] = [];
  let malformed = 0;
  for (const raw of text.split('\n')) {
    if (!raw.includes('Init timings')) continue;
    const l = raw.length <= MAX_LOG_LINE_CHARS ? timingsOf(raw) : null;
    if (l) lines.push(l);
    else malformed++;
  }
  return { lines, malformed };
}

/**
 * The lines of this rank's own creations in a process that made `labels.length` communicators of
 * `nranks` ranks one after the other: the n-th line for (rank, nranks) is the n-th creation.
 * @returns label → that creation's parts (ms); a creation without its line is left out.
 */
export function viewsOfCreations(log: InitTimingsLog, rank: number, nranks: number, labels: readonly string[]): NcclInitParts {
  const mine = log.lines.filter((l) => l.rank === rank && l.nranks === nranks);
  const views: NcclInitParts = {};
  labels.forEach((label, i) => {
    const line = mine[i];
    if (line) views[label] = { ...line.parts };
  });
  return views;
}

/** One creation as NCCL's log tells it (one process's log). */
export interface InitCreation {
  /** The creating function ("ncclCommInitRankConfig", "ncclCommSplit"), from the COMPLETE or timings line. */
  fn: string | null;
  rank: number;
  nranks: number;
  /** NCCL's commHash as lowercase hex without 0x and leading zeros; null for a split/shrink child (none printed) or when no COMPLETE line preceded. */
  commId: string | null;
  /** The split child's color and key, when the line printed them. */
  color: number | null;
  key: number | null;
  /** `Init COMPLETE` was seen for it. */
  complete: boolean;
  /** The `Init timings` parts, ms; null when the line is missing (NCCL older than 2.23.4, or the log was cut). */
  parts: Record<string, number> | null;
}

/** What one process's log held about creations. */
export interface InitCreationsLog {
  /** In the log's order of completion. */
  creations: InitCreation[];
  /** `Init START` lines with no COMPLETE after them (a creation that failed, hung or was cut off). */
  unfinished: number;
  /** Lines naming `Init timings` that could not be read, and lines naming `Init timings`, `Init START` or `Init COMPLETE` over MAX_LOG_LINE_CHARS (skipped). */
  malformed: number;
}

const PREFIX = /^[^:\s]*:\d+:(\d+) /;
/**
 * `<fn> comm 0x… rank R nranks N` then, further on, `- Init START|COMPLETE`: two searches, the
 * second from where the first ended. (One pattern with a lazy `.*?` between them rescans the rest
 * of the line from every `… comm … rank … nranks …` that has no marker after it: quadratic.)
 */
const LIFECYCLE_HEAD = /(?:^|\s)([A-Za-z_]\w*) comm (0x[0-9a-fA-F]+|\(nil\)|\S+) rank (\d+) n[Rr]anks (\d+)/;
const LIFECYCLE_MARK = /-\s*Init (START|COMPLETE)/g;

/** A START or COMPLETE line: its function, rank, nranks, what lies between them and the marker, and which. */
function lifecycleOf(raw: string): { fn: string; rank: number; nranks: number; rest: string; what: 'START' | 'COMPLETE' } | null {
  const head = LIFECYCLE_HEAD.exec(raw);
  if (!head) return null;
  const from = head.index + head[0].length;
  LIFECYCLE_MARK.lastIndex = from;
  const mark = LIFECYCLE_MARK.exec(raw);
  if (!mark) return null;
  return { fn: head[1]!, rank: Number(head[3]), nranks: Number(head[4]), rest: raw.slice(from, mark.index), what: mark[1] as 'START' | 'COMPLETE' };
}

/** Normalises a hex commId ("0x00ab", "00ab", "ab") to "ab"; null when it is not hex. */
export function normalizeCommId(id: string): string | null {
  const m = /^(?:0x)?([0-9a-fA-F]+)$/.exec(id.trim());
  if (!m) return null;
  const v = m[1]!.toLowerCase().replace(/^0+(?=.)/, '');
  return v;
}

/**
 * Reads one process's NCCL debug log into its creations: each `Init COMPLETE` line (with its
 * commId, or a split child's color and key) and the `Init timings` line that follows it on the
 * same thread (NCCL prints them back to back). A timings line without a COMPLETE before it on its
 * thread (an unusual log) is kept with commId null. Never throws.
 * @param text the content of one NCCL_DEBUG_FILE (one process).
 */
export function parseInitCreations(text: string): InitCreationsLog {
  const creations: InitCreation[] = [];
  let malformed = 0;
  const open = new Map<string, number>(); // tid|rank|nranks → START lines still open
  const lastComplete = new Map<string, InitCreation>(); // tid → the COMPLETE awaiting its timings line
  for (const raw of text.split('\n')) {
    if (raw.length > MAX_LOG_LINE_CHARS) {
      if (raw.includes('Init timings') || raw.includes('Init START') || raw.includes('Init COMPLETE')) malformed++;
      continue;
    }
    const tid = PREFIX.exec(raw)?.[1] ?? '';
    if (raw.includes('Init timings')) {
      const t = timingsOf(raw);
      if (!t) { malformed++; continue; }
      const c = lastComplete.get(tid);
      if (c && c.parts === null && c.rank === t.rank && c.nranks === t.nranks) {
        c.parts = t.parts;
        if (!c.fn && t.fn) c.fn = t.fn;
      } else {
        creations.push({ fn: t.fn ?? null, rank: t.rank, nranks: t.nranks, commId: null, color: null, key: null, complete: false, parts: t.parts });
      }
      lastComplete.delete(tid);
      continue;
    }
    const m = lifecycleOf(raw);
    if (!m) continue;
    const { rank, nranks, rest } = m;
    const slot = `${tid}|${rank}|${nranks}`;
    if (m.what === 'START') {
      open.set(slot, (open.get(slot) ?? 0) + 1);
      continue;
    }
    if ((open.get(slot) ?? 0) > 0) open.set(slot, open.get(slot)! - 1);
    const id = /commId (0x[0-9a-fA-F]+)/.exec(rest);
    const color = /color (-?\d+)/.exec(rest), key = /key (-?\d+)/.exec(rest);
    const c: InitCreation = {
      fn: m.fn, rank, nranks, commId: id ? normalizeCommId(id[1]!) : null,
      color: color ? Number(color[1]) : null, key: key ? Number(key[1]) : null, complete: true, parts: null,
    };
    creations.push(c);
    lastComplete.set(tid, c);
  }
  let unfinished = 0;
  for (const n of open.values()) unfinished += n;
  return { creations, unfinished, malformed };
}
