/**
 * `commcost report`: one saved run → its summary on stdout and a self-contained HTML report;
 * two or more → the comparison table and one comparison report; one saved trace (`commcost trace`'s
 * file, kind "commcost-trace") → its table on stdout and its HTML report (timeline and sites), made
 * again from the trace alone.
 */
import type { RunFile } from '../protocol/runFile';
import { CommcostError, errorText } from '../client/errors';
import { renderComparisonReport, renderReport } from '../client/htmlReport';
import { checkOutputFile, loadRun } from '../client/resultsStore';
import { readRegularFile, writeFileSafely } from '../client/safeWrite';
import { renderTraceReport } from '../client/trace/htmlTrace';
import { MAX_TRACE_FILE_BYTES } from '../client/traceStore';
import { validateTraceFile } from '../client/traceSchema';
import type { TraceFile } from '../protocol/trace';
import { formatTrace } from './traceTable';
import { EXIT_OK } from './exitCodes';
import { formatComparison, formatSummary, terminalSafe } from './summary';

/** `commcost report a.json b.json …`: the comparison table on stdout and one comparison report. */
async function compareReport(files: string[], html: string | undefined): Promise<number> {
  const runs: RunFile[] = [];
  for (const file of files) runs.push(await loadRun(file));
  return writeReport(html ?? files[0]!.replace(/\.json$/i, '') + '.compare.html', html !== undefined, () => formatComparison(runs), () => renderComparisonReport(runs));
}

/**
 * Checks the output `out` (never through a link: outputs.ts), writes `summary()` on stdout, then the
 * HTML page `page()` to `out`, and says where on stderr.
 * @param given whether `out` came from --html (named so in an error)
 * @returns EXIT_OK (exitCodes.ts)
 * @throws CommcostError BAD_INPUT when `out` cannot be written
 */
async function writeReport(out: string, given: boolean, summary: () => string, page: () => string): Promise<number> {
  await checkOutputFile(out, given ? `--html ${out}` : `the report ${out}`);
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
 * `commcost report`: a run file that passed validation but that the report cannot be made from
 * (a figure the summary cannot divide by) is bad input (exit 2) with the file named, never a
 * stack trace.
 * @param files run files (.json, or a launched run .jsonl); `html` the output (default: next to the first run file)
 * @returns EXIT_OK (exitCodes.ts)
 * @throws CommcostError BAD_RUN_FILE / BAD_INPUT: a file that cannot be read or used, an output that cannot be written
 */
export async function reportCommand(files: string[], html: string | undefined): Promise<number> {
  try {
    return await reportInner(files, html);
  } catch (e) {
    if (e instanceof CommcostError) throw e;
    throw new CommcostError('BAD_RUN_FILE', `cannot report ${files.join(', ')}: the file${files.length > 1 ? 's hold' : ' holds'} figures the report cannot use (${errorText(e)})`, {
      hint: 'the file passed validation but is inconsistent: measure again, or report this file to the commcost maintainers',
      cause: e,
    });
  }
}

/** The trace `file` holds when it is a trace file (kind "commcost-trace"), validated; undefined for anything else. */
async function traceIn(file: string): Promise<TraceFile | undefined> {
  if (/\.jsonl$/i.test(file)) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(await readRegularFile(file, file, { code: 'BAD_RUN_FILE', maxBytes: MAX_TRACE_FILE_BYTES }));
  } catch {
    return undefined; // loadRun reads it again and says what is wrong
  }
  if (!json || typeof json !== 'object' || (json as { kind?: unknown }).kind !== 'commcost-trace') return undefined;
  return validateTraceFile(json, file);
}

async function reportInner(files: string[], html: string | undefined): Promise<number> {
  const traces = await Promise.all(files.map(traceIn));
  if (traces.some((t) => t !== undefined)) {
    if (files.length > 1) throw new CommcostError('BAD_INPUT', `commcost report compares runs; ${files.filter((_, i) => traces[i]).join(', ')} ${traces.filter(Boolean).length > 1 ? 'are traces' : 'is a trace'}`, { hint: 'report one trace at a time: commcost report <trace.json> [--html FILE]' });
    const trace = traces[0]!;
    return writeReport(html ?? files[0]!.replace(/\.json$/i, '') + '.html', html !== undefined, () => formatTrace(trace), () => renderTraceReport(trace, { base: __dirname }));
  }
  if (files.length > 1) return compareReport(files, html);
  const file = files[0]!;
  // The verdict is derived data: loadRun recomputed it, so older files and newer rules agree.
  const run = await loadRun(file);
  return writeReport(html ?? file.replace(/\.jsonl?$/i, '') + '.html', html !== undefined, () => formatSummary(run), () => renderReport(run));
}
