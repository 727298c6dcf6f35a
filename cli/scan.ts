/**
 * `commcost scan [paths…] [--run FILE] [--json]`: every lifecycle call site under the given files
 * and folders, on the editor's engine — the call-site finder (sites/callSites.ts),
 * the wrapper index (wrapperIndex.ts: callers of functions that make a lifecycle call, across the
 * files scanned) and the one rule that picks a call's figure (figures.ts `resolveAnnotation`, with
 * the `--run` file as the only run). Folders are walked by sourceWalk.ts (no `.git`,
 * `node_modules`, virtual environments or `.gitignore`d paths; regular files inside the scanned
 * folder only, each under its size cap). Prints a table, or with `--json` the document README.md
 * describes ("commcost scan"). A file not read or not parsed is listed with why (`skipped`), and
 * the scan then exits {@link EXIT_INCOMPLETE}.
 */
import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import { CommcostError, errorText } from '../client/errors';
import { loadRun } from '../client/resultsStore';
import { siteIsEager } from '../readings/siteVariant';
import { ANNOTATION_DEFAULTS } from '../readings/annotationSettings';
import { firstCollectiveElsewhere, formatMs, memoryPerGpu, runLabel } from '../readings/annotationText';
import { noFigureOfCodeSize } from '../readings/labelText';
import { CallSiteFinder, nodeModulesGrammars, shippedGrammars, type CallSite, type GrammarFiles } from '../sites/callSites';
import { resolveAnnotation } from '../readings/figures';
import { isSimulatedProfile, runTime, type Profile, type StaleRules } from '../readings/profiles';
import type { BoundedRead } from '../client/boundedRead';
import { readSourceFileSync, SOURCE_EXTENSIONS, sourceLanguageOf, walkSources, type SourceFile } from '../client/sourceWalk';
import { EXIT_INCOMPLETE, EXIT_OK } from './exitCodes';
import { WrapperIndex, type WrapperCallSite } from '../sites/wrapperIndex';
import { mayHaveSites } from '../sites/prefilter';
import { terminalSafe } from './summary';

/** The version of the `--json` document (`commcostScan`). */
export const SCAN_JSON_VERSION = 1;

export interface ScanFlags {
  run?: string;
  json?: boolean;
}

/** Where the command writes and what it resolves paths against (process.stdout/stderr and cwd by default). */
export interface ScanIo {
  out: (text: string) => void;
  err: (text: string) => void;
  cwd: string;
  /** The tree-sitter files (default: dist/grammars beside the bundle, else node_modules). */
  grammars?: GrammarFiles;
}

/** A figure of the run for one call site (the headline of the variant the rule picks). */
export interface ScanFigure {
  experiment: string;
  variant: string;
  step: string;
  label: string;
  medianMs: number;
  p90Ms: number;
  n: number;
  memoryPerGpuBytes: number | null;
  /** Ranks of the communicator the headline variant creates, where the run tells (1: nothing to connect); null when unknown. */
  childRanks: number | null;
  via: string | null;
  /**
   * Set when this creation's first collective is a call site of its own further on (a group held
   * in a variable, or a lazy init_process_group's default group): the figure is then the call
   * alone, and that 1-based line pays the first collective (`medianMs`), so one cost is shown at one line.
   */
  firstCollectiveAt: { line: number; medianMs: number } | null;
  simulated: boolean;
  stale: string[];
  /** The run's label as the editor shows it: host · NCCL version · date. */
  run: string;
}

/** One call site of the `--json` document (README.md documents every field). */
export interface ScanSite {
  file: string;
  line: number;
  column: number;
  endLine: number;
  endColumn: number;
  callee: string;
  api: string;
  role: string;
  language: 'python' | 'cpp';
  callsInto: string | null;
  chain: string[];
  wrapper: { file: string; line: number; calls: number } | null;
  enclosingFunction: string | null;
  repeated: string | null;
  /** The ranks of the group the call makes where the code fixes them (1: nothing to connect), else null. */
  groupSize: number | null;
  /** A call of a cached getter: it creates on its first call only. */
  firstCallOnly: boolean;
  figure: ScanFigure | null;
  notMeasured: string | null;
}

export interface ScanReport {
  commcostScan: number;
  roots: string[];
  run: { file: string; label: string; simulated: boolean } | null;
  filesScanned: number;
  sites: ScanSite[];
  /** Files (and folders) not read, parsed or listed, with why; the scan is incomplete when there is one. */
  skipped: { file: string; reason: string }[];
}

/** The `.wasm` files: beside the bundle (dist/cli.js → dist/grammars), else the repository's node_modules (tests). */
export function defaultGrammars(): GrammarFiles {
  const shipped = shippedGrammars(join(__dirname, 'grammars'));
  return existsSync(shipped.runtime) ? shipped : nodeModulesGrammars(join(__dirname, '..'));
}

/**
 * The absolute paths of the scan's roots, checked: each must exist and be a folder or a source
 * file the finder reads.
 * @throws CommcostError BAD_INPUT naming the path, where it was looked for, and what to do
 */
export async function scanRoots(paths: readonly string[], cwd: string): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths.length > 0 ? paths : ['.']) {
    const abs = resolve(cwd, p);
    let s;
    try {
      s = await stat(abs);
    } catch (e) {
      const missing = (e as NodeJS.ErrnoException).code === 'ENOENT';
      throw new CommcostError(
        'BAD_INPUT',
        `scan: ${missing ? 'no such file or folder' : 'cannot read'} ${JSON.stringify(p)} (${abs}${missing ? '' : `: ${errorText(e)}`})`,
        {
          hint: 'give files or folders to scan, relative to the current folder or absolute (default: the current folder)',
        },
      );
    }
    if (!s.isDirectory() && !(s.isFile() && sourceLanguageOf(abs))) {
      throw new CommcostError('BAD_INPUT', `scan: ${JSON.stringify(p)} (${abs}) is neither a folder nor a Python, C, C++ or CUDA file`, {
        hint: `give folders, or files ending in ${Object.keys(SOURCE_EXTENSIONS).join(' ')}`,
      });
    }
    out.push(abs);
  }
  return out;
}

/** `path` for people: relative to `cwd` when inside it. */
function shown(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  if (rel === '') return '.';
  return !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

function isWrapperSite(site: CallSite): site is WrapperCallSite {
  return Array.isArray((site as Partial<WrapperCallSite>).chain);
}

/** The figure of `site` in `profile` by the editor's rule, or why there is none. */
function figureOf(
  site: CallSite,
  sites: readonly CallSite[],
  profile: Profile | undefined,
  rules: StaleRules,
): Pick<ScanSite, 'figure' | 'notMeasured'> {
  if (!profile) return { figure: null, notMeasured: 'no run given (--run FILE)' };
  const a = resolveAnnotation(site.api, profile, [profile], rules, {
    eager: siteIsEager(site, sites),
    chosen: profile,
    ...(site.groupSize !== undefined ? { groupSize: site.groupSize } : {}),
  });
  const m = a.measured;
  if (!m) return { figure: null, notMeasured: a.missing?.reason ?? 'not measured in this run' };
  // One cost at one line (annotationText.ts firstCollectiveElsewhere): the call here, the first collective at its own line.
  const elsewhere = firstCollectiveElsewhere(a, site, sites);
  const h = elsewhere?.call ?? m.headline;
  return {
    figure: {
      experiment: m.experiment,
      variant: m.main.variant,
      step: h.step,
      label: h.label,
      medianMs: h.stats.median,
      p90Ms: h.stats.p90,
      n: h.stats.n,
      memoryPerGpuBytes: memoryPerGpu(m) ?? null,
      childRanks: m.main.childRanks ?? null,
      via: m.via ?? null,
      firstCollectiveAt: elsewhere ? { line: elsewhere.line, medianMs: elsewhere.first.stats.median } : null,
      simulated: a.simulated,
      stale: a.stale,
      run: runLabel(m.source),
    },
    notMeasured: null,
  };
}

/** Whether the finder still parses (tree-sitter's WebAssembly module does not recover from an abort). */
function parserAlive(finder: CallSiteFinder): boolean {
  try {
    finder.parse('python', '').delete();
    return true;
  } catch {
    return false;
  }
}

/** A file's text read again (sourceWalk.ts `readSourceFileSync`: the same checks). @throws Error with why it was not read */
function rereadSource(f: SourceFile): string {
  const r = readSourceFileSync(f);
  if (!r.ok) throw new Error(r.reason);
  return r.text;
}

/**
 * Scans `roots` (from {@link scanRoots}): every file is read, parsed and indexed, then each
 * file's sites (the finder's and those through wrappers) are listed with their figure. A file
 * that is not read (sourceWalk.ts: not a regular file, a link leading outside, over the size cap,
 * unreadable), not parsed (the parser failed on it) or not listed is reported through `warn` and
 * in `skipped`, and the scan goes on with the next; when the parser cannot parse at all after a
 * failure, each file left is listed as skipped with that reason.
 */
/** How many source files `scanFiles` reads ahead of the one it parses, with a reader of its own (`options.read`). */
const READ_AHEAD = 32;
/** A settled placeholder that frees a read's text once the file is handed to the index. */
const DONE: Promise<BoundedRead> = Promise.resolve({ ok: false, reason: 'consumed' });

export async function scanFiles(
  roots: readonly string[],
  options: {
    cwd: string;
    finder: CallSiteFinder;
    profile?: Profile;
    runFile?: string;
    warn: (line: string) => void;
    /**
     * Reads a file (default: sourceWalk.ts `readSourceFileSync`, regular files under the size cap,
     * each read synchronously when its turn comes: on Megatron-LM, warm in the page cache, the reads'
     * share of a CPU profile halved against 32 async reads in flight; issue #27).
     */
    read?: (path: string) => Promise<string>;
  },
): Promise<ScanReport> {
  const { cwd, finder, profile } = options;
  const walked = await walkSources(roots);
  const skipped: ScanReport['skipped'] = [];
  const skip = (path: string, reason: string, verb: 'read' | 'scan' = 'read'): void => {
    skipped.push({ file: shown(path, cwd), reason });
    options.warn(`cannot ${verb} ${shown(path, cwd)}: ${reason} (skipped)`);
  };
  for (const u of walked.unreadable) skip(u.path, u.reason);
  const given = options.read;
  const read = given
    ? async (f: SourceFile): Promise<BoundedRead> => {
        try {
          return { ok: true, text: await given(f.path) };
        } catch (e) {
          return { ok: false, reason: errorText(e) };
        }
      }
    : undefined;
  const index = await WrapperIndex.create(finder);
  try {
    const scanned: string[] = [];
    // A given reader's reads run ahead of the parser (at most READ_AHEAD files in flight), so the parse of one
    // file overlaps the reads of the next instead of waiting for each in turn.
    const pending: Promise<BoundedRead>[] = [];
    const ahead = (upTo: number): void => {
      for (let j = pending.length; j < Math.min(upTo, walked.files.length); j++) pending.push(read!(walked.files[j]!));
    };
    for (let i = 0; i < walked.files.length; i++) {
      const f = walked.files[i]!;
      let text: BoundedRead;
      if (read) {
        ahead(i + READ_AHEAD);
        text = await pending[i]!;
        pending[i] = DONE;
      } else text = readSourceFileSync(f);
      if (!text.ok) {
        skip(f.path, text.reason);
        continue;
      }
      try {
        // The C/C++ grammar loads for the first file that may hold a site (a lazily loaded finder).
        if (f.language !== 'python' && mayHaveSites(f.language, text.text)) await finder.ready(f.language);
        // The index keeps no text of a file it does not parse yet: it reads the file again if a wrapper's call wakes it.
        index.setFile(f.path, f.language, text.text, given ? {} : { reread: () => rereadSource(f) });
        scanned.push(f.path);
      } catch (e) {
        skip(f.path, `the parser failed on it: ${errorText(e)}`, 'scan');
        if (!parserAlive(finder)) {
          const why = `not parsed: the parser stopped working after ${shown(f.path, cwd)}; scan without that file`;
          for (const rest of walked.files.slice(i + 1)) skip(rest.path, why, 'scan');
          break;
        }
      }
    }
    const rules: StaleRules = { now: Date.now(), staleAfterDays: ANNOTATION_DEFAULTS.staleAfterDays, expectedNcclVersion: '' };
    const sites: ScanSite[] = [];
    let listed = 0;
    for (const path of scanned) {
      let all: CallSite[];
      try {
        all = index.sites(path);
      } catch (e) {
        skip(path, `its call sites could not be listed: ${errorText(e)}`, 'scan');
        continue;
      }
      listed++;
      for (const s of all) {
        const into = (s as CallSite & { callsInto?: unknown }).callsInto;
        const w = isWrapperSite(s) ? s : undefined;
        sites.push({
          file: shown(path, cwd),
          line: s.range.start.line + 1,
          column: s.range.start.character + 1,
          endLine: s.range.end.line + 1,
          endColumn: s.range.end.character + 1,
          callee: s.written.replace(/\s+/g, ''),
          api: s.api,
          role: s.role,
          language: s.language,
          callsInto: typeof into === 'string' ? into : null,
          chain: w ? w.chain : [],
          wrapper: w ? { file: shown(w.wrapper.file, cwd), line: w.wrapper.line + 1, calls: w.wrapper.calls } : null,
          enclosingFunction: s.enclosingFunction ?? null,
          repeated: s.repeated?.detail ?? null,
          groupSize: s.groupSize ?? null,
          firstCallOnly: s.firstCallOnly === true,
          ...figureOf(s, all, profile, rules),
        });
      }
    }
    for (const [path, why] of index.notReadAgain) skip(path, `not read again when a call of a wrapper needed it: ${why}`);
    return {
      commcostScan: SCAN_JSON_VERSION,
      roots: roots.map((r) => shown(r, cwd)),
      run: profile ? { file: options.runFile ?? profile.path, label: runLabel(profile), simulated: isSimulatedProfile(profile) } : null,
      filesScanned: listed,
      sites,
      skipped,
    };
  } finally {
    index.dispose();
  }
}

const clip = (text: string, width: number): string => (text.length > width ? `${text.slice(0, width - 1)}…` : text);

/** The end of the table: each file not scanned with why, when there is one (then the scan is incomplete). */
function skippedText(report: ScanReport): string {
  const n = report.skipped.length;
  if (n === 0) return '';
  const list = report.skipped.map((k) => `  ${terminalSafe(k.file)}: ${terminalSafe(k.reason)}`);
  return `\n${n} file${n === 1 ? '' : 's'} not scanned (the scan is incomplete):\n${list.join('\n')}\n`;
}

/**
 * The table `commcost scan` prints: one line per call site, then the files not scanned with why;
 * every text from files or the run escaped for the terminal.
 */
export function formatScanTable(report: ScanReport): string {
  const via = report.sites.filter((s) => s.chain.length > 0).length;
  const files = new Set(report.sites.map((s) => s.file)).size;
  const head = `${report.sites.length} lifecycle call site${report.sites.length === 1 ? '' : 's'} in ${files} of ${report.filesScanned} file${report.filesScanned === 1 ? '' : 's'} scanned${via > 0 ? ` (${via} through wrappers)` : ''}`;
  const source = report.run
    ? `figures from ${report.run.label}${report.run.simulated ? ' (SIMULATED: not a measurement)' : ''}`
    : 'no run given: pass --run FILE for the figures';
  const lines = [terminalSafe(head), terminalSafe(source)];
  if (report.sites.length === 0) return `${lines.join('\n')}\n${skippedText(report)}`;
  const rows = report.sites.map((s) =>
    [
      `${s.file}:${s.line}`,
      clip(s.callee, 40),
      s.role,
      `${s.api}${s.callsInto && s.callsInto !== s.api ? ` → ${s.callsInto}` : ''}`,
      s.chain.length > 0
        ? clip(
            `via ${s.chain[0]}${s.wrapper && s.wrapper.calls > 1 ? ` (${s.wrapper.calls} lifecycle calls)` : ''}${s.chain
              .slice(1)
              .map((c) => ` → ${c}`)
              .join('')}`,
            90,
          )
        : '',
      s.figure
        ? `${s.figure.simulated ? 'SIMULATED ' : ''}${s.firstCallOnly ? 'may create (first call only): ' : ''}${figureText(s.figure, s.groupSize)}${s.figure.stale.length > 0 ? ' (stale)' : ''}`
        : `not measured: ${s.notMeasured ?? ''}`,
    ].map((c) => terminalSafe(c)),
  );
  const header = ['FILE:LINE', 'CALL', 'ROLE', 'API', 'THROUGH', 'FIGURE'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  lines.push('', line(header), ...rows.map(line));
  return `${lines.join('\n')}\n${skippedText(report)}`;
}

function figureText(f: ScanFigure, groupSize: number | null): string {
  // The code's group size has no figure in this run: said instead, never the other size's figure first (as the editor's lens).
  const none = noFigureOfCodeSize({ ...(groupSize !== null ? { groupSize } : {}), main: f.childRanks !== null ? { childRanks: f.childRanks } : {} });
  if (none) return `${none}: ${f.experiment} ${f.variant}`;
  const one =
    groupSize === 1
      ? `, one rank: nothing to connect${f.childRanks === 1 ? '' : ` (figure of a ${f.childRanks ?? 'larger'}-rank group)`}`
      : groupSize !== null && f.childRanks !== null && f.childRanks !== groupSize
        ? `, a ${groupSize}-rank group (figure of a ${f.childRanks}-rank one)`
        : f.childRanks === 1
          ? ', one-rank communicator: nothing to connect'
          : '';
  const at = f.firstCollectiveAt ? `; its first collective (line ${f.firstCollectiveAt.line}) pays ${formatMs(f.firstCollectiveAt.medianMs)}` : '';
  return `${formatMs(f.medianMs)} ${f.label} (${f.experiment} ${f.variant}, p90 ${formatMs(f.p90Ms)}, n = ${f.n}${one})${at}`;
}

/**
 * Runs `commcost scan`; resolves with the exit code: {@link EXIT_OK}, or {@link EXIT_INCOMPLETE}
 * when a file was not read or not parsed (listed in `skipped` and on stderr). Bad paths and run
 * files throw CommcostError BAD_INPUT / BAD_RUN_FILE, which cli/main.ts turns into exit 2.
 */
export async function scanCommand(paths: readonly string[], flags: ScanFlags, io: ScanIo): Promise<number> {
  const roots = await scanRoots(paths, io.cwd);
  let profile: Profile | undefined;
  if (flags.run !== undefined) {
    const file = resolve(io.cwd, flags.run);
    const run = await loadRun(file);
    const mtime = (await stat(file)).mtimeMs;
    profile = { key: 'p0', path: file, source: 'workspace', run, time: runTime(run, mtime) };
  }
  const finder = await CallSiteFinder.load(io.grammars ?? defaultGrammars(), { lazyCpp: true });
  try {
    const report = await scanFiles(roots, {
      cwd: io.cwd,
      finder,
      ...(profile ? { profile, runFile: shown(profile.path, io.cwd) } : {}),
      warn: (l) => io.err(`commcost scan: ${terminalSafe(l)}\n`),
    });
    io.out(flags.json ? `${JSON.stringify(report, null, 2)}\n` : formatScanTable(report));
    if (report.skipped.length === 0) return EXIT_OK;
    io.err(`commcost scan: incomplete: ${report.skipped.length} file${report.skipped.length === 1 ? '' : 's'} not scanned (listed with why${flags.json ? ' in "skipped"' : ''})\n`);
    return EXIT_INCOMPLETE;
  } finally {
    finder.dispose();
  }
}
