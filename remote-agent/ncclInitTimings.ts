/**
 * NCCL's own account of a communicator's creation: the `Init timings` INFO line that NCCL ≥ 2.23.4
 * writes (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS including INIT) at the end of every creation, e.g.
 *
 *   host:1234:1240 [0] NCCL INFO Init timings - ncclCommInitRankConfig: rank 0 nranks 1 total 0.37
 *   (kernels 0.35, alloc 0.00, bootstrap 0.00, allgathers 0.00, topo 0.01, graphs 0.00,
 *   connections 0.00, rest 0.01)
 *
 * (one line; seconds with two decimals, src/init.cc `ncclCommInitRankFunc`). Earlier releases print
 * `Init timings: rank R nranks N total T (kernels …, bootstrap …, …)` without the function and
 * without `alloc`. Reading is lenient: whatever parts a line has are kept (a missing or unreadable
 * part is left out, an unknown part is kept under its own name); a line that names `Init timings`
 * but has no readable rank, nranks and total is skipped and counted as malformed. Never throws.
 *
 * Pure (no I/O): the rank reads the log file and hands its text here; the coordinator combines the
 * ranks' views with {@link combineRanksViews} (MAX per part, as every step) and summarises them with
 * {@link summarizeViews}.
 */
import type { NcclInitParts, NcclInitSummary } from '../protocol/events';
import { summarize } from './stats';

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
  /** Lines naming `Init timings` that could not be read (skipped). */
  malformed: number;
}

const NUM = '(-?\\d+(?:\\.\\d+)?(?:[eE][-+]?\\d+)?)';
const HEAD = new RegExp(`Init timings(?:\\s*-\\s*([A-Za-z_][\\w]*))?\\s*:\\s*rank\\s+(\\d+)\\s+nranks\\s+(\\d+)\\s+total\\s+${NUM}`);
const PART = new RegExp(`^\\s*([A-Za-z_][\\w ]*?)\\s+${NUM}\\s*$`);

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
    const head = HEAD.exec(raw);
    const total = head ? Number(head[4]) : NaN;
    if (!head || !Number.isFinite(total)) {
      malformed++;
      continue;
    }
    const parts: Record<string, number> = { total: total * 1000 };
    // The parenthesised parts after the total; a line cut short keeps the parts it still has.
    const rest = raw.slice(head.index + head[0].length);
    const open = rest.indexOf('(');
    if (open >= 0) {
      const close = rest.indexOf(')', open);
      for (const item of rest.slice(open + 1, close < 0 ? undefined : close).split(',')) {
        const m = PART.exec(item);
        if (!m) continue;
        const name = m[1]!.trim().toLowerCase().replace(/\s+/g, '_');
        const v = Number(m[2]);
        if (Number.isFinite(v) && name !== 'total' && !Object.hasOwn(parts, name)) parts[name] = v * 1000;
      }
    }
    lines.push({ ...(head[1] ? { fn: head[1] } : {}), rank: Number(head[2]), nranks: Number(head[3]), parts });
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

/**
 * Combines one iteration's per-rank views: a creation is kept only when every rank has it, and
 * each part is the MAX over the ranks that printed it (the critical path, as every step).
 * @param perRank one entry per rank of the iteration (undefined: the rank read no log).
 */
export function combineRanksViews(perRank: readonly (NcclInitParts | undefined)[]): NcclInitParts {
  const combined: NcclInitParts = {};
  if (perRank.length === 0) return combined;
  const labels = new Set(perRank.flatMap((v) => Object.keys(v ?? {})));
  for (const label of labels) {
    const views = perRank.map((v) => v?.[label]);
    if (views.some((v) => v === undefined)) continue;
    const parts: Record<string, number> = {};
    for (const view of views) for (const [part, ms] of Object.entries(view!)) parts[part] = Math.max(parts[part] ?? -Infinity, ms);
    combined[label] = parts;
  }
  return combined;
}

/** NCCL's view accumulated over a variant's recorded iterations (coordinator side). */
export interface ViewRecord {
  /** creation → part → one value per recorded iteration that had it (ms). */
  samples: Record<string, Record<string, number[]>>;
  /** creation → recorded iterations that had it. */
  iterations: Record<string, number>;
  /** Recorded iterations seen. */
  recorded: number;
  malformedLines: number;
}

/** An empty {@link ViewRecord}. */
export function emptyViewRecord(): ViewRecord {
  return { samples: {}, iterations: {}, recorded: 0, malformedLines: 0 };
}

/** Adds one recorded iteration's combined view and its ranks' malformed-line count to `record`. */
export function addIteration(record: ViewRecord, combined: NcclInitParts, malformedLines: number): void {
  record.recorded++;
  record.malformedLines += malformedLines;
  for (const [label, parts] of Object.entries(combined)) {
    record.iterations[label] = (record.iterations[label] ?? 0) + 1;
    const bucket = (record.samples[label] ??= {});
    for (const [part, ms] of Object.entries(parts)) (bucket[part] ??= []).push(ms);
  }
}

/**
 * The summary of NCCL's view: per creation and part, the median over the iterations that had it.
 * @param expected the creations every iteration should have (e.g. ["cold", "warm"]).
 * @param planNote why the view is missing, when known at plan time (an NCCL older than 2.23.4).
 */
export function summarizeViews(record: ViewRecord, expected: readonly string[], planNote?: string): NcclInitSummary {
  const medians: NcclInitParts = {};
  for (const [label, parts] of Object.entries(record.samples)) {
    medians[label] = {};
    for (const [part, values] of Object.entries(parts)) medians[label]![part] = summarize(values).median;
  }
  const short = expected.filter((label) => (record.iterations[label] ?? 0) < record.recorded);
  let note = planNote;
  if (note === undefined && short.length > 0) {
    note = short
      .map((label) => `the ${label} creation's Init timings line was read on every rank in ${record.iterations[label] ?? 0} of ${record.recorded} iterations`)
      .join('; ');
  }
  return { medians, iterations: { ...record.iterations }, malformedLines: record.malformedLines, ...(note !== undefined ? { note } : {}) };
}

