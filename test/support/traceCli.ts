/**
 * `commcost trace` as a user runs it (bin/commcost.js, the built bundle) for the fault tests: in a
 * process group of its own, as a shell puts a foreground job, so that a "terminal Ctrl-C" is
 * SIGINT to that whole group; and waits on conditions (polled, bounded), never fixed sleeps.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const bin = join(__dirname, '..', '..', 'bin', 'commcost.js');

/** A running CLI: its process, its stderr so far, and its end. */
export interface TraceCli {
  child: ChildProcess;
  stderr: () => string;
  /** The CLI has exited and its stdout/stderr closed (a job still holding them delays this). */
  ended: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The CLI process has exited (its output may still be arriving). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts `commcost trace ARGS` in `cwd` with `env` added, as the leader of a new process group. */
export function startTraceCli(args: string[], cwd: string, env: Record<string, string>): TraceCli {
  const child = spawn(process.execPath, [bin, 'trace', ...args], { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (t: string) => (err += t));
  child.stdout!.resume();
  const ended = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.on('close', (code, signal) => done({ code, signal })));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) => child.on('exit', (code, signal) => done({ code, signal })));
  return { child, stderr: () => err, ended, exited };
}

/** Resolves once `ok()` holds (checked every 50 ms); rejects after `ms` naming `what`. */
export async function waitFor(ok: () => boolean, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > until) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The lines of a file (empty when it does not exist yet). */
export function linesOf(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** Whether `pid` runs (a zombie counts as gone). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/** SIGKILL to a process group, ignoring one already gone. */
export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    /* gone */
  }
}
