/**
 * `commcost report`: one saved run → its summary on stdout and a self-contained HTML report;
 * two or more → the comparison table and one comparison report.
 */
import type { RunFile } from '../protocol/runFile';
import { CommcostError, errorText } from '../client/errors';
import { renderComparisonReport, renderReport } from '../client/htmlReport';
import { checkOutputFile, loadRun } from '../client/resultsStore';
import { writeFileSafely } from '../client/safeWrite';
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

async function reportInner(files: string[], html: string | undefined): Promise<number> {
  if (files.length > 1) return compareReport(files, html);
  const file = files[0]!;
  // The verdict is derived data: loadRun recomputed it, so older files and newer rules agree.
  const run = await loadRun(file);
  return writeReport(html ?? file.replace(/\.jsonl?$/i, '') + '.html', html !== undefined, () => formatSummary(run), () => renderReport(run));
}
