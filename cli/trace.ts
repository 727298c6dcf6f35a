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
import { formatView } from '../client/trace/ncclView';
import { runRemoteTrace } from '../client/trace/remote';
import { runTrace } from '../client/trace/run';
import type { TraceFile, TracePhaseStats } from '../protocol/trace';
import { DEFERRED_MARK, environmentText, isSimulatedTrace, ncclVersionText, sharedTeardownMark } from '../protocol/trace';
import { terminalSafe } from './summary';

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

function ms(s: TracePhaseStats | null): string {
  if (!s) return '—';
  // Below 1 ms two significant digits, so a µs-level phase (a one-rank first collective) never prints "0.00".
  const f = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 1 || x === 0 ? x.toFixed(2) : String(Number(x.toPrecision(2))));
  return s.n > 1 ? `${f(s.medianMs)} (p90 ${f(s.p90Ms)})` : f(s.medianMs);
}

/** The api column's mark of a creation paid after its call returned (the note says where). */

/** One line per Ray worker that recorded: its actor class, pid, node (the hook's `ray` line). */
function rayLines(t: TraceFile): string[] {
  const workers = t.processes.filter((p) => p.ray);
  if (workers.length === 0) return [];
  const nodes = new Set(workers.map((p) => p.ray!.node)).size;
  return [`Ray: ${workers.length} worker${workers.length === 1 ? '' : 's'} on ${nodes} node${nodes === 1 ? '' : 's'}`,
    ...workers.map((p) => `  ${terminalSafe(p.ray!.actor ?? '(task)')}  pid ${p.pid} on ${terminalSafe(p.host)}, node ${terminalSafe(p.ray!.ip ?? '?')} ${terminalSafe(p.ray!.node.slice(0, 12))}, ${p.communicators} communicator${p.communicators === 1 ? '' : 's'}`)];
}

/** The summary table of a trace (text; untrusted strings made terminal-safe). */
export function formatTrace(t: TraceFile): string {
  const lines: string[] = [];
  if (isSimulatedTrace(t)) lines.push('SIMULATED — every figure below comes from commcost\'s simulated NCCL, not a GPU');
  lines.push(`commcost trace: ${terminalSafe(t.command.join(' '))} — ${t.processes.length} process${t.processes.length === 1 ? '' : 'es'}, ${t.status}${t.ncclVersion ? `, NCCL ${ncclVersionText(t.ncclVersion)}` : ''}`);
  if (t.environment) lines.push(`environment: ${terminalSafe(environmentText(t.environment))}`);
  lines.push('Each phase: MAX over ranks per occurrence, then median (p90) over occurrences, ms. cold = a process\'s first communicator. first use = the op of the group\'s first collective (its figure is that op\'s).');
  const ray = t.sites.some((s) => s.actors?.length);
  const rows = [['site', 'api', 'n', 'creation', 'first use', 'first collective', 'connect', 'teardown', 'memory', ...(ray ? ['ray actors'] : []), '']];
  for (const s of t.sites) {
    const where = s.file ? `${s.file.length > 48 ? '…' + s.file.slice(-47) : s.file}${s.line !== null ? `:${s.line}` : ''}` : '(unattributed)';
    rows.push([terminalSafe(where), terminalSafe(s.api) + (s.lazy ? ' (lazy)' : '') + (s.deferred ? DEFERRED_MARK[s.deferred.kind] : ''), String(s.count), ms(s.creation), terminalSafe(s.firstUse ?? (s.firstCollective ? '?' : '—')), ms(s.firstCollective), ms(s.connect), ms(s.teardown) + sharedTeardownMark(s),
      s.memoryBytes !== null ? `${(s.memoryBytes / 2 ** 20).toFixed(0)} MiB` : '—', ...(ray ? [terminalSafe((s.actors ?? []).join(', ') || '—')] : []), s.cold ? 'cold' : '']);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) lines.push(r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd());
  lines.push(...ncclViewLines(t));
  lines.push(...rayLines(t));
  for (const s of t.sites) for (const n of s.notes) lines.push(`note: ${terminalSafe(n)}`);
  if (t.clock?.kind === 'wall-offsets') lines.push(`clock: ${terminalSafe(t.clock.note)}`);
  for (const m of t.missing) lines.push(`missing: ${terminalSafe(m)}`);
  for (const p of t.problems) lines.push(`problem: ${terminalSafe(p)}`);
  return lines.join('\n') + '\n';
}

/**
 * "NCCL's view": per site, NCCL's own Init timings breakdown (median over occurrences of the MAX
 * over ranks, ms), or why there is none.
 */
export function ncclViewLines(t: TraceFile): string[] {
  const out: string[] = [];
  const withView = t.sites.filter((s) => s.nccl);
  if (withView.length > 0) {
    out.push("NCCL's view (its own Init timings log: MAX over ranks, median over occurrences; NCCL prints 10 ms steps):");
    for (const s of withView) {
      const where = s.file ? `${s.file.length > 48 ? '…' + s.file.slice(-47) : s.file}${s.line !== null ? `:${s.line}` : ''}` : '(unattributed)';
      const v = s.nccl!;
      out.push(`  ${terminalSafe(where)}  ${terminalSafe(v.fn ?? s.api)}: ${terminalSafe(formatView(v))}${v.join === 'order' ? ' (joined by order: NCCL prints no commId for a split child)' : ''}`);
    }
  } else if (t.ncclLog?.note) out.push(`NCCL's view: none — ${terminalSafe(t.ncclLog.note)}`);
  else if (t.ncclLog && t.ncclLog.creations === 0) out.push("NCCL's view: none — NCCL's log held no creation (NCCL older than 2.23.4 prints no Init timings)");
  return out;
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
  for (const x of r.leftovers?.recovered ?? []) io.err(`commcost trace: an earlier trace ended before saving (its commcost process was killed); its records are saved as ${terminalSafe(x.file)}\n`);
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
