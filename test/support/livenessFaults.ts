/**
 * The liveness faults (protocol/liveness.ts), each on a real run on the simulated NCCL, with the
 * agent from a private copy (its path names every process of the trial):
 * - {@link silentAgentTrial}: the agent is SIGSTOPped mid-run (its pipes stay open): the host must
 *   stop with AGENT_SILENT within the deadline + a margin, keep what was measured (partial) and
 *   leave no process.
 * - {@link silentClientTrial}: the client (the bundled CLI) is SIGSTOPped mid-run (it holds the
 *   agent's stdin open and reads nothing): the agent and its ranks must be gone within the
 *   deadline + a margin.
 * - {@link partitionTrial}: the network between the host side and an SSH host stops carrying
 *   anything while both TCP ends stay open (a relay in front of the loopback sshd stops
 *   forwarding): the remote agent and its ranks must be gone within the deadline + a margin, and
 *   the host side must end the run with AGENT_SILENT.
 * Used by test/security/liveness.test.ts and by the fault table (test/integration/faults.test.ts).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as net from 'node:net';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AgentEvent, RunOptions } from '../../protocol/events';
import type { RunFile } from '../../protocol/runFile';
import { runMeasurement } from '../../client/runSession';
import { distDir, privateAgentCopy, processesMatching, repoRoot } from './agentHarness';
import type { SshServer } from './sshServer';

/** Short liveness settings of the trials, ms. */
export const TRIAL_LIVENESS = { intervalMs: 200, deadlineMs: 1500 };

const SIM_ENV = { COMMCOST_SIM_INIT_MS: '15', COMMCOST_SIM_CONNECT_MS: '25', COMMCOST_SIM_SPLIT_MS: '8', COMMCOST_SIM_ABORT_MS: '12', COMMCOST_SIM_CUINIT_MS: '20' };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls (every 25 ms) until no process mentions `marker`. @returns ms waited and the PIDs still alive. */
async function untilGone(marker: string, ms: number, except?: number): Promise<{ ms: number; left: number[] }> {
  const t0 = Date.now();
  const alive = () => processesMatching(marker).filter((p) => p !== except);
  let left = alive();
  while (left.length > 0 && Date.now() - t0 < ms) {
    await sleep(25);
    left = alive();
  }
  return { ms: Date.now() - t0, left };
}

function killAll(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

export interface SilentAgentResult {
  run: RunFile;
  /** From the SIGSTOP to the run's end, ms. */
  stopMs: number;
  /** Processes of the trial still alive 2 s after the run ended (killed afterwards). */
  left: number[];
  /** The agent's log lines and ours. */
  log: string[];
}

/**
 * Starts a run on localhost (2 ranks, `init` × 300), SIGSTOPs the agent at its first recorded
 * sample and waits for runMeasurement to end (at most `limitMs`).
 * @throws Error when the run ends before the stop, or does not end within `limitMs` (the
 *   agent is then killed so nothing is left behind)
 */
export async function silentAgentTrial(limitMs = 20_000): Promise<SilentAgentResult> {
  const agentDir = privateAgentCopy();
  Object.assign(process.env, SIM_ENV);
  const options: RunOptions = { experiments: ['init'], iterations: 300, warmup: 0, deadlineSeconds: 30, simulate: true, ranks: 2 };
  const log: string[] = [];
  let agentPid = 0;
  let stoppedAt = 0;
  const onEvent = (ev: AgentEvent): void => {
    if (ev.type === 'agent/hello') agentPid = ev.pid;
    if (ev.type === 'run/sample' && !ev.warmup && stoppedAt === 0 && agentPid > 0) {
      stoppedAt = Date.now();
      process.kill(agentPid, 'SIGSTOP');
    }
  };
  try {
    const running = runMeasurement({ target: 'localhost', options, agentDir, liveness: TRIAL_LIVENESS }, { onRun: () => undefined, onEvent, onLog: (l) => log.push(l) });
    let limit: NodeJS.Timeout | undefined;
    const result = await Promise.race([running, new Promise<'limit'>((r) => (limit = setTimeout(() => r('limit'), limitMs)))]);
    clearTimeout(limit);
    if (result === 'limit') throw new Error(`the run did not end within ${limitMs} ms of its start (SIGSTOP at ${stoppedAt ? `${stoppedAt - Date.now() + limitMs} ms` : 'never'}): the host waits forever on a silent agent`);
    if (stoppedAt === 0) throw new Error(`the run ended (${result.status}) before the agent was stopped`);
    const stopMs = Date.now() - stoppedAt;
    const gone = await untilGone(agentDir, 2000);
    return { run: result, stopMs, left: gone.left, log };
  } finally {
    const left = processesMatching(agentDir);
    killAll(left);
    fs.rmSync(agentDir, { recursive: true, force: true });
  }
}

export interface SilentClientResult {
  /** From the client's SIGSTOP until the agent and its ranks were gone, ms. */
  goneMs: number;
  /** Processes of the trial (agent, ranks) still alive after `waitMs` (killed afterwards). */
  left: number[];
  /** Rank processes seen before the stop. */
  ranks: number;
  /** The CLI's stderr (its log with --verbose). */
  stderr: string;
}

/**
 * Starts `commcost measure --simulate` (the bundled CLI, dist/cli.js) with the trial's liveness
 * settings in its environment, SIGSTOPs it once both rank processes run, and waits up to `waitMs`
 * for the agent and its ranks to be gone. The CLI is killed at the end.
 */
export async function silentClientTrial(waitMs: number): Promise<SilentClientResult> {
  const agentDir = privateAgentCopy();
  const saveDir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-liveness-runs-'));
  const args = ['measure', '--simulate', '--experiments', 'init', '--iterations', '100000', '--warmup', '0', '--ranks', '2', '--agent-dir', agentDir, '--save-dir', saveDir, '--verbose'];
  const child = spawn(process.execPath, [path.join(repoRoot, 'bin', 'commcost.js'), ...args], {
    cwd: repoRoot,
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, ...SIM_ENV, COMMCOST_HEARTBEAT_MS: String(TRIAL_LIVENESS.intervalMs), COMMCOST_LIVENESS_DEADLINE_MS: String(TRIAL_LIVENESS.deadlineMs) },
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  try {
    // The agent and both ranks up (the CLI's own command line names the folder too).
    const t0 = Date.now();
    const trial = () => processesMatching(agentDir).filter((p) => p !== child.pid);
    let procs: number[] = [];
    while (Date.now() - t0 < 30_000) {
      procs = trial();
      if (procs.length >= 3) break;
      if (child.exitCode !== null) throw new Error(`the CLI exited (${child.exitCode}) before its ranks ran:\n${stderr.slice(-2000)}`);
      await sleep(50);
    }
    if (procs.length < 3) throw new Error(`the agent and its 2 ranks did not start within 30 s (seen ${procs.length}):\n${stderr.slice(-2000)}`);
    await sleep(500);
    const ranks = trial().length - 1;
    child.kill('SIGSTOP');
    const gone = await untilGone(agentDir, waitMs, child.pid);
    return { goneMs: gone.ms, left: gone.left, ranks, stderr };
  } finally {
    child.kill('SIGKILL');
    killAll(processesMatching(agentDir));
    fs.rmSync(agentDir, { recursive: true, force: true });
    fs.rmSync(saveDir, { recursive: true, force: true });
  }
}

/** A TCP relay on 127.0.0.1 to `port` on 127.0.0.1. */
export interface TcpRelay {
  port: number;
  /** Resets every relayed connection at once (no FIN: an RST). */
  cut(): void;
  /** Stops carrying bytes either way while every socket stays open (a partition, TCP still up). */
  blackhole(): void;
  close(): void;
}

/** Starts a {@link TcpRelay} in front of `port`. */
export function tcpRelay(port: number): Promise<TcpRelay> {
  const pairs: [net.Socket, net.Socket][] = [];
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    pairs.push([client, upstream]);
    client.pipe(upstream).pipe(client);
    const drop = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      resolve({
        port: (server.address() as net.AddressInfo).port,
        cut: () => {
          for (const [a, b] of pairs) {
            a.resetAndDestroy();
            b.resetAndDestroy();
          }
        },
        blackhole: () => {
          for (const [a, b] of pairs) {
            a.unpipe(b);
            b.unpipe(a);
            a.pause();
            b.pause();
            a.removeAllListeners('close');
            b.removeAllListeners('close');
          }
        },
        close: () => {
          for (const [a, b] of pairs) {
            a.destroy();
            b.destroy();
          }
          server.close();
        },
      });
    }),
  );
}

export interface PartitionResult {
  run: RunFile;
  /** From the partition to the run's end on the host side, ms. */
  hostMs: number;
  /** From the partition until the remote agent and its ranks were gone, ms. */
  remoteGoneMs: number;
  /** Remote processes (agent, ranks) still alive after `waitMs` (killed afterwards). */
  left: number[];
  /** Remote processes seen before the partition (agent and ranks). */
  remote: number;
}

/**
 * A run on the loopback sshd through a relay, 2 ranks, `init` × 300; at the 3rd recorded sample
 * the relay stops carrying bytes (TCP stays up). Waits for the host side's run to end and for the
 * remote agent and ranks (named by the deployed folder, a private hash) to be gone: the remote
 * side up to `waitMs` after the partition, the host side up to `hostWaitMs`.
 */
export async function partitionTrial(server: SshServer, waitMs: number, hostWaitMs = waitMs + 8000): Promise<PartitionResult> {
  const relay = await tcpRelay(server.port);
  const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-partition-'));
  fs.writeFileSync(path.join(agentDir, 'agent.js'), fs.readFileSync(path.join(distDir, 'agent.js'), 'utf8') + `\n// partition ${randomBytes(8).toString('hex')}\n`);
  fs.mkdirSync(path.join(agentDir, 'native'));
  for (const f of ['commcost.node', 'libnccl-sim.so']) fs.copyFileSync(path.join(distDir, 'native', f), path.join(agentDir, 'native', f));
  const sshConfigPath = path.join(agentDir, 'ssh_config');
  const knownHostsPath = path.join(agentDir, 'known_hosts');
  fs.writeFileSync(sshConfigPath, `Host partitioned\n  HostName 127.0.0.1\n  Port ${relay.port}\n  User ${server.user}\n  IdentityFile ${server.keyPath}\n`);
  fs.writeFileSync(knownHostsPath, `[127.0.0.1]:${relay.port} ${server.hostPublicKey}\n`);
  Object.assign(process.env, SIM_ENV);
  let remoteDir = '';
  let cutAt = 0;
  let remote = 0;
  let samples = 0;
  const logs: string[] = [];
  const options: RunOptions = { experiments: ['init'], iterations: 300, warmup: 0, deadlineSeconds: 30, simulate: true, ranks: 2 };
  try {
    const running = runMeasurement(
      { target: 'partitioned', options, sshConfigPath, knownHostsPath, agentDir, liveness: TRIAL_LIVENESS },
      {
        onRun: () => undefined,
        onEvent: (ev) => {
          if (ev.type !== 'run/sample' || ev.warmup || cutAt > 0 || ++samples < 3) return;
          remote = remoteDir ? processesMatching(remoteDir).length : 0;
          cutAt = Date.now();
          relay.blackhole();
        },
        onLog: (l) => {
          logs.push(l);
          const m = /\.cache\/commcost\/[0-9a-f]{16}/.exec(l);
          if (m && !remoteDir) remoteDir = m[0];
        },
      },
    );
    let endedAt = 0;
    void running.then(() => (endedAt = Date.now()), () => (endedAt = Date.now()));
    let limit: NodeJS.Timeout | undefined;
    const ended = Promise.race([running, new Promise<'limit'>((r) => (limit = setTimeout(() => r('limit'), 150_000)))]);
    // The remote side, watched from here while the host side waits (sshd runs on this machine).
    while (cutAt === 0) {
      if ((await Promise.race([ended, sleep(50)])) !== undefined) break;
    }
    if (cutAt === 0) {
      const end = await ended;
      throw new Error(end === 'limit' ? `no 3 recorded samples within 150 s of the start (${samples} seen): the deploy or the start-up did not finish:\n${logs.slice(-15).join('\n')}` : `the run ended (${end.status}) before the partition:\n${logs.slice(-15).join('\n')}`);
    }
    const gone = await untilGone(remoteDir, waitMs);
    const remoteGoneMs = Date.now() - cutAt;
    const run = await Promise.race([ended, sleep(Math.max(0, cutAt + hostWaitMs - Date.now())).then(() => 'limit' as const)]);
    clearTimeout(limit);
    if (run === 'limit') throw new Error(`the host side did not end the run within ${hostWaitMs} ms of the partition`);
    return { run, hostMs: endedAt - cutAt, remoteGoneMs: gone.left.length === 0 ? remoteGoneMs : Number.NaN, left: gone.left, remote };
  } finally {
    relay.close();
    if (remoteDir) {
      killAll(processesMatching(remoteDir));
      fs.rmSync(path.join(os.homedir(), remoteDir), { recursive: true, force: true });
    }
    fs.rmSync(agentDir, { recursive: true, force: true });
  }
}

export interface StoppedRemoteResult {
  run: RunFile;
  /** From the SIGSTOP to the run's end on the host side, ms. */
  hostMs: number;
  /** Remote processes (agent, ranks) still alive 5 s after the run ended (killed afterwards). */
  left: number[];
}

/**
 * A run on the loopback sshd (2 ranks, `init` × 300) whose remote agent is SIGSTOPped at its first
 * recorded sample (the connection stays healthy): the host side must end with AGENT_SILENT and
 * the stopped agent and its ranks must be gone.
 */
export async function stoppedRemoteAgentTrial(server: SshServer): Promise<StoppedRemoteResult> {
  const agentDir = fs.mkdtempSync(path.join(os.tmpdir(), 'commcost-stopped-remote-'));
  fs.writeFileSync(path.join(agentDir, 'agent.js'), fs.readFileSync(path.join(distDir, 'agent.js'), 'utf8') + `\n// stopped ${randomBytes(8).toString('hex')}\n`);
  fs.mkdirSync(path.join(agentDir, 'native'));
  for (const f of ['commcost.node', 'libnccl-sim.so']) fs.copyFileSync(path.join(distDir, 'native', f), path.join(agentDir, 'native', f));
  Object.assign(process.env, SIM_ENV);
  let remoteDir = '';
  let agentPid = 0;
  let stoppedAt = 0;
  const options: RunOptions = { experiments: ['init'], iterations: 300, warmup: 0, deadlineSeconds: 30, simulate: true, ranks: 2 };
  try {
    const run = await runMeasurement(
      { target: server.alias, options, sshConfigPath: server.sshConfigPath, knownHostsPath: server.knownHostsPath, agentDir, liveness: TRIAL_LIVENESS },
      {
        onRun: () => undefined,
        onEvent: (ev) => {
          if (ev.type === 'agent/hello') agentPid = ev.pid;
          if (ev.type === 'run/sample' && !ev.warmup && stoppedAt === 0 && agentPid > 0) {
            stoppedAt = Date.now();
            process.kill(agentPid, 'SIGSTOP');
          }
        },
        onLog: (l) => {
          const m = /\.cache\/commcost\/[0-9a-f]{16}/.exec(l);
          if (m && !remoteDir) remoteDir = m[0];
        },
      },
    );
    const hostMs = Date.now() - stoppedAt;
    const gone = await untilGone(remoteDir, 5000);
    return { run, hostMs, left: gone.left };
  } finally {
    if (remoteDir) {
      for (const pid of processesMatching(remoteDir)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
      fs.rmSync(path.join(os.homedir(), remoteDir), { recursive: true, force: true });
    }
    fs.rmSync(agentDir, { recursive: true, force: true });
  }
}
