/**
 * The trace store: the workspace's `.commcost/traces/*.json` read, validated and kept (which one
 * the user chose), and a trace's file path matched against a document's on this file system. Which
 * trace answers and which lines it observed are readings/traces.ts's. No `vscode` import.
 *
 * Trace files are untrusted: read only through client/traceSchema.ts `validateTraceFile`, size
 * capped, every text escaped where it is shown.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { isAbsolute, join, normalize, relative, resolve, sep } from 'node:path';
import { validateTraceFile } from './traceSchema';
import { answeringTraces, observeLines, type DocSite, type LoadedTrace, type TraceObservation } from '../readings/traces';

/** Trace files larger than this are not read (bytes). */
export const MAX_TRACE_FILE_BYTES = 16 * 1024 * 1024;
/** The workspace-state key of the trace the user chose (its path). */
export const CHOSEN_TRACE_KEY = 'commcost.chosenTracePath';
/** Where `commcost trace` saves, relative to a workspace folder. */
export const TRACES_DIR = join('.commcost', 'traces');

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

/**
 * The lines of the document at `docPath` that `traces` observed, each answered by the first trace
 * (in the order given: readings/traces.ts `answeringTraces`) that observed it.
 * @param docPath the document's absolute path
 * @param roots the workspace folders (absolute paths)
 * @param docSites the finder's call sites of the document (0-based lines)
 * @returns 0-based document line → what the answering trace observed there
 */
export function observeDocument(docPath: string, roots: readonly string[], docSites: readonly DocSite[], traces: readonly LoadedTrace[]): Map<number, TraceObservation> {
  return observeLines(docSites, traces, (file) => fileMatchScore(file, docPath, roots));
}
