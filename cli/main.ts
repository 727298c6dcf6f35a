/**
 * The `commcost` CLI, headless on the same engine as the extension:
 *   commcost measure [--host <target>] [--experiments …] [--iterations N] … [--json f] [--html f]
 *   commcost measure --nccl A --nccl B …   (each library in turn, then a comparison)
 *   commcost report <run.json> [<run.json> …] [--html <file>]   (two or more: a comparison)
 * Exit codes: see {@link EXIT_HELP} (0 complete, 1 partial/failed/not delivered, 2 bad input or no
 * GPU, 130 quit by a third Ctrl-C). Progress goes to stderr, the summary to stdout.
 *
 * This file is the entry (parse argv, map errors to exit codes, the Ctrl-C listener's lifetime);
 * the commands and flags are in program.ts, `measure` in measure.ts, `report` in report.ts, the
 * exit codes in exitCodes.ts, Ctrl-C in interrupts.ts.
 */
import { CommanderError } from 'commander';
import { CommcostError, errorText } from '../client/errors';
import { EXIT_BAD_INPUT, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_OK } from './exitCodes';
import { interrupts, takeEarlyInterrupts } from './interrupts';
import { buildProgram } from './program';
import { terminalSafe, terminalSafeLines } from './terminalText';

// The commands and flags live in the modules named above. Only what the entry loads anyway is
// exported here: a verb's module (measure.ts, progress.ts, report.ts, …) is loaded by its action
// alone (program.ts), so that `--version` or `report` never evaluates SSH or the engine.
export { EXIT_BAD_INPUT, EXIT_HELP, EXIT_INCOMPLETE, EXIT_INTERRUPTED, EXIT_OK, FILES_EXIT_HELP } from './exitCodes';
export { checkFlags, ncclPaths, parseExperiments, pythonFlag, runOptionsFrom, slurmOptionsFrom, type MeasureFlags } from './measureFlags';
export { buildProgram, versionLine } from './program';

/**
 * A reader that went away (`commcost … | head`) makes later writes fail with EPIPE (and writes
 * after that with ERR_STREAM_DESTROYED): drop that output quietly instead of crashing, so that a
 * measurement still finishes and saves its run.
 */
function ignoreClosedReader(stream: NodeJS.WriteStream): void {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE' && e.code !== 'ERR_STREAM_DESTROYED') throw e;
  });
}

/**
 * Resolves once everything written to `stream` so far has reached the OS, or the reader went
 * away: a pipe takes 64 KiB at once, the rest waits in Node's queue, and `process.exit` before it
 * drains would cut the output there (`commcost scan --json | jq .`).
 */
export function drained(stream: NodeJS.WritableStream & { destroyed?: boolean }): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed) return resolve();
    // Writes complete in order: the callback of an empty write runs after every earlier one.
    stream.write('', () => resolve());
  });
}

/** Sets the exit code and ends the process once stdout and stderr have drained (never cutting piped output). */
export async function exitWhenDrained(code: number): Promise<void> {
  process.exitCode = code;
  await Promise.all([drained(process.stdout), drained(process.stderr)]);
  process.exit(code);
}

/** Parses argv (node, script, …), runs the command, and resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  let code = EXIT_OK;
  ignoreClosedReader(process.stdout);
  ignoreClosedReader(process.stderr);
  const isMeasure = argv.slice(2).find((a) => !a.startsWith('-')) === 'measure';
  // Listen before letting go of bin/commcost.js's listener, so that no Ctrl-C falls in between.
  if (isMeasure) interrupts.install();
  const early = takeEarlyInterrupts();
  if (isMeasure) interrupts.count += early;
  else if (early > 0) return EXIT_INTERRUPTED;
  const program = buildProgram((c) => (code = c));
  try {
    await program.parseAsync(argv);
    return code;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (e.code === 'commander.helpDisplayed' || e.code === 'commander.version' || e.code === 'commander.help') return EXIT_OK;
      const cause = (e as CommanderError & { cause?: unknown }).cause;
      if (cause instanceof CommcostError) process.stderr.write(`commcost: ${terminalSafeLines(cause.describe())}\n`);
      return EXIT_BAD_INPUT;
    }
    if (e instanceof CommcostError) {
      process.stderr.write(`commcost: ${terminalSafeLines(e.describe())}\n`);
      return ['BAD_INPUT', 'BAD_TARGET', 'BAD_RUN_FILE'].includes(e.code) ? EXIT_BAD_INPUT : EXIT_INCOMPLETE;
    }
    process.stderr.write(`commcost: internal error: ${terminalSafe(errorText(e))}\n${e instanceof Error && e.stack ? terminalSafeLines(e.stack) + '\n' : ''}`);
    return EXIT_INCOMPLETE;
  } finally {
    if (isMeasure) interrupts.uninstall();
  }
}

// Run when executed: as this bundle (node dist/cli.js) or through bin/commcost.js; not when imported by tests.
if (require.main === module || /[\\/]bin[\\/]commcost(\.js)?$/.test(require.main?.filename ?? '')) {
  void main(process.argv).then(exitWhenDrained);
}
