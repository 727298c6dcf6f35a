/**
 * The agents on the other hosts of a cluster run ({@link NodeAgents}): started once the
 * coordinator answers `run/listening`, joined with `node/join`, watched for silence, and stopped
 * with the run.
 */
import { parseAgentEvent, type AgentEvent, type ErrorCode, type LivenessSettings } from '../protocol/events';
import type { RunFile } from '../protocol/runFile';
import type { AgentProcess } from './agentProcess';
import { delay, EXIT_GRACE_MS, FORCE_KILL_MS, silentError } from './agentDrive';
import { ABORTED, startAgentOn } from './agentStart';
import { CommcostError, errorText } from './errors';
import { AgentLiveness } from './liveness';
import type { RunError } from './runModel';
import type { RunCallbacks, RunRequest } from './runRequest';
import type { SshSession } from './sshSession';

/**
 * The agents on the other hosts of a cluster run. Each is started when the coordinator says
 * where it listens, joins it with `node/join`, and is stopped with the run. A host that cannot
 * be reached (SSH, deploy, its agent's fatal error) is recorded in the run and cancels it, so
 * the user learns at once which host failed instead of waiting for the coordinator's deadline.
 */
export class NodeAgents {
  private readonly live: { agent: AgentProcess; session: SshSession | undefined; host: string; watch: AgentLiveness }[] = [];
  private readonly starting: Promise<void>[] = [];
  private stopped = false;

  constructor(
    private readonly req: RunRequest,
    private readonly liveness: LivenessSettings,
    private readonly log: (line: string) => void,
    private readonly cb: RunCallbacks,
    private readonly get: () => RunFile,
    private readonly set: (r: RunFile) => void,
  ) {}

  private record(host: string, code: ErrorCode, message: string, hint?: string): void {
    const entry: RunError = { code, message, where: { host }, fatal: true, ...(hint ? { hint } : {}) };
    this.set({ ...this.get(), errors: [...this.get().errors, entry] });
    this.cb.onRun(this.get());
  }

  /**
   * Starts the agent of each of `req.moreTargets` (node index 1, 2, … in order) to join the
   * coordinator that `listening` names; `cancelRun` is called when one cannot join or fails.
   */
  start(listening: Extract<AgentEvent, { type: 'run/listening' }>, signal: AbortSignal | undefined, cancelRun: () => void): void {
    (this.req.moreTargets ?? []).forEach((host, i) => {
      this.starting.push(this.startOne(host, i + 1, listening, signal, cancelRun));
    });
  }

  private async startOne(host: string, index: number, listening: Extract<AgentEvent, { type: 'run/listening' }>, signal: AbortSignal | undefined, cancelRun: () => void): Promise<void> {
    let started;
    try {
      started = await startAgentOn(host, this.req, signal, this.log);
    } catch (e) {
      const err = e instanceof CommcostError ? e : new CommcostError('AGENT_EXITED', errorText(e), { where: { host } });
      this.log(`host ${host} cannot join the run: ${err.message}`);
      this.record(host, err.code as ErrorCode, `host ${host} cannot join the run: ${err.message}`, err.hint);
      cancelRun();
      return;
    }
    if (started === ABORTED) return;
    if (this.stopped) {
      started.agent.kill();
      started.session?.dispose();
      return;
    }
    const { agent, session, name } = started;
    // Keepalives, so that this host's agent also ends when we go silent; its own silence
    // cancels the run like any other failure of a node.
    const watch = new AgentLiveness(this.liveness, (cmd) => agent.send(cmd), (silentMs) => {
      const e = silentError(name, silentMs, this.liveness);
      this.log(e.message);
      this.record(name, 'AGENT_SILENT', e.message, e.hint);
      cancelRun();
      void (pid !== undefined ? agent.forceKill(pid, FORCE_KILL_MS) : Promise.resolve()).then(() => agent.kill());
    });
    this.live.push({ agent, session, host: name, watch });
    agent.onStderr(() => watch.heard());
    const coordinator = { addresses: this.req.coordinatorAddress ? [this.req.coordinatorAddress] : listening.addresses, port: listening.port, token: listening.token };
    let hello = false;
    let pid: number | undefined;
    agent.onStderr((line) => this.cb.onLog(`[${name}] ${line}`));
    agent.onLine((line) => {
      watch.heard();
      let ev: AgentEvent;
      try {
        ev = parseAgentEvent(line);
      } catch (e) {
        this.log(`agent on ${name} sent a line this side cannot read: ${errorText(e)}`);
        return;
      }
      if (ev.type === 'agent/hello' && !hello) {
        hello = true;
        pid = ev.pid;
        watch.start();
        agent.send({ type: 'node/join', options: this.req.options, index, coordinator });
      } else if (ev.type === 'node/joined') {
        this.log(`${name} (${ev.hostname}) joined the coordinator at ${ev.coordinator} with ${ev.slots} rank(s)`);
      } else if (ev.type === 'run/error') {
        this.log(`${name}: ${ev.message}${ev.hint ? ` (${ev.hint})` : ''}`);
        this.record(name, ev.code, `${name}: ${ev.message}`, ev.hint);
        if (ev.fatal) cancelRun();
      }
    });
  }

  /** Ends every node agent: stdin EOF (it kills its ranks), then kill after a grace period. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.starting);
    await Promise.all(
      this.live.map(async ({ agent, session, watch }) => {
        watch.dispose();
        agent.closeInput();
        if ((await Promise.race([agent.exited, delay(EXIT_GRACE_MS)])) === 'timeout') agent.kill();
        session?.dispose();
      }),
    );
  }
}
