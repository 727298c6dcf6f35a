/**
 * Traces of the user's own job (`commcost trace`, `.commcost/traces/*.json`) as annotations:
 * loading, which trace answers, and which lines of a document each trace observed. Pure: no
 * `vscode` import (the words are in tracesText.ts; the adapters in register.ts and the providers).
 *
 * Trace files are untrusted: read only through client/traceSchema.ts `validateTraceFile`, size
 * capped, every text escaped where it is shown. Every figure shown comes from the trace file.
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
import { readdir, readFile, stat } from 'node:fs/promises';
import { isAbsolute, join, normalize, relative, resolve, sep } from 'node:path';
import { validateTraceFile } from '../../client/traceSchema';
import { isSimulatedTrace, type TraceFile, type TraceSite } from '../../protocol/trace';

/** Trace files larger than this are not read (bytes). */
export const MAX_TRACE_FILE_BYTES = 16 * 1024 * 1024;
/** The workspace-state key of the trace the user chose (its path). */
export const CHOSEN_TRACE_KEY = 'commcost.chosenTracePath';
/** Where `commcost trace` saves, relative to a workspace folder. */
export const TRACES_DIR = join('.commcost', 'traces');

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
 * Validates one trace file's text (client/traceSchema.ts).
 * @param mtimeMs the file's modification time, used when `startedAt` does not parse
 * @throws CommcostError BAD_RUN_FILE (not a trace, a wrong version, a malformed field), SyntaxError (not JSON)
 */
export function parseTrace(text: string, path: string, key: string, mtimeMs: number): LoadedTrace {
  const trace = validateTraceFile(JSON.parse(text), path);
  const started = Date.parse(trace.startedAt);
  return { key, path, trace, time: Number.isFinite(started) ? started : mtimeMs };
}

/**
 * The traces of the workspace's `.commcost/traces/` folders and which one answers. Reload after a
 * folder changes; problems are passed to `report` once per file and message. Never throws.
 */
export class TraceStore {
  private list: LoadedTrace[] = [];
  private readonly keys = new Map<string, string>();
  private readonly reported = new Set<string>();
  private chosenPath: string | undefined;

  /** @param report called once per bad file and problem (for the output channel) */
  constructor(private readonly report: (line: string) => void) {}

  /** Every loaded trace, newest first (by the job's start). */
  get traces(): readonly LoadedTrace[] {
    return this.list;
  }

  byKey(key: string): LoadedTrace | undefined {
    return this.list.find((t) => t.key === key);
  }

  byPath(path: string): LoadedTrace | undefined {
    return this.list.find((t) => t.path === path);
  }

  /** The trace the user chose (picker; restored from the workspace state), while it is loaded. */
  get chosen(): LoadedTrace | undefined {
    return this.chosenPath ? this.byPath(this.chosenPath) : undefined;
  }

  /** Chooses the trace that answers first (by path: survives reloads); undefined forgets the choice. */
  choose(path: string | undefined): void {
    this.chosenPath = path;
  }

  /** The traces that may answer, in order ({@link answeringTraces}). */
  get answering(): LoadedTrace[] {
    return answeringTraces(this.list, this.chosen);
  }

  /**
   * Reads every `*.json` of `dirs` (not recursive). Missing folders are fine; unreadable,
   * oversized or malformed files are skipped and reported once.
   */
  async reload(dirs: readonly string[]): Promise<void> {
    const out: LoadedTrace[] = [];
    for (const dir of dirs) {
      let names: string[];
      try {
        names = (await readdir(dir)).filter((n) => n.endsWith('.json'));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') this.once(dir, `cannot list traces in ${dir}: ${(e as Error).message}`);
        continue;
      }
      for (const name of names) {
        const path = join(dir, name);
        try {
          const st = await stat(path);
          if (!st.isFile()) continue;
          if (st.size > MAX_TRACE_FILE_BYTES) {
            this.once(path, `ignored trace file ${path}: ${st.size} bytes is larger than ${MAX_TRACE_FILE_BYTES}`);
            continue;
          }
          let key = this.keys.get(path);
          if (!key) this.keys.set(path, (key = `t${this.keys.size}`));
          out.push(parseTrace(await readFile(path, 'utf8'), path, key, st.mtimeMs));
        } catch (e) {
          this.once(path, `ignored trace file ${path}: ${e instanceof Error ? e.message : String(e)}`);
        }
      }
    }
    out.sort((a, b) => b.time - a.time || (a.path < b.path ? 1 : -1));
    this.list = out;
  }

  private once(path: string, line: string): void {
    const k = `${path}\n${line}`;
    if (this.reported.has(k)) return;
    this.reported.add(k);
    this.report(line);
  }
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

/** A path's segments ('/' and '\\' both separate; empty and '.' segments dropped). */
function segments(path: string): string[] {
  return path.split(/[\\/]+/).filter((s) => s !== '' && s !== '.');
}

/**
 * How well a trace's `file` names the document at `docPath` (absolute): Infinity for the same
 * path (absolute, or relative resolved against a workspace folder in `roots`); otherwise the number
 * of trailing path segments they share, when the document's whole workspace-relative path is
 * among them (a document outside every folder: at least its folder and name); 0 when they do not match.
 */
export function fileMatchScore(traceFile: string, docPath: string, roots: readonly string[]): number {
  const doc = normalize(docPath);
  if (isAbsolute(traceFile) && normalize(traceFile) === doc) return Infinity;
  if (!isAbsolute(traceFile) && roots.some((r) => resolve(r, traceFile) === doc)) return Infinity;
  const a = segments(traceFile), b = segments(doc);
  let n = 0;
  while (n < a.length && n < b.length && a[a.length - 1 - n] === b[b.length - 1 - n]) n++;
  if (n === 0) return 0;
  const rels = roots
    .map((r) => relative(r, doc))
    .filter((r) => r !== '' && !r.startsWith('..') && !isAbsolute(r))
    .map((r) => segments(r.split(sep).join('/')).length);
  const need = rels.length ? Math.min(...rels) : Math.min(2, b.length);
  return n >= need ? n : 0;
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

interface Anchor {
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
 * @param docPath the document's absolute path
 * @param roots the workspace folders (absolute paths)
 * @param docSites the finder's call sites of the document (0-based lines)
 * @returns 0-based document line → what the answering trace observed there
 */
export function observeDocument(
  docPath: string,
  roots: readonly string[],
  docSites: readonly DocSite[],
  traces: readonly LoadedTrace[],
): Map<number, TraceObservation> {
  const out = new Map<number, TraceObservation>();
  for (const t of traces) {
    // The trace's file names that match this document best (several spellings may match).
    let best = 0;
    let anchors: Anchor[] = [];
    for (const [file, list] of traceAnchors(t.trace)) {
      const score = fileMatchScore(file, docPath, roots);
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
