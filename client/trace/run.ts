/**
 * The engine of `commcost trace`, shared by the CLI (cli/trace.ts: a thin wrapper that prints)
 * and the extension (extension/traceCommand.ts, "commcost: Trace Python File"). No `vscode`
 * import.
 *
 * Runs the user's own command with every process instrumented through environment variables
 * only: NCCL_PROFILER_PLUGIN = commcost's plugin (a value the user had is passed on as
 * COMMCOST_TRACE_CHAIN_PLUGIN, which the plugin loads and forwards to), PYTHONPATH = the hook's
 * folder first, COMMCOST_TRACE_DIR = the records folder; with `simulate`, LD_LIBRARY_PATH starts
 * with a folder where libnccl.so.2 and libcuda.so.1 are the simulated NCCL; NCCL's own Init
 * timings log per process when the user has no NCCL log settings (jobEnv.ts); COMMCOST_TRACE_RAY, the
 * variables a Ray driver's ray.init passes on to its workers (jobEnv.ts `rayForwardEnv`). Then merges the
 * per-process records (merge.ts) and saves the trace file (protocol/trace.ts) in
 * `<cwd>/.commcost/traces/` (or `out`) through client/safeWrite.ts. The job runs in localJob.ts;
 * its records are kept in leftovers.ts's private folder. On an SSH host: remote.ts (the same
 * variables, built here).
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import type { TraceFile } from '../../protocol/trace';
import { CommcostError, errorText } from '../errors';
import { linkedCommcostDirProblem, outputTargetProblem, writeFileSafely } from '../safeWrite';
import { interposerEnv, interposerPath, ncclLogEnv, rayForwardEnv, ranksElsewhere } from './jobEnv';
import { makeTraceTemp, privateTraceRoot, processStart, readRecords, recoverLeftovers, writeOwner, type LeftoverReport } from './leftovers';
import { runLocalJob } from './localJob';
import { mergeTrace, type NativeFrame, type SourceLocation } from './merge';

/**
 * Where the built native artifacts and the Python hook are: `<base>/native` (a bundle's dist/),
 * `<base>/../dist/native`, and the hook in the source tree's native/pyhook.
 * @param base the folder of the running bundle (dist/ for the CLI and the extension)
 * @throws CommcostError BAD_INPUT naming the artifact that was not found and how to build it
 */
export function traceArtifacts(base = __dirname): { plugin: string; hookDir: string; sim: string } {
  const nativeDirs = [join(base, 'native'), join(base, '..', 'dist', 'native')];
  const pick = (rel: string[]) => {
    for (const d of nativeDirs) for (const r of rel) if (existsSync(join(d, r))) return join(d, r);
    return null;
  };
  const plugin = pick([join(`linux-${process.arch}`, 'libcommcost-profiler.so'), 'libcommcost-profiler.so']);
  const sim = pick([join(`linux-${process.arch}`, 'libnccl-sim.so'), 'libnccl-sim.so']);
  const hooks = [join(base, 'native', 'pyhook'), join(base, '..', 'native', 'pyhook'), join(base, '..', 'dist', 'native', 'pyhook')];
  const hookDir = hooks.find((d) => existsSync(join(d, 'sitecustomize.py'))) ?? null;
  if (!plugin || !hookDir || !sim)
    throw new CommcostError('BAD_INPUT', `commcost trace: ${!plugin ? 'the profiler plugin libcommcost-profiler.so' : !sim ? 'the simulated NCCL' : 'the Python hook sitecustomize.py'} was not found next to ${base}`, {
      hint: 'build it: node native/build.mjs (or reinstall commcost)',
    });
  return { plugin, hookDir, sim };
}

/** The job's environment: only variables are added or prepended to `base`; nothing else changes. */
export function traceEnv(base: NodeJS.ProcessEnv, recordsDir: string, art: { plugin: string; hookDir: string }, simLibDir?: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...base, COMMCOST_TRACE_DIR: recordsDir, NCCL_PROFILER_PLUGIN: art.plugin };
  const user = base.NCCL_PROFILER_PLUGIN;
  if (user && user !== art.plugin) env.COMMCOST_TRACE_CHAIN_PLUGIN = user;
  env.PYTHONPATH = base.PYTHONPATH ? `${art.hookDir}:${base.PYTHONPATH}` : art.hookDir;
  if (simLibDir) env.LD_LIBRARY_PATH = base.LD_LIBRARY_PATH ? `${simLibDir}:${base.LD_LIBRARY_PATH}` : simLibDir;
  return env;
}

/** addr2line over a native frame (PIE and shared objects: address − load base), cached; null when it cannot say. */
export function addr2lineSymbolizer(): (f: NativeFrame) => SourceLocation | null {
  const cache = new Map<string, SourceLocation | null>();
  return (f) => {
    let addr: bigint;
    try {
      const a = BigInt(f.addr), b = BigInt(f.base);
      const elfType = readFileSync(f.obj).readUInt16LE(16); // e_type: 2 EXEC (absolute), 3 DYN (relative)
      addr = elfType === 2 ? a : a - b;
    } catch {
      return null;
    }
    const key = `${f.obj}@${addr}`;
    if (cache.has(key)) return cache.get(key)!;
    let loc: SourceLocation | null = null;
    try {
      const out = execFileSync('addr2line', ['-f', '-C', '-e', f.obj, `0x${addr.toString(16)}`], { encoding: 'utf8', timeout: 5000 }).split('\n');
      const m = /^(.*):(\d+)/.exec(out[1] ?? '');
      if (m && m[1] !== '??') loc = { file: m[1]!, line: Number(m[2]), func: out[0] && out[0] !== '??' ? out[0] : null };
    } catch {
      loc = null;
    }
    cache.set(key, loc);
    return loc;
  };
}

/** What {@link runTrace} runs and how. */
export interface TraceRunOptions {
  /** The job: a program and its arguments (any launcher: torchrun, srun, mpirun, python, a C program). */
  command: string[];
  /** The job's working folder; the trace is saved in `<cwd>/.commcost/traces/` unless `out`. */
  cwd: string;
  /** The folder of the running bundle, where the native artifacts are found ({@link traceArtifacts}). */
  base?: string;
  /** Run against commcost's simulated NCCL (every figure then SIMULATED). */
  simulate?: boolean;
  /** Stop the job (SIGTERM to its process group, SIGKILL 5 s later) after this many ms; null or absent: no deadline. */
  deadlineMs?: number | null;
  /** The trace file to write (absolute, or relative to `cwd`); its folder must exist; a link or a folder there is refused before the job runs. */
  out?: string;
  /** The environment the job starts from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /**
   * 'inherit': the job's stdout/stderr are this process's (the CLI); else each chunk of text is
   * passed to the callbacks (the extension's output channel). The job's output is never changed.
   */
  stdio: 'inherit' | { stdout: (text: string) => void; stderr: (text: string) => void };
  /** Aborting asks the job to stop: the reason, when a signal name ('SIGINT', 'SIGTERM', 'SIGHUP'), is sent once, else SIGTERM; SIGKILL `killAfterMs` later. */
  signal?: AbortSignal;
  /** ms after `signal` aborts before SIGKILL; null: never (the job is given the time its own handler takes; the CLI). Default 5000. */
  killAfterMs?: number | null;
  /** Aborting ends the job: SIGTERM now, SIGKILL 5 s later (the CLI's second Ctrl-C). */
  force?: AbortSignal;
  /**
   * Start the job in a process group of its own and signal the whole group (the CLI and the
   * extension: a launcher's forked ranks stop too, and a terminal's Ctrl-C reaches the job only
   * through commcost, once).
   */
  processGroup?: boolean;
  /** Ask NCCL for its Init timings log (NCCL's view; client/trace/jobEnv.ts `ncclLogEnv`); default true. */
  ncclLog?: boolean;
  /** Preload the C interposer over NCCL's lifecycle calls (native/interposer/; jobEnv.ts `interposerEnv`); default false. */
  interpose?: boolean;
  /**
   * A running Ray cluster for the driver's `ray.init()` (RAY_ADDRESS: `auto`, `host:6379`). With or
   * without it, the hook carries the trace to the job's Ray workers through ray.init's runtime_env
   * (jobEnv.ts `rayForwardEnv`, native/pyhook/commcost_ray.py).
   */
  rayAddress?: string;
}

/** What {@link runTrace} did. */
export interface TraceRunResult {
  /** The merged trace (also when it could not be saved). */
  trace: TraceFile;
  /** Where it was saved (or was to be saved). */
  outFile: string;
  /** Why it could not be saved; absent when saved. */
  saveError?: string;
  /** Why the job was stopped ('cancelled', 'deadline of N s'); absent when it ended by itself. */
  stopped?: string;
  /** The job's exit code (127 when it could not start), null when it died by a signal. */
  exitCode: number | null;
  exitSignal: string | null;
  /** Why the job could not start, when it could not. */
  startError?: string;
  /** What this trace did with the folders of earlier traces that did not finish: here (leftovers.ts), or on the SSH host for `--host` (remoteLeftovers.ts). */
  leftovers?: LeftoverReport;
}

/**
 * Runs `o.command` traced, merges the records and saves the trace file (client/safeWrite.ts: never
 * through a link, a failed write leaves any previous file whole and no temp file). First saves the
 * records of earlier traces that did not finish (leftovers.ts `recoverLeftovers`). The records are
 * kept in this user's private folder (leftovers.ts), removed once the trace is saved, kept for the
 * next trace when it cannot be.
 * Never throws for what the job does (crash, signal, cancel: the trace is then 'partial').
 * @throws CommcostError BAD_INPUT for an empty command, an `out` whose folder does not exist or that
 *   is a link or a folder (before the job runs), a `.commcost` or `.commcost/traces` that is a
 *   symbolic link, a private records folder that is not this user's, or missing native artifacts ({@link traceArtifacts})
 */
export async function runTrace(o: TraceRunOptions): Promise<TraceRunResult> {
  const command = o.command;
  if (command.length === 0) throw new CommcostError('BAD_INPUT', 'commcost trace needs a command after --', { hint: 'e.g. commcost trace -- torchrun --nproc-per-node=1 train.py' });
  const art = traceArtifacts(o.base);
  const outFile = o.out ? resolve(o.cwd, o.out) : defaultTraceFile(o.cwd, command);
  await checkTraceOut(outFile, o.out);
  if (!o.out) mkdirSync(dirname(outFile), { recursive: true });
  const root = privateTraceRoot();
  const leftovers = await recoverLeftovers(root, addr2lineSymbolizer());
  const base = o.env ?? process.env;
  const elsewhere = ranksElsewhere(command, base);
  const ncclLog = ncclLogEnv(base, '', o.ncclLog !== false, elsewhere);
  const startedAt = new Date().toISOString();
  const owner = { host: hostname(), command, outFile, startedAt, ...(ncclLog.skipped ? { ncclLogSkipped: ncclLog.skipped } : {}) };
  const temp = makeTraceTemp(root, owner);
  let keep = false;
  try {
    let simLibDir: string | undefined;
    if (o.simulate) {
      simLibDir = join(temp.dir, 'simlib');
      mkdirSync(simLibDir);
      for (const n of ['libnccl.so.2', 'libnccl.so', 'libcuda.so.1', 'libcuda.so']) symlinkSync(art.sim, join(simLibDir, n));
    }
    const dataDir = temp.records;
    const env = traceEnv(base, dataDir, art, simLibDir);
    Object.assign(env, ncclLogEnv(base, dataDir, o.ncclLog !== false, elsewhere).add);
    if (o.interpose) Object.assign(env, interposerEnv(base, interposerPath(o.base ?? __dirname)));
    if (o.rayAddress) env.RAY_ADDRESS = o.rayAddress;
    env.COMMCOST_TRACE_RAY = rayForwardEnv(base, env);
    const ran = await runLocalJob(command, {
      env, cwd: o.cwd, stdio: o.stdio, processGroup: !!o.processGroup, deadlineMs: o.deadlineMs ?? null,
      ...(o.signal ? { signal: o.signal } : {}), ...(o.force ? { force: o.force } : {}), ...(o.killAfterMs !== undefined ? { killAfterMs: o.killAfterMs } : {}),
      onStart: (pid) => writeOwner(temp.dir, { pid: process.pid, pidStart: processStart(process.pid), ...owner, ...(o.processGroup ? { jobPgid: pid } : {}) }),
    });
    const { code, signal, stopped, startError } = ran;
    const files = readRecords(dataDir);
    const trace = mergeTrace(files, { command, startedAt, endedAt: new Date().toISOString(), exitCode: code, signal, ...(stopped ? { stopped } : {}), host: hostname(), ...(ncclLog.skipped ? { ncclLogSkipped: ncclLog.skipped } : { ncclLogAsked: true }) }, addr2lineSymbolizer());
    const result: TraceRunResult = { trace, outFile, exitCode: code, exitSignal: signal, leftovers, ...(stopped ? { stopped } : {}), ...(startError ? { startError } : {}) };
    try {
      await writeFileSafely(outFile, JSON.stringify(trace, null, 1) + '\n', `the trace ${outFile}`);
    } catch (e) {
      // Nothing is lost: the records stay, and the next trace saves them (leftovers.ts).
      keep = files.length > 0;
      result.saveError = `${errorText(e)}${keep ? ` (the job's records are kept in ${temp.dir}; the next commcost trace saves them as a recovered trace)` : ''}`;
    }
    return result;
  } finally {
    if (!keep) rmSync(temp.dir, { recursive: true, force: true });
  }
}

/** `<cwd>/.commcost/traces/<time>-<name>.json`: where a trace of `command` is saved by default. */
export function defaultTraceFile(cwd: string, command: readonly string[]): string {
  return join(cwd, '.commcost', 'traces', `${new Date().toISOString().replace(/[:.]/g, '-')}-${traceName(command)}.json`);
}

/**
 * Checks, before the job runs, that the trace can be written at `outFile`: its folder exists (when
 * given by --out) and it is not a link, a folder or anything but a regular file.
 * @param given the --out text as the user wrote it (absent: the default file)
 * @throws CommcostError BAD_INPUT saying what is wrong and what to do
 */
export async function checkTraceOut(outFile: string, given?: string): Promise<void> {
  const label = given !== undefined ? `--out ${given}` : `the trace ${outFile}`;
  // A committed .commcost or .commcost/traces that is a link (even a dangling one) is refused.
  const linked = await linkedCommcostDirProblem(dirname(outFile), given !== undefined ? `--out ${given}` : 'the trace folder .commcost/traces');
  if (linked) throw linked;
  const problem = await outputTargetProblem(outFile, label);
  if (problem) throw problem;
  if (given !== undefined && !existsSync(dirname(outFile))) throw new CommcostError('BAD_INPUT', `--out ${given}: its folder does not exist`, { hint: 'create the folder or pick another file' });
}

/** The file name part of a trace of `command`: the script it runs (a `.py` argument), else the program's name; only `[\w.-]`. */
export function traceName(command: readonly string[]): string {
  const script = [...command].reverse().find((a) => /\.py$/.test(a));
  return basename(script ?? command[0] ?? 'job').replace(/[^\w.-]/g, '_');
}

/** Whether this machine has an NVIDIA GPU the driver lists (`nvidia-smi -L` prints a "GPU n:" line; 5 s at most). Never throws. */
export function hasGpu(): Promise<boolean> {
  return new Promise((done) => {
    execFile('nvidia-smi', ['-L'], { timeout: 5000 }, (err, stdout) => done(!err && /^GPU \d+/m.test(String(stdout))));
  });
}
