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
 * timings log per process when the user has no NCCL log settings (jobEnv.ts). Then merges the
 * per-process records (merge.ts) and saves the trace file (protocol/trace.ts) in
 * `<cwd>/.commcost/traces/` (or `out`). On an SSH host: remote.ts (the same variables, built here).
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import type { TraceFile } from '../../protocol/trace';
import { CommcostError } from '../errors';
import { makePrivateDir } from '../privateDir';
import { linkedCommcostDirProblem, writeFileSafely } from '../safeWrite';
import { interposerEnv, interposerPath, ncclLogEnv } from './jobEnv';
import { mergeTrace, type NativeFrame, type RecordFile, type SourceLocation } from './merge';
import { NCCL_LOG_SUFFIX } from './ncclView';

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
  /** Stop the job (SIGTERM, SIGKILL 5 s later) after this many ms; null or absent: no deadline. */
  deadlineMs?: number | null;
  /** The trace file to write (absolute, or relative to `cwd`); its folder must exist. */
  out?: string;
  /** The environment the job starts from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /**
   * 'inherit': the job's stdout/stderr are this process's (the CLI); else each chunk of text is
   * passed to the callbacks (the extension's output channel). The job's output is never changed.
   */
  stdio: 'inherit' | { stdout: (text: string) => void; stderr: (text: string) => void };
  /** Aborting stops the job: the reason, when a signal name ('SIGINT', 'SIGTERM'), is sent, else SIGTERM; SIGKILL 5 s later. */
  signal?: AbortSignal;
  /** Start the job in a process group of its own and signal the whole group (the extension: a launcher's workers stop too). */
  processGroup?: boolean;
  /** Ask NCCL for its Init timings log (NCCL's view; client/trace/jobEnv.ts `ncclLogEnv`); default true. */
  ncclLog?: boolean;
  /** Preload the C interposer over NCCL's lifecycle calls (native/interposer/; jobEnv.ts `interposerEnv`); default false. */
  interpose?: boolean;
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
}

/**
 * Runs `o.command` traced, merges the records and saves the trace file (write then rename).
 * Never throws for what the job does (crash, signal, cancel: the trace is then 'partial').
 * @throws CommcostError BAD_INPUT for an empty command, an `out` whose folder does not exist, a
 *   `.commcost` or `.commcost/traces` that is a symbolic link, or
 *   missing native artifacts ({@link traceArtifacts})
 */
export async function runTrace(o: TraceRunOptions): Promise<TraceRunResult> {
  const command = o.command;
  if (command.length === 0) throw new CommcostError('BAD_INPUT', 'commcost trace needs a command after --', { hint: 'e.g. commcost trace -- torchrun --nproc-per-node=1 train.py' });
  const art = traceArtifacts(o.base);
  const tracesDir = join(o.cwd, '.commcost', 'traces');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const outFile = o.out ? resolve(o.cwd, o.out) : join(tracesDir, `${stamp}-${traceName(command)}.json`);
  // A committed .commcost or .commcost/traces that is a link (even a dangling one) is refused.
  const linked = await linkedCommcostDirProblem(dirname(outFile), o.out ? `--out ${o.out}` : 'the trace folder .commcost/traces');
  if (linked) throw linked;
  if (!existsSync(dirname(outFile))) {
    if (o.out) throw new CommcostError('BAD_INPUT', `--out ${o.out}: its folder does not exist`, { hint: 'create the folder or pick another file' });
    mkdirSync(dirname(outFile), { recursive: true });
  }
  // A private folder of the OS temp folder (mkdtemp, 0700, checked: ../privateDir.ts), removed below.
  const recordsDir = await makePrivateDir('commcost-trace-');
  try {
    let simLibDir: string | undefined;
    if (o.simulate) {
      simLibDir = join(recordsDir, 'simlib');
      mkdirSync(simLibDir);
      for (const n of ['libnccl.so.2', 'libnccl.so', 'libcuda.so.1', 'libcuda.so']) symlinkSync(art.sim, join(simLibDir, n));
    }
    const dataDir = join(recordsDir, 'records');
    mkdirSync(dataDir);
    const env = traceEnv(o.env ?? process.env, dataDir, art, simLibDir);
    const ncclLog = ncclLogEnv(o.env ?? process.env, dataDir, o.ncclLog !== false);
    Object.assign(env, ncclLog.add);
    if (o.interpose) Object.assign(env, interposerEnv(o.env ?? process.env, interposerPath(o.base ?? __dirname)));
    const startedAt = new Date().toISOString();
    let stopped: string | undefined;
    let startError: string | undefined;
    const deadline = o.deadlineMs ?? null;
    const { code, signal } = await new Promise<{ code: number | null; signal: string | null }>((done) => {
      const piped = o.stdio !== 'inherit';
      const child = spawn(command[0]!, command.slice(1), { env, stdio: piped ? ['ignore', 'pipe', 'pipe'] : 'inherit', cwd: o.cwd, detached: !!o.processGroup });
      if (o.stdio !== 'inherit') {
        const io = o.stdio;
        child.stdout?.setEncoding('utf8').on('data', (t: string) => io.stdout(t));
        child.stderr?.setEncoding('utf8').on('data', (t: string) => io.stderr(t));
      }
      const kill = (sig: NodeJS.Signals) => {
        try {
          if (o.processGroup && child.pid !== undefined) process.kill(-child.pid, sig);
          else child.kill(sig);
        } catch {
          /* already gone */
        }
      };
      let killer: NodeJS.Timeout | undefined;
      const stop = (why: string, sig: NodeJS.Signals) => {
        stopped ??= why;
        kill(sig);
        killer ??= setTimeout(() => kill('SIGKILL'), 5000);
      };
      const onAbort = () => {
        const r: unknown = o.signal?.reason;
        stop('cancelled', r === 'SIGINT' || r === 'SIGTERM' ? r : 'SIGTERM');
      };
      if (o.signal?.aborted) onAbort();
      o.signal?.addEventListener('abort', onAbort);
      const timer = deadline === null ? undefined : setTimeout(() => stop(`deadline of ${deadline / 1000} s`, 'SIGTERM'), deadline);
      let finished = false;
      const finish = (r: { code: number | null; signal: string | null }) => {
        if (finished) return;
        finished = true;
        if (timer) clearTimeout(timer);
        if (killer) clearTimeout(killer);
        o.signal?.removeEventListener('abort', onAbort);
        done(r);
      };
      child.on('error', (e) => {
        startError = `could not start ${command[0]}: ${e.message}`;
        finish({ code: 127, signal: null });
      });
      child.on('close', (c, s) => finish({ code: c, signal: s }));
    });
    const files: RecordFile[] = readdirSync(dataDir)
      .filter((n) => n.endsWith('.jsonl') || n.endsWith(NCCL_LOG_SUFFIX))
      .map((n) => ({ name: n, text: readFileSync(join(dataDir, n), 'utf8') }));
    const trace = mergeTrace(files, { command, startedAt, endedAt: new Date().toISOString(), exitCode: code, signal, ...(stopped ? { stopped } : {}), host: hostname(), ...(ncclLog.skipped ? { ncclLogSkipped: ncclLog.skipped } : { ncclLogAsked: true }) }, addr2lineSymbolizer());
    const result: TraceRunResult = { trace, outFile, exitCode: code, exitSignal: signal, ...(stopped ? { stopped } : {}), ...(startError ? { startError } : {}) };
    try {
      // Never through a link, never in place (temp file O_EXCL|O_NOFOLLOW + rename: ../safeWrite.ts).
      await writeFileSafely(outFile, JSON.stringify(trace, null, 1) + '\n', `the trace ${outFile}`);
    } catch (e) {
      result.saveError = (e as Error).message;
    }
    return result;
  } finally {
    rmSync(recordsDir, { recursive: true, force: true });
  }
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
