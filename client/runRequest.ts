/**
 * What a caller of {@link runMeasurement} (client/runSession.ts) passes in: the run's request
 * (target hosts, options, SSH and agent overrides) and the callbacks it is told through.
 * Types only, so importing them evaluates nothing.
 */
import type { AgentEvent, LivenessSettings, RunOptions } from '../protocol/events';
import type { RunFile } from '../protocol/runFile';

/** One measurement run as its caller (the CLI, the extension, tests) asks for it. */
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

/** How a run tells its caller what happens; each is called synchronously as events arrive. */
export interface RunCallbacks {
  /** A fresh snapshot after every event (and a last one at the end). */
  onRun(run: RunFile): void;
  /** Every agent event as received. */
  onEvent?(ev: AgentEvent): void;
  /** Agent stderr lines and our own log lines (prefixed `commcost: `). */
  onLog(line: string): void;
}
