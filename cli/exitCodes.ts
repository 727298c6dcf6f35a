/**
 * The CLI's exit codes and the texts that `--help` and the README state them in: EXIT_HELP for
 * `commcost measure`, FILES_EXIT_HELP for the commands that read files and measure nothing.
 */

/** Exit codes. */
export const EXIT_OK = 0;
export const EXIT_INCOMPLETE = 1;
export const EXIT_BAD_INPUT = 2;
export const EXIT_INTERRUPTED = 130;

/** The exit codes as `--help` and the README state them. */
export const EXIT_HELP = `Exit codes:
  0    the run is complete and every output was written (report: written)
  1    the run is partial (cancelled with Ctrl-C, stopped by the hang guard or an error; a field
       case's expected hang is its result and leaves the run complete) or failed
       (host unreachable, authentication, the agent died), or an output could not be written
       where asked (the run is then saved in the OS temp folder instead)
  2    bad input, found before anything is measured: a flag, a host name, an output folder that
       cannot be written, a file that is not a commcost run file; or no NVIDIA GPU on the target
       (without --simulate / --simulate-if-no-gpu)
  130  quit by a third Ctrl-C (nothing saved)`;

/** The exit codes of the commands that read files and measure nothing (report, scan, plan). */
export const FILES_EXIT_HELP = `Exit codes:
  0    done: the summary or table printed, and every output written
  1    scan: incomplete, a file was not read or not parsed (each listed with why: a FIFO,
       a link leading outside the folder, over the 8 MiB cap, …); or an unexpected failure,
       said on stderr with what failed
  2    bad input: a flag, a file that cannot be read or is not a commcost run (or trace) file,
       an output that cannot be written`;
