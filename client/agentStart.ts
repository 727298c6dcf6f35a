/**
 * Starting an agent on one host: resolve the target, then a local child process, or over SSH
 * (connect, the one-command quick launch when already deployed, else find Node and deploy). Every
 * wait can be cut short by the run's abort signal ({@link untilAborted}, {@link ABORTED}).
 */
import { defaultAgentDir, spawnLocalAgent, startSshAgent, type AgentProcess } from './agentProcess';
import { collectPayload, deployAgent, filesForHost, findRemoteNode } from './deploy';
import { launchIfDeployed } from './quickLaunch';
import { CommcostError } from './errors';
import { resolveTarget } from './hosts';
import type { RunRequest } from './runRequest';
import { SshSession, type HostKeyPolicy } from './sshSession';

function policyOf(accept: RunRequest['acceptNewHostKey']): HostKeyPolicy {
  if (typeof accept === 'function') return accept;
  return accept ? 'accept-new' : 'refuse';
}

/** What {@link untilAborted} and {@link startAgentOn} resolve with when the signal aborted first. */
export const ABORTED: unique symbol = Symbol('aborted');

/**
 * Waits for `p`, or stops waiting as soon as `signal` aborts (then resolves with {@link ABORTED});
 * a value that arrives after the abort goes to `onLate` (to be released), a late rejection is
 * dropped. Lets a cancel end the start-up (connect, Node search, deploy) at once.
 */
export function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined, onLate?: (v: T) => void): Promise<T | typeof ABORTED> {
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
 * Resolves `targetName` and starts an agent there: a local child process, or over SSH after
 * finding Node and deploying. Everything it opened is released if it does not return an agent.
 * @returns the agent and its SSH session (undefined for localhost), or ABORTED when `signal` aborted first.
 * @throws CommcostError as runMeasurement (client/runSession.ts) documents.
 */
export async function startAgentOn(
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
          // The files this host needs (filesForHost), not those the deploy left out on purpose.
          const bad = filesForHost(payload.files, launched.prepared?.platform ?? '')
            .filter((f) => !launched.prepared?.present.has(f.rel))
            .map((f) => f.rel);
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
    // Handed over to the caller (then driveAgent, agentDrive.ts) only when the agent started;
    // otherwise released here.
    if (agent === undefined) session?.dispose();
  }

  return { agent, session, name: target.name };
}
