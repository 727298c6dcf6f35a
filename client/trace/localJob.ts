/**
 * The traced job as a local process: started, its output passed on, and stopped only as asked.
 * No `vscode` import. Used by client/trace/run.ts.
 *
 * Stopping, in the job's own process group (`processGroup`, the CLI and the extension: a
 * launcher's forked ranks are in it too):
 * - `signal` aborting (Ctrl-C, the extension's Cancel): the reason's signal (SIGINT, SIGTERM or
 *   SIGHUP; else SIGTERM) is sent once, and the job is given the time its own handler takes
 *   (`killAfterMs` null) or that many ms before SIGKILL;
 * - `force` aborting (a second Ctrl-C): SIGTERM now, SIGKILL 5 s later;
 * - the deadline: SIGTERM, SIGKILL 5 s later.
 * After a forced stop or the deadline, what is left of the group when the job's first process
 * has ended is killed (forked ranks do not outlive a job that was ended).
 */
import { spawn } from 'node:child_process';

/** How the job is run and stopped. */
export interface LocalJobOptions {
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** 'inherit': this process's stdio; else each chunk of text to the callbacks (stdin then /dev/null). */
  stdio: 'inherit' | { stdout: (text: string) => void; stderr: (text: string) => void };
  /** Start the job as a process group of its own and signal the whole group. */
  processGroup?: boolean;
  /** Aborting asks the job to stop: the reason's signal sent once ('SIGINT', 'SIGTERM', 'SIGHUP'; else SIGTERM). */
  signal?: AbortSignal;
  /** ms after `signal` aborts before the job is killed (SIGKILL); null: never, the job ends by itself. Default 5000. */
  killAfterMs?: number | null;
  /** Aborting ends the job: SIGTERM now, SIGKILL 5 s later. */
  force?: AbortSignal;
  /** Stop the job (SIGTERM, SIGKILL 5 s later) after this many ms; null: no deadline. */
  deadlineMs?: number | null;
  /** Called once the job's first process has a pid (its process group with `processGroup`). */
  onStart?: (pid: number) => void;
}

/** How the job ended. */
export interface LocalJobEnd {
  /** Exit code (127 when it could not start), null when it died by a signal. */
  code: number | null;
  signal: string | null;
  /** Why it was stopped ('cancelled', 'deadline of N s'), absent when it ended by itself. */
  stopped?: string;
  startError?: string;
}

/** The SIGKILL delay after SIGTERM of a forced stop or a deadline, ms. */
export const KILL_GRACE_MS = 5000;

/**
 * Runs `command` (program and arguments, no shell) and resolves when its first process has ended
 * and its stdio closed. Never rejects: a program that cannot start ends with code 127 and `startError`.
 */
export function runLocalJob(command: readonly string[], o: LocalJobOptions): Promise<LocalJobEnd> {
  return new Promise<LocalJobEnd>((done) => {
    const piped = o.stdio !== 'inherit';
    const child = spawn(command[0]!, command.slice(1), { env: o.env, stdio: piped ? ['ignore', 'pipe', 'pipe'] : 'inherit', cwd: o.cwd, detached: !!o.processGroup });
    if (child.pid !== undefined) o.onStart?.(child.pid);
    if (o.stdio !== 'inherit') {
      const io = o.stdio;
      child.stdout?.setEncoding('utf8').on('data', (t: string) => io.stdout(t));
      child.stderr?.setEncoding('utf8').on('data', (t: string) => io.stderr(t));
    }
    const kill = (sig: NodeJS.Signals, group = !!o.processGroup): void => {
      try {
        if (group && child.pid !== undefined) process.kill(-child.pid, sig);
        else child.kill(sig);
      } catch {
        /* already gone */
      }
    };
    let stopped: string | undefined;
    let hard = false;
    let killer: NodeJS.Timeout | undefined;
    const killLater = (ms: number) => (killer ??= setTimeout(() => kill('SIGKILL'), ms));
    const end = (why: string) => {
      stopped ??= why;
      hard = true;
      kill('SIGTERM');
      killLater(KILL_GRACE_MS);
    };
    const onAbort = () => {
      stopped ??= 'cancelled';
      const r: unknown = o.signal?.reason;
      kill(r === 'SIGINT' || r === 'SIGTERM' || r === 'SIGHUP' ? r : 'SIGTERM');
      const after = o.killAfterMs === undefined ? KILL_GRACE_MS : o.killAfterMs;
      if (after !== null) killLater(after);
    };
    const onForce = () => end('cancelled');
    if (o.signal?.aborted) onAbort();
    else o.signal?.addEventListener('abort', onAbort, { once: true });
    if (o.force?.aborted) onForce();
    else o.force?.addEventListener('abort', onForce, { once: true });
    const deadline = o.deadlineMs ?? null;
    const timer = deadline === null ? undefined : setTimeout(() => end(`deadline of ${deadline / 1000} s`), deadline);
    let finished = false;
    let startError: string | undefined;
    const finish = (code: number | null, signal: string | null) => {
      if (finished) return;
      finished = true;
      if (timer) clearTimeout(timer);
      if (killer) clearTimeout(killer);
      o.signal?.removeEventListener('abort', onAbort);
      o.force?.removeEventListener('abort', onForce);
      // Ended on purpose: forked ranks still in the group go with it.
      if (hard && o.processGroup) kill('SIGKILL', true);
      done({ code, signal, ...(stopped ? { stopped } : {}), ...(startError ? { startError } : {}) });
    };
    child.on('error', (e) => {
      startError = `could not start ${command[0]}: ${e.message}`;
      finish(127, null);
    });
    child.on('close', (c, s) => finish(c, s));
  });
}
