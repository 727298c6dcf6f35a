/**
 * One measurement run end to end: resolve the target, start the agent (locally, or over SSH after
 * deploying it and finding Node), send `run/start`, fold every event into a {@link RunFile}
 * snapshot, and end cleanly on run/done, cancel, agent exit, dropped connection or protocol error.
 *
 * Lifetime: everything the run opens (SSH session, agent process) is owned here and released
 * before the returned promise settles.
 *
 * The parts: the request and callbacks in runRequest.ts, starting an agent on a host in
 * agentStart.ts, one agent's conversation to the end of the run in agentDrive.ts, the agents of
 * the other hosts of a cluster run in nodeAgents.ts.
 */
import type { RunFile } from '../protocol/runFile';
import { driveAgent } from './agentDrive';
import { ABORTED, startAgentOn } from './agentStart';
import { livenessSettings } from './liveness';
import { NodeAgents } from './nodeAgents';
import { markStopped, newRun } from './runModel';
import type { RunCallbacks, RunRequest } from './runRequest';

// The request's shapes and the cancel grace period live in runRequest.ts and agentDrive.ts; exported here as before.
export { CANCEL_GRACE_MS } from './agentDrive';
export type { RunCallbacks, RunRequest } from './runRequest';

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
    return await driveAgent(agent, req, liveness, events, log, name, () => run, (r) => (run = r), signal, hardStop);
  } finally {
    agent.kill();
    session?.dispose();
    await nodes.stop();
  }
}
