/**
 * `commcost trace [--out FILE] [--simulate] [--deadline SECONDS] -- <command…>`: runs the user's
 * own command (any launcher: torchrun, srun, mpirun, python, a C program) with every process
 * instrumented through environment variables only, then merges the per-process records
 * (client/trace/merge.ts), prints a table per call site and saves a trace file
 * (protocol/trace.ts) in `.commcost/traces/` (or --out).
 *
 * Environment given to the job: NCCL_PROFILER_PLUGIN = commcost's plugin (a value the user had is
 * passed on as COMMCOST_TRACE_CHAIN_PLUGIN, which the plugin loads and forwards to),
 * PYTHONPATH = the hook's folder first, COMMCOST_TRACE_DIR = the records folder. With --simulate,
 * LD_LIBRARY_PATH starts with a folder where libnccl.so.2 and libcuda.so.1 are the simulated NCCL.
 * Local only (SSH hosts: not yet). The job's stdout/stderr pass through untouched; the exit code
 * of `commcost trace` is the job's (1 when the trace could not be written, 2 on bad input).
 */
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { CommcostError } from '../client/errors';
import { mergeTrace, type NativeFrame, type RecordFile, type SourceLocation } from '../client/trace/merge';
import type { TraceFile, TracePhaseStats } from '../protocol/trace';
import { isSimulatedTrace } from '../protocol/trace';
import { terminalSafe } from './summary';

/** The flags of `commcost trace`. */
export interface TraceFlags {
  out?: string;
  simulate?: boolean;
  deadline?: string;
}

/** Where the built native artifacts and the Python hook are (the bundle's dist/, or the source tree's). */
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

/** The job's environment: only variables are added or prepended; nothing else changes. */
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

function ms(s: TracePhaseStats | null): string {
  if (!s) return '—';
  const f = (x: number) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2));
  return s.n > 1 ? `${f(s.medianMs)} (p90 ${f(s.p90Ms)})` : f(s.medianMs);
}

/** The summary table of a trace (text; untrusted strings made terminal-safe). */
export function formatTrace(t: TraceFile): string {
  const lines: string[] = [];
  if (isSimulatedTrace(t)) lines.push('SIMULATED — every figure below comes from commcost\'s simulated NCCL, not a GPU');
  lines.push(`commcost trace: ${terminalSafe(t.command.join(' '))} — ${t.processes.length} process(es), ${t.status}${t.ncclVersion ? `, NCCL ${t.ncclVersion}` : ''}`);
  lines.push('Each phase: MAX over ranks per occurrence, then median (p90) over occurrences, ms. cold = a process\'s first communicator.');
  const rows = [['site', 'api', 'n', 'creation', 'first collective', 'connect', 'teardown', 'memory', '']];
  for (const s of t.sites) {
    const where = s.file ? `${s.file.length > 48 ? '…' + s.file.slice(-47) : s.file}${s.line !== null ? `:${s.line}` : ''}` : '(unattributed)';
    rows.push([terminalSafe(where), terminalSafe(s.api) + (s.lazy ? ' (lazy)' : ''), String(s.count), ms(s.creation), ms(s.firstCollective), ms(s.connect), ms(s.teardown),
      s.memoryBytes !== null ? `${(s.memoryBytes / 2 ** 20).toFixed(0)} MiB` : '—', s.cold ? 'cold' : '']);
  }
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) lines.push(r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd());
  for (const s of t.sites) for (const n of s.notes) lines.push(`note: ${terminalSafe(n)}`);
  for (const m of t.missing) lines.push(`missing: ${terminalSafe(m)}`);
  for (const p of t.problems) lines.push(`problem: ${terminalSafe(p)}`);
  return lines.join('\n') + '\n';
}

/** Parses --deadline (seconds, > 0). @throws CommcostError BAD_INPUT */
function deadlineMs(text: string | undefined): number | null {
  if (text === undefined) return null;
  const n = Number(text);
  if (!(n > 0 && n <= 7 * 24 * 3600)) throw new CommcostError('BAD_INPUT', `--deadline ${JSON.stringify(text)} must be a number of seconds above 0`, { hint: 'e.g. --deadline 600' });
  return n * 1000;
}

/**
 * Runs `command` traced, merges, prints the table to `out` and saves the trace.
 * @returns the job's exit code (1 when it died by a signal or the trace could not be saved)
 * @throws CommcostError BAD_INPUT for an empty command, a bad flag or missing artifacts
 */
export async function traceCommand(command: string[], flags: TraceFlags, io: { out: (t: string) => void; err: (t: string) => void; cwd: string; base?: string }): Promise<number> {
  if (command.length === 0) throw new CommcostError('BAD_INPUT', 'commcost trace needs a command after --', { hint: 'e.g. commcost trace -- torchrun --nproc-per-node=1 train.py' });
  const deadline = deadlineMs(flags.deadline);
  const art = traceArtifacts(io.base);
  const tracesDir = join(io.cwd, '.commcost', 'traces');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const outFile = flags.out ? resolve(io.cwd, flags.out) : join(tracesDir, `${stamp}-${basename(command[0]!).replace(/[^\w.-]/g, '_')}.json`);
  if (!existsSync(dirname(outFile))) {
    if (flags.out) throw new CommcostError('BAD_INPUT', `--out ${flags.out}: its folder does not exist`, { hint: 'create the folder or pick another file' });
    mkdirSync(dirname(outFile), { recursive: true });
  }
  const recordsDir = mkdtempSync(join(tmpdir(), 'commcost-trace-'));
  let simLibDir: string | undefined;
  if (flags.simulate) {
    simLibDir = join(recordsDir, 'simlib');
    mkdirSync(simLibDir);
    for (const n of ['libnccl.so.2', 'libnccl.so', 'libcuda.so.1', 'libcuda.so']) symlinkSync(art.sim, join(simLibDir, n));
  }
  const dataDir = join(recordsDir, 'records');
  mkdirSync(dataDir);
  const env = traceEnv(process.env, dataDir, art, simLibDir);
  const startedAt = new Date().toISOString();
  let stopped: string | undefined;
  const { code, signal } = await new Promise<{ code: number | null; signal: string | null }>((done) => {
    const child = spawn(command[0]!, command.slice(1), { env, stdio: 'inherit', cwd: io.cwd });
    const forward = (sig: NodeJS.Signals) => () => { stopped = 'cancelled'; child.kill(sig); };
    const onInt = forward('SIGINT'), onTerm = forward('SIGTERM');
    process.on('SIGINT', onInt);
    process.on('SIGTERM', onTerm);
    let killer: NodeJS.Timeout | undefined;
    const timer = deadline === null ? undefined : setTimeout(() => {
      stopped = `deadline of ${deadline / 1000} s`;
      child.kill('SIGTERM');
      killer = setTimeout(() => child.kill('SIGKILL'), 5000);
    }, deadline);
    const finish = (r: { code: number | null; signal: string | null }) => {
      if (timer) clearTimeout(timer);
      if (killer) clearTimeout(killer);
      process.off('SIGINT', onInt);
      process.off('SIGTERM', onTerm);
      done(r);
    };
    child.on('error', (e) => { io.err(`commcost trace: could not start ${terminalSafe(command[0])}: ${terminalSafe(e.message)}\n`); finish({ code: 127, signal: null }); });
    child.on('exit', (c, s) => finish({ code: c, signal: s }));
  });
  const files: RecordFile[] = readdirSync(dataDir).filter((n) => n.endsWith('.jsonl')).map((n) => ({ name: n, text: readFileSync(join(dataDir, n), 'utf8') }));
  const trace = mergeTrace(files, { command, startedAt, endedAt: new Date().toISOString(), exitCode: code, signal, ...(stopped ? { stopped } : {}), host: hostname() }, addr2lineSymbolizer());
  io.out(formatTrace(trace));
  try {
    writeFileSync(outFile + '.tmp', JSON.stringify(trace, null, 1) + '\n');
    const { renameSync } = await import('node:fs');
    renameSync(outFile + '.tmp', outFile);
    io.err(`commcost trace: saved ${outFile}\n`);
  } catch (e) {
    io.err(`commcost trace: could not save the trace to ${outFile}: ${terminalSafe((e as Error).message)}\n`);
    return 1;
  } finally {
    rmSync(recordsDir, { recursive: true, force: true });
  }
  return code ?? 1;
}
