/**
 * Where a local `commcost trace` keeps the job's records while it runs, and what the next trace
 * does with the folders of a trace that could not finish (the CLI SIGKILLed, the machine's trace
 * file not writable). No `vscode` import.
 *
 * Layout: `<tmp>/commcost-<uid>/` (mode 0700, owned by this user: refused otherwise) holds one
 * folder per running trace, `trace-<pid of the commcost process>-XXXXXX/` (mkdtemp, 0700), with
 * `records/` (the job's `COMMCOST_TRACE_DIR`), `simlib/` (the simulated NCCL's links, --simulate)
 * and `owner.json` ({@link TraceOwner}: who runs it, the job's command and process group, and
 * where the trace was to be saved). A trace removes its folder once its trace file is saved; a
 * folder whose commcost process is gone stays, and the next trace ({@link recoverLeftovers})
 * merges its records into `<the planned trace file less .json>.recovered.json` and removes it —
 * unless the job's process group is still alive (then the folder is kept and said so).
 */
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { CommcostError, errorText } from '../errors';
import { writeFileSafely } from '../safeWrite';
import { mergeTrace, type RecordFile, type Symbolizer } from './merge';
import { NCCL_LOG_SUFFIX } from './ncclView';

/** What `owner.json` says about the trace that made a folder. */
export interface TraceOwner {
  /** The commcost process (CLI or extension host) running the trace. */
  pid: number;
  /** That process's start time (/proc/<pid>/stat field 22, clock ticks), so a reused pid is not taken for it; null where /proc is missing. */
  pidStart: string | null;
  host: string;
  command: string[];
  /** The trace file the trace was to write (absolute). */
  outFile: string;
  /** ISO time the job started. */
  startedAt: string;
  /** The job's process group (its pid; set once it started). */
  jobPgid?: number;
  ncclLogSkipped?: string;
}

/** The start time of process `pid` (/proc/<pid>/stat field 22), or null where it cannot be read. */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces and parentheses) start after the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null;
  } catch {
    return null;
  }
}

/** Whether `pid` of this machine (started at `start`, when known) still runs. */
export function processAlive(pid: number, start: string | null): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = processStart(pid);
  return start === null || now === null || now === start;
}

/** Whether any process of group `pgid` still runs (zombies not counted, where /proc tells). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return true;
  }
  return pids.some((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return Number(pgrp) === pgid && state !== 'Z';
    } catch {
      return false;
    }
  });
}

/**
 * This user's private folder for trace records, `<tmp>/commcost-<uid>`: made with mode 0700 when
 * missing, its mode narrowed to 0700 when wider.
 * @param tmp the temp folder (default os.tmpdir(), i.e. $TMPDIR or /tmp)
 * @returns its absolute path
 * @throws CommcostError BAD_INPUT when it is a link, not a folder, or owned by another user (another
 *   user could read or plant records there), naming it and what to do
 */
export function privateTraceRoot(tmp: string = tmpdir()): string {
  const uid = process.getuid?.() ?? 0;
  const root = join(tmp, `commcost-${uid}`);
  try {
    mkdirSync(root, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new CommcostError('BAD_INPUT', `commcost trace: cannot make ${root}: ${errorText(e)}`, { hint: 'set TMPDIR to a folder you can write to', cause: e });
  }
  const st = lstatSync(root);
  if (st.isSymbolicLink() || !st.isDirectory() || st.uid !== uid)
    throw new CommcostError('BAD_INPUT', `commcost trace: ${root} is ${st.isSymbolicLink() ? 'a symbolic link' : !st.isDirectory() ? 'not a folder' : `owned by another user (uid ${st.uid})`}; the job's records are kept only in a folder of yours`, {
      hint: `remove it if it is yours, or set TMPDIR to another folder for commcost trace`,
    });
  if ((st.mode & 0o077) !== 0) chmodSync(root, 0o700);
  return root;
}

/**
 * Makes a trace's folder `<root>/trace-<pid>-XXXXXX` (0700) with `records/` and `owner.json`.
 * @returns the folder and its records folder (absolute)
 */
export function makeTraceTemp(root: string, owner: Omit<TraceOwner, 'pid' | 'pidStart'>): { dir: string; records: string } {
  const dir = mkdtempSync(join(root, `trace-${process.pid}-`));
  const records = join(dir, 'records');
  mkdirSync(records, { mode: 0o700 });
  writeOwner(dir, { pid: process.pid, pidStart: processStart(process.pid), ...owner });
  return { dir, records };
}

/** (Re)writes a trace folder's `owner.json` (the folder is private to this user). */
export function writeOwner(dir: string, owner: TraceOwner): void {
  writeFileSync(join(dir, 'owner.json'), JSON.stringify(owner) + '\n', { mode: 0o600 });
}

/** `owner.json` of a trace folder, or null when missing or malformed. */
function readOwner(dir: string): TraceOwner | null {
  try {
    return parseOwner(readFileSync(join(dir, 'owner.json'), 'utf8'));
  } catch {
    return null;
  }
}

/** The text of an `owner.json` (local, or read from an SSH host) as a {@link TraceOwner}, or null when malformed. */
export function parseOwner(text: string): TraceOwner | null {
  try {
    const o = JSON.parse(text) as Partial<TraceOwner>;
    if (typeof o.pid !== 'number' || !Array.isArray(o.command) || typeof o.outFile !== 'string' || typeof o.startedAt !== 'string') return null;
    return { pid: o.pid, pidStart: typeof o.pidStart === 'string' ? o.pidStart : null, host: String(o.host ?? ''), command: o.command.map(String), outFile: o.outFile, startedAt: o.startedAt,
      ...(typeof o.jobPgid === 'number' ? { jobPgid: o.jobPgid } : {}), ...(typeof o.ncclLogSkipped === 'string' ? { ncclLogSkipped: o.ncclLogSkipped } : {}) };
  } catch {
    return null;
  }
}

/** The record files of a records folder (the profiler's and hook's `.jsonl`, NCCL's `.nccl.log`). */
export function readRecords(dir: string): RecordFile[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((n) => n.endsWith('.jsonl') || n.endsWith(NCCL_LOG_SUFFIX))
    .sort()
    .map((n) => ({ name: n, text: readFileSync(join(dir, n), 'utf8') }));
}

/** What {@link recoverLeftovers} did. */
export interface LeftoverReport {
  /** Traces saved from the records of a trace that did not finish: the file written and the folder it came from (now removed). */
  recovered: { file: string; from: string }[];
  /** Folders kept, and why (the job still runs; the trace could not be written anywhere). */
  kept: { dir: string; why: string }[];
  /** Folders removed that held no record. */
  removed: string[];
}

/**
 * The folders of traces whose commcost process is gone: each one's records merged and saved
 * (through the safe writer) as `<planned trace less .json>.recovered.json`, else in `root` as
 * `recovered-<folder>.json` when that cannot be written; then the folder is removed. A folder
 * whose job's process group still runs is kept. Folders of running traces are not touched.
 * Never throws (what failed is in `kept`).
 * @param root the private folder ({@link privateTraceRoot})
 * @param symbolize the native frames' symboliser (run.ts `addr2lineSymbolizer`)
 */
export async function recoverLeftovers(root: string, symbolize: Symbolizer = () => null): Promise<LeftoverReport> {
  const report: LeftoverReport = { recovered: [], kept: [], removed: [] };
  let names: string[];
  try {
    names = readdirSync(root).filter((n) => /^trace-\d+-[\w]+$/.test(n)).sort();
  } catch {
    return report;
  }
  for (const name of names) {
    const dir = join(root, name);
    const owner = readOwner(dir);
    const pid = owner?.pid ?? Number(/^trace-(\d+)-/.exec(name)![1]);
    if (pid === process.pid || processAlive(pid, owner?.pidStart ?? null)) continue; // a trace still running
    if (owner?.jobPgid !== undefined && groupAlive(owner.jobPgid)) {
      report.kept.push({ dir, why: `the job of an earlier trace (${owner.command.join(' ').slice(0, 120)}) still runs as process group ${owner.jobPgid}; its records are kept until it ends` });
      continue;
    }
    const files = readRecords(join(dir, 'records'));
    if (!owner || files.length === 0) {
      rmSync(dir, { recursive: true, force: true });
      report.removed.push(dir);
      continue;
    }
    const saved = await saveRecovered(owner, files, join(root, `recovered-${basename(dir)}.json`), symbolize);
    if ('why' in saved) {
      report.kept.push({ dir, why: `its records could not be saved as a trace: ${saved.why}` });
      continue;
    }
    rmSync(dir, { recursive: true, force: true });
    report.recovered.push({ file: saved.file, from: dir });
  }
  return report;
}

/**
 * Merges the records of a trace whose commcost process ended before saving (merge.ts, as a
 * finished trace, then marked 'partial' and saying why) and saves the result through the safe
 * writer as `<owner.outFile less .json>.recovered.json`, else as `fallback`. Shared by the local
 * ({@link recoverLeftovers}) and the SSH host's (remoteLeftovers.ts) recovery. Never throws.
 * @param owner the killed trace's `owner.json`; its `host` is the trace file's host
 * @param files its record files (non-empty)
 * @param fallback where to save when the planned place cannot be written (absolute)
 * @returns the file written, or why neither could be
 */
export async function saveRecovered(owner: TraceOwner, files: RecordFile[], fallback: string, symbolize: Symbolizer = () => null): Promise<{ file: string } | { why: string }> {
  let why = '';
  try {
    const trace = mergeTrace(files, {
      command: owner.command, startedAt: owner.startedAt, endedAt: new Date().toISOString(), exitCode: null, signal: null, host: owner.host,
      stopped: 'the commcost process running this trace ended before saving it (killed?); recovered from its records by a later commcost trace',
      ...(owner.ncclLogSkipped ? { ncclLogSkipped: owner.ncclLogSkipped } : { ncclLogAsked: true }),
    }, symbolize);
    trace.status = 'partial';
    const text = JSON.stringify(trace, null, 1) + '\n';
    for (const t of [owner.outFile.replace(/\.json$/, '') + '.recovered.json', fallback]) {
      try {
        await writeFileSafely(t, text, `the recovered trace ${t}`);
        return { file: t };
      } catch (e) {
        why = errorText(e);
      }
    }
  } catch (e) {
    why = errorText(e);
  }
  return { why };
}
