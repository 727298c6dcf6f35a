/**
 * `commcost trace [--out FILE] [--html FILE] [--host H [--cwd DIR]] [--simulate] [--interpose] [--ray-address ADDR] [--deadline SECONDS] [--no-nccl-log] -- <command…>`: runs the user's
 * own command (any launcher: torchrun, srun, mpirun, python, a C program) with every process
 * instrumented through environment variables only, then merges the per-process records
 * (client/trace/merge.ts), prints a table per call site on stderr (the job's stdout stays the job's
 * alone) and saves a trace file (protocol/trace.ts) in `.commcost/traces/` (or --out); `commcost report
 * <trace.json>` prints the table again.
 *
 * Environment given to the job: NCCL_PROFILER_PLUGIN = commcost's plugin (a value the user had is
 * passed on as COMMCOST_TRACE_CHAIN_PLUGIN, which the plugin loads and forwards to),
 * PYTHONPATH = the hook's folder first, COMMCOST_TRACE_DIR = the records folder. With --simulate,
 * LD_LIBRARY_PATH starts with a folder where libnccl.so.2 and libcuda.so.1 are the simulated NCCL.
 * The engine is client/trace/run.ts (shared with the extension's "Trace Python File"); this file
 * parses the flags and prints. With --host H the job runs on an SSH host (client/trace/remote.ts: the
 * payload deployed by content hash, the same variables, the records downloaded and merged here; in
 * the remote home unless --cwd DIR). The job's stdout/stderr pass through untouched; the exit code
 * of `commcost trace` is the job's (1 when the trace could not be written, 2 on bad input).
 */
import { CommcostError } from '../client/errors';
import { resolve } from 'node:path';
import { outputTargetProblem, writeFileSafely } from '../client/safeWrite';
import { renderTraceReport } from '../client/trace/htmlTrace';
import { runRemoteTrace } from '../client/trace/remote';
import { runTrace } from '../client/trace/run';
import { terminalSafe } from './summary';
import { formatTrace, ncclViewLines } from './traceTable';

export { formatTrace, ncclViewLines };

export { addr2lineSymbolizer, traceArtifacts, traceEnv } from '../client/trace/run';

/** The flags of `commcost trace`. */
export interface TraceFlags {
  out?: string;
  simulate?: boolean;
  deadline?: string;
  /** false: --no-nccl-log (NCCL's Init timings log is not asked for). */
  ncclLog?: boolean;
  /** --html FILE: also write the HTML report (timeline per rank, per-site table). */
  html?: string;
  /** --interpose: preload the C interposer (times each NCCL lifecycle call and names its caller). */
  interpose?: boolean;
  /** --ray-address ADDR: the running Ray cluster the driver's ray.init() joins (RAY_ADDRESS; README "Ray"). */
  rayAddress?: string;
  /** --host H: run the job on an SSH host (localhost, an ~/.ssh/config alias or user@host[:port]). */
  host?: string;
  /** --cwd DIR: the job's folder on that host (default: the remote home). */
  cwd?: string;
  /** --accept-new-host-key: trust and record an unknown host key. */
  acceptNewHostKey?: boolean;
  sshConfig?: string;
  knownHosts?: string;
}

/** Parses --deadline (seconds, > 0). @throws CommcostError BAD_INPUT */
function deadlineMs(text: string | undefined): number | null {
  if (text === undefined) return null;
  const n = Number(text);
  if (!(n > 0 && n <= 7 * 24 * 3600)) throw new CommcostError('BAD_INPUT', `--deadline ${JSON.stringify(text)} must be a number of seconds above 0`, { hint: 'e.g. --deadline 600' });
  return n * 1000;
}

/**
 * Runs `command` traced (client/trace/run.ts), prints the table to `out` and saves the trace.
 * The job runs in a process group of its own, so a terminal's Ctrl-C reaches it once, through
 * this process: the first Ctrl-C (or SIGTERM, SIGHUP) is passed on once and the job is given the
 * time its own handler takes; a second Ctrl-C ends it (SIGTERM to its group, SIGKILL 5 s later).
 * The trace is then partial.
 * @returns the job's exit code (1 when it died by a signal or the trace could not be saved)
 * @throws CommcostError BAD_INPUT for an empty command, a bad flag, an --out or --html that is a
 *   link or a folder (before the job runs) or missing artifacts
 */
export async function traceCommand(command: string[], flags: TraceFlags, io: { out: (t: string) => void; err: (t: string) => void; cwd: string; base?: string }): Promise<number> {
  const deadline = deadlineMs(flags.deadline);
  const html = flags.html !== undefined ? resolve(io.cwd, flags.html) : undefined;
  if (html !== undefined) {
    // Refused before the job runs: a link or a folder at --html is bad input, not a late failure.
    const problem = await outputTargetProblem(html, `--html ${flags.html}`);
    if (problem) throw problem;
  }
  const abort = new AbortController(), force = new AbortController();
  let presses = 0;
  const onInt = () => {
    presses++;
    if (presses === 1) {
      io.err('commcost trace: Ctrl-C passed on to the job; waiting for it to end (Ctrl-C again ends it: SIGTERM, then SIGKILL 5 s later)\n');
      abort.abort('SIGINT');
    } else if (presses === 2) {
      io.err('commcost trace: ending the job (SIGTERM to its process group, SIGKILL 5 s later)\n');
      force.abort();
    }
  };
  const onTerm = () => abort.abort('SIGTERM'), onHup = () => abort.abort('SIGHUP');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  process.on('SIGHUP', onHup);
  let r: Awaited<ReturnType<typeof runTrace>>;
  try {
    const common = {
      command, base: io.base ?? __dirname, simulate: !!flags.simulate, deadlineMs: deadline, ...(flags.out ? { out: flags.out } : {}), stdio: 'inherit' as const,
      signal: abort.signal, force: force.signal, killAfterMs: null, ncclLog: flags.ncclLog !== false, interpose: !!flags.interpose,
    };
    if (flags.cwd !== undefined && flags.host === undefined) throw new CommcostError('BAD_INPUT', '--cwd is the job\'s folder on the --host; without --host the job runs in this folder', { hint: 'cd to the folder, or add --host H' });
    if (flags.rayAddress !== undefined && flags.host !== undefined) throw new CommcostError('BAD_INPUT', '--ray-address is for a job run here; with --host give the address in the command', { hint: 'commcost trace --host H -- env RAY_ADDRESS=auto python driver.py' });
    r = flags.host === undefined
      ? await runTrace({ ...common, cwd: io.cwd, processGroup: true, ...(flags.rayAddress !== undefined ? { rayAddress: flags.rayAddress } : {}) })
      : await runRemoteTrace({ ...common, host: flags.host, localCwd: io.cwd, ...(flags.cwd !== undefined ? { remoteCwd: flags.cwd } : {}), hostKeyPolicy: flags.acceptNewHostKey ? 'accept-new' : 'refuse',
        ...(flags.sshConfig !== undefined ? { sshConfigPath: flags.sshConfig } : {}), ...(flags.knownHosts !== undefined ? { knownHostsPath: flags.knownHosts } : {}), log: (l) => io.err(`commcost trace: ${terminalSafe(l)}\n`) });
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
    process.off('SIGHUP', onHup);
  }
  for (const x of r.leftovers?.recovered ?? []) io.err(`commcost trace: an earlier trace ended before saving (its commcost process was killed); its records are saved as ${terminalSafe(x.file)} (from ${terminalSafe(x.from)}, now removed)\n`);
  for (const x of r.leftovers?.kept ?? []) io.err(`commcost trace: kept ${terminalSafe(x.dir)}: ${terminalSafe(x.why)}\n`);
  if (r.startError) io.err(`commcost trace: ${terminalSafe(r.startError)}\n`);
  // The table goes to stderr (and the trace file), never into the job's own stdout, which passed through untouched.
  io.err(formatTrace(r.trace));
  if (r.saveError !== undefined) {
    io.err(`commcost trace: could not save the trace to ${r.outFile}: ${terminalSafe(r.saveError)}\n`);
    return 1;
  }
  io.err(`commcost trace: saved ${r.outFile}\n`);
  if (html !== undefined) {
    try {
      await writeFileSafely(html, renderTraceReport(r.trace, { base: io.base ?? __dirname }), `--html ${flags.html}`);
      io.err(`commcost trace: wrote ${terminalSafe(html)}\n`);
    } catch (e) {
      io.err(`commcost trace: could not write the HTML report ${terminalSafe(html)}: ${terminalSafe((e as Error).message)}\n`);
      return 1;
    }
  }
  return r.exitCode ?? 1;
}
