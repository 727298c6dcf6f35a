/**
 * How one agent's conversation ends: {@link driveAgent} sends `run/start` after the hello, folds
 * every event into the run, and ends on run/done, cancel (grace periods, then kill), agent exit,
 * a protocol error or the agent's silence; the grace periods and the AGENT_SILENT error that the
 * agents of other hosts (nodeAgents.ts) share.
 */
import { parseAgentEvent, PROTOCOL_VERSION, ProtocolError, type AgentEvent, type ErrorCode, type LivenessSettings } from '../protocol/events';
import type { RunFile } from '../protocol/runFile';
import type { AgentExit, AgentProcess } from './agentProcess';
import { CommcostError, errorText } from './errors';
import { AgentLiveness, LIVENESS_ENV } from './liveness';
import { applyEvent, markStopped, type RunError } from './runModel';
import type { RunCallbacks, RunRequest } from './runRequest';

/** How long a cancelled agent gets to answer run/done, then to exit after stdin EOF, ms. */
export const CANCEL_GRACE_MS = 5_000;
/** How long an agent gets to exit after stdin EOF (after run/done, a cancel, or at the run's end), ms. */
export const EXIT_GRACE_MS = 2_000;
/**
 * How long the SIGKILL of a silent agent may take, ms: over SSH a command of its own, which a
 * loaded host (or sshd) can take several seconds to start; a cut network never runs it.
 */
export const FORCE_KILL_MS = 8_000;

/** Resolves with `timeout` after `ms` ms (the timer does not keep the process alive). */
export function delay(ms: number): Promise<'timeout'> {
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
export function silentError(host: string, silentMs: number, settings: LivenessSettings): CommcostError {
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

/**
 * Drives one started agent to the end of the run: after its `agent/hello`, keepalives start and
 * `run/start` is sent (with the cluster and Slurm parts of `req`); each event is folded into the
 * run (`get`/`set`) and reported through `cb`.
 * @param host the name the agent's errors and log lines say it runs on
 * @param signal aborting it sends `run/cancel`, waits up to {@link CANCEL_GRACE_MS} for run/done,
 *   then closes stdin and waits {@link EXIT_GRACE_MS} before a kill
 * @param hardStop aborting it skips those grace periods
 * @returns the final run: as run/done left it; partial on cancel; stopped with a fatal error entry
 *   on agent exit, protocol error or silence (AGENT_SILENT, after a SIGKILL of its pid)
 * @throws CommcostError (AGENT_EXITED, CONNECTION_LOST, PROTOCOL, AGENT_SILENT) when the run ends
 *   that way before the agent's hello
 */
export async function driveAgent(
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
