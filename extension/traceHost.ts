/**
 * Where "Trace Python File" runs the job: this machine or an SSH host of `commcost.hosts`
 * (the engine of `commcost trace --host H`, client/trace/remote.ts). Pure: no `vscode` import
 * (unit-tested); traceCommand.ts asks the questions and passes the answers here.
 */
import { posix, relative, sep } from 'node:path';
import { isLocalTarget } from '../client/hosts';
import type { RemoteTraceOptions } from '../client/trace/remote';
import { parseHostEntry, SLURM_PREFIX } from './hostEntries';
import { normalizeHostEntry } from './settings';

/** One line of the trace host pick. `offered: false` items are shown with why (`detail`) and refused when picked. */
export interface TraceHostItem {
  /** The entry as written (normalized): `localhost`, `gpu-a`, `gpu-a + gpu-b`, `slurm:login1`. */
  entry: string;
  /** `local`: this machine; `ssh`: one SSH host. */
  kind: 'local' | 'ssh';
  offered: boolean;
  /** Why the entry is not offered (groups, Slurm login nodes, entries that do not parse). */
  detail?: string;
}

/**
 * The pick's items: localhost first, then each entry of `commcost.hosts` in order (duplicates and
 * localhost's aliases dropped). A group `a + b` and a `slurm:` entry are listed as not offered: a
 * trace runs the user's own command on one host (its own launcher starts the other ranks), it does
 * not place an agent per host nor submit through srun.
 * @param settingHosts the raw strings of `commcost.hosts` (untrusted: each is parsed)
 */
export function traceHostItems(settingHosts: readonly string[]): TraceHostItem[] {
  const out: TraceHostItem[] = [{ entry: 'localhost', kind: 'local', offered: true }];
  const seen = new Set(['localhost']);
  for (const raw of settingHosts) {
    const entry = normalizeHostEntry(raw);
    if (entry === '' || seen.has(entry)) continue;
    seen.add(entry);
    if (entry.startsWith(SLURM_PREFIX)) {
      out.push({ entry, kind: 'ssh', offered: false, detail: 'Not for tracing: a Slurm login node runs measurements through srun; trace there with your own srun line (commcost trace --host <login node> -- srun …)' });
      continue;
    }
    try {
      const e = parseHostEntry(entry);
      if (e.moreTargets && e.moreTargets.length > 0) {
        out.push({ entry, kind: 'ssh', offered: false, detail: `Not for tracing: a group runs one agent per host for measurements; a trace runs your job on one host (its launcher starts the other ranks) — pick ${e.target}` });
      } else if (isLocalTarget(e.target)) {
        continue;
      } else {
        out.push({ entry, kind: 'ssh', offered: true });
      }
    } catch (err) {
      out.push({ entry, kind: 'ssh', offered: false, detail: `Not for tracing: ${err instanceof Error ? err.message : String(err)}` });
    }
  }
  return out;
}

/**
 * The default of the "path on the host" input: the active file's path relative to its workspace
 * folder, POSIX separators (it is then relative to the remote working directory). A file outside
 * the folder (or without one) gives its base name.
 * @param file the file's absolute local path
 * @param workspaceFolder the workspace folder's absolute local path, if any
 */
export function defaultRemoteFile(file: string, workspaceFolder: string | undefined): string {
  if (workspaceFolder) {
    const rel = relative(workspaceFolder, file);
    if (rel && !rel.startsWith('..') && !rel.startsWith(sep) && !/^[A-Za-z]:/.test(rel)) return rel.split(sep).join(posix.sep);
  }
  return file.split(/[\\/]/).pop() ?? file;
}

/** The Python on the host: `commcost.python` when it is a bare command name (a path names this machine's interpreter), else python3. */
export function remotePython(configured: string): string {
  const p = configured.trim();
  return p && !/[\\/]/.test(p) ? p : 'python3';
}

/** The answers of the remote trace questions. */
export interface RemoteTraceChoice {
  /** The picked SSH host (an entry with `kind: 'ssh'`, offered). */
  host: string;
  /** The remote working directory as typed; empty or blank = the remote home. */
  remoteCwd: string;
  /** The file's path on the host as typed (relative to `remoteCwd`, or absolute). */
  remoteFile: string;
  /** `commcost.python` as set ('' when unset). */
  python: string;
  /** Local folder the trace is saved under (`<localCwd>/.commcost/traces/`): the workspace folder. */
  localCwd: string;
  /** The extension's `dist/` (the payload deployed to the host). */
  base: string;
}

/** The part of {@link RemoteTraceOptions} the choices decide (the caller adds stdio, signal, log). */
export type RemoteTraceParts = Pick<RemoteTraceOptions, 'command' | 'host' | 'localCwd' | 'remoteCwd' | 'base' | 'simulate' | 'hostKeyPolicy'>;

/**
 * Builds the options of `runRemoteTrace` from the choices: `python3 <file>` (or `commcost.python`
 * when it is a bare name) run in `remoteCwd` (absent = the remote home), saved locally, real NCCL
 * (no simulated NCCL on a host from the editor), an unknown host key refused (traceCommand.ts
 * replaces that policy by a prompt showing the fingerprint).
 * @throws Error (message for the user) for an empty file path or a path with a newline
 */
export function remoteTraceOptions(c: RemoteTraceChoice): RemoteTraceParts {
  const file = c.remoteFile.trim();
  if (!file) throw new Error('the file\'s path on the host is empty: type it relative to the remote working directory, or absolute');
  if (/[\n\r\0]/.test(file) || /[\n\r\0]/.test(c.remoteCwd)) throw new Error('a path on the host may not hold a newline or NUL character');
  const cwd = c.remoteCwd.trim();
  return {
    command: [remotePython(c.python), file],
    host: c.host,
    localCwd: c.localCwd,
    ...(cwd ? { remoteCwd: cwd } : {}),
    base: c.base,
    simulate: false,
    hostKeyPolicy: 'refuse',
  };
}
