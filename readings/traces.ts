/**
 * Traces of the user's own job (`commcost trace`, `.commcost/traces/*.json`) as annotations:
 * which trace answers, and which lines of a document each trace observed. Pure: no `vscode`, no
 * I/O (client/traceStore.ts loads and validates the files and scores a trace's path against the
 * document's; the words are in tracesText.ts; the adapters in extension/annotations/).
 *
 * Every figure shown comes from the trace file.
 *
 * Matching a trace's site to a document line: the site's `file` is the path the job saw (the
 * Python hook's first user frame, or addr2line's for native frames): absolute on the traced host,
 * or relative to the job's folder. A document matches when the paths are equal, when the relative
 * path resolved against a workspace folder is the document, or — the job ran on another host or in
 * another checkout — when the document's workspace-relative path is a trailing part of the
 * trace's path (the longest trailing match wins). Within a matched file, each observed line (the
 * creation, a lazy group's first collective, a teardown) must land on a call site the finder found
 * there of the same role (and API, for creations). When the file was edited since the trace
 * (lines moved), one shift of lines for the whole file is searched, the one that lands most
 * observed lines on such call sites; it is used when it lands at least half of them, and lines it
 * does not land are not shown (never a guess per line).
 */
import { isSimulatedTrace, type TraceFile, type TraceSite } from '../protocol/trace';

/** A trace file read and validated. */
export interface LoadedTrace {
  /** A stable id while loaded ("t0", "t1", …): what picker items and links carry. */
  key: string;
  /** Absolute path of the file. */
  path: string;
  trace: TraceFile;
  /** When the job started (ms since the epoch; the file's mtime when `startedAt` does not parse). */
  time: number;
}

/**
 * The traces that may answer a line, in the order they are asked: the chosen one first, then the
 * others newest first — measured traces only, unless the chosen trace is simulated, and then
 * simulated ones only (as for runs: no file mixes a simulated figure with measured ones, and a
 * simulated trace answers only once the user chose one).
 * @param traces newest first
 */
export function answeringTraces(traces: readonly LoadedTrace[], chosen: LoadedTrace | undefined): LoadedTrace[] {
  const sim = chosen ? isSimulatedTrace(chosen.trace) : false;
  const rest = traces.filter((t) => t !== chosen && isSimulatedTrace(t.trace) === sim);
  return chosen ? [chosen, ...rest] : rest;
}

/** What role an observed line has, as the finder's call-site roles say it (apiMap.ts `ApiRole`). */
export type ObservedRole = 'create' | 'firstCollective' | 'teardown';

/** A call site of the document, as the finder found it (0-based line). */
export interface DocSite {
  line: number;
  api: string;
  role: string;
}

/** What a trace observed at one line of a document. */
export interface TraceObservation {
  trace: LoadedTrace;
  role: ObservedRole;
  /**
   * The trace's sites observed at this line: one for a creation or a lazy group's first
   * collective; for a teardown, every site whose communicators were torn down there.
   */
  sites: TraceSite[];
  /** The line (1-based) the trace recorded. */
  tracedLine: number;
  /** Document line − traced line (0-based vs 1-based accounted): ≠ 0 when the file moved since the trace. */
  shift: number;
}

export interface Anchor {
  role: ObservedRole;
  api: string | null;
  line: number;
  site: TraceSite;
}

/** "file:line" as merge.ts writes `firstCollectiveSite` / `teardownSite`. */
function splitWhere(where: string): { file: string; line: number } | null {
  const m = /^(.*):(\d+)$/.exec(where);
  return m ? { file: m[1]!, line: Number(m[2]) } : null;
}

/** A trace's observed lines per file: creations, lazy first collectives, teardowns (1-based lines). */
export function traceAnchors(trace: TraceFile): Map<string, Anchor[]> {
  const out = new Map<string, Anchor[]>();
  const add = (file: string, a: Anchor) => {
    const list = out.get(file) ?? [];
    list.push(a);
    out.set(file, list);
  };
  for (const site of trace.sites) {
    if (site.file !== null && site.line !== null && site.source !== 'unattributed')
      add(site.file, { role: 'create', api: site.source === 'native' ? null : site.api, line: site.line, site });
    const first = site.firstCollectiveSite ? splitWhere(site.firstCollectiveSite) : null;
    if (first) add(first.file, { role: 'firstCollective', api: null, line: first.line, site });
    const down = site.teardownSite ? splitWhere(site.teardownSite) : null;
    if (down) add(down.file, { role: 'teardown', api: null, line: down.line, site });
  }
  return out;
}

/** Whether anchor `a` may land on document site `d` (same role; same API for a Python creation). */
function lands(a: Anchor, d: DocSite): boolean {
  if (a.role === 'create') return d.role === 'create' && (a.api === null || a.api === d.api);
  return d.role === a.role;
}

/**
 * The lines of one document that `traces` observed, each answered by the first trace (in the
 * order given: {@link answeringTraces}) that observed it.
 * @param docSites the finder's call sites of the document (0-based lines)
 * @param matchScore how well a trace's `file` names the document (0: not at all; higher: better;
 *   client/traceStore.ts `fileMatchScore` on the user's file system)
 * @returns 0-based document line → what the answering trace observed there
 */
export function observeLines(
  docSites: readonly DocSite[],
  traces: readonly LoadedTrace[],
  matchScore: (traceFile: string) => number,
): Map<number, TraceObservation> {
  const out = new Map<number, TraceObservation>();
  for (const t of traces) {
    // The trace's file names that match this document best (several spellings may match).
    let best = 0;
    let anchors: Anchor[] = [];
    for (const [file, list] of traceAnchors(t.trace)) {
      const score = matchScore(file);
      if (score === 0 || score < best) continue;
      if (score > best) anchors = [];
      best = score;
      anchors = anchors.concat(list);
    }
    if (anchors.length === 0) continue;
    const shift = bestShift(anchors, docSites);
    if (shift === undefined) continue;
    for (const a of anchors) {
      const line = a.line - 1 + shift;
      if (out.has(line) && out.get(line)!.trace !== t) continue;
      const d = docSites.find((s) => s.line === line && lands(a, s));
      if (!d) continue;
      const have = out.get(line);
      if (have && have.role === a.role) {
        if (!have.sites.includes(a.site)) have.sites.push(a.site);
        continue;
      }
      if (have) continue; // a creation and a teardown on one line: the first kept (creation first in a file's order)
      out.set(line, { trace: t, role: a.role, sites: [a.site], tracedLine: a.line, shift });
    }
  }
  return out;
}

/**
 * The shift of lines (document line − traced line) that lands the most anchors on call sites of
 * their role: 0 when it lands as many as any; undefined when none lands at least half of them.
 */
export function bestShift(anchors: readonly Anchor[], docSites: readonly DocSite[]): number | undefined {
  const count = (shift: number) => anchors.filter((a) => docSites.some((d) => d.line === a.line - 1 + shift && lands(a, d))).length;
  let best = 0;
  let bestN = count(0);
  const candidates = new Set<number>();
  for (const a of anchors) for (const d of docSites) if (lands(a, d)) candidates.add(d.line - (a.line - 1));
  for (const s of [...candidates].sort((x, y) => Math.abs(x) - Math.abs(y) || x - y)) {
    const n = count(s);
    if (n > bestN) {
      best = s;
      bestN = n;
    }
  }
  // Distinct observed lines: a teardown line shared by several sites counts once.
  const lines = new Set(anchors.map((a) => `${a.role}:${a.line}`)).size;
  const landed = new Set(anchors.filter((a) => docSites.some((d) => d.line === a.line - 1 + best && lands(a, d))).map((a) => `${a.role}:${a.line}`)).size;
  return bestN > 0 && landed * 2 >= lines ? best : undefined;
}
