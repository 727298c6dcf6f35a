/**
 * Runs the built agent (dist/agent.js + dist/native/) as a child process from a private copy,
 * so that its rank processes can be found afterwards by their unique path.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseAgentEvent, type AgentEvent, type HostCommand, type RunOptions } from '../../protocol/events';

export const repoRoot = path.resolve(__dirname, '..', '..');
export const distDir = path.join(repoRoot, 'dist');

/** True when `npm run build` has produced the agent and the simulated NCCL. */
export function agentBuilt(): boolean {
  return ['agent.js', 'native/commcost.node', 'native/libnccl-sim.so'].every((f) => fs.existsSync(path.join(distDir, f)));
}

/** Copies the agent payload into a fresh temp folder. @returns that folder. */
export function privateAgentCopy(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-agent-'));
  fs.copyFileSync(path.join(distDir, 'agent.js'), path.join(dir, 'agent.js'));
  fs.mkdirSync(path.join(dir, 'native'));
  for (const f of ['commcost.node', 'libnccl-sim.so']) fs.copyFileSync(path.join(distDir, 'native', f), path.join(dir, 'native', f));
  return dir;
}

/** PIDs of live processes whose command line mentions `marker`. */
export function processesMatching(marker: string): number[] {
  const out = execFileSync('ps', ['-eo', 'pid=,stat=,args='], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((l) => l.includes(marker) && !/\sZ/.test(l.slice(0, 16)))
    .map((l) => Number(l.trim().split(/\s+/)[0]))
    .filter((pid) => pid !== process.pid);
}

export interface AgentRun {
  dir: string;
  child: ChildProcess;
  events: AgentEvent[];
  /** When each of {@link events} arrived here (Date.now(), ms), index for index. */
  arrivedAt: number[];
  /** When run/start was sent (Date.now(), ms). */
  startedAt: number;
  stderr: string[];
  send(cmd: HostCommand): void;
  /** Resolves with the first event matching `pred` (or rejects after `ms`). */
  waitFor<T extends AgentEvent>(pred: (e: AgentEvent) => e is T, ms?: number): Promise<T>;
  exited: Promise<number | null>;
}

/** Starts the agent (coordinator mode) with extra environment and sends run/start. */
export function startAgent(options: Partial<RunOptions>, env: NodeJS.ProcessEnv = {}): AgentRun {
  const dir = privateAgentCopy();
  const child = spawn(process.execPath, [path.join(dir, 'agent.js')], {
    env: { ...process.env, COMMCOST_SIM_INIT_MS: '15', COMMCOST_SIM_CONNECT_MS: '25', COMMCOST_SIM_SPLIT_MS: '8', COMMCOST_SIM_ABORT_MS: '12', COMMCOST_SIM_CUINIT_MS: '20', ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const events: AgentEvent[] = [];
  const arrivedAt: number[] = [];
  const stderr: string[] = [];
  const listeners = new Set<() => void>();
  let buf = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    buf += chunk.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line) {
        events.push(parseAgentEvent(line));
        arrivedAt.push(Date.now());
      }
    }
    for (const l of listeners) l();
  });
  child.stderr!.on('data', (chunk: Buffer) => stderr.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const run: AgentRun = {
    dir,
    child,
    events,
    arrivedAt,
    startedAt: Date.now(),
    stderr,
    send: (cmd) => child.stdin!.write(JSON.stringify(cmd) + '\n'),
    waitFor: (pred, ms = 30000) =>
      new Promise((resolve, reject) => {
        const check = (): boolean => {
          const found = events.find(pred);
          if (found) {
            listeners.delete(onEvent);
            clearTimeout(timer);
            resolve(found as never);
            return true;
          }
          return false;
        };
        const onEvent = (): void => void check();
        const timer = setTimeout(() => {
          listeners.delete(onEvent);
          reject(new Error(`no matching event within ${ms} ms; got: ${events.map((e) => e.type).join(', ')}\n${stderr.join('')}`));
        }, ms);
        if (!check()) listeners.add(onEvent);
      }),
    exited,
  };
  run.send({ type: 'run/start', options: { experiments: ['init'], iterations: 3, warmup: 1, deadlineSeconds: 20, simulate: true, ...options } as RunOptions });
  return run;
}

/** Type guard factory: `is('run/done')`. */
export function is<K extends AgentEvent['type']>(type: K): (e: AgentEvent) => e is Extract<AgentEvent, { type: K }> {
  return (e): e is Extract<AgentEvent, { type: K }> => e.type === type;
}

/** Waits until no process mentions `marker` (up to `ms`). @returns the PIDs still alive. */
export async function waitGone(marker: string, ms = 5000): Promise<number[]> {
  const end = Date.now() + ms;
  let left = processesMatching(marker);
  while (left.length > 0 && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 100));
    left = processesMatching(marker);
  }
  return left;
}

/** "pid args" of each of `pids` still alive, joined by "; " (what a leftover-process assertion prints). */
export function psLines(pids: number[]): string {
  if (pids.length === 0) return 'none';
  let out = '';
  try {
    out = execFileSync('ps', ['-o', 'pid=,args=', '-p', pids.join(',')], { encoding: 'utf8' }).trim();
  } catch {
    // ps exits 1 when none of them is alive any more.
  }
  return out ? out.split('\n').map((l) => l.trim()).join('; ') : `${pids.join(', ')} (gone since)`;
}

/** Why agent tests skip on a checkout that has not been built. */
export const NOT_BUILT = agentBuilt() ? false : 'dist/ is not built: run `npm run build` (npm test builds it)';

/**
 * Keeps every agent a test file starts and, when `cleanup` runs (register it with `after`),
 * kills what is left and removes the private copies.
 */
export function trackedRuns(): { track(run: AgentRun): AgentRun; cleanup(): void } {
  const runs: AgentRun[] = [];
  return {
    track(run) {
      runs.push(run);
      return run;
    },
    cleanup() {
      for (const r of runs) {
        r.child.kill('SIGKILL');
        fs.rmSync(r.dir, { recursive: true, force: true });
      }
    },
  };
}

/**
 * The message of `run`'s start-up timeout ('timed out at startup: rank … did not start CUDA and
 * NCCL within N s'), or undefined when it had none.
 */
export function startupTimeout(run: AgentRun): string | undefined {
  return run.events.find((e): e is Extract<AgentEvent, { type: 'run/error' }> => e.type === 'run/error' && /^timed out at startup/.test(e.message))?.message;
}

/**
 * Runs `attempt` (which starts an agent and waits for what its test needs) again, at most
 * `attempts` times in all, while its run timed out at start-up: a test's short deadline (2 s) is
 * also the ranks' start-up deadline, which a loaded machine can miss before the point the test
 * checks is reached; such a run tested nothing. Each discarded run is killed and its processes
 * waited for. Says so on stdout.
 * @returns what the last attempt returned (a start-up timeout on the last attempt is the caller's to report)
 */
export async function pastStartup<T extends { run: AgentRun }>(what: string, attempt: () => Promise<T>, attempts = 3): Promise<T> {
  for (let i = 1; ; i++) {
    const got = await attempt();
    const timedOut = startupTimeout(got.run);
    if (!timedOut || i >= attempts) return got;
    console.log(`${what}: the ranks did not start within the run's deadline (attempt ${i}: ${timedOut}); run again`);
    got.run.child.kill('SIGKILL');
    await got.run.exited;
    await waitGone(got.run.dir);
  }
}
