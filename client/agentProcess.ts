/**
 * A running agent, local (child process) or remote (SSH exec channel), behind one interface:
 * protocol lines in, commands out, stdin close, kill, exit.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, posix } from 'node:path';
import type { ClientChannel } from 'ssh2';
import { toLine, type HostCommand } from '../protocol/events';
import { CommcostError } from './errors';
import type { SshSession } from './sshSession';

/** How an agent ended. `error` is set when the transport failed (e.g. the SSH connection dropped). */
export interface AgentExit {
  code: number | null;
  signal: string | null;
  error?: CommcostError;
}

export interface AgentProcess {
  /** Every complete stdout line (without the line ending). */
  onLine(cb: (line: string) => void): void;
  /** Every complete stderr line (the agent's log). */
  onStderr(cb: (line: string) => void): void;
  /** Writes one command line on the agent's stdin; ignored once the input is closed. */
  send(cmd: HostCommand): void;
  /** Closes the agent's stdin: the agent cancels and exits on EOF. */
  closeInput(): void;
  /** Ends the agent and everything it started (local: SIGKILL to the process group; SSH: close the channel, the agent ends on EOF). */
  kill(): void;
  /**
   * SIGKILLs the agent process `pid` (its hello's) where it runs, for an agent that reads nothing
   * any more (stopped or stuck): local, its process group; over SSH, `kill -KILL <pid>` in a
   * command of its own (its ranks exit when their coordinator is gone). Settles within
   * `timeoutMs` whatever happens (a cut connection runs nothing); never rejects.
   */
  forceKill(pid: number, timeoutMs: number): Promise<void>;
  /** Settles once the agent is gone and its output is drained; never rejects. */
  readonly exited: Promise<AgentExit>;
}

/**
 * The longest line read from an agent, characters: its summaries of 100,000 iterations stay far
 * below; anything longer is not held in memory.
 */
export const MAX_AGENT_LINE_CHARS = 256 * 1024 * 1024;

/**
 * The longest line of the agent's log (stderr) kept, characters: log lines are short; a longer
 * one is dropped as it arrives and replaced by a note, so the log (and the run's stderr tail)
 * stays small whatever the agent or a rank prints.
 */
export const MAX_AGENT_LOG_LINE_CHARS = 1024 * 1024;

/** The log's line for one that was dropped. */
const droppedLog = (max: number): string => `(the agent logged a line longer than ${max} characters: dropped)`;

/**
 * Splits a byte stream into lines: handles chunks that end mid-line or mid-UTF-8 character and
 * `\r\n` endings. Call {@link LineSplitter.end} at EOF to flush a last unterminated line. A
 * line longer than `maxLine` characters is dropped as it arrives (never buffered whole) and
 * `onOverflow` is called once for it.
 */
export class LineSplitter {
  private buffer = '';
  private overflowed = false;
  private readonly decoder = new TextDecoder('utf-8');

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly maxLine: number = MAX_AGENT_LINE_CHARS,
    private readonly onOverflow: (maxLine: number) => void = () => undefined,
  ) {}

  push(chunk: Buffer | string): void {
    this.buffer += typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl);
      this.buffer = this.buffer.slice(nl + 1);
      if (this.overflowed || line.length > this.maxLine) {
        if (!this.overflowed) this.onOverflow(this.maxLine);
        this.overflowed = false;
        continue;
      }
      this.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
    }
    if (this.buffer.length > this.maxLine) {
      if (!this.overflowed) this.onOverflow(this.maxLine);
      this.overflowed = true;
      this.buffer = '';
    }
  }

  end(): void {
    this.buffer += this.decoder.decode();
    if (this.buffer.length > 0) {
      const line = this.buffer.endsWith('\r') ? this.buffer.slice(0, -1) : this.buffer;
      this.buffer = '';
      this.onLine(line);
    }
  }
}

class Listeners {
  private readonly lines: ((l: string) => void)[] = [];
  private readonly pending: string[] = [];
  add(cb: (l: string) => void): void {
    this.lines.push(cb);
    for (const l of this.pending.splice(0)) cb(l);
  }
  emit(l: string): void {
    if (this.lines.length === 0) this.pending.push(l);
    else for (const cb of this.lines) cb(l);
  }
}

/**
 * The folder holding the agent bundle next to the running code: the bundle's own folder (`dist/`)
 * when it has `agent.js`, else `../dist` (running from sources under tsx).
 */
export function defaultAgentDir(): string {
  for (const dir of [__dirname, join(__dirname, '..', 'dist')]) {
    if (existsSync(join(dir, 'agent.js'))) return dir;
  }
  return join(__dirname, '..', 'dist');
}

/** Process groups of the local agents still running (their pids), killed if this process exits first. */
const liveLocalAgents = new Set<number>();
let exitHookInstalled = false;

/**
 * Kills (SIGKILL) the process group of every local agent that is still running. Runs on this
 * process's `exit` (e.g. `process.exit` on a third Ctrl-C), so no agent or rank outlives us.
 */
export function killLocalAgents(): void {
  for (const pid of liveLocalAgents) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  liveLocalAgents.clear();
}

function trackLocalAgent(pid: number | undefined): void {
  if (pid === undefined) return;
  liveLocalAgents.add(pid);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on('exit', killLocalAgents);
  }
}

/**
 * Starts `<node> <agentDir>/agent.js` as a local child in its own process group.
 * @param options.nodePath default `process.execPath`; options.env default `process.env`
 * @throws CommcostError NO_AGENT when agent.js is missing
 */
export function spawnLocalAgent(options: { agentDir?: string; nodePath?: string; env?: NodeJS.ProcessEnv } = {}): AgentProcess {
  const agentJs = join(options.agentDir ?? defaultAgentDir(), 'agent.js');
  if (!existsSync(agentJs)) {
    throw new CommcostError('NO_AGENT', `the agent bundle ${agentJs} is missing`, { where: { host: 'localhost' }, hint: 'build it with node scripts/build.mjs' });
  }
  const child = spawn(options.nodePath ?? process.execPath, [agentJs], {
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
    env: options.env ?? process.env,
  });
  const out = new Listeners();
  const err = new Listeners();
  const outSplit = new LineSplitter((l) => out.emit(l), MAX_AGENT_LINE_CHARS, (max) => out.emit(`(the agent wrote a line longer than ${max} characters: dropped)`));
  const errSplit = new LineSplitter((l) => err.emit(l), MAX_AGENT_LOG_LINE_CHARS, (max) => err.emit(droppedLog(max)));
  child.stdout.on('data', (d: Buffer) => outSplit.push(d));
  child.stderr.on('data', (d: Buffer) => errSplit.push(d));
  child.stdin.on('error', () => undefined); // EPIPE after the agent exits
  trackLocalAgent(child.pid);
  let inputOpen = true;
  const exited = new Promise<AgentExit>((resolve) => {
    child.on('error', (e) => {
      resolve({ code: null, signal: null, error: new CommcostError('AGENT_EXITED', `cannot start the local agent: ${e.message}`, { where: { host: 'localhost' }, cause: e }) });
    });
    child.on('close', (code, signal) => {
      if (child.pid !== undefined) liveLocalAgents.delete(child.pid);
      outSplit.end();
      errSplit.end();
      resolve({ code, signal });
    });
  });
  return {
    onLine: (cb) => out.add(cb),
    onStderr: (cb) => err.add(cb),
    send(cmd) {
      if (inputOpen && child.stdin.writable) child.stdin.write(toLine(cmd));
    },
    closeInput() {
      inputOpen = false;
      child.stdin.end();
    },
    kill() {
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    },
    forceKill() {
      this.kill();
      return Promise.resolve();
    },
    exited,
  };
}

/**
 * Starts `'<nodePath>' '<remoteDir>/agent.js'` on the session's host (no pty, quoted argv).
 * If the connection drops, `exited` settles with a CONNECTION_LOST error.
 * @throws CommcostError CONNECTION_LOST when the channel cannot be opened
 */
export async function startSshAgent(session: SshSession, nodePath: string, remoteDir: string): Promise<AgentProcess> {
  const channel: ClientChannel = await session.exec([nodePath, posix.join(remoteDir, 'agent.js')]);
  return wrapAgentChannel(channel, session);
}

/**
 * The agent behind an open SSH channel (its stdin/stdout are the protocol, stderr its log).
 * @param initial stdout bytes already read from the channel (after quickLaunch.ts's marker line), fed first
 */
export function wrapAgentChannel(channel: ClientChannel, session: SshSession, initial?: Buffer): AgentProcess {
  const out = new Listeners();
  const err = new Listeners();
  const outSplit = new LineSplitter((l) => out.emit(l), MAX_AGENT_LINE_CHARS, (max) => out.emit(`(the agent wrote a line longer than ${max} characters: dropped)`));
  const errSplit = new LineSplitter((l) => err.emit(l), MAX_AGENT_LOG_LINE_CHARS, (max) => err.emit(droppedLog(max)));
  // Lines are held (Listeners) until a listener is added, so bytes read before this are safe to feed now.
  if (initial && initial.length > 0) outSplit.push(initial);
  channel.on('data', (d: Buffer) => outSplit.push(d));
  channel.stderr.on('data', (d: Buffer) => errSplit.push(d));
  channel.on('error', () => undefined);
  let inputOpen = true;
  let code: number | null = null;
  let signal: string | null = null;
  let lost: CommcostError | undefined;
  const unsubscribe = session.onClose((e) => (lost = e));
  channel.on('exit', (c: number | null, s?: string) => {
    code = c ?? null;
    signal = s ?? null;
  });
  const exited = new Promise<AgentExit>((resolve) => {
    channel.on('close', () => {
      outSplit.end();
      errSplit.end();
      // The session's close event may come right after the channel's.
      setImmediate(() => {
        unsubscribe();
        resolve(lost ? { code, signal, error: lost } : { code, signal });
      });
    });
  });
  return {
    onLine: (cb) => out.add(cb),
    onStderr: (cb) => err.add(cb),
    send(cmd) {
      if (inputOpen && channel.writable) channel.write(toLine(cmd));
    },
    closeInput() {
      if (!inputOpen) return;
      inputOpen = false;
      channel.end();
    },
    kill() {
      inputOpen = false;
      channel.end();
      channel.close();
    },
    async forceKill(pid, timeoutMs) {
      // A signal request on the channel is refused by many sshd setups: a command of its own.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        session.run(['kill', '-KILL', String(pid)], { timeoutMs }).catch(() => undefined),
        new Promise((r) => (timer = setTimeout(r, timeoutMs))),
      ]);
      clearTimeout(timer);
    },
    exited,
  };
}
