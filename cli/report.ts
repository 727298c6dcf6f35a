/**
 * `commcost report`: one saved run → its summary on stdout; two or more → the comparison table;
 * one saved trace (`commcost trace`'s file, kind "commcost-trace") → its table. With `--html` (a
 * file, or none: next to the first file) it also writes the self-contained HTML report — the run's,
 * one comparison report, or the trace's (timeline and sites, made again from the trace alone);
 * without it nothing is written.
 */
import type { RunFile } from '../protocol/runFile';
import { CommcostError, errorText } from '../client/errors';
import { renderComparisonReportPieces, renderReportPieces } from '../client/htmlReport';
import { checkOutputFile, loadRun } from '../client/resultsStore';
import { readRegularFile, writeFileSafely } from '../client/safeWrite';
import { renderTraceReport } from '../client/trace/htmlTrace';
import { MAX_TRACE_FILE_BYTES } from '../client/traceStore';
import { validateTraceFile } from '../client/traceSchema';
import type { TraceFile } from '../protocol/trace';
import { formatTrace } from './traceTable';
import { EXIT_OK } from './exitCodes';
import { formatComparison, formatSummary, terminalSafe, type SummaryOptions } from './summary';

/** `--html` as given: a file, `true` (no file: the default next to the input), or absent (no page). */
export type HtmlFlag = string | true | undefined;

/**
 * Both orders of `report`'s operands and `--html`: the word after `--html` is the page to write
 * unless it ends in `.json` or `.jsonl`, which is a run or trace file (`report --html run.json`
 * reports run.json and writes run.html next to it, as `report run.json --html` does). A page whose
 * name ends in .json is not accepted by this rule: name it .html. Pure.
 * @param files the operands as commander parsed them
 * @param html --html as commander parsed it (it takes the next word when there is one)
 * @param argv the command line as typed (commander's rawArgs), to keep the operands in their order:
 *   the first file is the baseline of a comparison
 * @returns the files in the order typed, and --html: the page's name, `true` (next to the first
 *   file) or undefined
 */
export function htmlOperands(files: readonly string[], html: HtmlFlag, argv: readonly string[]): { files: string[]; html: HtmlFlag } {
  if (typeof html !== 'string' || !/\.jsonl?$/i.test(html)) return { files: [...files], html };
  // Take the operands back from the command line in the order typed, each word once.
  const left = [html, ...files];
  const start = argv.indexOf('report');
  const ordered: string[] = [];
  for (const a of start < 0 ? [] : argv.slice(start + 1)) {
    const i = left.indexOf(a);
    if (i < 0) continue;
    ordered.push(a);
    left.splice(i, 1);
  }
  return { files: left.length === 0 ? ordered : [html, ...files], html: true };
}

/** `commcost report a.json b.json …`: the comparison table on stdout and, with --html, one comparison report. */
async function compareReport(files: string[], html: HtmlFlag): Promise<number> {
  const runs: RunFile[] = [];
  for (const file of files) runs.push(await loadRun(file));
  return writeReport(outputOf(html, files[0]!.replace(/\.json$/i, '') + '.compare.html'), () => formatComparison(runs), () => renderComparisonReportPieces(runs));
}

/** Where --html writes: its file, or `byDefault` when given without one; undefined without --html. */
function outputOf(html: HtmlFlag, byDefault: string): { file: string; given: boolean } | undefined {
  if (html === undefined) return undefined;
  return html === true ? { file: byDefault, given: false } : { file: html, given: true };
}

/**
 * Writes `summary()` on stdout; with an output `out`, checks it first (never through a link:
 * outputs.ts), then writes the HTML page `page()` there (a string, or its pieces one after
 * another: a large run's page is never one string) and says where on stderr.
 * @param target the page's file and whether the user named it (named so in an error); undefined: no page
 * @returns EXIT_OK (exitCodes.ts)
 * @throws CommcostError BAD_INPUT when `out` cannot be written
 */
async function writeReport(target: { file: string; given: boolean } | undefined, summary: () => string, page: () => string | Iterable<string>): Promise<number> {
  if (target === undefined) {
    process.stdout.write(summary());
    return EXIT_OK;
  }
  const out = target.file;
  await checkOutputFile(out, target.given ? `--html ${out}` : `--html (the report ${out})`);
  process.stdout.write(summary());
  try {
    await writeFileSafely(out, page(), `the report ${out}`);
  } catch (e) {
    if (e instanceof CommcostError) throw e;
    throw new CommcostError('BAD_INPUT', `cannot write the report ${out}: ${errorText(e)}`, { cause: e });
  }
  process.stderr.write(`wrote ${terminalSafe(out)}\n`);
  return EXIT_OK;
}

/**
 * `commcost report`: the summary (or comparison, or trace table) on stdout; the HTML report only
 * with --html. A run file that passed validation but that the report cannot be made from (a figure
 * the summary cannot divide by) is bad input (exit 2) with the file named, never a stack trace.
 * @param files run files (.json, or a launched run .jsonl), or one trace file
 * @param html --html: a file, `true` (next to the first file: .html, .compare.html), undefined (no page)
 * @param options.verbose --verbose: commcost's own diagnostics in a run's summary (summary.ts SummaryOptions)
 * @returns EXIT_OK (exitCodes.ts)
 * @throws CommcostError BAD_RUN_FILE / BAD_INPUT: a file that cannot be read or used, an output that cannot be written
 */
export async function reportCommand(files: string[], html: HtmlFlag, options: SummaryOptions = {}): Promise<number> {
  try {
    return await reportInner(files, html, options);
  } catch (e) {
    if (e instanceof CommcostError) throw e;
    throw new CommcostError('BAD_RUN_FILE', `cannot report ${files.join(', ')}: the file${files.length > 1 ? 's hold' : ' holds'} figures the report cannot use (${errorText(e)})`, {
      hint: 'the file passed validation but is inconsistent: measure again, or report this file to the commcost maintainers',
      cause: e,
    });
  }
}

const TRACE_KIND = /"kind"\s*:\s*"commcost-trace"/;

/** The trace `file` holds when it is a trace file (kind "commcost-trace"), validated; undefined for anything else. */
async function traceIn(file: string): Promise<TraceFile | undefined> {
  if (/\.jsonl$/i.test(file)) return undefined;
  let json: unknown;
  try {
    // A trace says its "kind" near the top (commcost writes it first): a file whose first 64 KiB do not say so is read once, as a run, by loadRun.
    if (!TRACE_KIND.test(await readRegularFile(file, file, { code: 'BAD_RUN_FILE', head: 65536 }))) return undefined;
    json = JSON.parse(await readRegularFile(file, file, { code: 'BAD_RUN_FILE', maxBytes: MAX_TRACE_FILE_BYTES }));
  } catch {
    return undefined; // loadRun reads it again and says what is wrong
  }
  if (!json || typeof json !== 'object' || (json as { kind?: unknown }).kind !== 'commcost-trace') return undefined;
  return validateTraceFile(json, file);
}

async function reportInner(files: string[], html: HtmlFlag, options: SummaryOptions): Promise<number> {
  const traces = await Promise.all(files.map(traceIn));
  if (traces.some((t) => t !== undefined)) {
    if (files.length > 1) throw new CommcostError('BAD_INPUT', `commcost report compares runs; ${files.filter((_, i) => traces[i]).join(', ')} ${traces.filter(Boolean).length > 1 ? 'are traces' : 'is a trace'}`, { hint: 'report one trace at a time: commcost report <trace.json> [--html FILE]' });
    const trace = traces[0]!;
    return writeReport(outputOf(html, files[0]!.replace(/\.json$/i, '') + '.html'), () => formatTrace(trace), () => renderTraceReport(trace, { base: __dirname }));
  }
  if (files.length > 1) return compareReport(files, html);
  const file = files[0]!;
  // The verdict is derived data: loadRun recomputed it, so older files and newer rules agree.
  const run = await loadRun(file);
  return writeReport(outputOf(html, file.replace(/\.jsonl?$/i, '') + '.html'), () => formatSummary(run, options), () => renderReportPieces(run));
}
