/**
 * One measurement run end to end: resolve the target, start the agent (locally, or over SSH after
 * deploying it and finding Node), send `run/start`, fold every event into a {@link RunFile}
 * snapshot, and end cleanly on run/done, cancel, agent exit, dropped connection or protocol error.
 *
 * Lifetime: everything the run opens (SSH session, agent process) is owned here and released
 * before the returned promise settles.
 */
import { parseAgentEvent, PROTOCOL_VERSION, ProtocolError, type AgentEvent, type ErrorCode, type LivenessSettings, type RunOptions } from '../protocol/events';
import type { RunFile } from '../protocol/runFile';
import { defaultAgentDir, spawnLocalAgent, startSshAgent, type AgentExit, type AgentProcess } from './agentProcess';
import { collectPayload, deployAgent, findRemoteNode } from './deploy';
import { launchIfDeployed } from './quickLaunch';
import { CommcostError, errorText } from './errors';
import { resolveTarget } from './hosts';
import { AgentLiveness, LIVENESS_ENV, livenessSettings } from './liveness';
import { applyEvent, markStopped, newRun, type RunError } from './runModel';
import { SshSession, type HostKeyPolicy } from './sshSession';

export interface RunRequest {
  /** `localhost`, an ssh config alias, or `user@host[:port]`. */
  target: string;
  options: RunOptions;
  /** Node on the GPU host (setting / --node); default: search (see deploy.ts findRemoteNode). */
  nodePath?: string;
  /** Unknown host keys: false/undefined = refuse, true = append to known_hosts, or ask a callback. */
  acceptNewHostKey?: boolean | ((host: string, fingerprint: string) => Promise<boolean>);
  /** Overrides of ~/.ssh/config and ~/.ssh/known_hosts (tests). */
  sshConfigPath?: string;
  knownHostsPath?: string;
  /** Folder holding agent.js and native/ (default: next to the running bundle, see defaultAgentDir). */
  agentDir?: string;
  /**
   * More hosts in the same run (one agent each, joined to the coordinator on `target`): ranks
   * are placed on `target` first, then on these in order.
   */
  moreTargets?: string[];
  /** The address the other hosts reach `target` at (default: discovered: each of its addresses in turn). */
  coordinatorAddress?: string;
  /**
   * `target` is a Slurm login node: the agent there starts the ranks with
   * `srun <srunArgs> node agent.js rank` (see remote-agent/slurm.ts).
   */
  slurm?: { srunArgs: string[]; srunPath?: string };
  /**
   * Keepalive interval and silence deadline of every agent of the run, ms (client/liveness.ts):
   * each field defaults to $COMMCOST_HEARTBEAT_MS / $COMMCOST_LIVENESS_DEADLINE_MS, else 5000 / 120000.
   */
  liveness?: Partial<LivenessSettings>;
}

export interface RunCallbacks {
  /** A fresh snapshot after every event (and a last one at the end). */
  onRun(run: RunFile): void;
  /** Every agent event as received. */
  onEvent?(ev: AgentEvent): void;
  /** Agent stderr lines and our own log lines (prefixed `commcost: `). */
  onLog(line: string): void;
}

/** How long a cancelled agent gets to answer run/done, then to exit after stdin EOF, ms. */
export const CANCEL_GRACE_MS = 5_000;
const EXIT_GRACE_MS = 2_000;
/**
 * How long the SIGKILL of a silent agent may take, ms: over SSH a command of its own, which a
 * loaded host (or sshd) can take several seconds to start; a cut network never runs it.
 */
const FORCE_KILL_MS = 8_000;

function policyOf(accept: RunRequest['acceptNewHostKey']): HostKeyPolicy {
  if (typeof accept === 'function') return accept;
  return accept ? 'accept-new' : 'refuse';
}

function delay(ms: number): Promise<'timeout'> {
  return new Promise((r) => setTimeout(() => r('timeout'), ms).unref());
}

/**
 * Host-side error entry for the run file. The protocol's ErrorCode lists agent codes only; the
 * host adds its own (AGENT_EXITED, CONNECTION_LOST, PROTOCOL), which the schema accepts.
 */
function hostError(e: CommcostError, host: string): RunError {
  const entry: RunError = { code: e.code as ErrorCode, message: e.message, where: { host, ...e.where }, fatal: true };
  if (e.hint) entry.hint = e.hint;
  return entry;
}

const ABORTED: unique symbol = Symbol('aborted');

/**
 * Waits for `p`, or stops waiting as soon as `signal` aborts (then resolves with {@link ABORTED});
 * a value that arrives after the abort goes to `onLate` (to be released), a late rejection is
 * dropped. Lets a cancel end the start-up (connect, Node search, deploy) at once.
 */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined, onLate?: (v: T) => void): Promise<T | typeof ABORTED> {
  if (!signal) return p;
  if (signal.aborted) {
    p.then((v) => onLate?.(v), () => undefined);
    return Promise.resolve(ABORTED);
  }
  return new Promise<T | typeof ABORTED>((resolve, reject) => {
    let aborted = false;
    const onAbort = () => {
      aborted = true;
      resolve(ABORTED);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        if (aborted) onLate?.(v);
        else resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        if (!aborted) reject(e);
      },
    );
  });
}

/**
 * Runs one measurement.
 * @param signal aborting it cancels, at any moment: before the agent runs (resolving the target,
 *   connecting, deploying, before its hello) nothing is started and the run resolves partial at
 *   once; once `run/start` was sent: `run/cancel`, up to 5 s for `run/done`, stdin EOF, then kill;
 *   the promise then resolves with the run marked partial (never rejects on cancel)
 * @param hardStop aborting it (after `signal`) skips the grace periods: the agent is killed at once
 *   and the run resolves partial with what was received
 * @returns the final run: status from run/done, else partial/failed with an error entry (agent
 *   exit, dropped connection, protocol error); a fatal agent error such as NO_GPU is in `errors`
 * @throws CommcostError only for failures before the agent said hello (BAD_TARGET,
 *   HOST_UNREACHABLE, HOST_KEY_*, AUTH_FAILED, NO_NODE, NO_AGENT, DEPLOY_FAILED, AGENT_EXITED,
 *   PROTOCOL on a version mismatch)
 */
export async function runMeasurement(req: RunRequest, cb: RunCallbacks, signal?: AbortSignal, hardStop?: AbortSignal): Promise<RunFile> {
  const log = (line: string) => cb.onLog(`commcost: ${line}`);
  const liveness = livenessSettings(req.liveness);
  // The run's host is the target as the user would name it again to re-measure: a group of
  // hosts as `a+b+c`, a Slurm login node as `slurm:login1` (extension/hostEntries.ts reads both).
  const named = req.slurm ? `slurm:${req.target}` : [req.target, ...(req.moreTargets ?? [])].join('+');
  let run = newRun(named, req.options);
  const cancelledBeforeStart = (): RunFile => {
    log(`cancelled before the run started on ${req.target}`);
    run = { ...markStopped(run), status: 'partial' };
    cb.onRun(run);
    return run;
  };
  cb.onRun(run);

  const started = await startAgentOn(req.target, req, signal, log);
  if (started === ABORTED) return cancelledBeforeStart();
  const { agent, session, name } = started;
  const nodes = new NodeAgents(req, liveness, log, cb, () => run, (r) => (run = r));
  const events: RunCallbacks = {
    ...cb,
    onEvent: (ev) => {
      if (ev.type === 'run/listening') nodes.start(ev, signal, () => agent.send({ type: 'run/cancel' }));
      cb.onEvent?.(ev);
    },
  };
  try {
    return await drive(agent, req, liveness, events, log, name, () => run, (r) => (run = r), signal, hardStop);
  } finally {
    agent.kill();
    session?.dispose();
    await nodes.stop();
  }
}

/**
 * Resolves `targetName` and starts an agent there: a local child process, or over SSH after
 * finding Node and deploying. Everything it opened is released if it does not return an agent.
 * @returns the agent and its SSH session (undefined for localhost), or ABORTED when `signal` aborted first.
 * @throws CommcostError as {@link runMeasurement} documents.
 */
async function startAgentOn(
  targetName: string,
  req: RunRequest,
  signal: AbortSignal | undefined,
  log: (line: string) => void,
): Promise<{ agent: AgentProcess; session: SshSession | undefined; name: string } | typeof ABORTED> {
  const target = await resolveTarget(targetName, req.sshConfigPath !== undefined ? { sshConfigPath: req.sshConfigPath } : {});
  if (signal?.aborted) return ABORTED;
  let session: SshSession | undefined;
  let agent: AgentProcess | undefined;
  try {
    if (target.kind === 'local') {
      log('starting the agent locally');
      agent = spawnLocalAgent(req.agentDir !== undefined ? { agentDir: req.agentDir } : {});
    } else {
      const payload = await collectPayload(req.agentDir ?? defaultAgentDir());
      if (signal?.aborted) return ABORTED;
      log(`connecting to ${target.name} (${target.user}@${target.hostname}:${target.port})`);
      const connected = await untilAborted(
        SshSession.connect(target, {
          hostKeyPolicy: policyOf(req.acceptNewHostKey),
          ...(req.knownHostsPath !== undefined ? { knownHostsPath: req.knownHostsPath } : {}),
          log,
        }),
        signal,
        (late) => late.dispose(),
      );
      if (connected === ABORTED) return ABORTED;
      session = connected;
      // Already deployed: one remote command finds Node, checks the files and starts the agent
      // (each command pays the login shell's rc files). Otherwise the full path, with its diagnostics.
      const quick = await untilAborted(launchIfDeployed(session, payload, req.nodePath), signal, (late) => {
        if (late.launched) late.agent.kill();
      });
      if (quick === ABORTED) return ABORTED;
      if (quick.launched) {
        log(`Node ${quick.node.version} at ${quick.node.path} on ${target.name}`);
        log(`agent ${payload.hash} already deployed on ${target.name} in ${quick.remoteDir}`);
        log('started in one command (Node found, files checked, agent started)');
        agent = quick.agent;
        return { agent, session, name: target.name };
      }
      log(`agent ${payload.hash} not started in one command on ${target.name} (${quick.reason}): finding Node and deploying`);
      if (quick.node && quick.prepared) {
        // Node found and the folder prepared by that command: upload what is missing, then the
        // same one command checks every file and starts the agent (two commands in all).
        log(`Node ${quick.node.version} at ${quick.node.path} on ${target.name}`);
        const deployed = await untilAborted(deployAgent(session, payload, log, { prepared: quick.prepared, verify: false }), signal);
        if (deployed === ABORTED) return ABORTED;
        const launched = await untilAborted(launchIfDeployed(session, payload, quick.node.path), signal, (late) => {
          if (late.launched) late.agent.kill();
        });
        if (launched === ABORTED) return ABORTED;
        if (!launched.launched) {
          const bad = payload.files.filter((f) => !launched.prepared?.present.has(f.rel)).map((f) => f.rel);
          throw new CommcostError('DEPLOY_FAILED', `after upload, ${bad.length > 0 ? bad.join(', ') : 'the agent folder'} in ${target.name}:${deployed.remoteDir} ${bad.length === 1 ? 'does' : 'do'} not match the local sha256 (${launched.reason})`, {
            where: { host: target.name },
            hint: 'check free space on the host and run again',
          });
        }
        agent = launched.agent;
        return { agent, session, name: target.name };
      }
      const node = await untilAborted(findRemoteNode(session.run, target.name, req.nodePath ? { explicit: req.nodePath } : {}), signal);
      if (node === ABORTED) return ABORTED;
      log(`Node ${node.version} at ${node.path} on ${target.name}`);
      const deployed = await untilAborted(deployAgent(session, payload, log), signal);
      if (deployed === ABORTED) return ABORTED;
      const started = await untilAborted(startSshAgent(session, node.path, deployed.remoteDir), signal, (late) => late.kill());
      if (started === ABORTED) return ABORTED;
      agent = started;
    }
  } finally {
    // Handed over to drive() below only when the agent started; otherwise released here.
    if (agent === undefined) session?.dispose();
  }

  return { agent, session, name: target.name };
}

/**
 * The agents on the other hosts of a cluster run. Each is started when the coordinator says
 * where it listens, joins it with `node/join`, and is stopped with the run. A host that cannot
 * be reached (SSH, deploy, its agent's fatal error) is recorded in the run and cancels it, so
 * the user learns at once which host failed instead of waiting for the coordinator's deadline.
 */
class NodeAgents {
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

type Ending =
  | { kind: 'done' }
  | { kind: 'exit'; exit: AgentExit }
  | { kind: 'protocol'; error: CommcostError }
  | { kind: 'silent'; error: CommcostError }
  | { kind: 'cancel' };

/**
 * AGENT_SILENT for the agent on `host`: what happened, that what was measured is kept and the
 * agent was stopped, and what to do.
 */
function silentError(host: string, silentMs: number, settings: LivenessSettings): CommcostError {
  return new CommcostError(
    'AGENT_SILENT',
    `agent on ${host} sent nothing for ${(silentMs / 1000).toFixed(1)} s (it sends a heartbeat every ${(settings.intervalMs / 1000).toFixed(1)} s): it is stopped or stuck, or the network to ${host} is cut while the connection stays open`,
    {
      where: { host },
      hint:
        `what was measured is kept and the run is saved as partial; the agent and its ranks were stopped. Check that ${host} is up and not overloaded (a stopped process, memory, load), then run again. ` +
        `The deadline is ${settings.deadlineMs} ms (${LIVENESS_ENV.deadlineMs})`,
    },
  );
}

async function drive(
  agent: AgentProcess,
  req: RunRequest,
  livenessSettings: LivenessSettings,
  cb: RunCallbacks,
  log: (line: string) => void,
  host: string,
  get: () => RunFile,
  set: (r: RunFile) => void,
  signal: AbortSignal | undefined,
  hardStop: AbortSignal | undefined,
): Promise<RunFile> {
  const stderrTail: string[] = [];
  let helloSeen = false;
  let agentPid: number | undefined;
  let cancelRequested = false;
  let startSent = false;
  let doneSeen = false;
  let stopped = false;
  let endWith!: (e: Ending) => void;
  const ending = new Promise<Ending>((r) => (endWith = r));
  let doneSignal!: () => void;
  const donePromise = new Promise<'done'>((r) => (doneSignal = () => r('done')));
  const liveness = new AgentLiveness(livenessSettings, (cmd) => agent.send(cmd), (silentMs) => {
    endWith({ kind: 'silent', error: silentError(host, silentMs, livenessSettings) });
  });

  agent.onStderr((line) => {
    liveness.heard();
    stderrTail.push(line);
    if (stderrTail.length > 20) stderrTail.shift();
    cb.onLog(line);
  });
  agent.onLine((line) => {
    liveness.heard();
    if (stopped || line.trim() === '') return;
    let ev: AgentEvent;
    let next: RunFile;
    try {
      ev = parseAgentEvent(line);
      // A fold that throws (an event this side cannot read) ends the run like any protocol error.
      next = applyEvent(get(), ev);
    } catch (e) {
      stopped = true;
      const msg = e instanceof ProtocolError ? e.message : errorText(e);
      endWith({
        kind: 'protocol',
        error: new CommcostError('PROTOCOL', `agent on ${host} broke the protocol: ${msg}`, {
          where: { host },
          hint: `the agent and this side differ in version (this side speaks protocol ${PROTOCOL_VERSION}): rebuild and run again`,
        }),
      });
      return;
    }
    // Transport only: it said the agent is alive (heard above), nothing to fold or show.
    if (ev.type === 'agent/heartbeat') return;
    if (ev.type === 'agent/hello' && !helloSeen) {
      helloSeen = true;
      agentPid = ev.pid;
      log(`agent ${ev.agentVersion} (pid ${ev.pid}) on ${host}`);
      // Keepalives first: the agent's watch on us is armed before the run starts.
      liveness.start();
      // A cancel that came before the hello: the run is never started.
      if (!cancelRequested) {
        const more = req.moreTargets?.length ?? 0;
        agent.send({
          type: 'run/start',
          options: req.options,
          ...(more > 0 ? { cluster: { nodes: more + 1, ...(req.coordinatorAddress ? { coordinatorAddress: req.coordinatorAddress } : {}) } } : {}),
          ...(req.slurm ? { slurm: req.slurm } : {}),
        });
        startSent = true;
      }
    }
    set(next);
    cb.onEvent?.(ev);
    cb.onRun(get());
    if (ev.type === 'run/done') {
      doneSeen = true;
      doneSignal();
      endWith({ kind: 'done' });
    }
  });
  void agent.exited.then((exit) => endWith({ kind: 'exit', exit }));
  const onAbort = () => {
    cancelRequested = true;
    endWith({ kind: 'cancel' });
  };
  if (signal?.aborted) onAbort();
  else signal?.addEventListener('abort', onAbort, { once: true });
  const hardStopped = new Promise<'hard-stop'>((r) => {
    if (hardStop?.aborted) r('hard-stop');
    else hardStop?.addEventListener('abort', () => r('hard-stop'), { once: true });
  });

  try {
    const end = await ending;
    if (end.kind === 'done') {
      agent.closeInput();
      if ((await Promise.race([agent.exited, delay(EXIT_GRACE_MS)])) === 'timeout') log(`agent on ${host} did not exit after run/done: killed`);
      return get();
    }
    if (end.kind === 'cancel') {
      if (startSent) {
        log(`cancelling the run on ${host}`);
        agent.send({ type: 'run/cancel' });
        await Promise.race([donePromise, agent.exited, delay(CANCEL_GRACE_MS), hardStopped]);
      } else {
        log(`cancelled before the run started on ${host}`);
      }
      stopped = true;
      agent.closeInput();
      const gone = await Promise.race([agent.exited, delay(EXIT_GRACE_MS), hardStopped]);
      if (gone === 'timeout' || gone === 'hard-stop') {
        log(`agent on ${host} ${gone === 'hard-stop' ? 'stopped at once' : 'did not exit in time'}: killed`);
        agent.kill();
        await Promise.race([agent.exited, delay(EXIT_GRACE_MS)]);
      }
      let run = get();
      if (!doneSeen) run = { ...markStopped(run), status: 'partial' };
      else if (run.status === 'failed') run = { ...run, status: 'partial' };
      set(run);
      cb.onRun(run);
      return run;
    }
    stopped = true;
    let error: CommcostError;
    if (end.kind === 'silent') {
      // Stopped or cut off: no point in a cancel it cannot read. Kill what we started, now.
      log(`${end.error.message}: stopping it`);
      // Both at once: the SIGKILL (over SSH a command of its own, which a busy host may take
      // seconds to start, and a cut network never runs) and the channel's close.
      const killed = agentPid !== undefined ? agent.forceKill(agentPid, FORCE_KILL_MS) : Promise.resolve();
      agent.kill();
      await Promise.all([killed, Promise.race([agent.exited, delay(EXIT_GRACE_MS)])]);
      error = end.error;
    } else if (end.kind === 'protocol') {
      error = end.error;
    } else if (end.exit.error) {
      error = end.exit.error;
    } else {
      const how = end.exit.signal ? `was killed by ${end.exit.signal}` : `exited with code ${String(end.exit.code)}`;
      const tail = stderrTail.slice(-5).join(' | ');
      error = new CommcostError('AGENT_EXITED', `agent on ${host} ${how} before the run ended${tail ? `: ${tail}` : ''}`, {
        where: { host },
        hint: 'see the log for the agent output; what was measured is kept',
      });
    }
    if (!helloSeen) throw error;
    const run = markStopped(get(), hostError(error, host));
    set(run);
    cb.onRun(run);
    return run;
  } finally {
    liveness.dispose();
    signal?.removeEventListener('abort', onAbort);
  }
}
